/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/**
 * SECTION:element-avtensorsink
 * @title: avtensorsink
 * @see_also: avspectrogram, avpatchembed, avattention
 *
 * avtensorsink writes any tensor stream of this plugin (spectrogram frames,
 * patch embeddings, fused vectors) to a NumPy file that numpy.load opens:
 *
 * - location=X.npy: the frames, float32 [frames, ...frame shape];
 * - location=X.npz: an archive with "data" (as above), "pts" and
 *   "duration" (int64 [frames], nanoseconds, -1 when unknown) and, when the
 *   buffers carry GstAvAttentionMeta, "audio_mask" (bool [frames, T], True
 *   = slot without audio), "sound_visible" (bool [frames]: a visible object
 *   sounds, gst_av_attention_meta_get_sound_visible()), "visible_threshold"
 *   (float32 [frames], the model's threshold, 0 = unknown) and one
 *   "layers.{i}.{module}" map per layer and module: float32
 *   [frames, Tq, Tk] (head mean) or [frames, H, Tq, Tk] (per head).
 *
 * The first buffer with the meta fixes the layers, heads, audio slots and
 * patches; frames before it, frames without the meta and skipped modules
 * get NaN maps and an all-True mask (sound_visible False,
 * visible_threshold NaN).  A meta describes its whole buffer, so a buffer
 * of several frames repeats it for each frame.
 *
 * While the stream runs every array grows in its own unlinked temporary
 * file beside the location, each map it receives stored once, so memory
 * stays bounded.  The file is written at end-of-stream, or when the
 * element stops without it, to a hidden temporary name beside the
 * location and renamed over it when complete: a full disk, a file size
 * limit or a quota posts RESOURCE/NO_SPACE_LEFT, another write error
 * RESOURCE/WRITE, both naming the location, and nothing is left under that
 * name (a file already there stays as it was).  The layout spells every
 * frame out, so a stream of many frames per buffer, or of many frames
 * before the first meta, makes a file much larger than what it received.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 audiotestsrc num-buffers=50 ! audioconvert ! audioresample ! avspectrogram ! avtensorsink location=mel.npy
 * ]| writes the log-mel frames of a sine to mel.npy.
 */

/* The NumPy writer is elements/npy.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstavtensorsink.h"
#include "gstavelements.h"
#include "gstavproperty.h"
#include "weights.h"

#include <math.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gst_av_tensor_sink_debug);
#define GST_CAT_DEFAULT gst_av_tensor_sink_debug

enum
{
  PROP_0,
  PROP_LOCATION
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (GST_AV_TENSOR_CAPS_ANY));

#define gst_av_tensor_sink_parent_class parent_class
G_DEFINE_TYPE (GstAvTensorSink, gst_av_tensor_sink, GST_TYPE_BASE_SINK);
GST_ELEMENT_REGISTER_DEFINE (avtensorsink, "avtensorsink", GST_RANK_NONE,
    GST_TYPE_AV_TENSOR_SINK);

static void gst_av_tensor_sink_finalize (GObject * object);
static void gst_av_tensor_sink_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_av_tensor_sink_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static GstStateChangeReturn gst_av_tensor_sink_change_state (GstElement *
    element, GstStateChange transition);
static gboolean gst_av_tensor_sink_start (GstBaseSink * bsink);
static gboolean gst_av_tensor_sink_stop (GstBaseSink * bsink);
static gboolean gst_av_tensor_sink_set_caps (GstBaseSink * bsink,
    GstCaps * caps);
static gboolean gst_av_tensor_sink_event (GstBaseSink * bsink,
    GstEvent * event);
static GstFlowReturn gst_av_tensor_sink_render (GstBaseSink * bsink,
    GstBuffer * buffer);

static void
gst_av_tensor_sink_class_init (GstAvTensorSinkClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSinkClass *basesink_class = GST_BASE_SINK_CLASS (klass);

  gobject_class->finalize = gst_av_tensor_sink_finalize;
  gobject_class->set_property = gst_av_tensor_sink_set_property;
  gobject_class->get_property = gst_av_tensor_sink_get_property;

  /**
   * GstAvTensorSink:location:
   *
   * The file to write: a name ending in .npy gets the tensor frames only,
   * a name ending in .npz an archive with the frames, their timestamps and
   * durations and the attention maps that ride on the buffers. The file
   * appears when the stream ends or the element stops. Applied at the next
   * start.
   */
  g_object_class_install_property (gobject_class, PROP_LOCATION,
      g_param_spec_string ("location", "File name",
          "The file to write. A name ending in .npy gets the tensor frames "
          "only; a name ending in .npz gets an archive with the frames, "
          "their timestamps and durations and the attention maps that ride "
          "on the buffers. The file appears when the stream ends or the "
          "pipeline stops.", NULL, GST_AV_PARAM_READY));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_set_static_metadata (element_class,
      "Tensor file sink (NumPy)", "Sink/File",
      "Writes a tensor stream of this plugin to a NumPy .npy or .npz file",
      "The avattention authors");

  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_av_tensor_sink_change_state);
  basesink_class->start = GST_DEBUG_FUNCPTR (gst_av_tensor_sink_start);
  basesink_class->stop = GST_DEBUG_FUNCPTR (gst_av_tensor_sink_stop);
  basesink_class->set_caps = GST_DEBUG_FUNCPTR (gst_av_tensor_sink_set_caps);
  basesink_class->event = GST_DEBUG_FUNCPTR (gst_av_tensor_sink_event);
  basesink_class->render = GST_DEBUG_FUNCPTR (gst_av_tensor_sink_render);

  GST_DEBUG_CATEGORY_INIT (gst_av_tensor_sink_debug, "avtensorsink", 0,
      "NumPy tensor file sink");
}

static void
gst_av_tensor_sink_init (GstAvTensorSink * self)
{
  /* a file sink: write as fast as data comes */
  gst_base_sink_set_sync (GST_BASE_SINK (self), FALSE);
}

static void
gst_av_tensor_sink_finalize (GObject * object)
{
  GstAvTensorSink *self = GST_AV_TENSOR_SINK (object);

  g_free (self->location);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_av_tensor_sink_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstAvTensorSink *self = GST_AV_TENSOR_SINK (object);

  if (!gst_av_property_can_change (GST_ELEMENT (self), pspec))
    return;
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LOCATION:
      g_free (self->location);
      self->location = g_value_dup_string (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_av_tensor_sink_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstAvTensorSink *self = GST_AV_TENSOR_SINK (object);

  switch (prop_id) {
    case PROP_LOCATION:
      GST_OBJECT_LOCK (self);
      g_value_set_string (value, self->location);
      GST_OBJECT_UNLOCK (self);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

/* ---- set-up and teardown ----------------------------------------------- */

static void
free_stream (GstAvTensorSink * self)
{
  for (guint i = 0; i < GST_AV_TENSOR_SINK_MAX_ARRAYS; i++) {
    gst_av_npy_array_free (self->arrays[i]);
    self->arrays[i] = NULL;
  }
  self->n_arrays = 0;
  g_clear_pointer (&self->mask_frame, g_free);
  g_clear_pointer (&self->path, g_free);
  self->have_info = FALSE;
  memset (&self->info, 0, sizeof self->info);
  self->n_frames = 0;
  self->dirty = FALSE;
  self->broken = FALSE;
  self->have_attention = FALSE;
  self->n_layers = self->n_heads = self->n_audio_slots = self->n_patches = 0;
}

/* The error for a failed write of the file or of its temporary arrays:
 * RESOURCE/NO_SPACE_LEFT for a full disk, a file size limit or a quota,
 * else RESOURCE/WRITE; the text names the location.  Takes @err. */
static void
post_write_error (GstAvTensorSink * self, GError * err, const gchar * when)
{
  if (g_error_matches (err, G_FILE_ERROR, G_FILE_ERROR_NOSPC))
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("Not enough space to write \"%s\" (%s); the file was not "
            "written.", self->path, err->message), ("%s", when));
  else
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
        ("Could not write \"%s\" (%s); the file was not written.",
            self->path, err->message), ("%s", when));
  g_error_free (err);
  self->broken = TRUE;
}

static gboolean
add_array (GstAvTensorSink * self, const gchar * name, GstAvNpyDtype dtype,
    guint ndim, const guint64 * shape)
{
  GError *err = NULL;
  gchar *dir;
  GstAvNpyArray *a;

  if (self->n_arrays >= GST_AV_TENSOR_SINK_MAX_ARRAYS) {
    /* cannot happen with the arrays this element writes; no abort anyway */
    GST_ELEMENT_ERROR (self, CORE, FAILED,
        ("Cannot write \"%s\": more than %d arrays", self->path,
            GST_AV_TENSOR_SINK_MAX_ARRAYS), ("array \"%s\"", name));
    return FALSE;
  }
  dir = g_path_get_dirname (self->path);
  a = gst_av_npy_array_new (name, dtype, dir, &err);

  if (a != NULL && !gst_av_npy_array_set_frame_shape (a, ndim, shape, &err)) {
    gst_av_npy_array_free (a);
    a = NULL;
  }
  if (a == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_WRITE,
        ("Cannot write \"%s\": %s", self->path, err->message),
        ("preparing array \"%s\"", name));
    g_clear_error (&err);
    g_free (dir);
    return FALSE;
  }
  g_free (dir);
  self->arrays[self->n_arrays++] = a;
  return TRUE;
}

/* Opens a stream for the current location: the arrays and their
 * temporary files.  GstBaseSink starts at NULL->READY; a run after
 * PAUSED->READY opens again (see change_state) so that every run writes a
 * fresh file at the location set then. */
static gboolean
open_stream (GstAvTensorSink * self)
{
  gchar *location;

  free_stream (self);
  GST_OBJECT_LOCK (self);
  location = g_strdup (self->location);
  GST_OBJECT_UNLOCK (self);

  if (location == NULL || *location == '\0') {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("No file name given: set \"location\" to a path ending in .npy or "
            ".npz."), (NULL));
    g_free (location);
    return FALSE;
  }
  if (g_str_has_suffix (location, ".npz")) {
    self->npz = TRUE;
  } else if (g_str_has_suffix (location, ".npy")) {
    self->npz = FALSE;
  } else {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("The file name \"%s\" must end in .npy (the tensor frames) or "
            ".npz (frames, timestamps and attention maps).", location),
        (NULL));
    g_free (location);
    return FALSE;
  }
  self->path = location;

  /* the data array's frame shape comes with the caps; its temporary file
   * is made now so that an unwritable directory fails at start */
  if (!add_array (self, "data", GST_AV_NPY_FLOAT32, 0, NULL))
    goto fail;
  if (self->npz && (!add_array (self, "pts", GST_AV_NPY_INT64, 0, NULL)
          || !add_array (self, "duration", GST_AV_NPY_INT64, 0, NULL)))
    goto fail;
  GST_INFO_OBJECT (self, "writing %s", self->path);
  return TRUE;

fail:
  free_stream (self);
  return FALSE;
}

static gboolean
save (GstAvTensorSink * self)
{
  GError *err = NULL;
  gboolean ok;

  GST_INFO_OBJECT (self, "writing %" G_GUINT64_FORMAT " frames to %s",
      self->n_frames, self->path);
  if (self->npz)
    ok = gst_av_npz_save (self->path, self->arrays, self->n_arrays,
        GST_AV_NPZ_FLAGS_NONE, &err);
  else
    ok = gst_av_npy_save (self->path, self->arrays[GST_AV_TENSOR_SINK_DATA],
        &err);
  if (!ok) {
    gchar *when = g_strdup_printf ("writing %" G_GUINT64_FORMAT " frames",
        self->n_frames);
    post_write_error (self, err, when);
    g_free (when);
    return FALSE;
  }
  self->dirty = FALSE;
  return TRUE;
}

/* Ends a stream: what was received and not yet written (stopped before
 * end-of-stream) is kept. */
static void
close_stream (GstAvTensorSink * self)
{
  if (self->path != NULL && self->dirty && !self->broken) {
    GST_INFO_OBJECT (self, "stopped before end-of-stream");
    save (self);
  }
  free_stream (self);
}

static gboolean
gst_av_tensor_sink_start (GstBaseSink * bsink)
{
  return open_stream (GST_AV_TENSOR_SINK (bsink));
}

static gboolean
gst_av_tensor_sink_stop (GstBaseSink * bsink)
{
  close_stream (GST_AV_TENSOR_SINK (bsink));
  return TRUE;
}

static GstStateChangeReturn
gst_av_tensor_sink_change_state (GstElement * element,
    GstStateChange transition)
{
  GstAvTensorSink *self = GST_AV_TENSOR_SINK (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    gboolean same;

    /* a new run: after PAUSED->READY the stream is closed; a location
     * changed in READY applies now */
    GST_OBJECT_LOCK (self);
    same = self->path != NULL && g_strcmp0 (self->path, self->location) == 0;
    GST_OBJECT_UNLOCK (self);
    if (!same) {
      close_stream (self);
      if (!open_stream (self))
        return GST_STATE_CHANGE_FAILURE;
    }
  }
  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY)
    close_stream (self);
  return ret;
}

/* ---- caps -------------------------------------------------------------- */

static gchar *
shape_string (const GstAvTensorInfo * info)
{
  if (info->ndim == 2)
    return g_strdup_printf ("[%u, %u]", info->shape[0], info->shape[1]);
  return g_strdup_printf ("[%u]", info->shape[0]);
}

static gboolean
gst_av_tensor_sink_set_caps (GstBaseSink * bsink, GstCaps * caps)
{
  GstAvTensorSink *self = GST_AV_TENSOR_SINK (bsink);
  GstAvTensorInfo info;
  gchar *why = NULL;

  if (!gst_av_tensor_info_from_caps (&info, caps, &why)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Cannot write this tensor stream: %s.", why),
        ("caps %" GST_PTR_FORMAT, caps));
    g_free (why);
    return FALSE;
  }
  if (self->have_info) {
    if (info.ndim != self->info.ndim
        || memcmp (info.shape, self->info.shape, sizeof info.shape) != 0) {
      gchar *was = shape_string (&self->info), *now = shape_string (&info);
      GST_ELEMENT_ERROR (self, STREAM, FORMAT,
          ("The tensor frame shape changed from %s to %s in the middle of "
              "the stream; \"%s\" holds one shape.", was, now, self->path),
          ("caps %" GST_PTR_FORMAT, caps));
      g_free (was);
      g_free (now);
      return FALSE;
    }
  } else {
    guint64 shape[2] = { info.shape[0], info.shape[1] };
    GError *err = NULL;
    if (!gst_av_npy_array_set_frame_shape (self->arrays
            [GST_AV_TENSOR_SINK_DATA], info.ndim, shape, &err)) {
      GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("%s", err->message),
          ("caps %" GST_PTR_FORMAT, caps));
      g_clear_error (&err);
      return FALSE;
    }
    self->have_info = TRUE;
  }
  /* the frame rate may change: later timestamps use the new one */
  self->info = info;
  GST_DEBUG_OBJECT (self, "caps %" GST_PTR_FORMAT, caps);
  return TRUE;
}

/* ---- attention arrays -------------------------------------------------- */

static gboolean
write_error (GstAvTensorSink * self, GError * err)
{
  post_write_error (self, err, "while storing the arrays");
  return FALSE;
}

/* numpy's bool is one byte that holds 0 or 1 */
static const guint8 true_byte = 1, false_byte = 0;
static const gfloat nan_value = NAN;

/* Frames of "no attention here": NaN maps and an all-True mask (stored as
 * a count, written out in the final file). */
static gboolean
append_missing_attention (GstAvTensorSink * self, guint64 n_frames)
{
  GError *err = NULL;

  if (!gst_av_npy_array_append_fill (self->arrays
          [GST_AV_TENSOR_SINK_AUDIO_MASK], &true_byte, n_frames, &err)
      || !gst_av_npy_array_append_fill (self->arrays
          [GST_AV_TENSOR_SINK_SOUND_VISIBLE], &false_byte, n_frames, &err)
      || !gst_av_npy_array_append_fill (self->arrays
          [GST_AV_TENSOR_SINK_VISIBLE_THRESHOLD], &nan_value, n_frames,
          &err))
    return write_error (self, err);
  for (guint i = GST_AV_TENSOR_SINK_N_FIXED; i < self->n_arrays; i++)
    if (!gst_av_npy_array_append_fill (self->arrays[i], &nan_value,
            n_frames, &err))
      return write_error (self, err);
  return TRUE;
}

static gboolean
setup_attention (GstAvTensorSink * self, GstAvAttentionMeta * meta)
{
  gchar name[64];

  self->n_layers = meta->n_layers;
  self->n_heads = meta->n_heads;
  self->n_audio_slots = meta->n_audio_slots;
  self->n_patches = meta->n_patches;
  GST_INFO_OBJECT (self, "attention: %u layers, %u heads stored, T=%u, N=%u",
      self->n_layers, self->n_heads, self->n_audio_slots, self->n_patches);

  {
    guint64 shape[1] = { self->n_audio_slots };
    if (!add_array (self, "audio_mask", GST_AV_NPY_BOOL, 1, shape)
        || !add_array (self, "sound_visible", GST_AV_NPY_BOOL, 0, NULL)
        || !add_array (self, "visible_threshold", GST_AV_NPY_FLOAT32, 0,
            NULL))
      return FALSE;
  }
  for (guint l = 0; l < self->n_layers; l++) {
    for (guint m = 0; m < GST_AV_ATTENTION_N_MODULES; m++) {
      guint64 shape[3];
      gint tq, tk;
      guint nd = 0;

      /* T, N <= 2^24 (gst_av_attention_meta_data_size) */
      avf_module_dims ((AvfModule) m, (gint) self->n_audio_slots,
          (gint) self->n_patches, &tq, &tk);
      if (self->n_heads > 1)
        shape[nd++] = self->n_heads;
      shape[nd++] = tq;
      shape[nd++] = tk;
      g_snprintf (name, sizeof name, "layers.%u.%s", l,
          gst_av_attention_module_name ((GstAvAttentionModule) m));
      if (!add_array (self, name, GST_AV_NPY_FLOAT32, nd, shape))
        return FALSE;
    }
  }
  self->mask_frame = g_malloc (MAX (self->n_audio_slots, 1));
  self->have_attention = TRUE;

  /* frames before the first meta had no attention */
  return append_missing_attention (self, self->n_frames);
}

/* FALSE (after an error) when @meta does not fit the arrays of the file. */
static gboolean
check_attention (GstAvTensorSink * self, GstAvAttentionMeta * meta)
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
      || meta->n_patches != self->n_patches) {
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

/* @n_frames frames that all carry @meta: each map stored once. */
static gboolean
append_attention (GstAvTensorSink * self, GstAvAttentionMeta * meta,
    guint64 n_frames)
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
    return write_error (self, err);
  for (guint l = 0; l < self->n_layers; l++) {
    for (guint m = 0; m < GST_AV_ATTENTION_N_MODULES; m++, i++) {
      GstAvAttentionModule module = (GstAvAttentionModule) m;
      gboolean ok;
      if (gst_av_attention_meta_is_skipped (meta, l, module)) {
        ok = gst_av_npy_array_append_fill (self->arrays[i], &nan_value,
            n_frames, &err);
      } else {
        const gfloat *w = gst_av_attention_meta_get_weights (meta, l,
            module, NULL, NULL, NULL);
        ok = gst_av_npy_array_append_repeat (self->arrays[i], w, n_frames,
            &err);
      }
      if (!ok)
        return write_error (self, err);
    }
  }
  return TRUE;
}

/* pts and duration of each frame, nanoseconds, -1 when unknown */
static gboolean
append_times (GstAvTensorSink * self, GstBuffer * buffer, guint64 n_frames)
{
  const GstClockTime pts = GST_BUFFER_PTS (buffer);
  const GstClockTime dur = GST_BUFFER_DURATION (buffer);
  GError *err = NULL;

  for (guint64 i = 0; i < n_frames; i++) {
    GstClockTime p = gst_av_tensor_frame_pts (&self->info, pts, i);
    gint64 p64 = GST_CLOCK_TIME_IS_VALID (p) ? (gint64) p : -1;
    gint64 d64 = -1;

    if (GST_CLOCK_TIME_IS_VALID (dur)) {
      /* the buffer's duration split evenly, summing exactly to it */
      d64 = gst_util_uint64_scale (dur, i + 1, n_frames)
          - gst_util_uint64_scale (dur, i, n_frames);
    } else if (self->info.fps_n > 0) {
      d64 = gst_av_tensor_frame_pts (&self->info, 0, i + 1)
          - gst_av_tensor_frame_pts (&self->info, 0, i);
    }
    if (!gst_av_npy_array_append (self->arrays[GST_AV_TENSOR_SINK_PTS], &p64,
            1, &err)
        || !gst_av_npy_array_append (self->arrays
            [GST_AV_TENSOR_SINK_DURATION], &d64, 1, &err))
      return write_error (self, err);
  }
  return TRUE;
}

static GstFlowReturn
gst_av_tensor_sink_render (GstBaseSink * bsink, GstBuffer * buffer)
{
  GstAvTensorSink *self = GST_AV_TENSOR_SINK (bsink);
  GstAvNpyArray *data = self->arrays[GST_AV_TENSOR_SINK_DATA];
  GstAvAttentionMeta *meta = NULL;
  GstMapInfo map;
  gsize frame_bytes;
  guint64 n_frames;
  GError *err = NULL;
  gboolean ok = TRUE;

  if (self->broken)
    return GST_FLOW_ERROR;
  if (!self->have_info) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Received tensor data before its caps; cannot tell the frame "
            "shape."), (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  frame_bytes = gst_av_npy_array_get_frame_bytes (data);
  if (!gst_buffer_map (buffer, &map, GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ,
        ("Could not read a tensor buffer of %" G_GSIZE_FORMAT " bytes.",
            gst_buffer_get_size (buffer)), (NULL));
    return GST_FLOW_ERROR;
  }
  if (frame_bytes == 0 || map.size % frame_bytes != 0) {
    gchar *shape = shape_string (&self->info);
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("A tensor buffer of %" G_GSIZE_FORMAT " bytes does not hold whole "
            "frames: a frame of shape %s is %" G_GSIZE_FORMAT " bytes of "
            "float32.", map.size, shape, frame_bytes), (NULL));
    g_free (shape);
    gst_buffer_unmap (buffer, &map);
    return GST_FLOW_ERROR;
  }
  n_frames = map.size / frame_bytes;
  if (n_frames == 0) {
    gst_buffer_unmap (buffer, &map);
    return GST_FLOW_OK;
  }

  /* check everything before appending, so that every array always holds
   * the same frames */
  if (self->npz) {
    meta = gst_buffer_get_av_attention_meta (buffer);
    if (meta != NULL && !check_attention (self, meta)) {
      gst_buffer_unmap (buffer, &map);
      return GST_FLOW_ERROR;
    }
  }

  if (!gst_av_npy_array_append (data, map.data, n_frames, &err))
    ok = write_error (self, err);
  gst_buffer_unmap (buffer, &map);
  if (ok && self->npz)
    ok = append_times (self, buffer, n_frames);
  if (ok && self->have_attention)
    ok = meta ? append_attention (self, meta, n_frames)
        : append_missing_attention (self, n_frames);
  if (!ok)
    return GST_FLOW_ERROR;

  self->n_frames += n_frames;
  self->dirty = TRUE;
  GST_LOG_OBJECT (self, "%" G_GUINT64_FORMAT " frames, %" G_GUINT64_FORMAT
      " in all", n_frames, self->n_frames);
  return GST_FLOW_OK;
}

static gboolean
gst_av_tensor_sink_event (GstBaseSink * bsink, GstEvent * event)
{
  GstAvTensorSink *self = GST_AV_TENSOR_SINK (bsink);

  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS) {
    /* the file is complete before the EOS message reaches the bus */
    if (self->broken || !save (self)) {
      gst_event_unref (event);
      return FALSE;
    }
  }
  return GST_BASE_SINK_CLASS (parent_class)->event (bsink, event);
}
