/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Parity through the whole pipeline: the .npz that a real GStreamer
 * pipeline writes equals the PyTorch reference of model/avfusion.py
 * (pipeline-fixture, tests/fixtures/pipeline_small.safetensors).
 *
 *   appsrc ! avspectrogram ! queue ! att.audio_sink
 *   appsrc ! avpatchembed ! queue ! att.video_sink
 *   avattention name=att ! avtensorsink location=X.npz
 *
 * The inputs are regenerated here exactly as the reference makes them: a
 * 440 Hz sine (libm sin in double, cast to float) plus core/prng.h noise,
 * and PRNG video bytes.  The stage tests run each front element alone into
 * avtensorsink, so that a difference in the full run points at one
 * element.  The written file is read back with tools/npzread.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>

#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>
#include "avf_check.h"

#include "npzread.h"
#include "prng.h"
#include "safetensors.h"

/* max abs error against the float64 reference, for every stage (the log-mel
 * frames of this noisy signal are never near ln(1e-6), where float32 would
 * lose digits) */
#define TOLERANCE 1e-4
/* How long one pipeline run may take before the test calls it stuck (two
 * runs fit in the 120 s test timeout). */
#define RUN_TIMEOUT (45 * GST_SECOND)

static const char *const MODULES[] = {
  "audio_self", "video_self", "audio_cross", "video_cross"
};

/* ---- the reference and the regenerated inputs -------------------------- */

typedef struct
{
  AvfSafetensors *st;
  gchar *weights;
  gint rate, n_fft, hop, n_mels;
  guint64 window_ns;
  guint T, n_layers;
  gint fps;
  guint width, height, n_frames;
  guint n_samples;
  guint64 audio_seed, video_seed;
  gdouble tone_hz, tone_amp, noise_bound;
  gfloat *audio;                /* (n_samples) */
  guint8 *video;                /* (n_frames, height, width, 3) */
} Reference;

static Reference ref;

static gint64
meta_int (const gchar * key)
{
  const char *v = avf_safetensors_metadata (ref.st, key);
  gchar *end = NULL;
  gint64 x;

  fail_unless (v != NULL, "pipeline_small.safetensors: no metadata %s", key);
  x = g_ascii_strtoll (v, &end, 10);
  fail_unless (end != v && *end == '\0', "metadata %s=%s is not an integer",
      key, v);
  return x;
}

static gdouble
meta_double (const gchar * key)
{
  const char *v = avf_safetensors_metadata (ref.st, key);
  gchar *end = NULL;
  gdouble x;

  fail_unless (v != NULL, "pipeline_small.safetensors: no metadata %s", key);
  x = g_ascii_strtod (v, &end);
  fail_unless (end != v && *end == '\0', "metadata %s=%s is not a number",
      key, v);
  return x;
}

/* A tensor of the reference with the expected dtype and shape. */
static const AvfTensorInfo *
ref_tensor (const gchar * name, AvfDtype dtype, int ndim, const guint64 * shape)
{
  const AvfTensorInfo *t = avf_safetensors_find (ref.st, name);

  fail_unless (t != NULL, "pipeline_small.safetensors has no tensor %s",
      name);
  fail_unless (t->dtype == dtype, "reference %s is %s, expected %s", name,
      avf_dtype_name (t->dtype), avf_dtype_name (dtype));
  fail_unless_equals_int (t->ndim, ndim);
  for (int d = 0; d < ndim; d++)
    fail_unless (t->shape[d] == shape[d],
        "reference %s: dimension %d is %" G_GUINT64_FORMAT ", expected %"
        G_GUINT64_FORMAT, name, d, (guint64) t->shape[d], shape[d]);
  return t;
}

/* Sample i: float(amp * sin(2 pi f i / rate)) + symmetric(seed, i, bound),
 * in exactly the operation order of avfusion.py pipeline_audio(). */
static void
make_audio (void)
{
  ref.audio = g_new (gfloat, ref.n_samples);
  avf_prng_fill_symmetric (ref.audio, ref.n_samples, ref.audio_seed, 0,
      (float) ref.noise_bound);
  for (guint i = 0; i < ref.n_samples; i++) {
    gdouble s = ref.tone_amp * sin (2.0 * G_PI * ref.tone_hz * (gdouble) i /
        (gdouble) ref.rate);
    ref.audio[i] = (gfloat) s + ref.audio[i];
  }
}

/* Byte k of frame f: u64(seed, f * frame_bytes + k) >> 56. */
static void
make_video (void)
{
  gsize n = (gsize) ref.n_frames * ref.width * ref.height * 3;

  ref.video = g_malloc (n);
  for (gsize k = 0; k < n; k++)
    ref.video[k] = (guint8) (avf_prng_u64 (ref.video_seed, k) >> 56);
}

static void
reference_setup (void)
{
  AvfError err;
  const gchar *dir = g_getenv ("AVF_FIXTURE_DIR");
  gchar *path;

  fail_unless (dir != NULL, "AVF_FIXTURE_DIR is not set");
  path = g_build_filename (dir, "pipeline_small.safetensors", NULL);
  memset (&ref, 0, sizeof ref);
  fail_unless (avf_safetensors_open (&ref.st, path, &err) == AVF_OK,
      "%s: %s", path, err.message);
  g_free (path);
  ref.weights = g_build_filename (dir, avf_safetensors_metadata (ref.st,
          "weights"), NULL);
  ref.rate = (gint) meta_int ("sample_rate");
  ref.n_fft = (gint) meta_int ("n_fft");
  ref.hop = (gint) meta_int ("hop");
  ref.n_mels = (gint) meta_int ("n_mels");
  ref.window_ns = (guint64) meta_int ("window_ns");
  ref.T = (guint) meta_int ("T");
  ref.fps = (gint) meta_int ("fps");
  ref.width = (guint) meta_int ("width");
  ref.height = (guint) meta_int ("height");
  ref.n_frames = (guint) meta_int ("frames");
  ref.n_samples = (guint) meta_int ("samples");
  ref.audio_seed = (guint64) meta_int ("audio_seed");
  ref.video_seed = (guint64) meta_int ("video_seed");
  ref.tone_hz = meta_double ("tone_hz");
  ref.tone_amp = meta_double ("tone_amp");
  ref.noise_bound = meta_double ("noise_bound");
  for (ref.n_layers = 0;; ref.n_layers++) {
    gchar *name = g_strdup_printf ("layers.%u.audio_self", ref.n_layers);
    gboolean found = avf_safetensors_find (ref.st, name) != NULL;
    g_free (name);
    if (!found)
      break;
  }
  fail_unless (ref.n_layers > 0, "the reference holds no attention maps");
  make_audio ();
  make_video ();
}

static void
reference_teardown (void)
{
  avf_safetensors_free (ref.st);
  g_free (ref.weights);
  g_free (ref.audio);
  g_free (ref.video);
  memset (&ref, 0, sizeof ref);
}

/* ---- running a pipeline ------------------------------------------------- */

static GstClockTime
audio_time (guint64 sample)
{
  return gst_util_uint64_scale (sample, GST_SECOND, ref.rate);
}

static GstClockTime
video_time (guint64 frame)
{
  return gst_util_uint64_scale (frame, GST_SECOND, ref.fps);
}

static void
setup_appsrc (GstElement * src, GstCaps * caps)
{
  g_object_set (src, "caps", caps, "format", GST_FORMAT_TIME, "is-live",
      FALSE, NULL);
  gst_caps_unref (caps);
}

static void
push (GstElement * src, GstBuffer * buf)
{
  GstFlowReturn flow = GST_FLOW_ERROR;

  g_signal_emit_by_name (src, "push-buffer", buf, &flow);
  gst_buffer_unref (buf);
  fail_unless_equals_int (flow, GST_FLOW_OK);
}

static void
push_audio (GstElement * src, guint64 first, guint n)
{
  GstBuffer *buf = gst_buffer_new_memdup (ref.audio + first,
      n * sizeof (gfloat));

  GST_BUFFER_PTS (buf) = audio_time (first);
  GST_BUFFER_DURATION (buf) = audio_time (first + n) - audio_time (first);
  GST_BUFFER_OFFSET (buf) = first;
  GST_BUFFER_OFFSET_END (buf) = first + n;
  push (src, buf);
}

static void
push_video (GstElement * src, guint f)
{
  gsize size = (gsize) ref.width * ref.height * 3;
  GstBuffer *buf = gst_buffer_new_memdup (ref.video + f * size, size);

  GST_BUFFER_PTS (buf) = video_time (f);
  GST_BUFFER_DURATION (buf) = video_time (f + 1) - video_time (f);
  GST_BUFFER_OFFSET (buf) = f;
  GST_BUFFER_OFFSET_END (buf) = f + 1;
  push (src, buf);
}

/* Runs @desc (with appsrc "asrc" and/or "vsrc") to EOS, pushing the audio
 * in buffers of @chunk samples, interleaved with the video in time order.
 * Returns NULL, or what went wrong (an ERROR or WARNING message, a stall):
 * to be g_free'd. */
static gchar *
run_pipeline (const gchar * desc, guint chunk)
{
  GError *error = NULL;
  GstElement *pipeline, *asrc, *vsrc;
  GstBus *bus;
  GstStateChangeReturn sret;
  GstFlowReturn flow;
  guint64 a = 0;
  guint f = 0;
  gchar *problem = NULL;

  GST_INFO ("running %s", desc);
  pipeline = gst_parse_launch (desc, &error);
  fail_unless (pipeline != NULL && error == NULL, "could not build '%s': %s",
      desc, error ? error->message : "?");
  asrc = gst_bin_get_by_name (GST_BIN (pipeline), "asrc");
  vsrc = gst_bin_get_by_name (GST_BIN (pipeline), "vsrc");
  if (asrc)
    setup_appsrc (asrc, gst_caps_new_simple ("audio/x-raw",
            "format", G_TYPE_STRING, "F32LE", "rate", G_TYPE_INT, ref.rate,
            "channels", G_TYPE_INT, 1, "layout", G_TYPE_STRING,
            "interleaved", NULL));
  if (vsrc)
    setup_appsrc (vsrc, gst_caps_new_simple ("video/x-raw",
            "format", G_TYPE_STRING, "RGB", "width", G_TYPE_INT,
            (gint) ref.width, "height", G_TYPE_INT, (gint) ref.height,
            "framerate", GST_TYPE_FRACTION, ref.fps, 1, NULL));

  bus = gst_element_get_bus (pipeline);
  sret = gst_element_set_state (pipeline, GST_STATE_PLAYING);
  if (sret == GST_STATE_CHANGE_FAILURE) {
    /* the reason is an ERROR message already on the bus */
    problem = avf_pop_error (bus, 0, TRUE, NULL, NULL);
    if (problem == NULL)
      problem = g_strdup ("the pipeline did not start (no error message)");
    goto done;
  }

  while ((asrc && a < ref.n_samples) || (vsrc && f < ref.n_frames)) {
    gboolean audio_next = asrc && a < ref.n_samples
        && (!vsrc || f >= ref.n_frames || audio_time (a) <= video_time (f));
    if (audio_next) {
      guint n = (guint) MIN ((guint64) chunk, ref.n_samples - a);
      push_audio (asrc, a, n);
      a += n;
    } else {
      push_video (vsrc, f++);
    }
  }
  if (asrc)
    g_signal_emit_by_name (asrc, "end-of-stream", &flow);
  if (vsrc)
    g_signal_emit_by_name (vsrc, "end-of-stream", &flow);

  problem = avf_wait_end (bus, RUN_TIMEOUT, TRUE);

done:
  gst_object_unref (bus);
  fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  if (asrc)
    gst_object_unref (asrc);
  if (vsrc)
    gst_object_unref (vsrc);
  gst_object_unref (pipeline);
  return problem;
}

/* All output goes under one temporary directory, avf_tmp, made before the
 * tests and removed after them by the (unchecked) fixture avf_tmp_setup /
 * avf_tmp_teardown, which runs in the parent process: nothing stays behind
 * even when a test fails. */

/* A fresh directory for one output file. */
static gchar *
make_tmp_dir (void)
{
  gchar *dir = g_build_filename (avf_tmp, "run-XXXXXX", NULL);

  fail_unless (g_mkdtemp (dir) != NULL, "could not make %s", dir);
  return dir;
}

/* Checks that @dir holds only @keep (the sink left no temporary file
 * behind), then removes it all. */
static void
remove_tmp_dir (gchar * dir, const gchar * keep)
{
  GDir *d = g_dir_open (dir, 0, NULL);
  const gchar *name;
  GString *stray = g_string_new (NULL);

  fail_unless (d != NULL);
  while ((name = g_dir_read_name (d)) != NULL) {
    gchar *p = g_build_filename (dir, name, NULL);
    if (keep == NULL || strcmp (name, keep) != 0)
      g_string_append_printf (stray, " %s", name);
    g_unlink (p);
    g_free (p);
  }
  g_dir_close (d);
  g_rmdir (dir);
  g_free (dir);
  fail_unless (stray->len == 0, "files left beside the output:%s",
      stray->str);
  g_string_free (stray, TRUE);
}

/* ---- comparing ---------------------------------------------------------- */

static const NpzArray *
npz_array (const NpzFile * z, const gchar * name, NpzDtype dtype, int ndim,
    const guint64 * shape)
{
  const NpzArray *a = npz_find (z, name);

  fail_unless (a != NULL, "the .npz has no array %s", name);
  fail_unless_equals_int (a->dtype, dtype);
  fail_unless (a->ndim == ndim, "array %s has %d dimensions, expected %d",
      name, a->ndim, ndim);
  for (int d = 0; d < ndim; d++)
    fail_unless (a->shape[d] == shape[d],
        "array %s: dimension %d is %" G_GUINT64_FORMAT ", expected %"
        G_GUINT64_FORMAT, name, d, a->shape[d], shape[d]);
  return a;
}

/* Float array vs reference: NaN exactly where the reference has NaN,
 * elsewhere within @tol.  Prints the largest error and where it is. */
static void
compare_f32 (const NpzArray * got, const AvfTensorInfo * want, gdouble tol,
    const gchar * what)
{
  guint64 frame_size = got->numel / got->shape[0];
  gdouble worst = 0.0;
  guint64 worst_at = 0;

  for (guint64 i = 0; i < got->numel; i++) {
    gfloat g = npz_f32 (got, i), w = avf_tensor_f32 (want, i);
    gdouble d;

    fail_unless (isnan (g) == isnan (w),
        "%s: frame %" G_GUINT64_FORMAT " element %" G_GUINT64_FORMAT
        " is %g, the reference has %g", what, i / frame_size,
        i % frame_size, g, w);
    if (isnan (w))
      continue;
    d = fabs ((gdouble) g - (gdouble) w);
    if (d > worst || isnan (d)) {
      worst = d;
      worst_at = i;
    }
  }
  GST_INFO ("%s: max abs error %.3g", what, worst);
  fail_unless (worst <= tol, "%s: max abs error %.3g > %g at frame %"
      G_GUINT64_FORMAT " element %" G_GUINT64_FORMAT " (%.7g, reference "
      "%.7g)", what, worst, tol, worst_at / frame_size,
      worst_at % frame_size, npz_f32 (got, worst_at), avf_tensor_f32 (want,
          worst_at));
}

/* pts, stream time (the same: the streams start at 0) and duration of @n
 * frames at @time (frame index -> ns). */
static void
check_times (const NpzFile * z, guint64 n, GstClockTime (*stamp) (guint64))
{
  const NpzArray *pts = npz_array (z, "pts", NPZ_I64, 1, &n);
  const NpzArray *st = npz_array (z, "stream_time", NPZ_I64, 1, &n);
  const NpzArray *dur = npz_array (z, "duration", NPZ_I64, 1, &n);

  for (guint64 i = 0; i < n; i++) {
    fail_unless (npz_i64 (pts, i) == (gint64) stamp (i),
        "frame %" G_GUINT64_FORMAT ": pts %" G_GINT64_FORMAT ", expected %"
        G_GUINT64_FORMAT, i, npz_i64 (pts, i), stamp (i));
    fail_unless (npz_i64 (st, i) == (gint64) stamp (i),
        "frame %" G_GUINT64_FORMAT ": stream_time %" G_GINT64_FORMAT
        ", expected %" G_GUINT64_FORMAT, i, npz_i64 (st, i), stamp (i));
    fail_unless (npz_i64 (dur, i) == (gint64) (stamp (i + 1) - stamp (i)),
        "frame %" G_GUINT64_FORMAT ": duration %" G_GINT64_FORMAT
        ", expected %" G_GUINT64_FORMAT, i, npz_i64 (dur, i),
        stamp (i + 1) - stamp (i));
  }
}

static GstClockTime
mel_time (guint64 k)
{
  return gst_util_uint64_scale (k * (guint64) ref.hop, GST_SECOND, ref.rate);
}

/* Everything the fusion pipeline wrote against the reference. */
static void
check_fusion_npz (const NpzFile * z)
{
  guint64 F = ref.n_frames;
  const AvfTensorInfo *fused = avf_safetensors_find (ref.st, "fused");
  guint64 width = fused ? fused->shape[1] : 0;
  guint64 shape2[2] = { F, width }, mshape[2] = { F, ref.T };
  const AvfTensorInfo *want_pts, *want_mask;
  const NpzArray *mask;
  guint n_expected = 7 + 4 * ref.n_layers;

  /* exactly data, pts, stream_time, duration, audio_mask, sound_visible,
   * visible_threshold and the maps */
  for (gsize i = 0; i < z->n_arrays; i++) {
    const gchar *n = z->arrays[i].name;
    gboolean known = !strcmp (n, "data") || !strcmp (n, "pts")
        || !strcmp (n, "stream_time")
        || !strcmp (n, "duration") || !strcmp (n, "audio_mask")
        || !strcmp (n, "sound_visible") || !strcmp (n, "visible_threshold");
    for (guint l = 0; l < ref.n_layers && !known; l++)
      for (guint m = 0; m < G_N_ELEMENTS (MODULES) && !known; m++) {
        gchar *name = g_strdup_printf ("layers.%u.%s", l, MODULES[m]);
        known = strcmp (n, name) == 0;
        g_free (name);
      }
    fail_unless (known, "the .npz holds an unexpected array %s", n);
  }
  fail_unless (z->n_arrays == n_expected, "the .npz holds %" G_GSIZE_FORMAT
      " arrays, expected %u", z->n_arrays, n_expected);

  /* the fused vectors */
  fused = ref_tensor ("fused", AVF_DTYPE_F32, 2, shape2);
  compare_f32 (npz_array (z, "data", NPZ_F32, 2, shape2), fused, TOLERANCE,
      "data (fused)");

  /* timestamps */
  want_pts = ref_tensor ("pts", AVF_DTYPE_I64, 1, &F);
  for (guint64 f = 0; f < F; f++)
    fail_unless_equals_uint64 (avf_tensor_i64 (want_pts, f), video_time (f));
  check_times (z, F, video_time);

  /* the audio windows */
  want_mask = ref_tensor ("mask", AVF_DTYPE_U8, 2, mshape);
  mask = npz_array (z, "audio_mask", NPZ_B1, 2, mshape);
  for (guint64 i = 0; i < F * ref.T; i++)
    fail_unless (npz_b1 (mask, i) == want_mask->data[i],
        "frame %" G_GUINT64_FORMAT " audio slot %" G_GUINT64_FORMAT
        ": mask %d, the reference has %d (1 = missing)", i / ref.T,
        i % ref.T, npz_b1 (mask, i), want_mask->data[i]);

  /* the reference weights name no visible_threshold: 0 (unknown), and a
   * visible object sounds in every window that holds audio */
  {
    const NpzArray *vis = npz_array (z, "sound_visible", NPZ_B1, 1, &F);
    const NpzArray *thr = npz_array (z, "visible_threshold", NPZ_F32, 1, &F);

    AvfWeights *w = NULL;
    AvfError err;

    fail_unless (avf_weights_load (&w, ref.weights, &err) == AVF_OK, "%s",
        err.message);
    fail_unless (w->cfg.visible_threshold == 0.0f);
    avf_weights_free (w);
    for (guint64 f = 0; f < F; f++) {
      gboolean audio = FALSE;
      for (guint64 t = 0; t < ref.T; t++)
        audio |= !want_mask->data[f * ref.T + t];
      fail_unless (npz_b1 (vis, f) == audio, "frame %" G_GUINT64_FORMAT
          ": sound_visible %d, audio in the window %d", f, npz_b1 (vis, f),
          audio);
      fail_unless (npz_f32 (thr, f) == 0.0f);
    }
  }

  /* the head-mean attention maps */
  for (guint l = 0; l < ref.n_layers; l++) {
    for (guint m = 0; m < G_N_ELEMENTS (MODULES); m++) {
      gchar *name = g_strdup_printf ("layers.%u.%s", l, MODULES[m]);
      const AvfTensorInfo *want = avf_safetensors_find (ref.st, name);
      fail_unless (want != NULL && want->ndim == 3, "reference %s", name);
      compare_f32 (npz_array (z, name, NPZ_F32, 3, want->shape), want,
          TOLERANCE, name);
      g_free (name);
    }
  }
}

static gchar *
fusion_pipeline (const gchar * location, gint blas_threads)
{
  return g_strdup_printf ("appsrc name=asrc ! avspectrogram n-fft=%d "
      "hop-length=%d n-mels=%d ! queue ! att.audio_sink  "
      "appsrc name=vsrc ! avpatchembed weights=\"%s\" ! queue ! "
      "att.video_sink  "
      "avattention name=att weights=\"%s\" window=%" G_GUINT64_FORMAT " "
      "attention-weights=mean blas-threads=%d ! avtensorsink maps=all "
      "location=\"%s\"", ref.n_fft, ref.hop, ref.n_mels, ref.weights,
      ref.weights, ref.window_ns, blas_threads, location);
}

/* Runs the fusion pipeline with audio buffers of @chunk samples, checks the
 * file against the reference and returns it (npz_close it). */
static void
run_fusion (NpzFile * z, guint chunk, gint blas_threads)
{
  gchar *dir = make_tmp_dir ();
  gchar *out = g_build_filename (dir, "fused.npz", NULL);
  gchar *desc = fusion_pipeline (out, blas_threads);
  gchar *problem = run_pipeline (desc, chunk);

  fail_unless (problem == NULL, "audio in buffers of %u samples: %s", chunk,
      problem);
  ASSERT_ZIP_OPEN (z, out);
  remove_tmp_dir (dir, "fused.npz");
  g_free (desc);
  g_free (out);
  check_fusion_npz (z);
}

/* ---- tests -------------------------------------------------------------- */

static guint32
float_bits (gfloat v)
{
  guint32 u;
  memcpy (&u, &v, 4);
  return u;
}

/* The inputs regenerated here are the reference's, bit for bit. */
GST_START_TEST (test_inputs_match_reference)
{
  guint64 n16 = 16, byte_sum = 0;
  const AvfTensorInfo *check = ref_tensor ("audio_check", AVF_DTYPE_F32, 1,
      &n16);
  gdouble sum = 0.0;
  gsize n = (gsize) ref.n_frames * ref.width * ref.height * 3;

  for (guint i = 0; i < 16; i++) {
    gfloat want = avf_tensor_f32 (check, i);
    fail_unless (memcmp (&want, &ref.audio[i], sizeof (gfloat)) == 0,
        "audio sample %u is %.9g (0x%08x), the reference has %.9g (0x%08x)",
        i, ref.audio[i], float_bits (ref.audio[i]), want, float_bits (want));
  }
  for (guint i = 0; i < ref.n_samples; i++)
    sum += ref.audio[i];
  fail_unless (sum == meta_double ("audio_sum"),
      "audio sum %.17g, the reference has %.17g", sum,
      meta_double ("audio_sum"));
  for (gsize k = 0; k < n; k++)
    byte_sum += ref.video[k];
  fail_unless_equals_uint64 (byte_sum, (guint64) meta_int ("video_byte_sum"));
}

GST_END_TEST;

/* Stage 1 alone: avspectrogram's frames and timestamps equal log_mel(). */
GST_START_TEST (test_spectrogram_stage)
{
  gchar *dir = make_tmp_dir ();
  gchar *out = g_build_filename (dir, "mel.npz", NULL);
  gchar *desc = g_strdup_printf ("appsrc name=asrc ! avspectrogram n-fft=%d "
      "hop-length=%d n-mels=%d ! avtensorsink location=\"%s\"", ref.n_fft,
      ref.hop, ref.n_mels, out);
  guint64 K = (guint64) meta_int ("mel_frames");
  guint64 shape[2] = { K, (guint64) ref.n_mels };
  const AvfTensorInfo *want_pts = ref_tensor ("mel_pts", AVF_DTYPE_I64, 1,
      &K);
  gchar *problem;
  NpzFile z;

  problem = run_pipeline (desc, 1000);
  fail_unless (problem == NULL, "%s", problem);
  ASSERT_ZIP_OPEN (&z, out);
  remove_tmp_dir (dir, "mel.npz");
  compare_f32 (npz_array (&z, "data", NPZ_F32, 2, shape),
      ref_tensor ("logmel", AVF_DTYPE_F32, 2, shape), TOLERANCE,
      "log-mel frames");
  for (guint64 k = 0; k < K; k++)
    fail_unless_equals_uint64 (avf_tensor_i64 (want_pts, k), mel_time (k));
  check_times (&z, K, mel_time);
  fail_unless (npz_find (&z, "audio_mask") == NULL);
  npz_close (&z);
  g_free (desc);
  g_free (out);
}

GST_END_TEST;

/* Stage 2 alone: avpatchembed's tokens equal AvFusion.embed_video(). */
GST_START_TEST (test_patch_embed_stage)
{
  gchar *dir = make_tmp_dir ();
  gchar *out = g_build_filename (dir, "patches.npz", NULL);
  gchar *desc = g_strdup_printf ("appsrc name=vsrc ! avpatchembed "
      "weights=\"%s\" ! avtensorsink location=\"%s\"", ref.weights, out);
  const AvfTensorInfo *want = avf_safetensors_find (ref.st, "patches");
  gchar *problem;
  NpzFile z;

  fail_unless (want != NULL && want->ndim == 3
      && want->shape[0] == ref.n_frames);
  problem = run_pipeline (desc, 1000);
  fail_unless (problem == NULL, "%s", problem);
  ASSERT_ZIP_OPEN (&z, out);
  remove_tmp_dir (dir, "patches.npz");
  compare_f32 (npz_array (&z, "data", NPZ_F32, 3, want->shape), want,
      TOLERANCE, "patch embeddings");
  check_times (&z, ref.n_frames, video_time);
  npz_close (&z);
  g_free (desc);
  g_free (out);
}

GST_END_TEST;

/* The whole pipeline: fused vectors, timestamps, audio masks and every
 * attention map equal the PyTorch reference. */
GST_START_TEST (test_pipeline_parity)
{
  NpzFile z;

  run_fusion (&z, 1000, 1);
  npz_close (&z);
}

GST_END_TEST;

/* The same run with the audio cut into buffers of 37 samples writes the
 * same bytes: streaming invariance through the whole pipeline. */
GST_START_TEST (test_pipeline_streaming_invariance)
{
  NpzFile big, small;

  run_fusion (&big, 1000, 1);
  run_fusion (&small, 37, 1);
  fail_unless_equals_uint64 (big.n_arrays, small.n_arrays);
  for (gsize i = 0; i < big.n_arrays; i++) {
    const NpzArray *a = &big.arrays[i];
    const NpzArray *b = npz_find (&small, a->name);

    fail_unless (b != NULL && b->numel == a->numel && b->dtype == a->dtype,
        "array %s differs in shape", a->name);
    fail_unless (memcmp (a->data, b->data, a->numel * a->itemsize) == 0,
        "array %s: buffers of 37 samples give other bytes than buffers of "
        "1000", a->name);
  }
  npz_close (&big);
  npz_close (&small);
}

GST_END_TEST;

static Suite *
pipeline_suite (void)
{
  Suite *s = suite_create ("pipeline");
  TCase *tc = tcase_create ("parity");

  tcase_set_timeout (tc, 120);
  tcase_add_unchecked_fixture (tc, avf_tmp_setup, avf_tmp_teardown);
  tcase_add_checked_fixture (tc, reference_setup, reference_teardown);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_inputs_match_reference);
  tcase_add_test (tc, test_spectrogram_stage);
  tcase_add_test (tc, test_patch_embed_stage);
  tcase_add_test (tc, test_pipeline_parity);
  tcase_add_test (tc, test_pipeline_streaming_invariance);
  return s;
}

AVF_CHECK_MAIN (pipeline);
