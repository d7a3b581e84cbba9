/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Whole-pipeline scenarios on recorded clips, the way applications drive a
 * pipeline (robustness checklist, ../shared/docs/robustness.md, cases 2, 3,
 * 4, 15, 16 and 18):
 *
 *   filesrc ! decodebin
 *     audio: queue ! audioconvert ! audioresample ! avspectrogram n-mels=40
 *            ! queue ! att.audio_sink
 *     video: queue ! videoconvert ! videoscale ! RGB 32x24 ! avpatchembed
 *            ! queue ! att.video_sink
 *   avattention name=att ! appsink (or avtensorsink)
 *
 * with the small fixture model (tests/fixtures/weights_small.safetensors:
 * 40 mel bands, 8-pixel patches on a 4 x 3 grid, a 370 ms window), so that
 * a whole clip takes well under a second and the loops stay quick under
 * ASan and valgrind.
 *
 * - test_fifty_flushing_seeks: 50 accurate flushing seeks in PLAYING,
 *   back and forth, twice to one position, near the end, to 0, some
 *   back-to-back: no stale buffer after a flush, the first output is the
 *   frame at the seek target, no deadlock, one EOS at the end.
 * - test_rerun_identical_output: the same pipeline object run to EOS seven
 *   times, each into a new .npz (three reruns after NULL, three after only
 *   READY; under valgrind three runs, one rerun after each): the files are
 *   byte-identical, 90 frames each.
 * - test_state_cycles_with_data: 40 NULL -> PLAYING -> NULL cycles with
 *   data flowing: no deadlock, error or critical; threads and memory stay
 *   bounded.
 * - test_clip_without_audio, test_audio_sink_unlinked: a video-only clip
 *   (made here) through a gst-launch style pipeline whose audio branch is
 *   never linked, and one without an audio branch at all: every frame comes
 *   out with the audio masked, then EOS, no hang.
 * - test_seek_with_rate_and_segment_start: a rate 2.0 seek to [1.0 s,
 *   2.5 s): the outputs are exactly the frames of that segment and their
 *   running time (and the window the element used) is (pts - start) / 2.
 *
 * Every wait is bounded and fails with what was seen so far.  The loops are
 * shortened with AVF_TEST_QUICK=1 (12 seeks, 10 cycles); the default is the
 * full checklist.  A test whose system elements or decoders are missing
 * prints SKIPPED and passes.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <gst/app/gstappsink.h>
#include <gst/check/gstcheck.h>
#include "avf_check.h"

#include "gstavattentionmeta.h"
#include "npzread.h"

#define MS GST_MSECOND
/* the small fixture model */
#define SM_WIDTH 32             /* 4 columns of 8 pixels */
#define SM_HEIGHT 24            /* 3 rows */
#define SM_MELS 40
#define SM_WINDOW (370 * MS)
#define SM_T 37                 /* slots: 370 ms at a hop of 10 ms */
#define SM_FUSED 96             /* 2E */
/* tests/clips/speech-vp8-vorbis.webm: 3 s, 90 frames at 30 fps (WebM
 * timestamps in whole milliseconds), Vorbis 16 kHz mono */
#define CLIP "speech-vp8-vorbis.webm"
#define CLIP_FRAMES 90
#define CLIP_FRAME_NS ((GstClockTime) 33333333)
/* the video-only clip made by the test */
#define NOAUDIO_FRAMES 30

/* ---- helpers -------------------------------------------------------------- */

static gboolean
quick (void)
{
  return g_strcmp0 (g_getenv ("AVF_TEST_QUICK"), "1") == 0;
}

/* TRUE under valgrind (its preload library is mapped into the process). */
static gboolean
under_valgrind (void)
{
  const gchar *preload = g_getenv ("LD_PRELOAD");
  gchar *maps = NULL;
  gboolean yes = preload != NULL && strstr (preload, "vgpreload") != NULL;

  if (!yes && g_file_get_contents ("/proc/self/maps", &maps, NULL, NULL))
    yes = strstr (maps, "vgpreload") != NULL;
  g_free (maps);
  return yes;
}

static gboolean
under_asan (void)
{
#if defined(__SANITIZE_ADDRESS__)
  return TRUE;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return TRUE;
#else
  return FALSE;
#endif
#else
  return FALSE;
#endif
}

/* How much longer than in a plain build the bounded waits may take. */
static gdouble
slowdown (void)
{
  static gdouble s = 0.0;

  if (s == 0.0)
    s = under_valgrind ()? 20.0 : under_asan ()? 4.0 : 1.0;
  return s;
}

/* @seconds of a plain build, scaled for the sanitizers, in microseconds. */
static gint64
wait_us (gdouble seconds)
{
  return (gint64) (seconds * slowdown () * G_USEC_PER_SEC);
}

static const gchar *const CLIP_ELEMENTS[] = {
  "filesrc", "decodebin", "matroskademux", "vp8dec", "vorbisdec", "queue",
  "audioconvert", "audioresample", "videoconvert", "videoscale", "appsink",
  "avspectrogram", "avpatchembed", "avattention", NULL
};

/* The clip of the scenarios, or NULL after printing SKIPPED. */
static gchar *
scenario_clip (const gchar * test)
{
  gchar *clip = avf_clip_path (CLIP);

  if (!avf_have_elements (test, CLIP_ELEMENTS))
    g_clear_pointer (&clip, g_free);
  else if (!g_file_test (clip, G_FILE_TEST_IS_REGULAR)) {
    g_print ("SKIPPED %s: no clip %s\n", test, clip);
    g_clear_pointer (&clip, g_free);
  }
  return clip;
}

static guint
count_threads (void)
{
  GDir *d = g_dir_open ("/proc/self/task", 0, NULL);
  guint n = 0;

  fail_unless (d != NULL, "cannot read /proc/self/task");
  while (g_dir_read_name (d) != NULL)
    n++;
  g_dir_close (d);
  return n;
}

/* ---- temporary files ------------------------------------------------------ */

/* They go to avf_tmp, made before the tests and removed after them by an
 * unchecked fixture (avf_tmp_setup, avf_tmp_teardown), which runs in the
 * parent process: nothing stays behind when a test fails. */

/* ---- watching a pipeline -------------------------------------------------- */

/* One output buffer as the sink saw it. */
typedef struct
{
  GstClockTime pts;
  GstClockTime running_time;    /* from the segment the sink got */
  GstClockTime window_end;      /* the running time the element used */
  guint present;                /* audio slots that held audio */
  gboolean audio_missing;
} Output;

/* What arrives at the final sink, in stream order (a pad probe on its sink
 * pad), and what the bus says (a sync handler).  An "epoch" is the stream
 * since the last FLUSH_STOP or STREAM_START.  Every field under lock; cond
 * is signalled on every change. */
typedef struct
{
  GMutex lock;
  GCond cond;

  /* bus */
  gchar *error;                 /* first ERROR message, as text */
  gchar *warning;               /* first WARNING message, as text */
  guint bus_eos;                /* EOS messages */

  /* the sink pad */
  GstClockTime frame_ns;        /* > 0: pts must go up one frame at a time */
  guint flushes;                /* FLUSH_STOP events */
  guint32 flush_seqnum;         /* of the last FLUSH_STOP */
  gboolean have_segment;        /* a segment in this epoch */
  GstSegment segment;
  guint32 segment_seqnum;
  guint epoch_buffers;          /* buffers in this epoch */
  guint epoch_repeats;          /* of them, with the pts of the one before */
  guint epoch_inputs;           /* video frames into avattention */
  guint epoch_eos;              /* EOS events in this epoch */
  GstClockTime first_pts;       /* first buffer of this epoch */
  GstClockTime last_pts;
  guint buffers;                /* all buffers */
  guint masked;                 /* buffers whose meta says audio_missing */
  gboolean record;              /* keep every Output of the epoch */
  GArray *outputs;              /* (Output) of this epoch */
  gchar *stream_problem;        /* first wrong thing in the stream */
} Watch;

static void
watch_init (Watch * w)
{
  memset (w, 0, sizeof *w);
  g_mutex_init (&w->lock);
  g_cond_init (&w->cond);
  w->first_pts = w->last_pts = GST_CLOCK_TIME_NONE;
  w->outputs = g_array_new (FALSE, FALSE, sizeof (Output));
}

static void
watch_clear (Watch * w)
{
  g_free (w->error);
  g_free (w->warning);
  g_free (w->stream_problem);
  g_array_unref (w->outputs);
  g_mutex_clear (&w->lock);
  g_cond_clear (&w->cond);
}

/* Records the first problem of the stream (lock held). */
static void
stream_problem (Watch * w, const gchar * fmt, ...) G_GNUC_PRINTF (2, 3);

static void
stream_problem (Watch * w, const gchar * fmt, ...)
{
  va_list args;

  if (w->stream_problem != NULL)
    return;
  va_start (args, fmt);
  w->stream_problem = g_strdup_vprintf (fmt, args);
  va_end (args);
  g_printerr ("stream problem: %s\n", w->stream_problem);
}

static void
watch_buffer (Watch * w, GstBuffer * buf)
{
  GstClockTime pts = GST_BUFFER_PTS (buf), rt = GST_CLOCK_TIME_NONE;
  GstAvAttentionMeta *meta = gst_buffer_get_av_attention_meta (buf);
  GstMapInfo map;
  Output o = { 0 };

  if (!w->have_segment)
    stream_problem (w, "a buffer (pts %" GST_TIME_FORMAT ") without a "
        "segment after flush %u", GST_TIME_ARGS (pts), w->flushes);
  if (!GST_CLOCK_TIME_IS_VALID (pts)) {
    stream_problem (w, "a buffer without a timestamp");
  } else if (w->have_segment) {
    /* a stale buffer from before a flushing seek is outside the new
     * segment, or breaks the frame-by-frame progression below */
    rt = gst_segment_to_running_time (&w->segment, GST_FORMAT_TIME, pts);
    if (!GST_CLOCK_TIME_IS_VALID (rt))
      stream_problem (w, "a buffer at %" GST_TIME_FORMAT " is outside its "
          "segment [%" GST_TIME_FORMAT ", %" GST_TIME_FORMAT "] (flush %u)",
          GST_TIME_ARGS (pts), GST_TIME_ARGS (w->segment.start),
          GST_TIME_ARGS (w->segment.stop), w->flushes);
  }
  if (GST_CLOCK_TIME_IS_VALID (pts) && GST_CLOCK_TIME_IS_VALID (w->last_pts)
      && w->epoch_buffers > 0 && w->frame_ns > 0) {
    if (pts == w->last_pts && w->epoch_buffers == 1) {
      /* the decoder clips the frame that overlaps the segment start (WebM
       * times are whole milliseconds, so frame 29 at 0.967 s lasts until
       * 1.000333 s) and sends it with the start as its pts: its output
       * and that of the frame at the start share the pts */
      w->epoch_repeats++;
    } else if (!(pts > w->last_pts && pts - w->last_pts <=
            w->frame_ns * 3 / 2)) {
      stream_problem (w, "after flush %u the pts goes from %" GST_TIME_FORMAT
          " to %" GST_TIME_FORMAT ", not one frame on (a stale or lost "
          "buffer)", w->flushes, GST_TIME_ARGS (w->last_pts),
          GST_TIME_ARGS (pts));
    }
  }
  if (w->epoch_eos > 0)
    stream_problem (w, "a buffer (pts %" GST_TIME_FORMAT ") after EOS",
        GST_TIME_ARGS (pts));

  /* the fused vector: 2E finite floats */
  if (gst_buffer_map (buf, &map, GST_MAP_READ)) {
    const gfloat *f = (const gfloat *) map.data;
    if (map.size != SM_FUSED * sizeof (gfloat))
      stream_problem (w, "an output of %" G_GSIZE_FORMAT " bytes, expected "
          "%" G_GSIZE_FORMAT, map.size, SM_FUSED * sizeof (gfloat));
    for (gsize i = 0; i < map.size / sizeof (gfloat); i++)
      if (!isfinite (f[i])) {
        stream_problem (w, "output at %" GST_TIME_FORMAT ": fused value "
            "%" G_GSIZE_FORMAT " is %g", GST_TIME_ARGS (pts), i, f[i]);
        break;
      }
    gst_buffer_unmap (buf, &map);
  } else {
    stream_problem (w, "cannot map an output buffer");
  }

  if (meta == NULL) {
    stream_problem (w, "the output at %" GST_TIME_FORMAT " has no attention "
        "metadata", GST_TIME_ARGS (pts));
  } else {
    /* the element's own running time for the frame is the one the sink
     * computes from the output segment */
    if (GST_CLOCK_TIME_IS_VALID (rt) && meta->window_end != rt)
      stream_problem (w, "output at %" GST_TIME_FORMAT ": the element used "
          "running time %" GST_TIME_FORMAT ", the output segment gives %"
          GST_TIME_FORMAT, GST_TIME_ARGS (pts),
          GST_TIME_ARGS (meta->window_end), GST_TIME_ARGS (rt));
    if (meta->n_audio_slots != SM_T)
      stream_problem (w, "the meta has %u audio slots, expected %u",
          meta->n_audio_slots, SM_T);
    if (meta->audio_missing != (meta->n_audio_present == 0))
      stream_problem (w, "meta: audio_missing %d with %u slots present",
          meta->audio_missing, meta->n_audio_present);
    if (meta->audio_missing)
      w->masked++;
    o.window_end = meta->window_end;
    o.present = meta->n_audio_present;
    o.audio_missing = meta->audio_missing;
  }

  if (w->epoch_buffers == 0)
    w->first_pts = pts;
  w->last_pts = pts;
  w->epoch_buffers++;
  w->buffers++;
  if (w->record) {
    o.pts = pts;
    o.running_time = rt;
    g_array_append_val (w->outputs, o);
  }
}

static GstPadProbeReturn
watch_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Watch *w = user_data;

  g_mutex_lock (&w->lock);
  if (GST_PAD_PROBE_INFO_TYPE (info) & GST_PAD_PROBE_TYPE_BUFFER) {
    watch_buffer (w, GST_PAD_PROBE_INFO_BUFFER (info));
  } else if (GST_PAD_PROBE_INFO_TYPE (info) & GST_PAD_PROBE_TYPE_EVENT_BOTH) {
    GstEvent *ev = GST_PAD_PROBE_INFO_EVENT (info);

    switch (GST_EVENT_TYPE (ev)) {
      case GST_EVENT_FLUSH_STOP:
        w->flushes++;
        w->flush_seqnum = gst_event_get_seqnum (ev);
        /* fall through */
      case GST_EVENT_STREAM_START:
        /* a new run of the stream (after a flush or a restart) */
        w->have_segment = FALSE;
        w->epoch_buffers = w->epoch_repeats = 0;
        w->epoch_eos = 0;
        w->first_pts = w->last_pts = GST_CLOCK_TIME_NONE;
        g_array_set_size (w->outputs, 0);
        break;
      case GST_EVENT_SEGMENT:{
        const GstSegment *seg;
        gst_event_parse_segment (ev, &seg);
        gst_segment_copy_into (seg, &w->segment);
        w->segment_seqnum = gst_event_get_seqnum (ev);
        w->have_segment = TRUE;
        break;
      }
      case GST_EVENT_EOS:
        w->epoch_eos++;
        if (w->epoch_eos > 1)
          stream_problem (w, "%u EOS events after flush %u: one EOS "
              "downstream, always", w->epoch_eos, w->flushes);
        break;
      default:
        break;
    }
  }
  g_cond_broadcast (&w->cond);
  g_mutex_unlock (&w->lock);
  return GST_PAD_PROBE_OK;
}

static GstBusSyncReply
watch_bus (GstBus * bus, GstMessage * msg, gpointer user_data)
{
  Watch *w = user_data;
  GstMessageType type = GST_MESSAGE_TYPE (msg);

  if (type == GST_MESSAGE_ERROR || type == GST_MESSAGE_WARNING) {
    GError *err = NULL;
    gchar *dbg = NULL, *text;

    if (type == GST_MESSAGE_ERROR)
      gst_message_parse_error (msg, &err, &dbg);
    else
      gst_message_parse_warning (msg, &err, &dbg);
    text = g_strdup_printf ("%s from %s: %s (%s)",
        GST_MESSAGE_TYPE_NAME (msg), GST_OBJECT_NAME (msg->src),
        err->message, dbg ? dbg : "no details");
    g_printerr ("%s\n", text);
    g_mutex_lock (&w->lock);
    if (type == GST_MESSAGE_ERROR && w->error == NULL)
      w->error = g_strdup (text);
    else if (type == GST_MESSAGE_WARNING && w->warning == NULL)
      w->warning = g_strdup (text);
    g_cond_broadcast (&w->cond);
    g_mutex_unlock (&w->lock);
    g_free (text);
    g_clear_error (&err);
    g_free (dbg);
  } else if (type == GST_MESSAGE_EOS) {
    g_mutex_lock (&w->lock);
    w->bus_eos++;
    g_cond_broadcast (&w->cond);
    g_mutex_unlock (&w->lock);
  }
  /* nobody pops this bus: drop everything so that nothing piles up (a
   * sync handler that drops a message owns it) */
  gst_message_unref (msg);
  return GST_BUS_DROP;
}

/* Watches @pipeline's bus and the sink pad of @sink. */
static void
watch_attach (Watch * w, GstElement * pipeline, GstElement * sink)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  GstPad *pad = gst_element_get_static_pad (sink, "sink");

  gst_bus_set_sync_handler (bus, watch_bus, w, NULL);
  gst_object_unref (bus);
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER |
      GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM | GST_PAD_PROBE_TYPE_EVENT_FLUSH,
      watch_probe, w, NULL);
  gst_object_unref (pad);
}

/* Counts the video frames going into avattention since the last flush:
 * one output per frame. */
static GstPadProbeReturn
watch_input_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Watch *w = user_data;

  g_mutex_lock (&w->lock);
  if (GST_PAD_PROBE_INFO_TYPE (info) & GST_PAD_PROBE_TYPE_BUFFER) {
    if (gst_buffer_get_size (GST_PAD_PROBE_INFO_BUFFER (info)) > 0)
      w->epoch_inputs++;
  } else {
    GstEvent *ev = GST_PAD_PROBE_INFO_EVENT (info);
    if (GST_EVENT_TYPE (ev) == GST_EVENT_FLUSH_STOP
        || GST_EVENT_TYPE (ev) == GST_EVENT_STREAM_START)
      w->epoch_inputs = 0;
  }
  g_mutex_unlock (&w->lock);
  return GST_PAD_PROBE_OK;
}

static void
watch_attach_input (Watch * w, GstElement * att)
{
  GstPad *pad = gst_element_get_static_pad (att, "video_sink");

  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER |
      GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM | GST_PAD_PROBE_TYPE_EVENT_FLUSH,
      watch_input_probe, w, NULL);
  gst_object_unref (pad);
}

typedef gboolean (*WatchCond) (Watch * w, gconstpointer data);

/* Waits (lock held) until @cond holds or an ERROR arrives, at most
 * @seconds (scaled).  TRUE when @cond holds. */
static gboolean
watch_wait_locked (Watch * w, WatchCond cond, gconstpointer data,
    gdouble seconds)
{
  gint64 deadline = g_get_monotonic_time () + wait_us (seconds);

  while (!cond (w, data) && w->error == NULL)
    if (!g_cond_wait_until (&w->cond, &w->lock, deadline))
      break;
  return cond (w, data);
}

/* The state of the stream, for failure messages (lock held). */
static gchar *
watch_describe (Watch * w)
{
  return g_strdup_printf ("%u buffers in all, %u since flush %u (%u video "
      "frames in; first %" GST_TIME_FORMAT ", last %" GST_TIME_FORMAT "), %u "
      "EOS since, %u EOS messages; error: %s; stream problem: %s",
      w->buffers, w->epoch_buffers, w->flushes, w->epoch_inputs,
      GST_TIME_ARGS (w->first_pts),
      GST_TIME_ARGS (w->last_pts), w->epoch_eos, w->bus_eos,
      w->error ? w->error : "none",
      w->stream_problem ? w->stream_problem : "none");
}

/* Fails on an ERROR, a WARNING (unless @warnings_ok) or a problem in the
 * stream so far. */
static void
watch_check (Watch * w, gboolean warnings_ok, const gchar * what)
{
  g_mutex_lock (&w->lock);
  fail_unless (w->error == NULL, "%s: %s", what, w->error);
  fail_unless (warnings_ok || w->warning == NULL, "%s: %s", what,
      w->warning);
  fail_unless (w->stream_problem == NULL, "%s: %s", what, w->stream_problem);
  g_mutex_unlock (&w->lock);
}

/* ---- setting a state with a bound ---------------------------------------- */

typedef struct
{
  GMutex lock;
  GCond cond;
  GstElement *element;
  GstState state;
  gboolean done;
  GstStateChangeReturn ret;
} StateJob;

static gpointer
state_job_run (gpointer data)
{
  StateJob *j = data;
  GstStateChangeReturn ret = gst_element_set_state (j->element, j->state);

  g_mutex_lock (&j->lock);
  j->ret = ret;
  j->done = TRUE;
  g_cond_signal (&j->cond);
  g_mutex_unlock (&j->lock);
  return NULL;
}

/* gst_element_set_state() from another thread: a deadlock in a state
 * change fails the test with a message instead of hanging it. */
static GstStateChangeReturn
set_state_bounded (GstElement * element, GstState state, gdouble seconds,
    const gchar * what)
{
  StateJob *j = g_new0 (StateJob, 1);
  gint64 deadline = g_get_monotonic_time () + wait_us (seconds);
  GThread *t;
  GstStateChangeReturn ret;
  gboolean done;

  g_mutex_init (&j->lock);
  g_cond_init (&j->cond);
  j->element = element;
  j->state = state;
  t = g_thread_new ("set-state", state_job_run, j);
  g_mutex_lock (&j->lock);
  while (!j->done)
    if (!g_cond_wait_until (&j->cond, &j->lock, deadline))
      break;
  done = j->done;
  ret = j->ret;
  g_mutex_unlock (&j->lock);
  /* on a deadlock the job is left behind (the test process ends) */
  fail_unless (done, "%s: setting %s to %s did not return within %.0f s "
      "(deadlock)", what, GST_ELEMENT_NAME (element),
      gst_element_state_get_name (state), seconds * slowdown ());
  g_thread_join (t);
  g_mutex_clear (&j->lock);
  g_cond_clear (&j->cond);
  g_free (j);
  return ret;
}

/* ---- the clip pipeline ---------------------------------------------------- */

typedef struct
{
  GstElement *pipeline, *src, *dec, *abranch, *vbranch, *att, *sink;
  Watch w;
} ClipPipeline;

/* decodebin's pads come again after every restart: link each to its branch
 * when that is free (as applications do; gst_parse_launch's delayed links
 * only link once). */
static void
clip_pad_added (GstElement * dec, GstPad * pad, gpointer user_data)
{
  ClipPipeline *p = user_data;
  GstCaps *caps = gst_pad_get_current_caps (pad);
  const gchar *name;
  GstElement *branch = NULL;
  GstPad *sink;

  if (caps == NULL)
    caps = gst_pad_query_caps (pad, NULL);
  name = gst_structure_get_name (gst_caps_get_structure (caps, 0));
  if (g_str_has_prefix (name, "audio/"))
    branch = p->abranch;
  else if (g_str_has_prefix (name, "video/"))
    branch = p->vbranch;
  gst_caps_unref (caps);
  if (branch == NULL)
    return;
  sink = gst_element_get_static_pad (branch, "sink");
  if (!gst_pad_is_linked (sink))
    fail_unless_equals_int (gst_pad_link (pad, sink), GST_PAD_LINK_OK);
  gst_object_unref (sink);
}

static GstFlowReturn
drain_sample (GstAppSink * sink, gpointer user_data)
{
  GstSample *s = gst_app_sink_pull_sample (sink);

  if (s)
    gst_sample_unref (s);
  return GST_FLOW_OK;
}

static GstElement *
make_appsink (gboolean sync)
{
  GstElement *sink = gst_element_factory_make ("appsink", "sink");
  GstAppSinkCallbacks cb = { 0 };

  fail_unless (sink != NULL);
  /* no QoS: every frame is decoded and fused */
  g_object_set (sink, "sync", sync, "qos", FALSE, "emit-signals", FALSE,
      NULL);
  cb.new_sample = drain_sample;
  gst_app_sink_set_callbacks (GST_APP_SINK (sink), &cb, NULL, NULL);
  return sink;
}

/* filesrc ! decodebin, the two branches, avattention ! @sink. */
static ClipPipeline *
clip_pipeline_new (const gchar * clip, GstElement * sink)
{
  ClipPipeline *p = g_new0 (ClipPipeline, 1);
  gchar *weights = avf_fixture_path ("weights_small.safetensors");
  gchar *desc;
  GError *err = NULL;

  watch_init (&p->w);
  p->w.frame_ns = CLIP_FRAME_NS;
  p->pipeline = gst_pipeline_new ("scenario");
  p->src = gst_element_factory_make ("filesrc", NULL);
  p->dec = gst_element_factory_make ("decodebin", NULL);
  fail_unless (p->src && p->dec);
  g_object_set (p->src, "location", clip, NULL);

  desc = g_strdup_printf ("queue ! audioconvert ! audioresample ! "
      "avspectrogram n-mels=%d ! queue", SM_MELS);
  p->abranch = gst_parse_bin_from_description (desc, TRUE, &err);
  fail_unless (p->abranch != NULL, "%s: %s", desc, err ? err->message : "");
  g_free (desc);
  desc = g_strdup_printf ("queue ! videoconvert ! videoscale ! "
      "video/x-raw,format=RGB,width=%d,height=%d ! avpatchembed "
      "weights=\"%s\" ! queue", SM_WIDTH, SM_HEIGHT, weights);
  p->vbranch = gst_parse_bin_from_description (desc, TRUE, &err);
  fail_unless (p->vbranch != NULL, "%s: %s", desc, err ? err->message : "");
  g_free (desc);

  p->att = gst_element_factory_make ("avattention", "att");
  fail_unless (p->att != NULL);
  g_object_set (p->att, "weights", weights, "window", (guint64) SM_WINDOW,
      NULL);
  p->sink = sink;
  gst_bin_add_many (GST_BIN (p->pipeline), p->src, p->dec, p->abranch,
      p->vbranch, p->att, p->sink, NULL);
  fail_unless (gst_element_link (p->src, p->dec));
  fail_unless (gst_element_link_pads (p->abranch, "src", p->att,
          "audio_sink"));
  fail_unless (gst_element_link_pads (p->vbranch, "src", p->att,
          "video_sink"));
  fail_unless (gst_element_link (p->att, p->sink));
  g_signal_connect (p->dec, "pad-added", G_CALLBACK (clip_pad_added), p);
  watch_attach (&p->w, p->pipeline, p->sink);
  watch_attach_input (&p->w, p->att);
  g_free (weights);
  return p;
}

static void
clip_pipeline_free (ClipPipeline * p)
{
  set_state_bounded (p->pipeline, GST_STATE_NULL, 30, "tear-down");
  gst_object_unref (p->pipeline);
  watch_clear (&p->w);
  g_free (p);
}

static gboolean
cond_buffers_at_least (Watch * w, gconstpointer data)
{
  return w->buffers >= GPOINTER_TO_UINT (data);
}

static gboolean
cond_bus_eos_above (Watch * w, gconstpointer data)
{
  return w->bus_eos > GPOINTER_TO_UINT (data);
}

/* Sets PLAYING and waits for the EOS message; fails on an ERROR, a
 * WARNING, a problem in the stream or a stall. */
static void
clip_run_to_eos (ClipPipeline * p, const gchar * what)
{
  guint eos_before;
  gboolean ok;
  gchar *state;

  g_mutex_lock (&p->w.lock);
  eos_before = p->w.bus_eos;
  g_mutex_unlock (&p->w.lock);
  fail_if (set_state_bounded (p->pipeline, GST_STATE_PLAYING, 30, what) ==
      GST_STATE_CHANGE_FAILURE, "%s: the pipeline did not start", what);
  g_mutex_lock (&p->w.lock);
  ok = watch_wait_locked (&p->w, cond_bus_eos_above,
      GUINT_TO_POINTER (eos_before), 60);
  state = watch_describe (&p->w);
  g_mutex_unlock (&p->w.lock);
  fail_unless (ok, "%s: no EOS within %.0f s: %s", what, 60 * slowdown (),
      state);
  g_free (state);
  watch_check (&p->w, FALSE, what);
}

/* ---- 1. fifty flushing seeks ----------------------------------------------- */

typedef struct
{
  guint32 seqnum;
} SeekWait;

/* The flush of this seek reached the sink, and so did a buffer after it. */
static gboolean
cond_seek_output (Watch * w, gconstpointer data)
{
  const SeekWait *s = data;
  return w->flush_seqnum == s->seqnum && w->have_segment
      && w->epoch_buffers > 0;
}

/* Three outputs after the flush of this seek, or its EOS. */
static gboolean
cond_flowing (Watch * w, gconstpointer data)
{
  const SeekWait *s = data;
  return w->flush_seqnum == s->seqnum && (w->epoch_buffers >= 3
      || w->epoch_eos > 0);
}

static gboolean
cond_epoch_eos (Watch * w, gconstpointer data)
{
  return w->epoch_eos > 0;
}

/* Seek i of n: varied positions in the 3 s clip (frames every 33.3 ms up
 * to 2.967 s). */
static GstClockTime
seek_target (GRand * rand, guint i, guint n, GstClockTime previous)
{
  if (i == n - 1)
    return 2000 * MS;           /* the last: then play to the end */
  switch (i % 10) {
    case 0:
      return 1500 * MS;         /* forward from the start */
    case 3:
      return 0;                 /* back to the start */
    case 6:
      return 2950 * MS;         /* near the end: the last frame only */
    case 8:
      return previous;          /* the same position twice */
    case 4:
      return 2900 * MS;         /* near the end, backward from it next */
    default:
      /* anywhere, on a millisecond */
      return (GstClockTime) g_rand_int_range (rand, 0, 2900) * MS;
  }
}

GST_START_TEST (test_fifty_flushing_seeks)
{
  const guint n = quick ()? 12 : 50;
  gchar *clip = scenario_clip ("test_fifty_flushing_seeks");
  GRand *rand = g_rand_new_with_seed (20260117);
  GstClockTime target = 0;
  ClipPipeline *p;
  SeekWait sw;
  guint eos_messages, awaited = 0, final_buffers;
  gboolean ok;
  gchar *state;
  gint64 t0 = g_get_monotonic_time ();

  if (clip == NULL)
    return;
  /* sync=TRUE: the clip plays in real time, so the seeks hit a running
   * stream (and after near-end seeks, one that has just ended) */
  p = clip_pipeline_new (clip, make_appsink (TRUE));
  fail_if (gst_element_set_state (p->pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  g_mutex_lock (&p->w.lock);
  ok = watch_wait_locked (&p->w, cond_buffers_at_least, GUINT_TO_POINTER (1),
      30);
  state = watch_describe (&p->w);
  g_mutex_unlock (&p->w.lock);
  fail_unless (ok, "no output within %.0f s of PLAYING: %s",
      30 * slowdown (), state);
  g_free (state);

  for (guint i = 0; i < n; i++) {
    /* every fourth seek follows the previous one at once, without waiting
     * for its data; the last is always waited for */
    const gboolean wait = i % 4 != 1 || i == n - 1;
    GstEvent *seek;
    gchar what[96];

    target = seek_target (rand, i, n, target);
    g_snprintf (what, sizeof what, "seek %u of %u to %" GST_TIME_FORMAT
        "%s", i + 1, n, GST_TIME_ARGS (target), wait ? "" : " (not waited)");
    seek = gst_event_new_seek (1.0, GST_FORMAT_TIME,
        GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE, GST_SEEK_TYPE_SET,
        target, GST_SEEK_TYPE_NONE, GST_CLOCK_TIME_NONE);
    sw.seqnum = gst_event_get_seqnum (seek);
    fail_unless (gst_element_send_event (p->pipeline, seek),
        "%s: refused", what);
    watch_check (&p->w, FALSE, what);
    if (!wait)
      continue;

    g_mutex_lock (&p->w.lock);
    ok = watch_wait_locked (&p->w, cond_seek_output, &sw, 30);
    state = watch_describe (&p->w);
    if (ok) {
      GstClockTime first = p->w.first_pts;
      GstClockTime rt = gst_segment_to_running_time (&p->w.segment,
          GST_FORMAT_TIME, first);

      /* the first output after the flush is the first frame at or after
       * the target (one frame later at most), at running time ~0 */
      fail_unless (first >= target && first < target + CLIP_FRAME_NS + MS,
          "%s: the first output after the flush is at %" GST_TIME_FORMAT
          " (stale, or not the frame at the target): %s", what,
          GST_TIME_ARGS (first), state);
      fail_unless (rt < CLIP_FRAME_NS + MS, "%s: the first output has "
          "running time %" GST_TIME_FORMAT ", expected < 1 frame", what,
          GST_TIME_ARGS (rt));
      fail_unless (p->w.segment.rate == 1.0);
    }
    g_mutex_unlock (&p->w.lock);
    fail_unless (ok, "%s: no output after the seek within %.0f s "
        "(deadlock?): %s", what, 30 * slowdown (), state);
    g_free (state);
    watch_check (&p->w, FALSE, what);
    awaited++;
    /* now and then let it play a little: the stream keeps flowing after
     * the seek (three frames, or the end), and the next seek hits it in
     * full flow */
    if (i % 5 == 2) {
      g_usleep (g_rand_int_range (rand, 20, 150) * 1000);
      g_mutex_lock (&p->w.lock);
      ok = watch_wait_locked (&p->w, cond_flowing, &sw, 30);
      state = watch_describe (&p->w);
      g_mutex_unlock (&p->w.lock);
      fail_unless (ok, "%s: the stream stalls after its first output: %s",
          what, state);
      g_free (state);
    }
  }

  /* After the last seek (to 2.0 s): frames 60 to 89 and one EOS, both at
   * the sink and on the bus.  All EOS messages of earlier segments were
   * posted before that seek's flush reached the sink. */
  g_mutex_lock (&p->w.lock);
  eos_messages = p->w.bus_eos;
  ok = watch_wait_locked (&p->w, cond_epoch_eos, NULL, 30)
      && watch_wait_locked (&p->w, cond_bus_eos_above,
      GUINT_TO_POINTER (eos_messages), 30);
  state = watch_describe (&p->w);
  g_mutex_unlock (&p->w.lock);
  fail_unless (ok, "no EOS after the last seek within %.0f s: %s",
      30 * slowdown (), state);
  g_free (state);
  g_usleep (wait_us (0.3));
  g_mutex_lock (&p->w.lock);
  fail_unless_equals_int (p->w.epoch_eos, 1);
  fail_unless (p->w.bus_eos == eos_messages + 1, "%u EOS messages after "
      "the last seek, expected 1", p->w.bus_eos - eos_messages);
  /* one output per video frame into the element; the frames 60 to 89 (and
   * perhaps frame 59, clipped to start at 2.0 s by the decoder) */
  fail_unless (p->w.epoch_buffers == p->w.epoch_inputs, "%u outputs for %u "
      "video frames after the last seek", p->w.epoch_buffers,
      p->w.epoch_inputs);
  final_buffers = p->w.epoch_buffers - p->w.epoch_repeats;
  g_mutex_unlock (&p->w.lock);
  fail_unless_equals_int (final_buffers, CLIP_FRAMES - 60);
  watch_check (&p->w, FALSE, "after the seeks");

  g_print ("test_fifty_flushing_seeks: %u seeks (%u waited for), %u "
      "flushes and %u outputs at the sink, %.1f s\n", n, awaited,
      p->w.flushes, p->w.buffers,
      (g_get_monotonic_time () - t0) / 1e6);
  fail_unless (p->w.flushes >= awaited, "%u flushes for %u awaited seeks",
      p->w.flushes, awaited);
  clip_pipeline_free (p);
  g_rand_free (rand);
  g_free (clip);
}

GST_END_TEST;

/* ---- 2. rerun: identical output ------------------------------------------ */

/* The .npz of one run: 90 frames of fused vectors, their times, the audio
 * masks and the maps. */
static void
check_run_npz (const gchar * path, const gchar * what)
{
  NpzFile z;
  char err[512];
  const NpzArray *data, *pts, *mask;
  guint64 with_audio = 0;

  fail_unless (npz_open (&z, path, err, sizeof err), "%s: %s", what, err);
  data = npz_find (&z, "data");
  pts = npz_find (&z, "pts");
  mask = npz_find (&z, "audio_mask");
  fail_unless (data && pts && mask, "%s: data, pts or audio_mask missing",
      what);
  fail_unless (data->ndim == 2 && data->shape[0] == CLIP_FRAMES
      && data->shape[1] == SM_FUSED, "%s: data is [%" G_GUINT64_FORMAT
      ", %" G_GUINT64_FORMAT "], expected [%d, %d]", what, data->shape[0],
      data->ndim > 1 ? data->shape[1] : 0, CLIP_FRAMES, SM_FUSED);
  fail_unless (pts->numel == CLIP_FRAMES && mask->ndim == 2
      && mask->shape[0] == CLIP_FRAMES && mask->shape[1] == SM_T, "%s", what);
  for (guint64 i = 0; i < data->numel; i++)
    fail_unless (isfinite (npz_f32 (data, i)), "%s: value %" G_GUINT64_FORMAT
        " not finite", what, i);
  for (guint64 f = 0; f < CLIP_FRAMES; f++) {
    gboolean any = FALSE;
    fail_unless (f == 0 || npz_i64 (pts, f) > npz_i64 (pts, f - 1));
    for (guint64 s = 0; s < SM_T; s++)
      any |= !npz_b1 (mask, f * SM_T + s);
    with_audio += any;
  }
  fail_unless_equals_int64 (npz_i64 (pts, 0), 0);
  /* the clip has speech all along: only the first frame(s) lack audio */
  fail_unless (with_audio >= CLIP_FRAMES - 2, "%s: only %" G_GUINT64_FORMAT
      " frames heard audio", what, with_audio);
  npz_close (&z);
}

/* Frames in an .npz (its "data" array), or -1 when it cannot be read. */
static gint64
npz_frames (const gchar * path)
{
  NpzFile z;
  char err[256];
  const NpzArray *data;
  gint64 n = -1;

  if (!npz_open (&z, path, err, sizeof err))
    return -1;
  data = npz_find (&z, "data");
  if (data != NULL && data->ndim >= 1)
    n = (gint64) data->shape[0];
  npz_close (&z);
  return n;
}

/* Seven runs of one pipeline object to EOS, each into a new file: runs 1-3
 * after going back to NULL, runs 4-6 after going only to READY (run 6 also
 * after a PAUSED -> READY round trip), where the elements keep their
 * resources but all stream state must still be reset and the new location
 * applies (avtensorsink's location may change in READY). */
GST_START_TEST (test_rerun_identical_output)
{
  const gchar *const needed[] = { "avtensorsink", NULL };
  /* under valgrind (a clip run takes half a minute there) three runs:
   * after NULL, after READY, and the last down to NULL */
  const guint runs = under_valgrind ()? 3 : 7;
  gchar *clip = scenario_clip ("test_rerun_identical_output");
  gchar *first_bytes = NULL;
  gchar *paths[7] = { NULL };
  gsize first_len = 0;
  GstState between = GST_STATE_NULL;
  GstElement *sink;
  ClipPipeline *p;

  if (clip == NULL)
    return;
  if (!avf_have_elements ("test_rerun_identical_output", needed)) {
    g_free (clip);
    return;
  }
  sink = gst_element_factory_make ("avtensorsink", "sink");
  p = clip_pipeline_new (clip, sink);

  for (guint run = 0; run < runs; run++) {
    gchar *name = g_strdup_printf ("run%u.npz", run);
    gchar *what = g_strdup_printf ("run %u (%s)", run, run == 0 ? "first" :
        between == GST_STATE_NULL ? "after NULL" : "after READY");
    gchar *bytes = NULL;
    gsize len = 0;

    paths[run] = avf_tmp_path (name);
    g_object_set (sink, "location", paths[run], NULL);
    g_mutex_lock (&p->w.lock);
    p->w.buffers = 0;
    g_mutex_unlock (&p->w.lock);
    clip_run_to_eos (p, what);
    fail_unless_equals_int (p->w.buffers, CLIP_FRAMES);

    /* the way to the next run */
    if (runs == 7)
      between = run < 3 || run == runs - 1 ? GST_STATE_NULL : GST_STATE_READY;
    else
      between = run == 1 ? GST_STATE_READY : GST_STATE_NULL;
    fail_unless_equals_int (set_state_bounded (p->pipeline, between, 30,
            what), GST_STATE_CHANGE_SUCCESS);
    if (run == 5) {
      fail_if (set_state_bounded (p->pipeline, GST_STATE_PAUSED, 30, what)
          == GST_STATE_CHANGE_FAILURE);
      fail_unless_equals_int (set_state_bounded (p->pipeline,
              GST_STATE_READY, 30, what), GST_STATE_CHANGE_SUCCESS);
    }

    /* the file is complete at EOS */
    if (!g_file_get_contents (paths[run], &bytes, &len, NULL))
      fail ("%s: no file %s; the previous run's %s now holds %"
          G_GINT64_FORMAT " frames (%d expected): the new location was not "
          "used and the stream was not reset", what, paths[run],
          run > 0 ? paths[run - 1] : "-",
          run > 0 ? npz_frames (paths[run - 1]) : -1, CLIP_FRAMES);
    fail_unless (len > 0, "%s: %s is empty", what, paths[run]);
    check_run_npz (paths[run], what);
    if (run == 0) {
      first_bytes = bytes;
      first_len = len;
    } else {
      fail_unless (len == first_len && memcmp (bytes, first_bytes, len) == 0,
          "%s wrote other bytes (%" G_GSIZE_FORMAT ") than run 0 (%"
          G_GSIZE_FORMAT "): %s vs %s", what, len, first_len, paths[run],
          paths[0]);
      g_free (bytes);
      /* and the previous file was left alone */
      fail_unless (npz_frames (paths[run - 1]) == CLIP_FRAMES, "%s changed "
          "%s of the run before", what, paths[run - 1]);
    }
    g_print ("test_rerun_identical_output: %s: %" G_GSIZE_FORMAT " bytes, "
        "identical\n", what, len);
    g_free (what);
    g_free (name);
  }
  for (guint run = 0; run < runs; run++) {
    g_unlink (paths[run]);
    g_free (paths[run]);
  }
  g_free (first_bytes);
  clip_pipeline_free (p);
  g_free (clip);
}

GST_END_TEST;

/* ---- 3. state cycles with data flowing ------------------------------------- */

static gpointer
log_critical (gpointer data)
{
  g_log ("GStreamer", G_LOG_LEVEL_CRITICAL, "an expected critical from a "
      "thread of the test");
  return NULL;
}

GST_START_TEST (test_state_cycles_with_data)
{
  const guint cycles = quick ()? 10 : 40;
  gchar *clip = scenario_clip ("test_state_cycles_with_data");
  GRand *rand = g_rand_new_with_seed (4040);
  guint threads_base = 0, threads_max = 0, threads_end;
  guint64 rss_base = 0, rss_end;
  ClipPipeline *p;
  gint64 t0 = g_get_monotonic_time ();

  if (clip == NULL)
    return;

  /* gst-check turns criticals into failures: its log handler (for the
   * default, GStreamer and GLib domains) fails the test unless a critical
   * is expected.  The handler is process-wide, so a critical in a
   * streaming thread fails this test too: check that one logged in another
   * thread reaches it. */
  _gst_check_expecting_log = TRUE;
  _gst_check_raised_critical = FALSE;
  g_thread_join (g_thread_new ("critical", log_critical, NULL));
  _gst_check_expecting_log = FALSE;
  fail_unless (_gst_check_raised_critical, "a critical in another thread "
      "does not reach gst-check's handler");

  p = clip_pipeline_new (clip, make_appsink (TRUE));
  for (guint cycle = 0; cycle < cycles; cycle++) {
    /* 1 to 4 outputs, then 0 to 60 ms more; half the cycles in real time,
     * half as fast as possible (those may reach the end of the clip) */
    const guint want = g_rand_int_range (rand, 1, 5);
    const gboolean sync = cycle % 2 == 0;
    gchar what[64];
    gboolean ok;
    gchar *state;

    g_snprintf (what, sizeof what, "cycle %u of %u", cycle + 1, cycles);
    g_object_set (p->sink, "sync", sync, NULL);
    g_mutex_lock (&p->w.lock);
    p->w.buffers = 0;
    g_mutex_unlock (&p->w.lock);
    fail_if (set_state_bounded (p->pipeline, GST_STATE_PLAYING, 30, what) ==
        GST_STATE_CHANGE_FAILURE, "%s: PLAYING failed", what);
    g_mutex_lock (&p->w.lock);
    ok = watch_wait_locked (&p->w, cond_buffers_at_least,
        GUINT_TO_POINTER (want), 30);
    state = watch_describe (&p->w);
    g_mutex_unlock (&p->w.lock);
    fail_unless (ok, "%s: fewer than %u outputs within %.0f s: %s", what,
        want, 30 * slowdown (), state);
    g_free (state);
    g_usleep (g_rand_int_range (rand, 0, 60) * 1000);
    fail_unless_equals_int (set_state_bounded (p->pipeline, GST_STATE_NULL,
            30, what), GST_STATE_CHANGE_SUCCESS);
    watch_check (&p->w, FALSE, what);

    /* threads and memory, in NULL, once everything is warm */
    if (cycle == MIN (4, cycles - 1)) {
      threads_base = count_threads ();
      rss_base = avf_rss_kib ();
    } else if (cycle > 4) {
      threads_max = MAX (threads_max, count_threads ());
    }
  }
  threads_end = count_threads ();
  rss_end = avf_rss_kib ();
  g_print ("test_state_cycles_with_data: %u cycles in %.1f s; threads %u "
      "after cycle 5, at most %u later, %u at the end; RSS %" G_GUINT64_FORMAT
      " KiB -> %" G_GUINT64_FORMAT " KiB\n", cycles,
      (g_get_monotonic_time () - t0) / 1e6, threads_base, threads_max,
      threads_end, rss_base, rss_end);
  /* a thread or two may come and go in GLib's pools; a thread per cycle
   * would be 35 more */
  fail_unless (threads_max <= threads_base + 6 && threads_end <=
      threads_base + 6, "threads grow: %u after cycle 5, up to %u later",
      threads_base, MAX (threads_max, threads_end));
  /* the sanitizers' allocators keep freed memory on purpose */
  if (!under_asan () && !under_valgrind ())
    fail_unless (rss_end < rss_base + 32 * 1024, "RSS grew from %"
        G_GUINT64_FORMAT " KiB to %" G_GUINT64_FORMAT " KiB over %u cycles",
        rss_base, rss_end, cycles - 5);
  clip_pipeline_free (p);
  g_rand_free (rand);
  g_free (clip);
}

GST_END_TEST;

/* ---- 4. a clip without audio ---------------------------------------------- */

/* Makes a video-only WebM clip of NOAUDIO_FRAMES frames; NULL (after
 * printing SKIPPED) when the encoder or muxer is missing. */
static gchar *
make_video_only_clip (const gchar * test)
{
  const gchar *const needed[] = { "videotestsrc", "vp8enc", "webmmux",
    "filesink", NULL
  };
  gchar *path, *desc;
  GstElement *pipeline;
  GError *err = NULL;
  GstBus *bus;

  if (!avf_have_elements (test, needed))
    return NULL;
  path = avf_tmp_path ("video-only.webm");
  if (g_file_test (path, G_FILE_TEST_IS_REGULAR))
    return path;                /* made by an earlier test */
  desc = g_strdup_printf ("videotestsrc num-buffers=%d pattern=ball ! "
      "video/x-raw,width=64,height=48,framerate=30/1 ! vp8enc deadline=1 ! "
      "webmmux ! filesink location=\"%s\"", NOAUDIO_FRAMES, path);
  pipeline = gst_parse_launch (desc, &err);
  fail_unless (pipeline != NULL, "%s: %s", desc, err ? err->message : "");
  bus = gst_element_get_bus (pipeline);
  fail_if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  /* the video-only clip is written */
  avf_wait_eos (bus, wait_us (30) * GST_USECOND, FALSE, path);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  g_free (desc);
  return path;
}

/* Runs a gst-launch style pipeline on the video-only clip and expects every
 * frame out with the audio masked, then EOS.  @audio_branch: the pipeline
 * has the audio branch users write for clips with sound (decodebin never
 * links it); otherwise avattention's audio_sink is not linked at all. */
static void
run_without_audio (const gchar * test, gboolean audio_branch)
{
  const gchar *const needed[] = { "decodebin", "matroskademux", "vp8dec",
    "videoconvert", "videoscale", "audioconvert", "audioresample", "appsink",
    "avspectrogram", "avpatchembed", "avattention", NULL
  };
  gchar *clip, *weights, *desc, *state;
  GstElement *pipeline, *sink, *att;
  GError *err = NULL;
  Watch w;
  gboolean ok;

  if (!avf_have_elements (test, needed))
    return;
  clip = make_video_only_clip (test);
  if (clip == NULL)
    return;
  weights = avf_fixture_path ("weights_small.safetensors");
  if (audio_branch)
    desc = g_strdup_printf ("filesrc location=\"%s\" ! decodebin name=d "
        "d. ! queue ! videoconvert ! videoscale ! "
        "video/x-raw,format=RGB,width=%d,height=%d ! "
        "avpatchembed weights=\"%s\" ! a.video_sink "
        "d. ! queue ! audioconvert ! audioresample ! "
        "avspectrogram n-mels=%d ! a.audio_sink "
        "avattention name=a weights=\"%s\" window=%" G_GUINT64_FORMAT " ! "
        "appsink name=sink sync=false", clip, SM_WIDTH, SM_HEIGHT, weights,
        SM_MELS, weights, (guint64) SM_WINDOW);
  else
    desc = g_strdup_printf ("filesrc location=\"%s\" ! decodebin ! queue ! "
        "videoconvert ! videoscale ! "
        "video/x-raw,format=RGB,width=%d,height=%d ! "
        "avpatchembed weights=\"%s\" ! a.video_sink "
        "avattention name=a weights=\"%s\" window=%" G_GUINT64_FORMAT " ! "
        "appsink name=sink sync=false", clip, SM_WIDTH, SM_HEIGHT, weights,
        weights, (guint64) SM_WINDOW);
  pipeline = gst_parse_launch (desc, &err);
  fail_unless (pipeline != NULL && err == NULL, "%s: %s", desc,
      err ? err->message : "");
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  fail_unless (sink != NULL);
  {
    GstAppSinkCallbacks cb = { 0 };
    cb.new_sample = drain_sample;
    gst_app_sink_set_callbacks (GST_APP_SINK (sink), &cb, NULL, NULL);
  }
  att = gst_bin_get_by_name (GST_BIN (pipeline), "a");
  fail_unless (att != NULL);
  watch_init (&w);
  w.frame_ns = CLIP_FRAME_NS;
  watch_attach (&w, pipeline, sink);
  watch_attach_input (&w, att);

  fail_if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE, "%s: the pipeline did not start", test);
  g_mutex_lock (&w.lock);
  ok = watch_wait_locked (&w, cond_bus_eos_above, GUINT_TO_POINTER (0), 20);
  state = watch_describe (&w);
  g_mutex_unlock (&w.lock);
  g_print ("%s: %s\n", test, state);
  fail_unless (ok, "%s: no EOS within %.0f s (does avattention wait for "
      "audio that never comes?): %s", test, 20 * slowdown (), state);
  /* a warning that the audio is missing is fine; an error is not */
  watch_check (&w, TRUE, test);
  g_mutex_lock (&w.lock);
  fail_unless_equals_int (w.buffers, NOAUDIO_FRAMES);
  fail_unless_equals_int (w.epoch_inputs, NOAUDIO_FRAMES);
  fail_unless (w.masked == w.buffers, "%s: %u of %u outputs have audio "
      "in their window", test, w.buffers - w.masked, w.buffers);
  fail_unless_equals_int (w.epoch_eos, 1);
  g_mutex_unlock (&w.lock);
  g_free (state);

  fail_unless_equals_int (set_state_bounded (pipeline, GST_STATE_NULL, 30,
          test), GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (sink);
  gst_object_unref (att);
  gst_object_unref (pipeline);
  watch_clear (&w);
  g_free (desc);
  g_free (weights);
  g_free (clip);
}

/* The pipeline users write for a clip with sound, given one without: the
 * audio branch after decodebin is never linked, so avattention's audio_sink
 * never gets a single event. */
GST_START_TEST (test_clip_without_audio)
{
  run_without_audio ("test_clip_without_audio", TRUE);
}

GST_END_TEST;

/* No audio branch at all: audio_sink is not linked. */
GST_START_TEST (test_audio_sink_unlinked)
{
  run_without_audio ("test_audio_sink_unlinked", FALSE);
}

GST_END_TEST;

/* ---- 5. rate and segment start ------------------------------------------- */

static gboolean
cond_seek_eos (Watch * w, gconstpointer data)
{
  const SeekWait *s = data;
  return w->flush_seqnum == s->seqnum && w->epoch_eos > 0;
}

/* A flushing seek at rate 2.0 to [1.0 s, 2.5 s): the outputs are exactly
 * the frames 30 to 74 (pts 1.000 s to 2.467 s), their running time is
 * (pts - 1 s) / 2 (the element's window end and the sink's segment agree),
 * the audio windows are filled (both pads map time the same way), and the
 * segment reaches its EOS. */
GST_START_TEST (test_seek_with_rate_and_segment_start)
{
  const GstClockTime start = 1000 * MS, stop = 2500 * MS;
  gchar *clip = scenario_clip ("test_seek_with_rate_and_segment_start");
  ClipPipeline *p;
  GstEvent *seek;
  SeekWait sw;
  gboolean ok;
  gchar *state;
  guint n, skip, with_audio = 0;
  gint64 t_play;

  if (clip == NULL)
    return;
  p = clip_pipeline_new (clip, make_appsink (TRUE));
  fail_if (set_state_bounded (p->pipeline, GST_STATE_PAUSED, 30, "preroll")
      == GST_STATE_CHANGE_FAILURE);
  fail_unless_equals_int (gst_element_get_state (p->pipeline, NULL, NULL,
          wait_us (30) * GST_USECOND), GST_STATE_CHANGE_SUCCESS);
  watch_check (&p->w, FALSE, "preroll");

  g_mutex_lock (&p->w.lock);
  p->w.record = TRUE;
  g_mutex_unlock (&p->w.lock);
  seek = gst_event_new_seek (2.0, GST_FORMAT_TIME,
      GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE, GST_SEEK_TYPE_SET, start,
      GST_SEEK_TYPE_SET, stop);
  sw.seqnum = gst_event_get_seqnum (seek);
  fail_unless (gst_element_send_event (p->pipeline, seek));
  fail_unless_equals_int (gst_element_get_state (p->pipeline, NULL, NULL,
          wait_us (30) * GST_USECOND), GST_STATE_CHANGE_SUCCESS);
  t_play = g_get_monotonic_time ();
  fail_if (set_state_bounded (p->pipeline, GST_STATE_PLAYING, 30, "play") ==
      GST_STATE_CHANGE_FAILURE);

  g_mutex_lock (&p->w.lock);
  ok = watch_wait_locked (&p->w, cond_seek_eos, &sw, 20);
  state = watch_describe (&p->w);
  fail_unless (ok, "no EOS of the rate 2.0 segment within %.0f s: %s",
      20 * slowdown (), state);
  g_print ("test_seek_with_rate_and_segment_start: %u outputs in %.2f s "
      "of playing (0.75 s expected at rate 2)\n", p->w.outputs->len,
      (g_get_monotonic_time () - t_play) / 1e6);
  fail_unless (p->w.segment.rate == 2.0, "the output segment has rate %g",
      p->w.segment.rate);
  fail_unless (p->w.segment.start == start, "the output segment starts at %"
      GST_TIME_FORMAT, GST_TIME_ARGS (p->w.segment.start));
  fail_unless (p->w.epoch_buffers == p->w.epoch_inputs, "%u outputs for %u "
      "video frames", p->w.epoch_buffers, p->w.epoch_inputs);
  /* frame 29, clipped by the decoder to start at 1.0 s, may come first */
  skip = p->w.epoch_repeats;
  n = p->w.outputs->len - skip;
  fail_unless_equals_int (n, 45);
  for (guint i = 0; i < n; i++) {
    const Output *o = &g_array_index (p->w.outputs, Output, i + skip);
    /* frame 30 + i, WebM timestamps rounded to the millisecond */
    const GstClockTime want_pts =
        gst_util_uint64_scale_round (30 + i, GST_SECOND / MS, 30) * MS;
    const GstClockTime want_rt = (want_pts - start) / 2;

    fail_unless (o->pts == want_pts, "output %u: pts %" GST_TIME_FORMAT
        ", expected %" GST_TIME_FORMAT, i, GST_TIME_ARGS (o->pts),
        GST_TIME_ARGS (want_pts));
    fail_unless (o->running_time == want_rt && o->window_end == want_rt,
        "output %u (pts %" GST_TIME_FORMAT "): running time %"
        GST_TIME_FORMAT " at the sink, %" GST_TIME_FORMAT " in the element, "
        "expected %" GST_TIME_FORMAT, i, GST_TIME_ARGS (o->pts),
        GST_TIME_ARGS (o->running_time), GST_TIME_ARGS (o->window_end),
        GST_TIME_ARGS (want_rt));
    with_audio += !o->audio_missing;
  }
  /* after the first frame the window holds the audio since the seek point
   * (speech all along): a mismatch of the two pads' running times would
   * leave it empty */
  fail_unless (with_audio >= n - 1, "only %u of %u outputs heard audio",
      with_audio, n);
  g_mutex_unlock (&p->w.lock);
  g_free (state);
  watch_check (&p->w, FALSE, "rate 2.0 segment");
  clip_pipeline_free (p);
  g_free (clip);
}

GST_END_TEST;

static Suite *
scenarios_suite (void)
{
  Suite *s = suite_create ("scenarios");
  TCase *tc = tcase_create ("scenarios");

  tcase_set_timeout (tc, 300);
  tcase_add_unchecked_fixture (tc, avf_tmp_setup, avf_tmp_teardown);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_fifty_flushing_seeks);
  tcase_add_test (tc, test_rerun_identical_output);
  tcase_add_test (tc, test_state_cycles_with_data);
  tcase_add_test (tc, test_clip_without_audio);
  tcase_add_test (tc, test_audio_sink_unlinked);
  tcase_add_test (tc, test_seek_with_rate_and_segment_start);
  return s;
}

AVF_CHECK_MAIN (scenarios);
