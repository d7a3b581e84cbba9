/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/**
 * SECTION:element-avtensorsink
 * @title: avtensorsink
 * @short_description: writes tensor streams to NumPy .npy or .npz files
 * @see_also: avspectrogram, avpatchembed, avattention
 *
 * avtensorsink writes any tensor stream of this plugin (spectrogram frames,
 * patch embeddings, fused vectors) to a NumPy file that numpy.load opens:
 *
 * - location=X.npy: the frames, float32 [frames, ...frame shape];
 * - location=X.npz: an archive with "data" (as above), "pts",
 *   "stream_time" and "duration" (int64 [frames], nanoseconds, -1 when
 *   unknown; "stream_time" is each frame's pts through the stream's
 *   segment, gst_segment_to_stream_time(): the time a truth file gives,
 *   which differs from the pts where a container starts the segment later,
 *   as mp4mux does for H.264 with B-frames; -1 too for a segment not in
 *   time or a pts outside it) and, when the buffers carry
 *   GstAvAttentionMeta, "audio_mask" (bool [frames, T], True = slot
 *   without audio), "sound_visible" (bool [frames]: a visible object
 *   sounds, gst_av_attention_meta_get_sound_visible()), "visible_threshold"
 *   (float32 [frames], the model's threshold, 0 = unknown) and, after
 *   them, what #GstAvTensorSink:maps asks for:
 *   - maps=summary (the default): "reused" (bool [frames], the maps are an
 *     earlier frame's, GstAvAttentionMeta.reused), "strongest_column",
 *     "strongest_row" (int32 [frames], -1 without audio) and
 *     "strongest_weight" (float32 [frames], NaN without audio): the patch
 *     of gst_av_attention_meta_get_strongest_patch() on the last layer;
 *     "grid_shape" (int32 [2]: rows, columns of the patch grid), "model"
 *     (a byte string: the weights file of the upstream avattention, or
 *     "seeded:" and its #GstAvAttention:seed), and "patch_weights"
 *     (float32 [frames, N]: the last layer's audio-cross map averaged
 *     over heads and over the audio slots that hold audio, as
 *     avattnoverlay draws it before normalising; NaN without audio);
 *   - maps=none: the same without "patch_weights";
 *   - maps=all: one "layers.{i}.{module}" map per layer and module:
 *     float32 [frames, Tq, Tk] (head mean) or [frames, H, Tq, Tk] (per
 *     head), the layout of the versions before maps= (byte for byte).
 *
 * Patch embeddings of avfusion-v2 weights are written as their [N, E]
 * tensors; the rhythm rows their buffers carry in a GstAvRhythmMeta are not
 * written (read them from the buffers, gst_buffer_get_av_rhythm_meta()).
 *
 * dtype=float16 stores the maps ("patch_weights", "layers.*") as float16;
 * compress=true deflates every member, as numpy.savez_compressed does.
 *
 * The first buffer with the meta fixes the layers, heads, audio slots and
 * patches; frames before it, frames without the meta and skipped modules
 * get NaN maps and an all-True mask (sound_visible False,
 * visible_threshold NaN).  A meta describes its whole buffer, so a buffer
 * of several frames repeats it for each frame.
 *
 * While the stream runs every array grows in its own temporary file
 * beside the location, made without a name (O_TMPFILE; where the file
 * system cannot, named and unlinked at once), each map it receives stored once, so memory
 * stays bounded.  The file is written at end-of-stream, or when the
 * element stops without it, to a hidden temporary name beside the
 * location (".NAME-XXXXXX.tmp", NAME the location's file name), flushed
 * to disk and renamed over it when complete: a full disk, a file size limit or a quota posts
 * RESOURCE/NO_SPACE_LEFT, another write error RESOURCE/WRITE, both naming
 * the location, and nothing is left under that name (a file already there
 * stays as it was).  The maps=all layout spells every frame out, so a
 * stream of many frames per buffer, or of many frames before the first
 * meta, makes a file much larger than what it received.
 *
 * ## Rolling files
 *
 * With #GstAvTensorSink:max-size-time or #GstAvTensorSink:max-size-bytes
 * set, the stream goes into a series of files, as with splitmuxsink:
 * location holds one integer conversion ("features-\%05d.npz"), numbered
 * from 0.  A buffer whose timestamp is max-size-time or more after the
 * first frame of the current file, or that would take the current file
 * past max-size-bytes (its uncompressed size), closes that file and starts
 * the next one; buffers are never split, so a file holds at least one.
 * Each file is complete on its own (its patch grid and model, all its
 * arrays of the same frames) and is renamed into place when written, so a
 * crash or a power cut loses at most the file being written; its
 * temporary arrays are unlinked files that vanish with the process (a
 * kill in the middle of the final write may leave a hidden
 * ".NAME-XXXXXX.tmp", never a partial file under a final name).  Memory
 * and temporary disk hold one file's worth at most.
 *
 * Every finished file, rolling or not, posts an element message
 * "file-closed" with "location" (string), "index" (uint, the file's
 * number), "frames" (guint64, its frames), "first-frame" (guint64, frames
 * of the stream before it), "start-pts" and "end-pts" (guint64, the pts of
 * its first frame and pts + duration of its last, GST_CLOCK_TIME_NONE when
 * unknown).
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 audiotestsrc num-buffers=50 ! audioconvert ! audioresample ! avspectrogram ! avtensorsink location=mel.npy
 * ]| writes the log-mel frames of a sine to mel.npy.
 * |[
 * gst-launch-1.0 audiotestsrc is-live=true ! audioconvert ! audioresample ! avspectrogram ! avtensorsink location=mel-%05d.npz max-size-time=60000000000
 * ]| writes a minute of log-mel frames per file: mel-00000.npz, mel-00001.npz, ...
 */

/* The NumPy writer is elements/npy.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstavtensorsink.h"
#include "gstavtensorsinkpriv.h"
#include "gstavelements.h"
#include "gstavproperty.h"

#include <string.h>

GST_DEBUG_CATEGORY (gst_av_tensor_sink_debug);
#define GST_CAT_DEFAULT gst_av_tensor_sink_debug

enum
{
  PROP_0,
  PROP_LOCATION,
  PROP_MAPS,
  PROP_COMPRESS,
  PROP_DTYPE,
  PROP_MAX_SIZE_TIME,
  PROP_MAX_SIZE_BYTES
};

#define DEFAULT_MAPS GST_AV_TENSOR_SINK_MAPS_SUMMARY
#define DEFAULT_DTYPE GST_AV_TENSOR_SINK_DTYPE_FLOAT32

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

/* The properties, each with its documentation: the blurbs are short (what
 * gst-inspect-1.0 shows), the gtk-doc comments say everything. */
static void
gst_av_tensor_sink_install_properties (GObjectClass * gobject_class)
{
  /**
   * GstAvTensorSink:location:
   *
   * The file to write: a name ending in .npy gets the tensor frames only,
   * a name ending in .npz an archive with the frames, their timestamps and
   * durations and the attention maps that ride on the buffers. The file
   * appears when the stream ends or the element stops. With rolling files
   * (#GstAvTensorSink:max-size-time, #GstAvTensorSink:max-size-bytes) the
   * name holds one integer conversion, "\%d" or "\%05d", that becomes the
   * file's number, counted from 0; without, a name with such a conversion
   * gets 0. Applied at the next start.
   */
  g_object_class_install_property (gobject_class, PROP_LOCATION,
      g_param_spec_string ("location", "File name",
          "The file to write: .npy (the tensor frames) or .npz (an archive "
          "with their times and attention maps)", NULL, GST_AV_PARAM_READY));

  /**
   * GstAvTensorSink:maps:
   *
   * What an .npz keeps of the attention maps: summary (the default) the
   * last layer's audio-cross weight of each patch ("patch_weights"
   * [frames, N]) and the strongest patch, per frame; all every map of
   * every frame ("layers.{i}.{module}", large: about 0.35 MB per frame and
   * layer at 224x224 and a 1 s window); none no map (the strongest patch
   * stays). Applied at the next start.
   */
  g_object_class_install_property (gobject_class, PROP_MAPS,
      g_param_spec_enum ("maps", "Attention maps",
          "What an .npz keeps of the attention maps",
          GST_TYPE_AV_TENSOR_SINK_MAPS, DEFAULT_MAPS, GST_AV_PARAM_READY));

  /**
   * GstAvTensorSink:compress:
   *
   * Deflate the members of the .npz, as numpy.savez_compressed does
   * (numpy.load reads it the same way). Slower to write; a .npy is never
   * compressed. Applied at the next start.
   */
  g_object_class_install_property (gobject_class, PROP_COMPRESS,
      g_param_spec_boolean ("compress", "Compress",
          "Deflate the members of the .npz, as numpy.savez_compressed does",
          FALSE, GST_AV_PARAM_READY));

  /**
   * GstAvTensorSink:dtype:
   *
   * The data type of the attention maps in an .npz ("patch_weights",
   * "layers.*"): float32, or float16 for half the bytes (about 3
   * significant digits). The other arrays keep their types. Applied at the
   * next start.
   */
  g_object_class_install_property (gobject_class, PROP_DTYPE,
      g_param_spec_enum ("dtype", "Maps data type",
          "The data type of the attention maps in an .npz",
          GST_TYPE_AV_TENSOR_SINK_DTYPE, DEFAULT_DTYPE, GST_AV_PARAM_READY));

  /**
   * GstAvTensorSink:max-size-time:
   *
   * Rolling files: start a new file with the first buffer whose timestamp
   * is this many nanoseconds or more after the first frame of the current
   * file. 0 (the default) for no limit; with a limit
   * #GstAvTensorSink:location must hold "\%d" or "\%05d". Applied at the next
   * start.
   */
  g_object_class_install_property (gobject_class, PROP_MAX_SIZE_TIME,
      g_param_spec_uint64 ("max-size-time", "Maximum time per file",
          "Rolling files: nanoseconds of stream per file (0: no limit)",
          0, G_MAXUINT64, 0, GST_AV_PARAM_READY));

  /**
   * GstAvTensorSink:max-size-bytes:
   *
   * Rolling files: start a new file before a buffer that would take the
   * current file past this many bytes (uncompressed, headers counted a
   * little generously), unless the file is still empty. 0 (the default)
   * for no limit; with a limit #GstAvTensorSink:location must hold "\%d"
   * or "\%05d". Applied at the next start.
   */
  g_object_class_install_property (gobject_class, PROP_MAX_SIZE_BYTES,
      g_param_spec_uint64 ("max-size-bytes", "Maximum bytes per file",
          "Rolling files: uncompressed bytes per file (0: no limit)",
          0, G_MAXUINT64, 0, GST_AV_PARAM_READY));
}

static void
gst_av_tensor_sink_class_init (GstAvTensorSinkClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSinkClass *basesink_class = GST_BASE_SINK_CLASS (klass);

  gobject_class->finalize = gst_av_tensor_sink_finalize;
  gobject_class->set_property = gst_av_tensor_sink_set_property;
  gobject_class->get_property = gst_av_tensor_sink_get_property;

  gst_av_tensor_sink_install_properties (gobject_class);

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
  gst_type_mark_as_plugin_api (GST_TYPE_AV_TENSOR_SINK_MAPS, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_AV_TENSOR_SINK_DTYPE, 0);
}

static void
gst_av_tensor_sink_init (GstAvTensorSink * self)
{
  /* a file sink: write as fast as data comes */
  gst_base_sink_set_sync (GST_BASE_SINK (self), FALSE);
  self->maps = DEFAULT_MAPS;
  self->dtype = DEFAULT_DTYPE;
}

static void
gst_av_tensor_sink_finalize (GObject * object)
{
  GstAvTensorSink *self = GST_AV_TENSOR_SINK (object);

  g_free (self->location);
  g_free (self->location_run);
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
    case PROP_MAPS:
      self->maps = g_value_get_enum (value);
      break;
    case PROP_COMPRESS:
      self->compress = g_value_get_boolean (value);
      break;
    case PROP_DTYPE:
      self->dtype = g_value_get_enum (value);
      break;
    case PROP_MAX_SIZE_TIME:
      self->max_size_time = g_value_get_uint64 (value);
      break;
    case PROP_MAX_SIZE_BYTES:
      self->max_size_bytes = g_value_get_uint64 (value);
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

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LOCATION:
      g_value_set_string (value, self->location);
      break;
    case PROP_MAPS:
      g_value_set_enum (value, self->maps);
      break;
    case PROP_COMPRESS:
      g_value_set_boolean (value, self->compress);
      break;
    case PROP_DTYPE:
      g_value_set_enum (value, self->dtype);
      break;
    case PROP_MAX_SIZE_TIME:
      g_value_set_uint64 (value, self->max_size_time);
      break;
    case PROP_MAX_SIZE_BYTES:
      g_value_set_uint64 (value, self->max_size_bytes);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* ---- set-up and teardown ----------------------------------------------- */

/* Frees the arrays of the file being written. */
static void
free_file (GstAvTensorSink * self)
{
  for (guint i = 0; i < GST_AV_TENSOR_SINK_MAX_ARRAYS; i++) {
    gst_av_npy_array_free (self->arrays[i]);
    self->arrays[i] = NULL;
  }
  self->n_arrays = 0;
  g_clear_pointer (&self->path, g_free);
  self->n_frames = 0;
  self->dirty = FALSE;
  self->file_start = self->file_end = GST_CLOCK_TIME_NONE;
}

static void
free_stream (GstAvTensorSink * self)
{
  free_file (self);
  g_clear_pointer (&self->mask_frame, g_free);
  g_clear_pointer (&self->patch_frame, g_free);
  g_clear_pointer (&self->half, g_free);
  g_clear_pointer (&self->model, g_free);
  g_clear_pointer (&self->location_run, g_free);
  self->have_info = FALSE;
  memset (&self->info, 0, sizeof self->info);
  self->broken = FALSE;
  self->have_attention = FALSE;
  self->n_layers = self->n_heads = self->n_audio_slots = self->n_patches = 0;
  self->grid_columns = self->grid_rows = 0;
  self->file_index = 0;
  self->file_first_frame = 0;
}

/* The error for a failed write of the file or of its temporary arrays:
 * RESOURCE/NO_SPACE_LEFT for a full disk, a file size limit or a quota,
 * else RESOURCE/WRITE; the text names the location.  Takes @err. */
void
gst_av_tensor_sink_post_write_error (GstAvTensorSink * self, GError * err,
    const gchar * when)
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

GstAvNpyArray *
gst_av_tensor_sink_add_array (GstAvTensorSink * self, const gchar * name,
    GstAvNpyDtype dtype, guint ndim, const guint64 * shape)
{
  GError *err = NULL;
  gchar *dir;
  GstAvNpyArray *a;

  if (self->n_arrays >= GST_AV_TENSOR_SINK_MAX_ARRAYS) {
    /* cannot happen with the arrays this element writes; no abort anyway */
    GST_ELEMENT_ERROR (self, CORE, FAILED,
        ("Cannot write \"%s\": more than %d arrays", self->path,
            GST_AV_TENSOR_SINK_MAX_ARRAYS), ("array \"%s\"", name));
    return NULL;
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
    return NULL;
  }
  g_free (dir);
  self->arrays[self->n_arrays++] = a;
  return a;
}

gboolean
gst_av_tensor_sink_write_error (GstAvTensorSink * self, GError * err)
{
  gst_av_tensor_sink_post_write_error (self, err, "while storing the arrays");
  return FALSE;
}

/* The integer conversion of a rolling location: "%d", "%i", "%u", with an
 * optional 0 flag and width ("%05d"); "%%" is a percent sign.  Returns how
 * many conversions @t holds, -1 when a '%' starts anything else. */
static gint
template_conversions (const gchar * t)
{
  gint n = 0;

  for (const gchar * c = t; *c; c++) {
    if (*c != '%')
      continue;
    c++;
    if (*c == '%')
      continue;
    while (g_ascii_isdigit (*c))
      c++;
    if (*c != 'd' && *c != 'i' && *c != 'u')
      return -1;
    n++;
  }
  return n;
}

/* @t with its one conversion replaced by @index (see above). */
static gchar *
template_format (const gchar * t, guint index)
{
  GString *out = g_string_new (NULL);

  for (const gchar * c = t; *c; c++) {
    gboolean zero;
    guint width = 0;

    if (*c != '%') {
      g_string_append_c (out, *c);
      continue;
    }
    c++;
    if (*c == '%') {
      g_string_append_c (out, '%');
      continue;
    }
    zero = *c == '0';
    while (g_ascii_isdigit (*c))
      width = MIN (width * 10 + (guint) (*c++ - '0'), 64u);
    g_string_append_printf (out, zero ? "%0*u" : "%*u", (int) width, index);
  }
  return g_string_free (out, FALSE);
}

/* Opens the next file of the stream: its path, its arrays and their
 * temporary files (so that an unwritable folder fails now). */
static gboolean
open_file (GstAvTensorSink * self)
{
  free_file (self);
  if (template_conversions (self->location_run) == 1)
    self->path = template_format (self->location_run, self->file_index);
  else
    self->path = g_strdup (self->location_run);

  if (!gst_av_tensor_sink_add_array (self, "data", GST_AV_NPY_FLOAT32, 0,
          NULL))
    return FALSE;
  if (self->npz
      && (!gst_av_tensor_sink_add_array (self, "pts", GST_AV_NPY_INT64, 0,
              NULL)
          || !gst_av_tensor_sink_add_array (self, "stream_time",
              GST_AV_NPY_INT64, 0, NULL)
          || !gst_av_tensor_sink_add_array (self, "duration",
              GST_AV_NPY_INT64, 0, NULL)))
    return FALSE;
  if (self->have_info) {
    guint64 shape[2] = { self->info.shape[0], self->info.shape[1] };
    GError *err = NULL;
    if (!gst_av_npy_array_set_frame_shape (self->arrays
            [GST_AV_TENSOR_SINK_DATA], self->info.ndim, shape, &err)) {
      GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("%s", err->message), (NULL));
      g_clear_error (&err);
      return FALSE;
    }
  }
  /* a new file of a stream with attention has its arrays from the start */
  if (self->have_attention
      && !gst_av_tensor_sink_setup_attention_arrays (self))
    return FALSE;
  GST_INFO_OBJECT (self, "writing %s", self->path);
  return TRUE;
}

/* Opens a stream for the current properties.  GstBaseSink starts at
 * NULL->READY; a run after PAUSED->READY opens again (see change_state) so
 * that every run writes fresh files with the settings of then. */
static gboolean
open_stream (GstAvTensorSink * self)
{
  gchar *location;
  gint conversions;

  free_stream (self);
  GST_OBJECT_LOCK (self);
  location = g_strdup (self->location);
  self->run_maps = self->maps;
  self->run_dtype = self->dtype;
  self->run_compress = self->compress;
  self->run_max_time = self->max_size_time;
  self->run_max_bytes = self->max_size_bytes;
  GST_OBJECT_UNLOCK (self);
  self->rolling = self->run_max_time > 0 || self->run_max_bytes > 0;

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
  conversions = template_conversions (location);
  if (self->rolling && conversions != 1) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("With max-size-time or max-size-bytes the stream goes to several "
            "files: the file name \"%s\" must hold one number conversion, "
            "such as \"features-%%05d.npz\" (and \"%%%%\" for a percent "
            "sign).", location), (NULL));
    g_free (location);
    return FALSE;
  }
  self->location_run = location;
  if (!open_file (self)) {
    free_stream (self);
    return FALSE;
  }
  return TRUE;
}

/* Writes the file being written (a temporary name, renamed when complete)
 * and posts "file-closed". */
static gboolean
save (GstAvTensorSink * self)
{
  GError *err = NULL;
  GstStructure *s;
  gboolean ok;

  GST_INFO_OBJECT (self, "writing %" G_GUINT64_FORMAT " frames to %s",
      self->n_frames, self->path);
  if (self->npz)
    ok = gst_av_npz_save (self->path, self->arrays, self->n_arrays,
        self->run_compress ? GST_AV_NPZ_DEFLATE : GST_AV_NPZ_FLAGS_NONE,
        &err);
  else
    ok = gst_av_npy_save (self->path, self->arrays[GST_AV_TENSOR_SINK_DATA],
        &err);
  if (!ok) {
    gchar *when = g_strdup_printf ("writing %" G_GUINT64_FORMAT " frames",
        self->n_frames);
    gst_av_tensor_sink_post_write_error (self, err, when);
    g_free (when);
    return FALSE;
  }
  self->dirty = FALSE;
  s = gst_structure_new ("file-closed", "location", G_TYPE_STRING, self->path,
      "index", G_TYPE_UINT, self->file_index,
      "frames", G_TYPE_UINT64, self->n_frames,
      "first-frame", G_TYPE_UINT64, self->file_first_frame,
      "start-pts", G_TYPE_UINT64, self->file_start,
      "end-pts", G_TYPE_UINT64, self->file_end, NULL);
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), s));
  return TRUE;
}

/* Rolling files: writes the current file and opens the next one. */
static gboolean
next_file (GstAvTensorSink * self)
{
  if (!save (self))
    return FALSE;
  self->file_first_frame += self->n_frames;
  self->file_index++;
  return open_file (self);
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

/* TRUE when the open stream has the properties' settings. */
static gboolean
settings_unchanged (GstAvTensorSink * self)
{
  gboolean same;

  GST_OBJECT_LOCK (self);
  same = self->location_run != NULL
      && g_strcmp0 (self->location_run, self->location) == 0
      && self->run_maps == self->maps && self->run_dtype == self->dtype
      && self->run_compress == self->compress
      && self->run_max_time == self->max_size_time
      && self->run_max_bytes == self->max_size_bytes;
  GST_OBJECT_UNLOCK (self);
  return same;
}

static GstStateChangeReturn
gst_av_tensor_sink_change_state (GstElement * element,
    GstStateChange transition)
{
  GstAvTensorSink *self = GST_AV_TENSOR_SINK (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    /* a new run: after PAUSED->READY the stream is closed; settings
     * changed in READY apply now */
    if (!settings_unchanged (self)) {
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

/* The stream time of @pts through the sink's segment, -1 when unknown: no
 * pts, a segment not in time, or @pts outside it. */
static gint64
stream_time (GstAvTensorSink * self, GstClockTime pts)
{
  const GstSegment *segment = &GST_BASE_SINK (self)->segment;
  GstClockTime st;

  if (!GST_CLOCK_TIME_IS_VALID (pts) || segment->format != GST_FORMAT_TIME)
    return -1;
  st = gst_segment_to_stream_time (segment, GST_FORMAT_TIME, pts);
  return GST_CLOCK_TIME_IS_VALID (st) && st <= (guint64) G_MAXINT64
      ? (gint64) st : -1;
}

/* pts, stream time and duration of each frame, nanoseconds, -1 when
 * unknown; the file's first and end times */
static gboolean
append_times (GstAvTensorSink * self, GstBuffer * buffer, guint64 n_frames)
{
  const GstClockTime pts = GST_BUFFER_PTS (buffer);
  const GstClockTime dur = GST_BUFFER_DURATION (buffer);
  GError *err = NULL;

  for (guint64 i = 0; i < n_frames; i++) {
    GstClockTime p = gst_av_tensor_frame_pts (&self->info, pts, i);
    gint64 p64 = GST_CLOCK_TIME_IS_VALID (p) ? (gint64) p : -1;
    gint64 s64, d64 = -1;

    if (GST_CLOCK_TIME_IS_VALID (dur)) {
      /* the buffer's duration split evenly, summing exactly to it */
      d64 = gst_util_uint64_scale (dur, i + 1, n_frames)
          - gst_util_uint64_scale (dur, i, n_frames);
    } else if (self->info.fps_n > 0) {
      d64 = gst_av_tensor_frame_pts (&self->info, 0, i + 1)
          - gst_av_tensor_frame_pts (&self->info, 0, i);
    }
    if (self->n_frames == 0 && i == 0)
      self->file_start = p;
    /* unknown when either is, or when the end is past what a clock
     * time holds (a buffer may say it lasts almost forever) */
    self->file_end = (p64 >= 0 && d64 >= 0 && d64 <= G_MAXINT64 - p64)
        ? (GstClockTime) (p64 + d64) : GST_CLOCK_TIME_NONE;
    if (!self->npz)
      continue;
    s64 = stream_time (self, p);
    if (!gst_av_npy_array_append (self->arrays[GST_AV_TENSOR_SINK_PTS], &p64,
            1, &err)
        || !gst_av_npy_array_append (self->arrays
            [GST_AV_TENSOR_SINK_STREAM_TIME], &s64, 1, &err)
        || !gst_av_npy_array_append (self->arrays
            [GST_AV_TENSOR_SINK_DURATION], &d64, 1, &err))
      return gst_av_tensor_sink_write_error (self, err);
  }
  return TRUE;
}

#define ARRAY_OVERHEAD 320

/* Rolling files: does a buffer of @n_frames frames starting at @pts go to
 * a new file? */
static gboolean
need_next_file (GstAvTensorSink * self, GstClockTime pts, guint64 n_frames)
{
  if (!self->rolling || self->n_frames == 0)
    return FALSE;
  if (self->run_max_time > 0 && GST_CLOCK_TIME_IS_VALID (pts)
      && GST_CLOCK_TIME_IS_VALID (self->file_start)
      && pts >= self->file_start
      && pts - self->file_start >= self->run_max_time)
    return TRUE;
  if (self->run_max_bytes > 0) {
    /* the arrays' bytes and, per array, its .npy header and its two ZIP
     * headers (a little more than they take) */
    guint64 bytes = 22 + self->n_arrays * (guint64) ARRAY_OVERHEAD;
    guint64 per_frame = 0;
    for (guint i = 0; i < self->n_arrays; i++) {
      const guint64 fb = gst_av_npy_array_get_frame_bytes (self->arrays[i]);
      bytes += gst_av_npy_array_get_n_frames (self->arrays[i]) * fb;
      per_frame += fb;
    }
    if (bytes + n_frames * per_frame > self->run_max_bytes)
      return TRUE;
  }
  return FALSE;
}

static GstFlowReturn
gst_av_tensor_sink_render (GstBaseSink * bsink, GstBuffer * buffer)
{
  GstAvTensorSink *self = GST_AV_TENSOR_SINK (bsink);
  GstAvNpyArray *data;
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
  /* rolling files: the next file opens with the first buffer after an
   * end-of-stream */
  if (self->path == NULL && !open_file (self)) {
    self->broken = TRUE;
    return GST_FLOW_ERROR;
  }
  frame_bytes = gst_av_npy_array_get_frame_bytes (self->arrays
      [GST_AV_TENSOR_SINK_DATA]);
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
  if (need_next_file (self, GST_BUFFER_PTS (buffer), n_frames)
      && !next_file (self)) {
    self->broken = TRUE;
    gst_buffer_unmap (buffer, &map);
    return GST_FLOW_ERROR;
  }
  data = self->arrays[GST_AV_TENSOR_SINK_DATA];

  /* check everything before appending, so that every array always holds
   * the same frames */
  if (self->npz) {
    meta = gst_buffer_get_av_attention_meta (buffer);
    if (meta != NULL && !gst_av_tensor_sink_check_attention (self, meta)) {
      gst_buffer_unmap (buffer, &map);
      return GST_FLOW_ERROR;
    }
  }

  if (!gst_av_npy_array_append (data, map.data, n_frames, &err))
    ok = gst_av_tensor_sink_write_error (self, err);
  gst_buffer_unmap (buffer, &map);
  if (ok)
    ok = append_times (self, buffer, n_frames);
  if (ok && self->have_attention)
    ok = meta ? gst_av_tensor_sink_append_attention (self, meta, n_frames)
        : gst_av_tensor_sink_append_missing_attention (self, n_frames);
  if (!ok)
    return GST_FLOW_ERROR;

  self->n_frames += n_frames;
  self->dirty = TRUE;
  GST_LOG_OBJECT (self, "%" G_GUINT64_FORMAT " frames, %" G_GUINT64_FORMAT
      " in this file", n_frames, self->n_frames);
  return GST_FLOW_OK;
}

static gboolean
gst_av_tensor_sink_event (GstBaseSink * bsink, GstEvent * event)
{
  GstAvTensorSink *self = GST_AV_TENSOR_SINK (bsink);

  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS) {
    gboolean ok = !self->broken;

    /* the file is complete before the EOS message reaches the bus; a
     * rolling series starts a new file if data comes again (after a
     * flush), one file gets it all again */
    if (ok && self->path != NULL && (!self->rolling || self->n_frames > 0))
      ok = save (self);
    if (ok && self->rolling) {
      self->file_first_frame += self->n_frames;
      if (self->path != NULL && self->n_frames > 0)
        self->file_index++;
      free_file (self);
    }
    if (!ok) {
      gst_event_unref (event);
      return FALSE;
    }
  }
  return GST_BASE_SINK_CLASS (parent_class)->event (bsink, event);
}
