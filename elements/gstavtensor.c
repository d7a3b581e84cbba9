/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstavtensor.h"

#include <string.h>

static GstCaps *
base_caps (const gchar * kind, const gchar * shape, gint size, gint fps_n,
    gint fps_d)
{
  return gst_caps_new_simple (GST_AV_TENSOR_MEDIA_TYPE,
      "kind", G_TYPE_STRING, kind,
      "dtype", G_TYPE_STRING, "float32",
      "frame-shape", G_TYPE_STRING, shape,
      "frame-size", G_TYPE_INT, size,
      "framerate", GST_TYPE_FRACTION, fps_n, fps_d, NULL);
}

GstCaps *
gst_av_tensor_caps_log_mel (gint n_mels, gint rate, gint hop_length,
    gint n_fft)
{
  gchar *shape = g_strdup_printf ("%d", n_mels);
  GstCaps *caps = base_caps (GST_AV_TENSOR_KIND_LOG_MEL, shape, n_mels,
      rate, hop_length);
  g_free (shape);
  gst_caps_set_simple (caps, "n-mels", G_TYPE_INT, n_mels,
      "rate", G_TYPE_INT, rate, "hop-length", G_TYPE_INT, hop_length,
      "n-fft", G_TYPE_INT, n_fft, NULL);
  return caps;
}

GstCaps *
gst_av_tensor_caps_patches (gint embed_dim, gint grid_columns,
    gint grid_rows, gint patch_size, gint fps_n, gint fps_d)
{
  const gint64 n64 = (gint64) grid_columns * grid_rows;
  gint n;
  gchar *shape;
  GstCaps *caps;

  /* the frame size is an int field: refuse what does not fit */
  if (grid_columns < 1 || grid_rows < 1 || embed_dim < 1 || n64 > G_MAXINT
      || n64 * embed_dim > G_MAXINT)
    return NULL;
  n = (gint) n64;
  shape = g_strdup_printf ("%d,%d", n, embed_dim);
  caps = base_caps (GST_AV_TENSOR_KIND_PATCHES, shape, n * embed_dim, fps_n,
      fps_d);
  g_free (shape);
  gst_caps_set_simple (caps, "embed-dim", G_TYPE_INT, embed_dim,
      "num-patches", G_TYPE_INT, n, "grid-columns", G_TYPE_INT, grid_columns,
      "grid-rows", G_TYPE_INT, grid_rows, "patch-size", G_TYPE_INT,
      patch_size, NULL);
  return caps;
}

GstCaps *
gst_av_tensor_caps_patches_v2 (gint embed_dim, gint rhythm_dim,
    gint grid_columns, gint grid_rows, gint patch_size, gint fps_n,
    gint fps_d)
{
  GstCaps *caps;

  if (rhythm_dim < 1)
    return NULL;
  /* the tensor is v1's [N, E]; the rows [N, D] ride in a GstAvRhythmMeta */
  caps = gst_av_tensor_caps_patches (embed_dim, grid_columns, grid_rows,
      patch_size, fps_n, fps_d);
  if (caps != NULL)
    gst_caps_set_simple (caps, "rhythm-dim", G_TYPE_INT, rhythm_dim, NULL);
  return caps;
}

void
gst_av_tensor_caps_set_model (GstCaps * caps, const gchar * format,
    const gchar * weights)
{
  gst_caps_set_simple (caps, "model-format", G_TYPE_STRING, format,
      "weights", G_TYPE_STRING, weights, NULL);
}

void
gst_av_tensor_caps_set_fingerprint (GstCaps * caps, const gchar * fingerprint)
{
  gst_caps_set_simple (caps, "model-fingerprint", G_TYPE_STRING, fingerprint,
      NULL);
}

GstCaps *
gst_av_tensor_caps_fused (gint width, gint fps_n, gint fps_d)
{
  gchar *shape = g_strdup_printf ("%d", width);
  GstCaps *caps = base_caps (GST_AV_TENSOR_KIND_FUSED, shape, width, fps_n,
      fps_d);
  g_free (shape);
  gst_caps_set_simple (caps, "width", G_TYPE_INT, width, NULL);
  return caps;
}

static gboolean
get_int (const GstStructure * s, const gchar * field, gint * out,
    gchar ** why)
{
  if (!gst_structure_get_int (s, field, out) || *out <= 0) {
    *why = g_strdup_printf ("tensor caps lack a positive integer \"%s\": %s",
        field, gst_structure_get_name (s));
    return FALSE;
  }
  return TRUE;
}

gboolean
gst_av_tensor_info_from_caps (GstAvTensorInfo * info, const GstCaps * caps,
    gchar ** why)
{
  const GstStructure *s;
  const gchar *kind, *dtype;
  gchar *dummy = NULL;

  if (why == NULL)
    why = &dummy;
  memset (info, 0, sizeof *info);
  if (caps == NULL || !gst_caps_is_fixed (caps)) {
    *why = g_strdup ("tensor caps are not fixed");
    goto fail;
  }
  s = gst_caps_get_structure (caps, 0);
  if (!gst_structure_has_name (s, GST_AV_TENSOR_MEDIA_TYPE)) {
    *why = g_strdup_printf ("caps %s are not " GST_AV_TENSOR_MEDIA_TYPE,
        gst_structure_get_name (s));
    goto fail;
  }
  dtype = gst_structure_get_string (s, "dtype");
  if (g_strcmp0 (dtype, "float32") != 0) {
    *why = g_strdup_printf ("tensor dtype \"%s\" is not float32",
        dtype ? dtype : "(none)");
    goto fail;
  }
  if (!gst_structure_get_fraction (s, "framerate", &info->fps_n,
          &info->fps_d)) {
    info->fps_n = 0;
    info->fps_d = 1;
  }
  kind = gst_structure_get_string (s, "kind");
  if (g_strcmp0 (kind, GST_AV_TENSOR_KIND_LOG_MEL) == 0) {
    info->kind = GST_AV_TENSOR_LOG_MEL;
    if (!get_int (s, "n-mels", &info->n_mels, why)
        || !get_int (s, "rate", &info->rate, why)
        || !get_int (s, "hop-length", &info->hop_length, why)
        || !get_int (s, "n-fft", &info->n_fft, why))
      goto fail;
    info->ndim = 1;
    info->shape[0] = info->n_mels;
    info->fps_n = info->rate;
    info->fps_d = info->hop_length;
  } else if (g_strcmp0 (kind, GST_AV_TENSOR_KIND_PATCHES) == 0) {
    info->kind = GST_AV_TENSOR_PATCHES;
    if (!get_int (s, "embed-dim", &info->embed_dim, why)
        || !get_int (s, "grid-columns", &info->grid_columns, why)
        || !get_int (s, "grid-rows", &info->grid_rows, why)
        || !get_int (s, "patch-size", &info->patch_size, why))
      goto fail;
    if ((gint64) info->grid_columns * info->grid_rows > 65536) {
      *why = g_strdup ("patch grid larger than 65536 patches");
      goto fail;
    }
    info->num_patches = info->grid_columns * info->grid_rows;
    if (gst_structure_has_field (s, "rhythm-dim")
        && (!get_int (s, "rhythm-dim", &info->rhythm_dim, why)
            || info->rhythm_dim > 65536 || info->embed_dim > 65536)) {
      if (*why == NULL)
        *why = g_strdup ("rhythm-dim or embed-dim above 65536");
      goto fail;
    }
    info->ndim = 2;
    info->shape[0] = info->num_patches;
    info->shape[1] = info->embed_dim;
  } else if (g_strcmp0 (kind, GST_AV_TENSOR_KIND_FUSED) == 0) {
    info->kind = GST_AV_TENSOR_FUSED;
    if (!get_int (s, "width", &info->width, why))
      goto fail;
    info->ndim = 1;
    info->shape[0] = info->width;
  } else {
    *why = g_strdup_printf ("unknown tensor kind \"%s\"",
        kind ? kind : "(none)");
    goto fail;
  }
  info->frame_size = info->shape[0] * (info->ndim == 2 ? info->shape[1] : 1);
  g_free (dummy);
  return TRUE;

fail:
  g_free (dummy);
  return FALSE;
}

GstClockTime
gst_av_tensor_frame_pts (const GstAvTensorInfo * info, GstClockTime pts,
    guint64 i)
{
  GstClockTime off;

  if (!GST_CLOCK_TIME_IS_VALID (pts) || i == 0 || info->fps_n <= 0)
    return pts;
  off = gst_util_uint64_scale (i, GST_SECOND * (guint64) info->fps_d,
      (guint64) info->fps_n);
  /* a time past the last one a clock holds is unknown, not wrapped */
  if (off >= GST_CLOCK_TIME_NONE - pts)
    return GST_CLOCK_TIME_NONE;
  return pts + off;
}

GstBufferPool *
gst_av_buffer_pool_new (GstCaps * caps, guint size)
{
  GstBufferPool *pool = gst_buffer_pool_new ();
  GstStructure *config = gst_buffer_pool_get_config (pool);

  gst_buffer_pool_config_set_params (config, caps, size, 2, 0);
  if (!gst_buffer_pool_set_config (pool, config)
      || !gst_buffer_pool_set_active (pool, TRUE)) {
    gst_object_unref (pool);
    return NULL;
  }
  return pool;
}
