/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Multi-head attention against a direct float64 transcription of
 * torch.nn.functional.multi_head_attention_forward, plus the numerical
 * edge cases: fully masked rows, huge logits.  PyTorch parity of the
 * modules inside the model is in test_fusion.c.
 */
#include "avf_test.h"
#include "mha.h"
#include "prng.h"

enum { E = 12, H = 3, HD = E / H, TQ = 5, TK = 7 };

typedef struct
{
  float in_w[3 * E * E], in_b[3 * E], out_w[E * E], out_b[E];
  AvfMhaWeights w;
} Weights;

static void
make_weights (Weights * w, uint64_t seed, float scale)
{
  avf_prng_fill_symmetric (w->in_w, 3 * E * E, seed, 0, scale);
  avf_prng_fill_symmetric (w->in_b, 3 * E, seed, 1000, 0.1f);
  avf_prng_fill_symmetric (w->out_w, E * E, seed, 2000, 0.3f);
  avf_prng_fill_symmetric (w->out_b, E, seed, 3000, 0.1f);
  w->w = (AvfMhaWeights) {
  w->in_w, w->in_b, w->out_w, w->out_b};
}

/* float64 reference: out (TQ, E), attn (H, TQ, TK) */
static void
reference (double *out, double *attn, const float *xq, const float *xkv,
    const uint8_t * mask, const Weights * w)
{
  double q[TQ * E], k[TK * E], v[TK * E], ctx[TQ * E];
  for (int i = 0; i < TQ; i++)
    for (int o = 0; o < E; o++) {
      double s = w->in_b[o];
      for (int e = 0; e < E; e++)
        s += (double) w->in_w[o * E + e] * xq[i * E + e];
      q[i * E + o] = s;
    }
  for (int i = 0; i < TK; i++)
    for (int o = 0; o < E; o++) {
      double sk = w->in_b[E + o], sv = w->in_b[2 * E + o];
      for (int e = 0; e < E; e++) {
        sk += (double) w->in_w[(E + o) * E + e] * xkv[i * E + e];
        sv += (double) w->in_w[(2 * E + o) * E + e] * xkv[i * E + e];
      }
      k[i * E + o] = sk;
      v[i * E + o] = sv;
    }
  for (int h = 0; h < H; h++)
    for (int i = 0; i < TQ; i++) {
      double *row = attn + ((size_t) h * TQ + i) * TK, mx = -INFINITY, sum = 0;
      for (int j = 0; j < TK; j++) {
        double s = 0;
        for (int d = 0; d < HD; d++)
          s += q[i * E + h * HD + d] * k[j * E + h * HD + d];
        row[j] = (mask && mask[j]) ? -INFINITY : s / sqrt ((double) HD);
        if (row[j] > mx)
          mx = row[j];
      }
      for (int j = 0; j < TK; j++)
        sum += row[j] = exp (row[j] - mx);
      for (int j = 0; j < TK; j++)
        row[j] /= sum;
      for (int d = 0; d < HD; d++) {
        double s = 0;
        for (int j = 0; j < TK; j++)
          s += row[j] * v[j * E + h * HD + d];
        ctx[i * E + h * HD + d] = s;
      }
    }
  for (int i = 0; i < TQ; i++)
    for (int o = 0; o < E; o++) {
      double s = w->out_b[o];
      for (int e = 0; e < E; e++)
        s += (double) w->out_w[o * E + e] * ctx[i * E + e];
      out[i * E + o] = s;
    }
}

static double
max_err (const float *a, const double *b, size_t n)
{
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs (a[i] - b[i]);
    if (!(d <= m))
      m = d;
  }
  return m;
}

static void
run_case (const uint8_t * mask, float in_scale)
{
  Weights w;
  make_weights (&w, 5, in_scale);
  float xq[TQ * E], xkv[TK * E], out[TQ * E], per_head[H * TQ * TK],
      mean[TQ * TK], out2[TQ * E];
  double rout[TQ * E], rattn[H * TQ * TK];
  avf_prng_fill_symmetric (xq, TQ * E, 6, 0, 1.5f);
  avf_prng_fill_symmetric (xkv, TK * E, 7, 0, 1.5f);
  AvfMha *m;
  AVF_CHECK (avf_mha_new (&m, E, H, 8, 9, NULL) == AVF_OK, "new");
  avf_mha_forward (m, out, per_head, AVF_ATTN_PER_HEAD, xq, TQ, xkv, TK, mask,
      &w.w);
  avf_mha_forward (m, out2, mean, AVF_ATTN_MEAN, xq, TQ, xkv, TK, mask, &w.w);
  reference (rout, rattn, xq, xkv, mask, &w);
  double tol = 1e-5 * (in_scale > 1 ? in_scale : 1);
  AVF_CHECK (max_err (out, rout, TQ * E) < tol, "output error %g",
      max_err (out, rout, TQ * E));
  AVF_CHECK (max_err (per_head, rattn, H * TQ * TK) < 1e-5,
      "per-head weights error %g", max_err (per_head, rattn, H * TQ * TK));
  AVF_CHECK_CLOSE (out, out2, TQ * E, 0.0, "same output in both modes");
  for (int i = 0; i < TQ * TK; i++) {
    double s = 0;
    for (int h = 0; h < H; h++)
      s += rattn[h * TQ * TK + i];
    AVF_CHECK (fabs (mean[i] - s / H) < 1e-6, "head mean at %d", i);
  }
  for (int h = 0; h < H; h++)
    for (int i = 0; i < TQ; i++) {
      double s = 0;
      for (int j = 0; j < TK; j++) {
        float a = per_head[(h * TQ + i) * TK + j];
        if (mask && mask[j])
          AVF_CHECK (a == 0.0f, "masked key %d has weight %g", j, a);
        s += a;
      }
      AVF_CHECK (fabs (s - 1.0) < 1e-5, "row sums to %g", s);
    }
  avf_mha_free (m);
}

static void
test_unmasked (void)
{
  run_case (NULL, 0.3f);
}

static void
test_partially_masked (void)
{
  const uint8_t mask[TK] = { 1, 0, 0, 1, 0, 1, 0 };
  run_case (mask, 0.3f);
}

static void
test_huge_logits (void)
{
  /* scores in the thousands: max-subtracted softmax neither overflows nor
   * produces NaN, and matches float64 */
  run_case (NULL, 40.0f);
}

static void
test_fully_masked_row_is_zero_not_nan (void)
{
  const uint8_t mask[TK] = { 1, 1, 1, 1, 1, 1, 1 };
  Weights w;
  make_weights (&w, 5, 0.3f);
  float xq[TQ * E], xkv[TK * E], out[TQ * E], attn[H * TQ * TK];
  avf_prng_fill_symmetric (xq, TQ * E, 6, 0, 1.5f);
  avf_prng_fill_symmetric (xkv, TK * E, 7, 0, 1.5f);
  AvfMha *m;
  AVF_CHECK (avf_mha_new (&m, E, H, TQ, TK, NULL) == AVF_OK, "new");
  avf_mha_forward (m, out, attn, AVF_ATTN_PER_HEAD, xq, TQ, xkv, TK, mask,
      &w.w);
  for (int i = 0; i < H * TQ * TK; i++)
    AVF_CHECK (attn[i] == 0.0f, "weight %d is %g", i, attn[i]);
  /* zero context: the output is the out_proj bias */
  for (int i = 0; i < TQ; i++)
    for (int e = 0; e < E; e++)
      AVF_CHECK (out[i * E + e] == w.out_b[e], "out[%d][%d] = %g", i, e,
          out[i * E + e]);
  avf_mha_free (m);
}

static void
test_softmax_nan_policy (void)
{
  /* Policy: a NaN score of a masked key never leaks (the key gets weight
   * 0); a NaN among unmasked keys makes that row NaN, as in PyTorch, so bad
   * input is visible rather than hidden. */
  float row[4] = { 1.0f, NAN, 2.0f, 0.0f };
  const uint8_t mask[4] = { 0, 1, 0, 0 };
  avf_softmax_rows (row, 1, 4, mask);
  double s = 0;
  for (int j = 0; j < 4; j++) {
    AVF_CHECK (isfinite (row[j]), "masked NaN leaked into key %d", j);
    s += row[j];
  }
  AVF_CHECK (row[1] == 0.0f && fabs (s - 1.0) < 1e-6, "sum %g", s);

  float bad[3] = { 1.0f, NAN, 2.0f };
  avf_softmax_rows (bad, 1, 3, NULL);
  AVF_CHECK (isnan (bad[0]) && isnan (bad[2]), "unmasked NaN shows");

  float big[3] = { 1e30f, 1e30f, -1e30f };
  avf_softmax_rows (big, 1, 3, NULL);
  AVF_CHECK (fabsf (big[0] - 0.5f) < 1e-6f && big[2] == 0.0f,
      "huge scores: %g %g %g", big[0], big[1], big[2]);
}

static void
test_bad_configuration (void)
{
  AvfMha *m = NULL;
  AvfError err;
  AVF_CHECK (avf_mha_new (&m, 10, 3, 4, 4, &err) == AVF_ERR_INVALID,
      "E %% H != 0 refused");
  AVF_CHECK_CONTAINS (err.message, "3 heads");
  avf_mha_free (NULL);
}

AVF_TEST_MAIN (AVF_TEST (test_unmasked), AVF_TEST (test_partially_masked),
    AVF_TEST (test_huge_logits),
    AVF_TEST (test_fully_masked_row_is_zero_not_nan),
    AVF_TEST (test_softmax_nan_policy),
    AVF_TEST (test_bad_configuration))
