/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Recorded clips end to end: every clip in the project's tests/clips/ and
 * in the shared media folder ($AVF_MEDIA_DIR, when it exists) is decoded
 * and run through avspectrogram, avpatchembed and avattention with their
 * default weights (the shipped trained model; nothing here depends on which
 * model it is).  For every clip: one fused output per decoded video
 * frame, strictly increasing timestamps, no warning or error, finite fused
 * vectors, and attention maps whose rows sum to 1 over the keys.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/app/gstappsink.h>
#include <gst/check/gstcheck.h>
#include "avf_check.h"
#include <math.h>

#include "gstavattentionmeta.h"

typedef struct
{
  GstElement *pipeline, *abranch, *vbranch, *att;
  gboolean have_audio, have_video;
  guint decoded_frames;         /* counted on the decoded video pad */
  guint outputs;
  GstClockTime last_pts;
  gboolean pts_monotonic;
  gboolean fused_finite;
  gdouble worst_row_error;
  guint frames_with_audio;
  gchar *problem;
} Run;

static GstPadProbeReturn
count_video (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Run *r = user_data;
  if (GST_PAD_PROBE_INFO_TYPE (info) & GST_PAD_PROBE_TYPE_BUFFER)
    g_atomic_int_inc (&r->decoded_frames);
  return GST_PAD_PROBE_OK;
}

static void
on_pad_added (GstElement * dec, GstPad * pad, gpointer user_data)
{
  Run *r = user_data;
  GstCaps *caps = gst_pad_get_current_caps (pad);
  const gchar *name;
  GstElement *branch = NULL;

  if (caps == NULL)
    caps = gst_pad_query_caps (pad, NULL);
  name = gst_structure_get_name (gst_caps_get_structure (caps, 0));
  if (g_str_has_prefix (name, "audio/") && !r->have_audio) {
    branch = r->abranch;
    r->have_audio = TRUE;
  } else if (g_str_has_prefix (name, "video/") && !r->have_video) {
    branch = r->vbranch;
    r->have_video = TRUE;
  }
  gst_caps_unref (caps);
  if (branch) {
    GstPad *sink = gst_element_get_static_pad (branch, "sink");
    fail_unless (gst_pad_link (pad, sink) == GST_PAD_LINK_OK);
    if (branch == r->vbranch)
      gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, count_video, r,
          NULL);
    gst_object_unref (sink);
  }
}

static void
on_no_more_pads (GstElement * dec, gpointer user_data)
{
  Run *r = user_data;
  /* a clip without audio: the audio input ends at once */
  if (!r->have_audio) {
    GstPad *p = gst_element_get_static_pad (r->att, "audio_sink");
    gst_pad_send_event (p, gst_event_new_stream_start ("no-audio"));
    gst_pad_send_event (p, gst_event_new_eos ());
    gst_object_unref (p);
  }
}

static void
check_maps (Run * r, GstAvAttentionMeta * meta)
{
  for (guint l = 0; l < meta->n_layers; l++) {
    for (guint m = 0; m < GST_AV_ATTENTION_N_MODULES; m++) {
      guint heads, tq, tk;
      const gfloat *w;
      if (gst_av_attention_meta_is_skipped (meta, l, m))
        continue;
      w = gst_av_attention_meta_get_weights (meta, l, m, &heads, &tq, &tk);
      for (guint q = 0; q < heads * tq; q++) {
        gdouble s = 0.0;
        for (guint k = 0; k < tk; k++)
          s += w[(gsize) q * tk + k];
        if (!(fabs (s - 1.0) <= r->worst_row_error))
          r->worst_row_error = isnan (s) ? INFINITY : fabs (s - 1.0);
      }
    }
  }
}

static GstFlowReturn
on_sample (GstAppSink * sink, gpointer user_data)
{
  Run *r = user_data;
  GstSample *s = gst_app_sink_pull_sample (sink);
  GstBuffer *buf = gst_sample_get_buffer (s);
  GstAvAttentionMeta *meta = gst_buffer_get_av_attention_meta (buf);
  GstMapInfo map;

  r->outputs++;
  if (GST_CLOCK_TIME_IS_VALID (r->last_pts)
      && !(GST_BUFFER_PTS (buf) > r->last_pts))
    r->pts_monotonic = FALSE;
  r->last_pts = GST_BUFFER_PTS (buf);
  if (gst_buffer_map (buf, &map, GST_MAP_READ)) {
    const gfloat *f = (const gfloat *) map.data;
    for (gsize i = 0; i < map.size / sizeof (gfloat); i++)
      if (!isfinite (f[i]))
        r->fused_finite = FALSE;
    gst_buffer_unmap (buf, &map);
  }
  if (meta == NULL) {
    if (r->problem == NULL)
      r->problem = g_strdup ("an output has no attention metadata");
  } else {
    check_maps (r, meta);
    if (!meta->audio_missing)
      r->frames_with_audio++;
  }
  gst_sample_unref (s);
  return GST_FLOW_OK;
}

static void
run_clip (const gchar * path)
{
  Run r = { 0 };
  GError *err = NULL;
  GstElement *src, *dec, *sink;
  GstBus *bus;
  gchar *problem;

  r.last_pts = GST_CLOCK_TIME_NONE;
  r.pts_monotonic = TRUE;
  r.fused_finite = TRUE;

  r.pipeline = gst_pipeline_new ("clip");
  src = gst_element_factory_make ("filesrc", NULL);
  dec = gst_element_factory_make ("decodebin", NULL);
  g_object_set (src, "location", path, NULL);
  r.abranch = gst_parse_bin_from_description ("queue ! audioconvert ! "
      "audioresample ! avspectrogram name=spec ! "
      "queue", TRUE, &err);
  fail_unless (r.abranch != NULL, "%s", err ? err->message : "");
  r.vbranch = gst_parse_bin_from_description ("queue ! videoconvert ! "
      "videoscale ! avpatchembed name=pe ! queue", TRUE, &err);
  fail_unless (r.vbranch != NULL, "%s", err ? err->message : "");
  r.att = gst_element_factory_make ("avattention", NULL);
  if (g_getenv ("AVF_UNDER_VALGRIND")) {
    /* the small model (40 bands, 8-pixel patches, 370 ms): the default one
     * takes about 3 s a frame under valgrind; the code paths are the same */
    gchar *w = g_build_filename (g_getenv ("AVF_FIXTURE_DIR"),
        "weights_small.safetensors", NULL);
    GstElement *spec = gst_bin_get_by_name (GST_BIN (r.abranch), "spec");
    GstElement *pe = gst_bin_get_by_name (GST_BIN (r.vbranch), "pe");

    g_object_set (spec, "n-mels", 40, NULL);
    g_object_set (pe, "weights", w, NULL);
    g_object_set (r.att, "weights", w, "window", (guint64) 370000000, NULL);
    gst_object_unref (spec);
    gst_object_unref (pe);
    g_free (w);
  }
  sink = gst_element_factory_make ("appsink", NULL);
  fail_unless (r.att && sink);
  g_object_set (sink, "sync", FALSE, "emit-signals", FALSE, NULL);
  gst_bin_add_many (GST_BIN (r.pipeline), src, dec, r.abranch, r.vbranch,
      r.att, sink, NULL);
  fail_unless (gst_element_link (src, dec));
  fail_unless (gst_element_link_pads (r.abranch, "src", r.att, "audio_sink"));
  fail_unless (gst_element_link_pads (r.vbranch, "src", r.att, "video_sink"));
  fail_unless (gst_element_link (r.att, sink));
  {
    GstAppSinkCallbacks cb = { 0 };
    cb.new_sample = on_sample;
    gst_app_sink_set_callbacks (GST_APP_SINK (sink), &cb, &r, NULL);
  }
  g_signal_connect (dec, "pad-added", G_CALLBACK (on_pad_added), &r);
  g_signal_connect (dec, "no-more-pads", G_CALLBACK (on_no_more_pads), &r);

  fail_unless (gst_element_set_state (r.pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  bus = gst_element_get_bus (r.pipeline);
  /* to end-of-stream or the first error; the first error or warning is
   * the problem, unless an output had one already */
  problem = avf_wait_end (bus, 120 * GST_SECOND * avf_slowdown (), TRUE);
  if (r.problem == NULL)
    r.problem = problem;
  else
    g_free (problem);
  gst_element_set_state (r.pipeline, GST_STATE_NULL);
  gst_object_unref (bus);

  g_print ("%s: %u decoded video frames, %u outputs (%u with audio), "
      "worst map row sum error %.2g%s%s\n", path, r.decoded_frames,
      r.outputs, r.frames_with_audio, r.worst_row_error,
      r.problem ? ", PROBLEM: " : "", r.problem ? r.problem : "");
  fail_unless (r.problem == NULL, "%s: %s", path, r.problem);
  fail_unless (r.have_video, "%s: no video stream", path);
  fail_unless (r.decoded_frames > 0, "%s: no video frame decoded", path);
  fail_unless_equals_int (r.outputs, r.decoded_frames);
  fail_unless (r.pts_monotonic, "%s: output timestamps not increasing",
      path);
  fail_unless (r.fused_finite, "%s: non-finite fused values", path);
  fail_unless (r.worst_row_error < 1e-4, "%s: map rows sum to 1 +- %g",
      path, r.worst_row_error);
  if (r.have_audio)
    fail_unless (r.frames_with_audio > r.outputs / 2,
        "%s: only %u of %u frames saw audio", path, r.frames_with_audio,
        r.outputs);
  gst_object_unref (r.pipeline);
  g_free (r.problem);
}

/* Every regular file of `dir` whose name ends in one of the extensions. */
/* g_ptr_array_sort passes pointers to the elements */
static gint
compare_paths (gconstpointer a, gconstpointer b)
{
  return g_strcmp0 (*(const gchar * const *) a, *(const gchar * const *) b);
}

static GPtrArray *
list_clips (const gchar * dir)
{
  GPtrArray *a = g_ptr_array_new_with_free_func (g_free);
  GDir *d = dir ? g_dir_open (dir, 0, NULL) : NULL;
  const gchar *name;
  while (d && (name = g_dir_read_name (d))) {
    if (g_str_has_suffix (name, ".webm") || g_str_has_suffix (name, ".ogg")
        || g_str_has_suffix (name, ".mp4") || g_str_has_suffix (name, ".mkv"))
      g_ptr_array_add (a, g_build_filename (dir, name, NULL));
  }
  if (d)
    g_dir_close (d);
  g_ptr_array_sort (a, compare_paths);
  return a;
}

GST_START_TEST (test_project_clips)
{
  GPtrArray *clips = list_clips (g_getenv ("AVF_CLIP_DIR"));
  fail_unless (clips->len >= 3, "the project's clips are missing (%s)",
      g_getenv ("AVF_CLIP_DIR"));
  for (guint i = 0; i < clips->len; i++) {
    const gchar *clip = g_ptr_array_index (clips, i);

    /* under valgrind only the 16 kHz mono clip: resampling 48 kHz stereo
     * takes over 20 minutes there; the full set runs in the normal, ASan
     * and leaks runs */
    if (g_getenv ("AVF_UNDER_VALGRIND")
        && !g_str_has_suffix (clip, "speech-vp8-vorbis.webm")) {
      g_print ("under valgrind: %s is left to the other runs\n", clip);
      continue;
    }
    run_clip (clip);
  }
  g_ptr_array_unref (clips);
}

GST_END_TEST;

GST_START_TEST (test_shared_media_clips)
{
  const gchar *dir = g_getenv ("AVF_MEDIA_DIR");
  GPtrArray *clips;
  if (g_getenv ("AVF_UNDER_VALGRIND")) {
    /* decoding the shared HD clips under valgrind takes most of an hour;
     * the normal and ASan runs cover them, the project clips run here */
    g_print ("under valgrind: the shared media clips are left to the "
        "normal and ASan runs\n");
    return;
  }
  if (dir == NULL || !g_file_test (dir, G_FILE_TEST_IS_DIR)) {
    g_print ("shared media folder %s not present: nothing to run\n",
        dir ? dir : "(unset)");
    return;
  }
  clips = list_clips (dir);
  fail_unless (clips->len > 0, "no clips in %s", dir);
  for (guint i = 0; i < clips->len; i++)
    run_clip (g_ptr_array_index (clips, i));
  g_ptr_array_unref (clips);
}

GST_END_TEST;

static Suite *
clips_suite (void)
{
  Suite *s = suite_create ("clips");
  TCase *tc = tcase_create ("clips");
  tcase_set_timeout (tc, 600);
  tcase_add_test (tc, test_project_clips);
  tcase_add_test (tc, test_shared_media_clips);
  suite_add_tcase (s, tc);
  return s;
}

AVF_CHECK_MAIN (clips);
