/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * LayerNorm, exact GELU, Linear and the FFN against straightforward float64
 * loops and known values.  (The PyTorch parity of the whole stack is in
 * test_fusion.c.)
 */
#include "avf_test.h"
#include "ffn.h"
#include "layer_norm.h"
#include "prng.h"

static void
test_gelu_known_values (void)
{
  /* ref: torch.nn.GELU()(torch.tensor([...], dtype=torch.float64)) */
  const double x[] = { -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0 };
  const double want[] = { -0.0040496941, -0.15865525, -0.15426877, 0.0,
    0.34573123, 0.84134475, 2.9959503
  };
  float v[7];
  for (int i = 0; i < 7; i++)
    v[i] = (float) x[i];
  avf_gelu (v, 7);
  for (int i = 0; i < 7; i++)
    AVF_CHECK (fabs (v[i] - want[i]) < 2e-7, "gelu(%g) = %.9g, want %.9g",
        x[i], v[i], want[i]);
}

static void
test_layer_norm_matches_float64 (void)
{
  enum { R = 5, E = 48 };
  float x[R * E], r[R * E], y[R * E], w[E], b[E];
  avf_prng_fill_symmetric (x, R * E, 1, 0, 3.0f);
  avf_prng_fill_symmetric (r, R * E, 2, 0, 1.0f);
  avf_prng_fill_symmetric (w, E, 3, 0, 1.0f);
  avf_prng_fill_symmetric (b, E, 4, 0, 1.0f);
  for (int i = 0; i < R * E; i++)
    x[i] += 100.0f;             /* a large mean must not hurt precision */
  AvfLnWeights ln = { w, b };
  avf_add_layer_norm (y, x, r, &ln, R, E);
  double maxerr = 0.0;
  for (int i = 0; i < R; i++) {
    double mean = 0.0, var = 0.0;
    for (int e = 0; e < E; e++)
      mean += (double) x[i * E + e] + r[i * E + e];
    mean /= E;
    for (int e = 0; e < E; e++) {
      double d = (double) x[i * E + e] + r[i * E + e] - mean;
      var += d * d;
    }
    var /= E;
    for (int e = 0; e < E; e++) {
      double s = (double) x[i * E + e] + r[i * E + e];
      double want = (s - mean) / sqrt (var + 1e-5) * w[e] + b[e];
      double d = fabs (want - y[i * E + e]);
      if (d > maxerr)
        maxerr = d;
    }
  }
  AVF_CHECK (maxerr < 1e-5, "layer norm max error %g", maxerr);

  /* in place, and without residual */
  float z[R * E];
  memcpy (z, x, sizeof z);
  for (int i = 0; i < R * E; i++)
    z[i] += r[i];
  avf_add_layer_norm (z, z, NULL, &ln, R, E);
  AVF_CHECK_CLOSE (z, y, R * E, 1e-5, "in-place layer norm");
}

static void
test_layer_norm_constant_row_is_bias (void)
{
  enum { E = 16 };
  float x[E], w[E], b[E], y[E];
  for (int e = 0; e < E; e++) {
    x[e] = 7.0f;
    w[e] = 2.0f;
    b[e] = (float) e;
  }
  AvfLnWeights ln = { w, b };
  avf_add_layer_norm (y, x, NULL, &ln, 1, E);
  AVF_CHECK_CLOSE (y, b, E, 0.0, "constant row gives the bias");
}

static void
test_linear_and_ffn (void)
{
  enum { R = 3, E = 8, F = 12 };
  float x[R * E], w1[F * E], b1[F], w2[E * F], b2[E], work[R * F], y[R * E];
  avf_prng_fill_symmetric (x, R * E, 11, 0, 2.0f);
  avf_prng_fill_symmetric (w1, F * E, 12, 0, 0.5f);
  avf_prng_fill_symmetric (b1, F, 13, 0, 0.5f);
  avf_prng_fill_symmetric (w2, E * F, 14, 0, 0.5f);
  avf_prng_fill_symmetric (b2, E, 15, 0, 0.5f);
  AvfFfnWeights fw = { w1, b1, w2, b2 };
  avf_ffn (y, x, &fw, work, R, E, F);
  double maxerr = 0.0;
  for (int i = 0; i < R; i++) {
    double hid[F];
    for (int f = 0; f < F; f++) {
      double s = b1[f];
      for (int e = 0; e < E; e++)
        s += (double) w1[f * E + e] * x[i * E + e];
      hid[f] = 0.5 * s * (1.0 + erf (s / sqrt (2.0)));
    }
    for (int e = 0; e < E; e++) {
      double s = b2[e];
      for (int f = 0; f < F; f++)
        s += (double) w2[e * F + f] * hid[f];
      double d = fabs (s - y[i * E + e]);
      if (d > maxerr)
        maxerr = d;
    }
  }
  AVF_CHECK (maxerr < 1e-5, "ffn max error %g", maxerr);
}

AVF_TEST_MAIN (AVF_TEST (test_gelu_known_values),
    AVF_TEST (test_layer_norm_matches_float64),
    AVF_TEST (test_layer_norm_constant_row_is_bias),
    AVF_TEST (test_linear_and_ffn))
