/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * avattention's worker threads (threads) and frame interval (interval):
 * real pipelines on the project's clips, decoded, through avspectrogram and
 * avpatchembed, into an appsink that records every output (timestamps,
 * fused vector, meta fields and maps).  The records of threads=1 and of
 * more threads must be the same bytes: on whole clips to EOS, after a
 * flushing seek made while the workers are busy, after a restart from
 * READY, and with interval > 1.  A live pipeline reports the latency the
 * threads add.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/app/gstappsink.h>
#include <math.h>

#include "avf_check.h"
#include "gstavattentionmeta.h"

#define MS (GST_MSECOND)

typedef struct
{
  GMutex lock;
  GByteArray *rec;              /* the outputs since the last restart */
  guint n;                      /* outputs in rec */
  guint seen;                   /* outputs since the pipeline started */
  guint n_reused;
  gsize fused_bytes;            /* of one output */
} Rec;

static void
rec_reset (Rec * r)
{
  g_mutex_lock (&r->lock);
  g_byte_array_set_size (r->rec, 0);
  r->n = r->n_reused = 0;
  g_mutex_unlock (&r->lock);
}

/* One output as bytes: PTS, duration, the fused vector, and the meta's
 * fields, mask and maps (a frame without meta records a zero byte). */
static void
record (Rec * r, GstBuffer * buf)
{
  GstAvAttentionMeta *meta = gst_buffer_get_av_attention_meta (buf);
  guint64 ts[2] = { GST_BUFFER_PTS (buf), GST_BUFFER_DURATION (buf) };
  GstMapInfo map;

  g_mutex_lock (&r->lock);
  g_byte_array_append (r->rec, (const guint8 *) ts, sizeof ts);
  fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
  g_byte_array_append (r->rec, map.data, (guint) map.size);
  r->fused_bytes = map.size;
  gst_buffer_unmap (buf, &map);
  if (meta == NULL) {
    guint8 none = 0;
    g_byte_array_append (r->rec, &none, 1);
  } else {
    /* not audio_ended: whether the audio's EOS had arrived when a frame
     * near the end was fused depends on timing, with any number of
     * threads */
    guint64 f[5] = { meta->window_start, meta->window_end,
      meta->n_audio_present, meta->audio_missing, meta->reused
    };
    g_byte_array_append (r->rec, (const guint8 *) f, sizeof f);
    g_byte_array_append (r->rec,
        gst_av_attention_meta_get_audio_mask (meta), meta->n_audio_slots);
    for (guint l = 0; l < meta->n_layers; l++)
      for (guint m = 0; m < GST_AV_ATTENTION_N_MODULES; m++) {
        guint h, q, k;
        const gfloat *w = gst_av_attention_meta_get_weights (meta, l,
            (GstAvAttentionModule) m, &h, &q, &k);
        guint8 skipped = gst_av_attention_meta_is_skipped (meta, l,
            (GstAvAttentionModule) m);

        g_byte_array_append (r->rec, &skipped, 1);
        g_byte_array_append (r->rec, (const guint8 *) w,
            h * q * k * sizeof (gfloat));
      }
    r->n_reused += meta->reused;
  }
  r->n++;
  r->seen++;
  g_mutex_unlock (&r->lock);
}

static GstFlowReturn
on_sample (GstAppSink * sink, gpointer user_data)
{
  GstSample *s = gst_app_sink_pull_sample (sink);

  if (s == NULL)
    return GST_FLOW_ERROR;
  record (user_data, gst_sample_get_buffer (s));
  gst_sample_unref (s);
  return GST_FLOW_OK;
}

/* A flush empties the record: what counts is what follows the last one. */
static GstPadProbeReturn
on_flush (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  if (GST_EVENT_TYPE (GST_PAD_PROBE_INFO_EVENT (info)) ==
      GST_EVENT_FLUSH_STOP)
    rec_reset (user_data);
  return GST_PAD_PROBE_OK;
}

/* clip: a file of tests/clips, or NULL for test sources (static pads, so
 * that the pipeline can restart from READY; parse-launch links decodebin
 * only once) */
static GstElement *
make_pipeline (const gchar * clip, gint threads, guint interval, Rec * r)
{
  gchar *path = clip ? avf_clip_path (clip) : NULL;
  gchar *desc = clip ? g_strdup_printf ("filesrc location=\"%s\" ! "
      "decodebin name=d "
      "d. ! queue ! audioconvert ! audioresample ! avspectrogram ! queue ! "
      "att.audio_sink "
      "d. ! queue ! videoconvert ! videoscale ! avpatchembed ! queue ! "
      "att.video_sink "
      "avattention name=att threads=%d interval=%u ! "
      "appsink name=sink sync=false", path, threads, interval) :
      g_strdup_printf ("videotestsrc pattern=ball num-buffers=%u ! "
      "video/x-raw,width=320,height=240,framerate=30/1 ! videoconvert ! "
      "videoscale ! avpatchembed ! queue ! att.video_sink "
      "audiotestsrc freq=523 num-buffers=%u samplesperbuffer=1600 ! "
      "avspectrogram ! queue ! att.audio_sink "
      "avattention name=att threads=%d interval=%u ! "
      "appsink name=sink sync=false", avf_slowdown () > 1 ? 6 : 90,
      avf_slowdown () > 1 ? 2 : 30, threads, interval);
  GError *err = NULL;
  GstElement *p = gst_parse_launch (desc, &err);
  GstElement *sink;
  GstPad *pad;
  GstAppSinkCallbacks cb = { 0 };

  fail_unless (p != NULL, "%s: %s", desc, err ? err->message : "?");
  sink = gst_bin_get_by_name (GST_BIN (p), "sink");
  cb.new_sample = on_sample;
  gst_app_sink_set_callbacks (GST_APP_SINK (sink), &cb, r, NULL);
  pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_EVENT_FLUSH, on_flush, r, NULL);
  gst_object_unref (pad);
  gst_object_unref (sink);
  g_free (desc);
  g_free (path);
  return p;
}

static void
set_state_sync (GstElement * p, GstState state)
{
  fail_unless (gst_element_set_state (p, state) != GST_STATE_CHANGE_FAILURE);
  fail_unless (gst_element_get_state (p, NULL, NULL,
          60 * GST_SECOND * avf_slowdown ()) == GST_STATE_CHANGE_SUCCESS);
}

/* The clip from start to stop (a flushing, accurate segment seek in
 * PAUSED), to EOS. */
static void
play_span (GstElement * p, GstClockTime start, GstClockTime stop)
{
  set_state_sync (p, GST_STATE_PAUSED);
  fail_unless (gst_element_seek (p, 1.0, GST_FORMAT_TIME,
          GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE, GST_SEEK_TYPE_SET,
          (gint64) start, GST_SEEK_TYPE_SET, (gint64) stop));
  fail_unless (gst_element_get_state (p, NULL, NULL,
          60 * GST_SECOND * avf_slowdown ()) == GST_STATE_CHANGE_SUCCESS);
  set_state_sync (p, GST_STATE_PLAYING);
  avf_wait_eos (GST_ELEMENT_BUS (p), 120 * GST_SECOND * avf_slowdown (),
      FALSE, "the pipeline");
}

static Rec *
rec_new (void)
{
  Rec *r = g_new0 (Rec, 1);
  g_mutex_init (&r->lock);
  r->rec = g_byte_array_new ();
  return r;
}

static void
rec_free (Rec * r)
{
  g_byte_array_unref (r->rec);
  g_mutex_clear (&r->lock);
  g_free (r);
}

static void
assert_same (const Rec * a, const Rec * b, const gchar * what)
{
  fail_unless (a->n > 0, "%s: no output", what);
  fail_unless_equals_int (b->n, a->n);
  fail_unless_equals_int (b->rec->len, a->rec->len);
  fail_unless (memcmp (a->rec->data, b->rec->data, a->rec->len) == 0,
      "%s: the outputs differ from those of threads=1", what);
}

/* Under valgrind (AVF_UNDER_VALGRIND) the suite is cut to what runs in
 * a few minutes: test sources instead of the clips, no seek while playing
 * and no live pipeline (those run under ASan and the leaks tracer). */
static gboolean
quick (void)
{
  return avf_slowdown () > 1;
}

/* seconds of each clip the runs use (shorter under valgrind) */
static GstClockTime
span (void)
{
  return avf_slowdown () > 1 ? 1200 * MS : 4 * GST_SECOND;
}

/* The speech clips (2 to 3 s) play whole; the 16 s demo scene from 0.5 s
 * for span().  (An accurate seek into the AAC of the MP4 clip does not
 * start at the same sample twice, whatever avattention does.) */
static Rec *
run_clip_span (const gchar * clip, gint threads, guint interval)
{
  Rec *r = rec_new ();
  GstElement *p = make_pipeline (clip, threads, interval, r);

  if (clip == NULL || g_str_has_prefix (clip, "speech-")) {
    set_state_sync (p, GST_STATE_PLAYING);
    avf_wait_eos (GST_ELEMENT_BUS (p), 120 * GST_SECOND * avf_slowdown (),
      FALSE, "the pipeline");
  } else {
    play_span (p, 500 * MS, 500 * MS + span ());
  }
  set_state_sync (p, GST_STATE_NULL);
  gst_object_unref (p);
  return r;
}

GST_START_TEST (test_threads_same_bytes_on_clips)
{
  const gchar *clips[] = { "speech-vp8-vorbis.webm",
    "sounding-objects-demo.webm", "speech-vp9-aac.mp4", "speech-theora-opus.ogg"
  };
  const gint threads[] = { 3, 2 };

  /* under valgrind the restart and interval cases compare threads on test
   * sources; decoding the clips there took minutes */
  if (quick ())
    return;
  for (guint c = 0; c < G_N_ELEMENTS (clips); c++) {
    Rec *one = run_clip_span (clips[c], 1, 1);

    /* one output per video frame of the span (at least 20 fps) */
    fail_unless (one->n >= 20, "%s: %u outputs", clips[c],
        one->n);
    for (guint i = 0; i < G_N_ELEMENTS (threads); i++) {
      Rec *many = run_clip_span (clips[c], threads[i], 1);
      gchar *what = g_strdup_printf ("%s, threads=%d", clips[c], threads[i]);

      assert_same (one, many, what);
      g_free (what);
      rec_free (many);
    }
    rec_free (one);
  }
}

GST_END_TEST;

/* A flushing seek while the workers are busy: what follows the seek is the
 * same as with one thread. */
static Rec *
run_seek_while_playing (gint threads)
{
  Rec *r = rec_new ();
  GstElement *p = make_pipeline ("sounding-objects-demo.webm", threads, 1, r);
  gint64 deadline;

  set_state_sync (p, GST_STATE_PLAYING);
  deadline = g_get_monotonic_time () + 60 * G_USEC_PER_SEC * avf_slowdown ();
  for (;;) {
    guint seen;
    g_mutex_lock (&r->lock);
    seen = r->seen;
    g_mutex_unlock (&r->lock);
    if (seen >= 10)
      break;
    fail_unless (g_get_monotonic_time () < deadline, "no output");
    g_usleep (1000);
  }
  fail_unless (gst_element_seek (p, 1.0, GST_FORMAT_TIME,
          GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE, GST_SEEK_TYPE_SET,
          (gint64) (6 * GST_SECOND), GST_SEEK_TYPE_SET,
          (gint64) (6 * GST_SECOND + span ())));
  avf_wait_eos (GST_ELEMENT_BUS (p), 120 * GST_SECOND * avf_slowdown (),
      FALSE, "the pipeline");
  set_state_sync (p, GST_STATE_NULL);
  gst_object_unref (p);
  return r;
}

GST_START_TEST (test_threads_same_bytes_after_seek)
{
  if (quick ())
    return;

  Rec *one = run_seek_while_playing (1);
  Rec *many = run_seek_while_playing (3);
  GstClockTime first;

  /* the record starts at the seek target */
  fail_unless (one->rec->len >= 8);
  memcpy (&first, one->rec->data, sizeof first);
  fail_unless (first >= 6 * GST_SECOND && first < 6 * GST_SECOND + 100 * MS,
      "first output after the seek at %" GST_TIME_FORMAT,
      GST_TIME_ARGS (first));
  assert_same (one, many, "after a flushing seek");
  rec_free (one);
  rec_free (many);
}

GST_END_TEST;

/* Stopped to READY in the middle (with frames being fused), then played
 * again: the second run is the same as with one thread; and a pipeline
 * torn down to NULL while the workers are busy ends cleanly. */
static Rec *
run_restart (gint threads)
{
  Rec *r = rec_new ();
  GstElement *p = make_pipeline (NULL, threads, 1, r);

  set_state_sync (p, GST_STATE_PLAYING);
  while (TRUE) {
    guint seen;
    g_mutex_lock (&r->lock);
    seen = r->seen;
    g_mutex_unlock (&r->lock);
    /* of 90 frames, or of 6 under valgrind (a frame takes seconds there) */
    if (seen >= (quick ()? 2 : 5))
      break;
    g_usleep (1000);
  }
  set_state_sync (p, GST_STATE_READY);
  rec_reset (r);
  set_state_sync (p, GST_STATE_PLAYING);
  avf_wait_eos (GST_ELEMENT_BUS (p), 120 * GST_SECOND * avf_slowdown (),
      FALSE, "the pipeline");
  set_state_sync (p, GST_STATE_NULL);
  gst_object_unref (p);
  return r;
}

GST_START_TEST (test_threads_same_bytes_after_restart)
{
  Rec *one = run_restart (1);
  Rec *many = run_restart (3);
  Rec *r = rec_new ();
  GstElement *p = make_pipeline (quick ()? NULL : "sounding-objects-demo.webm",
      3, 1, r);

  assert_same (one, many, "after READY and PLAYING again");
  rec_free (one);
  rec_free (many);

  /* down to NULL in the middle of the stream */
  set_state_sync (p, GST_STATE_PLAYING);
  g_usleep (200 * 1000);
  set_state_sync (p, GST_STATE_NULL);
  gst_object_unref (p);
  rec_free (r);
}

GST_END_TEST;

/* interval=3: frames 0, 3, 6, ... are fused as with interval=1; the others
 * repeat the last fused vector and maps, marked reused; threads do not
 * change a byte. */
GST_START_TEST (test_interval)
{
  const gchar *clip = quick ()? NULL : "sounding-objects-demo.webm";
  Rec *every = run_clip_span (clip, 1, 1);
  /* under valgrind the threaded run stands for both */
  Rec *many = run_clip_span (clip, 3, 3);
  Rec *one = quick ()? many : run_clip_span (clip, 1, 3);
  const gsize rec_size = every->rec->len / every->n;
  const gsize ts_size = 2 * sizeof (guint64);

  assert_same (one, many, "interval=3");
  fail_unless_equals_int (one->n, every->n);
  fail_unless_equals_int (one->rec->len, every->rec->len);
  fail_unless_equals_int (one->n_reused, every->n - (every->n + 2) / 3);
  fail_unless_equals_int (every->n_reused, 0);
  /* record: timestamps, fused vector, five meta fields (the fifth is
   * reused), mask and maps */
  const gsize fields = ts_size + one->fused_bytes;
  const gsize reused_at = fields + 4 * sizeof (guint64);
  for (guint i = 0; i < one->n; i++) {
    const guint8 *a = one->rec->data + i * rec_size;
    const guint8 *own = every->rec->data + i * rec_size;
    const guint8 *src = every->rec->data + (i - i % 3) * rec_size;
    guint64 reused;

    /* the timestamps are the frame's own */
    fail_unless (memcmp (a, own, ts_size) == 0, "frame %u: timestamps", i);
    /* the fused vector, the window and the maps are those of the last
     * fused frame (itself on frames 0, 3, ...), as interval=1 fused it */
    fail_unless (memcmp (a + ts_size, src + ts_size,
            reused_at - ts_size) == 0, "frame %u: not the result of frame %u",
        i, i - i % 3);
    fail_unless (memcmp (a + reused_at + 8, src + reused_at + 8,
            rec_size - reused_at - 8) == 0, "frame %u: maps", i);
    memcpy (&reused, a + reused_at, sizeof reused);
    fail_unless_equals_uint64 (reused, i % 3 != 0);
  }
  rec_free (every);
  if (one != many)
    rec_free (one);
  rec_free (many);
}

GST_END_TEST;

/* A live pipeline: threads=3 reports two frames more latency than 1. */
static GstClockTime
live_latency (gint threads)
{
  gchar *desc = g_strdup_printf ("videotestsrc is-live=true ! "
      "video/x-raw,width=224,height=224,framerate=25/1 ! avpatchembed ! "
      "queue ! att.video_sink audiotestsrc is-live=true ! "
      "avspectrogram ! queue ! att.audio_sink "
      "avattention name=att threads=%d ! fakesink name=sink sync=true",
      threads);
  GstElement *p = gst_parse_launch (desc, NULL);
  GstQuery *q = gst_query_new_latency ();
  GstClockTime min = GST_CLOCK_TIME_NONE, max;
  gboolean live = FALSE;
  GstBus *bus = gst_element_get_bus (p);

  fail_unless (p != NULL);
  gst_element_set_state (p, GST_STATE_PLAYING);
  /* the latency is known once the first frames went through */
  avf_wait_message (bus, GST_MESSAGE_ASYNC_DONE,
      30 * GST_SECOND * avf_slowdown (), FALSE, desc);
  g_usleep (300 * 1000);
  fail_unless (gst_element_query (p, q));
  gst_query_parse_latency (q, &live, &min, &max);
  fail_unless (live);
  gst_query_unref (q);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (p);
  g_free (desc);
  return min;
}

GST_START_TEST (test_threads_live_latency)
{
  GstClockTime one, three;

  if (quick ())
    return;
  one = live_latency (1);
  three = live_latency (3);

  fail_unless (GST_CLOCK_TIME_IS_VALID (one));
  fail_unless_equals_uint64 (three - one, 2 * GST_SECOND / 25);
}

GST_END_TEST;

static Suite *
threads_suite (void)
{
  Suite *s = suite_create ("threads");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 600);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_threads_same_bytes_on_clips);
  tcase_add_test (tc, test_threads_same_bytes_after_seek);
  tcase_add_test (tc, test_threads_same_bytes_after_restart);
  tcase_add_test (tc, test_interval);
  tcase_add_test (tc, test_threads_live_latency);
  return s;
}

AVF_CHECK_MAIN (threads);
