/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * vmath: array kernels written so the compiler vectorises them (no
 * -ffast-math: fixed 8-lane accumulators instead of reassociation, so the
 * results are the same bytes on every run).
 */
#ifndef AVF_VMATH_H
#define AVF_VMATH_H

#include <stddef.h>

/* x[i] = exp(x[i] - shift) for x[i] - shift <= 0 (softmax after the row
 * maximum is subtracted); results below exp(-87.3) flush to 0.  Relative
 * error about 1 ulp.  ref: torch.exp */
void avf_vexp_shifted (float *x, size_t n, float shift);

/* In place GELU with the erf form: 0.5 x (1 + erf(x / sqrt 2)).  erf is
 * computed to about 1e-7 absolute (as PyTorch's own vectorised CPU
 * kernel does), not with the tanh approximation.
 * ref: torch.nn.GELU(approximate='none') */
void avf_vgelu (float *x, size_t n);

/* Sum and maximum with 8 independent lanes, combined in a fixed order. */
float avf_vsum (const float *x, size_t n);
float avf_vmax (const float *x, size_t n);

/* x[i] *= s */
void avf_vscale (float *x, size_t n, float s);

#endif /* AVF_VMATH_H */
