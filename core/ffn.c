/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "ffn.h"

#include "vmath.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

void
avf_linear (float *y, const float *x, int ldx, const float *w,
    const float *b, int R, int n_in, int n_out)
{
  if (R <= 0)
    return;
  float beta = 0.0f;
  if (b != NULL) {
    for (int r = 0; r < R; r++)
      memcpy (y + (size_t) r * n_out, b, (size_t) n_out * sizeof (float));
    beta = 1.0f;
  }
  cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasTrans, R, n_out, n_in, 1.0f,
      x, ldx, w, n_in, beta, y, n_out);
}

void
avf_gelu (float *x, size_t n)
{
  avf_vgelu (x, n);
}

void
avf_ffn (float *y, const float *x, const AvfFfnWeights * w, float *work,
    int R, int E, int F)
{
  avf_linear (work, x, E, w->w1, w->b1, R, E, F);
  avf_gelu (work, (size_t) R * F);
  avf_linear (y, work, F, w->w2, w->b2, R, F, E);
}
