/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "weights.h"

#include <stdarg.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prng.h"
#include "safetensors.h"

/* Largest size accepted for any one dimension: keeps every product of two or
 * three dimensions far inside int and size_t. */
#define AVF_DIM_MAX 65536
#define AVF_LAYERS_MAX 64

AvfConfig
avf_config_default (void)
{
  AvfConfig c = {
    .E = 256,.H = 8,.L = 1,.F = 1024,.M = 64,.P = 16,.N = 196,.T_max = 100,
    .sample_rate = 16000,.n_fft = 400,.hop_length = 160,.window_ms = 1000,
  };
  return c;
}

int
avf_rhythm_neighbourhood_max (int N)
{
  /* ceil(sqrt(N)) in integers: the smallest s with s s >= N (N <= 65536) */
  int s = 1;
  while ((int64_t) s * s < N)
    s++;
  return 2 * s - 1;
}

int
avf_rhythm_config_version (const AvfRhythmConfig * r)
{
  return r != NULL && r->D > 0 ? 2 : 1;
}

const char *
avf_rhythm_config_format (const AvfRhythmConfig * r)
{
  return avf_rhythm_config_version (r) == 2 ? "avfusion-v2" : "avfusion-v1";
}

const char *
avf_weights_format (const AvfWeights * w)
{
  return avf_rhythm_config_format (&w->rhythm);
}

static const char *const module_names[AVF_N_MODULES] = {
  "audio_self", "video_self", "audio_cross", "video_cross",
};

const char *
avf_module_name (AvfModule m)
{
  return (unsigned) m < AVF_N_MODULES ? module_names[m] : "unknown";
}

void
avf_module_dims (AvfModule m, int T, int N, int *tq, int *tk)
{
  *tq = (m == AVF_MODULE_AUDIO_SELF || m == AVF_MODULE_AUDIO_CROSS) ? T : N;
  *tk = (m == AVF_MODULE_AUDIO_SELF || m == AVF_MODULE_VIDEO_CROSS) ? T : N;
}

AvfStatus
avf_config_check (const AvfConfig * c, AvfError * err)
{
  const struct
  {
    const char *name;
    int value;
  } dims[] = {
    {"embedding width E", c->E}, {"number of heads H", c->H},
    {"number of layers L", c->L}, {"feed-forward width F", c->F},
    {"mel bands M", c->M}, {"patch size P", c->P},
    {"number of patches N", c->N}, {"audio positions T_max", c->T_max},
  };
  for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
    if (dims[i].value <= 0 || dims[i].value > AVF_DIM_MAX)
      return avf_error_set (err, AVF_ERR_SHAPE, -1,
          "%s is %d, expected 1..%d", dims[i].name, dims[i].value,
          AVF_DIM_MAX);
  }
  if (c->L > AVF_LAYERS_MAX)
    return avf_error_set (err, AVF_ERR_SHAPE, -1,
        "%d layers, at most %d are supported", c->L, AVF_LAYERS_MAX);
  if (c->E % c->H != 0)
    return avf_error_set (err, AVF_ERR_SHAPE, -1,
        "embedding width E %d is not divisible by the number of heads H %d",
        c->E, c->H);
  return AVF_OK;
}

AvfStatus
avf_rhythm_config_check (const AvfRhythmConfig * r, const AvfConfig * c,
    AvfError * err)
{
  if (r->D == 0 && r->C == 0 && r->Q == 0 && r->K == 0 && r->G == 0
      && r->lags == 0 && r->lag_min == 0 && r->neighbourhood == 0
      && r->neighbourhood_from == 0)
    return AVF_OK;              /* avfusion-v1 */

  const struct
  {
    const char *name;
    int value;
  } v2[] = {
    {"rhythm features D", r->D}, {"audio rhythm features C", r->C},
    {"rhythm patch side Q", r->Q}, {"rhythm bins K", r->K},
    {"audio slots per rhythm bin G", r->G}, {"rhythm lags", r->lags},
  };
  for (size_t i = 0; i < sizeof v2 / sizeof v2[0]; i++) {
    if (v2[i].value <= 0 || v2[i].value > AVF_DIM_MAX)
      return avf_error_set (err, AVF_ERR_SHAPE, -1,
          "%s is %d, expected 1..%d", v2[i].name, v2[i].value, AVF_DIM_MAX);
  }
  if (c->P % r->Q != 0)
    return avf_error_set (err, AVF_ERR_SHAPE, -1,
        "rhythm patch side Q %d does not divide the patch size P %d", r->Q,
        c->P);
  if ((int64_t) r->K * r->G > c->T_max)
    return avf_error_set (err, AVF_ERR_SHAPE, -1,
        "%d rhythm bins of %d audio slots need %lld audio positions, but "
        "there are %d (T_max)", r->K, r->G, (long long) r->K * r->G,
        c->T_max);
  if ((int64_t) r->lags * r->D * r->C > AVF_DIM_MAX)
    return avf_error_set (err, AVF_ERR_SHAPE, -1,
        "%d rhythm lags times rhythm features D %d times audio rhythm "
        "features C %d is above %d", r->lags, r->D, r->C, AVF_DIM_MAX);
  /* docs/avfusion-v2.md §4: |lag_min| <= K and |lag_min + lags - 1| <= K
   * (lags <= 65536: no overflow) */
  if (r->lag_min < -r->K || r->lag_min > r->K
      || r->lag_min + r->lags - 1 > r->K)
    return avf_error_set (err, AVF_ERR_SHAPE, -1,
        "rhythm_lag_min %d with %d lags reaches past the window's %d bins "
        "(lags %d .. %d; each must be within -%d .. %d)", r->lag_min,
        r->lags, r->K, r->lag_min, r->lag_min + r->lags - 1, r->K, r->K);
  /* docs/avfusion-v2.md §4: k odd, 1 .. 2 ceil(sqrt(N)) - 1; 0 means 1 */
  const int kmax = avf_rhythm_neighbourhood_max (c->N);
  if (r->neighbourhood < 0 || r->neighbourhood > kmax
      || (r->neighbourhood > 0 && r->neighbourhood % 2 == 0))
    return avf_error_set (err, AVF_ERR_SHAPE, -1,
        "rhythm_neighbourhood %d: expected an odd number from 1 to %d "
        "(2 ceil(sqrt(N)) - 1 for N %d patches)", r->neighbourhood, kmax,
        c->N);
  if (r->neighbourhood_from != 0 && (r->neighbourhood <= 1
          || r->neighbourhood_from < 1 || r->neighbourhood_from >= r->D))
    return avf_error_set (err, AVF_ERR_SHAPE, -1,
        "rhythm_neighbourhood_from %d: expected 0, or 1 to %d (rhythm "
        "features D %d) with a rhythm_neighbourhood above 1 (it is %d)",
        r->neighbourhood_from, r->D - 1, r->D, r->neighbourhood);
  return AVF_OK;
}

/* ---- canonical tensor table ---------------------------------------- */

typedef enum
{
  INIT_WEIGHT,                  /* symmetric, bound sqrt(3 / fan_in) */
  INIT_BIAS,                    /* symmetric, bound 1 / sqrt(fan_in) */
  INIT_POS,                     /* symmetric, bound 1 */
  INIT_ONE,                     /* LayerNorm weight */
  INIT_ZERO                     /* LayerNorm bias */
} InitKind;

typedef struct
{
  char name[64];
  int ndim;
  uint64_t shape[4];
  uint64_t numel;
  InitKind init;
  uint64_t fan_in;
  const float **slot;
} TensorSpec;

typedef struct
{
  TensorSpec *specs;
  size_t n;
  AvfWeights *w;
} SpecList;

static void
add_spec (SpecList * l, const float **slot, InitKind init, uint64_t fan_in,
    int ndim, const uint64_t * shape, const char *fmt, ...)
    __attribute__((format (printf, 7, 8)));

static void
add_spec (SpecList * l, const float **slot, InitKind init, uint64_t fan_in,
    int ndim, const uint64_t * shape, const char *fmt, ...)
{
  if (l->specs != NULL) {
    TensorSpec *s = &l->specs[l->n];
    va_list ap;
    va_start (ap, fmt);
    vsnprintf (s->name, sizeof s->name, fmt, ap);
    va_end (ap);
    s->ndim = ndim;
    s->numel = 1;
    for (int d = 0; d < ndim; d++) {
      s->shape[d] = shape[d];
      s->numel *= shape[d];
    }
    s->init = init;
    s->fan_in = fan_in;
    s->slot = slot;
  }
  l->n++;
}

#define SHAPE(...) ((const uint64_t[]) { __VA_ARGS__ })
#define SLOT(field) (l->w ? &(field) : NULL)

/* Walks the tensors of spec §4 in canonical order, then those of
 * avfusion-v2 when @r has them.  With l->specs NULL only counts.
 * Dimensions are bounded by avf_config_check and avf_rhythm_config_check,
 * so products fit. */
static void
enumerate_specs (SpecList * l, const AvfConfig * c, const AvfRhythmConfig * r)
{
  const uint64_t E = c->E, M = c->M, P = c->P, F = c->F;
  AvfWeights *w = l->w;

  add_spec (l, SLOT (w->audio_proj_weight), INIT_WEIGHT, M, 2,
      SHAPE (E, M), "audio_proj.weight");
  add_spec (l, SLOT (w->audio_proj_bias), INIT_BIAS, M, 1, SHAPE (E),
      "audio_proj.bias");
  add_spec (l, SLOT (w->audio_pos), INIT_POS, 0, 2,
      SHAPE ((uint64_t) c->T_max, E), "audio_pos");
  add_spec (l, SLOT (w->patch_embed_weight), INIT_WEIGHT, 3 * P * P, 4,
      SHAPE (E, 3, P, P), "patch_embed.weight");
  add_spec (l, SLOT (w->patch_embed_bias), INIT_BIAS, 3 * P * P, 1,
      SHAPE (E), "patch_embed.bias");
  add_spec (l, SLOT (w->video_pos), INIT_POS, 0, 2,
      SHAPE ((uint64_t) c->N, E), "video_pos");

  for (int i = 0; i < c->L; i++) {
    AvfLayerWeights *lw = w ? &w->layers[i] : NULL;
    for (int m = 0; m < AVF_N_MODULES; m++) {
      const char *mn = module_names[m];
      add_spec (l, lw ? &lw->mha[m].in_proj_weight : NULL, INIT_WEIGHT, E,
          2, SHAPE (3 * E, E), "layers.%d.%s.in_proj_weight", i, mn);
      add_spec (l, lw ? &lw->mha[m].in_proj_bias : NULL, INIT_BIAS, E, 1,
          SHAPE (3 * E), "layers.%d.%s.in_proj_bias", i, mn);
      add_spec (l, lw ? &lw->mha[m].out_proj_weight : NULL, INIT_WEIGHT, E,
          2, SHAPE (E, E), "layers.%d.%s.out_proj.weight", i, mn);
      add_spec (l, lw ? &lw->mha[m].out_proj_bias : NULL, INIT_BIAS, E, 1,
          SHAPE (E), "layers.%d.%s.out_proj.bias", i, mn);
    }
    for (int side = 0; side < 2; side++) {
      for (int k = 0; k < 3; k++) {
        AvfLnWeights *ln = lw ? (side == 0 ? &lw->audio_norm[k] :
            &lw->video_norm[k]) : NULL;
        const char *sn = side == 0 ? "audio" : "video";
        add_spec (l, ln ? &ln->weight : NULL, INIT_ONE, 0, 1, SHAPE (E),
            "layers.%d.%s_norm%d.weight", i, sn, k + 1);
        add_spec (l, ln ? &ln->bias : NULL, INIT_ZERO, 0, 1, SHAPE (E),
            "layers.%d.%s_norm%d.bias", i, sn, k + 1);
      }
    }
    for (int side = 0; side < 2; side++) {
      AvfFfnWeights *f = lw ? (side == 0 ? &lw->audio_ffn : &lw->video_ffn)
          : NULL;
      const char *sn = side == 0 ? "audio" : "video";
      add_spec (l, f ? &f->w1 : NULL, INIT_WEIGHT, E, 2, SHAPE (F, E),
          "layers.%d.%s_ffn.0.weight", i, sn);
      add_spec (l, f ? &f->b1 : NULL, INIT_BIAS, E, 1, SHAPE (F),
          "layers.%d.%s_ffn.0.bias", i, sn);
      add_spec (l, f ? &f->w2 : NULL, INIT_WEIGHT, F, 2, SHAPE (E, F),
          "layers.%d.%s_ffn.2.weight", i, sn);
      add_spec (l, f ? &f->b2 : NULL, INIT_BIAS, F, 1, SHAPE (E),
          "layers.%d.%s_ffn.2.bias", i, sn);
    }
  }

  if (avf_rhythm_config_version (r) < 2)
    return;
  /* avfusion-v2: after v1's, in the order model/avfusion2.py writes them */
  const uint64_t D = r->D, C = r->C, Q = r->Q, K = r->K, Lg = r->lags;
  add_spec (l, SLOT (w->rhythm_embed_weight), INIT_WEIGHT, 3 * Q * Q, 4,
      SHAPE (D, 3, Q, Q), "rhythm_embed.weight");
  add_spec (l, SLOT (w->rhythm_embed_bias), INIT_BIAS, 3 * Q * Q, 1,
      SHAPE (D), "rhythm_embed.bias");
  add_spec (l, SLOT (w->audio_rhythm_weight), INIT_WEIGHT, M, 2,
      SHAPE (C, M), "audio_rhythm.weight");
  add_spec (l, SLOT (w->audio_rhythm_bias), INIT_BIAS, M, 1, SHAPE (C),
      "audio_rhythm.bias");
  add_spec (l, SLOT (w->rhythm_bin_weight), INIT_ONE, 0, 2, SHAPE (Lg, K),
      "rhythm_bin_weight");
  add_spec (l, SLOT (w->rhythm_proj_weight), INIT_WEIGHT, Lg * D * C, 2,
      SHAPE (E, Lg * D * C), "rhythm_proj.weight");
}

size_t
avf_weights_count (const AvfConfig * cfg)
{
  SpecList l = { NULL, 0, NULL };
  enumerate_specs (&l, cfg, NULL);
  return l.n;
}

static size_t
count_all (const AvfConfig * cfg, const AvfRhythmConfig * r)
{
  SpecList l = { NULL, 0, NULL };
  enumerate_specs (&l, cfg, r);
  return l.n;
}

size_t
avf_weights_n_tensors (const AvfWeights * w)
{
  return count_all (&w->cfg, &w->rhythm);
}

/* Allocates the weights object, its layer array, the spec table and one
 * aligned storage block; points every slot into the storage. */
static AvfStatus
weights_alloc (AvfWeights ** out, TensorSpec ** specs_out, size_t *n_out,
    const AvfConfig * cfg, const AvfRhythmConfig * rhythm, uint64_t max_bytes,
    AvfError * err)
{
  AvfStatus st = avf_config_check (cfg, err);
  if (st == AVF_OK)
    st = avf_rhythm_config_check (rhythm, cfg, err);
  if (st != AVF_OK)
    return st;

  size_t n = count_all (cfg, rhythm);
  AvfWeights *w = calloc (1, sizeof *w);
  TensorSpec *specs = calloc (n, sizeof *specs);
  if (w)
    w->layers = calloc ((size_t) cfg->L, sizeof *w->layers);
  if (!w || !specs || !w->layers) {
    free (specs);
    avf_weights_free (w);
    return avf_error_set (err, AVF_ERR_NOMEM, -1,
        "cannot allocate the weight tables");
  }
  w->cfg = *cfg;
  w->rhythm = *rhythm;
  if (avf_rhythm_config_version (rhythm) == 2 && rhythm->neighbourhood == 0)
    w->rhythm.neighbourhood = 1;        /* unset in code: the patch alone */
  SpecList l = { specs, 0, w };
  enumerate_specs (&l, cfg, rhythm);

  /* each tensor starts on a 64-byte boundary */
  uint64_t total = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t padded = (specs[i].numel + 15) & ~(uint64_t) 15;
    if (!avf_size_add (&total, total, padded))
      total = UINT64_MAX;
  }
  uint64_t bytes;
  if (total == UINT64_MAX || !avf_size_mul (&bytes, total, sizeof (float))
      || bytes > SIZE_MAX / 2) {
    free (specs);
    avf_weights_free (w);
    return avf_error_set (err, AVF_ERR_NOMEM, -1,
        "the weights would need more memory than can be addressed");
  }
  if (bytes > max_bytes) {
    free (specs);
    avf_weights_free (w);
    return avf_error_set (err, AVF_ERR_INVALID, -1,
        "built-in weights for E=%d, P=%d (N=%d) would take %llu bytes, more "
        "than the %llu allowed; use smaller sizes or a weights file",
        cfg->E, cfg->P, cfg->N, (unsigned long long) bytes,
        (unsigned long long) max_bytes);
  }
  w->storage_ = aligned_alloc (64, (size_t) bytes ? (size_t) bytes : 64);
  if (!w->storage_) {
    free (specs);
    avf_weights_free (w);
    return avf_error_set (err, AVF_ERR_NOMEM, -1,
        "cannot allocate %llu bytes for the weights",
        (unsigned long long) bytes);
  }
  w->n_floats_ = (size_t) total;
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    *specs[i].slot = w->storage_ + off;
    off += (size_t) ((specs[i].numel + 15) & ~(uint64_t) 15);
  }
  *out = w;
  *specs_out = specs;
  *n_out = n;
  return AVF_OK;
}

void
avf_weights_free (AvfWeights * w)
{
  if (w == NULL)
    return;
  free (w->storage_);
  free (w->layers);
  free (w);
}

int
avf_weights_tensor (const AvfWeights * w, size_t i, AvfWeightTensor * out)
{
  size_t n = avf_weights_n_tensors (w);
  if (i >= n)
    return 0;
  TensorSpec *specs = calloc (n, sizeof *specs);
  if (!specs)
    return 0;
  SpecList l = { specs, 0, (AvfWeights *) w };
  enumerate_specs (&l, &w->cfg, &w->rhythm);
  memcpy (out->name, specs[i].name, sizeof out->name);
  out->ndim = specs[i].ndim;
  memcpy (out->shape, specs[i].shape, sizeof out->shape);
  out->numel = specs[i].numel;
  out->data = *specs[i].slot;
  free (specs);
  return 1;
}

/* ---- built-in defaults ---------------------------------------------- */

AvfStatus
avf_weights_new_default (AvfWeights ** out, const AvfConfig * cfg,
    uint64_t seed, AvfError * err)
{
  const AvfRhythmConfig v1 = { 0, 0, 0, 0, 0, 0, 0, 0, 0 };
  return avf_weights_new_default_v2 (out, cfg, &v1, seed, err);
}

AvfStatus
avf_weights_new_default_v2 (AvfWeights ** out, const AvfConfig * cfg,
    const AvfRhythmConfig * rhythm, uint64_t seed, AvfError * err)
{
  AvfWeights *w;
  TensorSpec *specs;
  size_t n;
  AvfStatus st = weights_alloc (&w, &specs, &n, cfg, rhythm,
      AVF_WEIGHTS_DEFAULT_MAX_BYTES, err);
  if (st != AVF_OK)
    return st;

  uint64_t counter = 0;
  for (size_t i = 0; i < n; i++) {
    float *dst = (float *) *specs[i].slot;
    const TensorSpec *s = &specs[i];
    float bound;
    switch (s->init) {
      case INIT_ONE:
      case INIT_ZERO:
        for (uint64_t k = 0; k < s->numel; k++)
          dst[k] = s->init == INIT_ONE ? 1.0f : 0.0f;
        continue;
      case INIT_WEIGHT:
        bound = (float) sqrt (3.0 / (double) s->fan_in);
        break;
      case INIT_BIAS:
        bound = (float) (1.0 / sqrt ((double) s->fan_in));
        break;
      case INIT_POS:
      default:
        bound = 1.0f;
        break;
    }
    avf_prng_fill_symmetric (dst, s->numel, seed, counter, bound);
    counter += s->numel;
  }
  free (specs);
  *out = w;
  return AVF_OK;
}

/* ---- loading -------------------------------------------------------- */

static void
format_shape (char *buf, size_t size, int ndim, const uint64_t * shape)
{
  size_t pos = 0;
  pos += (size_t) snprintf (buf + pos, size - pos, "[");
  for (int d = 0; d < ndim && pos < size; d++)
    pos += (size_t) snprintf (buf + pos, size - pos, "%s%llu",
        d ? ", " : "", (unsigned long long) shape[d]);
  if (pos < size)
    snprintf (buf + pos, size - pos, "]");
}

/* Strict decimal integer in 1..max; returns -1 when not one. */
static long
parse_positive (const char *s, long max)
{
  if (s == NULL || *s == '\0' || strlen (s) > 9)
    return -1;
  long v = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9')
      return -1;
    v = v * 10 + (*p - '0');
  }
  return v >= 1 && v <= max ? v : -1;
}

/* Strict decimal integer "[+-]D..." (what Python's int() reads, without
 * blanks or underscores); *out saturates at +-10^12.  Returns 0 when not
 * one. */
static int
parse_integer (const char *s, int64_t *out)
{
  int64_t v = 0;
  int neg = 0;
  const char *p = s;

  if (s == NULL)
    return 0;
  if (*p == '+' || *p == '-')
    neg = *p++ == '-';
  if (*p == '\0')
    return 0;
  for (; *p; p++) {
    if (*p < '0' || *p > '9')
      return 0;
    if (v < INT64_C (1000000000000))
      v = v * 10 + (*p - '0');
  }
  *out = neg ? -v : v;
  return 1;
}

/* Strict decimal number "D[.D][e[+-]D]" (or ".D..."), read the same way
 * whatever the C locale (strtod would take "0,05" and refuse "0.05" in some
 * locales); finite, in (0, 1], and above 0 as a float.  Returns 0 when not
 * one. */
static int
parse_threshold (const char *s, double *out)
{
  uint64_t mant = 0;
  int digits = 0, scale = 0, exp10 = 0, any = 0;
  const char *p = s;

  if (s == NULL || strlen (s) > 64)
    return 0;
  for (; *p >= '0' && *p <= '9'; p++, any = 1) {
    if (mant == 0 && *p == '0')
      continue;                 /* leading zeros */
    if (digits < 19) {
      mant = mant * 10 + (uint64_t) (*p - '0');
      digits++;
    } else {
      scale++;                  /* digits beyond 19: only the magnitude */
    }
  }
  if (*p == '.') {
    for (p++; *p >= '0' && *p <= '9'; p++, any = 1) {
      if (mant == 0 && *p == '0') {
        scale--;
        continue;
      }
      if (digits < 19) {
        mant = mant * 10 + (uint64_t) (*p - '0');
        digits++;
        scale--;
      }
    }
  }
  if (!any)
    return 0;
  if (*p == 'e' || *p == 'E') {
    int sign = 1, edigits = 0;
    p++;
    if (*p == '+' || *p == '-')
      sign = *p++ == '-' ? -1 : 1;
    for (; *p >= '0' && *p <= '9'; p++, edigits++)
      if (exp10 < 1000)
        exp10 = exp10 * 10 + (*p - '0');
    if (edigits == 0)
      return 0;
    exp10 *= sign;
  }
  if (*p != '\0')
    return 0;
  int e = scale + exp10;
  double x = (double) mant;
  if (mant != 0) {
    if (e > 0)
      x = e > 400 ? INFINITY : x * pow (10.0, e);
    else if (e < 0)
      x = e < -400 ? 0.0 : x / pow (10.0, -e);
  }
  if (!isfinite (x) || !(x > 0.0) || x > 1.0 || !((float) x > 0.0f))
    return 0;
  *out = x;
  return 1;
}

static const AvfTensorInfo *
find_2d (const AvfSafetensors * st, const char *name, int ndim,
    const char *format, AvfError * err, AvfStatus * status)
{
  const AvfTensorInfo *t = avf_safetensors_find (st, name);
  if (t == NULL) {
    *status = avf_error_set (err, AVF_ERR_SHAPE, -1,
        "weights file has no tensor \"%s\", which every %s model needs",
        name, format);
    return NULL;
  }
  if (t->ndim != ndim) {
    char found[128];
    format_shape (found, sizeof found, t->ndim, t->shape);
    *status = avf_error_set (err, AVF_ERR_SHAPE, -1,
        "tensor \"%s\" has shape %s, expected %d dimensions", name, found,
        ndim);
    return NULL;
  }
  for (int d = 0; d < ndim; d++) {
    if (t->shape[d] == 0 || t->shape[d] > AVF_DIM_MAX) {
      char found[128];
      format_shape (found, sizeof found, t->ndim, t->shape);
      *status = avf_error_set (err, AVF_ERR_SHAPE, -1,
          "tensor \"%s\" has shape %s; each size must be 1..%d", name, found,
          AVF_DIM_MAX);
      return NULL;
    }
  }
  return t;
}

/* avfusion-v2: D, Q off rhythm_embed.weight, C off audio_rhythm.weight,
 * the lags and K off rhythm_bin_weight, G, lag_min and the neighbourhood
 * from the metadata;
 * the rest of each shape is checked with v1's tensors (check_tensor_set). */
static AvfStatus
infer_rhythm (AvfRhythmConfig * r, const AvfConfig * c,
    const AvfSafetensors * st, AvfError * err)
{
  const char *format = "avfusion-v2";
  AvfStatus status = AVF_OK;
  const AvfTensorInfo *t;
  char found[128];

  const char *slots = avf_safetensors_metadata (st, "rhythm_bin_slots");
  if (slots == NULL)
    return avf_error_set (err, AVF_ERR_FORMAT, -1,
        "weights file has no \"rhythm_bin_slots\" in __metadata__ (G, the "
        "audio slots per rhythm bin), which every avfusion-v2 file needs");
  r->G = (int) parse_positive (slots, AVF_DIM_MAX);
  if (r->G < 0)
    return avf_error_set (err, AVF_ERR_FORMAT, -1,
        "\"rhythm_bin_slots\" in __metadata__ is \"%s\", expected a "
        "positive integer", slots);

  if (!(t = find_2d (st, "rhythm_embed.weight", 4, format, err, &status)))
    return status;
  if (t->shape[1] != 3 || t->shape[2] != t->shape[3]
      || c->P % (int) t->shape[2] != 0) {
    format_shape (found, sizeof found, t->ndim, t->shape);
    return avf_error_set (err, AVF_ERR_SHAPE, -1,
        "tensor \"rhythm_embed.weight\" has shape %s, expected [D, 3, Q, Q] "
        "with Q dividing the patch size %d (patch_embed.weight)", found,
        c->P);
  }
  r->D = (int) t->shape[0];
  r->Q = (int) t->shape[2];
  if (!(t = find_2d (st, "audio_rhythm.weight", 2, format, err, &status)))
    return status;
  r->C = (int) t->shape[0];
  /* [lags, K] (a file of the first avfusion-v2 draft has [K]) */
  t = avf_safetensors_find (st, "rhythm_bin_weight");
  if (t != NULL && t->ndim != 2) {
    format_shape (found, sizeof found, t->ndim, t->shape);
    return avf_error_set (err, AVF_ERR_SHAPE, -1,
        "tensor \"rhythm_bin_weight\" has shape %s, expected 2 dimensions "
        "[lags, K]", found);
  }
  if (!(t = find_2d (st, "rhythm_bin_weight", 2, format, err, &status)))
    return status;
  r->lags = (int) t->shape[0];
  r->K = (int) t->shape[1];
  if ((int64_t) r->K * r->G > c->T_max)
    return avf_error_set (err, AVF_ERR_SHAPE, -1,
        "tensor \"rhythm_bin_weight\" has %d bins of %d audio slots "
        "(\"rhythm_bin_slots\"), %lld in all, but tensor \"audio_pos\" has "
        "positions for %d", r->K, r->G, (long long) r->K * r->G, c->T_max);

  /* lag_min: |lag_min| <= K and |lag_min + lags - 1| <= K */
  const char *lag = avf_safetensors_metadata (st, "rhythm_lag_min");
  int64_t lag_min;
  if (lag == NULL)
    return avf_error_set (err, AVF_ERR_FORMAT, -1,
        "weights file has no \"rhythm_lag_min\" in __metadata__ (the "
        "first of the rhythm term's lags, in bins), which every avfusion-v2 "
        "file needs");
  if (strlen (lag) > 64 || !parse_integer (lag, &lag_min))
    return avf_error_set (err, AVF_ERR_FORMAT, -1,
        "\"rhythm_lag_min\" in __metadata__ is \"%.64s\", expected an "
        "integer", lag);
  if (lag_min < -r->K || lag_min > r->K
      || lag_min + r->lags - 1 > r->K)
    return avf_error_set (err, AVF_ERR_SHAPE, -1,
        "\"rhythm_lag_min\" in __metadata__ is %s: with %d lags "
        "(tensor \"rhythm_bin_weight\" [%d, %d]) the lags %lld .. %lld reach "
        "past the window's %d bins (each must be within -%d .. %d)", lag,
        r->lags, r->lags, r->K, (long long) lag_min,
        (long long) (lag_min + r->lags - 1), r->K, r->K, r->K);
  r->lag_min = (int) lag_min;

  /* rhythm_neighbourhood (optional, absent: 1): odd, 1 .. 2 ceil(sqrt(N))
   * - 1 (docs/avfusion-v2.md §4) */
  const char *hood = avf_safetensors_metadata (st, "rhythm_neighbourhood");
  const int kmax = avf_rhythm_neighbourhood_max (c->N);
  int64_t k = 1;
  if (hood != NULL && (strlen (hood) > 64 || !parse_integer (hood, &k)))
    return avf_error_set (err, AVF_ERR_FORMAT, -1,
        "\"rhythm_neighbourhood\" in __metadata__ is \"%.64s\", expected an "
        "odd integer from 1 to %d", hood, kmax);
  if (k < 1 || k % 2 == 0 || k > kmax)
    return avf_error_set (err, k > kmax ? AVF_ERR_SHAPE : AVF_ERR_FORMAT, -1,
        "\"rhythm_neighbourhood\" in __metadata__ is %s, expected an odd "
        "integer from 1 to %d (2 ceil(sqrt(N)) - 1 for the N %d patches of "
        "tensor \"video_pos\")", hood, kmax, c->N);
  r->neighbourhood = (int) k;

  /* rhythm_neighbourhood_from (optional, absent: 0): 0, or 1 .. D - 1
   * with a neighbourhood above 1 */
  const char *from = avf_safetensors_metadata (st, "rhythm_neighbourhood_from");
  int64_t f = 0;
  if (from != NULL && (strlen (from) > 64 || !parse_integer (from, &f)))
    return avf_error_set (err, AVF_ERR_FORMAT, -1,
        "\"rhythm_neighbourhood_from\" in __metadata__ is \"%.64s\", "
        "expected an integer from 0 to %d", from, r->D - 1);
  if (f != 0 && (f < 1 || f >= r->D || k == 1))
    return avf_error_set (err, AVF_ERR_FORMAT, -1,
        "\"rhythm_neighbourhood_from\" in __metadata__ is %s, expected 0, "
        "or 1 to %d (the rhythm features D %d of tensor "
        "\"rhythm_embed.weight\") with a \"rhythm_neighbourhood\" above 1 "
        "(it is %lld)", from, r->D - 1, r->D, (long long) k);
  r->neighbourhood_from = (int) f;
  return AVF_OK;
}

/* L = 1 + the highest index in "layers.<i>." names. */
static AvfStatus
count_layers (int *L, const AvfSafetensors * st, AvfError * err)
{
  long max_layer = -1;
  for (size_t i = 0; i < avf_safetensors_count (st); i++) {
    const char *name = avf_safetensors_tensor (st, i)->name;
    if (strncmp (name, "layers.", 7) != 0)
      continue;
    const char *p = name + 7;
    long idx = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 6) {
      idx = idx * 10 + (*p - '0');
      p++;
      digits++;
    }
    if (digits == 0 || *p != '.')
      continue;                 /* reported later as an unexpected tensor */
    if (idx >= AVF_LAYERS_MAX)
      return avf_error_set (err, AVF_ERR_SHAPE, -1,
          "tensor \"%s\" names layer %ld; at most %d layers are supported",
          name, idx, AVF_LAYERS_MAX);
    if (idx > max_layer)
      max_layer = idx;
  }
  *L = (int) (max_layer + 1);
  return AVF_OK;
}

/* The optional metadata: the audio front end's sizes (n_mels and
 * patch_size must agree with the shapes already read into c) and
 * visible_threshold. */
static AvfStatus
read_optional_metadata (AvfConfig * c, const AvfSafetensors * st,
    AvfError * err)
{
  const struct
  {
    const char *key;
    int *field;
    int expect;                 /* 0: any positive value */
    const char *what;
  } optional[] = {
    {"sample_rate", &c->sample_rate, 0, NULL},
    {"n_fft", &c->n_fft, 0, NULL},
    {"hop_length", &c->hop_length, 0, NULL},
    {"window_ms", &c->window_ms, 0, NULL},
    {"n_mels", NULL, c->M, "audio_proj.weight"},
    {"patch_size", NULL, c->P, "patch_embed.weight"},
  };
  for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++) {
    const char *v = avf_safetensors_metadata (st, optional[i].key);
    if (v == NULL)
      continue;
    long x = parse_positive (v, 10 * 1000 * 1000);
    if (x < 0)
      return avf_error_set (err, AVF_ERR_FORMAT, -1,
          "\"%s\" in __metadata__ is \"%s\", expected a positive integer",
          optional[i].key, v);
    if (optional[i].field)
      *optional[i].field = (int) x;
    else if (x != optional[i].expect)
      return avf_error_set (err, AVF_ERR_SHAPE, -1,
          "\"%s\" in __metadata__ is %ld but tensor \"%s\" implies %d",
          optional[i].key, x, optional[i].what, optional[i].expect);
  }
  if (c->n_fft && c->hop_length == 0)
    c->hop_length = c->n_fft / 4;

  const char *thr = avf_safetensors_metadata (st, "visible_threshold");
  if (thr != NULL) {
    double x;
    if (!parse_threshold (thr, &x))
      return avf_error_set (err, AVF_ERR_FORMAT, -1,
          "\"visible_threshold\" in __metadata__ is \"%s\", expected a "
          "finite number in (0, 1]", thr);
    c->visible_threshold = (float) x;
  }
  return AVF_OK;
}

/* Reads L, E, M, F, P, N, T_max off the shapes and H off the metadata (and,
 * for avfusion-v2, the rhythm sizes). */
static AvfStatus
infer_config (AvfConfig * c, AvfRhythmConfig * r, const AvfSafetensors * st,
    AvfError * err)
{
  AvfStatus status = AVF_OK;
  memset (c, 0, sizeof *c);
  memset (r, 0, sizeof *r);

  const char *format = avf_safetensors_metadata (st, "format");
  if (format == NULL)
    return avf_error_set (err, AVF_ERR_FORMAT, -1,
        "weights file has no \"format\" in __metadata__; "
        "expected \"avfusion-v1\" or \"avfusion-v2\"");
  if (strcmp (format, "avfusion-v1") != 0
      && strcmp (format, "avfusion-v2") != 0)
    return avf_error_set (err, AVF_ERR_FORMAT, -1,
        "weights file is of format \"%s\", expected \"avfusion-v1\" or "
        "\"avfusion-v2\"", format);
  const int v2 = strcmp (format, "avfusion-v2") == 0;
  const char *heads = avf_safetensors_metadata (st, "num_heads");
  if (heads == NULL)
    return avf_error_set (err, AVF_ERR_FORMAT, -1,
        "weights file has no \"num_heads\" in __metadata__");
  c->H = (int) parse_positive (heads, AVF_DIM_MAX);
  if (c->H < 0)
    return avf_error_set (err, AVF_ERR_FORMAT, -1,
        "\"num_heads\" in __metadata__ is \"%s\", expected a positive "
        "integer", heads);

  const AvfTensorInfo *t;
  if (!(t = find_2d (st, "audio_proj.weight", 2, format, err, &status)))
    return status;
  c->E = (int) t->shape[0];
  c->M = (int) t->shape[1];
  if (!(t = find_2d (st, "audio_pos", 2, format, err, &status)))
    return status;
  c->T_max = (int) t->shape[0];
  if (!(t = find_2d (st, "patch_embed.weight", 4, format, err, &status)))
    return status;
  c->P = (int) t->shape[2];
  if (!(t = find_2d (st, "video_pos", 2, format, err, &status)))
    return status;
  c->N = (int) t->shape[0];
  if (!(t = find_2d (st, "layers.0.audio_ffn.0.weight", 2, format, err,
              &status)))
    return status;
  c->F = (int) t->shape[0];

  if ((status = count_layers (&c->L, st, err)) != AVF_OK)
    return status;
  if ((status = read_optional_metadata (c, st, err)) != AVF_OK)
    return status;
  if ((status = avf_config_check (c, err)) != AVF_OK)
    return status;
  if (v2 && (status = infer_rhythm (r, c, st, err)) != AVF_OK)
    return status;
  return avf_rhythm_config_check (r, c, err);
}

/* Checks that the file holds exactly the tensors of the model in `cfg`,
 * each F32 with the expected shape.  Runs before any storage is allocated,
 * so a small file can never make the loader reserve a large model. */
static AvfStatus
check_tensor_set (const AvfSafetensors * st, const AvfConfig * cfg,
    const AvfRhythmConfig * rhythm, AvfError * err)
{
  const size_t n = count_all (cfg, rhythm);
  TensorSpec *specs = calloc (n, sizeof *specs);
  AvfStatus status = AVF_OK;
  if (specs == NULL)
    return avf_error_set (err, AVF_ERR_NOMEM, -1,
        "cannot allocate the tensor table");
  SpecList l = { specs, 0, NULL };
  enumerate_specs (&l, cfg, rhythm);

  for (size_t i = 0; i < n && status == AVF_OK; i++) {
    const TensorSpec *s = &specs[i];
    const AvfTensorInfo *t = avf_safetensors_find (st, s->name);
    char expected[128], found[128];
    format_shape (expected, sizeof expected, s->ndim, s->shape);
    if (t == NULL) {
      status = avf_error_set (err, AVF_ERR_SHAPE, -1,
          "weights file has no tensor \"%s\" (expected shape %s)", s->name,
          expected);
      break;
    }
    if (t->dtype != AVF_DTYPE_F32) {
      status = avf_error_set (err, AVF_ERR_SHAPE, -1,
          "tensor \"%s\" is %s, expected F32", s->name,
          avf_dtype_name (t->dtype));
      break;
    }
    int same = t->ndim == s->ndim;
    for (int d = 0; same && d < s->ndim; d++)
      same = t->shape[d] == s->shape[d];
    if (!same) {
      format_shape (found, sizeof found, t->ndim, t->shape);
      status = avf_error_set (err, AVF_ERR_SHAPE, -1,
          "tensor \"%s\" has shape %s, expected %s", s->name, found,
          expected);
    }
  }
  /* anything the model does not name is refused, not ignored */
  for (size_t i = 0; i < avf_safetensors_count (st) && status == AVF_OK; i++) {
    const char *name = avf_safetensors_tensor (st, i)->name;
    int known = 0;
    for (size_t k = 0; k < n && !known; k++)
      known = strcmp (specs[k].name, name) == 0;
    if (!known)
      status = avf_error_set (err, AVF_ERR_SHAPE, -1,
          "weights file has an unexpected tensor \"%s\" (a %d-layer "
          "%s model has %zu tensors)", name, cfg->L,
          avf_rhythm_config_format (rhythm), n);
  }
  free (specs);
  return status;
}

AvfStatus
avf_weights_from_safetensors (AvfWeights ** out,
    const AvfSafetensors * st, AvfError * err)
{
  AvfConfig cfg;
  AvfRhythmConfig rhythm;
  AvfStatus status = infer_config (&cfg, &rhythm, st, err);
  if (status == AVF_OK)
    status = check_tensor_set (st, &cfg, &rhythm, err);
  if (status != AVF_OK)
    return status;

  AvfWeights *w;
  TensorSpec *specs;
  size_t n;
  /* the tensors were checked against the file: no size limit beyond it */
  status = weights_alloc (&w, &specs, &n, &cfg, &rhythm, UINT64_MAX, err);
  if (status != AVF_OK)
    return status;

  for (size_t i = 0; i < n && status == AVF_OK; i++) {
    const TensorSpec *s = &specs[i];
    const AvfTensorInfo *t = avf_safetensors_find (st, s->name);
    float *dst = (float *) *s->slot;
    memcpy (dst, t->data, (size_t) s->numel * sizeof (float));
    for (uint64_t k = 0; k < s->numel; k++) {
      if (!isfinite (dst[k])) {
        status = avf_error_set (err, AVF_ERR_FORMAT,
            -1, "tensor \"%s\" holds a non-finite value (%g) at element "
            "%llu", s->name, (double) dst[k], (unsigned long long) k);
        break;
      }
    }
  }
  free (specs);
  if (status != AVF_OK) {
    avf_weights_free (w);
    return status;
  }
  *out = w;
  return AVF_OK;
}

AvfStatus
avf_weights_load (AvfWeights ** out, const char *path, AvfError * err)
{
  AvfSafetensors *st;
  AvfStatus status = avf_safetensors_open (&st, path, err);
  if (status != AVF_OK)
    return status;
  status = avf_weights_from_safetensors (out, st, err);
  avf_safetensors_free (st);
  return status;
}
