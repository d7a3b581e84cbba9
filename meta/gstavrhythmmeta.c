/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/**
 * SECTION:gstavrhythmmeta
 * @title: GstAvRhythmMeta
 * @short_description: avfusion-v2's rhythm features beside the patch
 *   embeddings
 *
 * With avfusion-v2 weights avpatchembed pushes, per video frame, a tensor
 * of [N, E] patch embeddings (exactly as with avfusion-v1) and attaches a
 * #GstAvRhythmMeta with the D rhythm features of each patch
 * (docs/avfusion-v2.md §2); its caps say so with rhythm-dim=D.  avattention
 * reads the rows from the meta and refuses, with an error, a v2 video
 * buffer without one.
 *
 * One meta per buffer, holding the rows of every frame of the buffer:
 * [n_frames, n_patches, rhythm_dim] float32.  The meta survives what keeps
 * the buffer (queue, tee) and is copied with it: gst_buffer_copy() and the
 * copies GstBaseTransform makes keep it; a copy of a region of whole frames
 * keeps the rows of those frames; other transformations (a region that cuts
 * a frame, a scale) drop it.  The rows are shared, not duplicated, between
 * the copies; they are read-only once the meta is on a buffer that others
 * may hold.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstavrhythmmeta.h"

#include <string.h>

static gboolean
gst_av_rhythm_meta_init (GstMeta * meta, gpointer params, GstBuffer * buffer)
{
  GstAvRhythmMeta *m = (GstAvRhythmMeta *) meta;

  m->n_frames = m->n_patches = m->rhythm_dim = 0;
  m->data = NULL;
  memset (&m->map, 0, sizeof m->map);
  return TRUE;
}

static void
gst_av_rhythm_meta_free (GstMeta * meta, GstBuffer * buffer)
{
  GstAvRhythmMeta *m = (GstAvRhythmMeta *) meta;

  if (m->data) {
    gst_buffer_unmap (m->data, &m->map);
    gst_buffer_unref (m->data);
    m->data = NULL;
  }
}

static gsize
frame_bytes (const GstAvRhythmMeta * m)
{
  return (gsize) m->n_patches * m->rhythm_dim * sizeof (gfloat);
}

static gboolean
gst_av_rhythm_meta_transform (GstBuffer * dest, GstMeta * meta,
    GstBuffer * buffer, GQuark type, gpointer data)
{
  GstAvRhythmMeta *src = (GstAvRhythmMeta *) meta;
  GstMetaTransformCopy *copy = data;
  gsize size, first = 0, n = src->n_frames;
  GstBuffer *rows;

  if (!GST_META_TRANSFORM_IS_COPY (type))
    return FALSE;
  /* the frames a region holds, when it holds whole ones */
  size = gst_buffer_get_size (buffer);
  if (copy->region && (copy->offset != 0 || copy->size != size)) {
    gsize frame;

    if (size == 0 || size % src->n_frames != 0)
      return TRUE;
    frame = size / src->n_frames;
    if (copy->offset % frame != 0 || copy->size % frame != 0
        || copy->size == 0 || copy->offset + copy->size > size)
      return TRUE;
    first = copy->offset / frame;
    n = copy->size / frame;
  }
  rows = gst_buffer_copy_region (src->data, GST_BUFFER_COPY_MEMORY,
      first * frame_bytes (src), n * frame_bytes (src));
  if (rows == NULL)
    return FALSE;
  return gst_buffer_add_av_rhythm_meta (dest, (guint) n, src->n_patches,
      src->rhythm_dim, rows) != NULL;
}

/**
 * gst_av_rhythm_meta_api_get_type:
 *
 * The API type of the meta; GST_AV_RHYTHM_META_API_TYPE calls it.
 *
 * Returns: the API type of #GstAvRhythmMeta, for gst_buffer_get_meta()
 */
GType
gst_av_rhythm_meta_api_get_type (void)
{
  static GType type = 0;
  static const gchar *tags[] = { NULL };

  if (g_once_init_enter (&type)) {
    GType t = gst_meta_api_type_register ("GstAvRhythmMetaAPI", tags);
    g_once_init_leave (&type, t);
  }
  return type;
}

/**
 * gst_av_rhythm_meta_get_info:
 *
 * The registration of the meta's implementation; GST_AV_RHYTHM_META_INFO
 * calls it.
 *
 * Returns: (transfer none): the #GstMetaInfo of #GstAvRhythmMeta
 */
const GstMetaInfo *
gst_av_rhythm_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;

  if (g_once_init_enter ((GstMetaInfo **) & info)) {
    const GstMetaInfo *i = gst_meta_register (GST_AV_RHYTHM_META_API_TYPE,
        "GstAvRhythmMeta", sizeof (GstAvRhythmMeta),
        gst_av_rhythm_meta_init, gst_av_rhythm_meta_free,
        gst_av_rhythm_meta_transform);
    g_once_init_leave ((GstMetaInfo **) & info, (GstMetaInfo *) i);
  }
  return info;
}

/**
 * gst_av_rhythm_meta_data_size:
 * @n_frames: frames
 * @n_patches: patches per frame (N)
 * @rhythm_dim: rhythm features per patch (D)
 *
 * The size of the data block of a #GstAvRhythmMeta of these sizes, for a
 * pool of such blocks.
 *
 * Returns: the bytes of the rows of these sizes
 *   (@n_frames x @n_patches x @rhythm_dim float32), the size of the data
 *   block gst_buffer_add_av_rhythm_meta() needs; G_MAXSIZE when that does
 *   not fit in memory
 */
gsize
gst_av_rhythm_meta_data_size (guint n_frames, guint n_patches,
    guint rhythm_dim)
{
  guint64 n = (guint64) n_patches * rhythm_dim;

  if (n != 0 && (guint64) n_frames > G_MAXSIZE / sizeof (gfloat) / n)
    return G_MAXSIZE;
  return (gsize) (n * n_frames * sizeof (gfloat));
}

/**
 * gst_buffer_add_av_rhythm_meta:
 * @buffer: a writable #GstBuffer
 * @n_frames: frames of @buffer, at least 1
 * @n_patches: patches per frame (N), at least 1
 * @rhythm_dim: rhythm features per patch (D), at least 1
 * @data: (transfer full) (nullable): the rows, a buffer of at least
 *   gst_av_rhythm_meta_data_size() bytes (typically from a pool), or NULL
 *   for a new block of zeros.  It is mapped for the meta's life, writable
 *   when @data is.
 *
 * Adds a rhythm meta to @buffer.  The rows are written through
 * gst_av_rhythm_meta_get_rows_writable() while the meta is the only user
 * of @data.
 *
 * Returns: (transfer none) (nullable): the meta, NULL (after a critical)
 *   when a size is 0 or @data is too small
 */
GstAvRhythmMeta *
gst_buffer_add_av_rhythm_meta (GstBuffer * buffer, guint n_frames,
    guint n_patches, guint rhythm_dim, GstBuffer * data)
{
  GstAvRhythmMeta *m;
  gsize need;

  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  g_return_val_if_fail (data == NULL || GST_IS_BUFFER (data), NULL);

  need = gst_av_rhythm_meta_data_size (n_frames, n_patches, rhythm_dim);
  if (n_frames == 0 || n_patches == 0 || rhythm_dim == 0
      || need == G_MAXSIZE) {
    g_critical ("rhythm rows need at least one frame, patch and feature "
        "and must fit in memory: got %u x %u x %u", n_frames, n_patches,
        rhythm_dim);
    if (data)
      gst_buffer_unref (data);
    return NULL;
  }
  if (data == NULL) {
    GstMapInfo zero;

    data = gst_buffer_new_allocate (NULL, need, NULL);
    if (data == NULL)
      return NULL;
    if (gst_buffer_map (data, &zero, GST_MAP_WRITE)) {
      memset (zero.data, 0, zero.size);
      gst_buffer_unmap (data, &zero);
    }
  }
  if (gst_buffer_get_size (data) < need) {
    g_critical ("rhythm rows of %" G_GSIZE_FORMAT " bytes are fewer than "
        "the %" G_GSIZE_FORMAT " bytes of %u x %u x %u float32",
        gst_buffer_get_size (data), need, n_frames, n_patches, rhythm_dim);
    gst_buffer_unref (data);
    return NULL;
  }
  m = (GstAvRhythmMeta *) gst_buffer_add_meta (buffer,
      GST_AV_RHYTHM_META_INFO, NULL);
  if (m == NULL) {
    gst_buffer_unref (data);
    return NULL;
  }
  if (!gst_buffer_map (data, &m->map, gst_buffer_is_writable (data) ?
          GST_MAP_READWRITE : GST_MAP_READ)) {
    gst_buffer_unref (data);
    gst_buffer_remove_meta (buffer, (GstMeta *) m);
    return NULL;
  }
  m->n_frames = n_frames;
  m->n_patches = n_patches;
  m->rhythm_dim = rhythm_dim;
  m->data = data;
  return m;
}

/**
 * gst_buffer_get_av_rhythm_meta:
 * @buffer: a #GstBuffer
 *
 * Finds the rhythm meta of @buffer (avpatchembed's buffers carry one with
 * avfusion-v2 weights).  It lives as long as @buffer.
 *
 * Returns: (transfer none) (nullable): the #GstAvRhythmMeta of @buffer,
 *   NULL when it has none
 */
GstAvRhythmMeta *
gst_buffer_get_av_rhythm_meta (GstBuffer * buffer)
{
  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  return (GstAvRhythmMeta *) gst_buffer_get_meta (buffer,
      GST_AV_RHYTHM_META_API_TYPE);
}

/**
 * gst_av_rhythm_meta_get_rows: (skip)
 * @meta: a #GstAvRhythmMeta
 * @frame: a frame of the buffer, below @meta's n_frames
 *
 * The rhythm rows of one frame, valid while @meta lives.  Bindings use
 * gst_av_rhythm_meta_get_rows_bytes().
 *
 * Returns: (transfer none) (nullable): @meta's n_patches x rhythm_dim
 *   float32 of @frame, row-major; NULL when @frame is out of range
 */
const gfloat *
gst_av_rhythm_meta_get_rows (GstAvRhythmMeta * meta, guint frame)
{
  g_return_val_if_fail (meta != NULL && meta->data != NULL, NULL);
  g_return_val_if_fail (frame < meta->n_frames, NULL);
  return (const gfloat *) (meta->map.data + frame * frame_bytes (meta));
}

/**
 * gst_av_rhythm_meta_get_rows_writable: (skip)
 * @meta: a #GstAvRhythmMeta whose rows were writable when it was added
 * @frame: a frame of the buffer, below @meta's n_frames
 *
 * The rhythm rows of one frame, for the element that fills them.
 *
 * Returns: (transfer none) (nullable): the rows of @frame for writing;
 *   NULL (after a critical) when they are read-only or @frame is out of
 *   range
 */
gfloat *
gst_av_rhythm_meta_get_rows_writable (GstAvRhythmMeta * meta, guint frame)
{
  g_return_val_if_fail (meta != NULL && meta->data != NULL, NULL);
  g_return_val_if_fail (meta->map.flags & GST_MAP_WRITE, NULL);
  g_return_val_if_fail (frame < meta->n_frames, NULL);
  return (gfloat *) (meta->map.data + frame * frame_bytes (meta));
}

/**
 * gst_av_rhythm_meta_get_rows_bytes:
 * @meta: a #GstAvRhythmMeta
 * @frame: a frame of the buffer, below @meta's n_frames
 *
 * The rhythm rows of one frame as a copy, float32 in native byte order,
 * row-major (n_patches, rhythm_dim).  In Python:
 * |[
 * r = numpy.frombuffer(meta.get_rows_bytes(0).get_data(), numpy.float32)
 * r = r.reshape(meta.n_patches, meta.rhythm_dim)
 * ]|
 *
 * Returns: (transfer full) (nullable): the rows; NULL when @frame is out
 *   of range
 */
GBytes *
gst_av_rhythm_meta_get_rows_bytes (GstAvRhythmMeta * meta, guint frame)
{
  g_return_val_if_fail (meta != NULL && meta->data != NULL, NULL);
  g_return_val_if_fail (frame < meta->n_frames, NULL);
  return g_bytes_new (meta->map.data + frame * frame_bytes (meta),
      frame_bytes (meta));
}
