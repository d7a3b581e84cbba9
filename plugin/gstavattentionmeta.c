/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstavattentionmeta.h"

#include <math.h>
#include <string.h>

#include "heatmap.h"
#include "weights.h"

/* GstAvAttentionModule is core's AvfModule (core/weights.h) in the
 * installed API */
G_STATIC_ASSERT ((gint) GST_AV_ATTENTION_MODULE_AUDIO_SELF ==
    (gint) AVF_MODULE_AUDIO_SELF);
G_STATIC_ASSERT ((gint) GST_AV_ATTENTION_MODULE_VIDEO_SELF ==
    (gint) AVF_MODULE_VIDEO_SELF);
G_STATIC_ASSERT ((gint) GST_AV_ATTENTION_MODULE_AUDIO_CROSS ==
    (gint) AVF_MODULE_AUDIO_CROSS);
G_STATIC_ASSERT ((gint) GST_AV_ATTENTION_MODULE_VIDEO_CROSS ==
    (gint) AVF_MODULE_VIDEO_CROSS);
G_STATIC_ASSERT ((gint) GST_AV_ATTENTION_N_MODULES == (gint) AVF_N_MODULES);

const gchar *
gst_av_attention_module_name (GstAvAttentionModule module)
{
  return (guint) module < GST_AV_ATTENTION_N_MODULES ?
      avf_module_name ((AvfModule) module) : NULL;
}

static void
module_dims (guint T, guint N, GstAvAttentionModule m, guint * tq, guint * tk)
{
  gint q, k;

  /* T, N <= 2^24 (gst_av_attention_meta_data_size) */
  avf_module_dims ((AvfModule) m, (gint) T, (gint) N, &q, &k);
  *tq = (guint) q;
  *tk = (guint) k;
}

static gsize
mask_bytes (guint T)
{
  return ((gsize) T + 15) & ~(gsize) 15;
}

static gsize
maps_per_layer (guint heads, guint T, guint N)
{
  /* T*T + N*N + T*N + N*T */
  return (gsize) heads *((gsize) T * T + (gsize) N * N + 2 * (gsize) T * N);
}

gsize
gst_av_attention_meta_data_size (guint n_layers, guint n_heads, guint T,
    guint N)
{
  /* saturating: a size that does not fit is larger than any block */
  guint64 per_layer;

  if (T > (1u << 24) || N > (1u << 24))
    return G_MAXSIZE;
  per_layer = (guint64) T * T + (guint64) N * N + 2 * (guint64) T * N;
  if (per_layer > G_MAXSIZE / sizeof (gfloat) / MAX (n_heads, 1)
      / MAX (n_layers, 1) / 2)
    return G_MAXSIZE;
  return mask_bytes (T) + (gsize) n_layers * maps_per_layer (n_heads, T, N)
      * sizeof (gfloat);
}

static gsize
map_offset (const GstAvAttentionMeta * meta, guint layer,
    GstAvAttentionModule module)
{
  const guint T = meta->n_audio_slots, N = meta->n_patches;
  gsize off = mask_bytes (T) + (gsize) layer * maps_per_layer (meta->n_heads,
      T, N) * sizeof (gfloat);
  for (guint m = 0; m < (guint) module; m++) {
    guint tq, tk;
    module_dims (T, N, (GstAvAttentionModule) m, &tq, &tk);
    off += (gsize) meta->n_heads * tq * tk * sizeof (gfloat);
  }
  return off;
}

static gboolean
gst_av_attention_meta_init (GstMeta * meta, gpointer params,
    GstBuffer * buffer)
{
  GstAvAttentionMeta *m = (GstAvAttentionMeta *) meta;
  m->n_layers = m->n_heads = m->model_heads = 0;
  m->n_audio_slots = m->n_patches = m->grid_columns = m->grid_rows = 0;
  m->window_start = m->window_end = GST_CLOCK_TIME_NONE;
  m->n_audio_present = 0;
  m->audio_missing = m->audio_ended = m->reused = FALSE;
  m->visible_threshold = 0.0f;
  m->data = NULL;
  memset (&m->map, 0, sizeof m->map);
  memset (m->skipped, 0, sizeof m->skipped);
  return TRUE;
}

static void
gst_av_attention_meta_free (GstMeta * meta, GstBuffer * buffer)
{
  GstAvAttentionMeta *m = (GstAvAttentionMeta *) meta;
  if (m->data) {
    gst_buffer_unmap (m->data, &m->map);
    gst_buffer_unref (m->data);
    m->data = NULL;
  }
}

static void
copy_fields (GstAvAttentionMeta * dst, const GstAvAttentionMeta * src)
{
  dst->n_audio_present = src->n_audio_present;
  dst->audio_missing = src->audio_missing;
  dst->audio_ended = src->audio_ended;
  dst->visible_threshold = src->visible_threshold;
  dst->window_start = src->window_start;
  dst->window_end = src->window_end;
  dst->reused = src->reused;
  memcpy (dst->skipped, src->skipped, sizeof dst->skipped);
}

static gboolean
gst_av_attention_meta_transform (GstBuffer * dest, GstMeta * meta,
    GstBuffer * buffer, GQuark type, gpointer data)
{
  GstAvAttentionMeta *src = (GstAvAttentionMeta *) meta, *dst;
  /* the weights describe the whole buffer: copy on any copy or on a
   * region that keeps the whole buffer */
  if (GST_META_TRANSFORM_IS_COPY (type)) {
    GstMetaTransformCopy *copy = data;
    if (copy->region && (copy->offset != 0
            || copy->size != gst_buffer_get_size (buffer)))
      return TRUE;
  } else {
    return FALSE;
  }
  dst = gst_buffer_add_av_attention_meta (dest, src->n_layers, src->n_heads,
      src->model_heads, src->n_audio_slots, src->grid_columns,
      src->grid_rows, gst_buffer_ref (src->data));
  if (dst == NULL)
    return FALSE;
  copy_fields (dst, src);
  return TRUE;
}

GType
gst_av_attention_meta_api_get_type (void)
{
  static GType type = 0;
  static const gchar *tags[] = { NULL };
  if (g_once_init_enter (&type)) {
    GType t = gst_meta_api_type_register ("GstAvAttentionMetaAPI", tags);
    g_once_init_leave (&type, t);
  }
  return type;
}

const GstMetaInfo *
gst_av_attention_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;
  if (g_once_init_enter ((GstMetaInfo **) & info)) {
    const GstMetaInfo *i =
        gst_meta_register (GST_AV_ATTENTION_META_API_TYPE,
        "GstAvAttentionMeta", sizeof (GstAvAttentionMeta),
        gst_av_attention_meta_init, gst_av_attention_meta_free,
        gst_av_attention_meta_transform);
    g_once_init_leave ((GstMetaInfo **) & info, (GstMetaInfo *) i);
  }
  return info;
}

GstAvAttentionMeta *
gst_buffer_add_av_attention_meta (GstBuffer * buffer, guint n_layers,
    guint n_heads, guint model_heads, guint n_audio_slots,
    guint grid_columns, guint grid_rows, GstBuffer * data)
{
  GstAvAttentionMeta *m;
  gsize need;

  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  g_return_val_if_fail (GST_IS_BUFFER (data), NULL);
  g_return_val_if_fail (n_layers > 0
      && n_layers <= GST_AV_ATTENTION_MAX_LAYERS, NULL);
  g_return_val_if_fail (n_heads > 0 && model_heads > 0, NULL);

  if (n_audio_slots == 0 || grid_columns == 0 || grid_rows == 0
      || (guint64) grid_columns * grid_rows > G_MAXINT) {
    g_critical ("attention maps need at least one audio slot and one patch "
        "(and at most %d patches): got %u slots and a %u x %u grid",
        G_MAXINT, n_audio_slots, grid_columns, grid_rows);
    gst_buffer_unref (data);
    return NULL;
  }
  need = gst_av_attention_meta_data_size (n_layers, n_heads, n_audio_slots,
      grid_columns * grid_rows);
  if (gst_buffer_get_size (data) < need) {
    g_critical ("attention data block of %" G_GSIZE_FORMAT " bytes is "
        "smaller than the %" G_GSIZE_FORMAT " bytes the maps need",
        gst_buffer_get_size (data), need);
    gst_buffer_unref (data);
    return NULL;
  }
  m = (GstAvAttentionMeta *) gst_buffer_add_meta (buffer,
      GST_AV_ATTENTION_META_INFO, NULL);
  m->n_layers = n_layers;
  m->n_heads = n_heads;
  m->model_heads = model_heads;
  m->n_audio_slots = n_audio_slots;
  m->n_patches = grid_columns * grid_rows;
  m->grid_columns = grid_columns;
  m->grid_rows = grid_rows;
  m->data = data;
  if (!gst_buffer_map (data, &m->map, gst_buffer_is_writable (data) ?
          GST_MAP_READWRITE : GST_MAP_READ)) {
    gst_buffer_unref (data);
    m->data = NULL;
    gst_buffer_remove_meta (buffer, (GstMeta *) m);
    return NULL;
  }
  return m;
}

const guint8 *
gst_av_attention_meta_get_audio_mask (GstAvAttentionMeta * meta)
{
  g_return_val_if_fail (meta != NULL && meta->data != NULL, NULL);
  return meta->map.data;
}

guint8 *
gst_av_attention_meta_get_audio_mask_writable (GstAvAttentionMeta * meta)
{
  g_return_val_if_fail (meta != NULL && meta->data != NULL, NULL);
  g_return_val_if_fail (meta->map.flags & GST_MAP_WRITE, NULL);
  return meta->map.data;
}

const gfloat *
gst_av_attention_meta_get_weights (GstAvAttentionMeta * meta, guint layer,
    GstAvAttentionModule module, guint * heads, guint * n_queries,
    guint * n_keys)
{
  guint tq, tk;
  g_return_val_if_fail (meta != NULL && meta->data != NULL, NULL);
  g_return_val_if_fail (layer < meta->n_layers, NULL);
  g_return_val_if_fail ((guint) module < GST_AV_ATTENTION_N_MODULES, NULL);
  module_dims (meta->n_audio_slots, meta->n_patches, module, &tq, &tk);
  if (heads)
    *heads = meta->n_heads;
  if (n_queries)
    *n_queries = tq;
  if (n_keys)
    *n_keys = tk;
  return (const gfloat *) (meta->map.data + map_offset (meta, layer, module));
}

gfloat *
gst_av_attention_meta_get_weights_writable (GstAvAttentionMeta * meta,
    guint layer, GstAvAttentionModule module)
{
  g_return_val_if_fail (meta != NULL && meta->data != NULL, NULL);
  g_return_val_if_fail (meta->map.flags & GST_MAP_WRITE, NULL);
  g_return_val_if_fail (layer < meta->n_layers, NULL);
  g_return_val_if_fail ((guint) module < GST_AV_ATTENTION_N_MODULES, NULL);
  return (gfloat *) (meta->map.data + map_offset (meta, layer, module));
}

gboolean
gst_av_attention_meta_is_skipped (GstAvAttentionMeta * meta, guint layer,
    GstAvAttentionModule module)
{
  g_return_val_if_fail (meta != NULL, TRUE);
  g_return_val_if_fail (layer < meta->n_layers, TRUE);
  g_return_val_if_fail ((guint) module < GST_AV_ATTENTION_N_MODULES, TRUE);
  return meta->skipped[layer * GST_AV_ATTENTION_N_MODULES + module] != 0;
}

void
gst_av_attention_meta_set_skipped (GstAvAttentionMeta * meta, guint layer,
    GstAvAttentionModule module, gboolean skipped)
{
  g_return_if_fail (meta != NULL);
  g_return_if_fail (layer < meta->n_layers);
  g_return_if_fail ((guint) module < GST_AV_ATTENTION_N_MODULES);
  meta->skipped[layer * GST_AV_ATTENTION_N_MODULES + module] = skipped;
}

gboolean
gst_av_attention_meta_get_strongest_patch (GstAvAttentionMeta * meta,
    guint layer, guint * column, guint * row, gfloat * weight)
{
  guint heads, tq, tk;
  const gfloat *w;
  gdouble best_w = 0.0;
  gint best = 0;

  g_return_val_if_fail (meta != NULL, FALSE);
  if (meta->audio_missing || layer >= meta->n_layers
      || gst_av_attention_meta_is_skipped (meta, layer,
          GST_AV_ATTENTION_MODULE_AUDIO_CROSS))
    return FALSE;
  w = gst_av_attention_meta_get_weights (meta, layer,
      GST_AV_ATTENTION_MODULE_AUDIO_CROSS, &heads, &tq, &tk);
  if (w == NULL || avf_heatmap_strongest (&best, &best_w, w,
          gst_av_attention_meta_get_audio_mask (meta), (gint) heads, -1,
          (gint) tq, (gint) tk) == 0)
    return FALSE;
  if (column)
    *column = (guint) best % meta->grid_columns;
  if (row)
    *row = (guint) best / meta->grid_columns;
  if (weight)
    *weight = (gfloat) best_w;
  return TRUE;
}

/**
 * gst_av_attention_meta_get_sound_visible:
 * @meta: a #GstAvAttentionMeta
 * @weight: (out) (optional): the weight of the strongest patch of the last
 *   layer, as gst_av_attention_meta_get_strongest_patch() reports it (its
 *   audio-cross weight summed over heads and over the audio slots that hold
 *   audio, divided by heads x those slots); 0 when the window has no audio
 * @threshold: (out) (optional): @meta's visible_threshold
 *
 * Does a visible object sound in this frame's window?  The model's answer:
 * the window holds audio and the strongest patch of the last layer draws at
 * least the visible_threshold of the weights that made the meta (the
 * "visible_threshold" metadata of a trained model's file).  A sound whose
 * source is not in the picture (off screen, background noise) spreads its
 * attention and stays below it.
 *
 * With a threshold of 0 (the weights do not name one, as the seeded
 * built-in weights: unknown) the answer is TRUE whenever the window holds
 * audio.
 *
 * Returns: TRUE when the window holds audio and the strongest patch's
 *   weight is at least the threshold; FALSE when the window has no audio
 *   (or its audio-cross map of the last layer was skipped) or the weight is
 *   below the threshold.
 */
gboolean
gst_av_attention_meta_get_sound_visible (GstAvAttentionMeta * meta,
    gfloat * weight, gfloat * threshold)
{
  gfloat w = 0.0f;
  gboolean audio;

  g_return_val_if_fail (meta != NULL, FALSE);
  if (threshold)
    *threshold = meta->visible_threshold;
  audio = meta->n_layers > 0 && gst_av_attention_meta_get_strongest_patch
      (meta, meta->n_layers - 1, NULL, NULL, &w);
  if (!audio)
    w = 0.0f;
  if (weight)
    *weight = w;
  return audio && w >= meta->visible_threshold;
}
