/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * where-is-the-sound: an application that reads GstAvAttentionMeta.
 *
 * It decodes a clip, runs avspectrogram, avpatchembed and avattention, and
 * reads the attention metadata from an appsink: for every video frame it
 * prints the patch of the picture that the audio attends to most, its
 * weight, whether the model takes a visible object to sound there
 * (gst_av_attention_meta_get_sound_visible: the patch's weight against the
 * weights' visible_threshold; the default weights are the shipped model
 * trained on the sounding-objects world, which knows only that world) and
 * the Euclidean norm of the fused feature vector (the buffer's data).  With
 * --npz it also writes the fused features and attention maps through
 * avtensorsink.  examples/where_is_the_sound.py does the same in Python and
 * prints the same lines.
 *
 *   where-is-the-sound [--weights FILE] [--npz OUT.npz] [--quiet] CLIP
 *
 * (options in any order, and GStreamer's own, --gst-debug=... and the
 * others, with them: GOptionContext and gst_init_get_option_group)
 *
 * Build against the installed library:
 *   cc where-is-the-sound.c $(pkg-config --cflags --libs gstavattention-1.0 \
 *       gstreamer-app-1.0) -lm -o where-is-the-sound
 */
#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <math.h>
#include <stdio.h>

#include "gstavattentionmeta.h"

typedef struct
{
  guint frames;
  guint with_audio;
  guint visible;                /* frames where a visible object sounds */
  gfloat threshold;
  guint quiet;
  guint *hist;                  /* (columns * rows) frames per strongest patch */
  guint columns, rows;
} Stats;

/* Euclidean norm of the buffer's float32 data (the fused vector [2E]),
 * summed in double precision in order. */
static gdouble
fused_norm (GstBuffer * buf)
{
  GstMapInfo map;
  gdouble s = 0.0;

  if (!gst_buffer_map (buf, &map, GST_MAP_READ))
    return NAN;
  for (gsize i = 0; i < map.size / sizeof (gfloat); i++) {
    gfloat x;
    memcpy (&x, map.data + i * sizeof (gfloat), sizeof x);
    s += (gdouble) x * x;
  }
  gst_buffer_unmap (buf, &map);
  return sqrt (s);
}

static GstFlowReturn
on_sample (GstAppSink * sink, gpointer user_data)
{
  Stats *st = user_data;
  GstSample *sample = gst_app_sink_pull_sample (sink);
  GstBuffer *buf;
  GstAvAttentionMeta *meta;
  guint col, row;
  gfloat weight, threshold;
  gboolean visible;
  gdouble norm;

  if (sample == NULL)
    return GST_FLOW_EOS;
  buf = gst_sample_get_buffer (sample);
  meta = gst_buffer_get_av_attention_meta (buf);
  norm = fused_norm (buf);
  st->frames++;
  if (meta == NULL) {
    if (!st->quiet)
      g_print ("%" GST_TIME_FORMAT "  (no attention metadata)  "
          "fused norm %.4f\n", GST_TIME_ARGS (GST_BUFFER_PTS (buf)), norm);
    gst_sample_unref (sample);
    return GST_FLOW_OK;
  }
  if (st->hist == NULL) {
    st->columns = meta->grid_columns;
    st->rows = meta->grid_rows;
    st->hist = g_new0 (guint, (gsize) st->columns * st->rows);
  }
  visible = gst_av_attention_meta_get_sound_visible (meta, NULL,
      &threshold);
  st->threshold = threshold;
  if (gst_av_attention_meta_get_strongest_patch (meta, meta->n_layers - 1,
          &col, &row, &weight)) {
    st->with_audio++;
    st->visible += visible;
    if (col < st->columns && row < st->rows)
      st->hist[row * st->columns + col]++;
    if (!st->quiet)
      g_print ("%" GST_TIME_FORMAT "  sound at patch (column %2u, row %2u) "
          "weight %.4f  audio slots %u/%u  %s  fused norm %.4f\n",
          GST_TIME_ARGS (GST_BUFFER_PTS (buf)), col, row, weight,
          meta->n_audio_present, meta->n_audio_slots, visible ?
          "a visible object sounds" : "no visible object sounds", norm);
  } else if (!st->quiet) {
    g_print ("%" GST_TIME_FORMAT "  no audio in the window%s  "
        "fused norm %.4f\n", GST_TIME_ARGS (GST_BUFFER_PTS (buf)),
        meta->audio_ended ? " (audio ended)" : "", norm);
  }
  gst_sample_unref (sample);
  return GST_FLOW_OK;
}

int
main (int argc, char **argv)
{
  gchar *weights = NULL, *npz = NULL;
  const gchar *clip;
  gboolean quiet = FALSE;
  Stats st = { 0 };
  GError *err = NULL;
  gchar *desc, *wprop;
  GstElement *pipeline, *sink;
  GstBus *bus;
  GstMessage *msg;
  GOptionContext *ctx;
  int ret = 0;
  const GOptionEntry entries[] = {
    {"weights", 0, 0, G_OPTION_ARG_FILENAME, &weights,
          "avfusion-v1 or avfusion-v2 weights file (default: the shipped "
        "model, avfusion-v2)", "FILE"},
    {"npz", 0, 0, G_OPTION_ARG_FILENAME, &npz,
        "also write the fused features and attention maps to this .npz",
        "OUT.npz"},
    {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet,
        "print the summary only", NULL},
    {NULL}
  };

  ctx = g_option_context_new ("CLIP - where in the picture is the sound");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &err) || argc != 2) {
    gchar *help = g_option_context_get_help (ctx, TRUE, NULL);

    g_printerr ("%s%s", err ? err->message : "", err ? "\n\n" : "");
    g_printerr ("%s", help);
    g_free (help);
    g_clear_error (&err);
    g_option_context_free (ctx);
    return 2;
  }
  g_option_context_free (ctx);
  clip = argv[1];
  st.quiet = quiet;
  if (!g_file_test (clip, G_FILE_TEST_IS_REGULAR)) {
    g_printerr ("%s: no such file: %s\n", argv[0], clip);
    g_free (weights);
    g_free (npz);
    return 1;
  }

  wprop = weights ? g_strdup_printf ("weights=\"%s\"", weights) :
      g_strdup ("");
  desc = g_strdup_printf ("filesrc name=src ! decodebin name=d "
      "d. ! queue ! audioconvert ! audioresample ! avspectrogram ! queue ! "
      "att.audio_sink "
      "d. ! queue ! videoconvert ! videoscale ! avpatchembed %s "
      "! queue ! att.video_sink "
      "avattention name=att %s ! tee name=t "
      "t. ! queue ! appsink name=sink sync=false "
      "%s%s%s", wprop, wprop, npz ? "t. ! queue ! avtensorsink location=\"" :
      "", npz ? npz : "", npz ? "\"" : "");
  pipeline = gst_parse_launch (desc, &err);
  g_free (desc);
  g_free (wprop);
  if (pipeline == NULL) {
    g_printerr ("cannot build the pipeline: %s\n", err->message);
    g_clear_error (&err);
    g_free (weights);
    g_free (npz);
    return 1;
  }
  {
    GstElement *src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
    g_object_set (src, "location", clip, NULL);
    gst_object_unref (src);
  }
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  {
    GstAppSinkCallbacks cb = { 0 };
    cb.new_sample = on_sample;
    gst_app_sink_set_callbacks (GST_APP_SINK (sink), &cb, &st, NULL);
  }

  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  bus = gst_element_get_bus (pipeline);
  msg = gst_bus_timed_pop_filtered (bus, GST_CLOCK_TIME_NONE,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    gchar *dbg = NULL;
    gst_message_parse_error (msg, &err, &dbg);
    g_printerr ("error from %s: %s\n", GST_OBJECT_NAME (msg->src),
        err->message);
    if (dbg)
      g_printerr ("  (%s)\n", dbg);
    g_clear_error (&err);
    g_free (dbg);
    ret = 1;
  }
  gst_message_unref (msg);
  gst_object_unref (bus);
  gst_element_set_state (pipeline, GST_STATE_NULL);

  if (ret == 0) {
    guint best = 0, best_n = 0;
    for (guint i = 0; st.hist && i < st.columns * st.rows; i++)
      if (st.hist[i] > best_n) {
        best_n = st.hist[i];
        best = i;
      }
    g_print ("%u video frames, %u with audio, %u with a visible object "
        "sounding (threshold %s%.3g)", st.frames, st.with_audio, st.visible,
        st.threshold > 0 ? "" : "unknown: ", (gdouble) st.threshold);
    if (best_n > 0)
      g_print ("; the sound was most often at patch (column %u, row %u) of "
          "the %ux%u grid (%u frames)", best % st.columns, best / st.columns,
          st.columns, st.rows, best_n);
    g_print ("\n");
    if (npz)
      g_print ("features and attention maps written to %s\n", npz);
    if (st.frames == 0)
      ret = 1;
  }
  g_free (st.hist);
  g_free (weights);
  g_free (npz);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  return ret;
}
