/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * avspectrogram: the element against core/mel.h and the PyTorch fixture
 * (bit-identical however the input is cut), timestamps from the counters,
 * DISCONT / GAP / EOS / flush / caps changes, channel averaging, latency,
 * negotiation failures, and real pipelines over generated and recorded
 * audio.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>

#include <gst/audio/audio.h>
#include <gst/check/gstcheck.h>
#include "avf_check.h"
#include <gst/check/gstharness.h>

#include "mel.h"
#include "safetensors.h"

#ifdef __SSE__
#include <xmmintrin.h>
/* MXCSR: the denormal-operand exception flag, and the two modes that
 * flush denormals (operands, results) */
#define MXCSR_DE 0x0002
#define MXCSR_DAZ 0x0040
#define MXCSR_FTZ 0x8000
#endif

#define RATE 16000
#define N_FFT 400
#define HOP 160
#define N_MELS 64
#define MAX_FRAMES_PER_BUFFER 64

/* The log-mel tensor caps (elements/gstavtensor.h), read here on their own
 * so that the test checks the fields, not the helper. */
typedef struct
{
  gint n_mels, rate, hop_length, n_fft, fps_n, fps_d, frame_size;
} MelCaps;

static gboolean
mel_caps_parse (MelCaps * info, const GstCaps * caps, gchar ** why)
{
  const GstStructure *s;
  gint frame_size;

  memset (info, 0, sizeof *info);
  if (caps == NULL || !gst_caps_is_fixed (caps)) {
    *why = g_strdup ("caps not fixed");
    return FALSE;
  }
  s = gst_caps_get_structure (caps, 0);
  if (!gst_structure_has_name (s, "other/x-avtensor")
      || g_strcmp0 (gst_structure_get_string (s, "kind"), "log-mel") != 0
      || g_strcmp0 (gst_structure_get_string (s, "dtype"), "float32") != 0
      || !gst_structure_get_int (s, "n-mels", &info->n_mels)
      || !gst_structure_get_int (s, "rate", &info->rate)
      || !gst_structure_get_int (s, "hop-length", &info->hop_length)
      || !gst_structure_get_int (s, "n-fft", &info->n_fft)
      || !gst_structure_get_int (s, "frame-size", &frame_size)
      || !gst_structure_get_fraction (s, "framerate", &info->fps_n,
          &info->fps_d)) {
    *why = gst_caps_to_string (caps);
    return FALSE;
  }
  /* framerate is rate / hop-length (GStreamer reduces the fraction) */
  if (frame_size != info->n_mels || (gint64) info->fps_n * info->hop_length
      != (gint64) info->fps_d * info->rate) {
    *why = gst_caps_to_string (caps);
    return FALSE;
  }
  info->frame_size = frame_size;
  info->fps_n = info->rate;
  info->fps_d = info->hop_length;
  return TRUE;
}

/* Frame i of a buffer at pts, as the tensor caps define it. */
static GstClockTime
mel_frame_pts (const MelCaps * info, GstClockTime pts, guint64 i)
{
  return pts + gst_util_uint64_scale (i * info->fps_d, GST_SECOND,
      info->fps_n);
}

/* ---- helpers ---------------------------------------------------------- */

static gchar *
audio_caps (gint rate, gint channels)
{
  return g_strdup_printf ("audio/x-raw, format=(string)%s, "
      "layout=(string)interleaved, rate=(int)%d, channels=(int)%d",
      GST_AUDIO_NE (F32), rate, channels);
}

static AvfMelConfig
config (gint rate)
{
  AvfMelConfig cfg = avf_mel_config_default ();
  cfg.sample_rate = rate;
  return cfg;
}

static GstElement *
new_element (const AvfMelConfig * cfg)
{
  GstElement *e = gst_element_factory_make ("avspectrogram", NULL);

  fail_unless (e != NULL, "avspectrogram not found");
  g_object_set (e, "n-fft", cfg->n_fft, "hop-length", cfg->hop, "n-mels",
      cfg->n_mels, "f-min", cfg->f_min, "f-max", cfg->f_max, NULL);
  return e;
}

/* A harness on a new element with the properties of cfg; when bus is not
 * NULL the element posts its messages there. */
static GstHarness *
new_harness (const AvfMelConfig * cfg, gint channels, GstBus ** bus)
{
  GstElement *e = new_element (cfg);
  GstHarness *h;
  gchar *caps;

  if (bus) {
    *bus = gst_bus_new ();
    gst_element_set_bus (e, *bus);
  }
  h = gst_harness_new_with_element (e, "sink", "src");
  gst_object_unref (e);
  caps = audio_caps (cfg->sample_rate, channels);
  gst_harness_set_src_caps_str (h, caps);
  g_free (caps);
  return h;
}

static GstFlowReturn
push_samples (GstHarness * h, const gfloat * x, gsize n, gint channels,
    GstClockTime pts, gboolean discont)
{
  GstBuffer *buf = gst_buffer_new_memdup (x, n * channels * sizeof (gfloat));

  GST_BUFFER_PTS (buf) = pts;
  if (discont)
    GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
  return gst_harness_push (h, buf);
}

static GstClockTime
sample_time (GstClockTime base, guint64 i, gint rate)
{
  return base + gst_util_uint64_scale (i, GST_SECOND, rate);
}

/* The counter formula of the spec: frame k of a run that starts at base. */
static GstClockTime
frame_pts (GstClockTime base, guint64 k, gint hop, gint rate)
{
  return base + gst_util_uint64_scale (k * hop, GST_SECOND, rate);
}

typedef struct
{
  GstClockTime pts, duration;
  guint64 offset, offset_end;
  gboolean discont;
  guint n_frames;
  guint first_frame;            /* index of its first frame in Output.data */
  MelCaps info;                 /* from the caps it came with */
} OutBuf;

typedef struct
{
  GArray *data;                 /* gfloat, all frames in order */
  GArray *bufs;                 /* OutBuf */
} Output;

static void
output_init (Output * o)
{
  o->data = g_array_new (FALSE, FALSE, sizeof (gfloat));
  o->bufs = g_array_new (FALSE, FALSE, sizeof (OutBuf));
}

static void
output_clear (Output * o)
{
  g_array_free (o->data, TRUE);
  g_array_free (o->bufs, TRUE);
}

static guint
output_frames (Output * o, gint n_mels)
{
  return o->data->len / n_mels;
}

/* Pulls every buffer the harness holds. */
static void
collect (GstHarness * h, Output * o)
{
  GstBuffer *b;

  while ((b = gst_harness_try_pull (h)) != NULL) {
    GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
    OutBuf ob = { 0, };
    GstMapInfo map;
    gchar *why = NULL;

    fail_unless (caps != NULL);
    fail_unless (mel_caps_parse (&ob.info, caps, &why), "%s", why);
    gst_caps_unref (caps);
    fail_unless (gst_buffer_map (b, &map, GST_MAP_READ));
    fail_unless_equals_uint64 (map.size % (ob.info.n_mels * sizeof (gfloat)),
        0);
    ob.n_frames = map.size / (ob.info.n_mels * sizeof (gfloat));
    fail_unless (ob.n_frames >= 1, "an output buffer without frames");
    fail_unless (ob.n_frames <= MAX_FRAMES_PER_BUFFER,
        "%u frames in one buffer", ob.n_frames);
    ob.first_frame = o->data->len / ob.info.n_mels;
    ob.pts = GST_BUFFER_PTS (b);
    ob.duration = GST_BUFFER_DURATION (b);
    ob.offset = GST_BUFFER_OFFSET (b);
    ob.offset_end = GST_BUFFER_OFFSET_END (b);
    ob.discont = GST_BUFFER_FLAG_IS_SET (b, GST_BUFFER_FLAG_DISCONT);
    g_array_append_vals (o->data, map.data, map.size / sizeof (gfloat));
    g_array_append_val (o->bufs, ob);
    gst_buffer_unmap (b, &map);
    gst_buffer_unref (b);
  }
}

/* Buffers [b0, b1) form one run that starts at base: offsets count frames
 * from 0, the first buffer alone is DISCONT, every PTS and duration follows
 * the counter formula, and so does every frame inside a buffer (within the
 * 1 ns of rounding that PTS + i / framerate allows). */
static void
check_run (Output * o, guint b0, guint b1, GstClockTime base, gint rate,
    gint hop)
{
  guint64 k = 0;

  fail_unless (b1 > b0, "empty run");
  for (guint i = b0; i < b1; i++) {
    const OutBuf *ob = &g_array_index (o->bufs, OutBuf, i);

    fail_unless_equals_int (ob->info.rate, rate);
    fail_unless_equals_int (ob->info.hop_length, hop);
    fail_unless_equals_uint64 (ob->offset, k);
    fail_unless_equals_uint64 (ob->offset_end, k + ob->n_frames);
    fail_unless_equals_uint64 (ob->pts, frame_pts (base, k, hop, rate));
    fail_unless_equals_uint64 (ob->pts + ob->duration,
        frame_pts (base, k + ob->n_frames, hop, rate));
    fail_unless (ob->discont == (i == b0), "buffer %u: DISCONT %d", i,
        ob->discont);
    for (guint f = 0; f < ob->n_frames; f++) {
      GstClockTime t = mel_frame_pts (&ob->info, ob->pts, f);
      GstClockTimeDiff d = GST_CLOCK_DIFF (frame_pts (base, k + f, hop,
              rate), t);
      fail_unless (ABS (d) <= 1, "frame %" G_GUINT64_FORMAT " at %"
          GST_TIME_FORMAT, k + f, GST_TIME_ARGS (t));
    }
    k += ob->n_frames;
  }
}

/* Frames [f0, f0 + n) of the output are bit-identical to ref. */
static void
check_frames (Output * o, guint f0, const gfloat * ref, gsize n, gint n_mels)
{
  fail_unless (o->data->len >= (f0 + n) * n_mels,
      "%u values out, %" G_GSIZE_FORMAT " frames from %u expected",
      o->data->len, n, f0);
  for (gsize i = 0; i < n * n_mels; i++) {
    gfloat a = g_array_index (o->data, gfloat, f0 * n_mels + i);
    fail_unless (memcmp (&a, &ref[i], sizeof a) == 0,
        "frame %" G_GSIZE_FORMAT " band %" G_GSIZE_FORMAT ": %.9g != %.9g",
        i / n_mels, i % n_mels, a, ref[i]);
  }
}

/* Pushes x in buffers of the sizes in `sizes` (cyclically), timestamped
 * from sample counts from base. */
static void
push_in_pieces (GstHarness * h, const gfloat * x, gsize n, gint channels,
    gint rate, GstClockTime base, const gsize * sizes, guint n_sizes)
{
  gsize off = 0;
  guint i = 0;

  while (off < n) {
    gsize len = MIN (sizes[i++ % n_sizes], n - off);
    fail_unless_equals_int (push_samples (h, x + off * channels, len,
            channels, sample_time (base, off, rate), off == 0), GST_FLOW_OK);
    off += len;
  }
}

/* The whole streaming check for one configuration. */
static void
check_streaming (const AvfMelConfig * cfg, gint channels, gsize n,
    const gsize * sizes, guint n_sizes, GstClockTime base)
{
  gfloat *x = avf_make_signal (n, channels, cfg->sample_rate, 7, 200.0);
  gsize n_ref;
  gfloat *ref = avf_reference_mel (cfg, x, n, channels, &n_ref);
  GstHarness *h = new_harness (cfg, channels, NULL);
  gboolean full = FALSE;
  Output o;

  output_init (&o);
  push_in_pieces (h, x, n, channels, cfg->sample_rate, base, sizes, n_sizes);
  collect (h, &o);

  fail_unless_equals_int (output_frames (&o, cfg->n_mels), n_ref);
  check_frames (&o, 0, ref, n_ref, cfg->n_mels);
  check_run (&o, 0, o.bufs->len, base, cfg->sample_rate, cfg->hop);
  for (guint i = 0; i < o.bufs->len; i++)
    full |= g_array_index (o.bufs, OutBuf, i).n_frames ==
        MAX_FRAMES_PER_BUFFER;
  fail_unless (full, "no input was large enough to fill an output buffer");

  output_clear (&o);
  gst_harness_teardown (h);
  g_free (ref);
  g_free (x);
}

/* ---- pipelines -------------------------------------------------------- */

typedef struct
{
  GMutex lock;
  GArray *pts;                  /* GstClockTime, one per frame */
  GArray *data;                 /* gfloat, every frame */
  guint n_buffers, n_discont, n_bad_size, n_not_finite;
  MelCaps info;
  gboolean have_info;
  guint64 in_samples;           /* counted at avspectrogram's sink pad */
  GstElement *sink;             /* while attached */
  GstPad *spec_sink;
  gulong probe;
} Capture;

static void
capture_init (Capture * c)
{
  memset (c, 0, sizeof *c);
  g_mutex_init (&c->lock);
  c->pts = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  c->data = g_array_new (FALSE, FALSE, sizeof (gfloat));
}

static void
capture_clear (Capture * c)
{
  g_array_free (c->pts, TRUE);
  if (c->data)
    g_array_free (c->data, TRUE);
  g_mutex_clear (&c->lock);
}

static void
on_handoff (GstElement * sink, GstBuffer * buf, GstPad * pad, Capture * c)
{
  GstMapInfo map;
  guint n;

  g_mutex_lock (&c->lock);
  if (!c->have_info) {
    GstCaps *caps = gst_pad_get_current_caps (pad);
    gchar *why = NULL;
    c->have_info = caps && mel_caps_parse (&c->info, caps, &why);
    g_free (why);
    if (caps)
      gst_caps_unref (caps);
  }
  c->n_buffers++;
  if (GST_BUFFER_FLAG_IS_SET (buf, GST_BUFFER_FLAG_DISCONT))
    c->n_discont++;
  if (c->have_info && gst_buffer_map (buf, &map, GST_MAP_READ)) {
    const gfloat *v = (const gfloat *) map.data;
    if (map.size % (c->info.frame_size * sizeof (gfloat)) != 0)
      c->n_bad_size++;
    n = map.size / (c->info.frame_size * sizeof (gfloat));
    for (guint i = 0; i < n; i++) {
      GstClockTime t = mel_frame_pts (&c->info,
          GST_BUFFER_PTS (buf), i);
      g_array_append_val (c->pts, t);
    }
    for (gsize i = 0; i < map.size / sizeof (gfloat); i++)
      if (!isfinite (v[i]))
        c->n_not_finite++;
    g_array_append_vals (c->data, map.data, map.size / sizeof (gfloat));
    gst_buffer_unmap (buf, &map);
  }
  g_mutex_unlock (&c->lock);
}

static GstPadProbeReturn
count_samples (GstPad * pad, GstPadProbeInfo * info, Capture * c)
{
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstCaps *caps = gst_pad_get_current_caps (pad);
  GstAudioInfo ainfo;

  if (caps && gst_audio_info_from_caps (&ainfo, caps)) {
    g_mutex_lock (&c->lock);
    c->in_samples += gst_buffer_get_size (buf) / GST_AUDIO_INFO_BPF (&ainfo);
    g_mutex_unlock (&c->lock);
  }
  if (caps)
    gst_caps_unref (caps);
  return GST_PAD_PROBE_OK;
}

/* Hooks the capture to the fakesink "sink" and the sample counter to the
 * avspectrogram "spec" of a pipeline. */
static void
attach_capture (GstElement * pipeline, Capture * c)
{
  GstElement *spec = gst_bin_get_by_name (GST_BIN (pipeline), "spec");

  c->sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  fail_unless (c->sink != NULL && spec != NULL);
  g_object_set (c->sink, "signal-handoffs", TRUE, "sync", FALSE, NULL);
  g_signal_connect (c->sink, "handoff", G_CALLBACK (on_handoff), c);
  c->spec_sink = gst_element_get_static_pad (spec, "sink");
  c->probe = gst_pad_add_probe (c->spec_sink, GST_PAD_PROBE_TYPE_BUFFER,
      (GstPadProbeCallback) count_samples, c, NULL);
  gst_object_unref (spec);
}

static void
detach_capture (Capture * c)
{
  g_signal_handlers_disconnect_by_data (c->sink, c);
  gst_pad_remove_probe (c->spec_sink, c->probe);
  gst_object_unref (c->sink);
  gst_object_unref (c->spec_sink);
  c->sink = NULL;
  c->spec_sink = NULL;
}

static guint64
expected_frames (guint64 n, gint n_fft, gint hop)
{
  return n < (guint64) n_fft ? 0 : (n - n_fft) / hop + 1;
}

/* ---- tests ------------------------------------------------------------ */

/* (1) Buffers of odd sizes give the very frames of one push of the whole
 * signal, with every PTS and duration from the counter formula. */
GST_START_TEST (test_streaming_equals_whole)
{
  static const gsize sizes[] = { 1, 7, 159, 161, 400, 401, 1023, 3, 12345,
    2, 160
  };
  AvfMelConfig cfg = config (RATE);
  GstHarness *h;
  GstCaps *caps;
  MelCaps info;
  gchar *why = NULL;

  check_streaming (&cfg, 1, 2 * RATE + 12345 + 123, sizes,
      G_N_ELEMENTS (sizes), GST_SECOND);

  /* the output caps describe the frames */
  h = new_harness (&cfg, 1, NULL);
  {
    gfloat *x = avf_make_signal (N_FFT, 1, RATE, 3, 200.0);
    fail_unless_equals_int (push_samples (h, x, N_FFT, 1, 0, TRUE),
        GST_FLOW_OK);
    g_free (x);
  }
  gst_buffer_unref (gst_harness_pull (h));
  caps = gst_pad_get_current_caps (h->sinkpad);
  fail_unless (mel_caps_parse (&info, caps, &why), "%s", why);
  fail_unless_equals_int (info.n_mels, N_MELS);
  fail_unless_equals_int (info.rate, RATE);
  fail_unless_equals_int (info.hop_length, HOP);
  fail_unless_equals_int (info.n_fft, N_FFT);
  fail_unless_equals_int (info.fps_n, RATE);
  fail_unless_equals_int (info.fps_d, HOP);
  gst_caps_unref (caps);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Other properties, including a hop longer than the window, stereo, and a
 * rate whose hop is not a whole number of nanoseconds. */
GST_START_TEST (test_streaming_properties)
{
  static const gsize sizes[] = { 5000, 1, 441, 17, 44100, 999 };
  AvfMelConfig cfg = config (44100);

  cfg.n_fft = 1024;
  cfg.hop = 441;
  cfg.n_mels = 40;
  cfg.f_min = 50.0;
  cfg.f_max = 15000.0;
  check_streaming (&cfg, 1, 3 * 44100 + 77, sizes, G_N_ELEMENTS (sizes), 0);

  cfg = config (22050);
  cfg.n_fft = 256;
  cfg.hop = 300;
  cfg.n_mels = 32;
  check_streaming (&cfg, 2, 22050 * 2, sizes, G_N_ELEMENTS (sizes),
      3 * GST_SECOND);
}

GST_END_TEST;

static gdouble
meta_number (const AvfSafetensors * st, const gchar * c, const gchar * name)
{
  gchar *key = g_strdup_printf ("%s.%s", c, name);
  const gchar *v = avf_safetensors_metadata (st, key);

  fail_unless (v != NULL, "fixture metadata %s missing", key);
  g_free (key);
  return g_ascii_strtod (v, NULL);
}

/* The element matches torchaudio (the PyTorch fixture of the core suite)
 * with the default and with odd properties. */
GST_START_TEST (test_torchaudio_fixture)
{
  static const gchar *cases[] = { "default", "odd" };
  static const gsize sizes[] = { 333, 1, 4097, 160, 59 };
  const gchar *dir = g_getenv ("AVF_FIXTURE_DIR");
  gchar *path = g_build_filename (dir ? dir : "tests/fixtures",
      "mel.safetensors", NULL);
  AvfSafetensors *st = NULL;
  AvfError err;

  fail_unless (avf_safetensors_open (&st, path, &err) == AVF_OK, "%s: %s",
      path, err.message);
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++) {
    AvfMelConfig cfg;
    const AvfTensorInfo *sig, *ref;
    gchar *key;
    gfloat *x, *r;
    GstHarness *h;
    Output o;
    gsize n;
    gdouble max_err = 0.0;

    cfg.sample_rate = (gint) meta_number (st, cases[c], "sample_rate");
    cfg.n_fft = (gint) meta_number (st, cases[c], "n_fft");
    cfg.hop = (gint) meta_number (st, cases[c], "hop");
    cfg.n_mels = (gint) meta_number (st, cases[c], "n_mels");
    cfg.f_min = meta_number (st, cases[c], "f_min");
    cfg.f_max = meta_number (st, cases[c], "f_max");
    key = g_strdup_printf ("%s.signal", cases[c]);
    sig = avf_safetensors_find (st, key);
    g_free (key);
    key = g_strdup_printf ("%s.logmel", cases[c]);
    ref = avf_safetensors_find (st, key);
    g_free (key);
    fail_unless (sig != NULL && ref != NULL);
    fail_unless (sig->dtype == AVF_DTYPE_F32 && ref->dtype == AVF_DTYPE_F32);
    n = sig->numel;
    x = g_memdup2 (sig->data, n * sizeof (gfloat));
    r = g_memdup2 (ref->data, ref->numel * sizeof (gfloat));

    h = new_harness (&cfg, 1, NULL);
    output_init (&o);
    push_in_pieces (h, x, n, 1, cfg.sample_rate, 0, sizes,
        G_N_ELEMENTS (sizes));
    collect (h, &o);
    fail_unless_equals_uint64 ((guint64) o.data->len, ref->numel);
    for (gsize i = 0; i < ref->numel; i++)
      max_err = MAX (max_err, fabs (g_array_index (o.data, gfloat, i)
              - r[i]));
    fail_unless (max_err <= 1e-3, "%s: max abs error %g against torchaudio",
        cases[c], max_err);
    GST_INFO ("%s: max abs error %g", cases[c], max_err);
    output_clear (&o);
    gst_harness_teardown (h);
    g_free (x);
    g_free (r);
  }
  avf_safetensors_free (st);
  g_free (path);
}

GST_END_TEST;

/* (2) A 1 kHz sine peaks in the band whose filter weighs 1 kHz most. */
GST_START_TEST (test_sine_peak)
{
  const gsize n = RATE;
  const gint n_freqs = N_FFT / 2 + 1;
  const gint bin = 1000 * N_FFT / RATE;   /* 1 kHz sits exactly on bin 25 */
  gdouble *fb = g_new (gdouble, n_freqs * N_MELS);
  gfloat *x = g_new (gfloat, n);
  AvfMelConfig cfg = config (RATE);
  GstHarness *h;
  Output o;
  gint want = 0;
  guint frames;

  avf_mel_filterbank (fb, n_freqs, 0.0, RATE / 2, N_MELS, RATE);
  for (gint j = 1; j < N_MELS; j++)
    if (fb[bin * N_MELS + j] > fb[bin * N_MELS + want])
      want = j;
  /* the HTK mel of 1 kHz is 1000; band centres are 2840/65 mel apart */
  fail_unless_equals_int (want, 22);
  for (gsize i = 0; i < n; i++)
    x[i] = 0.5f * (gfloat) sin (2.0 * G_PI * 1000.0 * i / RATE);

  h = new_harness (&cfg, 1, NULL);
  output_init (&o);
  fail_unless_equals_int (push_samples (h, x, n, 1, 0, TRUE), GST_FLOW_OK);
  collect (h, &o);
  frames = output_frames (&o, N_MELS);
  fail_unless_equals_int (frames, expected_frames (n, N_FFT, HOP));
  for (guint f = 0; f < frames; f++) {
    const gfloat *v = &g_array_index (o.data, gfloat, f * N_MELS);
    gint peak = 0;
    for (gint j = 1; j < N_MELS; j++)
      if (v[j] > v[peak])
        peak = j;
    fail_unless_equals_int (peak, want);
    /* far bands hold only window leakage: orders of magnitude less */
    fail_unless (v[peak] - v[N_MELS - 1] > 10.0f, "peak %g, top band %g",
        v[peak], v[N_MELS - 1]);
  }
  output_clear (&o);
  gst_harness_teardown (h);
  g_free (x);
  g_free (fb);
}

GST_END_TEST;

/* (3) DISCONT restarts the framing at the buffer's timestamp; so does a
 * timestamp jump of more than half a hop, but jitter below that does not. */
GST_START_TEST (test_discont)
{
  const gsize n = 1000;
  const guint per = expected_frames (n, N_FFT, HOP);    /* 4 */
  AvfMelConfig cfg = config (RATE);
  gfloat *a = avf_make_signal (n, 1, RATE, 1, 200.0);
  gfloat *b = avf_make_signal (2 * n, 1, RATE, 2, 200.0);
  gfloat *d = avf_make_signal (n, 1, RATE, 4, 200.0);
  gfloat *e = avf_make_signal (n, 1, RATE, 5, 200.0);
  gfloat *ra, *rb, *rd, *re;
  gsize na, nb, nd, ne;
  GstHarness *h = new_harness (&cfg, 1, NULL);
  const GstClockTime t_b = 5 * GST_SECOND, t_d = 9 * GST_SECOND;
  guint b0, b1, b2, b3;
  Output o;

  ra = avf_reference_mel (&cfg, a, n, 1, &na);
  rb = avf_reference_mel (&cfg, b, 2 * n, 1, &nb);  /* B and C in one run */
  rd = avf_reference_mel (&cfg, d, n, 1, &nd);
  re = avf_reference_mel (&cfg, e, n, 1, &ne);
  fail_unless_equals_int (na, per);
  output_init (&o);

  fail_unless_equals_int (push_samples (h, a, n, 1, 0, TRUE), GST_FLOW_OK);
  collect (h, &o);
  b0 = o.bufs->len;
  /* B: DISCONT at 5 s */
  fail_unless_equals_int (push_samples (h, b, n, 1, t_b, TRUE), GST_FLOW_OK);
  /* C: 3 ms late, less than half a hop (5 ms): same run */
  fail_unless_equals_int (push_samples (h, b + n, n, 1,
          sample_time (t_b, n, RATE) + 3 * GST_MSECOND, FALSE), GST_FLOW_OK);
  collect (h, &o);
  b1 = o.bufs->len;
  /* D: 9 s without a flag: a jump, a new run */
  fail_unless_equals_int (push_samples (h, d, n, 1, t_d, FALSE),
      GST_FLOW_OK);
  collect (h, &o);
  b2 = o.bufs->len;
  /* E: DISCONT without a timestamp: a new run where D ended */
  fail_unless_equals_int (push_samples (h, e, n, 1, GST_CLOCK_TIME_NONE,
          TRUE), GST_FLOW_OK);
  collect (h, &o);
  b3 = o.bufs->len;

  check_run (&o, 0, b0, 0, RATE, HOP);
  check_frames (&o, 0, ra, na, N_MELS);
  check_run (&o, b0, b1, t_b, RATE, HOP);
  check_frames (&o, na, rb, nb, N_MELS);
  check_run (&o, b1, b2, t_d, RATE, HOP);
  check_frames (&o, na + nb, rd, nd, N_MELS);
  check_run (&o, b2, b3, sample_time (t_d, n, RATE), RATE, HOP);
  check_frames (&o, na + nb + nd, re, ne, N_MELS);
  fail_unless_equals_int (output_frames (&o, N_MELS), na + nb + nd + ne);

  output_clear (&o);
  gst_harness_teardown (h);
  g_free (a);
  g_free (b);
  g_free (d);
  g_free (e);
  g_free (ra);
  g_free (rb);
  g_free (rd);
  g_free (re);
}

GST_END_TEST;

/* Buffers without timestamps: a run starts at the segment start and goes
 * on from the sample counters. */
GST_START_TEST (test_no_timestamps)
{
  const gsize n = 3000;
  const GstClockTime start = 2 * GST_SECOND;
  AvfMelConfig cfg = config (RATE);
  gfloat *x = avf_make_signal (n, 1, RATE, 8, 200.0), *ref;
  gsize n_ref;
  GstHarness *h = new_harness (&cfg, 1, NULL);
  GstSegment segment;
  Output o;

  ref = avf_reference_mel (&cfg, x, n, 1, &n_ref);
  gst_segment_init (&segment, GST_FORMAT_TIME);
  segment.start = segment.time = segment.position = start;
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (&segment)));
  output_init (&o);
  fail_unless_equals_int (push_samples (h, x, 1001, 1, GST_CLOCK_TIME_NONE,
          FALSE), GST_FLOW_OK);
  fail_unless_equals_int (push_samples (h, x + 1001, n - 1001, 1,
          GST_CLOCK_TIME_NONE, FALSE), GST_FLOW_OK);
  collect (h, &o);
  check_run (&o, 0, o.bufs->len, start, RATE, HOP);
  check_frames (&o, 0, ref, n_ref, N_MELS);
  fail_unless_equals_int (output_frames (&o, N_MELS), n_ref);

  output_clear (&o);
  gst_harness_teardown (h);
  g_free (x);
  g_free (ref);
}

GST_END_TEST;

/* A GAP event is forwarded and no frame spans it, even when the gap is
 * shorter than half a hop. */
GST_START_TEST (test_gap)
{
  const gsize n = 1000;
  AvfMelConfig cfg = config (RATE);
  gfloat *a = avf_make_signal (n, 1, RATE, 1, 200.0);
  gfloat *b = avf_make_signal (n, 1, RATE, 2, 200.0);
  gfloat *ra, *rb;
  gsize na, nb;
  GstHarness *h = new_harness (&cfg, 1, NULL);
  const GstClockTime gap = sample_time (0, n, RATE);
  const GstClockTime t_b = gap + 2 * GST_MSECOND;
  GstEvent *ev;
  gboolean saw_gap = FALSE;
  guint b0;
  Output o;

  ra = avf_reference_mel (&cfg, a, n, 1, &na);
  rb = avf_reference_mel (&cfg, b, n, 1, &nb);
  output_init (&o);
  fail_unless_equals_int (push_samples (h, a, n, 1, 0, TRUE), GST_FLOW_OK);
  collect (h, &o);
  b0 = o.bufs->len;
  fail_unless (gst_harness_push_event (h, gst_event_new_gap (gap,
              2 * GST_MSECOND)));
  fail_unless_equals_int (push_samples (h, b, n, 1, t_b, FALSE),
      GST_FLOW_OK);
  collect (h, &o);

  check_run (&o, 0, b0, 0, RATE, HOP);
  check_frames (&o, 0, ra, na, N_MELS);
  check_run (&o, b0, o.bufs->len, t_b, RATE, HOP);
  check_frames (&o, na, rb, nb, N_MELS);
  while ((ev = gst_harness_try_pull_event (h)) != NULL) {
    if (GST_EVENT_TYPE (ev) == GST_EVENT_GAP) {
      GstClockTime ts, dur;
      gst_event_parse_gap (ev, &ts, &dur);
      fail_unless_equals_uint64 (ts, gap);
      fail_unless_equals_uint64 (dur, 2 * GST_MSECOND);
      saw_gap = TRUE;
    }
    gst_event_unref (ev);
  }
  fail_unless (saw_gap, "the GAP event was not forwarded");

  output_clear (&o);
  gst_harness_teardown (h);
  g_free (a);
  g_free (b);
  g_free (ra);
  g_free (rb);
}

GST_END_TEST;

/* (4) At EOS the samples that never fill a frame are dropped, and they do
 * not reappear after a flush. */
GST_START_TEST (test_eos_drops_partial)
{
  const gsize n = 1150, m = N_FFT;
  AvfMelConfig cfg = config (RATE);
  gfloat *a = avf_make_signal (n, 1, RATE, 1, 200.0);
  gfloat *f = avf_make_signal (m, 1, RATE, 9, 200.0);
  gfloat *ra, *rf;
  gsize na, nf;
  GstHarness *h = new_harness (&cfg, 1, NULL);
  GstSegment segment;
  GstEvent *ev;
  gboolean saw_eos = FALSE;
  guint b0;
  Output o;

  ra = avf_reference_mel (&cfg, a, n, 1, &na);
  rf = avf_reference_mel (&cfg, f, m, 1, &nf);
  fail_unless_equals_int (na, 5);       /* frames up to sample 1040 */
  fail_unless_equals_int (nf, 1);
  output_init (&o);

  fail_unless_equals_int (push_samples (h, a, 1000, 1, 0, TRUE),
      GST_FLOW_OK);
  fail_unless_equals_int (push_samples (h, a + 1000, n - 1000, 1,
          sample_time (0, 1000, RATE), FALSE), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  collect (h, &o);
  fail_unless_equals_int (output_frames (&o, N_MELS), na);
  check_frames (&o, 0, ra, na, N_MELS);
  while ((ev = gst_harness_try_pull_event (h)) != NULL) {
    saw_eos |= GST_EVENT_TYPE (ev) == GST_EVENT_EOS;
    gst_event_unref (ev);
  }
  fail_unless (saw_eos, "EOS was not forwarded");
  b0 = o.bufs->len;

  /* after a flush, 400 new samples make exactly one frame of their own */
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_start ()));
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_stop (TRUE)));
  gst_segment_init (&segment, GST_FORMAT_TIME);
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (&segment)));
  fail_unless_equals_int (push_samples (h, f, m, 1, 0, FALSE), GST_FLOW_OK);
  collect (h, &o);
  check_run (&o, b0, o.bufs->len, 0, RATE, HOP);
  check_frames (&o, na, rf, nf, N_MELS);
  fail_unless_equals_int (output_frames (&o, N_MELS), na + nf);

  output_clear (&o);
  gst_harness_teardown (h);
  g_free (a);
  g_free (f);
  g_free (ra);
  g_free (rf);
}

GST_END_TEST;

/* (5) 16 kHz -> 44.1 kHz mid-stream: new src caps with the new rate, the
 * framing restarts, and no 16 kHz sample reaches a 44.1 kHz frame. */
GST_START_TEST (test_rate_change)
{
  const gsize na = 1000, nb = 3000;
  AvfMelConfig c16 = config (RATE), c44 = config (44100);
  gfloat *a = avf_make_signal (na, 1, RATE, 1, 200.0);
  gfloat *b = avf_make_signal (nb, 1, 44100, 2, 200.0);
  gfloat *ra, *rb;
  gsize fa, fb;
  GstHarness *h = new_harness (&c16, 1, NULL);
  const GstClockTime t_b = sample_time (0, na, RATE);
  GstEvent *ev;
  gint rates[4], n_caps = 0;
  gchar *caps;
  guint b0;
  Output o;

  ra = avf_reference_mel (&c16, a, na, 1, &fa);
  rb = avf_reference_mel (&c44, b, nb, 1, &fb);
  fail_unless_equals_int (fb, 17);
  output_init (&o);

  fail_unless_equals_int (push_samples (h, a, na, 1, 0, TRUE), GST_FLOW_OK);
  collect (h, &o);
  b0 = o.bufs->len;
  caps = audio_caps (44100, 1);
  gst_harness_set_src_caps_str (h, caps);
  g_free (caps);
  fail_unless_equals_int (push_samples (h, b, nb, 1, t_b, FALSE),
      GST_FLOW_OK);
  collect (h, &o);

  check_run (&o, 0, b0, 0, RATE, HOP);
  check_frames (&o, 0, ra, fa, N_MELS);
  check_run (&o, b0, o.bufs->len, t_b, 44100, HOP);
  check_frames (&o, fa, rb, fb, N_MELS);
  fail_unless_equals_int (output_frames (&o, N_MELS), fa + fb);

  while ((ev = gst_harness_try_pull_event (h)) != NULL) {
    if (GST_EVENT_TYPE (ev) == GST_EVENT_CAPS && n_caps < 4) {
      GstCaps *c;
      MelCaps info;
      gst_event_parse_caps (ev, &c);
      gchar *why = NULL;
      fail_unless (mel_caps_parse (&info, c, &why), "%s", why);
      rates[n_caps++] = info.rate;
    }
    gst_event_unref (ev);
  }
  fail_unless_equals_int (n_caps, 2);
  fail_unless_equals_int (rates[0], RATE);
  fail_unless_equals_int (rates[1], 44100);

  output_clear (&o);
  gst_harness_teardown (h);
  g_free (a);
  g_free (b);
  g_free (ra);
  g_free (rb);
}

GST_END_TEST;

/* (6) Stereo gives the frames of the mono mean of its channels; a channel
 * count change restarts the framing. */
GST_START_TEST (test_stereo_is_mean)
{
  static const gsize sizes[] = { 777, 1, 4000, 33 };
  const gsize n = RATE;
  AvfMelConfig cfg = config (RATE);
  gfloat *x = avf_make_signal (n, 2, RATE, 11, 200.0);
  gfloat *mono = g_new (gfloat, n);
  GstHarness *hs = new_harness (&cfg, 2, NULL), *hm = new_harness (&cfg, 1,
      NULL);
  Output os, om;

  for (gsize i = 0; i < n; i++) {
    gfloat acc = 0.0f;
    acc += x[2 * i];
    acc += x[2 * i + 1];
    mono[i] = acc / 2.0f;
  }
  output_init (&os);
  output_init (&om);
  push_in_pieces (hs, x, n, 2, RATE, 0, sizes, G_N_ELEMENTS (sizes));
  push_in_pieces (hm, mono, n, 1, RATE, 0, sizes, G_N_ELEMENTS (sizes));
  collect (hs, &os);
  collect (hm, &om);
  fail_unless_equals_int (os.data->len, om.data->len);
  fail_unless_equals_int (output_frames (&os, N_MELS),
      expected_frames (n, N_FFT, HOP));
  check_frames (&os, 0, (gfloat *) om.data->data, om.data->len / N_MELS,
      N_MELS);
  check_run (&os, 0, os.bufs->len, 0, RATE, HOP);

  /* stereo -> mono at the same rate: a new run where stereo ended */
  {
    const GstClockTime t = sample_time (0, n, RATE);
    gfloat *rm;
    gsize nm;
    guint b0 = os.bufs->len, f0 = output_frames (&os, N_MELS);
    gchar *caps = audio_caps (RATE, 1);

    rm = avf_reference_mel (&cfg, mono, 1000, 1, &nm);
    gst_harness_set_src_caps_str (hs, caps);
    g_free (caps);
    fail_unless_equals_int (push_samples (hs, mono, 1000, 1, t, FALSE),
        GST_FLOW_OK);
    collect (hs, &os);
    check_run (&os, b0, os.bufs->len, t, RATE, HOP);
    check_frames (&os, f0, rm, nm, N_MELS);
    g_free (rm);
  }

  output_clear (&os);
  output_clear (&om);
  gst_harness_teardown (hs);
  gst_harness_teardown (hm);
  g_free (x);
  g_free (mono);
}

GST_END_TEST;

/* Multi-memory and unaligned input buffers give the same frames. */
GST_START_TEST (test_memory_layouts)
{
  const gsize n = 5000, cut[] = { 0, 123, 3000, n };
  AvfMelConfig cfg = config (RATE);
  gfloat *x = avf_make_signal (n, 1, RATE, 21, 200.0), *ref;
  gsize n_ref;
  GstHarness *h;
  GstBuffer *buf;
  guint8 *raw;
  Output o;

  ref = avf_reference_mel (&cfg, x, n, 1, &n_ref);

  /* three memories */
  h = new_harness (&cfg, 1, NULL);
  output_init (&o);
  buf = gst_buffer_new ();
  for (guint i = 0; i + 1 < G_N_ELEMENTS (cut); i++) {
    const gsize size = (cut[i + 1] - cut[i]) * sizeof (gfloat);
    gpointer data = g_memdup2 (x + cut[i], size);
    gst_buffer_append_memory (buf, gst_memory_new_wrapped
        (GST_MEMORY_FLAG_READONLY, data, size, 0, size, data, g_free));
  }
  fail_unless_equals_int (gst_buffer_n_memory (buf), 3);
  GST_BUFFER_PTS (buf) = 0;
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  collect (h, &o);
  fail_unless_equals_int (output_frames (&o, N_MELS), n_ref);
  check_frames (&o, 0, ref, n_ref, N_MELS);
  output_clear (&o);
  gst_harness_teardown (h);

  /* data one byte off float alignment */
  h = new_harness (&cfg, 1, NULL);
  output_init (&o);
  raw = g_malloc (n * sizeof (gfloat) + 1);
  memcpy (raw + 1, x, n * sizeof (gfloat));
  buf = gst_buffer_new_wrapped_full (GST_MEMORY_FLAG_READONLY, raw,
      n * sizeof (gfloat) + 1, 1, n * sizeof (gfloat), raw, g_free);
  GST_BUFFER_PTS (buf) = 0;
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  collect (h, &o);
  fail_unless_equals_int (output_frames (&o, N_MELS), n_ref);
  check_frames (&o, 0, ref, n_ref, N_MELS);
  output_clear (&o);
  gst_harness_teardown (h);

  g_free (ref);
  g_free (x);
}

GST_END_TEST;

/* A buffer that is not a whole number of sample frames: the whole frames
 * are used, one warning is posted however often it happens. */
GST_START_TEST (test_partial_sample_frame_warns_once)
{
  const gsize n = 1000;
  AvfMelConfig cfg = config (RATE);
  /* one sample frame more than used: the stray float is read from it */
  gfloat *x = avf_make_signal (2 * n + 1, 2, RATE, 5, 200.0), *ref;
  gsize n_ref;
  GstBus *bus;
  GstHarness *h = new_harness (&cfg, 2, &bus);
  GstMessage *m;
  guint warnings = 0;
  Output o;

  ref = avf_reference_mel (&cfg, x, 2 * n, 2, &n_ref);
  output_init (&o);
  for (guint i = 0; i < 2; i++) {
    /* n stereo frames and one stray float */
    GstBuffer *buf = gst_buffer_new_memdup (x + i * 2 * n,
        (2 * n + 1) * sizeof (gfloat));
    GST_BUFFER_PTS (buf) = sample_time (0, i * n, RATE);
    fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  }
  collect (h, &o);
  fail_unless_equals_int (output_frames (&o, N_MELS), n_ref);
  check_frames (&o, 0, ref, n_ref, N_MELS);
  while ((m = gst_bus_pop (bus)) != NULL) {
    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_WARNING) {
      GQuark domain;
      gint code;
      gchar *text = avf_message_text (m, &domain, &code);
      fail_unless (domain == GST_STREAM_ERROR && code == GST_STREAM_ERROR_FORMAT,
          "%s", text);
      fail_unless (strstr (text, "8-byte") != NULL, "%s", text);
      g_free (text);
      warnings++;
    }
    gst_message_unref (m);
  }
  fail_unless_equals_int (warnings, 1);

  output_clear (&o);
  avf_harness_teardown_with_bus (h, bus);
  g_free (x);
  g_free (ref);
}

GST_END_TEST;

/* Properties only change in NULL/READY: a change while playing is refused
 * with a warning and the element keeps its configuration. */
GST_START_TEST (test_property_change_while_playing)
{
  AvfMelConfig cfg = config (RATE);
  GstBus *bus;
  GstHarness *h = new_harness (&cfg, 1, &bus);
  GstMessage *m;
  gint n_fft = 0;

  g_object_set (h->element, "n-fft", 512, NULL);
  g_object_get (h->element, "n-fft", &n_fft, NULL);
  fail_unless_equals_int (n_fft, N_FFT);
  m = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING);
  fail_unless (m != NULL, "no warning for a refused property change");
  {
    gchar *text = avf_message_text (m, NULL, NULL);
    fail_unless (strstr (text, "n-fft") != NULL, "%s", text);
    g_free (text);
  }
  gst_message_unref (m);

  /* in READY it is taken */
  gst_element_set_state (h->element, GST_STATE_READY);
  g_object_set (h->element, "n-fft", 512, NULL);
  g_object_get (h->element, "n-fft", &n_fft, NULL);
  fail_unless_equals_int (n_fft, 512);

  avf_harness_teardown_with_bus (h, bus);
}

GST_END_TEST;

/* (7) audiotestsrc ! audioconvert ! audioresample ! avspectrogram: the
 * number of frames is floor((n - n_fft) / hop) + 1 for the n samples that
 * reach the element, with and without resampling, and a second run gives
 * identical output. */
GST_START_TEST (test_pipeline_frame_count)
{
  static const gchar *launch[] = {
    "audiotestsrc num-buffers=10 samplesperbuffer=1234 wave=saw freq=300 ! "
        "audio/x-raw,rate=16000,channels=2,format=S16LE ! audioconvert ! "
        "audioresample ! avspectrogram name=spec ! fakesink name=sink",
    "audiotestsrc num-buffers=20 samplesperbuffer=1000 freq=1000 ! "
        "audio/x-raw,rate=44100 ! audioconvert ! audioresample ! "
        "avspectrogram name=spec ! fakesink name=sink",
  };

  for (guint i = 0; i < G_N_ELEMENTS (launch); i++) {
    GError *err = NULL;
    GstElement *pipeline = gst_parse_launch (launch[i], &err);
    GArray *run0 = NULL;

    fail_unless (pipeline != NULL, "%s", err ? err->message : "");
    for (guint run = 0; run < 2; run++) {
      Capture c;
      AvfRun outcome = { 0 };

      capture_init (&c);
      attach_capture (pipeline, &c);
      avf_run_pipeline (pipeline, &outcome);
      avf_run_fail_on_messages (&outcome, launch[i]);
      avf_run_clear (&outcome);
      fail_unless (outcome.eos);
      fail_unless (c.have_info);
      fail_unless_equals_int (c.info.rate, RATE);
      if (i == 0) {
        fail_unless_equals_uint64 (c.in_samples, 12340);
      }
      fail_unless (c.in_samples > N_FFT);
      fail_unless_equals_uint64 ((guint64) c.pts->len,
          expected_frames (c.in_samples, N_FFT, HOP));
      fail_unless_equals_int (c.n_discont, 1);
      fail_unless_equals_int (c.n_not_finite, 0);
      if (run == 0) {
        run0 = c.data;          /* keep it */
        c.data = NULL;
      } else {
        fail_unless_equals_int (run0->len, c.data->len);
        fail_unless (memcmp (run0->data, c.data->data,
                run0->len * sizeof (gfloat)) == 0,
            "a second run gave other frames");
      }
      detach_capture (&c);
      capture_clear (&c);
    }
    g_array_free (run0, TRUE);
    gst_object_unref (pipeline);
  }
}

GST_END_TEST;

/* (8) Every recorded clip decodes through avspectrogram to EOS with no
 * error or warning, with strictly increasing, counter-exact timestamps and
 * finite frames. */
GST_START_TEST (test_clips)
{
  const gchar *dir_name = g_getenv ("AVF_MEDIA_DIR");
  GDir *dir;
  const gchar *file;
  guint n_clips = 0;

  if (dir_name == NULL || !g_file_test (dir_name, G_FILE_TEST_IS_DIR)) {
    GST_WARNING ("no clip folder (AVF_MEDIA_DIR), skipping");
    return;
  }
  dir = g_dir_open (dir_name, 0, NULL);
  fail_unless (dir != NULL);
  while ((file = g_dir_read_name (dir)) != NULL) {
    gchar *path, *launch;
    GstElement *pipeline, *conv, *vq;
    AvfDecodeLinks links = { NULL, };
    GError *err = NULL;
    Capture c;
    AvfRun run = { 0 };

    if (!g_str_has_suffix (file, ".webm"))
      continue;
    n_clips++;
    path = g_build_filename (dir_name, file, NULL);
    launch = g_strdup_printf ("filesrc location=\"%s\" ! decodebin name=dec "
        "audioconvert name=conv ! audioresample ! audio/x-raw,rate=16000 ! "
        "avspectrogram name=spec ! fakesink name=sink "
        "queue name=vq ! fakesink sync=false async=false", path);
    pipeline = gst_parse_launch (launch, &err);
    fail_unless (pipeline != NULL, "%s", err ? err->message : "");
    conv = gst_bin_get_by_name (GST_BIN (pipeline), "conv");
    vq = gst_bin_get_by_name (GST_BIN (pipeline), "vq");
    links.audio_sink = gst_element_get_static_pad (conv, "sink");
    links.video_sink = gst_element_get_static_pad (vq, "sink");
    {
      GstElement *dec = gst_bin_get_by_name (GST_BIN (pipeline), "dec");
      g_signal_connect (dec, "pad-added",
          G_CALLBACK (avf_decode_links_pad_added), &links);
      gst_object_unref (dec);
    }
    capture_init (&c);
    attach_capture (pipeline, &c);

    avf_run_pipeline (pipeline, &run);
    avf_run_fail_on_messages (&run, path);
    avf_run_clear (&run);
    fail_unless (run.eos, "%s: no EOS", path);
    fail_unless (links.audio_linked, "%s: no audio", path);
    fail_unless (c.have_info);
    fail_unless_equals_int (c.info.rate, RATE);
    fail_unless_equals_int (c.info.n_mels, N_MELS);
    fail_unless_equals_int (c.n_bad_size, 0);
    fail_unless (c.n_not_finite == 0, "%s: %u values not finite", path,
        c.n_not_finite);
    /* about 100 frames per second of audio */
    fail_unless (c.pts->len >= 100, "%s: %u frames", path, c.pts->len);
    fail_unless (c.n_discont >= 1);
    if (c.n_discont == 1) {
      fail_unless_equals_uint64 ((guint64) c.pts->len,
          expected_frames (c.in_samples, N_FFT, HOP));
    } else {
      fail_unless ((guint64) c.pts->len <= expected_frames (c.in_samples,
              N_FFT, HOP));
    }
    for (guint i = 1; i < c.pts->len; i++) {
      GstClockTime a = g_array_index (c.pts, GstClockTime, i - 1);
      GstClockTime b = g_array_index (c.pts, GstClockTime, i);
      fail_unless (GST_CLOCK_TIME_IS_VALID (a) && b > a,
          "%s: frame %u at %" GST_TIME_FORMAT " after %" GST_TIME_FORMAT,
          path, i, GST_TIME_ARGS (b), GST_TIME_ARGS (a));
    }
    GST_INFO ("%s: %u frames from %" G_GUINT64_FORMAT " samples, %u runs",
        file, c.pts->len, c.in_samples, c.n_discont);

    detach_capture (&c);
    capture_clear (&c);
    gst_object_unref (links.audio_sink);
    gst_object_unref (links.video_sink);
    gst_object_unref (conv);
    gst_object_unref (vq);
    gst_object_unref (pipeline);
    g_free (launch);
    g_free (path);
  }
  g_dir_close (dir);
  fail_unless (n_clips > 0, "no .webm clip in %s", dir_name);
}

GST_END_TEST;

/* (9) Unsupported caps are refused at negotiation; an f-max above half the
 * rate is a negotiation error that names the values. */
GST_START_TEST (test_refused_caps)
{
  GstElement *e = gst_element_factory_make ("avspectrogram", NULL);
  GstPad *pad = gst_element_get_static_pad (e, "sink");
  GstCaps *s16 = gst_caps_from_string ("audio/x-raw, format=S16LE, "
      "layout=interleaved, rate=16000, channels=1");
  GstCaps *f32 = gst_caps_from_string ("audio/x-raw, format=F32LE, "
      "layout=interleaved, rate=16000, channels=1");
  GstCaps *planar = gst_caps_from_string ("audio/x-raw, format=F32LE, "
      "layout=non-interleaved, rate=16000, channels=2");
  GstElement *pipeline;
  AvfRun run = { 0 };
  GQuark domain;
  gint code;
  gchar *text;

  fail_if (gst_pad_query_accept_caps (pad, s16));
  fail_if (gst_pad_query_accept_caps (pad, planar));
  fail_unless (gst_pad_query_accept_caps (pad, f32));
  gst_caps_unref (s16);
  gst_caps_unref (f32);
  gst_caps_unref (planar);
  gst_object_unref (pad);
  gst_object_unref (e);

  /* S16LE straight in: the link or the negotiation fails */
  {
    GError *err = NULL;
    pipeline = gst_parse_launch ("audiotestsrc num-buffers=5 ! "
        "audio/x-raw,format=S16LE,rate=16000 ! avspectrogram ! fakesink",
        &err);
    if (err != NULL) {
      GST_INFO ("refused at link time: %s", err->message);
      fail_unless (strstr (err->message, "avspectrogram") != NULL, "%s",
          err->message);
      g_clear_error (&err);
    } else {
      fail_unless (pipeline != NULL);
      avf_run_pipeline (pipeline, &run);
      fail_if (run.eos, "S16LE audio was processed");
      fail_unless (run.messages != NULL);
      avf_run_clear (&run);
    }
    if (pipeline)
      gst_object_unref (pipeline);
  }

  /* f-max above half the rate */
  pipeline = gst_parse_launch ("audiotestsrc num-buffers=5 ! "
      "audio/x-raw,rate=16000 ! audioconvert ! avspectrogram f-max=9000 ! "
      "fakesink", NULL);
  fail_unless (pipeline != NULL);
  avf_run_pipeline (pipeline, &run);
  fail_if (run.eos);
  fail_unless (run.messages != NULL);
  fail_unless_equals_int (GST_MESSAGE_TYPE (run.messages->data),
      GST_MESSAGE_ERROR);
  text = avf_message_text (run.messages->data, &domain, &code);
  fail_unless (domain == GST_CORE_ERROR && code == GST_CORE_ERROR_NEGOTIATION,
      "%s", text);
  fail_unless (strstr (text, "9000") != NULL && strstr (text, "16000")
      != NULL && strstr (text, "8000") != NULL, "%s", text);
  g_free (text);
  avf_run_clear (&run);
  gst_object_unref (pipeline);
}

GST_END_TEST;

/* (10) The latency query adds n_fft / rate to upstream's min and max. */
GST_START_TEST (test_latency)
{
  AvfMelConfig cfg = config (RATE);
  GstHarness *h = new_harness (&cfg, 1, NULL);
  GstQuery *q = gst_query_new_latency ();
  const GstClockTime own = gst_util_uint64_scale (N_FFT, GST_SECOND, RATE);
  gboolean live;
  GstClockTime min, max;

  fail_unless_equals_uint64 (own, 25 * GST_MSECOND);
  gst_harness_set_upstream_latency (h, 10 * GST_MSECOND);
  fail_unless (gst_pad_peer_query (h->sinkpad, q));
  gst_query_parse_latency (q, &live, &min, &max);
  fail_unless_equals_uint64 (min, 10 * GST_MSECOND + own);
  fail_unless (!GST_CLOCK_TIME_IS_VALID (max) || max >= min);
  if (GST_CLOCK_TIME_IS_VALID (max)) {
    fail_unless_equals_uint64 (max, 10 * GST_MSECOND + own);
  }
  fail_unless_equals_uint64 (gst_harness_query_latency (h),
      10 * GST_MSECOND + own);
  gst_query_unref (q);
  gst_harness_teardown (h);
}

GST_END_TEST;

static GstPadProbeReturn
record_rate (GstPad * pad, GstPadProbeInfo * info, gint * rate)
{
  GstEvent *event = GST_PAD_PROBE_INFO_EVENT (info);

  if (GST_EVENT_TYPE (event) == GST_EVENT_CAPS) {
    GstCaps *caps;
    gst_event_parse_caps (event, &caps);
    if (!gst_structure_get_int (gst_caps_get_structure (caps, 0), "rate",
            rate))
      *rate = -1;
  }
  return GST_PAD_PROBE_OK;
}

/* The rate of the caps that a pipeline's avspectrogram "spec" got on its
 * sink pad (it runs to EOS). */
static gint
negotiated_rate (const gchar * launch)
{
  GstElement *pipeline = gst_parse_launch (launch, NULL);
  GstElement *spec;
  GstPad *pad;
  AvfRun run = { 0 };
  gint rate = 0;

  fail_unless (pipeline != NULL, "%s", launch);
  spec = gst_bin_get_by_name (GST_BIN (pipeline), "spec");
  pad = gst_element_get_static_pad (spec, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
      (GstPadProbeCallback) record_rate, &rate, NULL);
  avf_run_pipeline (pipeline, &run);
  avf_run_fail_on_messages (&run, launch);
  avf_run_clear (&run);
  fail_unless (run.eos, "%s", launch);
  gst_object_unref (pad);
  gst_object_unref (spec);
  gst_object_unref (pipeline);
  return rate;
}

/* (11) audioconvert ! audioresample ! avspectrogram negotiates the model's
 * rate by itself: the sink pad's caps query offers that rate first and any
 * rate after it.  The rate comes from downstream when its caps name one
 * (here a capsfilter on the tensors), else it is the spec default, 16 kHz.  Without a resampler any rate is still
 * taken as it comes, and a capsfilter still forces a rate. */
GST_START_TEST (test_negotiates_model_rate)
{
  static const struct
  {
    const gchar *launch;
    gint rate;
  } cases[] = {
    {"audiotestsrc num-buffers=5 ! audio/x-raw,rate=44100 ! audioconvert ! "
          "audioresample ! avspectrogram name=spec ! fakesink", RATE},
    {"audiotestsrc num-buffers=5 ! audio/x-raw,rate=8000,channels=2 ! "
          "audioresample ! audioconvert ! avspectrogram name=spec ! "
          "fakesink", RATE},
    {"audiotestsrc num-buffers=5 ! audio/x-raw,rate=44100 ! audioconvert ! "
          "audioresample ! avspectrogram name=spec ! "
          "other/x-avtensor,rate=22050 ! fakesink", 22050},
    {"audiotestsrc num-buffers=5 ! audio/x-raw,rate=44100 ! audioconvert ! "
          "audioresample ! avspectrogram name=spec ! queue ! "
          "other/x-avtensor,rate={ 24000, 22050 } ! fakesink", 24000},
    {"audiotestsrc num-buffers=5 ! audio/x-raw,rate=44100 ! audioconvert ! "
          "avspectrogram name=spec ! fakesink", 44100},
    {"audiotestsrc num-buffers=5 ! audio/x-raw,rate=44100 ! audioconvert ! "
          "audioresample ! audio/x-raw,rate=32000 ! avspectrogram name=spec ! "
          "fakesink", 32000},
  };
  GstElement *e = gst_element_factory_make ("avspectrogram", NULL);
  GstPad *pad = gst_element_get_static_pad (e, "sink");
  GstCaps *caps = gst_pad_query_caps (pad, NULL);
  GstCaps *any_rate = gst_caps_from_string ("audio/x-raw, format=F32LE, "
      "layout=interleaved, rate=44100, channels=2");
  gchar *text;
  gint rate;

  /* the wanted rate first, then every rate */
  text = gst_caps_to_string (caps);
  fail_unless (gst_caps_get_size (caps) >= 2, "%s", text);
  fail_unless (gst_structure_get_int (gst_caps_get_structure (caps, 0),
          "rate", &rate), "%s", text);
  fail_unless_equals_int (rate, RATE);
  g_free (text);
  fail_unless (gst_caps_can_intersect (caps, any_rate));
  fail_unless (gst_pad_query_accept_caps (pad, any_rate));
  gst_caps_unref (any_rate);
  gst_caps_unref (caps);
  gst_object_unref (pad);
  gst_object_unref (e);

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    fail_unless_equals_int (negotiated_rate (cases[i].launch),
        cases[i].rate);
}

GST_END_TEST;

/* The frames of 1 s of x (mono, RATE) pushed through a harness in buffers
 * of 1000 samples.  On x86, *denormal_ops tells whether the element did
 * arithmetic on a denormal operand (the slow path: the MXCSR flag DE,
 * cleared before; the harness runs the element in this thread), and
 * *mode_kept whether the thread's flush modes are as they were. */
static void
frames_of_second (const gfloat * x, Output * o, gboolean * denormal_ops,
    gboolean * mode_kept)
{
  AvfMelConfig cfg = config (RATE);
  GstHarness *h = new_harness (&cfg, 1, NULL);

  output_init (o);
  *denormal_ops = FALSE;
  *mode_kept = TRUE;
  for (gsize off = 0; off < RATE; off += 1000) {
#ifdef __SSE__
    const guint before = _mm_getcsr () & ~0x3F;
    guint after;

    _mm_setcsr (before);
#endif
    fail_unless_equals_int (push_samples (h, x + off, 1000, 1,
            sample_time (0, off, RATE), off == 0), GST_FLOW_OK);
#ifdef __SSE__
    after = _mm_getcsr ();
    *denormal_ops |= (after & MXCSR_DE) != 0;
    *mode_kept &= (after & (MXCSR_DAZ | MXCSR_FTZ))
        == (before & (MXCSR_DAZ | MXCSR_FTZ));
#endif
  }
  collect (h, o);
  fail_unless_equals_int (output_frames (o, N_MELS), (RATE - N_FFT) / HOP
      + 1);
  gst_harness_teardown (h);
}

/* (12) Denormal samples cost no more than normal ones: the spectrogram
 * runs with denormals flushed to zero (they took 7-16 times as long), so
 * it does no arithmetic on a denormal operand, and they give the very
 * bytes of digital silence.  The thread's own floating-point mode is left
 * as it was, and normal input is bit-identical to core (the other tests
 * compare with core and the PyTorch fixture).  The test thread starts with
 * denormals on: a system plugin built with -ffast-math can switch them off
 * for the whole process when it is loaded, as the in-process registry scan
 * of the asan test setup (GST_REGISTRY_FORK=no) does. */
GST_START_TEST (test_denormals_flushed)
{
  gfloat *zeros = g_new0 (gfloat, RATE);
  gfloat *den;
  gfloat *normal = avf_make_signal (RATE, 1, RATE, 4, 200.0);
  guint32 s = 1;
  gboolean denormal_ops, mode_kept;
  Output oz, od, on;
#ifdef __SSE__
  const guint csr = _mm_getcsr ();

  _mm_setcsr (csr & ~(MXCSR_DAZ | MXCSR_FTZ));
#endif
  den = g_new (gfloat, RATE);
  for (gsize i = 0; i < RATE; i++) {
    s = s * 1664525u + 1013904223u;
    /* multiples of 2^-149 below 2^23 of them: subnormal, both signs */
    den[i] = ((s >> 31) ? 1.0f : -1.0f) * (gfloat) ((s >> 9) | 1)
        * 1.40129846e-45f;
    fail_unless (fpclassify (den[i]) == FP_SUBNORMAL);
  }
  /* denormals within a normal signal, where its quiet parts are */
  for (gsize i = RATE / 2; i < RATE; i++)
    normal[i] = den[i];

  frames_of_second (zeros, &oz, &denormal_ops, &mode_kept);
  fail_unless (mode_kept);
  frames_of_second (den, &od, &denormal_ops, &mode_kept);
  fail_unless (mode_kept, "the flush modes stayed changed after a push");
  fail_if (denormal_ops, "denormal samples took the slow path: the element "
      "did arithmetic on denormal operands");
  fail_unless_equals_int (od.data->len, oz.data->len);
  fail_unless (memcmp (od.data->data, oz.data->data,
          oz.data->len * sizeof (gfloat)) == 0,
      "denormal samples gave other frames than silence");
  output_clear (&od);

  frames_of_second (normal, &on, &denormal_ops, &mode_kept);
  fail_unless (mode_kept);
  fail_if (denormal_ops, "denormal samples after a signal took the slow "
      "path");
  /* the frames that hold only denormals are silence */
  for (guint k = 0; k < output_frames (&on, N_MELS); k++)
    if ((gsize) k * HOP >= RATE / 2)
      fail_unless (memcmp (&g_array_index (on.data, gfloat, k * N_MELS),
              &g_array_index (oz.data, gfloat, k * N_MELS),
              N_MELS * sizeof (gfloat)) == 0, "frame %u", k);
  output_clear (&on);
  output_clear (&oz);
  g_free (zeros);
  g_free (den);
  g_free (normal);
#ifdef __SSE__
  _mm_setcsr (csr);
#endif
}

GST_END_TEST;

/* State cycling with and without data: no leak, no deadlock, and the
 * framing starts afresh every time. */
GST_START_TEST (test_state_cycles)
{
  GstElement *pipeline = gst_parse_launch ("audiotestsrc is-live=true "
      "samplesperbuffer=160 ! audio/x-raw,rate=16000 ! audioconvert ! "
      "avspectrogram ! fakesink sync=false", NULL);

  fail_unless (pipeline != NULL);
  for (guint i = 0; i < 40; i++) {
    fail_if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
        GST_STATE_CHANGE_FAILURE);
    if (i % 2)
      fail_if (gst_element_get_state (pipeline, NULL, NULL,
              5 * GST_SECOND) == GST_STATE_CHANGE_FAILURE);
    fail_unless_equals_int (gst_element_set_state (pipeline,
            GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  }
  gst_object_unref (pipeline);
}

GST_END_TEST;

static Suite *
avspectrogram_suite (void)
{
  Suite *s = suite_create ("avspectrogram");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_streaming_equals_whole);
  tcase_add_test (tc, test_streaming_properties);
  tcase_add_test (tc, test_torchaudio_fixture);
  tcase_add_test (tc, test_sine_peak);
  tcase_add_test (tc, test_discont);
  tcase_add_test (tc, test_gap);
  tcase_add_test (tc, test_no_timestamps);
  tcase_add_test (tc, test_eos_drops_partial);
  tcase_add_test (tc, test_rate_change);
  tcase_add_test (tc, test_stereo_is_mean);
  tcase_add_test (tc, test_memory_layouts);
  tcase_add_test (tc, test_partial_sample_frame_warns_once);
  tcase_add_test (tc, test_property_change_while_playing);
  tcase_add_test (tc, test_pipeline_frame_count);
  tcase_add_test (tc, test_clips);
  tcase_add_test (tc, test_refused_caps);
  tcase_add_test (tc, test_latency);
  tcase_add_test (tc, test_negotiates_model_rate);
  tcase_add_test (tc, test_denormals_flushed);
  tcase_add_test (tc, test_state_cycles);
  return s;
}

AVF_CHECK_MAIN (avspectrogram);
