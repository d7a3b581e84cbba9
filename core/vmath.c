/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "vmath.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) \
    && !defined(__SANITIZE_ADDRESS__)
/* an AVX2+FMA copy beside the baseline one, chosen at load time */
#define AVF_CLONES __attribute__((target_clones ("avx2", "default")))
#else
#define AVF_CLONES
#endif

/* e^v for v <= 88, about 1 ulp; v below -87.3 gives 0.  Written without
 * calls or branches so that loops around it vectorise. */
static inline float
exp_approx (float v)
{
  const float log2e = 1.44269504088896341f;
  const float ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
  const float magic = 12582912.0f;      /* 1.5 * 2^23: round to nearest */
  const int underflow = v < -87.3f;
  v = underflow ? -87.3f : v;
  /* v = k ln2 + r, |r| <= ln2 / 2 */
  float t = v * log2e + magic;
  float k = t - magic;
  float r = v - k * ln2_hi - k * ln2_lo;
  /* e^r by its Taylor series to r^7 (error < 1e-8 on |r| <= 0.35) */
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  /* times 2^k through the exponent bits; k comes from t's bits, which is
   * defined behaviour even for NaN (a NaN stays NaN through p) */
  int32_t tb;
  memcpy (&tb, &t, sizeof tb);
  int32_t ki = tb - 0x4B400000;
  int32_t bits = (int32_t) ((uint32_t) (ki + 127) << 23);
  float scale;
  memcpy (&scale, &bits, sizeof scale);
  const float e = p * scale;
  return underflow ? 0.0f : e;
}

AVF_CLONES void
avf_vexp_shifted (float *x, size_t n, float shift)
{
  for (size_t i = 0; i < n; i++)
    x[i] = exp_approx (x[i] - shift);
}

AVF_CLONES void
avf_vgelu (float *x, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    /* erfc(|z|) = t exp(-z^2 + poly(t)), t = 1 / (1 + |z| / 2), with
     * fractional error below 1.2e-7 everywhere (Numerical Recipes' erfcc,
     * a Chebyshev fit); erf(z) = sign(z) (1 - erfc(|z|)) */
    const float v = x[i];
    const float z = v * 0.70710678118654752440f;
    const float nz = -z;
    const float az = z < 0.0f ? nz : z;
    const float t = 1.0f / (1.0f + 0.5f * az);
    float p = 0.17087277f;
    p = p * t - 0.82215223f;
    p = p * t + 1.48851587f;
    p = p * t - 1.13520398f;
    p = p * t + 0.27886807f;
    p = p * t - 0.18628806f;
    p = p * t + 0.09678418f;
    p = p * t + 0.37409196f;
    p = p * t + 1.00002368f;
    p = p * t - 1.26551223f;
    const float erfc_az = t * exp_approx (-az * az + p);
    const float neg = erfc_az - 1.0f, pos = 1.0f - erfc_az;
    const float erf_z = z < 0.0f ? neg : pos;
    x[i] = 0.5f * v * (1.0f + erf_z);
  }
}

AVF_CLONES float
avf_vsum (const float *x, size_t n)
{
  float acc[8] = { 0 };
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; l++)
      acc[l] += x[i + l];
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5]))
      + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; i < n; i++)
    s += x[i];
  return s;
}

AVF_CLONES float
avf_vmax (const float *x, size_t n)
{
  float acc[8];
  for (int l = 0; l < 8; l++)
    acc[l] = -INFINITY;
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; l++)
      acc[l] = x[i + l] > acc[l] ? x[i + l] : acc[l];
  float m = -INFINITY;
  for (int l = 0; l < 8; l++)
    m = acc[l] > m ? acc[l] : m;
  for (; i < n; i++)
    m = x[i] > m ? x[i] : m;
  return m;
}

AVF_CLONES void
avf_vscale (float *x, size_t n, float s)
{
  for (size_t i = 0; i < n; i++)
    x[i] *= s;
}
