/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/**
 * SECTION:gstavattentionmeta
 * @title: GstAvAttentionMeta
 * @short_description: the attention maps on avattention's output buffers
 *
 * Every buffer avattention pushes carries its attention weights as a
 * #GstAvAttentionMeta (unless its attention-weights property is none).
 * Applications link against gstavattention-1.0 (pkg-config) and read, for
 * each layer and module, the weights, their shape, the heads, the audio
 * mask, the patch grid and the time span of the audio window; where the
 * sound is (gst_av_attention_meta_get_strongest_patch()) and whether a
 * visible object sounds (gst_av_attention_meta_get_sound_visible()).
 *
 * Other languages read it through GObject introspection
 * (GstAvAttention-1.0.typelib; in Python gi.repository.GstAvAttention):
 * the functions marked (skip) there have a GBytes or GstBuffer variant.
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
#include "gstavmodulecheck.h"

/**
 * gst_av_attention_module_name:
 * @module: a #GstAvAttentionModule
 *
 * The name of an attention module, as avtensorsink writes it.
 *
 * Returns: (nullable): the module's name as in the keys of avtensorsink's
 *   .npz ("audio_self", "video_self", "audio_cross", "video_cross"), NULL
 *   for a value that is not a module
 */
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

/**
 * gst_av_attention_meta_data_size:
 * @n_layers: layers (L)
 * @n_heads: heads stored per map
 * @n_audio_slots: audio slots (T)
 * @n_patches: video patches (N)
 *
 * The size of the data block of a #GstAvAttentionMeta of these sizes,
 * for a pool of such blocks.
 *
 * Returns: the bytes of the data block that gst_buffer_add_av_attention_meta()
 *   needs for these sizes (the audio mask, T bytes rounded up to 16, then
 *   every map), G_MAXSIZE when that does not fit in memory
 */
gsize
gst_av_attention_meta_data_size (guint n_layers, guint n_heads,
    guint n_audio_slots, guint n_patches)
{
  const guint T = n_audio_slots, N = n_patches;
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

/**
 * gst_av_attention_meta_api_get_type:
 *
 * The API type of the meta; GST_AV_ATTENTION_META_API_TYPE calls it.
 *
 * Returns: the API type of #GstAvAttentionMeta, for gst_buffer_get_meta()
 *   and allocation queries
 */
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

/**
 * gst_av_attention_meta_get_info:
 *
 * The registration of the meta's implementation;
 * GST_AV_ATTENTION_META_INFO calls it.
 *
 * Returns: (transfer none): the #GstMetaInfo of #GstAvAttentionMeta
 */
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

/**
 * gst_buffer_get_av_attention_meta:
 * @buffer: a #GstBuffer
 *
 * Finds the attention meta of @buffer (the buffers that avattention
 * pushes carry one).  The meta lives as long as @buffer: keep the buffer
 * (or its #GstSample) while reading it.
 *
 * Returns: (transfer none) (nullable): the #GstAvAttentionMeta of @buffer,
 *   NULL when it has none
 */
GstAvAttentionMeta *
gst_buffer_get_av_attention_meta (GstBuffer * buffer)
{
  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  return (GstAvAttentionMeta *) gst_buffer_get_meta (buffer,
      GST_AV_ATTENTION_META_API_TYPE);
}

/**
 * gst_buffer_add_av_attention_meta:
 * @buffer: a writable #GstBuffer
 * @n_layers: layers of the model, 1 to %GST_AV_ATTENTION_MAX_LAYERS
 * @n_heads: heads stored per map: 1 for the head mean, @model_heads for
 *   per-head maps
 * @model_heads: heads of the model
 * @n_audio_slots: audio slots of the window (T), at least 1
 * @grid_columns: patch grid columns, at least 1
 * @grid_rows: patch grid rows, at least 1
 * @data: (transfer full) (nullable): the data block, a buffer of at least
 *   gst_av_attention_meta_data_size() bytes (typically from a pool), or
 *   NULL for a new block with every map 0 and every audio slot present.
 *   It is mapped for the meta's life, writable when @data is.
 *
 * Adds an attention meta to @buffer.  The maps are written through
 * gst_av_attention_meta_get_weights_writable() or
 * gst_av_attention_meta_set_weights().
 *
 * Returns: (transfer none) (nullable): the meta, NULL (after a critical)
 *   when the sizes are not valid or @data is too small
 */
GstAvAttentionMeta *
gst_buffer_add_av_attention_meta (GstBuffer * buffer, guint n_layers,
    guint n_heads, guint model_heads, guint n_audio_slots,
    guint grid_columns, guint grid_rows, GstBuffer * data)
{
  GstAvAttentionMeta *m;
  gsize need;

  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  g_return_val_if_fail (data == NULL || GST_IS_BUFFER (data), NULL);
  g_return_val_if_fail (n_layers > 0
      && n_layers <= GST_AV_ATTENTION_MAX_LAYERS, NULL);
  g_return_val_if_fail (n_heads > 0 && model_heads > 0, NULL);

  if (n_audio_slots == 0 || grid_columns == 0 || grid_rows == 0
      || (guint64) grid_columns * grid_rows > G_MAXINT) {
    g_critical ("attention maps need at least one audio slot and one patch "
        "(and at most %d patches): got %u slots and a %u x %u grid",
        G_MAXINT, n_audio_slots, grid_columns, grid_rows);
    if (data)
      gst_buffer_unref (data);
    return NULL;
  }
  need = gst_av_attention_meta_data_size (n_layers, n_heads, n_audio_slots,
      grid_columns * grid_rows);
  if (data == NULL) {
    GstMapInfo zero;
    if (need == G_MAXSIZE) {
      g_critical ("attention maps of %u layers, %u heads, %u slots and "
          "%u patches do not fit in memory", n_layers, n_heads,
          n_audio_slots, grid_columns * grid_rows);
      return NULL;
    }
    data = gst_buffer_new_allocate (NULL, need, NULL);
    if (data == NULL)
      return NULL;
    if (gst_buffer_map (data, &zero, GST_MAP_WRITE)) {
      memset (zero.data, 0, zero.size);
      gst_buffer_unmap (data, &zero);
    }
  }
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

/**
 * gst_av_attention_meta_get_audio_mask: (skip)
 * @meta: a #GstAvAttentionMeta
 *
 * The audio mask, valid while @meta lives.  Bindings use
 * gst_av_attention_meta_get_audio_mask_bytes().
 *
 * Returns: (transfer none): @meta's n_audio_slots bytes, 1 = slot without
 *   audio
 */
const guint8 *
gst_av_attention_meta_get_audio_mask (GstAvAttentionMeta * meta)
{
  g_return_val_if_fail (meta != NULL && meta->data != NULL, NULL);
  return meta->map.data;
}

/**
 * gst_av_attention_meta_get_audio_mask_writable: (skip)
 * @meta: a #GstAvAttentionMeta whose data block is writable
 *
 * The audio mask to fill in, valid while @meta lives.  Bindings use
 * gst_av_attention_meta_set_audio_mask().
 *
 * Returns: (transfer none) (nullable): @meta's n_audio_slots bytes, 1 =
 *   slot without audio; NULL (after a critical) when the block is read-only
 */
guint8 *
gst_av_attention_meta_get_audio_mask_writable (GstAvAttentionMeta * meta)
{
  g_return_val_if_fail (meta != NULL && meta->data != NULL, NULL);
  g_return_val_if_fail (meta->map.flags & GST_MAP_WRITE, NULL);
  return meta->map.data;
}

/**
 * gst_av_attention_meta_get_weights: (skip)
 * @meta: a #GstAvAttentionMeta
 * @layer: a layer, below @meta's n_layers
 * @module: a #GstAvAttentionModule
 * @heads: (out) (optional): heads of the map (@meta's n_heads)
 * @n_queries: (out) (optional): queries (rows of one head)
 * @n_keys: (out) (optional): keys (columns)
 *
 * The map of one layer and module, float32 row-major (heads, queries,
 * keys), valid while @meta lives.  Bindings use
 * gst_av_attention_meta_get_weights_bytes().
 *
 * Returns: (transfer none): the map
 */
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

/**
 * gst_av_attention_meta_get_weights_writable: (skip)
 * @meta: a #GstAvAttentionMeta whose data block is writable
 * @layer: a layer, below @meta's n_layers
 * @module: a #GstAvAttentionModule
 *
 * The map of one layer and module to fill in (see
 * gst_av_attention_meta_get_weights() for its shape).  Bindings use
 * gst_av_attention_meta_set_weights().
 *
 * Returns: (transfer none) (nullable): the map; NULL (after a critical)
 *   when the block is read-only
 */
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

/* A view of @size bytes at @offset of @meta's data block that keeps the
 * block mapped and alive (a pool does not reuse it meanwhile). */
typedef struct
{
  GstBuffer *data;
  GstMapInfo map;
} DataView;

static void
data_view_free (gpointer p)
{
  DataView *v = p;
  gst_buffer_unmap (v->data, &v->map);
  gst_buffer_unref (v->data);
  g_free (v);
}

static GBytes *
data_bytes (GstAvAttentionMeta * meta, gsize offset, gsize size)
{
  DataView *v = g_new0 (DataView, 1);
  if (!gst_buffer_map (meta->data, &v->map, GST_MAP_READ)) {
    g_free (v);
    return NULL;
  }
  if (offset + size > v->map.size) {
    g_critical ("attention data block of %" G_GSIZE_FORMAT " bytes is "
        "smaller than the meta's maps", v->map.size);
    gst_buffer_unmap (meta->data, &v->map);
    g_free (v);
    return NULL;
  }
  v->data = gst_buffer_ref (meta->data);
  return g_bytes_new_with_free_func (v->map.data + offset, size,
      data_view_free, v);
}

static gsize
map_bytes (GstAvAttentionMeta * meta, GstAvAttentionModule module,
    guint * heads, guint * n_queries, guint * n_keys)
{
  guint tq, tk;
  module_dims (meta->n_audio_slots, meta->n_patches, module, &tq, &tk);
  if (heads)
    *heads = meta->n_heads;
  if (n_queries)
    *n_queries = tq;
  if (n_keys)
    *n_keys = tk;
  return (gsize) meta->n_heads * tq * tk * sizeof (gfloat);
}

/**
 * gst_av_attention_meta_get_audio_mask_bytes:
 * @meta: a #GstAvAttentionMeta
 *
 * The audio mask as bytes that share @meta's memory (no copy) and keep it
 * alive after the buffer is gone.  In Python:
 * `numpy.frombuffer(mask.get_data(), numpy.uint8).astype(bool)`.
 *
 * Returns: (transfer full) (nullable): @meta's n_audio_slots bytes, 1 =
 *   slot without audio; NULL when the block cannot be mapped
 */
GBytes *
gst_av_attention_meta_get_audio_mask_bytes (GstAvAttentionMeta * meta)
{
  g_return_val_if_fail (meta != NULL && meta->data != NULL, NULL);
  return data_bytes (meta, 0, meta->n_audio_slots);
}

/**
 * gst_av_attention_meta_get_weights_bytes:
 * @meta: a #GstAvAttentionMeta
 * @layer: a layer, below @meta's n_layers
 * @module: a #GstAvAttentionModule
 * @heads: (out) (optional): heads of the map (@meta's n_heads)
 * @n_queries: (out) (optional): queries (rows of one head)
 * @n_keys: (out) (optional): keys (columns)
 *
 * The map of one layer and module, float32 in native byte order, row-major
 * (@heads, @n_queries, @n_keys), as bytes that share @meta's memory (no
 * copy) and keep it alive after the buffer is gone.  A skipped map (see
 * gst_av_attention_meta_is_skipped()) holds NaN.  In Python:
 * |[
 * w, heads, queries, keys = meta.get_weights_bytes(layer, module)
 * a = numpy.frombuffer(w.get_data(), numpy.float32).reshape(heads, queries, keys)
 * ]|
 * (PyGObject's GLib.Bytes.get_data makes one bulk copy into a bytes object;
 * gst_av_attention_meta_get_weights_buffer() is the path without a copy).
 *
 * Returns: (transfer full) (nullable): the map; NULL when @layer or
 *   @module is out of range or the block cannot be mapped
 */
GBytes *
gst_av_attention_meta_get_weights_bytes (GstAvAttentionMeta * meta,
    guint layer, GstAvAttentionModule module, guint * heads,
    guint * n_queries, guint * n_keys)
{
  gsize size;
  g_return_val_if_fail (meta != NULL && meta->data != NULL, NULL);
  g_return_val_if_fail (layer < meta->n_layers, NULL);
  g_return_val_if_fail ((guint) module < GST_AV_ATTENTION_N_MODULES, NULL);
  size = map_bytes (meta, module, heads, n_queries, n_keys);
  return data_bytes (meta, map_offset (meta, layer, module), size);
}

/**
 * gst_av_attention_meta_get_weights_buffer:
 * @meta: a #GstAvAttentionMeta
 * @layer: a layer, below @meta's n_layers
 * @module: a #GstAvAttentionModule
 * @heads: (out) (optional): heads of the map (@meta's n_heads)
 * @n_queries: (out) (optional): queries (rows of one head)
 * @n_keys: (out) (optional): keys (columns)
 *
 * The map of one layer and module (as
 * gst_av_attention_meta_get_weights_bytes() describes it) as a #GstBuffer
 * that shares @meta's memory.  Mapped in Python, it reaches numpy without
 * any copy:
 * |[
 * b, heads, queries, keys = meta.get_weights_buffer(layer, module)
 * with b.map(Gst.MapFlags.READ) as info:
 *     a = numpy.frombuffer(info.data, numpy.float32).reshape(heads, queries, keys)
 *     ...   # a is valid inside the with block
 * ]|
 *
 * Returns: (transfer full) (nullable): the map; NULL when @layer or
 *   @module is out of range
 */
GstBuffer *
gst_av_attention_meta_get_weights_buffer (GstAvAttentionMeta * meta,
    guint layer, GstAvAttentionModule module, guint * heads,
    guint * n_queries, guint * n_keys)
{
  gsize size;
  g_return_val_if_fail (meta != NULL && meta->data != NULL, NULL);
  g_return_val_if_fail (layer < meta->n_layers, NULL);
  g_return_val_if_fail ((guint) module < GST_AV_ATTENTION_N_MODULES, NULL);
  size = map_bytes (meta, module, heads, n_queries, n_keys);
  return gst_buffer_copy_region (meta->data, GST_BUFFER_COPY_MEMORY,
      map_offset (meta, layer, module), size);
}

/**
 * gst_av_attention_meta_set_audio_mask:
 * @meta: a #GstAvAttentionMeta whose data block is writable
 * @mask: @meta's n_audio_slots bytes, 1 = slot without audio
 *
 * Copies @mask into @meta (for producers in other languages; C code
 * writes through gst_av_attention_meta_get_audio_mask_writable()).
 *
 * Returns: TRUE when copied; FALSE (after a critical) when @mask is not
 *   n_audio_slots bytes or the block is read-only
 */
gboolean
gst_av_attention_meta_set_audio_mask (GstAvAttentionMeta * meta,
    GBytes * mask)
{
  guint8 *dst;
  gsize size;
  const guint8 *src;

  g_return_val_if_fail (meta != NULL && mask != NULL, FALSE);
  src = g_bytes_get_data (mask, &size);
  if (size != meta->n_audio_slots) {
    g_critical ("an audio mask of %" G_GSIZE_FORMAT " bytes for a meta of "
        "%u audio slots", size, meta->n_audio_slots);
    return FALSE;
  }
  dst = gst_av_attention_meta_get_audio_mask_writable (meta);
  if (dst == NULL)
    return FALSE;
  if (size > 0)
    memcpy (dst, src, size);
  return TRUE;
}

/**
 * gst_av_attention_meta_set_weights:
 * @meta: a #GstAvAttentionMeta whose data block is writable
 * @layer: a layer, below @meta's n_layers
 * @module: a #GstAvAttentionModule
 * @weights: the map, float32 in native byte order, row-major (heads,
 *   queries, keys) as gst_av_attention_meta_get_weights_bytes() returns it
 *
 * Copies @weights into the map of @layer and @module (for producers in
 * other languages; C code writes through
 * gst_av_attention_meta_get_weights_writable()).  In Python:
 * `meta.set_weights(layer, module, GLib.Bytes.new(a.astype(numpy.float32).tobytes()))`.
 *
 * Returns: TRUE when copied; FALSE (after a critical) when @weights has
 *   not the map's size or the block is read-only
 */
gboolean
gst_av_attention_meta_set_weights (GstAvAttentionMeta * meta, guint layer,
    GstAvAttentionModule module, GBytes * weights)
{
  gfloat *dst;
  gsize size, want;
  gconstpointer src;

  g_return_val_if_fail (meta != NULL && weights != NULL, FALSE);
  g_return_val_if_fail (layer < meta->n_layers, FALSE);
  g_return_val_if_fail ((guint) module < GST_AV_ATTENTION_N_MODULES, FALSE);
  src = g_bytes_get_data (weights, &size);
  want = map_bytes (meta, module, NULL, NULL, NULL);
  if (size != want) {
    g_critical ("a %s map of %" G_GSIZE_FORMAT " bytes where the meta's "
        "is %" G_GSIZE_FORMAT, gst_av_attention_module_name (module), size, want);
    return FALSE;
  }
  dst = gst_av_attention_meta_get_weights_writable (meta, layer, module);
  if (dst == NULL)
    return FALSE;
  memcpy (dst, src, size);
  return TRUE;
}

/**
 * gst_av_attention_meta_is_skipped:
 * @meta: a #GstAvAttentionMeta
 * @layer: a layer, below @meta's n_layers
 * @module: a #GstAvAttentionModule
 *
 * Was the map of @layer and @module skipped?  The audio modules and the
 * video cross-attention are skipped when the window holds no audio; their
 * maps are then NaN.
 *
 * Returns: TRUE when the map was not computed
 */
gboolean
gst_av_attention_meta_is_skipped (GstAvAttentionMeta * meta, guint layer,
    GstAvAttentionModule module)
{
  g_return_val_if_fail (meta != NULL, TRUE);
  g_return_val_if_fail (layer < meta->n_layers, TRUE);
  g_return_val_if_fail ((guint) module < GST_AV_ATTENTION_N_MODULES, TRUE);
  return meta->skipped[layer * GST_AV_ATTENTION_N_MODULES + module] != 0;
}

/**
 * gst_av_attention_meta_set_skipped:
 * @meta: a #GstAvAttentionMeta
 * @layer: a layer, below @meta's n_layers
 * @module: a #GstAvAttentionModule
 * @skipped: whether the map was not computed
 *
 * Marks the map of @layer and @module as skipped (or not).
 */
void
gst_av_attention_meta_set_skipped (GstAvAttentionMeta * meta, guint layer,
    GstAvAttentionModule module, gboolean skipped)
{
  g_return_if_fail (meta != NULL);
  g_return_if_fail (layer < meta->n_layers);
  g_return_if_fail ((guint) module < GST_AV_ATTENTION_N_MODULES);
  meta->skipped[layer * GST_AV_ATTENTION_N_MODULES + module] = skipped;
}

/**
 * gst_av_attention_meta_get_strongest_patch:
 * @meta: a #GstAvAttentionMeta
 * @layer: a layer (the last one, n_layers - 1, is the one the shipped
 *   model was trained to point with)
 * @column: (out) (optional): the patch's column in the grid, from 0
 * @row: (out) (optional): the patch's row, from 0
 * @weight: (out) (optional): its audio-cross weight, summed over heads and
 *   over the audio slots that hold audio, divided by heads x those slots
 *
 * Where the sound is: the patch that the audio->video cross-attention of
 * @layer weights most, over the audio slots that hold audio.
 *
 * Returns: TRUE when there is an answer; FALSE when the window has no
 *   audio, @layer is out of range or its audio-cross map was skipped (the
 *   out values are then not set)
 */
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
