/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * avtensorsink: the arrays of the attention metadata (see the element's
 * documentation in gstavtensorsink.c): every map of every frame
 * (maps=all) or the summary an application reads (maps=summary, none),
 * float32 or float16.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstavtensorsinkpriv.h"
#include "gstavweights.h"
#include "heatmap.h"
#include "weights.h"

#include <math.h>
#include <string.h>

#define GST_CAT_DEFAULT gst_av_tensor_sink_debug

/* ---- attention arrays -------------------------------------------------- */

/* numpy's bool is one byte that holds 0 or 1 */
static const guint8 true_byte = 1, false_byte = 0;
static const gfloat nan_value = NAN;
static const guint16 half_nan = 0x7E00;
static const gint32 no_patch = -1;

static GstAvNpyDtype
map_dtype (GstAvTensorSink * self)
{
  return self->run_dtype == GST_AV_TENSOR_SINK_DTYPE_FLOAT16 ?
      GST_AV_NPY_FLOAT16 : GST_AV_NPY_FLOAT32;
}

static gconstpointer
map_nan (GstAvTensorSink * self)
{
  return self->run_dtype == GST_AV_TENSOR_SINK_DTYPE_FLOAT16 ?
      (gconstpointer) & half_nan : (gconstpointer) & nan_value;
}

/* Appends @n_frames copies of the map @w of @n floats, in the maps' dtype. */
static gboolean
append_map (GstAvTensorSink * self, GstAvNpyArray * a, const gfloat * w,
    gsize n, guint64 n_frames, GError ** err)
{
  if (self->run_dtype == GST_AV_TENSOR_SINK_DTYPE_FLOAT16) {
    gst_av_npy_float_to_half (self->half, w, n);
    return gst_av_npy_array_append_repeat (a, self->half, n_frames, err);
  }
  return gst_av_npy_array_append_repeat (a, w, n_frames, err);
}

/* Frames of "no attention here": NaN maps and an all-True mask (stored as
 * a count, written out in the final file). */
gboolean
gst_av_tensor_sink_append_missing_attention (GstAvTensorSink * self,
    guint64 n_frames)
{
  GstAvNpyArray **a = self->arrays;
  GError *err = NULL;

  if (!gst_av_npy_array_append_fill (a[GST_AV_TENSOR_SINK_AUDIO_MASK],
          &true_byte, n_frames, &err)
      || !gst_av_npy_array_append_fill (a[GST_AV_TENSOR_SINK_SOUND_VISIBLE],
          &false_byte, n_frames, &err)
      || !gst_av_npy_array_append_fill (a
          [GST_AV_TENSOR_SINK_VISIBLE_THRESHOLD], &nan_value, n_frames,
          &err))
    return gst_av_tensor_sink_write_error (self, err);
  if (self->run_maps == GST_AV_TENSOR_SINK_MAPS_ALL) {
    for (guint i = GST_AV_TENSOR_SINK_N_FIXED; i < self->n_arrays; i++)
      if (!gst_av_npy_array_append_fill (a[i], map_nan (self), n_frames,
              &err))
        return gst_av_tensor_sink_write_error (self, err);
    return TRUE;
  }
  if (!gst_av_npy_array_append_fill (a[GST_AV_TENSOR_SINK_REUSED],
          &false_byte, n_frames, &err)
      || !gst_av_npy_array_append_fill (a
          [GST_AV_TENSOR_SINK_STRONGEST_COLUMN], &no_patch, n_frames, &err)
      || !gst_av_npy_array_append_fill (a[GST_AV_TENSOR_SINK_STRONGEST_ROW],
          &no_patch, n_frames, &err)
      || !gst_av_npy_array_append_fill (a
          [GST_AV_TENSOR_SINK_STRONGEST_WEIGHT], &nan_value, n_frames, &err)
      || (self->run_maps == GST_AV_TENSOR_SINK_MAPS_SUMMARY
          && !gst_av_npy_array_append_fill (a
              [GST_AV_TENSOR_SINK_PATCH_WEIGHTS], map_nan (self), n_frames,
              &err)))
    return gst_av_tensor_sink_write_error (self, err);
  return TRUE;
}

/* The arrays of the summary (maps=summary or none), with the file's
 * attributes: the patch grid and the model. */
static gboolean
setup_summary_arrays (GstAvTensorSink * self)
{
  const guint64 two = 2, len = strlen (self->model) + 1;
  const gint32 grid[2] = { (gint32) self->grid_rows,
    (gint32) self->grid_columns
  };
  GstAvNpyArray *g, *m;
  GError *err = NULL;

  if (!gst_av_tensor_sink_add_array (self, "reused", GST_AV_NPY_BOOL, 0, NULL)
      || !gst_av_tensor_sink_add_array (self, "strongest_column",
          GST_AV_NPY_INT32, 0, NULL)
      || !gst_av_tensor_sink_add_array (self, "strongest_row",
          GST_AV_NPY_INT32, 0, NULL)
      || !gst_av_tensor_sink_add_array (self, "strongest_weight",
          GST_AV_NPY_FLOAT32, 0, NULL)
      || (g = gst_av_tensor_sink_add_array (self, "grid_shape",
              GST_AV_NPY_INT32, 1, &two)) == NULL
      || (m = gst_av_tensor_sink_add_array (self, "model",
              GST_AV_NPY_BYTES, 0, NULL)) == NULL)
    return FALSE;
  if (self->run_maps == GST_AV_TENSOR_SINK_MAPS_SUMMARY) {
    guint64 shape[1] = { self->n_patches };
    if (!gst_av_tensor_sink_add_array (self, "patch_weights",
            map_dtype (self), 1, shape))
      return FALSE;
  }
  gst_av_npy_array_set_single (g, TRUE);
  gst_av_npy_array_set_single (m, TRUE);
  /* NUL-padded: the terminating NUL is padding numpy drops */
  if (!gst_av_npy_array_set_bytes_length (m, len, &err)
      || !gst_av_npy_array_append (g, grid, 1, &err)
      || !gst_av_npy_array_append (m, self->model, 1, &err))
    return gst_av_tensor_sink_write_error (self, err);
  return TRUE;
}

/* The loop over the modules below counts GstAvAttentionModule values and
 * hands them to core as AvfModule (core/weights.h): the values agree
 * (gstavmodulecheck.h asserts it) */
#include "gstavmodulecheck.h"

/* The attention arrays of the current file, for the geometry that the
 * first meta of the stream fixed. */
gboolean
gst_av_tensor_sink_setup_attention_arrays (GstAvTensorSink * self)
{
  gchar name[64];
  guint64 shape[1] = { self->n_audio_slots };

  if (!gst_av_tensor_sink_add_array (self, "audio_mask", GST_AV_NPY_BOOL, 1,
          shape)
      || !gst_av_tensor_sink_add_array (self, "sound_visible",
          GST_AV_NPY_BOOL, 0, NULL)
      || !gst_av_tensor_sink_add_array (self, "visible_threshold",
          GST_AV_NPY_FLOAT32, 0, NULL))
    return FALSE;
  if (self->run_maps != GST_AV_TENSOR_SINK_MAPS_ALL)
    return setup_summary_arrays (self);
  for (guint l = 0; l < self->n_layers; l++) {
    for (guint m = 0; m < GST_AV_ATTENTION_N_MODULES; m++) {
      guint64 dims[3];
      gint tq, tk;
      guint nd = 0;

      /* T, N <= 2^24 (gst_av_attention_meta_data_size) */
      avf_module_dims ((AvfModule) m, (gint) self->n_audio_slots,
          (gint) self->n_patches, &tq, &tk);
      if (self->n_heads > 1)
        dims[nd++] = self->n_heads;
      dims[nd++] = tq;
      dims[nd++] = tk;
      g_snprintf (name, sizeof name, "layers.%u.%s", l,
          gst_av_attention_module_name ((GstAvAttentionModule) m));
      if (!gst_av_tensor_sink_add_array (self, name, map_dtype (self), nd,
              dims))
        return FALSE;
    }
  }
  return TRUE;
}

/* Which weights the avattention upstream uses, for the summary's "model":
 * the file name of its weights, "seeded:<seed>", or "unknown" when no
 * avattention is found through the elements of one sink pad (queues,
 * tees) upstream. */
static gchar *
upstream_model (GstAvTensorSink * self)
{
  GstPad *pad = gst_object_ref (GST_BASE_SINK_PAD (self));
  gchar *model = NULL;

  for (guint hop = 0; hop < 32 && pad != NULL && model == NULL; hop++) {
    GstPad *peer = gst_pad_get_peer (pad);
    GstElement *el = peer ? gst_pad_get_parent_element (peer) : NULL;
    GstElementFactory *f = el ? gst_element_get_factory (el) : NULL;

    gst_clear_object (&pad);
    gst_clear_object (&peer);
    if (el == NULL)
      break;
    if (f != NULL && g_str_equal (GST_OBJECT_NAME (f), "avattention")) {
      gchar *weights = NULL;
      guint64 seed = 0;
      gint which = 0;

      g_object_get (el, "weights", &weights, "model", &which, "seed", &seed,
          NULL);
      if (weights != NULL && *weights != '\0')
        model = g_path_get_basename (weights);
      else if (which == GST_AV_MODEL_SEEDED)
        model = g_strdup_printf ("seeded:%" G_GUINT64_FORMAT, seed);
      else {                    /* a shipped model: its file's name */
        gchar *path = gst_av_shipped_model_path (el, (GstAvModel) which);

        model = g_path_get_basename (path);
        g_free (path);
      }
      g_free (weights);
    } else {
      GST_OBJECT_LOCK (el);
      if (el->sinkpads != NULL)
        pad = gst_object_ref (el->sinkpads->data);
      GST_OBJECT_UNLOCK (el);
    }
    gst_object_unref (el);
  }
  gst_clear_object (&pad);
  return model ? model : g_strdup ("unknown");
}

static gboolean
setup_attention (GstAvTensorSink * self, GstAvAttentionMeta * meta)
{
  gsize largest;

  self->n_layers = meta->n_layers;
  self->n_heads = meta->n_heads;
  self->n_audio_slots = meta->n_audio_slots;
  self->n_patches = meta->n_patches;
  self->grid_columns = meta->grid_columns;
  self->grid_rows = meta->grid_rows;
  GST_INFO_OBJECT (self, "attention: %u layers, %u heads stored, T=%u, N=%u",
      self->n_layers, self->n_heads, self->n_audio_slots, self->n_patches);
  if (self->run_maps != GST_AV_TENSOR_SINK_MAPS_ALL && self->model == NULL)
    self->model = upstream_model (self);

  /* T, N <= 2^24 and the whole block fits memory (the meta's data size) */
  largest = (gsize) self->n_heads * MAX (self->n_audio_slots,
      self->n_patches) * MAX (self->n_audio_slots, self->n_patches);
  self->mask_frame = g_malloc (MAX (self->n_audio_slots, 1));
  self->patch_frame = g_new (gfloat, MAX (self->n_patches, 1));
  if (self->run_dtype == GST_AV_TENSOR_SINK_DTYPE_FLOAT16)
    self->half = g_new (guint16, MAX (largest, 1));
  self->have_attention = TRUE;
  if (!gst_av_tensor_sink_setup_attention_arrays (self))
    return FALSE;

  /* frames before the first meta had no attention */
  return gst_av_tensor_sink_append_missing_attention (self, self->n_frames);
}

/* FALSE (after an error) when @meta does not fit the arrays of the file. */
gboolean
gst_av_tensor_sink_check_attention (GstAvTensorSink * self,
    GstAvAttentionMeta * meta)
{
  if (meta->n_layers == 0 || meta->n_layers > GST_AV_ATTENTION_MAX_LAYERS
      || meta->n_heads == 0) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Invalid attention metadata: %u layers (1 to %d) and %u heads.",
            meta->n_layers, GST_AV_ATTENTION_MAX_LAYERS, meta->n_heads),
        (NULL));
    return FALSE;
  }
  if (!self->have_attention)
    return setup_attention (self, meta);
  if (meta->n_layers != self->n_layers || meta->n_heads != self->n_heads
      || meta->n_audio_slots != self->n_audio_slots
      || meta->n_patches != self->n_patches
      || meta->grid_columns != self->grid_columns) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("The attention metadata changed size in the middle of the stream "
            "(%u layers, %u heads, %u audio slots, %u patches instead of %u, "
            "%u, %u, %u); \"%s\" holds one shape per map.", meta->n_layers,
            meta->n_heads, meta->n_audio_slots, meta->n_patches,
            self->n_layers, self->n_heads, self->n_audio_slots,
            self->n_patches, self->path), (NULL));
    return FALSE;
  }
  return TRUE;
}

/* The summary of @n_frames frames that all carry @meta. */
static gboolean
append_summary (GstAvTensorSink * self, GstAvAttentionMeta * meta,
    guint64 n_frames)
{
  GstAvNpyArray **a = self->arrays;
  const guint last = self->n_layers - 1;
  const guint8 reused = meta->reused ? true_byte : false_byte;
  guint column, row;
  gfloat weight;
  GError *err = NULL;
  gboolean ok;

  if (gst_av_attention_meta_get_strongest_patch (meta, last, &column, &row,
          &weight)) {
    const gint32 c = (gint32) column, r = (gint32) row;
    ok = gst_av_npy_array_append_repeat (a
        [GST_AV_TENSOR_SINK_STRONGEST_COLUMN], &c, n_frames, &err)
        && gst_av_npy_array_append_repeat (a
        [GST_AV_TENSOR_SINK_STRONGEST_ROW], &r, n_frames, &err)
        && gst_av_npy_array_append_repeat (a
        [GST_AV_TENSOR_SINK_STRONGEST_WEIGHT], &weight, n_frames, &err);
  } else {
    ok = gst_av_npy_array_append_fill (a
        [GST_AV_TENSOR_SINK_STRONGEST_COLUMN], &no_patch, n_frames, &err)
        && gst_av_npy_array_append_fill (a
        [GST_AV_TENSOR_SINK_STRONGEST_ROW], &no_patch, n_frames, &err)
        && gst_av_npy_array_append_fill (a
        [GST_AV_TENSOR_SINK_STRONGEST_WEIGHT], &nan_value, n_frames, &err);
  }
  ok = ok && gst_av_npy_array_append_repeat (a[GST_AV_TENSOR_SINK_REUSED],
      &reused, n_frames, &err);
  if (ok && self->run_maps == GST_AV_TENSOR_SINK_MAPS_SUMMARY) {
    GstAvNpyArray *pw = a[GST_AV_TENSOR_SINK_PATCH_WEIGHTS];
    const gfloat *w = NULL;
    guint heads = 0, tq = 0, tk = 0;

    if (!meta->audio_missing && !gst_av_attention_meta_is_skipped (meta,
            last, GST_AV_ATTENTION_MODULE_AUDIO_CROSS))
      w = gst_av_attention_meta_get_weights (meta, last,
          GST_AV_ATTENTION_MODULE_AUDIO_CROSS, &heads, &tq, &tk);
    /* what avattnoverlay draws: the mean over the heads and the audio
     * slots that hold audio (tk = N, tq = T: checked with the meta) */
    if (w != NULL && tk == self->n_patches
        && avf_heatmap_mean_over_queries (self->patch_frame, w,
            gst_av_attention_meta_get_audio_mask (meta), (gint) heads, -1,
            (gint) tq, (gint) tk) > 0)
      ok = append_map (self, pw, self->patch_frame, self->n_patches,
          n_frames, &err);
    else
      ok = gst_av_npy_array_append_fill (pw, map_nan (self), n_frames, &err);
  }
  if (!ok)
    return gst_av_tensor_sink_write_error (self, err);
  return TRUE;
}

/* @n_frames frames that all carry @meta: each map stored once. */
gboolean
gst_av_tensor_sink_append_attention (GstAvTensorSink * self,
    GstAvAttentionMeta * meta, guint64 n_frames)
{
  const guint8 *mask = gst_av_attention_meta_get_audio_mask (meta);
  GError *err = NULL;
  gfloat threshold;
  const guint8 visible = gst_av_attention_meta_get_sound_visible (meta, NULL,
      &threshold) ? true_byte : false_byte;
  guint i = GST_AV_TENSOR_SINK_N_FIXED;

  for (guint t = 0; t < self->n_audio_slots; t++)
    self->mask_frame[t] = mask[t] ? true_byte : false_byte;

  if (!gst_av_npy_array_append_repeat (self->arrays
          [GST_AV_TENSOR_SINK_AUDIO_MASK], self->mask_frame, n_frames, &err)
      || !gst_av_npy_array_append_repeat (self->arrays
          [GST_AV_TENSOR_SINK_SOUND_VISIBLE], &visible, n_frames, &err)
      || !gst_av_npy_array_append_repeat (self->arrays
          [GST_AV_TENSOR_SINK_VISIBLE_THRESHOLD], &threshold, n_frames,
          &err))
    return gst_av_tensor_sink_write_error (self, err);
  if (self->run_maps != GST_AV_TENSOR_SINK_MAPS_ALL)
    return append_summary (self, meta, n_frames);
  for (guint l = 0; l < self->n_layers; l++) {
    for (guint m = 0; m < GST_AV_ATTENTION_N_MODULES; m++, i++) {
      GstAvAttentionModule module = (GstAvAttentionModule) m;
      gboolean ok;
      if (gst_av_attention_meta_is_skipped (meta, l, module)) {
        ok = gst_av_npy_array_append_fill (self->arrays[i], map_nan (self),
            n_frames, &err);
      } else {
        guint heads, tq, tk;
        const gfloat *w = gst_av_attention_meta_get_weights (meta, l,
            module, &heads, &tq, &tk);
        ok = append_map (self, self->arrays[i], w, (gsize) heads * tq * tk,
            n_frames, &err);
      }
      if (!ok)
        return gst_av_tensor_sink_write_error (self, err);
    }
  }
  return TRUE;
}

