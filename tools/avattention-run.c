/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * avattention-run: runs the whole pipeline on a clip and writes
 *   OUT/annotated.webm  the video with the heat map of where the sound is
 *                       (avattnoverlay), with the original sound
 *   OUT/features.npz    fused features, timestamps and a summary of the
 *                       attention maps (--maps all: every map, --maps none:
 *                       no map; avtensorsink's maps property)
 * while showing a progress bar, then prints a summary: frames, duration,
 * throughput, where the sound was, in how many frames a visible object
 * sounded (gst_av_attention_meta_get_sound_visible, with the model's
 * threshold) and, when the clip has a truth file (CLIP without its
 * extension + ".truth.tsv", or --truth FILE; tools/truth.h), the pointing
 * accuracy of spec sounding-objects.md §3.
 *
 *   avattention-run [--weights FILE] [--truth FILE] [--out DIR]
 *       [--no-video-out] [--threads N] [--maps summary|all|none] CLIP
 *
 * --threads N caps the multi-threaded elements of the pipeline at N
 * threads: avattention's workers, the video decoder, the VP8 encoder; 0
 * (the default) lets each use every core.  videoconvert and videoscale stay
 * at one thread: their parallel runner waits busily, which on a machine
 * with other work made the annotated run three times slower.
 *
 * The annotated video is a preview: VP8 in real-time mode at its fastest
 * setting (deadline=1 cpu-used=16), at the clip's size.
 *
 * Exit status: 0 done, 1 pipeline error, 2 bad arguments (a malformed
 * truth file included), 3 the clip lacks an audio or a video track.
 */
#include <gst/gst.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gstavattentionmeta.h"
#include "truth.h"

typedef struct
{
  GstElement *pipeline, *abranch, *vbranch;
  gboolean have_audio, have_video, no_more_pads;
  guint frames, with_audio, visible;
  gfloat threshold;
  guint columns, rows;
  GArray *outputs;              /* AvfTruthOutput, with a truth file */
  guint *hist;
  gint exit_code;
  GMainLoop *loop;
  gint64 start_us;
  gint64 duration;              /* ns, from the last duration query */
  gboolean tty;
  gchar *clip;
  gint threads;                 /* --threads, 0 = every core */
} App;

/* Caps the threads of the elements that have such a property (decoders
 * added inside decodebin included); 0 = as many as there are cores. */
static void
set_threads (GstElement * e, gint threads)
{
  const gint n = threads > 0 ? threads : (gint) g_get_num_processors ();
  GObjectClass *k = G_OBJECT_GET_CLASS (e);
  GstElementFactory *f = gst_element_get_factory (e);
  const gchar *name = f ? GST_OBJECT_NAME (f) : "";

  if (g_object_class_find_property (k, "max-threads"))  /* avdec_* */
    g_object_set (e, "max-threads", threads, NULL);
  else if (g_str_equal (name, "vp8enc"))
    g_object_set (e, "threads", n, NULL);
  else if (g_str_equal (name, "avattention"))
    g_object_set (e, "threads", threads, NULL);
}

static void
on_element_added (GstBin * bin, GstBin * sub, GstElement * e,
    gpointer user_data)
{
  set_threads (e, ((App *) user_data)->threads);
}

static void
on_pad_added (GstElement * dec, GstPad * pad, gpointer user_data)
{
  App *app = user_data;
  GstCaps *caps = gst_pad_get_current_caps (pad);
  GstElement *branch = NULL;
  const gchar *name;

  if (caps == NULL)
    caps = gst_pad_query_caps (pad, NULL);
  name = gst_structure_get_name (gst_caps_get_structure (caps, 0));
  if (g_str_has_prefix (name, "audio/") && !app->have_audio) {
    app->have_audio = TRUE;
    branch = app->abranch;
  } else if (g_str_has_prefix (name, "video/") && !app->have_video) {
    app->have_video = TRUE;
    branch = app->vbranch;
  }
  gst_caps_unref (caps);
  if (branch) {
    GstPad *sink = gst_element_get_static_pad (branch, "sink");
    gst_pad_link (pad, sink);
    gst_object_unref (sink);
  }
}

static gboolean
report_missing_track (gpointer user_data)
{
  App *app = user_data;
  g_printerr ("\navattention-run: %s has no %s track; avattention needs "
      "both sound and pictures.\n", app->clip,
      !app->have_audio && !app->have_video ? "audio or video" :
      !app->have_audio ? "audio" : "video");
  app->exit_code = 3;
  g_main_loop_quit (app->loop);
  return G_SOURCE_REMOVE;
}

static void
on_no_more_pads (GstElement * dec, gpointer user_data)
{
  App *app = user_data;
  app->no_more_pads = TRUE;
  if (!app->have_audio || !app->have_video)
    g_idle_add (report_missing_track, app);
}

static GstPadProbeReturn
on_attention (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  App *app = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstAvAttentionMeta *meta = gst_buffer_get_av_attention_meta (buf);
  AvfTruthOutput o = { 0 };
  guint col, row;

  o.pts = GST_BUFFER_PTS (buf);
  o.duration = GST_BUFFER_DURATION (buf);
  app->frames++;
  if (meta && gst_av_attention_meta_get_sound_visible (meta, NULL,
          &app->threshold))
    app->visible++;
  if (meta && gst_av_attention_meta_get_strongest_patch (meta,
          meta->n_layers - 1, &col, &row, NULL)) {
    o.has_patch = TRUE;
    o.column = col;
    o.row = row;
    o.grid_columns = meta->grid_columns;
    o.grid_rows = meta->grid_rows;
    if (app->hist == NULL) {
      app->columns = meta->grid_columns;
      app->rows = meta->grid_rows;
      app->hist = g_new0 (guint, (gsize) app->columns * app->rows);
    }
    if (col < app->columns && row < app->rows)
      app->hist[row * app->columns + col]++;
    app->with_audio++;
  }
  if (app->outputs)
    g_array_append_val (app->outputs, o);
  return GST_PAD_PROBE_OK;
}

static gboolean
show_progress (gpointer user_data)
{
  App *app = user_data;
  gint64 pos = -1, dur = -1;
  gdouble elapsed = (g_get_monotonic_time () - app->start_us) / 1e6;
  gdouble fps = elapsed > 0 ? app->frames / elapsed : 0;
  gint pct = 0, bars;
  gchar bar[41];

  gst_element_query_position (app->pipeline, GST_FORMAT_TIME, &pos);
  gst_element_query_duration (app->pipeline, GST_FORMAT_TIME, &dur);
  if (dur > 0)
    app->duration = dur;
  if (pos >= 0 && dur > 0)
    pct = (gint) CLAMP (100.0 * pos / dur, 0, 100);
  bars = pct * 40 / 100;
  memset (bar, '#', bars);
  memset (bar + bars, '.', 40 - bars);
  bar[40] = '\0';
  if (app->tty)
    g_print ("\r[%s] %3d%%  %u frames  %.1f fps ", bar, pct, app->frames,
        fps);
  else
    g_print ("progress: %3d%%  %u frames  %.1f fps\n", pct, app->frames,
        fps);
  return G_SOURCE_CONTINUE;
}

static gboolean
on_message (GstBus * bus, GstMessage * msg, gpointer user_data)
{
  App *app = user_data;
  switch (GST_MESSAGE_TYPE (msg)) {
    case GST_MESSAGE_EOS:
      g_main_loop_quit (app->loop);
      break;
    case GST_MESSAGE_ERROR:{
      GError *err = NULL;
      gchar *dbg = NULL;
      gst_message_parse_error (msg, &err, &dbg);
      g_printerr ("\navattention-run: error from %s: %s\n",
          GST_OBJECT_NAME (msg->src), err->message);
      if (dbg)
        g_printerr ("  (%s)\n", dbg);
      g_clear_error (&err);
      g_free (dbg);
      if (app->exit_code == 0)
        app->exit_code = 1;
      g_main_loop_quit (app->loop);
      break;
    }
    case GST_MESSAGE_WARNING:{
      GError *err = NULL;
      gst_message_parse_warning (msg, &err, NULL);
      g_printerr ("\navattention-run: warning from %s: %s\n",
          GST_OBJECT_NAME (msg->src), err->message);
      g_clear_error (&err);
      break;
    }
    default:
      break;
  }
  return TRUE;
}

static void
usage (const char *argv0)
{
  g_printerr ("usage: %s CLIP [--weights FILE] [--truth FILE] [--out DIR] "
      "[--no-video-out] [--threads N]\n"
      "  (--help for what each option does, --help-gst for GStreamer's)\n",
      argv0);
}

static gint threads_arg;
static gchar *maps_arg;

/* --threads N: 0 (every core) to 64 */
static gboolean
parse_threads (const gchar * name, const gchar * value, gpointer data,
    GError ** error)
{
  gchar *end;
  gint64 n = g_ascii_strtoll (value, &end, 10);

  if (*value == '\0' || *end != '\0' || n < 0 || n > 64) {
    g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
        "--threads takes 0 (every core) to 64, not \"%s\"", value);
    return FALSE;
  }
  threads_arg = (gint) n;
  return TRUE;
}

int
main (int argc, char **argv)
{
  App app = { 0 };
  g_autofree gchar *weights = NULL, *out = NULL, *truth_arg = NULL;
  gchar *truth_path = NULL;
  AvfTruth *truth = NULL;
  gboolean video_out = TRUE;
  GError *err = NULL;
  gchar *wprop, *desc, *npz, *webm;
  GstElement *src, *dec, *att;
  GstPad *attsrc;
  GstBus *bus;
  guint timer;

  {
    const GOptionEntry entries[] = {
      {"weights", 0, 0, G_OPTION_ARG_FILENAME, &weights,
          "avfusion-v1 weights file (default: the shipped model)", "FILE"},
      {"truth", 0, 0, G_OPTION_ARG_FILENAME, &truth_arg,
            "the clip's truth file (default: CLIP without its extension + "
            ".truth.tsv, when it exists); the summary then gives the "
          "pointing accuracy", "FILE"},
      {"out", 0, 0, G_OPTION_ARG_FILENAME, &out,
          "output folder (default: avattention-out)", "DIR"},
      {"no-video-out", 0, G_OPTION_FLAG_REVERSE, G_OPTION_ARG_NONE,
            &video_out, "write features.npz only, no annotated.webm",
          NULL},
      {"maps", 0, 0, G_OPTION_ARG_STRING, &maps_arg,
            "what features.npz keeps of the attention maps: summary (the "
            "default: one weight per patch and the strongest patch, per "
            "frame), all (every map, about 0.7 MB a frame) or none",
          "summary|all|none"},
      {"threads", 0, 0, G_OPTION_ARG_CALLBACK, (gpointer) parse_threads,
            "threads per element (decoder, avattention, encoder); 0, the "
          "default, uses every core", "N"},
      {NULL}
    };
    GOptionContext *ctx = g_option_context_new ("CLIP");

    g_option_context_set_summary (ctx, "Writes DIR/annotated.webm (the heat "
        "map of where the sound is) and DIR/features.npz (fused features "
        "and attention maps) for CLIP.");
    g_option_context_add_main_entries (ctx, entries, NULL);
    g_option_context_add_group (ctx, gst_init_get_option_group ());
    if (!g_option_context_parse (ctx, &argc, &argv, &err)) {
      g_printerr ("%s: %s%s\n", argv[0],
          g_str_has_prefix (err->message, "Unknown option") ?
          "unexpected argument: " : "", err->message);
      usage (argv[0]);
      g_clear_error (&err);
      g_option_context_free (ctx);
      return 2;
    }
    g_option_context_free (ctx);
  }
  if (argc > 2) {
    g_printerr ("%s: unexpected argument \"%s\"\n", argv[0], argv[2]);
    usage (argv[0]);
    return 2;
  }
  if (argc < 2) {
    usage (argv[0]);
    return 2;
  }
  app.clip = g_strdup (argv[1]);
  app.threads = threads_arg;
  if (out == NULL)
    out = g_strdup ("avattention-out");
  if (!g_file_test (app.clip, G_FILE_TEST_IS_REGULAR)) {
    g_printerr ("%s: %s: no such file\n", argv[0], app.clip);
    return 2;
  }
  if (weights && !g_file_test (weights, G_FILE_TEST_IS_REGULAR)) {
    g_printerr ("%s: weights file %s: no such file\n", argv[0], weights);
    return 2;
  }
  if (truth_arg && !g_file_test (truth_arg, G_FILE_TEST_IS_REGULAR)) {
    g_printerr ("%s: truth file %s: no such file\n", argv[0], truth_arg);
    return 2;
  }
  if (truth_arg) {
    truth_path = g_strdup (truth_arg);
  } else {
    /* beside the clip: CLIP without its extension + .truth.tsv */
    gchar *base = g_path_get_basename (app.clip);
    gchar *dot = strrchr (base, '.');
    gchar *dir = g_path_get_dirname (app.clip);
    gchar *name;

    if (dot != NULL && dot != base)
      *dot = '\0';
    name = g_strconcat (base, ".truth.tsv", NULL);
    truth_path = g_build_filename (dir, name, NULL);
    if (!g_file_test (truth_path, G_FILE_TEST_IS_REGULAR))
      g_clear_pointer (&truth_path, g_free);
    g_free (name);
    g_free (dir);
    g_free (base);
  }
  if (truth_path) {
    truth = avf_truth_load (truth_path, &err);
    if (truth == NULL) {
      g_printerr ("%s: %s\n", argv[0], err->message);
      g_clear_error (&err);
      g_free (truth_path);
      return 2;
    }
    app.outputs = g_array_new (FALSE, FALSE, sizeof (AvfTruthOutput));
  }
  if (maps_arg == NULL)
    maps_arg = g_strdup ("summary");
  if (!g_str_equal (maps_arg, "summary") && !g_str_equal (maps_arg, "all")
      && !g_str_equal (maps_arg, "none")) {
    g_printerr ("%s: --maps takes summary, all or none, not \"%s\"\n",
        argv[0], maps_arg);
    return 2;
  }
  if (g_mkdir_with_parents (out, 0755) != 0) {
    g_printerr ("%s: cannot create the output folder %s\n", argv[0], out);
    return 2;
  }
  npz = g_build_filename (out, "features.npz", NULL);
  webm = g_build_filename (out, "annotated.webm", NULL);
  wprop = weights ? g_strdup_printf ("weights=\"%s\"", weights) :
      g_strdup ("");

  /* the decoded branches are bins with a ghost "sink" pad, linked when
   * decodebin exposes the tracks */
  desc = g_strdup_printf ("filesrc name=src ! decodebin name=dec "
      "bin.( name=abranch queue name=ain ! audioconvert ! tee name=at "
      "  at. ! queue ! audioresample ! avspectrogram ! queue "
      "  ! att.audio_sink %s ) "
      "bin.( name=vbranch queue name=vin ! videoconvert ! tee name=vt "
      "  vt. ! queue ! videoscale ! avpatchembed %s ! queue ! att.video_sink "
      "  %s ) "
      "avattention name=att %s ! tee name=ft "
      "ft. ! queue ! avtensorsink location=\"%s\" maps=%s "
      "%s",
      video_out ? "at. ! queue ! audioconvert ! audioresample "
      "! vorbisenc ! queue ! mux." : "",
      wprop,
      video_out ? "vt. ! queue ! ov.video_sink" : "",
      wprop, npz, maps_arg,
      video_out ? "ft. ! queue ! ov.attention_sink "
      "avattnoverlay name=ov ! videoconvert ! vp8enc deadline=1 cpu-used=16 "
      "! queue ! webmmux name=mux ! filesink name=webm" : "");
  app.pipeline = gst_parse_launch_full (desc, NULL,
      GST_PARSE_FLAG_FATAL_ERRORS, &err);
  g_free (desc);
  if (app.pipeline == NULL) {
    g_printerr ("%s: cannot build the pipeline: %s\n", argv[0],
        err->message);
    return 1;
  }
  src = gst_bin_get_by_name (GST_BIN (app.pipeline), "src");
  dec = gst_bin_get_by_name (GST_BIN (app.pipeline), "dec");
  att = gst_bin_get_by_name (GST_BIN (app.pipeline), "att");
  g_object_set (src, "location", app.clip, NULL);
  if (video_out) {
    GstElement *fs = gst_bin_get_by_name (GST_BIN (app.pipeline), "webm");
    g_object_set (fs, "location", webm, NULL);
    gst_object_unref (fs);
  }
  app.abranch = gst_bin_get_by_name (GST_BIN (app.pipeline), "abranch");
  app.vbranch = gst_bin_get_by_name (GST_BIN (app.pipeline), "vbranch");
  {
    /* ghost the first queue of each branch as the branch's sink pad */
    GstElement *q = gst_bin_get_by_name (GST_BIN (app.abranch), "ain");
    GstPad *p = gst_element_get_static_pad (q, "sink");
    gst_element_add_pad (app.abranch, gst_ghost_pad_new ("sink", p));
    gst_object_unref (p);
    gst_object_unref (q);
    q = gst_bin_get_by_name (GST_BIN (app.vbranch), "vin");
    p = gst_element_get_static_pad (q, "sink");
    gst_element_add_pad (app.vbranch, gst_ghost_pad_new ("sink", p));
    gst_object_unref (p);
    gst_object_unref (q);
  }
  {
    GstIterator *it = gst_bin_iterate_recurse (GST_BIN (app.pipeline));
    GValue v = G_VALUE_INIT;

    while (gst_iterator_next (it, &v) == GST_ITERATOR_OK) {
      set_threads (g_value_get_object (&v), app.threads);
      g_value_reset (&v);
    }
    g_value_unset (&v);
    gst_iterator_free (it);
  }
  g_signal_connect (app.pipeline, "deep-element-added",
      G_CALLBACK (on_element_added), &app);
  g_signal_connect (dec, "pad-added", G_CALLBACK (on_pad_added), &app);
  g_signal_connect (dec, "no-more-pads", G_CALLBACK (on_no_more_pads), &app);
  attsrc = gst_element_get_static_pad (att, "src");
  gst_pad_add_probe (attsrc, GST_PAD_PROBE_TYPE_BUFFER, on_attention, &app,
      NULL);
  gst_object_unref (attsrc);

  app.loop = g_main_loop_new (NULL, FALSE);
  app.tty = isatty (STDOUT_FILENO);
  bus = gst_element_get_bus (app.pipeline);
  gst_bus_add_watch (bus, on_message, &app);
  g_print ("avattention-run: %s\n", app.clip);
  app.start_us = g_get_monotonic_time ();
  gst_element_set_state (app.pipeline, GST_STATE_PLAYING);
  timer = g_timeout_add (app.tty ? 250 : 2000, show_progress, &app);
  g_main_loop_run (app.loop);
  g_source_remove (timer);
  if (app.exit_code == 0)
    show_progress (&app);         /* the final 100 % line, and the duration */
  gst_element_set_state (app.pipeline, GST_STATE_NULL);
  if (app.tty)
    g_print ("\n");

  if (app.exit_code == 0) {
    gdouble elapsed = (g_get_monotonic_time () - app.start_us) / 1e6;
    gint64 dur = app.duration;
    guint best = 0, best_n = 0;
    for (guint i = 0; app.hist && i < app.columns * app.rows; i++)
      if (app.hist[i] > best_n) {
        best_n = app.hist[i];
        best = i;
      }
    g_print ("frames:      %u (%u with sound in the window)\n", app.frames,
        app.with_audio);
    if (dur > 0)
      g_print ("duration:    %.2f s of media\n", dur / 1e9);
    g_print ("throughput:  %.1f frames/s (%.2f s wall clock)\n",
        elapsed > 0 ? app.frames / elapsed : 0.0, elapsed);
    if (best_n > 0)
      g_print ("the sound:   most often at patch (column %u, row %u) of the "
          "%ux%u grid, in %u frames\n", best % app.columns,
          best / app.columns, app.columns, app.rows, best_n);
    if (app.threshold > 0)
      g_print ("visible:     a visible object sounds in %u of %u frames "
          "(strongest patch at or above the model's visible_threshold "
          "%.3g)\n", app.visible, app.frames, (gdouble) app.threshold);
    else
      g_print ("visible:     %u of %u frames (the weights name no "
          "visible_threshold: every frame with sound in the window "
          "counts)\n", app.visible, app.frames);
    if (truth) {
      AvfPointing p = avf_truth_pointing (truth, app.outputs);

      if (p.frames > 0)
        g_print ("pointing accuracy: %.3f (%u of %u steady frames with a "
            "visible source; truth file %s)\n", (gdouble) p.hits / p.frames,
            p.hits, p.frames, truth_path);
      else
        g_print ("pointing accuracy: none (no steady frame with a visible "
            "source; truth file %s)\n", truth_path);
      if (p.unmatched > 0)
        g_print ("             %u steady frames with a source in the truth "
            "file had no output within half a frame\n", p.unmatched);
    }
    g_print ("written:     %s\n", npz);
    if (video_out)
      g_print ("written:     %s\n", webm);
    if (app.frames == 0)
      app.exit_code = 1;
  }
  gst_object_unref (bus);
  gst_object_unref (src);
  gst_object_unref (dec);
  gst_object_unref (att);
  gst_object_unref (app.abranch);
  gst_object_unref (app.vbranch);
  gst_object_unref (app.pipeline);
  g_main_loop_unref (app.loop);
  g_free (app.hist);
  g_free (app.clip);
  if (app.outputs)
    g_array_unref (app.outputs);
  avf_truth_free (truth);
  g_free (truth_path);
  g_free (npz);
  g_free (webm);
  g_free (wprop);
  g_free (maps_arg);
  return app.exit_code;
}
