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
#include <locale.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gstavattentionmeta.h"
#include "truth.h"

/* The command line, parsed and checked. */
typedef struct
{
  const gchar *prog;            /* argv[0], for messages */
  gchar *clip;
  gchar *weights;               /* --weights, NULL = the shipped model */
  gchar *truth;                 /* --truth, NULL = beside the clip if there */
  gchar *out;                   /* --out */
  gchar *maps;                  /* --maps: summary, all or none */
  gboolean video_out;           /* not --no-video-out */
  gint threads;                 /* --threads, 0 = every core */
} Args;

typedef struct
{
  const Args *args;
  gchar *npz, *webm;            /* the output files */
  AvfTruth *truth;              /* with a truth file */
  gchar *truth_path;
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
  set_threads (e, ((App *) user_data)->args->threads);
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
      "both sound and pictures.\n", app->args->clip,
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

/* The stream time of @pts through the segment of @pad (the truth file's
 * times are stream times), or @pts when it cannot be converted: the two
 * differ where a container starts the segment later, as mp4mux does for
 * H.264 with B-frames. */
static GstClockTime
stream_time (GstPad * pad, GstClockTime pts)
{
  GstEvent *ev = gst_pad_get_sticky_event (pad, GST_EVENT_SEGMENT, 0);
  GstClockTime t = GST_CLOCK_TIME_NONE;

  if (ev != NULL && GST_CLOCK_TIME_IS_VALID (pts)) {
    const GstSegment *segment;

    gst_event_parse_segment (ev, &segment);
    if (segment->format == GST_FORMAT_TIME)
      t = gst_segment_to_stream_time (segment, GST_FORMAT_TIME, pts);
  }
  if (ev != NULL)
    gst_event_unref (ev);
  return GST_CLOCK_TIME_IS_VALID (t) ? t : pts;
}

static GstPadProbeReturn
on_attention (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  App *app = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstAvAttentionMeta *meta = gst_buffer_get_av_attention_meta (buf);
  AvfTruthOutput o = { 0 };
  guint col, row;

  o.time = stream_time (pad, GST_BUFFER_PTS (buf));
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

/* --threads N: 0 (every core) to 64 */
static gboolean
parse_threads (const gchar * name, const gchar * value, gpointer data,
    GError ** error)
{
  Args *a = data;
  gchar *end;
  gint64 n = g_ascii_strtoll (value, &end, 10);

  if (*value == '\0' || *end != '\0' || n < 0 || n > 64) {
    g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
        "--threads takes 0 (every core) to 64, not \"%s\"", value);
    return FALSE;
  }
  a->threads = (gint) n;
  return TRUE;
}

/* Fills A from the command line; parsing GStreamer's options initialises
 * GStreamer.  Returns 0, or the exit status 2 after saying what is wrong. */
static gint
parse_command_line (Args * a, gint argc, gchar ** argv)
{
  const GOptionEntry entries[] = {
    {"weights", 0, 0, G_OPTION_ARG_FILENAME, &a->weights,
          "avfusion-v1 or avfusion-v2 weights file (default: the shipped "
        "model, avfusion-v2)", "FILE"},
    {"truth", 0, 0, G_OPTION_ARG_FILENAME, &a->truth,
          "the clip's truth file (default: CLIP without its extension + "
          ".truth.tsv, when it exists); the summary then gives the "
        "pointing accuracy", "FILE"},
    {"out", 0, 0, G_OPTION_ARG_FILENAME, &a->out,
        "output folder (default: avattention-out)", "DIR"},
    {"no-video-out", 0, G_OPTION_FLAG_REVERSE, G_OPTION_ARG_NONE,
          &a->video_out, "write features.npz only, no annotated.webm",
        NULL},
    {"maps", 0, 0, G_OPTION_ARG_STRING, &a->maps,
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
  /* a main group of our own, so that parse_threads gets A */
  GOptionGroup *main_group = g_option_group_new (NULL, NULL, NULL, a, NULL);
  GError *err = NULL;
  gboolean parsed;

  a->prog = argv[0];
  a->video_out = TRUE;
  g_option_context_set_summary (ctx, "Writes DIR/annotated.webm (the heat "
      "map of where the sound is) and DIR/features.npz (fused features "
      "and attention maps) for CLIP.");
  g_option_group_add_entries (main_group, entries);
  g_option_context_set_main_group (ctx, main_group);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  parsed = g_option_context_parse (ctx, &argc, &argv, &err);
  g_option_context_free (ctx);
  if (!parsed) {
    g_printerr ("%s: %s%s\n", a->prog,
        g_str_has_prefix (err->message, "Unknown option") ?
        "unexpected argument: " : "", err->message);
    usage (a->prog);
    g_clear_error (&err);
    return 2;
  }
  if (argc > 2) {
    g_printerr ("%s: unexpected argument \"%s\"\n", a->prog, argv[2]);
    usage (a->prog);
    return 2;
  }
  if (argc < 2) {
    usage (a->prog);
    return 2;
  }
  a->clip = g_strdup (argv[1]);
  if (a->out == NULL)
    a->out = g_strdup ("avattention-out");
  if (a->maps == NULL)
    a->maps = g_strdup ("summary");
  return 0;
}

/* The files named on the command line exist and --maps is one of its
 * values; otherwise says which is wrong. */
static gboolean
check_arguments (const Args * a)
{
  if (!g_file_test (a->clip, G_FILE_TEST_IS_REGULAR)) {
    g_printerr ("%s: %s: no such file\n", a->prog, a->clip);
    return FALSE;
  }
  if (a->weights && !g_file_test (a->weights, G_FILE_TEST_IS_REGULAR)) {
    g_printerr ("%s: weights file %s: no such file\n", a->prog, a->weights);
    return FALSE;
  }
  if (a->truth && !g_file_test (a->truth, G_FILE_TEST_IS_REGULAR)) {
    g_printerr ("%s: truth file %s: no such file\n", a->prog, a->truth);
    return FALSE;
  }
  if (!g_str_equal (a->maps, "summary") && !g_str_equal (a->maps, "all")
      && !g_str_equal (a->maps, "none")) {
    g_printerr ("%s: --maps takes summary, all or none, not \"%s\"\n",
        a->prog, a->maps);
    return FALSE;
  }
  return TRUE;
}

/* CLIP without its extension + .truth.tsv, when that file exists. */
static gchar *
truth_beside_clip (const gchar * clip)
{
  gchar *base = g_path_get_basename (clip);
  gchar *dot = strrchr (base, '.');
  gchar *dir = g_path_get_dirname (clip);
  gchar *name, *path;

  if (dot != NULL && dot != base)
    *dot = '\0';
  name = g_strconcat (base, ".truth.tsv", NULL);
  path = g_build_filename (dir, name, NULL);
  if (!g_file_test (path, G_FILE_TEST_IS_REGULAR))
    g_clear_pointer (&path, g_free);
  g_free (name);
  g_free (dir);
  g_free (base);
  return path;
}

/* Loads --truth, or the truth file beside the clip, if any.  FALSE after
 * naming the file and line of a malformed one. */
static gboolean
load_truth (App * app)
{
  const Args *a = app->args;
  GError *err = NULL;

  app->truth_path = a->truth ? g_strdup (a->truth) :
      truth_beside_clip (a->clip);
  if (app->truth_path == NULL)
    return TRUE;
  app->truth = avf_truth_load (app->truth_path, &err);
  if (app->truth == NULL) {
    g_printerr ("%s: %s\n", a->prog, err->message);
    g_clear_error (&err);
    return FALSE;
  }
  app->outputs = g_array_new (FALSE, FALSE, sizeof (AvfTruthOutput));
  return TRUE;
}

/* Creates the output folder and names the files in it. */
static gboolean
make_output_folder (App * app)
{
  const Args *a = app->args;

  if (g_mkdir_with_parents (a->out, 0755) != 0) {
    g_printerr ("%s: cannot create the output folder %s\n", a->prog, a->out);
    return FALSE;
  }
  app->npz = g_build_filename (a->out, "features.npz", NULL);
  app->webm = g_build_filename (a->out, "annotated.webm", NULL);
  return TRUE;
}

/* Sets a string property of the element called NAME in PIPELINE. */
static void
set_string (GstElement * pipeline, const gchar * name,
    const gchar * property, const gchar * value)
{
  GstElement *e = gst_bin_get_by_name (GST_BIN (pipeline), name);

  g_object_set (e, property, value, NULL);
  gst_object_unref (e);
}

/* The pipeline, its elements unlinked from decodebin yet.  The description
 * holds no text from the command line: the paths (which may hold quotes
 * and spaces) are set as properties after parsing.  The decoded branches
 * are bins, linked when decodebin exposes the tracks. */
static GstElement *
build_pipeline (const App * app, GError ** err)
{
  const Args *a = app->args;
  gchar *desc = g_strdup_printf ("filesrc name=src ! decodebin name=dec "
      "bin.( name=abranch queue name=ain ! audioconvert ! tee name=at "
      "  at. ! queue ! audioresample ! avspectrogram ! queue "
      "  ! att.audio_sink %s ) "
      "bin.( name=vbranch queue name=vin ! videoconvert ! tee name=vt "
      "  vt. ! queue ! videoscale ! avpatchembed name=embed ! queue "
      "  ! att.video_sink %s ) "
      "avattention name=att ! tee name=ft "
      "ft. ! queue ! avtensorsink name=npz "
      "%s",
      a->video_out ? "at. ! queue ! audioconvert ! audioresample "
      "! vorbisenc ! queue ! mux." : "",
      a->video_out ? "vt. ! queue ! ov.video_sink" : "",
      a->video_out ? "ft. ! queue ! ov.attention_sink "
      "avattnoverlay name=ov ! videoconvert ! vp8enc deadline=1 cpu-used=16 "
      "! queue ! webmmux name=mux ! filesink name=webm" : "");
  GstElement *pipeline = gst_parse_launch_full (desc, NULL,
      GST_PARSE_FLAG_FATAL_ERRORS, err);
  GstElement *npz;

  g_free (desc);
  if (pipeline == NULL)
    return NULL;
  set_string (pipeline, "src", "location", a->clip);
  if (a->weights) {
    set_string (pipeline, "embed", "weights", a->weights);
    set_string (pipeline, "att", "weights", a->weights);
  }
  set_string (pipeline, "npz", "location", app->npz);
  npz = gst_bin_get_by_name (GST_BIN (pipeline), "npz");
  gst_util_set_object_arg (G_OBJECT (npz), "maps", a->maps);
  gst_object_unref (npz);
  if (a->video_out)
    set_string (pipeline, "webm", "location", app->webm);
  return pipeline;
}

/* The first element of BIN, called FIRST, lends its sink pad to BIN. */
static GstElement *
ghost_sink (GstElement * pipeline, const gchar * bin, const gchar * first)
{
  GstElement *b = gst_bin_get_by_name (GST_BIN (pipeline), bin);
  GstElement *q = gst_bin_get_by_name (GST_BIN (b), first);
  GstPad *p = gst_element_get_static_pad (q, "sink");

  gst_element_add_pad (b, gst_ghost_pad_new ("sink", p));
  gst_object_unref (p);
  gst_object_unref (q);
  return b;
}

/* --threads on every element there is, and on those decodebin adds. */
static void
cap_threads (App * app)
{
  GstIterator *it = gst_bin_iterate_recurse (GST_BIN (app->pipeline));
  GValue v = G_VALUE_INIT;

  while (gst_iterator_next (it, &v) == GST_ITERATOR_OK) {
    set_threads (g_value_get_object (&v), app->args->threads);
    g_value_reset (&v);
  }
  g_value_unset (&v);
  gst_iterator_free (it);
  g_signal_connect (app->pipeline, "deep-element-added",
      G_CALLBACK (on_element_added), app);
}

/* Links the tracks as decodebin finds them and counts avattention's
 * output. */
static void
connect_pipeline (App * app)
{
  GstElement *dec = gst_bin_get_by_name (GST_BIN (app->pipeline), "dec");
  GstElement *att = gst_bin_get_by_name (GST_BIN (app->pipeline), "att");
  GstPad *attsrc = gst_element_get_static_pad (att, "src");

  app->abranch = ghost_sink (app->pipeline, "abranch", "ain");
  app->vbranch = ghost_sink (app->pipeline, "vbranch", "vin");
  cap_threads (app);
  g_signal_connect (dec, "pad-added", G_CALLBACK (on_pad_added), app);
  g_signal_connect (dec, "no-more-pads", G_CALLBACK (on_no_more_pads), app);
  gst_pad_add_probe (attsrc, GST_PAD_PROBE_TYPE_BUFFER, on_attention, app,
      NULL);
  gst_object_unref (attsrc);
  gst_object_unref (att);
  gst_object_unref (dec);
}

/* Plays the pipeline to its end (or an error, or a missing track) while
 * showing the progress, then stops it. */
static void
run_pipeline (App * app)
{
  GstBus *bus = gst_element_get_bus (app->pipeline);
  guint timer;

  app->loop = g_main_loop_new (NULL, FALSE);
  app->tty = isatty (STDOUT_FILENO);
  gst_bus_add_watch (bus, on_message, app);
  g_print ("avattention-run: %s\n", app->args->clip);
  app->start_us = g_get_monotonic_time ();
  gst_element_set_state (app->pipeline, GST_STATE_PLAYING);
  timer = g_timeout_add (app->tty ? 250 : 2000, show_progress, app);
  g_main_loop_run (app->loop);
  g_source_remove (timer);
  if (app->exit_code == 0)
    show_progress (app);        /* the final 100 % line, and the duration */
  gst_element_set_state (app->pipeline, GST_STATE_NULL);
  if (app->tty)
    g_print ("\n");
  gst_bus_remove_watch (bus);
  gst_object_unref (bus);
}

/* The pointing accuracy against the truth file. */
static void
print_pointing (const App * app)
{
  AvfPointing p = avf_truth_pointing (app->truth, app->outputs);

  avf_truth_print_pointing (app->truth, &p);
}

/* The summary of a run that ended well: frames, duration, throughput,
 * where the sound was, how often a visible object sounded, the pointing
 * accuracy and the files written. */
static void
print_summary (const App * app)
{
  gdouble elapsed = (g_get_monotonic_time () - app->start_us) / 1e6;
  gint64 dur = app->duration;
  guint best = 0, best_n = 0;

  for (guint i = 0; app->hist && i < app->columns * app->rows; i++)
    if (app->hist[i] > best_n) {
      best_n = app->hist[i];
      best = i;
    }
  g_print ("frames:      %u (%u with sound in the window)\n", app->frames,
      app->with_audio);
  if (dur > 0)
    g_print ("duration:    %.2f s of media\n", dur / 1e9);
  g_print ("throughput:  %.1f frames/s (%.2f s wall clock)\n",
      elapsed > 0 ? app->frames / elapsed : 0.0, elapsed);
  if (best_n > 0)
    g_print ("the sound:   most often at patch (column %u, row %u) of the "
        "%ux%u grid, in %u frames\n", best % app->columns,
        best / app->columns, app->columns, app->rows, best_n);
  if (app->threshold > 0)
    g_print ("visible:     a visible object sounds in %u of %u frames "
        "(strongest patch at or above the model's visible_threshold "
        "%.3g)\n", app->visible, app->frames, (gdouble) app->threshold);
  else
    g_print ("visible:     %u of %u frames (the weights name no "
        "visible_threshold: every frame with sound in the window "
        "counts)\n", app->visible, app->frames);
  if (app->truth)
    print_pointing (app);
  g_print ("written:     %s\n", app->npz);
  if (app->args->video_out)
    g_print ("written:     %s\n", app->webm);
}

static void
app_clear (App * app)
{
  if (app->abranch)
    gst_object_unref (app->abranch);
  if (app->vbranch)
    gst_object_unref (app->vbranch);
  if (app->pipeline)
    gst_object_unref (app->pipeline);
  if (app->loop)
    g_main_loop_unref (app->loop);
  g_free (app->hist);
  if (app->outputs)
    g_array_unref (app->outputs);
  avf_truth_free (app->truth);
  g_free (app->truth_path);
  g_free (app->npz);
  g_free (app->webm);
}

static void
args_clear (Args * a)
{
  g_free (a->clip);
  g_free (a->weights);
  g_free (a->truth);
  g_free (a->out);
  g_free (a->maps);
}

int
main (int argc, char **argv)
{
  Args args = { 0 };
  App app = { 0 };
  GError *err = NULL;
  gint status;

  /* the locale's character set, so that g_print shows a file name's
   * non-ASCII letters instead of '?'; numbers keep the C locale's format
   * (avattention-batch reads them) */
  setlocale (LC_CTYPE, "");
  status = parse_command_line (&args, argc, argv);

  app.args = &args;
  if (status == 0 && (!check_arguments (&args) || !load_truth (&app)
          || !make_output_folder (&app)))
    status = 2;
  if (status == 0) {
    app.pipeline = build_pipeline (&app, &err);
    if (app.pipeline == NULL) {
      g_printerr ("%s: cannot build the pipeline: %s\n", args.prog,
          err->message);
      g_clear_error (&err);
      status = 1;
    }
  }
  if (status == 0) {
    connect_pipeline (&app);
    run_pipeline (&app);
    if (app.exit_code == 0) {
      print_summary (&app);
      if (app.frames == 0)
        app.exit_code = 1;
    }
    status = app.exit_code;
  }
  app_clear (&app);
  args_clear (&args);
  return status;
}
