/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstavtensor.h"

#include <string.h>

#include <glib/gstdio.h>

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
  if (!GST_CLOCK_TIME_IS_VALID (pts) || i == 0 || info->fps_n <= 0)
    return pts;
  return pts + gst_util_uint64_scale (i * (guint64) info->fps_d, GST_SECOND,
      (guint64) info->fps_n);
}

void
gst_av_post_weights_error (GstElement * element, const gchar * path,
    const AvfError * err)
{
  const gchar *what = path && path[0] ? path : "(built-in weights)";

  switch (err->status) {
    case AVF_ERR_NOT_FOUND:
      GST_ELEMENT_ERROR (element, RESOURCE, NOT_FOUND,
          ("The weights file \"%s\" was not found.", what),
          ("%s", err->message));
      break;
    case AVF_ERR_FORMAT:
    case AVF_ERR_IO:
      GST_ELEMENT_ERROR (element, RESOURCE, READ,
          ("The weights file \"%s\" cannot be read as avfusion-v1 "
              "safetensors: %s", what, err->message),
          ("%s (byte offset %" G_GINT64_FORMAT ")",
              avf_status_name (err->status), (gint64) err->offset));
      break;
    case AVF_ERR_NOMEM:
      GST_ELEMENT_ERROR (element, RESOURCE, NO_SPACE_LEFT,
          ("Not enough memory to load the weights \"%s\": %s", what,
              err->message), (NULL));
      break;
    default:
      GST_ELEMENT_ERROR (element, RESOURCE, SETTINGS,
          ("The weights file \"%s\" does not form an avfusion-v1 model: %s",
              what, err->message), ("%s", avf_status_name (err->status)));
      break;
  }
}

gboolean
gst_av_push_gap (GstPad * srcpad, GstClockTime pts, GstClockTime dur)
{
  GstEvent *segment;

  if (!GST_CLOCK_TIME_IS_VALID (pts))
    return FALSE;
  segment = gst_pad_get_sticky_event (srcpad, GST_EVENT_SEGMENT, 0);
  if (segment == NULL)
    return FALSE;
  gst_event_unref (segment);
  return gst_pad_push_event (srcpad, gst_event_new_gap (pts, dur));
}

/* ---- inputs without a source ------------------------------------------ */

static gboolean src_pad_has_no_source (GstPad * srcpad, guint depth);

static gboolean
sink_pad_has_no_source (GstPad * sinkpad, guint depth)
{
  GstPad *peer;
  gboolean dead;

  if (depth > 32)               /* a loop or a very long chain: do not guess */
    return FALSE;
  peer = gst_pad_get_peer (sinkpad);
  if (peer == NULL)
    return TRUE;
  dead = src_pad_has_no_source (peer, depth + 1);
  gst_object_unref (peer);
  return dead;
}

/* A source pad is dead when its element is not a source and every pad its
 * data can come from (the internal links: an element's sink pads, a ghost
 * pad's target) is dead. */
static gboolean
src_pad_has_no_source (GstPad * srcpad, guint depth)
{
  GstObject *parent = gst_pad_get_parent (srcpad);
  GstIterator *it;
  GValue item = G_VALUE_INIT;
  gboolean done = FALSE, dead = TRUE;
  guint links = 0;

  if (parent != NULL) {
    gboolean source = GST_IS_ELEMENT (parent) &&
        GST_OBJECT_FLAG_IS_SET (parent, GST_ELEMENT_FLAG_SOURCE);
    gst_object_unref (parent);
    if (source)
      return FALSE;
  }
  it = gst_pad_iterate_internal_links (srcpad);
  if (it == NULL)
    return FALSE;
  while (!done && dead) {
    switch (gst_iterator_next (it, &item)) {
      case GST_ITERATOR_OK:
        links++;
        if (!sink_pad_has_no_source (g_value_get_object (&item), depth))
          dead = FALSE;
        g_value_reset (&item);
        break;
      case GST_ITERATOR_DONE:
        done = TRUE;
        break;
      default:                 /* resync or error: do not guess */
        dead = FALSE;
        break;
    }
  }
  g_value_unset (&item);
  gst_iterator_free (it);
  return dead && links > 0;
}

gboolean
gst_av_pad_has_no_source (GstPad * sinkpad)
{
  return sink_pad_has_no_source (sinkpad, 0);
}

gboolean
gst_av_end_dead_pad (GstElement * element, GstPad * sinkpad)
{
  GstEvent *ev;

  if (GST_PAD_IS_EOS (sinkpad) || !gst_av_pad_has_no_source (sinkpad))
    return FALSE;
  GST_INFO_OBJECT (sinkpad, "no source upstream (unlinked, or a branch that "
      "was never linked): treated as ended");
  ev = gst_pad_get_sticky_event (sinkpad, GST_EVENT_STREAM_START, 0);
  if (ev != NULL) {
    gst_event_unref (ev);
  } else {
    gchar *id = g_strdup_printf ("%s/%s/no-source", GST_OBJECT_NAME (element),
        GST_PAD_NAME (sinkpad));

    gst_pad_send_event (sinkpad, gst_event_new_stream_start (id));
    g_free (id);
  }
  return gst_pad_send_event (sinkpad, gst_event_new_eos ());
}

void
gst_av_watch_lead_event (GstElement * element, GstEvent * event,
    GstPad * follower)
{
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_STREAM_START:
    case GST_EVENT_CAPS:
    case GST_EVENT_SEGMENT:
      gst_av_end_dead_pad (element, follower);
      break;
    default:
      break;
  }
}

/* Set on a sink pad (qdata) while a seek is forwarded past it. */
static GQuark
hidden_quark (void)
{
  return g_quark_from_static_string ("gst-av-input-hidden");
}

/* gst_iterator_filter keeps the items for which this gives 0. */
static gint
pad_is_hidden (const GValue * item, const GValue * unused)
{
  return g_object_get_qdata (g_value_get_object (item), hidden_quark ())
      != NULL;
}

static GstIterator *
iterate_shown_sink_pads (GstPad * pad, GstObject * parent)
{
  GstIterator *it;

  if (parent == NULL || !GST_IS_ELEMENT (parent))
    return NULL;
  it = gst_element_iterate_sink_pads (GST_ELEMENT_CAST (parent));
  return gst_iterator_filter (it, (GCompareFunc) pad_is_hidden, NULL);
}

void
gst_av_aggregator_init_dead_inputs (GstAggregator * agg)
{
  gst_pad_set_iterate_internal_links_function (GST_AGGREGATOR_SRC_PAD (agg),
      GST_DEBUG_FUNCPTR (iterate_shown_sink_pads));
}

gboolean
gst_av_seek_past_dead_pad (GstAggregator * agg, GstEvent * seek,
    gboolean (*parent_src_event) (GstAggregator *, GstEvent *), GstPad * pad)
{
  GstSeekFlags flags;
  guint32 seqnum;
  gboolean res;
  GstEvent *flush;

  if (!gst_av_pad_has_no_source (pad))
    return parent_src_event (agg, seek);

  gst_event_parse_seek (seek, NULL, NULL, &flags, NULL, NULL, NULL, NULL);
  seqnum = gst_event_get_seqnum (seek);
  GST_DEBUG_OBJECT (pad, "no source: seek %u goes to the other inputs only",
      seqnum);
  g_object_set_qdata (G_OBJECT (pad), hidden_quark (), GINT_TO_POINTER (1));
  res = parent_src_event (agg, seek);
  g_object_set_qdata (G_OBJECT (pad), hidden_quark (), NULL);
  if (!(flags & GST_SEEK_FLAG_FLUSH))
    return res;

  GST_DEBUG_OBJECT (pad, "no source: flushing it for seek %u", seqnum);
  flush = gst_event_new_flush_start ();
  gst_event_set_seqnum (flush, seqnum);
  gst_pad_send_event (pad, flush);
  flush = gst_event_new_flush_stop (TRUE);
  gst_event_set_seqnum (flush, seqnum);
  gst_pad_send_event (pad, flush);
  return res;
}

/* ---- which weights ------------------------------------------------------ */

GType
gst_av_model_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_AV_MODEL_TRAINED, "The shipped trained model: " GST_AV_DEFAULT_MODEL_TEXT,
        "trained"},
    {GST_AV_MODEL_SEEDED, "Built-in seeded weights, not trained (E 256, 8 "
          "heads, 1 layer, made from the \"seed\" property), for tests and "
          "experiments", "seeded"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    /* the tests build this file in as well as loading the plugin: one
     * registration per process */
    GType t = g_type_from_name ("GstAvModel");
    if (t == 0)
      t = g_enum_register_static ("GstAvModel", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

/* TRUE when @a and @b name the same directory on disk (symbolic links and
 * different spellings of one path included). */
static gboolean
same_directory (const gchar * a, const gchar * b)
{
  GStatBuf sa, sb;

  if (g_stat (a, &sa) != 0 || g_stat (b, &sb) != 0)
    return FALSE;
  return S_ISDIR (sa.st_mode) && sa.st_dev == sb.st_dev
      && sa.st_ino == sb.st_ino;
}

gchar *
gst_av_default_model_path (GstElement * element)
{
  GstElementFactory *factory = gst_element_get_factory (element);
  GstPlugin *plugin = NULL;
  const gchar *file = NULL;
  gboolean build_tree = FALSE;

  if (factory != NULL)
    plugin = gst_plugin_feature_get_plugin (GST_PLUGIN_FEATURE (factory));
  if (plugin != NULL)
    file = gst_plugin_get_filename (plugin);
  if (file != NULL) {
    gchar *dir = g_path_get_dirname (file);

    build_tree = same_directory (dir, AVF_PLUGIN_BUILD_DIR);
    g_free (dir);
  }
  GST_DEBUG_OBJECT (element, "plugin file %s: %s", GST_STR_NULL (file),
      build_tree ? "the build tree" : "installed");
  if (plugin != NULL)
    gst_object_unref (plugin);
  if (build_tree)
    return g_build_filename (AVF_PLUGIN_BUILD_DIR, AVF_MODEL_NAME, NULL);
  return g_strdup (GST_AV_DEFAULT_MODEL_INSTALLED);
}

AvfWeights *
gst_av_load_weights (GstElement * element, const gchar * path, gchar ** used)
{
  const gboolean shipped = path == NULL || path[0] == '\0';
  gchar *file = shipped ? gst_av_default_model_path (element) :
      g_strdup (path);
  AvfWeights *w = NULL;
  AvfError err;

  avf_error_clear (&err);
  if (avf_weights_load (&w, file, &err) != AVF_OK) {
    if (shipped && err.status == AVF_ERR_NOT_FOUND) {
      GST_ELEMENT_ERROR (element, RESOURCE, NOT_FOUND,
          ("The shipped trained model \"%s\", which %s uses when its "
              "\"weights\" property is empty and \"model\" is trained (the "
              "default), was not found. Set \"weights\" to an avfusion-v1 "
              "weights file, or model=seeded for the built-in seeded "
              "weights, or reinstall avattention.", file,
              GST_OBJECT_NAME (element)),
          ("%s (an installed plugin reads the model from "
              AVF_MODEL_INSTALL_DIR ", a plugin in the build tree "
              AVF_PLUGIN_BUILD_DIR " the copy beside it)", err.message));
    } else {
      gst_av_post_weights_error (element, file, &err);
    }
    g_free (file);
    return NULL;
  }
  if (used)
    *used = file;
  else
    g_free (file);
  return w;
}
