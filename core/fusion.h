/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * fusion: the avfusion-v1 layer stack (spec §3): audio and video tokens,
 * self- and cross-attention, post-norm residuals, FFNs and the fused vector.
 *
 * Per layer (ref: model/avfusion.py AvFusion.fuse):
 *   a1 = LN_a1(a  + MHA_audio_self (a, a, a, mask))
 *   v1 = LN_v1(v  + MHA_video_self (v, v, v))
 *   a2 = LN_a2(a1 + MHA_audio_cross(a1, v1, v1))
 *   v2 = LN_v2(v1 + MHA_video_cross(v1, a1, a1, mask))
 *   a  = LN_a3(a2 + FFN_a(a2));  v = LN_v3(v2 + FFN_v(v2))
 * A window with no audio frame skips the audio branch and the video
 * cross-attention (v2 = LN_v2(v1)); its maps are NaN and the audio half of
 * the fused vector is zeros.
 */
#ifndef AVF_FUSION_H
#define AVF_FUSION_H

#include <stdint.h>

#include "mha.h"
#include "weights.h"

typedef struct AvfFusion AvfFusion;

/* Workspaces for windows of T audio slots (1 <= T <= T_max).  The weights
 * must outlive the fusion object. */
AvfStatus avf_fusion_new (AvfFusion ** out, const AvfWeights * w, int T,
    AvfError * err);
void avf_fusion_free (AvfFusion * f);

int avf_fusion_slots (const AvfFusion * f);

/* fused: (2E); mel: (T, M); mask: (T), nonzero = missing slot, or NULL for
 * none; video: (N, E) patch embeddings.  Returns the number of unmasked
 * slots.  Does not allocate. */
int avf_fusion_forward (AvfFusion * f, float *fused, const float *mel,
    const uint8_t * mask, const float *video, AvfAttnMode mode);

/* The attention map of a module after the last forward (NULL for
 * AVF_ATTN_NONE): (Tq, Tk) for AVF_ATTN_MEAN, (H, Tq, Tk) for
 * AVF_ATTN_PER_HEAD, all NaN when the module was skipped. */
const float *avf_fusion_map (const AvfFusion * f, int layer, AvfModule m,
    int *heads, int *tq, int *tk);
int avf_fusion_map_skipped (const AvfFusion * f, int layer, AvfModule m);

#endif /* AVF_FUSION_H */
