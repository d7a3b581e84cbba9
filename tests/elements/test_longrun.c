/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Running cost over a long stream (robustness items 12 and 21): one hour
 * of audio (100 spectrogram frames/s) and 30 fps video (108000 frames, the
 * small model) through avspectrogram, avpatchembed and avattention.  The
 * resident memory after warm-up stays flat, and with the audio branch free
 * to run 10 s ahead (a queue of 10 s before audio_sink, which fills) the
 * data held inside avattention stays bounded too.  The last output carries the exact
 * timestamp of frame 107999 (no drift).  AVF_LONGRUN_SECONDS shortens the
 * stream (the ASan and valgrind test setups do).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include "avf_check.h"
#include <stdio.h>

typedef struct
{
  guint frames;
  glong rss_warm, rss_end;
  GstClockTime last_pts;
  guint warm;                   /* frames of warm-up */
  GstElement *queue;            /* before audio_sink */
  guint queue_max;              /* its fullest, in buffers */
} Count;

static GstPadProbeReturn
on_output (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Count *c = user_data;
  c->frames++;
  if (c->frames == c->warm)
    c->rss_warm = avf_rss_kib ();
  if (c->frames % 500 == 0)
    c->rss_end = avf_rss_kib ();
  c->last_pts = GST_BUFFER_PTS (GST_PAD_PROBE_INFO_BUFFER (info));
  if (c->frames % 100 == 0) {
    guint level;

    g_object_get (c->queue, "current-level-buffers", &level, NULL);
    c->queue_max = MAX (c->queue_max, level);
  }
  return GST_PAD_PROBE_OK;
}

static guint
stream_seconds (void)
{
  const gchar *env = g_getenv ("AVF_LONGRUN_SECONDS");
  guint64 secs = env ? g_ascii_strtoull (env, NULL, 10) : 3600;

  return (guint) CLAMP (secs, 10, 36000);
}

GST_START_TEST (test_memory_flat_over_long_stream)
{
  const guint secs = stream_seconds ();
  const guint n_frames = 30 * secs;
  gchar *w = g_build_filename (g_getenv ("AVF_FIXTURE_DIR"),
      "weights_small.safetensors", NULL);
  gchar *desc = g_strdup_printf ("audiotestsrc wave=pink-noise "
      "samplesperbuffer=1600 num-buffers=%u "
      "! avspectrogram n-mels=40 ! queue name=aq max-size-buffers=0 max-size-bytes=0 "
      "max-size-time=10000000000 ! att.audio_sink "
      "videotestsrc pattern=ball num-buffers=%u "
      "! video/x-raw,width=32,height=24,framerate=30/1 ! videoconvert "
      "! avpatchembed weights=\"%s\" ! att.video_sink "
      "avattention name=att weights=\"%s\" window=370000000 "
      "! fakesink name=sink sync=false", 10 * secs, n_frames, w, w);
  GError *err = NULL;
  GstElement *p = gst_parse_launch (desc, &err);
  GstElement *sink;
  GstPad *pad;
  Count c = { 0 };

  fail_unless (p != NULL, "%s", err ? err->message : "");
  c.warm = MIN (500, n_frames / 5);
  sink = gst_bin_get_by_name (GST_BIN (p), "sink");
  c.queue = gst_bin_get_by_name (GST_BIN (p), "aq");
  pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, on_output, &c, NULL);
  gst_element_set_state (p, GST_STATE_PLAYING);
  avf_wait_eos (GST_ELEMENT_BUS (p), 1500 * GST_SECOND, TRUE, desc);
  gst_element_set_state (p, GST_STATE_NULL);

  c.rss_end = avf_rss_kib ();
  g_print ("%u s stream: %u outputs, RSS %ld KiB after the warm-up, "
      "%ld KiB at the end, audio queue up to %u buffers, last PTS %"
      GST_TIME_FORMAT "\n", secs, c.frames, c.rss_warm, c.rss_end,
      c.queue_max, GST_TIME_ARGS (c.last_pts));
  fail_unless_equals_int (c.frames, n_frames);
  fail_unless_equals_uint64 (c.last_pts, gst_util_uint64_scale (n_frames - 1,
          GST_SECOND, 30));
  /* flat: less than 4 MiB of growth after the warm-up (a leak of
   * one map block per frame would be tens of megabytes) */
#if defined(__SANITIZE_ADDRESS__)
  /* ASan keeps freed blocks in quarantine, so RSS grows by design; the
   * leak check of that build covers what this would catch */
  g_print ("built with AddressSanitizer: RSS growth not judged\n");
#else
  if (g_getenv ("AVF_UNDER_VALGRIND")) {
    /* the RSS is valgrind's; its leak check covers what this would catch */
    g_print ("under valgrind: RSS growth not judged\n");
  } else {
    fail_unless (c.rss_end - c.rss_warm < 4096,
        "RSS grew by %ld KiB over %u frames", c.rss_end - c.rss_warm,
        n_frames - c.warm);
  }
#endif
  gst_object_unref (c.queue);
  gst_object_unref (pad);
  gst_object_unref (sink);
  gst_object_unref (p);
  g_free (desc);
  g_free (w);
}

GST_END_TEST;

static Suite *
longrun_suite (void)
{
  Suite *s = suite_create ("longrun");
  TCase *tc = tcase_create ("memory");
  tcase_set_timeout (tc, 1600);
  tcase_add_test (tc, test_memory_flat_over_long_stream);
  suite_add_tcase (s, tc);
  return s;
}

AVF_CHECK_MAIN (longrun);
