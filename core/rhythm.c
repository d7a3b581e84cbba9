/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "rhythm.h"

#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "ffn.h"

/* ---- §2: rhythm features ------------------------------------------------ */

struct AvfRhythmEmbed
{
  const AvfWeights *w;
  float *pooled;                /* (N, 3 Q Q) */
};

AvfStatus
avf_rhythm_embed_new (AvfRhythmEmbed ** out, const AvfWeights * w,
    AvfError * err)
{
  const AvfRhythmConfig *r = &w->rhythm;
  if (avf_rhythm_config_version (r) < 2)
    return avf_error_set (err, AVF_ERR_INVALID, -1,
        "an avfusion-v1 model has no rhythm features");
  AvfRhythmEmbed *re = calloc (1, sizeof *re);
  if (re == NULL)
    return avf_error_set (err, AVF_ERR_NOMEM, -1, "out of memory");
  re->w = w;
  /* N, Q <= 65536 and 3 Q Q <= 3 P P: the product fits in size_t */
  re->pooled = malloc ((size_t) w->cfg.N * 3 * r->Q * r->Q * sizeof (float));
  if (re->pooled == NULL) {
    avf_rhythm_embed_free (re);
    return avf_error_set (err, AVF_ERR_NOMEM, -1,
        "out of memory for the pooled patches");
  }
  *out = re;
  return AVF_OK;
}

void
avf_rhythm_embed_free (AvfRhythmEmbed * re)
{
  if (re == NULL)
    return;
  free (re->pooled);
  free (re);
}

void
avf_rhythm_embed_forward (AvfRhythmEmbed * re, float *out, size_t ldo,
    const float *patches)
{
  const AvfWeights *w = re->w;
  const int P = w->cfg.P, N = w->cfg.N, Q = w->rhythm.Q, D = w->rhythm.D;
  const int S = P / Q, KP = 3 * P * P, KQ = 3 * Q * Q;
  const float area = (float) (S * S);

  /* ref: torch.nn.functional.avg_pool2d(x, S), patch by patch: cell
   * (qy, qx) of channel c is the mean of rows qy S.., columns qx S.. */
  for (int n = 0; n < N; n++) {
    const float *p = patches + (size_t) n * KP;
    float *q = re->pooled + (size_t) n * KQ;
    for (int c = 0; c < 3; c++) {
      for (int qy = 0; qy < Q; qy++) {
        for (int qx = 0; qx < Q; qx++) {
          float s = 0.0f;
          for (int sy = 0; sy < S; sy++) {
            const float *row = p + (size_t) c * P * P
                + (size_t) (qy * S + sy) * P + (size_t) qx * S;
            for (int sx = 0; sx < S; sx++)
              s += row[sx];
          }
          q[c * Q * Q + qy * Q + qx] = s / area;
        }
      }
    }
  }
  /* ref: Conv2d(3, D, Q, stride=Q): out = pooled @ W^T + bias */
  for (int n = 0; n < N; n++)
    memcpy (out + (size_t) n * ldo, w->rhythm_embed_bias,
        (size_t) D * sizeof (float));
  cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasTrans, N, D, KQ, 1.0f,
      re->pooled, KQ, w->rhythm_embed_weight, KQ, 1.0f, out, (int) ldo);
}

/* ---- §3.2: bins --------------------------------------------------------- */

int64_t
avf_rhythm_bin_centre (int64_t t, int64_t window_ns, int k, int G, int hop,
    int sample_rate)
{
  /* floor(a 10^9 / b) = (a / b) 10^9 + floor((a % b) 10^9 / b), exact in
   * 64 bits since a % b < b <= 2^32 */
  const int64_t a = (2 * (int64_t) k + 1) * G * (int64_t) hop;
  const int64_t b = 2 * (int64_t) sample_rate;
  const int64_t off = (a / b) * INT64_C (1000000000)
      + ((a % b) * INT64_C (1000000000)) / b;
  return t - window_ns + off;
}

void
avf_rhythm_bin_frames (int *out, int K, int G, const int64_t * start,
    const int64_t * end, size_t n, int64_t t, int64_t window_ns, int hop,
    int sample_rate)
{
  for (int k = 0; k < K; k++) {
    const int64_t c = avf_rhythm_bin_centre (t, window_ns, k, G, hop,
        sample_rate);
    out[k] = -1;
    if (c >= t)
      continue;
    /* the latest frame first, as avfusion2.bin_frames looks */
    for (size_t i = n; i-- > 0;) {
      int64_t cover = i + 1 < n ? start[i + 1] : t;
      if (end[i] < cover)
        cover = end[i];
      if (start[i] <= c && c < cover) {
        out[k] = (int) i;
        break;
      }
    }
  }
}

/* ---- §3.3: the rhythm term ---------------------------------------------- */

struct AvfRhythm
{
  const AvfWeights *w;
  int T;
  float *u;                     /* (T, C) audio rhythm features */
  float *U;                     /* (K, C) per bin, then centred and weighted */
  int *valid;                   /* (K) the valid bins, in order */
  float *X;                     /* (K, N D) R_k - mean R */
  double *mean;                 /* (N D) */
  float *S;                     /* (N D, C) = (N, D C) */
};

void
avf_rhythm_free (AvfRhythm * r)
{
  if (r == NULL)
    return;
  free (r->u);
  free (r->U);
  free (r->valid);
  free (r->X);
  free (r->mean);
  free (r->S);
  free (r);
}

AvfStatus
avf_rhythm_new (AvfRhythm ** out, const AvfWeights * w, int T, AvfError * err)
{
  const AvfRhythmConfig *rc = &w->rhythm;
  if (avf_rhythm_config_version (rc) < 2)
    return avf_error_set (err, AVF_ERR_INVALID, -1,
        "an avfusion-v1 model has no rhythm term");
  if ((int64_t) rc->K * rc->G != T)
    return avf_error_set (err, AVF_ERR_SHAPE, -1,
        "the audio window has %d slots, but the rhythm bins need %d bins of "
        "%d = %d (rhythm_bin_weight [%d], rhythm_bin_slots %d)", T, rc->K,
        rc->G, rc->K * rc->G, rc->K, rc->G);
  AvfRhythm *r = calloc (1, sizeof *r);
  if (r == NULL)
    return avf_error_set (err, AVF_ERR_NOMEM, -1, "out of memory");
  /* every size <= 65536 (D C too): the products fit in size_t */
  const size_t K = (size_t) rc->K, C = (size_t) rc->C;
  const size_t ND = (size_t) w->cfg.N * rc->D;
  r->w = w;
  r->T = T;
  r->u = malloc ((size_t) T * C * sizeof (float));
  r->U = malloc (K * C * sizeof (float));
  r->valid = malloc (K * sizeof (int));
  r->X = malloc (K * ND * sizeof (float));
  r->mean = malloc (ND * sizeof (double));
  r->S = malloc (ND * C * sizeof (float));
  if (!r->u || !r->U || !r->valid || !r->X || !r->mean || !r->S) {
    avf_rhythm_free (r);
    return avf_error_set (err, AVF_ERR_NOMEM, -1,
        "out of memory for the rhythm workspaces");
  }
  *out = r;
  return AVF_OK;
}

int
avf_rhythm_tokens (AvfRhythm * r, float *tokens, const float *video,
    size_t ldv, const float *mel, const uint8_t * mask,
    const float *const *hist)
{
  const AvfWeights *w = r->w;
  const int E = w->cfg.E, N = w->cfg.N, M = w->cfg.M;
  const int D = w->rhythm.D, C = w->rhythm.C, K = w->rhythm.K;
  const int G = w->rhythm.G;
  const size_t ND = (size_t) N * D;
  int nv = 0;

  /* e_n: the v1 token */
  for (int n = 0; n < N; n++)
    memcpy (tokens + (size_t) n * E, video + (size_t) n * ldv,
        (size_t) E * sizeof (float));

  /* u_j = audio_rhythm(mel_j) (ref: nn.Linear(M, C)); U_k = mean of u_j
   * over the slots of bin k that hold audio.  A bin is valid when it has
   * both audio and a frame. */
  avf_linear (r->u, mel, M, w->audio_rhythm_weight, w->audio_rhythm_bias,
      r->T, M, C);
  for (int k = 0; k < K; k++) {
    float *U = r->U + (size_t) nv * C;
    int cnt = 0;
    if (hist[k] == NULL)
      continue;
    for (int c = 0; c < C; c++)
      U[c] = 0.0f;
    for (int j = k * G; j < (k + 1) * G; j++) {
      if (mask && mask[j])
        continue;
      for (int c = 0; c < C; c++)
        U[c] += r->u[(size_t) j * C + c];
      cnt++;
    }
    if (cnt == 0)
      continue;
    for (int c = 0; c < C; c++)
      U[c] /= (float) cnt;
    r->valid[nv++] = k;
  }
  if (nv < 2)
    return nv;                  /* S_n = 0: v_n = e_n */

  /* U_k <- w_k (U_k - mean U); X_k = R_k - mean R */
  for (int c = 0; c < C; c++) {
    double s = 0.0;
    for (int v = 0; v < nv; v++)
      s += r->U[(size_t) v * C + c];
    const float mean = (float) (s / nv);
    for (int v = 0; v < nv; v++)
      r->U[(size_t) v * C + c] = w->rhythm_bin_weight[r->valid[v]]
          * (r->U[(size_t) v * C + c] - mean);
  }
  for (size_t i = 0; i < ND; i++)
    r->mean[i] = 0.0;
  for (int v = 0; v < nv; v++) {
    const float *R = hist[r->valid[v]];
    for (size_t i = 0; i < ND; i++)
      r->mean[i] += R[i];
  }
  for (int v = 0; v < nv; v++) {
    const float *R = hist[r->valid[v]];
    float *X = r->X + (size_t) v * ND;
    for (size_t i = 0; i < ND; i++)
      X[i] = R[i] - (float) (r->mean[i] / nv);
  }

  /* S (N D, C) = X^T U: S_n[d][c] = sum_k w_k (R_nk - mean)[d] (U_k -
   * mean)[c] (ref: torch.einsum("bknd,bkc->bndc")) */
  cblas_sgemm (CblasRowMajor, CblasTrans, CblasNoTrans, (int) ND, C, nv,
      1.0f, r->X, (int) ND, r->U, C, 0.0f, r->S, C);
  /* v_n = e_n + rhythm_proj.weight @ vec(S_n), vec in (d, c) order (ref:
   * nn.Linear(D C, E, bias=False)) */
  cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasTrans, N, E, D * C, 1.0f,
      r->S, D * C, w->rhythm_proj_weight, D * C, 1.0f, tokens, E);
  return nv;
}
