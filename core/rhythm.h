/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * rhythm: the stage avfusion-v2 adds to avfusion-v1 (docs/avfusion-v2.md),
 * in three parts:
 *
 * - the rhythm features of a frame (§2), r (N, D):
 *     ref: Conv2d(3, D, Q, stride=Q)(avg_pool2d(x, S)).flatten(2)
 *          .transpose(1, 2), x the normalised picture, S = P / Q
 *     (tools/avfusion2.py AvFusionV2.rhythm_from_pooled (rhythm_pixels));
 * - which earlier frame shows each of the window's K bins (§3.2), as pure
 *   functions of nanosecond timestamps (ref: avfusion2.bin_frames);
 * - the rhythm term added to the patch tokens (§3.3),
 *     v_n = e_n + rhythm_proj.weight @ vec(S_n),
 *     S_n = sum over the valid bins k of w_k (R_nk - mean R_n) x (U_k - mean U)
 *   (ref: AvFusionV2.tokens / rhythm_term), S_n = 0 with fewer than two
 *   valid bins.
 *
 * Sizes as in weights.h: E, N, M, T = K G, and D, C, Q, K, G of
 * AvfRhythmConfig.
 */
#ifndef AVF_RHYTHM_H
#define AVF_RHYTHM_H

#include <stddef.h>
#include <stdint.h>

#include "weights.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- §2: rhythm features ------------------------------------------------ */

typedef struct AvfRhythmEmbed AvfRhythmEmbed;

/* The (N, 3 Q Q) workspace of the pooled patches.  AVF_ERR_INVALID for an
 * avfusion-v1 model. */
AvfStatus avf_rhythm_embed_new (AvfRhythmEmbed ** out, const AvfWeights * w,
    AvfError * err);
void avf_rhythm_embed_free (AvfRhythmEmbed * re);

/* out: (N, D) rows `ldo` floats apart (ldo >= D); patches: (N, 3 P P) the
 * normalised pixels of each patch in (c, ky, kx) order, as
 * avf_patch_embed_patches() gives them after a forward.  Each Q x Q cell
 * of a patch is the mean of S x S pixels.  Does not allocate. */
void avf_rhythm_embed_forward (AvfRhythmEmbed * re, float *out, size_t ldo,
    const float *patches);

/* ---- §3.2: bins --------------------------------------------------------- */

/* A frame without a duration: it shows until the next frame. */
#define AVF_RHYTHM_NO_END INT64_MAX

/* The centre of bin k (0 <= k < K) of the window of the frame at t, in
 * integer nanoseconds:
 *   c_k = t - window + floor((2k + 1) G hop 10^9 / (2 sample_rate)).
 * hop, sample_rate, G >= 1 and (2k + 1) G hop < 2^31. */
int64_t avf_rhythm_bin_centre (int64_t t, int64_t window_ns, int k, int G,
    int hop, int sample_rate);

/* out: (K), the index in [0, n) of the earlier frame that shows the centre
 * of bin k, or -1 when none does (stream start, a gap, a centre at or
 * after t).  Frame i (in the order received, all before the frame at t)
 * starts at start[i] and shows [start[i], min(end[i], start[i + 1])), the
 * last one [start[n-1], min(end[n-1], t)); end[i] is start + duration, or
 * AVF_RHYTHM_NO_END.  When several frames show a centre the latest in the
 * list wins.  Timestamps within +-2^62. */
void avf_rhythm_bin_frames (int *out, int K, int G, const int64_t * start,
    const int64_t * end, size_t n, int64_t t, int64_t window_ns, int hop,
    int sample_rate);

/* ---- §3.3: the rhythm term ---------------------------------------------- */

typedef struct AvfRhythm AvfRhythm;

/* Workspaces for windows of T audio slots.  T must be K G:
 * AVF_ERR_SHAPE naming both otherwise; AVF_ERR_INVALID for an avfusion-v1
 * model.  The weights must outlive the object. */
AvfStatus avf_rhythm_new (AvfRhythm ** out, const AvfWeights * w, int T,
    AvfError * err);
void avf_rhythm_free (AvfRhythm * r);

/* tokens: (N, E) out, the patch tokens that enter the layers; video:
 * (N, ldv) avpatchembed's rows, e_n in the first E columns (ldv >= E);
 * mel: (T, M); mask: (T), nonzero = missing slot, or NULL for none; hist:
 * (K) pointers to the (N, D) row-major rhythm features of the frame that
 * shows bin k, NULL where the bin's video is missing.  Returns the number
 * of valid bins |V|.  Does not allocate. */
int avf_rhythm_tokens (AvfRhythm * r, float *tokens, const float *video,
    size_t ldv, const float *mel, const uint8_t * mask,
    const float *const *hist);

#ifdef __cplusplus
}
#endif
#endif /* AVF_RHYTHM_H */
