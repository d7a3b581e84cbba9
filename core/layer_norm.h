/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * layer_norm: the post-norm residual step of every sub-layer.
 */
#ifndef AVF_LAYER_NORM_H
#define AVF_LAYER_NORM_H

#include "weights.h"

#define AVF_LAYER_NORM_EPS 1e-5

/* y = LN(x + r), row by row; r may be NULL (y = LN(x)); y may alias x or r.
 * ref: torch.nn.LayerNorm(E, eps=1e-5)(x + r) (biased variance)
 * y, x, r: (R, E) row-major */
void avf_add_layer_norm (float *y, const float *x, const float *r,
    const AvfLnWeights * ln, int R, int E);

#endif /* AVF_LAYER_NORM_H */
