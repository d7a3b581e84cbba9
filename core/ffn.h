/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * ffn: nn.Linear, the exact GELU and the feed-forward block.
 */
#ifndef AVF_FFN_H
#define AVF_FFN_H

#include <stddef.h>

#include "weights.h"

/* y = x @ w^T + b.  ref: torch.nn.Linear(n_in, n_out)
 * y: (R, n_out), x: (R, n_in) with row stride ldx (>= n_in),
 * w: (n_out, n_in), b: (n_out) or NULL */
void avf_linear (float *y, const float *x, int ldx, const float *w,
    const float *b, int R, int n_in, int n_out);

/* In place, exact (erf) GELU.  ref: torch.nn.GELU() (approximate='none') */
void avf_gelu (float *x, size_t n);

/* y = linear2(GELU(linear1(x))).
 * ref: torch.nn.Sequential(nn.Linear(E, F), nn.GELU(), nn.Linear(F, E))
 * y: (R, E), x: (R, E), work: (R, F) */
void avf_ffn (float *y, const float *x, const AvfFfnWeights * w, float *work,
    int R, int E, int F);

#endif /* AVF_FFN_H */
