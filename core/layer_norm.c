/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "layer_norm.h"

#include <math.h>

void
avf_add_layer_norm (float *y, const float *x, const float *r,
    const AvfLnWeights * ln, int R, int E)
{
  for (int i = 0; i < R; i++) {
    const float *xi = x + (size_t) i * E;
    const float *ri = r ? r + (size_t) i * E : NULL;
    float *yi = y + (size_t) i * E;
    /* two passes in double: the sum, then the centred sum of squares */
    double sum = 0.0;
    for (int e = 0; e < E; e++) {
      float s = ri ? xi[e] + ri[e] : xi[e];
      yi[e] = s;
      sum += s;
    }
    const double mean = sum / E;
    double ss = 0.0;
    for (int e = 0; e < E; e++) {
      double d = yi[e] - mean;
      ss += d * d;
    }
    const float inv = (float) (1.0 / sqrt (ss / E + AVF_LAYER_NORM_EPS));
    const float fmean = (float) mean;
    for (int e = 0; e < E; e++)
      yi[e] = (yi[e] - fmean) * inv * ln->weight[e] + ln->bias[e];
  }
}
