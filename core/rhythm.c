/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "rhythm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "ffn.h"

/* ---- §2: rhythm features ------------------------------------------------ */

struct AvfRhythmEmbed
{
  const AvfWeights *w;
  float *pooled;                /* (N, 3 Q Q) */
  int k;                        /* rhythm_neighbourhood, as created */
  int from;                     /* rhythm_neighbourhood_from: the first
                                 * feature averaged */
  float *rowsum;                /* (N, D): k > 1 only */
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
  re->k = r->neighbourhood > 1 ? r->neighbourhood : 1;
  re->from = re->k > 1 ? r->neighbourhood_from : 0;
  if (re->k > 1) {
    re->rowsum = malloc ((size_t) w->cfg.N * r->D * sizeof (float));
    if (re->rowsum == NULL) {
      avf_rhythm_embed_free (re);
      return avf_error_set (err, AVF_ERR_NOMEM, -1,
          "out of memory for the rhythm neighbourhood");
    }
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
  free (re->rowsum);
  free (re);
}

/* docs/avfusion-v2.md §2, neighbourhood k > 1: r_n,d <- the mean of r_m,d
 * over the patches m of the k x k block centred on n inside the grid, for
 * the features d >= rhythm_neighbourhood_from (ref: avg_pool2d(r[:, f:],
 * k, stride=1, padding=k // 2, count_include_pad=False) on r [D, rows,
 * cols]; the features below f stay as they are).  Separable: first the
 * sums along each grid row (into re->rowsum), then those sums added down
 * the columns and divided by the number of patches in the block; each
 * float sum runs in increasing patch order. */
static void
neighbourhood_mean (AvfRhythmEmbed * re, float *out, size_t ldo, int cols)
{
  const int N = re->w->cfg.N, D = re->w->rhythm.D, f = re->from;
  const int h = re->k / 2;
  const int rows = N / cols;
  float *rs = re->rowsum;

  for (int y = 0; y < rows; y++)
    for (int x = 0; x < cols; x++) {
      const int x0 = x - h < 0 ? 0 : x - h;
      const int x1 = x + h >= cols ? cols - 1 : x + h;
      float *s = rs + ((size_t) y * cols + x) * D;
      for (int d = f; d < D; d++)
        s[d] = 0.0f;
      for (int m = x0; m <= x1; m++) {
        const float *r = out + ((size_t) y * cols + m) * ldo;
        for (int d = f; d < D; d++)
          s[d] += r[d];
      }
    }
  for (int y = 0; y < rows; y++) {
    const int y0 = y - h < 0 ? 0 : y - h;
    const int y1 = y + h >= rows ? rows - 1 : y + h;
    for (int x = 0; x < cols; x++) {
      const int x0 = x - h < 0 ? 0 : x - h;
      const int x1 = x + h >= cols ? cols - 1 : x + h;
      const float count = (float) ((y1 - y0 + 1) * (x1 - x0 + 1));
      float *o = out + ((size_t) y * cols + x) * ldo;
      for (int d = f; d < D; d++) {
        float s = 0.0f;
        for (int m = y0; m <= y1; m++)
          s += rs[((size_t) m * cols + x) * D + d];
        o[d] = s / count;
      }
    }
  }
}

void
avf_rhythm_embed_forward (AvfRhythmEmbed * re, float *out, size_t ldo,
    const float *patches, int cols)
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
  /* the neighbourhood on a grid of `cols` columns (a grid that does not
   * have N patches is the caller's error: one row of N then) */
  if (re->k > 1)
    neighbourhood_mean (re, out, ldo, cols >= 1 && cols <= N
        && N % cols == 0 ? cols : N);
}

/* ---- §3.2: bins --------------------------------------------------------- */

int64_t
avf_rhythm_bin_centre (int64_t t, int64_t window_ns, int j, int G, int hop,
    int sample_rate)
{
  /* floor(a 10^9 / b) = q 10^9 + floor(r 10^9 / b) with q = floor(a / b)
   * and r = a - q b in [0, b): exact in 64 bits since r < b <= 2^32.  C
   * divides towards zero, so q is one less for a negative a that b does
   * not divide (docs/avfusion-v2.md §3.2: floor also below zero). */
  const int64_t a = (2 * (int64_t) j + 1) * G * (int64_t) hop;
  const int64_t b = 2 * (int64_t) sample_rate;
  int64_t q = a / b, r = a % b;
  if (r < 0) {
    q -= 1;
    r += b;
  }
  return t - window_ns + q * INT64_C (1000000000)
      + (r * INT64_C (1000000000)) / b;
}

int
avf_rhythm_n_centres (const AvfRhythmConfig * r)
{
  return avf_rhythm_config_version (r) < 2 ? 0 : r->K + r->lags - 1;
}

void
avf_rhythm_bin_frames (int *out, int n_out, int first, int G,
    const int64_t * start, const int64_t * end, size_t n, int64_t t,
    int64_t window_ns, int hop, int sample_rate)
{
  for (int i = 0; i < n_out; i++) {
    const int64_t c = avf_rhythm_bin_centre (t, window_ns, first + i, G, hop,
        sample_rate);
    out[i] = -1;
    if (c >= t)
      continue;
    /* the latest frame first, as avfusion2.bin_frames looks */
    for (size_t f = n; f-- > 0;) {
      int64_t cover = f + 1 < n ? start[f + 1] : t;
      if (end[f] < cover)
        cover = end[f];
      if (start[f] <= c && c < cover) {
        out[i] = (int) f;
        break;
      }
    }
  }
}

/* ---- §3.3: the rhythm term ---------------------------------------------- */

/* eps of the correlation's denominator (avfusion2.RHYTHM_EPS) */
#define RHYTHM_EPS 1e-3f

struct AvfRhythm
{
  const AvfWeights *w;
  int T;
  float *u;                     /* (T, C) audio rhythm features */
  float *U;                     /* (K, C) per bin: U_k */
  uint8_t *audio;               /* (K) the bin has audio */
  int *vk;                      /* (K) the valid bins of one lag, in order */
  float *Uw;                    /* (K, C) w_lk (U_k - mean U) / |V| */
  float *X;                     /* (K, N D) R_k - mean R */
  float *mean;                  /* (N D) */
  float *var_r;                 /* (N D) */
  float *var_u;                 /* (C) */
  float *cov;                   /* (N D, C) */
  float *S;                     /* (N, lags D C) */
};

void
avf_rhythm_free (AvfRhythm * r)
{
  if (r == NULL)
    return;
  free (r->u);
  free (r->U);
  free (r->audio);
  free (r->vk);
  free (r->Uw);
  free (r->X);
  free (r->mean);
  free (r->var_r);
  free (r->var_u);
  free (r->cov);
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
        "%d = %d (rhythm_bin_weight [%d, %d], rhythm_bin_slots %d)", T,
        rc->K, rc->G, rc->K * rc->G, rc->lags, rc->K, rc->G);
  AvfRhythm *r = calloc (1, sizeof *r);
  if (r == NULL)
    return avf_error_set (err, AVF_ERR_NOMEM, -1, "out of memory");
  /* every size <= 65536 (lags D C too): the products fit in size_t */
  const size_t K = (size_t) rc->K, C = (size_t) rc->C;
  const size_t ND = (size_t) w->cfg.N * rc->D;
  r->w = w;
  r->T = T;
  r->u = malloc ((size_t) T * C * sizeof (float));
  r->U = malloc (K * C * sizeof (float));
  r->audio = malloc (K);
  r->vk = malloc (K * sizeof (int));
  r->Uw = malloc (K * C * sizeof (float));
  r->X = malloc (K * ND * sizeof (float));
  r->mean = malloc (ND * sizeof (float));
  r->var_r = malloc (ND * sizeof (float));
  r->var_u = malloc (C * sizeof (float));
  r->cov = malloc (ND * C * sizeof (float));
  r->S = malloc (ND * C * (size_t) rc->lags * sizeof (float));
  if (!r->u || !r->U || !r->audio || !r->vk || !r->Uw || !r->X || !r->mean
      || !r->var_r || !r->var_u || !r->cov || !r->S) {
    avf_rhythm_free (r);
    return avf_error_set (err, AVF_ERR_NOMEM, -1,
        "out of memory for the rhythm workspaces");
  }
  *out = r;
  return AVF_OK;
}

/* S^l (columns l D C .. of r->S) of the nv valid bins r->vk of lag l,
 * whose video hist[k + l] all has. */
static void
lag_correlation (AvfRhythm * r, int l, int nv, const float *const *hist)
{
  const AvfWeights *w = r->w;
  const int N = w->cfg.N, D = w->rhythm.D, C = w->rhythm.C, K = w->rhythm.K;
  const size_t ND = (size_t) N * D, LDC = (size_t) w->rhythm.lags * D * C;
  const float *wl = w->rhythm_bin_weight + (size_t) l * K;

  const float inv = 1.0f / (float) nv;

  /* ups_k = U_k - mean U; Uw_k = w_lk ups_k / |V|; var_u = mean ups^2 */
  for (int c = 0; c < C; c++) {
    float s = 0.0f, q = 0.0f;
    for (int v = 0; v < nv; v++)
      s += r->U[(size_t) r->vk[v] * C + c];
    const float mean = s * inv;
    for (int v = 0; v < nv; v++) {
      const float ups = r->U[(size_t) r->vk[v] * C + c] - mean;
      q += ups * ups;
      r->Uw[(size_t) v * C + c] = wl[r->vk[v]] * ups * inv;
    }
    r->var_u[c] = q * inv;
  }
  /* rho_k = R_k - mean R; var_r = mean rho^2 (float sums of at most K
   * terms; the loops vectorise) */
  memcpy (r->mean, hist[r->vk[0] + l], ND * sizeof (float));
  for (int v = 1; v < nv; v++) {
    const float *restrict R = hist[r->vk[v] + l];
    float *restrict mean = r->mean;
    for (size_t i = 0; i < ND; i++)
      mean[i] += R[i];
  }
  for (size_t i = 0; i < ND; i++) {
    r->mean[i] *= inv;
    r->var_r[i] = 0.0f;
  }
  for (int v = 0; v < nv; v++) {
    const float *restrict R = hist[r->vk[v] + l];
    const float *restrict mean = r->mean;
    float *restrict X = r->X + (size_t) v * ND, *restrict var = r->var_r;
    for (size_t i = 0; i < ND; i++) {
      X[i] = R[i] - mean[i];
      var[i] += X[i] * X[i];
    }
  }
  /* cov (N D, C) = X^T Uw: cov_n[d][c] = (1/|V|) sum_k w_lk rho_nk[d]
   * ups_k[c] (ref: torch.einsum("bknd,bkc->bndc")) */
  cblas_sgemm (CblasRowMajor, CblasTrans, CblasNoTrans, (int) ND, C, nv,
      1.0f, r->X, (int) ND, r->Uw, C, 0.0f, r->cov, C);
  /* S^l_n[d][c] = cov / sqrt(var_r var_u + eps), at column (l D + d) C + c
   * of row n */
  for (int n = 0; n < N; n++)
    for (int d = 0; d < D; d++) {
      const size_t i = (size_t) n * D + d;
      const float vr = r->var_r[i] * inv;
      float *S = r->S + (size_t) n * LDC + ((size_t) l * D + d) * C;
      for (int c = 0; c < C; c++)
        S[c] = r->cov[i * C + c] / sqrtf (vr * r->var_u[c] + RHYTHM_EPS);
    }
}

int
avf_rhythm_tokens (AvfRhythm * r, float *tokens, const float *video,
    size_t ldv, const float *mel, const uint8_t * mask,
    const float *const *hist, int *valid)
{
  const AvfWeights *w = r->w;
  const int E = w->cfg.E, N = w->cfg.N, M = w->cfg.M;
  const int D = w->rhythm.D, C = w->rhythm.C, K = w->rhythm.K;
  const int G = w->rhythm.G, lags = w->rhythm.lags;
  const int LDC = lags * D * C;
  int total = 0, any = 0;

  /* e_n: the v1 token */
  for (int n = 0; n < N; n++)
    memcpy (tokens + (size_t) n * E, video + (size_t) n * ldv,
        (size_t) E * sizeof (float));

  /* u_j = audio_rhythm(mel_j) (ref: nn.Linear(M, C)); U_k = mean of u_j
   * over the slots of bin k that hold audio */
  avf_linear (r->u, mel, M, w->audio_rhythm_weight, w->audio_rhythm_bias,
      r->T, M, C);
  for (int k = 0; k < K; k++) {
    float *U = r->U + (size_t) k * C;
    int cnt = 0;
    for (int c = 0; c < C; c++)
      U[c] = 0.0f;
    for (int j = k * G; j < (k + 1) * G; j++) {
      if (mask && mask[j])
        continue;
      for (int c = 0; c < C; c++)
        U[c] += r->u[(size_t) j * C + c];
      cnt++;
    }
    for (int c = 0; c < C && cnt > 0; c++)
      U[c] /= (float) cnt;
    r->audio[k] = cnt > 0;
  }

  /* per lag: bin k is valid with audio and the frame of c_{k + lag} */
  for (int l = 0; l < lags; l++) {
    int nv = 0;
    for (int k = 0; k < K; k++)
      if (r->audio[k] && hist[k + l] != NULL)
        r->vk[nv++] = k;
    if (valid)
      valid[l] = nv;
    total += nv;
    if (nv >= 2) {
      lag_correlation (r, l, nv, hist);
      any = 1;
    } else {
      /* S^l_n = 0 */
      for (int n = 0; n < N; n++)
        memset (r->S + (size_t) n * LDC + (size_t) l * D * C, 0,
            (size_t) D * C * sizeof (float));
    }
  }
  if (!any)
    return total;               /* every S^l_n = 0: v_n = e_n */

  /* v_n = e_n + rhythm_proj.weight @ concat_l vec(S^l_n), vec in (d, c)
   * order (ref: nn.Linear(lags D C, E, bias=False)) */
  cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasTrans, N, E, LDC, 1.0f,
      r->S, LDC, w->rhythm_proj_weight, LDC, 1.0f, tokens, E);
  return total;
}
