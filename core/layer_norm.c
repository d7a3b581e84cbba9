/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "layer_norm.h"

#include <math.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) \
    && !defined(__SANITIZE_ADDRESS__)
#define AVF_CLONES __attribute__((target_clones ("avx2", "default")))
#else
#define AVF_CLONES
#endif

/* Sums in float64 with 8 fixed lanes: vectorisable, and the same bytes
 * on every run. */
static inline double
lanes_total (const double acc[8])
{
  return ((acc[0] + acc[4]) + (acc[1] + acc[5]))
      + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

static inline double
sum_f64 (const float *s, int E)
{
  double acc[8] = { 0 };
  int e = 0;
  for (; e + 8 <= E; e += 8)
    for (int l = 0; l < 8; l++)
      acc[l] += (double) s[e + l];
  double t = lanes_total (acc);
  for (; e < E; e++)
    t += s[e];
  return t;
}

static inline double
sum_sq_dev_f64 (const float *s, int E, double mean)
{
  double acc[8] = { 0 };
  int e = 0;
  for (; e + 8 <= E; e += 8)
    for (int l = 0; l < 8; l++) {
      double d = (double) s[e + l] - mean;
      acc[l] += d * d;
    }
  double t = lanes_total (acc);
  for (; e < E; e++) {
    double d = (double) s[e] - mean;
    t += d * d;
  }
  return t;
}

AVF_CLONES void
avf_add_layer_norm (float *y, const float *x, const float *r,
    const AvfLnWeights * ln, int R, int E)
{
  for (int i = 0; i < R; i++) {
    const float *xi = x + (size_t) i * E;
    const float *ri = r ? r + (size_t) i * E : NULL;
    float *yi = y + (size_t) i * E;
    if (ri)
      for (int e = 0; e < E; e++)
        yi[e] = xi[e] + ri[e];
    else if (yi != xi)
      for (int e = 0; e < E; e++)
        yi[e] = xi[e];
    /* two passes in double: the mean, then the centred sum of squares */
    const double mean = sum_f64 (yi, E) / E;
    const double ss = sum_sq_dev_f64 (yi, E, mean);
    const float inv = (float) (1.0 / sqrt (ss / E + AVF_LAYER_NORM_EPS));
    const float fmean = (float) mean;
    const float *w = ln->weight, *b = ln->bias;
    for (int e = 0; e < E; e++)
      yi[e] = (yi[e] - fmean) * inv * w[e] + b[e];
  }
}
