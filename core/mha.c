/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "mha.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ffn.h"
#include "vmath.h"

struct AvfMha
{
  int E, H, Tq_max, Tk_max;
  float *q;                     /* (Tq_max, E) */
  float *kv;                    /* (max(Tq_max, Tk_max), 3E): k and v, or q, k and v */
  float *scores;                /* (Tq_max, Tk_max): one head at a time */
  float *ctx;                   /* (Tq_max, E) */
};

void
avf_mha_free (AvfMha * m)
{
  if (m == NULL)
    return;
  free (m->q);
  free (m->kv);
  free (m->scores);
  free (m->ctx);
  free (m);
}

AvfStatus
avf_mha_new (AvfMha ** out, int E, int H, int Tq_max, int Tk_max,
    AvfError * err)
{
  if (E <= 0 || H <= 0 || E % H != 0 || Tq_max <= 0 || Tk_max <= 0)
    return avf_error_set (err, AVF_ERR_INVALID, -1,
        "attention of width %d with %d heads over %d x %d tokens is not "
        "possible", E, H, Tq_max, Tk_max);
  AvfMha *m = calloc (1, sizeof *m);
  if (m == NULL)
    return avf_error_set (err, AVF_ERR_NOMEM, -1, "out of memory");
  m->E = E;
  m->H = H;
  m->Tq_max = Tq_max;
  m->Tk_max = Tk_max;
  m->q = malloc ((size_t) Tq_max * E * sizeof (float));
  const size_t kv_rows = (size_t) (Tq_max > Tk_max ? Tq_max : Tk_max);
  m->kv = malloc (kv_rows * 3 * E * sizeof (float));
  m->scores = malloc ((size_t) Tq_max * Tk_max * sizeof (float));
  m->ctx = malloc ((size_t) Tq_max * E * sizeof (float));
  if (!m->q || !m->kv || !m->scores || !m->ctx) {
    avf_mha_free (m);
    return avf_error_set (err, AVF_ERR_NOMEM, -1,
        "out of memory for attention over %d x %d tokens", Tq_max, Tk_max);
  }
  *out = m;
  return AVF_OK;
}

void
avf_softmax_rows (float *x, int rows, int n, const uint8_t * mask)
{
  for (int r = 0; r < rows; r++) {
    float *row = x + (size_t) r * n;
    if (mask)
      for (int j = 0; j < n; j++)
        row[j] = mask[j] ? -INFINITY : row[j];
    const float mx = avf_vmax (row, (size_t) n);
    if (mx == -INFINITY) {
      /* every key masked (or no finite score): zero weights, never NaN */
      memset (row, 0, (size_t) n * sizeof (float));
      continue;
    }
    /* masked keys: exp(-inf) is exactly 0 */
    avf_vexp_shifted (row, (size_t) n, mx);
    avf_vscale (row, (size_t) n, 1.0f / avf_vsum (row, (size_t) n));
  }
}

void
avf_mha_forward (AvfMha * m, float *out, float *attn, AvfAttnMode mode,
    const float *xq, int Tq, const float *xkv, int Tk,
    const uint8_t * key_mask, const AvfMhaWeights * w)
{
  const int E = m->E, H = m->H, hd = E / H;
  const size_t EE = (size_t) E * E;
  const float scale = (float) (1.0 / sqrt ((double) hd));

  /* in_proj: q, k, v blocks of in_proj_weight (3E, E), in as few GEMMs as
   * the inputs allow.  ref: F._in_projection_packed (self-attention: one
   * linear for all three; otherwise q alone and k, v together) */
  const float *q, *k, *v;
  int ldq, ldkv;
  if (xq == xkv && Tq == Tk) {
    avf_linear (m->kv, xq, E, w->in_proj_weight, w->in_proj_bias, Tq, E,
        3 * E);
    q = m->kv, k = m->kv + E, v = m->kv + 2 * E;
    ldq = ldkv = 3 * E;
  } else {
    avf_linear (m->q, xq, E, w->in_proj_weight, w->in_proj_bias, Tq, E, E);
    avf_linear (m->kv, xkv, E, w->in_proj_weight + EE, w->in_proj_bias + E,
        Tk, E, 2 * E);
    q = m->q, k = m->kv, v = m->kv + E;
    ldq = E, ldkv = 2 * E;
  }

  /* per-head maps are computed in place in attn; the head mean is summed
   * while each head's weights are still in cache */
  const size_t plane = (size_t) Tq * Tk;
  for (int h = 0; h < H; h++) {
    float *s = mode == AVF_ATTN_PER_HEAD && attn ? attn + (size_t) h * plane :
        m->scores;
    /* s = (q_h / sqrt(hd)) k_h^T: (Tq, Tk) */
    cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasTrans, Tq, Tk, hd, scale,
        q + (size_t) h * hd, ldq, k + (size_t) h * hd, ldkv, 0.0f, s, Tk);
    avf_softmax_rows (s, Tq, Tk, key_mask);
    /* ctx_h = s v_h: (Tq, hd) */
    cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasNoTrans, Tq, hd, Tk, 1.0f,
        s, Tk, v + (size_t) h * hd, ldkv, 0.0f, m->ctx + (size_t) h * hd, E);
    if (mode == AVF_ATTN_MEAN && attn != NULL) {
      /* ref: attn_output_weights.mean(dim=1): summed in head order */
      if (h == 0)
        memcpy (attn, s, plane * sizeof (float));
      else
        for (size_t i = 0; i < plane; i++)
          attn[i] += s[i];
    }
  }
  avf_linear (out, m->ctx, E, w->out_proj_weight, w->out_proj_bias, Tq, E, E);

  if (mode == AVF_ATTN_MEAN && attn != NULL)
    avf_vscale (attn, plane, 1.0f / (float) H);
}
