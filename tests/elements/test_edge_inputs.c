/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Odd inputs through the real elements (docs/robustness.md items 7, 8, 10,
 * 11, 29, 30, 31):
 * - sample rate and channel changes mid-stream through a whole pipeline,
 *   with and without audioresample in front of avspectrogram;
 * - resolution changes mid-stream through avpatchembed into avattention:
 *   grids with the same patch count go on, other sizes are refused;
 * - extreme sizes: 1x1 to 32768x32768 video, 1 Hz to 768 kHz and 64
 *   channels of audio, n-fft and hop-length at the ends of their ranges;
 * - digital silence, clipping, denormals, NaN and infinity in audio samples,
 *   spectrogram frames and patch embeddings;
 * - buffers in several memories, cut in the middle of a value, and
 *   buffers larger than their caps say.
 *
 * The elements run with the small fixture weights (weights_small:
 * E 48, M 40, P 8, N 12 = a 4x3 grid of a 32x24 picture, T_max 40) where a
 * model is involved, and with the seeded weights for avpatchembed's size
 * checks.  Reference values come from a second run of the same elements on
 * the clean or post-change input alone, or from core/mel.h, so that
 * "bit-identical" means what it says.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>
#include <unistd.h>

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/audio/audio.h>
#include <gst/check/gstcheck.h>
#include "avf_check.h"
#include <gst/check/gstharness.h>
#include <gst/video/video.h>

#include "gstavattentionmeta.h"
#include "gstavtensor.h"
#include "mel.h"

#define MS GST_MSECOND
#define SMALL_WEIGHTS "weights_small.safetensors"
/* the shape of weights_small.safetensors */
#define SM_E 48
#define SM_M 40
#define SM_P 8
#define SM_N 12
#define SM_T_MAX 40
/* spec §1 defaults */
#define RATE 16000
#define N_FFT 400
#define HOP 160
#define HOP_NS (10 * MS)
/* How long a pipeline run may take before the test calls it a hang. */
#define RUN_TIMEOUT (30 * GST_SECOND)

/* ---- general helpers -------------------------------------------------- */

/* Resident memory of this process. */
static gsize
rss_bytes (void)
{
  gchar *text = NULL;
  gsize rss = 0;

  if (g_file_get_contents ("/proc/self/statm", &text, NULL, NULL)) {
    gchar **f = g_strsplit (text, " ", 3);
    if (f[0] && f[1])
      rss = (gsize) g_ascii_strtoull (f[1], NULL, 10)
          * (gsize) sysconf (_SC_PAGESIZE);
    g_strfreev (f);
  }
  g_free (text);
  return rss;
}

static gboolean
all_finite (const gfloat * x, gsize n)
{
  for (gsize i = 0; i < n; i++)
    if (!isfinite (x[i]))
      return FALSE;
  return TRUE;
}

/* A buffer holding a copy of data in memories cut at the byte offsets in
 * cuts (ascending, inside the data). */
static GstBuffer *
split_buffer (gconstpointer data, gsize size, const gsize * cuts, guint n)
{
  GstBuffer *buf = gst_buffer_new ();
  gsize from = 0;

  for (guint i = 0; i <= n; i++) {
    const gsize to = i < n ? cuts[i] : size;
    gpointer part = g_memdup2 ((const guint8 *) data + from, to - from);

    gst_buffer_append_memory (buf, gst_memory_new_wrapped (0, part,
            to - from, 0, to - from, part, g_free));
    from = to;
  }
  fail_unless_equals_int (gst_buffer_n_memory (buf), n + 1);
  return buf;
}

/* ---- signals ---------------------------------------------------------- */

static guint8 *
make_bytes (gsize n, guint32 seed)
{
  guint8 *b = g_new (guint8, n);
  guint32 s = seed * 2654435761u + 1u;

  for (gsize i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    b[i] = (guint8) (s >> 24);
  }
  return b;
}

static GstCaps *
audio_caps (gint rate, gint channels)
{
  GstCaps *caps = gst_caps_new_simple ("audio/x-raw",
      "format", G_TYPE_STRING, GST_AUDIO_NE (F32),
      "layout", G_TYPE_STRING, "interleaved",
      "rate", G_TYPE_INT, rate, "channels", G_TYPE_INT, channels, NULL);

  /* more than two channels need a mask; 0 = unpositioned */
  if (channels > 2)
    gst_caps_set_simple (caps, "channel-mask", GST_TYPE_BITMASK,
        (guint64) 0, NULL);
  return caps;
}

static GstCaps *
rgb_caps (gint width, gint height)
{
  return gst_caps_new_simple ("video/x-raw", "format", G_TYPE_STRING, "RGB",
      "width", G_TYPE_INT, width, "height", G_TYPE_INT, height,
      "framerate", GST_TYPE_FRACTION, 10, 1, NULL);
}

static AvfMelConfig
mel_config (gint rate, gint n_fft, gint hop, gint n_mels)
{
  AvfMelConfig cfg = avf_mel_config_default ();

  cfg.sample_rate = rate;
  cfg.n_fft = n_fft;
  cfg.hop = hop;
  cfg.n_mels = n_mels;
  return cfg;
}

/* ---- avspectrogram with a harness ------------------------------------- */

typedef struct
{
  GArray *data;                 /* gfloat, every frame in order */
  guint n_mels;
  guint n_buffers;
} Frames;

static void
frames_init (Frames * f)
{
  memset (f, 0, sizeof *f);
  f->data = g_array_new (FALSE, FALSE, sizeof (gfloat));
}

static void
frames_clear (Frames * f)
{
  g_array_free (f->data, TRUE);
}

static guint
frames_count (const Frames * f)
{
  return f->n_mels ? f->data->len / f->n_mels : 0;
}

static const gfloat *
frames_at (const Frames * f, guint k)
{
  return &g_array_index (f->data, gfloat, (gsize) k * f->n_mels);
}

/* Pulls every output buffer of the harness.  Each buffer's timestamp must
 * follow the counter formula of a run that started at base (spec §1:
 * frame k at base + k * hop / rate, k from the buffer offset). */
static void
spec_collect (GstHarness * h, Frames * f, GstClockTime base)
{
  GstBuffer *b;

  while ((b = gst_harness_try_pull (h)) != NULL) {
    GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
    GstAvTensorInfo info;
    gchar *why = NULL;
    GstMapInfo map;

    fail_unless (caps != NULL);
    fail_unless (gst_av_tensor_info_from_caps (&info, caps, &why), "%s", why);
    gst_caps_unref (caps);
    fail_unless (f->n_mels == 0 || f->n_mels == (guint) info.n_mels);
    f->n_mels = info.n_mels;
    fail_unless_equals_uint64 (GST_BUFFER_PTS (b), base +
        gst_util_uint64_scale (GST_BUFFER_OFFSET (b) * info.hop_length,
            GST_SECOND, info.rate));
    fail_unless (gst_buffer_map (b, &map, GST_MAP_READ));
    fail_unless_equals_uint64 (map.size % (info.n_mels * sizeof (gfloat)),
        0);
    fail_unless_equals_uint64 (GST_BUFFER_OFFSET (b), frames_count (f));
    g_array_append_vals (f->data, map.data, map.size / sizeof (gfloat));
    gst_buffer_unmap (b, &map);
    gst_buffer_unref (b);
    f->n_buffers++;
  }
}

/* Frames [k0, k0 + n) are bit-identical to ref (n, n_mels). */
static void
check_frames_equal (const Frames * f, guint k0, const gfloat * ref, gsize n,
    const gchar * what)
{
  fail_unless (frames_count (f) >= k0 + n, "%s: %u frames, %" G_GSIZE_FORMAT
      " expected from %u", what, frames_count (f), n, k0);
  for (gsize i = 0; i < n * f->n_mels; i++) {
    const gfloat a = frames_at (f, k0)[i];
    fail_unless (memcmp (&a, &ref[i], sizeof a) == 0,
        "%s: frame %" G_GSIZE_FORMAT " band %" G_GSIZE_FORMAT ": %.9g, "
        "expected %.9g", what, k0 + i / f->n_mels, i % f->n_mels, a, ref[i]);
  }
}

static GstHarness *
spec_harness (const AvfMelConfig * cfg, GstBus ** bus)
{
  GstElement *e = gst_element_factory_make ("avspectrogram", NULL);
  GstHarness *h;

  fail_unless (e != NULL, "avspectrogram is not in the registry");
  g_object_set (e, "n-fft", cfg->n_fft, "hop-length", cfg->hop, "n-mels",
      cfg->n_mels, "f-min", cfg->f_min, "f-max", cfg->f_max, NULL);
  *bus = gst_bus_new ();
  gst_element_set_bus (e, *bus);
  h = gst_harness_new_with_element (e, "sink", "src");
  gst_object_unref (e);
  return h;
}

/* Pushes stream-start, caps and a time segment into the harness even when
 * the element refuses the caps (a refused sticky event is still stored, so
 * every later push offers it again). */
static void
harness_force_caps (GstHarness * h, GstCaps * caps)
{
  GstSegment segment;

  gst_harness_push_event (h, gst_event_new_stream_start ("edge-inputs"));
  gst_pad_push_event (h->srcpad, gst_event_new_caps (caps));
  gst_caps_unref (caps);
  gst_segment_init (&segment, GST_FORMAT_TIME);
  gst_harness_push_event (h, gst_event_new_segment (&segment));
}

static GstFlowReturn
push_audio (GstHarness * h, const gfloat * x, gsize n, gint channels,
    GstClockTime pts)
{
  GstBuffer *buf = gst_buffer_new_memdup (x, n * channels * sizeof (gfloat));

  GST_BUFFER_PTS (buf) = pts;
  return gst_harness_push (h, buf);
}

/* Fails on any error or warning the element posted. */
static void
fail_on_bus_messages (GstBus * bus, const gchar * what)
{
  GstMessage *m;

  while ((m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR |
              GST_MESSAGE_WARNING)) != NULL) {
    gchar *text = avf_message_text (m, NULL, NULL);
    fail ("%s: unexpected %s: %s", what, GST_MESSAGE_TYPE_NAME (m), text);
    g_free (text);
    gst_message_unref (m);
  }
}

/* Feeds x (n sample frames of `channels`) in buffers of `chunk` to a fresh
 * avspectrogram with cfg and checks that the frames are bit-identical to
 * core/mel.h on the whole signal, with counter timestamps from 0. */
static void
check_spectrogram_matches_core (const AvfMelConfig * cfg, const gfloat * x,
    gsize n, gint channels, gsize chunk, guint expected_frames,
    const gchar * what)
{
  GstBus *bus;
  GstHarness *h = spec_harness (cfg, &bus);
  gsize n_ref;
  gfloat *ref = avf_reference_mel (cfg, x, n, channels, &n_ref);
  Frames f;

  fail_unless_equals_int (n_ref, expected_frames);
  frames_init (&f);
  gst_harness_set_src_caps (h, audio_caps (cfg->sample_rate, channels));
  for (gsize off = 0; off < n; off += chunk)
    fail_unless_equals_int (push_audio (h, x + off * channels,
            MIN (chunk, n - off), channels, gst_util_uint64_scale (off,
                GST_SECOND, cfg->sample_rate)), GST_FLOW_OK);
  spec_collect (h, &f, 0);
  fail_unless_equals_int (frames_count (&f), n_ref);
  fail_unless (all_finite ((const gfloat *) f.data->data, f.data->len),
      "%s: a frame is not finite", what);
  check_frames_equal (&f, 0, ref, n_ref, what);
  fail_on_bus_messages (bus, what);
  frames_clear (&f);
  g_free (ref);
  avf_harness_teardown_with_bus (h, bus);
}

/* ---- whole pipelines from appsrc -------------------------------------- */

typedef struct
{
  GMutex lock;
  GPtrArray *out;               /* GstBuffer from the appsink */
  GArray *mel;                  /* gfloat: frames leaving "spec" */
  GArray *mel_pts;              /* GstClockTime per frame */
  GArray *mel_rate;             /* gint per frame: rate of its caps */
  gint n_mels;
  AvfRun run;                   /* end-of-stream, error and warning
                                 * messages */
} Run;

static Run *
run_new (void)
{
  Run *r = g_new0 (Run, 1);

  g_mutex_init (&r->lock);
  r->out = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
  r->mel = g_array_new (FALSE, FALSE, sizeof (gfloat));
  r->mel_pts = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  r->mel_rate = g_array_new (FALSE, FALSE, sizeof (gint));
  return r;
}

static void
run_free (Run * r)
{
  g_ptr_array_unref (r->out);
  g_array_free (r->mel, TRUE);
  g_array_free (r->mel_pts, TRUE);
  g_array_free (r->mel_rate, TRUE);
  avf_run_clear (&r->run);
  g_mutex_clear (&r->lock);
  g_free (r);
}

static GstFlowReturn
on_new_sample (GstAppSink * sink, gpointer user_data)
{
  Run *r = user_data;
  GstSample *s = gst_app_sink_pull_sample (sink);

  if (s == NULL)
    return GST_FLOW_ERROR;
  g_mutex_lock (&r->lock);
  g_ptr_array_add (r->out, gst_buffer_ref (gst_sample_get_buffer (s)));
  g_mutex_unlock (&r->lock);
  gst_sample_unref (s);
  return GST_FLOW_OK;
}

/* Records every spectrogram frame that leaves the element "spec". */
static GstPadProbeReturn
on_mel_buffer (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Run *r = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstCaps *caps = gst_pad_get_current_caps (pad);
  GstAvTensorInfo ti;
  GstMapInfo map;

  if (caps && gst_av_tensor_info_from_caps (&ti, caps, NULL)
      && gst_buffer_map (buf, &map, GST_MAP_READ)) {
    const gsize n = map.size / (ti.frame_size * sizeof (gfloat));

    g_mutex_lock (&r->lock);
    r->n_mels = ti.n_mels;
    for (gsize i = 0; i < n; i++) {
      GstClockTime t = gst_av_tensor_frame_pts (&ti, GST_BUFFER_PTS (buf), i);
      g_array_append_val (r->mel_pts, t);
      g_array_append_val (r->mel_rate, ti.rate);
    }
    g_array_append_vals (r->mel, map.data, n * ti.frame_size);
    g_mutex_unlock (&r->lock);
    gst_buffer_unmap (buf, &map);
  }
  if (caps)
    gst_caps_unref (caps);
  return GST_PAD_PROBE_OK;
}

static void
push_feed (GstElement * src, GPtrArray * feed)
{
  if (src == NULL)
    return;
  for (guint i = 0; feed && i < feed->len; i++)
    fail_unless_equals_int (gst_app_src_push_sample (GST_APP_SRC (src),
            g_ptr_array_index (feed, i)), GST_FLOW_OK);
  fail_unless_equals_int (gst_app_src_end_of_stream (GST_APP_SRC (src)),
      GST_FLOW_OK);
}

/* The appsrcs of a run and what they push once it plays. */
typedef struct
{
  GstElement *asrc, *vsrc;
  GPtrArray *audio, *video;
} Feeds;

static void
push_feeds (GstElement * pipeline, gpointer user_data)
{
  Feeds *f = user_data;

  push_feed (f->asrc, f->audio);
  push_feed (f->vsrc, f->video);
}

/* Runs the pipeline `desc` (appsrc "asrc" and/or "vsrc", an appsink "sink",
 * optionally an avspectrogram "spec") on the samples of the two feeds, to
 * end-of-stream or the first error.  A run that does neither within
 * RUN_TIMEOUT is a hang and fails the test. */
static Run *
run_pipeline (const gchar * desc, GPtrArray * audio, GPtrArray * video)
{
  GError *err = NULL;
  GstElement *p = gst_parse_launch (desc, &err);
  GstElement *sink, *spec;
  GstAppSinkCallbacks cb = { 0, };
  Feeds feeds = {.audio = audio,.video = video };
  Run *r = run_new ();

  fail_unless (err == NULL, "%s: %s", desc, err ? err->message : "");
  fail_unless (p != NULL);
  feeds.asrc = gst_bin_get_by_name (GST_BIN (p), "asrc");
  feeds.vsrc = gst_bin_get_by_name (GST_BIN (p), "vsrc");
  sink = gst_bin_get_by_name (GST_BIN (p), "sink");
  spec = gst_bin_get_by_name (GST_BIN (p), "spec");
  fail_unless (sink != NULL);
  cb.new_sample = on_new_sample;
  gst_app_sink_set_callbacks (GST_APP_SINK (sink), &cb, r, NULL);
  if (spec) {
    GstPad *pad = gst_element_get_static_pad (spec, "src");
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, on_mel_buffer, r,
        NULL);
    gst_object_unref (pad);
  }

  r->run.timeout = RUN_TIMEOUT;
  r->run.started = push_feeds;
  r->run.user_data = &feeds;
  r->run.what = desc;
  avf_run_pipeline (p, &r->run);
  gst_clear_object (&feeds.asrc);
  gst_clear_object (&feeds.vsrc);
  gst_clear_object (&spec);
  gst_object_unref (sink);
  gst_object_unref (p);
  return r;
}

/* The first error of a run: from `source`, of domain/code; its text. */
static gchar *
run_first_error (Run * r, const gchar * source, GQuark domain, gint code)
{
  for (GList * l = r->run.messages; l; l = l->next) {
    GstMessage *m = l->data;
    GQuark d;
    gint c;
    gchar *text;

    if (GST_MESSAGE_TYPE (m) != GST_MESSAGE_ERROR)
      continue;
    text = avf_message_text (m, &d, &c);
    fail_unless_equals_string (GST_MESSAGE_SRC_NAME (m), source);
    fail_unless (d == domain && c == code, "unexpected error %s %d: %s",
        g_quark_to_string (d), c, text);
    GST_INFO ("error as expected: %s", text);
    return text;
  }
  fail ("no error message");
  return NULL;
}

/* Appends the audio x (n sample frames) as samples of `chunk` frames with
 * the caps of rate/channels, timestamped from base. */
static void
feed_audio (GPtrArray * feed, const gfloat * x, gsize n, gint rate,
    gint channels, GstClockTime base, gsize chunk)
{
  GstCaps *caps = audio_caps (rate, channels);

  for (gsize off = 0; off < n; off += chunk) {
    const gsize len = MIN (chunk, n - off);
    GstBuffer *b = gst_buffer_new_memdup (x + off * channels,
        len * channels * sizeof (gfloat));

    GST_BUFFER_PTS (b) = base + gst_util_uint64_scale (off, GST_SECOND, rate);
    GST_BUFFER_DURATION (b) = base + gst_util_uint64_scale (off + len,
        GST_SECOND, rate) - GST_BUFFER_PTS (b);
    g_ptr_array_add (feed, gst_sample_new (b, caps, NULL, NULL));
    gst_buffer_unref (b);
  }
  gst_caps_unref (caps);
}

/* Appends one RGB picture of width x height (size bytes) at pts. */
static void
feed_picture (GPtrArray * feed, const guint8 * data, gsize size, gint width,
    gint height, GstClockTime pts)
{
  GstCaps *caps = rgb_caps (width, height);
  GstBuffer *b = gst_buffer_new_memdup (data, size);

  GST_BUFFER_PTS (b) = pts;
  GST_BUFFER_DURATION (b) = 100 * MS;
  g_ptr_array_add (feed, gst_sample_new (b, caps, NULL, NULL));
  gst_buffer_unref (b);
  gst_caps_unref (caps);
}

static GPtrArray *
feed_new (void)
{
  return g_ptr_array_new_with_free_func ((GDestroyNotify) gst_sample_unref);
}

/* appsrc ! [audioresample !] avspectrogram n-mels=40, into an
 * avattention with avpatchembed on the video (small weights), or alone
 * into the appsink when with_video is FALSE. */
static gchar *
pipeline_desc (gboolean resample, gboolean with_video, guint64 window)
{
  gchar *w = avf_fixture_path (SMALL_WEIGHTS);
  const gchar *pre = resample ? "audioresample ! " : "";
  gchar *desc;

  if (with_video)
    desc = g_strdup_printf ("appsrc name=asrc format=time ! %s"
        "avspectrogram name=spec n-mels=%d ! queue ! att.audio_sink "
        "appsrc name=vsrc format=time ! avpatchembed name=pe weights=\"%s\" "
        "! queue ! att.video_sink avattention name=att weights=\"%s\" "
        "window=%" G_GUINT64_FORMAT " ! appsink name=sink sync=false",
        pre, SM_M, w, w, window);
  else
    desc = g_strdup_printf ("appsrc name=asrc format=time ! %s"
        "avspectrogram name=spec n-mels=%d ! appsink name=sink sync=false",
        pre, SM_M);
  g_free (w);
  return desc;
}

/* The spectrogram frames of a run with timestamps in [from, to). */
static void
run_mel_range (Run * r, GstClockTime from, GstClockTime to, guint * k0,
    guint * n)
{
  *k0 = 0;
  *n = 0;
  for (guint k = 0; k < r->mel_pts->len; k++) {
    GstClockTime t = g_array_index (r->mel_pts, GstClockTime, k);
    if (t >= from && t < to) {
      if (*n == 0)
        *k0 = k;
      fail_unless (k == *k0 + *n, "frames of [%" GST_TIME_FORMAT ", %"
          GST_TIME_FORMAT ") are not contiguous", GST_TIME_ARGS (from),
          GST_TIME_ARGS (to));
      (*n)++;
    }
  }
}

/* The fused output k of a run: finite, at pts, with a meta; returns the
 * meta. */
static GstAvAttentionMeta *
check_fused (Run * r, guint k, GstClockTime pts)
{
  GstBuffer *b = g_ptr_array_index (r->out, k);
  GstAvAttentionMeta *meta = gst_buffer_get_av_attention_meta (b);
  GstMapInfo map;

  fail_unless_equals_uint64 (GST_BUFFER_PTS (b), pts);
  fail_unless (meta != NULL, "output %u has no attention meta", k);
  fail_unless (gst_buffer_map (b, &map, GST_MAP_READ));
  fail_unless_equals_int (map.size, 2 * SM_E * sizeof (gfloat));
  fail_unless (all_finite ((const gfloat *) map.data, 2 * SM_E),
      "output %u is not finite", k);
  gst_buffer_unmap (b, &map);
  return meta;
}

/* ---- (1) rate and channel changes through a whole pipeline ------------- */

/* The three audio segments of the rate-change tests: 0.5 s of 16 kHz mono,
 * 0.5 s of 44.1 kHz stereo, 0.5 s of 16 kHz mono, one after the other,
 * cut into buffers of 1000 sample frames (the caps change between two
 * buffers). */
typedef struct
{
  gint rate, channels;
  gsize n;
  GstClockTime base;
  gfloat *x;
} Segment;

static void
make_segments (Segment seg[3])
{
  const gint rates[3] = { 16000, 44100, 16000 }, chans[3] = { 1, 2, 1 };

  for (guint i = 0; i < 3; i++) {
    seg[i].rate = rates[i];
    seg[i].channels = chans[i];
    seg[i].n = (gsize) rates[i] / 2;
    seg[i].base = i * 500 * MS;
    seg[i].x = avf_make_signal (seg[i].n, chans[i], rates[i], 100 + i, 37.0);
  }
}

static void
free_segments (Segment seg[3])
{
  for (guint i = 0; i < 3; i++)
    g_free (seg[i].x);
}

/* Video for the rate-change tests: 15 frames at 10 fps, 32x24. */
static GPtrArray *
video_feed_32x24 (guint n_frames)
{
  GPtrArray *feed = feed_new ();

  for (guint k = 0; k < n_frames; k++) {
    guint8 *px = make_bytes (32 * 24 * 3, k);
    feed_picture (feed, px, 32 * 24 * 3, 32, 24, k * 100 * MS);
    g_free (px);
  }
  return feed;
}

/* Each segment's spectrogram frames in the whole run are bit-identical to
 * those of a fresh run of the same audio chain on that segment alone: no
 * sample of one format is mixed into a frame of the next.  The whole run
 * ends when avattention has fused its last video frame (at @last_video):
 * every spectrogram frame that starts before it is there, the ones after
 * it may or may not have left avspectrogram by then (a race the test once
 * lost, 42 of 48 frames of the last segment), so they are compared as far
 * as they go. */
static void
check_segments_fresh (Run * whole, Segment seg[3], gboolean resample,
    GstClockTime last_video)
{
  gchar *desc = pipeline_desc (resample, FALSE, 0);

  for (guint i = 0; i < 3; i++) {
    GPtrArray *a = feed_new ();
    Run *fresh;
    guint f0, n, g0, m;

    feed_audio (a, seg[i].x, seg[i].n, seg[i].rate, seg[i].channels,
        seg[i].base, 1000);
    fresh = run_pipeline (desc, a, NULL);
    avf_run_fail_on_messages (&fresh->run, "fresh spectrogram run");
    fail_unless (fresh->run.eos);
    run_mel_range (whole, seg[i].base, seg[i].base + 500 * MS, &f0, &n);
    run_mel_range (fresh, seg[i].base, seg[i].base + 500 * MS, &g0, &m);
    GST_INFO ("segment %u (%d Hz, %d ch): %u frames in the whole run, %u "
        "alone", i, seg[i].rate, seg[i].channels, n, m);
    fail_unless (m > 0);
    fail_unless_equals_int (fresh->mel->len, m * SM_M);
    if (seg[i].base + 500 * MS <= last_video) {
      fail_unless_equals_int (n, m);
    } else {
      guint h0, needed;

      run_mel_range (fresh, seg[i].base, last_video, &h0, &needed);
      fail_unless (n >= needed && n <= m, "segment %u: %u frames in the "
          "whole run, %u alone, %u of them before the last video frame", i,
          n, m, needed);
    }
    for (guint k = 0; k < n; k++) {
      fail_unless_equals_uint64 (g_array_index (whole->mel_pts,
              GstClockTime, f0 + k), g_array_index (fresh->mel_pts,
              GstClockTime, g0 + k));
      fail_unless (memcmp (&g_array_index (whole->mel, gfloat,
                  (gsize) (f0 + k) * SM_M), &g_array_index (fresh->mel,
                  gfloat, (gsize) (g0 + k) * SM_M),
              SM_M * sizeof (gfloat)) == 0, "segment %u frame %u differs "
          "from a fresh run on the segment alone", i, k);
    }
    run_free (fresh);
    g_ptr_array_unref (a);
  }
  g_free (desc);
}

/* Spec §3 for the video frame at t, from the spectrogram frames that left
 * avspectrogram: the frames in [t - window, t) have one format (rate R; no
 * window of these tests straddles a change), so the window has
 * T = round(window * R / hop) slots and every frame of that format before t
 * fills slot round((s - (t - window)) * R / hop) when it lies in 0..T-1.
 * Returns the expected T (0 when no frame is in the window) and the filled
 * slots. */
static guint
expected_window (Run * r, GstClockTime t, GstClockTime window, guint * T)
{
  const gdouble w0 = (gdouble) t - (gdouble) window;
  gint rate = 0;
  guint8 filled[SM_T_MAX] = { 0, };
  guint present = 0;

  for (guint k = 0; k < r->mel_pts->len; k++) {
    const gdouble s = (gdouble) g_array_index (r->mel_pts, GstClockTime, k);
    const gint R = g_array_index (r->mel_rate, gint, k);
    if (s >= w0 && s < (gdouble) t) {
      fail_unless (rate == 0 || rate == R, "the window of %" GST_TIME_FORMAT
          " straddles a rate change", GST_TIME_ARGS (t));
      rate = R;
    }
  }
  *T = rate ? (guint) floor ((gdouble) window * rate / (HOP * 1e9) + 0.5) : 0;
  fail_unless (*T <= SM_T_MAX);
  for (guint k = 0; rate && k < r->mel_pts->len; k++) {
    const gdouble s = (gdouble) g_array_index (r->mel_pts, GstClockTime, k);
    const gdouble j = floor ((s - w0) * rate / (HOP * 1e9) + 0.5);
    if (g_array_index (r->mel_rate, gint, k) == rate && s < (gdouble) t
        && j >= 0 && j < *T && !filled[(gint) j]) {
      filled[(gint) j] = 1;
      present++;
    }
  }
  return present;
}

/* Every output of a rate-change run: finite, at its video PTS, and with the
 * window spec §3 gives for the spectrogram frames that were produced. */
static void
check_windows (Run * r, guint n_video, GstClockTime window)
{
  GString *wrong = g_string_new (NULL);

  fail_unless_equals_int (r->out->len, n_video);
  for (guint k = 0; k < n_video; k++) {
    const GstClockTime t = k * 100 * MS;
    GstAvAttentionMeta *meta = check_fused (r, k, t);
    guint T, present = expected_window (r, t, window, &T);

    GST_INFO ("frame at %" GST_TIME_FORMAT ": %u of %u slots (spec: %u of "
        "%u)", GST_TIME_ARGS (t), meta->n_audio_present, meta->n_audio_slots,
        present, T);
    if ((T && meta->n_audio_slots != T) || meta->n_audio_present != present
        || meta->audio_missing != (present == 0))
      g_string_append_printf (wrong, "\nvideo frame at %" GST_TIME_FORMAT
          ": %u of %u audio slots filled (audio-missing %d), but its window "
          "[%" GST_TIME_FORMAT ", %" GST_TIME_FORMAT ") holds spectrogram "
          "frames for %u of %u", GST_TIME_ARGS (t), meta->n_audio_present,
          meta->n_audio_slots, meta->audio_missing,
          GST_TIME_ARGS (t > window ? t - window : 0), GST_TIME_ARGS (t),
          present, T);
  }
  /* every frame is checked before the test fails */
  fail_unless (wrong->len == 0, "windows against spec §3:%s", wrong->str);
  g_string_free (wrong, TRUE);
}

/* appsrc (16 kHz mono -> 44.1 kHz stereo -> 16 kHz mono) ! audioresample !
 * avspectrogram ! avattention (which asks for 16 kHz), with avpatchembed
 * video: the
 * run ends with EOS and no message, one finite fused vector per video
 * frame with the window of spec §3; avspectrogram sees the channel count
 * change (audioresample passes channels through) and restarts its framing,
 * so each segment's frames equal those of the chain on the segment
 * alone. */
GST_START_TEST (test_rate_channel_change_resampled)
{
  Segment seg[3];
  GPtrArray *audio = feed_new (), *video = video_feed_32x24 (15);
  gchar *desc = pipeline_desc (TRUE, TRUE, 100 * MS);
  Run *r;

  make_segments (seg);
  for (guint i = 0; i < 3; i++)
    feed_audio (audio, seg[i].x, seg[i].n, seg[i].rate, seg[i].channels,
        seg[i].base, 1000);
  r = run_pipeline (desc, audio, video);
  avf_run_fail_on_messages (&r->run, "rate changes through audioresample");
  fail_unless (r->run.eos);
  /* the spectrogram is always at 16 kHz */
  for (guint k = 0; k < r->mel_rate->len; k++)
    fail_unless_equals_int (g_array_index (r->mel_rate, gint, k), 16000);
  check_windows (r, 15, 100 * MS);
  check_segments_fresh (r, seg, TRUE, 14 * 100 * MS);

  run_free (r);
  g_free (desc);
  g_ptr_array_unref (audio);
  g_ptr_array_unref (video);
  free_segments (seg);
}

GST_END_TEST;

/* The same without audioresample: avspectrogram sees 16 kHz -> 44.1 kHz
 * stereo -> 16 kHz itself, rebuilds its filterbank and restarts the
 * framing (bit-identical to fresh runs per segment), and avattention gets
 * new log-mel caps: the 100 ms window holds T = 10 slots at 16 kHz and
 * round(0.1 * 44100 / 160) = 28 at 44.1 kHz (weights_small has 40
 * positions).  The output goes on through both changes, and each video
 * frame gets the window of spec §3: the frames at 500 ms and 1 s, whose
 * windows lie wholly in the segment before the change, get that segment's
 * spectrogram frames (T of that segment); the new caps apply to the
 * spectrogram frames after them, not to audio that came before. */
GST_START_TEST (test_rate_change_reaches_avattention)
{
  Segment seg[3];
  GPtrArray *audio = feed_new (), *video = video_feed_32x24 (15);
  gchar *desc = pipeline_desc (FALSE, TRUE, 100 * MS);
  Run *r;

  make_segments (seg);
  for (guint i = 0; i < 3; i++)
    feed_audio (audio, seg[i].x, seg[i].n, seg[i].rate, seg[i].channels,
        seg[i].base, 1000);
  r = run_pipeline (desc, audio, video);
  avf_run_fail_on_messages (&r->run, "rate changes into avattention");
  fail_unless (r->run.eos);
  /* the spectrogram caps follow the audio */
  for (guint k = 0; k < r->mel_rate->len; k++) {
    const GstClockTime t = g_array_index (r->mel_pts, GstClockTime, k);
    fail_unless_equals_int (g_array_index (r->mel_rate, gint, k),
        t >= 500 * MS && t < 1000 * MS ? 44100 : 16000);
  }
  check_segments_fresh (r, seg, FALSE, 14 * 100 * MS);
  check_windows (r, 15, 100 * MS);

  run_free (r);
  g_free (desc);
  g_ptr_array_unref (audio);
  g_ptr_array_unref (video);
  free_segments (seg);
}

GST_END_TEST;

/* A rate change that the weights cannot follow: with the 370 ms window,
 * 44.1 kHz needs round(0.37 * 44100 / 160) = 102 audio positions and
 * weights_small has 40.  avattention stops with an error that names the
 * pad, the rate and the limit (no hang, no generic not-negotiated); the
 * frames before the change came out. */
GST_START_TEST (test_rate_change_beyond_audio_positions)
{
  Segment seg[3];
  GPtrArray *audio = feed_new (), *video = video_feed_32x24 (15);
  gchar *desc = pipeline_desc (FALSE, TRUE, 370 * MS), *text;
  Run *r;

  make_segments (seg);
  for (guint i = 0; i < 3; i++)
    feed_audio (audio, seg[i].x, seg[i].n, seg[i].rate, seg[i].channels,
        seg[i].base, 1000);
  r = run_pipeline (desc, audio, video);
  fail_if (r->run.eos);
  text = run_first_error (r, "att", GST_CORE_ERROR,
      GST_CORE_ERROR_NEGOTIATION);
  avf_check_contains (text, "audio_sink");
  avf_check_contains (text, "44100 Hz");
  avf_check_contains (text, "102 spectrogram frames");
  avf_check_contains (text, "at most 40");
  g_free (text);
  /* frames 0 .. 400 ms; the one at 500 ms, whose window lies before the
   * change, may come out too */
  fail_unless (r->out->len >= 5 && r->out->len <= 6, "%u outputs",
      r->out->len);
  for (guint k = 0; k < r->out->len; k++)
    check_fused (r, k, k * 100 * MS);

  run_free (r);
  g_free (desc);
  g_ptr_array_unref (audio);
  g_ptr_array_unref (video);
  free_segments (seg);
}

GST_END_TEST;

/* ---- (2) resolution changes through avpatchembed into avattention ------ */

/* 32x24, 48x16 and 24x32 RGB pictures are all 2304 bytes and all cut into
 * 12 patches of 8x8 (grids 4x3, 6x2, 3x4): the same bytes mean different
 * pictures depending on the caps in force. */
static const gint grid_sizes[3][4] = {
  /* width, height, columns, rows */
  {32, 24, 4, 3}, {48, 16, 6, 2}, {24, 32, 3, 4},
};

#define RES_FRAMES 8
#define PICTURE_BYTES 2304

/* Runs 8 video frames (pictures[k], with size sizes[k]) and 1 s of 16 kHz
 * audio through avpatchembed/avspectrogram into avattention. */
static Run *
run_resolution (guint8 ** pictures, const guint * sizes)
{
  gchar *desc = pipeline_desc (FALSE, TRUE, 370 * MS);
  GPtrArray *audio = feed_new (), *video = feed_new ();
  gfloat *x = avf_make_signal (RATE, 1, RATE, 7, 37.0);
  Run *r;

  feed_audio (audio, x, RATE, RATE, 1, 0, 1000);
  for (guint k = 0; k < RES_FRAMES; k++)
    feed_picture (video, pictures[k], PICTURE_BYTES,
        grid_sizes[sizes[k]][0], grid_sizes[sizes[k]][1], k * 100 * MS);
  r = run_pipeline (desc, audio, video);
  g_free (x);
  g_ptr_array_unref (audio);
  g_ptr_array_unref (video);
  g_free (desc);
  return r;
}

/* Decision (spec §2 and §4): video_pos is [N, E], so the patch count N is
 * fixed by the weights and cannot be rebuilt; any picture size whose grid
 * has exactly N patches works, so a change between such sizes goes on with
 * the new grid (avpatchembed re-embeds, avattention takes the new grid for
 * its metadata), and a change to any other size is an error (next test).
 * Each buffer is embedded with the caps that came before it: the fused
 * vectors of a run that switches 32x24 -> 48x16 -> 24x32 are bit-identical
 * to those of runs that use one size throughout, frame by frame, while the
 * same bytes under another size give other vectors. */
GST_START_TEST (test_resolution_change_same_patch_count)
{
  static const guint mixed[RES_FRAMES] = { 0, 0, 0, 1, 1, 1, 2, 2 };
  guint8 *pictures[RES_FRAMES];
  Run *ref[3], *r;

  for (guint k = 0; k < RES_FRAMES; k++)
    pictures[k] = make_bytes (PICTURE_BYTES, 1000 + k);
  for (guint s = 0; s < 3; s++) {
    const guint one[RES_FRAMES] = { s, s, s, s, s, s, s, s };
    ref[s] = run_resolution (pictures, one);
    avf_run_fail_on_messages (&ref[s]->run, "one picture size");
    fail_unless (ref[s]->run.eos);
    fail_unless_equals_int (ref[s]->out->len, RES_FRAMES);
  }
  r = run_resolution (pictures, mixed);
  avf_run_fail_on_messages (&r->run, "resolution changes with 12 patches each");
  fail_unless (r->run.eos);
  fail_unless_equals_int (r->out->len, RES_FRAMES);

  for (guint k = 0; k < RES_FRAMES; k++) {
    const guint s = mixed[k];
    GstAvAttentionMeta *meta = check_fused (r, k, k * 100 * MS);

    fail_unless_equals_int (meta->n_patches, SM_N);
    fail_unless_equals_int (meta->grid_columns, grid_sizes[s][2]);
    fail_unless_equals_int (meta->grid_rows, grid_sizes[s][3]);
    fail_unless (avf_buffers_equal (g_ptr_array_index (r->out, k),
            g_ptr_array_index (ref[s]->out, k)), "frame %u: not the vector "
        "of a %dx%d picture", k, grid_sizes[s][0], grid_sizes[s][1]);
    /* the test can tell: the same bytes as another size differ */
    for (guint o = 0; o < 3; o++)
      if (o != s)
        fail_if (avf_buffers_equal (g_ptr_array_index (r->out, k),
                g_ptr_array_index (ref[o]->out, k)), "frame %u: %dx%d and "
            "%dx%d give the same vector", k, grid_sizes[s][0],
            grid_sizes[s][1], grid_sizes[o][0], grid_sizes[o][1]);
  }

  run_free (r);
  for (guint s = 0; s < 3; s++)
    run_free (ref[s]);
  for (guint k = 0; k < RES_FRAMES; k++)
    g_free (pictures[k]);
}

GST_END_TEST;

/* Three 32x24 frames, then one of width x height (size bytes): the run
 * stops with avpatchembed's error (not a hang, not a generic one), and no
 * output comes from the refused frame. */
static gchar *
run_refused_size (gint width, gint height, gsize size)
{
  gchar *desc = pipeline_desc (FALSE, TRUE, 370 * MS);
  GPtrArray *audio = feed_new (), *video = feed_new ();
  gfloat *x = avf_make_signal (RATE, 1, RATE, 7, 37.0);
  guint8 *px = make_bytes (MAX (size, PICTURE_BYTES), 5);
  gchar *text;
  Run *r;

  feed_audio (audio, x, RATE, RATE, 1, 0, 1000);
  for (guint k = 0; k < 3; k++)
    feed_picture (video, px, PICTURE_BYTES, 32, 24, k * 100 * MS);
  feed_picture (video, px, size, width, height, 300 * MS);
  feed_picture (video, px, size, width, height, 400 * MS);
  r = run_pipeline (desc, audio, video);
  fail_if (r->run.eos, "%dx%d video was embedded", width, height);
  text = run_first_error (r, "pe", GST_CORE_ERROR,
      GST_CORE_ERROR_NEGOTIATION);
  fail_unless (r->out->len <= 3);
  for (guint k = 0; k < r->out->len; k++)
    check_fused (r, k, k * 100 * MS);

  run_free (r);
  g_free (px);
  g_free (x);
  g_ptr_array_unref (audio);
  g_ptr_array_unref (video);
  g_free (desc);
  return text;
}

/* A picture size that is not a multiple of the patch size, and one that
 * is but gives another patch count (40x24: a 5x3 grid, N = 15 against the
 * weights' 12), are refused mid-stream by avpatchembed with an error that
 * names the refused size and the sizes that work (32x24 among them);
 * avattention refuses a patch tensor of another N mid-stream, naming both
 * counts, and produces nothing after it. */
GST_START_TEST (test_resolution_change_refused)
{
  gchar *text;

  /* 33x24 RGB: rows padded to 100 bytes */
  text = run_refused_size (33, 24, 100 * 24);
  avf_check_contains (text, "33x24");
  avf_check_contains (text, "8x8-pixel");
  avf_check_contains (text, "32x24");
  g_free (text);

  text = run_refused_size (40, 24, 40 * 24 * 3);
  avf_check_contains (text, "40x24");
  avf_check_contains (text, "exactly 12");
  avf_check_contains (text, "32x24");
  g_free (text);

  /* avattention alone: 4x3 patch tensors, then 5x3 */
  {
    gchar *w = avf_fixture_path (SMALL_WEIGHTS);
    GstElement *att = gst_element_factory_make ("avattention", NULL);
    GstBus *bus = gst_bus_new ();
    GstHarness *hv, *ha;
    gfloat *video = g_new0 (gfloat, 15 * SM_E);
    gfloat mel[SM_M] = { 0, };
    GstBuffer *b;

    fail_unless (att != NULL);
    gst_object_ref_sink (att);
    g_object_set (att, "weights", w, "window", 370 * MS, NULL);
    gst_element_set_bus (att, bus);
    hv = gst_harness_new_with_element (att, "video_sink", "src");
    ha = gst_harness_new_with_element (att, "audio_sink", NULL);
    gst_harness_set_live (hv, FALSE);
    gst_harness_set_live (ha, FALSE);
    gst_harness_set_src_caps (ha, gst_av_tensor_caps_log_mel (SM_M, RATE,
            HOP, N_FFT));
    gst_harness_set_src_caps (hv, gst_av_tensor_caps_patches (SM_E, 4, 3,
            SM_P, 10, 1));
    b = gst_buffer_new_memdup (video, SM_N * SM_E * sizeof (gfloat));
    GST_BUFFER_PTS (b) = 0;
    GST_BUFFER_DURATION (b) = 100 * MS;
    fail_unless_equals_int (gst_harness_push (hv, b), GST_FLOW_OK);
    b = gst_buffer_new_memdup (mel, sizeof mel);
    GST_BUFFER_PTS (b) = 0;
    GST_BUFFER_DURATION (b) = HOP_NS;
    fail_unless_equals_int (gst_harness_push (ha, b), GST_FLOW_OK);
    b = gst_harness_pull (hv);
    fail_unless (b != NULL, "no output for the 4x3 frame");
    gst_buffer_unref (b);

    gst_harness_set_src_caps (hv, gst_av_tensor_caps_patches (SM_E, 5, 3,
            SM_P, 10, 1));
    text = avf_expect_error (bus, 10 * GST_SECOND, GST_CORE_ERROR,
        GST_CORE_ERROR_NEGOTIATION);
    avf_check_contains (text, "video_sink");
    avf_check_contains (text, "15 patches");
    avf_check_contains (text, "5 x 3");
    avf_check_contains (text, "expect 12");
    g_free (text);
    /* a 5x3 tensor and the audio for it: no output comes (the push itself
     * may be queued before the element stops) */
    b = gst_buffer_new_memdup (video, 15 * SM_E * sizeof (gfloat));
    GST_BUFFER_PTS (b) = 100 * MS;
    GST_BUFFER_DURATION (b) = 100 * MS;
    gst_harness_push (hv, b);
    g_usleep (G_USEC_PER_SEC / 5);
    fail_unless (gst_harness_try_pull (hv) == NULL, "output after the "
        "refused caps");

    avf_harness_teardown_pair (ha, hv);
    gst_element_set_bus (att, NULL);
    gst_bus_set_flushing (bus, TRUE);
    gst_object_unref (bus);
    gst_object_unref (att);
    g_free (video);
    g_free (w);
  }
}

GST_END_TEST;

/* ---- (3) extreme sizes -------------------------------------------------- */

/* avpatchembed with the seeded weights (P 16, N 196): 1x1, 2x2 and 16x16
 * (a whole patch, but 1 of 196) are refused naming the size and 224x224;
 * 32768x32768 is refused the same way from the caps alone, without any
 * allocation near its 3 GiB frame size (resident memory grows by less than
 * 64 MiB) and without a caps query answer for it; the extreme aspect ratio
 * 3136x16 (a 196x1 grid) works. */
GST_START_TEST (test_extreme_video_sizes)
{
  static const gint refused[][2] = {
    {1, 1}, {2, 2}, {16, 16}, {32768, 32768}, {32768, 16},
  };
  const gsize rss0 = rss_bytes ();

  for (guint i = 0; i < G_N_ELEMENTS (refused); i++) {
    const gint w = refused[i][0], hgt = refused[i][1];
    GstElement *e = gst_element_factory_make ("avpatchembed", NULL);
    GstBus *bus = gst_bus_new ();
    GstHarness *h;
    GstCaps *caps = rgb_caps (w, hgt), *q;
    GstPad *pad;
    gchar *text, *size = g_strdup_printf ("%dx%d", w, hgt);

    /* the seeded weights (P 16, N 196, E 256), asked for */
    gst_util_set_object_arg (G_OBJECT (e), "model", "seeded");
    gst_element_set_bus (e, bus);
    h = gst_harness_new_with_element (e, "sink", "src");
    /* the caps query never offers the size */
    pad = gst_element_get_static_pad (e, "sink");
    q = gst_pad_query_caps (pad, caps);
    fail_unless (gst_caps_is_empty (q), "%s offered: %" GST_PTR_FORMAT,
        size, q);
    gst_caps_unref (q);
    gst_object_unref (pad);

    harness_force_caps (h, caps);
    text = avf_expect_error (bus, 10 * GST_SECOND, GST_CORE_ERROR,
        GST_CORE_ERROR_NEGOTIATION);
    avf_check_contains (text, size);
    avf_check_contains (text, "224x224");
    g_free (text);
    /* a (small) buffer is not embedded */
    fail_unless_equals_int (gst_harness_push (h,
            gst_buffer_new_allocate (NULL, 64, NULL)),
        GST_FLOW_NOT_NEGOTIATED);
    fail_unless_equals_int (gst_harness_buffers_received (h), 0);
    avf_harness_teardown_with_bus (h, bus);
    gst_object_unref (e);
    g_free (size);
  }
  fail_unless (rss_bytes () < rss0 + 64 * 1024 * 1024, "resident memory "
      "grew from %" G_GSIZE_FORMAT " to %" G_GSIZE_FORMAT " bytes", rss0,
      rss_bytes ());

  /* 3136x16 and 16x3136: 196 patches in one row or column */
  for (guint i = 0; i < 2; i++) {
    const gint w = i ? 16 : 3136, hgt = i ? 3136 : 16;
    GstElement *e = gst_element_factory_make ("avpatchembed", NULL);
    GstBus *bus = gst_bus_new ();
    GstHarness *h;
    guint8 *px = make_bytes ((gsize) w * hgt * 3, 9);
    GstBuffer *b;
    GstMapInfo map;

    /* the seeded weights (P 16, N 196, E 256), asked for */
    gst_util_set_object_arg (G_OBJECT (e), "model", "seeded");
    gst_element_set_bus (e, bus);
    h = gst_harness_new_with_element (e, "sink", "src");
    gst_harness_set_src_caps (h, rgb_caps (w, hgt));
    b = gst_buffer_new_memdup (px, (gsize) w * hgt * 3);
    GST_BUFFER_PTS (b) = 0;
    fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
    b = gst_harness_pull (h);
    fail_unless (b != NULL);
    fail_unless (gst_buffer_map (b, &map, GST_MAP_READ));
    fail_unless_equals_int (map.size, 196 * 256 * sizeof (gfloat));
    fail_unless (all_finite ((const gfloat *) map.data, 196 * 256));
    gst_buffer_unmap (b, &map);
    gst_buffer_unref (b);
    fail_on_bus_messages (bus, "196x1 grid");
    avf_harness_teardown_with_bus (h, bus);
    gst_object_unref (e);
    g_free (px);
  }
}

GST_END_TEST;

/* avspectrogram at the ends of its caps range.  1 Hz: with f-max 0 the mel
 * range is 0 .. rate // 2 = 0 Hz (torchaudio's default too), which has no
 * width: refused at negotiation naming the rate and the range; with
 * f-max 0.5 it runs and matches core/mel.h.  8 kHz
 * mono, 768 kHz mono (f-max 384 kHz, 2.4 frames per millisecond) and 64
 * channels at 16 kHz (fed unaligned, so that the element's bounce area
 * takes several rounds) give exactly core/mel.h's frames with counter
 * timestamps.  65 channels and 768001 Hz are outside the template and
 * refused by the pad. */
GST_START_TEST (test_extreme_audio_formats)
{
  /* 1 Hz */
  {
    AvfMelConfig cfg = mel_config (1, N_FFT, HOP, 64);
    GstBus *bus;
    GstHarness *h = spec_harness (&cfg, &bus);
    gfloat x[1000] = { 0, };
    gchar *text;

    harness_force_caps (h, audio_caps (1, 1));
    text = avf_expect_error (bus, 10 * GST_SECOND, GST_CORE_ERROR,
        GST_CORE_ERROR_NEGOTIATION);
    avf_check_contains (text, "1 Hz");
    avf_check_contains (text, "f-max");
    g_free (text);
    fail_unless_equals_int (push_audio (h, x, 1000, 1, 0),
        GST_FLOW_NOT_NEGOTIATED);
    fail_unless_equals_int (gst_harness_buffers_received (h), 0);
    avf_harness_teardown_with_bus (h, bus);
  }

  /* 1 Hz with f-max 0.5 Hz set: the filterbank spans the bins of
   * linspace(0, rate // 2 = 0, 201) as in torchaudio, so every band is
   * empty and reads ln(1e-6); 1000 samples (16 min 40 s) give 4 frames of
   * 160 s each */
  {
    AvfMelConfig cfg = mel_config (1, N_FFT, HOP, 64);
    gfloat *x = avf_make_signal (1000, 1, 1, 2, 37.0);
    cfg.f_max = 0.5;
    check_spectrogram_matches_core (&cfg, x, 1000, 1, 100, 4, "1 Hz");
    g_free (x);
  }

  /* 8 kHz mono, 1 s: (8000 - 400) / 160 + 1 frames */
  {
    AvfMelConfig cfg = mel_config (8000, N_FFT, HOP, 64);
    gfloat *x = avf_make_signal (8000, 1, 8000, 3, 37.0);
    check_spectrogram_matches_core (&cfg, x, 8000, 1, 999, 48, "8 kHz");
    g_free (x);
  }

  /* 768 kHz mono, 50 ms */
  {
    AvfMelConfig cfg = mel_config (768000, N_FFT, HOP, 64);
    gfloat *x = avf_make_signal (38400, 1, 768000, 4, 37.0);
    check_spectrogram_matches_core (&cfg, x, 38400, 1, 4800, 238,
        "768 kHz");
    g_free (x);
  }

  /* 64 channels at 16 kHz, one unaligned buffer of 10000 sample frames */
  {
    AvfMelConfig cfg = mel_config (RATE, N_FFT, HOP, 64);
    const gsize n = 10000, bytes = n * 64 * sizeof (gfloat);
    gfloat *x = avf_make_signal (n, 64, RATE, 5, 37.0), *ref;
    guint8 *raw = g_malloc (bytes + 1);
    GstBus *bus;
    GstHarness *h = spec_harness (&cfg, &bus);
    gsize n_ref;
    GstBuffer *b;
    Frames f;

    ref = avf_reference_mel (&cfg, x, n, 64, &n_ref);
    fail_unless_equals_int (n_ref, 61);
    memcpy (raw + 1, x, bytes);
    b = gst_buffer_new_wrapped_full (GST_MEMORY_FLAG_READONLY, raw,
        bytes + 1, 1, bytes, raw, g_free);
    GST_BUFFER_PTS (b) = 0;
    gst_harness_set_src_caps (h, audio_caps (RATE, 64));
    fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
    frames_init (&f);
    spec_collect (h, &f, 0);
    fail_unless_equals_int (frames_count (&f), n_ref);
    check_frames_equal (&f, 0, ref, n_ref, "64 channels, unaligned");
    fail_on_bus_messages (bus, "64 channels");
    frames_clear (&f);
    avf_harness_teardown_with_bus (h, bus);
    g_free (ref);
    g_free (x);
  }

  /* outside the template */
  {
    GstElement *e = gst_element_factory_make ("avspectrogram", NULL);
    GstPad *pad = gst_element_get_static_pad (e, "sink");
    GstCaps *c65 = audio_caps (RATE, 65), *c768k1 = audio_caps (768001, 1),
        *c768k = audio_caps (768000, 64);

    fail_if (gst_pad_query_accept_caps (pad, c65));
    fail_if (gst_pad_query_accept_caps (pad, c768k1));
    fail_unless (gst_pad_query_accept_caps (pad, c768k));
    gst_caps_unref (c65);
    gst_caps_unref (c768k1);
    gst_caps_unref (c768k);
    gst_object_unref (pad);
    gst_object_unref (e);
  }
}

GST_END_TEST;

/* n-fft and hop-length at the ends of their property ranges: n-fft 2 with
 * hop 1 (one frame per sample, two frequency bins for 64 mel bands, so
 * most bands are empty and read ln(1e-6)), n-fft 65536 (4 s of 16 kHz
 * audio per frame), hop 16777216 (one frame, then 16.7 M samples skipped:
 * the second buffer completes nothing), and 4096 mel bands: frames
 * bit-identical to core/mel.h, finite, with counter timestamps. */
GST_START_TEST (test_fft_and_hop_extremes)
{
  static const struct
  {
    gint rate, n_fft, hop, n_mels;
    gsize n, chunk;
    guint frames;
  } cases[] = {
    {RATE, 2, 1, 64, 2000, 333, 1999},
    {RATE, 65536, HOP, 64, 70000, 8192, 28},
    {RATE, N_FFT, 16777216, 64, 40000, 20000, 1},
    {768000, 65536, 16777216, 64, 70000, 35000, 1},
    {RATE, N_FFT, HOP, 4096, 4000, 4000, 23},
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    AvfMelConfig cfg = mel_config (cases[i].rate, cases[i].n_fft,
        cases[i].hop, cases[i].n_mels);
    gfloat *x = avf_make_signal (cases[i].n, 1, cases[i].rate, 20 + i, 37.0);
    gchar *what = g_strdup_printf ("%d Hz, n-fft %d, hop %d, %d mels",
        cases[i].rate, cases[i].n_fft, cases[i].hop, cases[i].n_mels);

    check_spectrogram_matches_core (&cfg, x, cases[i].n, 1, cases[i].chunk,
        cases[i].frames, what);
    g_free (what);
    g_free (x);
  }
}

GST_END_TEST;

/* Tensor caps at the ends of their ranges, straight into avattention
 * (weights_small: M 40, E 48, N 12, T_max 40): each is refused at
 * negotiation with a message that names the pad and the values at fault,
 * and nothing large is allocated on the way. */
GST_START_TEST (test_extreme_tensor_caps_at_avattention)
{
  static const struct
  {
    gboolean audio;
    gint a, b, c, d;            /* n-mels rate hop n-fft, or E cols rows P */
    guint64 window;
    const gchar *needles[4];
  } cases[] = {
    /* 0.37 s of 1 Hz audio is less than half a 160-sample hop */
    {TRUE, SM_M, 1, HOP, N_FFT, 370 * MS,
        {"audio_sink", "1 Hz", "shorter than half", NULL}},
    /* 768 kHz with a 160-sample hop: 1776 frames in 0.37 s */
    {TRUE, SM_M, 768000, HOP, N_FFT, 370 * MS,
        {"audio_sink", "1776 spectrogram frames", "at most 40", NULL}},
    /* 768 kHz with a 1-sample hop for 10 s: 7.68 million frames, far too
     * many (not too few) */
    {TRUE, SM_M, 768000, 1, 2, 10 * GST_SECOND,
        {"audio_sink", "768000 Hz", "at most 40", NULL}},
    /* 4096 mel bands */
    {TRUE, 4096, RATE, HOP, N_FFT, 370 * MS,
        {"audio_sink", "4096 mel bands", "expect 40", NULL}},
    /* a 1x1 grid, a 65536x1 grid, a 65536x65536 grid, 65536 wide */
    {FALSE, SM_E, 1, 1, SM_P, 370 * MS,
        {"video_sink", "1 patches", "expect 12", NULL}},
    {FALSE, SM_E, 65536, 1, SM_P, 370 * MS,
        {"video_sink", "65536 patches", "expect 12", NULL}},
    {FALSE, SM_E, 65536, 65536, SM_P, 370 * MS,
        {"video_sink", "larger than 65536 patches", NULL}},
    {FALSE, 65536, 4, 3, SM_P, 370 * MS,
        {"video_sink", "65536 wide", "expect 48", NULL}},
  };
  const gsize rss0 = rss_bytes ();
  GString *wrong = g_string_new (NULL);

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    gchar *w = avf_fixture_path (SMALL_WEIGHTS), *text;
    GstElement *att = gst_element_factory_make ("avattention", NULL);
    GstBus *bus = gst_bus_new ();
    GstHarness *hv, *ha;

    gst_object_ref_sink (att);
    g_object_set (att, "weights", w, "window", cases[i].window, NULL);
    g_free (w);
    gst_element_set_bus (att, bus);
    hv = gst_harness_new_with_element (att, "video_sink", "src");
    ha = gst_harness_new_with_element (att, "audio_sink", NULL);
    gst_harness_set_live (hv, FALSE);
    gst_harness_set_live (ha, FALSE);
    if (cases[i].audio)
      gst_harness_set_src_caps (ha, gst_av_tensor_caps_log_mel (cases[i].a,
              cases[i].b, cases[i].c, cases[i].d));
    else if ((gint64) cases[i].b * cases[i].c <= 65536)
      gst_harness_set_src_caps (hv, gst_av_tensor_caps_patches (cases[i].a,
              cases[i].b, cases[i].c, cases[i].d, 10, 1));
    else {
      /* a grid whose product does not fit: every field inside the pad
       * template (num-patches <= 65536), only the grid is absurd */
      GstCaps *caps = gst_av_tensor_caps_patches (cases[i].a, 256, 256,
          cases[i].d, 10, 1);
      gst_caps_set_simple (caps, "grid-columns", G_TYPE_INT, cases[i].b,
          "grid-rows", G_TYPE_INT, cases[i].c, NULL);
      gst_harness_set_src_caps (hv, caps);
    }
    text = avf_expect_error (bus, 10 * GST_SECOND, GST_CORE_ERROR,
        GST_CORE_ERROR_NEGOTIATION);
    for (guint n = 0; cases[i].needles[n]; n++)
      if (strstr (text, cases[i].needles[n]) == NULL)
        g_string_append_printf (wrong, "\ncase %u: \"%s\" does not name "
            "\"%s\"", i, text, cases[i].needles[n]);
    g_free (text);
    avf_harness_teardown_pair (ha, hv);
    gst_element_set_bus (att, NULL);
    gst_bus_set_flushing (bus, TRUE);
    gst_object_unref (bus);
    gst_object_unref (att);
  }
  fail_unless (rss_bytes () < rss0 + 64 * 1024 * 1024, "resident memory "
      "grew from %" G_GSIZE_FORMAT " to %" G_GSIZE_FORMAT " bytes", rss0,
      rss_bytes ());
  /* every case is tried before the test fails */
  fail_unless (wrong->len == 0, "messages that miss the cause:%s",
      wrong->str);
  g_string_free (wrong, TRUE);
}

GST_END_TEST;

/* ---- (4) silence, clipping, denormals, NaN and infinity ----------------- */

/* Runs x (n mono samples, default configuration) through avspectrogram in
 * buffers of 1000 samples; returns the frames. */
static void
spectrogram_of (const gfloat * x, gsize n, gint channels, Frames * f)
{
  AvfMelConfig cfg = mel_config (RATE, N_FFT, HOP, 64);
  GstBus *bus;
  GstHarness *h = spec_harness (&cfg, &bus);

  frames_init (f);
  gst_harness_set_src_caps (h, audio_caps (RATE, channels));
  for (gsize off = 0; off < n; off += 1000)
    fail_unless_equals_int (push_audio (h, x + off * channels,
            MIN (1000, n - off), channels, gst_util_uint64_scale (off,
                GST_SECOND, RATE)), GST_FLOW_OK);
  spec_collect (h, f, 0);
  fail_unless_equals_int (frames_count (f), (n - N_FFT) / HOP + 1);
  fail_on_bus_messages (bus, "spectrogram");
  avf_harness_teardown_with_bus (h, bus);
}

/* Digital silence gives exactly ln(0 + 1e-6) in every band (the log guard
 * of spec §1, in float32: logf(1e-6f)); a full-scale +-1 square wave,
 * +-1000 and a constant 1e6 (clipping and far beyond) give finite frames;
 * denormal samples give finite frames at the silence level and take no
 * more than 50 times (plus 0.5 s) as long as normal samples. */
GST_START_TEST (test_silence_clipping_denormals)
{
  const gsize n = RATE;         /* 1 s: 98 frames */
  const gfloat log_eps = logf (AVF_MEL_LOG_EPS);
  gfloat *x = g_new0 (gfloat, n);
  gint64 t0, t_normal, t_denormal;
  Frames f;

  /* silence */
  spectrogram_of (x, n, 1, &f);
  fail_unless (fabsf (log_eps - -13.8155106f) < 1e-5f);
  for (guint i = 0; i < f.data->len; i++)
    fail_unless (memcmp (&g_array_index (f.data, gfloat, i), &log_eps,
            sizeof log_eps) == 0, "silence: value %u is %.9g, not "
        "ln(1e-6) = %.9g", i, g_array_index (f.data, gfloat, i), log_eps);
  frames_clear (&f);

  /* clipping: square waves at full scale and far beyond, and DC */
  {
    static const gfloat amps[] = { 1.0f, 1000.0f };
    for (guint a = 0; a < G_N_ELEMENTS (amps); a++) {
      for (gsize i = 0; i < n; i++)
        x[i] = (i / 16) % 2 ? amps[a] : -amps[a];
      spectrogram_of (x, n, 1, &f);
      fail_unless (all_finite ((const gfloat *) f.data->data, f.data->len),
          "a +-%g square wave gave a non-finite frame", amps[a]);
      /* a 500 Hz square wave is loud: far above the silence level */
      {
        gfloat top = -G_MAXFLOAT;
        for (guint b = 0; b < 64; b++)
          top = MAX (top, frames_at (&f, 0)[b]);
        fail_unless (top > log_eps + 10.0f, "loudest band %g", top);
      }
      frames_clear (&f);
    }
    for (gsize i = 0; i < n; i++)
      x[i] = 1e6f;
    spectrogram_of (x, n, 1, &f);
    fail_unless (all_finite ((const gfloat *) f.data->data, f.data->len),
        "DC at 1e6 gave a non-finite frame");
    frames_clear (&f);
  }

  /* denormals, timed against a normal signal of the same length (10 s, so
   * that a slowdown shows above the scheduling noise) */
  {
    const gsize nd = 10 * RATE;
    gfloat *normal = avf_make_signal (nd, 1, RATE, 8, 37.0);
    gfloat *den = g_new (gfloat, nd);
    guint32 s = 1;

    t0 = g_get_monotonic_time ();
    spectrogram_of (normal, nd, 1, &f);
    t_normal = g_get_monotonic_time () - t0;
    frames_clear (&f);
    for (gsize i = 0; i < nd; i++) {
      s = s * 1664525u + 1013904223u;
      /* multiples of 2^-149 below 2^23 of them: subnormal (or zero) */
      den[i] = ((s >> 31) ? 1.0f : -1.0f) * (gfloat) (s >> 9) * 1e-45f;
      fail_unless (den[i] == 0.0f || fpclassify (den[i]) == FP_SUBNORMAL);
    }
    t0 = g_get_monotonic_time ();
    spectrogram_of (den, nd, 1, &f);
    t_denormal = g_get_monotonic_time () - t0;
    GST_INFO ("10 s of audio: %" G_GINT64_FORMAT " us normal, %"
        G_GINT64_FORMAT " us denormal", t_normal, t_denormal);
    fail_unless (all_finite ((const gfloat *) f.data->data, f.data->len),
        "denormal input gave a non-finite frame");
    for (guint i = 0; i < f.data->len; i++)
      fail_unless (fabsf (g_array_index (f.data, gfloat, i) - log_eps)
          < 1e-3f, "denormal input: value %u is %g", i,
          g_array_index (f.data, gfloat, i));
    /* subnormal arithmetic costs extra cycles on x86 (15x here: about
     * 45 ms for the 10 s, still 200x real time); a pathological slowdown
     * (no FFT fast path, x87) would be far more */
    fail_unless (t_denormal < 50 * t_normal + 500000, "denormals are slow: "
        "%" G_GINT64_FORMAT " us against %" G_GINT64_FORMAT " us",
        t_denormal, t_normal);
    g_free (den);
    frames_clear (&f);
    g_free (normal);
  }
  g_free (x);
}

GST_END_TEST;

/* NaN and infinite samples.  Policy (as PyTorch: torch.log of a
 * MelSpectrogram of such a signal; the same "bad input is visible, not
 * hidden" rule as core/mha.h): a frame whose n_fft samples include a NaN,
 * +Inf or -Inf sample is non-finite in every band; every other frame is
 * bit-identical to the frame of the clean signal, so nothing leaks into
 * frames that do not contain the sample and no state stays poisoned after
 * it.  Mono, and stereo with the bad value in one channel only. */
GST_START_TEST (test_nan_and_inf_samples)
{
  const gsize n = RATE;
  const gsize bad_at[3] = { 5000, 9000, 12345 };
  const gfloat bad[3] = { NAN, INFINITY, -INFINITY };

  for (gint channels = 1; channels <= 2; channels++) {
    gfloat *clean = avf_make_signal (n, channels, RATE, 12, 37.0);
    gfloat *dirty = g_memdup2 (clean, n * channels * sizeof (gfloat));
    Frames fc, fd;

    for (guint i = 0; i < 3; i++)
      dirty[bad_at[i] * channels + (channels - 1)] = bad[i];
    spectrogram_of (clean, n, channels, &fc);
    spectrogram_of (dirty, n, channels, &fd);
    fail_unless_equals_int (frames_count (&fc), frames_count (&fd));
    fail_unless (all_finite ((const gfloat *) fc.data->data, fc.data->len));
    for (guint k = 0; k < frames_count (&fd); k++) {
      const gsize start = (gsize) k * HOP;
      gboolean hit = FALSE;

      for (guint i = 0; i < 3; i++)
        hit |= bad_at[i] >= start && bad_at[i] < start + N_FFT;
      if (hit) {
        for (guint b = 0; b < 64; b++)
          fail_unless (!isfinite (frames_at (&fd, k)[b]), "%d ch: frame %u "
              "holds a bad sample but band %u is finite (%g)", channels, k,
              b, frames_at (&fd, k)[b]);
      } else {
        fail_unless (memcmp (frames_at (&fd, k), frames_at (&fc, k),
                64 * sizeof (gfloat)) == 0, "%d ch: frame %u holds no bad "
            "sample but differs from the clean one", channels, k);
      }
    }
    frames_clear (&fc);
    frames_clear (&fd);
    g_free (clean);
    g_free (dirty);
  }
}

GST_END_TEST;

/* Silence, clipping and denormals through the whole pipeline: 16 kHz audio
 * of 0.5 s each of digital silence, a +-1 square wave, a +-1000 square wave
 * and denormal noise, into avspectrogram and avattention with 20 video
 * frames: every fused vector is finite and every window full. */
GST_START_TEST (test_odd_audio_through_pipeline)
{
  const gsize n = 4 * RATE / 2;
  gfloat *x = g_new0 (gfloat, n);
  GPtrArray *audio = feed_new (), *video = video_feed_32x24 (20);
  gchar *desc = pipeline_desc (FALSE, TRUE, 100 * MS);
  guint32 s = 3;
  Run *r;

  for (gsize i = RATE / 2; i < n; i++) {
    const gfloat sq = (i / 16) % 2 ? 1.0f : -1.0f;
    s = s * 1664525u + 1013904223u;
    if (i < RATE)
      x[i] = sq;
    else if (i < 3 * RATE / 2)
      x[i] = 1000.0f * sq;
    else
      x[i] = sq * (gfloat) (s >> 9) * 1e-45f;
  }
  feed_audio (audio, x, n, RATE, 1, 0, 1000);
  r = run_pipeline (desc, audio, video);
  avf_run_fail_on_messages (&r->run, "silence, clipping, denormals");
  fail_unless (r->run.eos);
  fail_unless (all_finite ((const gfloat *) r->mel->data, r->mel->len),
      "a spectrogram frame is not finite");
  check_windows (r, 20, 100 * MS);

  run_free (r);
  g_free (desc);
  g_free (x);
  g_ptr_array_unref (audio);
  g_ptr_array_unref (video);
}

GST_END_TEST;

/* One NaN sample (at 5000, 312.5 ms) through the whole pipeline: the
 * spectrogram frames that hold it (29..31, at 290..310 ms) are NaN, and so
 * are the fused vectors of the video frames whose 100 ms window holds one
 * of them (300 and 400 ms); every other fused vector is bit-identical to
 * that of the clean audio. */
GST_START_TEST (test_nan_sample_through_pipeline)
{
  gfloat *x = avf_make_signal (RATE, 1, RATE, 41, 37.0);
  GPtrArray *clean_audio = feed_new (), *audio = feed_new ();
  GPtrArray *video = video_feed_32x24 (10);
  gchar *desc = pipeline_desc (FALSE, TRUE, 100 * MS);
  Run *clean, *r;

  feed_audio (clean_audio, x, RATE, RATE, 1, 0, 1000);
  x[5000] = NAN;
  feed_audio (audio, x, RATE, RATE, 1, 0, 1000);
  clean = run_pipeline (desc, clean_audio, video);
  avf_run_fail_on_messages (&clean->run, "clean audio");
  r = run_pipeline (desc, audio, video);
  avf_run_fail_on_messages (&r->run, "a NaN sample");
  fail_unless (r->run.eos);
  fail_unless_equals_int (r->out->len, 10);
  fail_unless_equals_int (clean->out->len, 10);
  for (guint k = 0; k < r->mel_pts->len; k++) {
    const gboolean bad = k >= 29 && k <= 31;
    const gfloat *v = &g_array_index (r->mel, gfloat, (gsize) k * SM_M);
    for (guint b = 0; b < SM_M; b++)
      fail_unless (isfinite (v[b]) != bad, "spectrogram frame %u band %u: "
          "%g", k, b, v[b]);
  }
  for (guint k = 0; k < 10; k++) {
    GstBuffer *b = g_ptr_array_index (r->out, k);
    GstMapInfo map;

    fail_unless_equals_uint64 (GST_BUFFER_PTS (b), k * 100 * MS);
    if (k == 3 || k == 4) {
      fail_unless (gst_buffer_map (b, &map, GST_MAP_READ));
      for (guint e = 0; e < 2 * SM_E; e++)
        fail_unless (!isfinite (((const gfloat *) map.data)[e]), "frame %u "
            "value %u is finite although its window holds a NaN frame", k,
            e);
      gst_buffer_unmap (b, &map);
    } else {
      fail_unless (avf_buffers_equal (b, g_ptr_array_index (clean->out, k)),
          "frame %u changed by a NaN sample outside its window", k);
    }
  }

  run_free (clean);
  run_free (r);
  g_free (desc);
  g_free (x);
  g_ptr_array_unref (clean_audio);
  g_ptr_array_unref (audio);
  g_ptr_array_unref (video);
}

GST_END_TEST;

/* ---- avattention fed tensors directly ---------------------------------- */

#define AT_VIDEO 7              /* video frames at 370, 470, ... 970 ms */
#define AT_MEL 101              /* spectrogram frames at 0, 10, ... 1000 ms */
#define AT_WINDOW (370 * MS)    /* T = 37 */
#define AT_T 37

static GstClockTime
at_video_pts (guint k)
{
  return 370 * MS + k * 100 * MS;
}

/* Deterministic inputs in the ranges the elements produce. */
static gfloat *
at_mel_frames (void)
{
  gfloat *mel = g_new (gfloat, AT_MEL * SM_M);

  for (guint i = 0; i < AT_MEL; i++)
    for (guint b = 0; b < SM_M; b++)
      mel[i * SM_M + b] = (gfloat) (sin (0.1 * i + 0.37 * b) * 3.0 - 4.0);
  return mel;
}

static gfloat *
at_patch_frames (void)
{
  gfloat *v = g_new (gfloat, AT_VIDEO * SM_N * SM_E);

  for (guint k = 0; k < AT_VIDEO; k++)
    for (guint i = 0; i < SM_N * SM_E; i++)
      v[k * SM_N * SM_E + i] = (gfloat) (cos (0.013 * i + 0.5 * k) * 0.8);
  return v;
}

typedef enum
{
  LAYOUT_PLAIN,                 /* one aligned memory */
  LAYOUT_SPLIT,                 /* three memories, cut inside a float */
  LAYOUT_UNALIGNED              /* one memory, one byte off alignment */
} Layout;

static GstBuffer *
tensor_buffer (const gfloat * data, gsize n, GstClockTime pts,
    GstClockTime dur, Layout layout)
{
  const gsize bytes = n * sizeof (gfloat);
  GstBuffer *b;

  if (layout == LAYOUT_SPLIT) {
    const gsize cuts[2] = { 6, bytes / 2 + 3 };
    b = split_buffer (data, bytes, cuts, 2);
  } else if (layout == LAYOUT_UNALIGNED) {
    guint8 *raw = g_malloc (bytes + 1);
    memcpy (raw + 1, data, bytes);
    b = gst_buffer_new_wrapped_full (GST_MEMORY_FLAG_READONLY, raw,
        bytes + 1, 1, bytes, raw, g_free);
  } else {
    b = gst_buffer_new_memdup (data, bytes);
  }
  GST_BUFFER_PTS (b) = pts;
  GST_BUFFER_DURATION (b) = dur;
  return b;
}

/* Runs the small model over AT_VIDEO patch frames and AT_MEL spectrogram
 * frames (one buffer each, pushed in time order as a demuxer would), and
 * returns the AT_VIDEO outputs. */
static GPtrArray *
att_run (const gfloat * mel, const gfloat * video, Layout layout)
{
  gchar *w = avf_fixture_path (SMALL_WEIGHTS);
  GstElement *att = gst_element_factory_make ("avattention", NULL);
  GstBus *bus = gst_bus_new ();
  GPtrArray *outs = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  GstHarness *hv, *ha;
  guint i = 0;

  fail_unless (att != NULL);
  gst_object_ref_sink (att);
  g_object_set (att, "weights", w, "window", AT_WINDOW, NULL);
  g_free (w);
  gst_element_set_bus (att, bus);
  hv = gst_harness_new_with_element (att, "video_sink", "src");
  ha = gst_harness_new_with_element (att, "audio_sink", NULL);
  gst_harness_set_live (hv, FALSE);
  gst_harness_set_live (ha, FALSE);
  gst_harness_set_src_caps (ha, gst_av_tensor_caps_log_mel (SM_M, RATE, HOP,
          N_FFT));
  gst_harness_set_src_caps (hv, gst_av_tensor_caps_patches (SM_E, 4, 3,
          SM_P, 10, 1));

  for (guint k = 0; k < AT_VIDEO; k++) {
    const GstClockTime t = at_video_pts (k);
    GstBuffer *out;

    fail_unless_equals_int (gst_harness_push (hv, tensor_buffer (video +
                (gsize) k * SM_N * SM_E, SM_N * SM_E, t, 100 * MS, layout)),
        GST_FLOW_OK);
    /* audio up to and including the first frame at or after t */
    while (i < AT_MEL && (i == 0 || (i - 1) * HOP_NS < t)) {
      fail_unless_equals_int (gst_harness_push (ha, tensor_buffer (mel +
                  (gsize) i * SM_M, SM_M, i * HOP_NS, HOP_NS, layout)),
          GST_FLOW_OK);
      i++;
    }
    out = gst_harness_pull (hv);
    fail_unless (out != NULL, "no output for video frame %u", k);
    g_ptr_array_add (outs, out);
  }
  fail_on_bus_messages (bus, "avattention");
  avf_harness_teardown_pair (ha, hv);
  gst_element_set_bus (att, NULL);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  gst_object_unref (att);
  return outs;
}

/* Output k: a fused vector of 2E floats at its PTS, with every audio slot
 * of its window present (the audio is continuous from 0). */
static void
att_check_output (GPtrArray * outs, guint k, gboolean finite)
{
  GstBuffer *b = g_ptr_array_index (outs, k);
  GstAvAttentionMeta *meta = gst_buffer_get_av_attention_meta (b);
  GstMapInfo map;

  fail_unless_equals_uint64 (GST_BUFFER_PTS (b), at_video_pts (k));
  fail_unless (meta != NULL);
  fail_unless_equals_int (meta->n_audio_slots, AT_T);
  fail_unless_equals_int (meta->n_audio_present, AT_T);
  fail_unless (gst_buffer_map (b, &map, GST_MAP_READ));
  fail_unless_equals_int (map.size, 2 * SM_E * sizeof (gfloat));
  if (finite) {
    fail_unless (all_finite ((const gfloat *) map.data, 2 * SM_E),
        "output %u is not finite", k);
  } else {
    const gfloat *v = (const gfloat *) map.data;
    for (guint e = 0; e < 2 * SM_E; e++)
      fail_unless (!isfinite (v[e]), "output %u: value %u is finite (%g) "
          "although a slot of its window is not", k, e, v[e]);
  }
  gst_buffer_unmap (b, &map);
}

/* Spectrogram frames and patch embeddings with NaN, infinity, huge values
 * and silence, fed straight into avattention.  Policy (core/mha.h and its
 * test_softmax_nan_policy; spec §3): a NaN or infinity in a spectrogram
 * frame that is in a frame's window, or in the frame's patches, makes that
 * frame's fused vector non-finite (visible, as in PyTorch); a frame whose
 * window does not hold the bad spectrogram frame (the slots it would take
 * are outside, i.e. masked for that frame) is bit-identical to the clean
 * run: the bad values never leak past their window and leave no state.
 * Huge but finite inputs (mel 1e6, patches 1e6) give finite outputs
 * (max-subtracted softmax), and so does digital silence (every band
 * ln(1e-6)). */
GST_START_TEST (test_attention_nonfinite_inputs)
{
  gfloat *mel = at_mel_frames (), *video = at_patch_frames ();
  gfloat *m2, *v2;
  GPtrArray *clean, *outs;

  clean = att_run (mel, video, LAYOUT_PLAIN);
  for (guint k = 0; k < AT_VIDEO; k++)
    att_check_output (clean, k, TRUE);

  /* the spectrogram frame at 200 ms: in the windows of the frames at 370,
   * 470 and 570 ms (slot 0 of [200, 570)), not in later ones */
  {
    static const gfloat values[] = { NAN, INFINITY, -INFINITY };
    for (guint v = 0; v < G_N_ELEMENTS (values); v++) {
      for (guint whole = 0; whole < 2; whole++) {
        m2 = g_memdup2 (mel, AT_MEL * SM_M * sizeof (gfloat));
        if (whole)
          for (guint b = 0; b < SM_M; b++)
            m2[20 * SM_M + b] = values[v];
        else
          m2[20 * SM_M + 7] = values[v];
        outs = att_run (m2, video, LAYOUT_PLAIN);
        for (guint k = 0; k < AT_VIDEO; k++) {
          att_check_output (outs, k, k >= 3);
          if (k >= 3)
            fail_unless (avf_buffers_equal (g_ptr_array_index (outs, k),
                    g_ptr_array_index (clean, k)), "%g in a spectrogram "
                "frame outside the window of output %u changed it",
                values[v], k);
        }
        g_ptr_array_unref (outs);
        g_free (m2);
      }
    }
  }

  /* a NaN or infinity in the patches of frame 2 only */
  {
    static const gfloat values[] = { NAN, INFINITY };
    for (guint v = 0; v < G_N_ELEMENTS (values); v++) {
      v2 = g_memdup2 (video, AT_VIDEO * SM_N * SM_E * sizeof (gfloat));
      v2[2 * SM_N * SM_E + 5 * SM_E + 11] = values[v];
      outs = att_run (mel, v2, LAYOUT_PLAIN);
      for (guint k = 0; k < AT_VIDEO; k++) {
        att_check_output (outs, k, k != 2);
        if (k != 2)
          fail_unless (avf_buffers_equal (g_ptr_array_index (outs, k),
                  g_ptr_array_index (clean, k)), "%g in the patches of "
              "frame 2 changed output %u", values[v], k);
      }
      g_ptr_array_unref (outs);
      g_free (v2);
    }
  }

  /* huge but finite: every spectrogram value 1e6, every patch value
   * scaled by 1e6 (logits of order 1e12) */
  m2 = g_new (gfloat, AT_MEL * SM_M);
  for (guint i = 0; i < AT_MEL * SM_M; i++)
    m2[i] = (i % 3) ? 1e6f : -1e6f;
  v2 = g_memdup2 (video, AT_VIDEO * SM_N * SM_E * sizeof (gfloat));
  for (guint i = 0; i < AT_VIDEO * SM_N * SM_E; i++)
    v2[i] *= 1e6f;
  outs = att_run (m2, v2, LAYOUT_PLAIN);
  for (guint k = 0; k < AT_VIDEO; k++)
    att_check_output (outs, k, TRUE);
  g_ptr_array_unref (outs);

  /* digital silence from avspectrogram: ln(1e-6) everywhere */
  for (guint i = 0; i < AT_MEL * SM_M; i++)
    m2[i] = logf (AVF_MEL_LOG_EPS);
  outs = att_run (m2, video, LAYOUT_PLAIN);
  for (guint k = 0; k < AT_VIDEO; k++)
    att_check_output (outs, k, TRUE);
  g_ptr_array_unref (outs);
  g_free (m2);
  g_free (v2);

  g_ptr_array_unref (clean);
  g_free (mel);
  g_free (video);
}

GST_END_TEST;

/* ---- (5) buffer layouts ------------------------------------------------- */

/* A 224x224 RGB picture `off` bytes into a block, with rows of
 * PADDED_STRIDE bytes and junk in the padding. */
#define PADDED_STRIDE (224 * 3 + 21)

static guint8 *
padded_picture (const guint8 * px, gsize off)
{
  guint8 *padded = make_bytes (off + PADDED_STRIDE * 224, 78);

  for (guint y = 0; y < 224; y++)
    memcpy (padded + off + y * PADDED_STRIDE, px + y * 224 * 3, 224 * 3);
  return padded;
}

static void
add_padded_meta (GstBuffer * b, gsize off)
{
  gsize offsets[GST_VIDEO_MAX_PLANES] = { off, };
  gint strides[GST_VIDEO_MAX_PLANES] = { PADDED_STRIDE, };

  gst_buffer_add_video_meta_full (b, GST_VIDEO_FRAME_FLAG_NONE,
      GST_VIDEO_FORMAT_RGB, 224, 224, 1, offsets, strides);
}

/* Buffers in several memories cut in the middle of a value, and buffers
 * larger than their caps say: avpatchembed embeds a picture split over
 * three memories (cuts inside a pixel and inside a row), a picture with
 * 1000 trailing bytes, and a padded-stride picture (GstVideoMeta) in a
 * second memory exactly like the plain one, and one whose plane runs over
 * two memories without reading past its mapping; avspectrogram takes
 * memories cut inside a float and empty buffers without changing a frame;
 * avattention gives the same bytes for tensors split over three memories
 * or one byte off alignment as for plain ones, and refuses a patch or
 * spectrogram buffer of one and a half frames with an error naming the
 * pad and the sizes. */
GST_START_TEST (test_buffer_layouts)
{
  /* avpatchembed (seeded weights, 224x224) */
  {
    const gsize size = 224 * 224 * 3;
    guint8 *px = make_bytes (size + 1000, 77);
    const gsize cuts[2] = { 1001, 224 * 3 * 100 + 2 };
    GstBuffer *in[4], *out[4], *out0;
    GstBus *bus;
    GstElement *e = gst_element_factory_make ("avpatchembed", NULL);
    GstHarness *h;

    bus = gst_bus_new ();
    /* the seeded weights (P 16, N 196, E 256), asked for */
    gst_util_set_object_arg (G_OBJECT (e), "model", "seeded");
    gst_element_set_bus (e, bus);
    h = gst_harness_new_with_element (e, "sink", "src");
    gst_harness_set_src_caps (h, rgb_caps (224, 224));
    in[0] = gst_buffer_new_memdup (px, size);
    in[1] = split_buffer (px, size, cuts, 2);
    in[2] = gst_buffer_new_memdup (px, size + 1000);
    /* the same picture with rows of 224 * 3 + 21 bytes (junk in the
     * padding), described by a GstVideoMeta, in a second memory after a
     * 7-byte one */
    {
      const gsize cut[1] = { 7 };
      guint8 *padded = padded_picture (px, 7);

      in[3] = split_buffer (padded, 7 + PADDED_STRIDE * 224, cut, 1);
      add_padded_meta (in[3], 7);
      g_free (padded);
    }
    for (guint i = 0; i < 4; i++) {
      GST_BUFFER_PTS (in[i]) = i * 100 * MS;
      fail_unless_equals_int (gst_harness_push (h, in[i]), GST_FLOW_OK);
      out[i] = gst_harness_pull (h);
      fail_unless (out[i] != NULL);
      fail_unless_equals_int (gst_buffer_get_size (out[i]),
          196 * 256 * sizeof (gfloat));
    }
    out0 = gst_buffer_ref (out[0]);
    fail_unless (avf_buffers_equal (out[0], out[1]), "a picture in three "
        "memories gives other patches");
    fail_unless (avf_buffers_equal (out[0], out[2]), "trailing bytes change "
        "the patches");
    fail_unless (avf_buffers_equal (out[0], out[3]), "a padded picture after "
        "another memory gives other patches");
    for (guint i = 0; i < 4; i++)
      gst_buffer_unref (out[i]);

    /* a padded picture whose plane runs over two memories (cut inside row
     * 150): GstVideoMeta maps the memory where the plane starts, so the
     * element sees part of the picture; it must refuse with a stream
     * error, or embed the right picture, and never read past what it
     * mapped */
    {
      const gsize cut[1] = { 7 + PADDED_STRIDE * 150 + 5 };
      guint8 *padded = padded_picture (px, 7);
      GstBuffer *b = split_buffer (padded, 7 + PADDED_STRIDE * 224, cut, 1);
      GstFlowReturn ret;

      add_padded_meta (b, 7);
      GST_BUFFER_PTS (b) = 400 * MS;
      ret = gst_harness_push (h, b);
      if (ret == GST_FLOW_OK) {
        GstBuffer *o = gst_harness_pull (h);
        fail_unless (avf_buffers_equal (out0, o), "a padded picture over two "
            "memories gives other patches");
        gst_buffer_unref (o);
      } else {
        gchar *text;
        fail_unless_equals_int (ret, GST_FLOW_ERROR);
        text = avf_expect_error (bus, 10 * GST_SECOND, GST_STREAM_ERROR,
            GST_STREAM_ERROR_FORMAT);
        avf_check_contains (text, "224x224");
        g_free (text);
      }
      g_free (padded);
    }
    gst_buffer_unref (out0);
    fail_on_bus_messages (bus, "avpatchembed layouts");
    avf_harness_teardown_with_bus (h, bus);
    gst_object_unref (e);
    g_free (px);
  }

  /* avspectrogram: memories cut inside floats, and empty buffers */
  {
    AvfMelConfig cfg = mel_config (RATE, N_FFT, HOP, 64);
    const gsize n = 6000, cuts[3] = { 3, 4001 * 4 + 1, 5999 * 4 + 2 };
    gfloat *x = avf_make_signal (n, 1, RATE, 31, 37.0), *ref;
    gsize n_ref;
    GstBus *bus;
    GstHarness *h = spec_harness (&cfg, &bus);
    GstBuffer *b;
    Frames f;

    ref = avf_reference_mel (&cfg, x, n, 1, &n_ref);
    gst_harness_set_src_caps (h, audio_caps (RATE, 1));
    b = gst_buffer_new ();
    GST_BUFFER_PTS (b) = 0;
    fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
    b = split_buffer (x, n * sizeof (gfloat), cuts, 3);
    GST_BUFFER_PTS (b) = 0;
    fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
    b = gst_buffer_new ();
    GST_BUFFER_PTS (b) = gst_util_uint64_scale (n, GST_SECOND, RATE);
    fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
    frames_init (&f);
    spec_collect (h, &f, 0);
    fail_unless_equals_int (frames_count (&f), n_ref);
    check_frames_equal (&f, 0, ref, n_ref, "split floats");
    fail_on_bus_messages (bus, "avspectrogram layouts");
    frames_clear (&f);
    avf_harness_teardown_with_bus (h, bus);
    g_free (ref);
    g_free (x);
  }

  /* avattention: split and unaligned tensors */
  {
    gfloat *mel = at_mel_frames (), *video = at_patch_frames ();
    GPtrArray *plain = att_run (mel, video, LAYOUT_PLAIN);
    GPtrArray *split = att_run (mel, video, LAYOUT_SPLIT);
    GPtrArray *unaligned = att_run (mel, video, LAYOUT_UNALIGNED);

    for (guint k = 0; k < AT_VIDEO; k++) {
      fail_unless (avf_buffers_equal (g_ptr_array_index (plain, k),
              g_ptr_array_index (split, k)), "output %u differs with split "
          "input buffers", k);
      fail_unless (avf_buffers_equal (g_ptr_array_index (plain, k),
              g_ptr_array_index (unaligned, k)), "output %u differs with "
          "unaligned input buffers", k);
    }
    g_ptr_array_unref (plain);
    g_ptr_array_unref (split);
    g_ptr_array_unref (unaligned);
    g_free (mel);
    g_free (video);
  }

  /* avattention: one and a half patch frames, then one and a half
   * spectrogram frames */
  for (guint c = 0; c < 2; c++) {
    const gboolean bad_video = c == 0;
    const gsize nv = bad_video ? SM_N * SM_E * 3 / 2 : SM_N * SM_E;
    const gsize na = bad_video ? SM_M : SM_M * 3 / 2;
    gchar *w = avf_fixture_path (SMALL_WEIGHTS), *text;
    GstElement *att = gst_element_factory_make ("avattention", NULL);
    GstBus *bus = gst_bus_new ();
    GstHarness *hv, *ha;
    gfloat *data = g_new0 (gfloat, nv);

    gst_object_ref_sink (att);
    g_object_set (att, "weights", w, "window", AT_WINDOW, NULL);
    gst_element_set_bus (att, bus);
    hv = gst_harness_new_with_element (att, "video_sink", "src");
    ha = gst_harness_new_with_element (att, "audio_sink", NULL);
    gst_harness_set_live (hv, FALSE);
    gst_harness_set_live (ha, FALSE);
    gst_harness_set_src_caps (ha, gst_av_tensor_caps_log_mel (SM_M, RATE,
            HOP, N_FFT));
    gst_harness_set_src_caps (hv, gst_av_tensor_caps_patches (SM_E, 4, 3,
            SM_P, 10, 1));
    /* (the element aggregates once both pads have data; the return values
     * depend on when it stops) */
    gst_harness_push (hv, tensor_buffer (data, nv, 370 * MS, 100 * MS,
            LAYOUT_PLAIN));
    gst_harness_push (ha, tensor_buffer (data, na, 0, HOP_NS,
            LAYOUT_PLAIN));
    text = avf_expect_error (bus, 10 * GST_SECOND, GST_STREAM_ERROR,
        GST_STREAM_ERROR_FORMAT);
    if (bad_video) {
      avf_check_contains (text, "video_sink");
      avf_check_contains (text, "3456 bytes");
      avf_check_contains (text, "[12, 48]");
    } else {
      avf_check_contains (text, "audio_sink");
      avf_check_contains (text, "240 bytes");
      avf_check_contains (text, "40 float32 mel bands");
    }
    g_free (text);
    fail_unless (gst_harness_try_pull (hv) == NULL);
    avf_harness_teardown_pair (ha, hv);
    gst_element_set_bus (att, NULL);
    gst_bus_set_flushing (bus, TRUE);
    gst_object_unref (bus);
    gst_object_unref (att);
    g_free (data);
    g_free (w);
  }
}

GST_END_TEST;

static Suite *
edge_inputs_suite (void)
{
  Suite *s = suite_create ("edge_inputs");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_rate_channel_change_resampled);
  tcase_add_test (tc, test_rate_change_reaches_avattention);
  tcase_add_test (tc, test_rate_change_beyond_audio_positions);
  tcase_add_test (tc, test_resolution_change_same_patch_count);
  tcase_add_test (tc, test_resolution_change_refused);
  tcase_add_test (tc, test_extreme_video_sizes);
  tcase_add_test (tc, test_extreme_audio_formats);
  tcase_add_test (tc, test_fft_and_hop_extremes);
  tcase_add_test (tc, test_extreme_tensor_caps_at_avattention);
  tcase_add_test (tc, test_silence_clipping_denormals);
  tcase_add_test (tc, test_nan_and_inf_samples);
  tcase_add_test (tc, test_odd_audio_through_pipeline);
  tcase_add_test (tc, test_nan_sample_through_pipeline);
  tcase_add_test (tc, test_attention_nonfinite_inputs);
  tcase_add_test (tc, test_buffer_layouts);
  return s;
}

AVF_CHECK_MAIN (edge_inputs);
