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
 *     (model/avfusion2.py AvFusionV2.rhythm_from_pooled (rhythm_pixels)),
 *     with rhythm_neighbourhood k > 1 then each r_n the mean of r_m over
 *     the k x k patches of the grid around n that lie inside it
 *     (avg_pool2d(r, k, stride=1, padding=k // 2,
 *     count_include_pad=False) on r laid out [D, rows, columns]);
 * - which earlier frame shows each bin centre c_j (§3.2), as pure
 *   functions of nanosecond timestamps (ref: avfusion2.bin_frames); at lag
 *   lambda bin k is read at c_{k + lambda}, so the lags lag_min ..
 *   lag_min + lags - 1 of the K bins need the K + lags - 1 centres
 *   c_{lag_min} .. c_{lag_min + K + lags - 2} and nothing else;
 * - the rhythm term added to the patch tokens (§3.3), per lag l (lambda =
 *   lag_min + l) a weighted correlation over the valid bins V_l:
 *     rho_nk = R^l_nk - mean R^l_n, ups_k = U_k - mean U (means over V_l)
 *     S^l_n[d][c] = (1/|V_l|) sum_k w_lk rho_nk[d] ups_k[c]
 *                   / sqrt(var rho_n[d] var ups[c] + 1e-3),
 *     v_n = e_n + rhythm_proj.weight @ concat_l vec(S^l_n)
 *   (ref: AvFusionV2.tokens / rhythm_term), S^l_n = 0 with fewer than two
 *   valid bins at that lag.
 *
 * Sizes as in weights.h: E, N, M, T = K G, and D, C, Q, K, G, lags,
 * lag_min of AvfRhythmConfig.
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

/* The (N, 3 Q Q) workspace of the pooled patches (and, for a
 * rhythm_neighbourhood above 1, an (N, D) one for its sums).
 * AVF_ERR_INVALID for an avfusion-v1 model. */
AvfStatus avf_rhythm_embed_new (AvfRhythmEmbed ** out, const AvfWeights * w,
    AvfError * err);
void avf_rhythm_embed_free (AvfRhythmEmbed * re);

/* out: (N, D) rows `ldo` floats apart (ldo >= D); patches: (N, 3 P P) the
 * normalised pixels of each patch in (c, ky, kx) order, as
 * avf_patch_embed_patches() gives them after a forward.  Each Q x Q cell
 * of a patch is the mean of S x S pixels.  cols: the columns of the patch
 * grid (avf_patch_embed_grid; rows = N / cols), which the neighbourhood
 * needs; unused with rhythm_neighbourhood 1.  Does not allocate. */
void avf_rhythm_embed_forward (AvfRhythmEmbed * re, float *out, size_t ldo,
    const float *patches, int cols);

/* ---- §3.2: bins --------------------------------------------------------- */

/* A frame without a duration: it shows until the next frame. */
#define AVF_RHYTHM_NO_END INT64_MAX

/* The centre c_j of bin j of the window of the frame at t, for any integer
 * j (negative: before the window), in integer nanoseconds:
 *   c_j = t - window + floor((2j + 1) G hop 10^9 / (2 sample_rate)),
 * floor also for a negative numerator.  hop, sample_rate, G >= 1 and
 * |(2j + 1) G hop| < 2^62. */
int64_t avf_rhythm_bin_centre (int64_t t, int64_t window_ns, int j, int G,
    int hop, int sample_rate);

/* The number of bin centres the lags need, K + lags - 1 (the first is
 * c_{lag_min}); 0 for an avfusion-v1 configuration. */
int avf_rhythm_n_centres (const AvfRhythmConfig * r);

/* out: (n_out), out[i] the index in [0, n) of the earlier frame that shows
 * the centre c_{first + i}, or -1 when none does (stream start, a gap, a
 * centre at or after t); avfusion2.bin_frames(..., K = n_out, lag =
 * first).  Frame i (in the order received, all before the frame at t)
 * starts at start[i] and shows [start[i], min(end[i], start[i + 1])), the
 * last one [start[n-1], min(end[n-1], t)); end[i] is start + duration, or
 * AVF_RHYTHM_NO_END.  When several frames show a centre the latest in the
 * list wins.  Timestamps within +-2^62. */
void avf_rhythm_bin_frames (int *out, int n_out, int first, int G,
    const int64_t * start, const int64_t * end, size_t n, int64_t t,
    int64_t window_ns, int hop, int sample_rate);

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
 * (avf_rhythm_n_centres) pointers, hist[i] the (N, D) row-major rhythm
 * features of the frame that shows the centre c_{lag_min + i}, NULL where
 * none does: bin k at lag lag_min + l reads hist[k + l].  valid (optional,
 * lags entries): the number of valid bins |V_l| per lag.  Returns the sum
 * of |V_l| over the lags.  Does not allocate. */
int avf_rhythm_tokens (AvfRhythm * r, float *tokens, const float *video,
    size_t ldv, const float *mel, const uint8_t * mask,
    const float *const *hist, int *valid);

#ifdef __cplusplus
}
#endif
#endif /* AVF_RHYTHM_H */
