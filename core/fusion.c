/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "fusion.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ffn.h"
#include "layer_norm.h"

struct AvfFusion
{
  const AvfWeights *w;
  int T;
  AvfMha *mha;                  /* one workspace, sized for the largest module */
  float *a, *a1, *tmp_a;        /* (T, E) */
  float *v, *v1, *tmp_v;        /* (N, E) */
  float *ffn_work;              /* (max(T, N), F) */
  float *maps;                  /* per layer and module, (H, Tq, Tk) each */
  size_t *map_off;              /* (L * AVF_N_MODULES) */
  uint8_t *skipped;             /* (L * AVF_N_MODULES) */
  AvfAttnMode last_mode;
};

void
avf_fusion_free (AvfFusion * f)
{
  if (f == NULL)
    return;
  avf_mha_free (f->mha);
  free (f->a);
  free (f->a1);
  free (f->tmp_a);
  free (f->v);
  free (f->v1);
  free (f->tmp_v);
  free (f->ffn_work);
  free (f->maps);
  free (f->map_off);
  free (f->skipped);
  free (f);
}

AvfStatus
avf_fusion_new (AvfFusion ** out, const AvfWeights * w, int T, AvfError * err)
{
  const AvfConfig *c = &w->cfg;
  if (T < 1 || T > c->T_max)
    return avf_error_set (err, AVF_ERR_SHAPE, -1,
        "the audio window has %d slots, but the weights have positions for "
        "1..%d (audio_pos); use a shorter window", T, c->T_max);
  AvfFusion *f = calloc (1, sizeof *f);
  if (f == NULL)
    return avf_error_set (err, AVF_ERR_NOMEM, -1, "out of memory");
  f->w = w;
  f->T = T;
  const size_t E = (size_t) c->E, N = (size_t) c->N, nm =
      (size_t) c->L * AVF_N_MODULES;
  const int big = T > c->N ? T : c->N;
  AvfStatus st = avf_mha_new (&f->mha, c->E, c->H, big, big, err);
  if (st != AVF_OK) {
    avf_fusion_free (f);
    return st;
  }
  f->a = malloc ((size_t) T * E * sizeof (float));
  f->a1 = malloc ((size_t) T * E * sizeof (float));
  f->tmp_a = malloc ((size_t) T * E * sizeof (float));
  f->v = malloc (N * E * sizeof (float));
  f->v1 = malloc (N * E * sizeof (float));
  f->tmp_v = malloc (N * E * sizeof (float));
  f->ffn_work = malloc ((size_t) big * c->F * sizeof (float));
  f->map_off = calloc (nm, sizeof (size_t));
  f->skipped = calloc (nm, 1);
  size_t total = 0;
  for (size_t i = 0; i < nm; i++) {
    int tq, tk;
    avf_module_dims ((AvfModule) (i % AVF_N_MODULES), f->T, f->w->cfg.N, &tq,
        &tk);
    if (f->map_off)
      f->map_off[i] = total;
    total += (size_t) c->H * tq * tk;
  }
  f->maps = malloc (total * sizeof (float));
  if (!f->a || !f->a1 || !f->tmp_a || !f->v || !f->v1 || !f->tmp_v
      || !f->ffn_work || !f->map_off || !f->skipped || !f->maps) {
    avf_fusion_free (f);
    return avf_error_set (err, AVF_ERR_NOMEM, -1,
        "out of memory for the fusion workspaces");
  }
  *out = f;
  return AVF_OK;
}

int
avf_fusion_slots (const AvfFusion * f)
{
  return f->T;
}

static float *
map_ptr (AvfFusion * f, int layer, AvfModule m, AvfAttnMode mode)
{
  if (mode == AVF_ATTN_NONE)
    return NULL;
  return f->maps + f->map_off[(size_t) layer * AVF_N_MODULES + m];
}

static void
mark_skipped (AvfFusion * f, int layer, AvfModule m, AvfAttnMode mode)
{
  f->skipped[(size_t) layer * AVF_N_MODULES + m] = 1;
  float *p = map_ptr (f, layer, m, mode);
  if (p == NULL)
    return;
  int tq, tk;
  avf_module_dims (m, f->T, f->w->cfg.N, &tq, &tk);
  size_t n = (size_t) tq * tk * (mode == AVF_ATTN_PER_HEAD ? f->w->cfg.H : 1);
  for (size_t i = 0; i < n; i++)
    p[i] = NAN;
}

int
avf_fusion_forward (AvfFusion * f, float *fused, const float *mel,
    const uint8_t * mask, const float *video, AvfAttnMode mode)
{
  const AvfWeights *w = f->w;
  const int E = w->cfg.E, N = w->cfg.N, F = w->cfg.F, M = w->cfg.M;
  const int T = f->T;
  int present = 0;
  for (int j = 0; j < T; j++)
    present += !(mask && mask[j]);
  const int have_audio = present > 0;

  f->last_mode = mode;
  memset (f->skipped, 0, (size_t) w->cfg.L * AVF_N_MODULES);

  /* a = mel @ audio_proj.weight^T + audio_proj.bias + audio_pos[:T] */
  if (have_audio) {
    avf_linear (f->a, mel, M, w->audio_proj_weight, w->audio_proj_bias, T, M,
        E);
    for (size_t i = 0; i < (size_t) T * E; i++)
      f->a[i] += w->audio_pos[i];
  }
  memcpy (f->v, video, (size_t) N * E * sizeof (float));

  for (int l = 0; l < w->cfg.L; l++) {
    const AvfLayerWeights *lw = &w->layers[l];
    if (have_audio) {
      avf_mha_forward (f->mha, f->tmp_a,
          map_ptr (f, l, AVF_MODULE_AUDIO_SELF, mode), mode, f->a, T, f->a,
          T, mask, &lw->mha[AVF_MODULE_AUDIO_SELF]);
      avf_add_layer_norm (f->a1, f->a, f->tmp_a, &lw->audio_norm[0], T, E);
    } else {
      mark_skipped (f, l, AVF_MODULE_AUDIO_SELF, mode);
    }

    avf_mha_forward (f->mha, f->tmp_v,
        map_ptr (f, l, AVF_MODULE_VIDEO_SELF, mode), mode, f->v, N, f->v, N,
        NULL, &lw->mha[AVF_MODULE_VIDEO_SELF]);
    avf_add_layer_norm (f->v1, f->v, f->tmp_v, &lw->video_norm[0], N, E);

    if (have_audio) {
      /* a2 goes to f->a: the layer input is no longer needed */
      avf_mha_forward (f->mha, f->tmp_a,
          map_ptr (f, l, AVF_MODULE_AUDIO_CROSS, mode), mode, f->a1, T,
          f->v1, N, NULL, &lw->mha[AVF_MODULE_AUDIO_CROSS]);
      avf_add_layer_norm (f->a, f->a1, f->tmp_a, &lw->audio_norm[1], T, E);

      avf_mha_forward (f->mha, f->tmp_v,
          map_ptr (f, l, AVF_MODULE_VIDEO_CROSS, mode), mode, f->v1, N,
          f->a1, T, mask, &lw->mha[AVF_MODULE_VIDEO_CROSS]);
      avf_add_layer_norm (f->v, f->v1, f->tmp_v, &lw->video_norm[1], N, E);

      avf_ffn (f->tmp_a, f->a, &lw->audio_ffn, f->ffn_work, T, E, F);
      avf_add_layer_norm (f->a, f->a, f->tmp_a, &lw->audio_norm[2], T, E);
    } else {
      mark_skipped (f, l, AVF_MODULE_AUDIO_CROSS, mode);
      mark_skipped (f, l, AVF_MODULE_VIDEO_CROSS, mode);
      avf_add_layer_norm (f->v, f->v1, NULL, &lw->video_norm[1], N, E);
    }
    avf_ffn (f->tmp_v, f->v, &lw->video_ffn, f->ffn_work, N, E, F);
    avf_add_layer_norm (f->v, f->v, f->tmp_v, &lw->video_norm[2], N, E);
  }

  /* fused = concat(mean of a over unmasked rows, mean of v over rows) */
  for (int e = 0; e < 2 * E; e++)
    fused[e] = 0.0f;
  if (have_audio) {
    for (int e = 0; e < E; e++) {
      double s = 0.0;
      for (int j = 0; j < T; j++)
        if (!(mask && mask[j]))
          s += f->a[(size_t) j * E + e];
      fused[e] = (float) (s / present);
    }
  }
  for (int e = 0; e < E; e++) {
    double s = 0.0;
    for (int n = 0; n < N; n++)
      s += f->v[(size_t) n * E + e];
    fused[E + e] = (float) (s / N);
  }
  return present;
}

const float *
avf_fusion_map (const AvfFusion * f, int layer, AvfModule m, int *heads,
    int *tq, int *tk)
{
  int q, k;
  avf_module_dims (m, f->T, f->w->cfg.N, &q, &k);
  if (tq)
    *tq = q;
  if (tk)
    *tk = k;
  if (heads)
    *heads = f->last_mode == AVF_ATTN_PER_HEAD ? f->w->cfg.H : 1;
  if (f->last_mode == AVF_ATTN_NONE || layer < 0 || layer >= f->w->cfg.L
      || (unsigned) m >= AVF_N_MODULES)
    return NULL;
  return f->maps + f->map_off[(size_t) layer * AVF_N_MODULES + m];
}

int
avf_fusion_map_skipped (const AvfFusion * f, int layer, AvfModule m)
{
  if (layer < 0 || layer >= f->w->cfg.L || (unsigned) m >= AVF_N_MODULES)
    return 1;
  return f->skipped[(size_t) layer * AVF_N_MODULES + m];
}
