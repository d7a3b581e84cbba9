/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Which weights avpatchembed and avattention use (interface.md, spec §4):
 *
 * - without "weights" they use the shipped trained model,
 *   models/sounding-objects-v2.safetensors (avfusion-v2): a real
 *   pipeline's output caps carry the file's E (patches [N, E], fused [2E])
 *   and its meta the file's visible_threshold; the plugin of the build tree
 *   reads the copy beside it, also when it is reached through a symbolic
 *   link;
 * - model=unlabeled gives the model trained without truth (by name, the
 *   same bytes as its file);
 * - model=trained-v1 gives the first shipped model,
 *   models/sounding-objects-v1.safetensors (avfusion-v1), byte for byte
 *   the same as that file given as "weights";
 * - model=seeded (or a seed) gives the seeded built-in weights of spec §4
 *   (E 256): bit-identical to seed=0 and to the same weights saved as a
 *   file and given as "weights";
 * - "weights" wins over "model";
 * - the same plugin file loaded from anywhere else looks for the installed
 *   model (<datadir>/avattention); when that is missing, both elements
 *   fail with a RESOURCE/NOT_FOUND error naming the path and the
 *   "weights" and "model" properties.
 *
 * Nothing here knows the shipped models' sizes: they are read off the
 * files.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/app/gstappsink.h>
#include <gst/check/gstcheck.h>
#include "avf_check.h"
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "gstavattentionmeta.h"
#include "gstavtensor.h"
#include "gstavweights.h"
#include "safetensors_write.h"

/* ---- helpers ------------------------------------------------------------ */

typedef struct
{
  GPtrArray *fused;             /* GstBuffer, each with its meta */
  gint patch_embed_dim, patch_count, fused_width;
  gchar *error;                 /* the first error's message and debug */
} Result;

static void
result_clear (Result * r)
{
  if (r->fused)
    g_ptr_array_unref (r->fused);
  g_free (r->error);
  memset (r, 0, sizeof *r);
}

/* The sizes a pipeline must feed the model @cfg: its mel bands and hop,
 * and a window that its audio positions cover. */
static gchar *
audio_branch (const AvfConfig * cfg)
{
  const gint rate = cfg->sample_rate > 0 ? cfg->sample_rate : 16000;
  const gint n_fft = cfg->n_fft > 0 ? cfg->n_fft : 400;
  const gint hop = cfg->hop_length > 0 ? cfg->hop_length : n_fft / 4;

  /* 3 s, or 1 s under valgrind, where one video frame is fused */
  return g_strdup_printf ("audiotestsrc num-buffers=%d samplesperbuffer=%d "
      "freq=660 ! audioconvert ! audioresample ! audio/x-raw,rate=%d ! "
      "avspectrogram n-mels=%d n-fft=%d hop-length=%d ! queue ! "
      "att.audio_sink", g_getenv ("AVF_UNDER_VALGRIND") ? 10 : 30,
      rate / 10, rate, cfg->M, n_fft, hop);
}

static guint64
window_for (const AvfConfig * cfg)
{
  const gint rate = cfg->sample_rate > 0 ? cfg->sample_rate : 16000;
  const gint n_fft = cfg->n_fft > 0 ? cfg->n_fft : 400;
  const gint hop = cfg->hop_length > 0 ? cfg->hop_length : n_fft / 4;
  /* at most 1 s, and at most T_max - 1 hops */
  guint64 cover = gst_util_uint64_scale ((guint64) (cfg->T_max - 1) * hop,
      GST_SECOND, rate);

  /* the model's own window when its audio positions hold it (the shipped
   * avfusion-v2 model takes no other: 1 s) */
  if (cfg->window_ms > 0 && (gint64) cfg->window_ms * rate
      <= (gint64) cfg->T_max * hop * 1000)
    return (guint64) cfg->window_ms * GST_MSECOND;
  return MIN (GST_SECOND, cover);
}

/* Video frames per run: 10, 3 in quick mode, 1 under valgrind (where a
 * frame of the seeded model takes about 25 s; which weights a setting
 * selects shows in the first frame as well as in ten). */
static guint
n_frames (void)
{
  if (g_getenv ("AVF_UNDER_VALGRIND"))
    return 1;
  return g_getenv ("AVF_TEST_QUICK") ? 3 : 10;
}

/* Runs n_frames () frames of videotestsrc and 3 s of audiotestsrc through
 * avpatchembed (@pe_props) and avattention (@att_props) with the audio
 * branch for @cfg, and collects the outputs and the negotiated sizes. */
static Result
run (const gchar * pe_props, const gchar * att_props, const AvfConfig * cfg)
{
  gchar *abranch = audio_branch (cfg);
  gchar *desc = g_strdup_printf ("videotestsrc num-buffers=%u pattern=ball "
      "! video/x-raw,width=320,height=240,framerate=10/1 ! videoconvert ! "
      "videoscale ! avpatchembed name=pe %s ! queue ! att.video_sink %s "
      "avattention name=att window=%" G_GUINT64_FORMAT " %s ! appsink "
      "name=sink sync=false", n_frames (), pe_props, abranch,
      window_for (cfg), att_props);
  GError *err = NULL;
  GstElement *p = gst_parse_launch (desc, &err);
  GstElement *sink, *pe;
  GstBus *bus;
  Result r = { 0 };
  gboolean done = FALSE;
  const gint64 deadline = g_get_monotonic_time () +
      (gint64) 120 * avf_slowdown () * G_USEC_PER_SEC;

  fail_unless (p != NULL, "%s: %s", desc, err ? err->message : "");
  r.fused = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
  sink = gst_bin_get_by_name (GST_BIN (p), "sink");
  pe = gst_bin_get_by_name (GST_BIN (p), "pe");
  bus = gst_element_get_bus (p);
  gst_element_set_state (p, GST_STATE_PLAYING);
  while (!done) {
    GstSample *s = gst_app_sink_try_pull_sample (GST_APP_SINK (sink),
        20 * GST_MSECOND);
    GstMessage *m;

    if (s != NULL) {
      g_ptr_array_add (r.fused, gst_buffer_ref (gst_sample_get_buffer (s)));
      if (r.fused_width == 0) {
        GstPad *src = gst_element_get_static_pad (pe, "src");
        GstCaps *pc = gst_pad_get_current_caps (src);
        const GstStructure *st;

        fail_unless (pc != NULL);
        st = gst_caps_get_structure (pc, 0);
        fail_unless (gst_structure_get_int (st, "embed-dim",
                &r.patch_embed_dim));
        fail_unless (gst_structure_get_int (st, "num-patches",
                &r.patch_count));
        st = gst_caps_get_structure (gst_sample_get_caps (s), 0);
        fail_unless (gst_structure_get_int (st, "width", &r.fused_width));
        gst_caps_unref (pc);
        gst_object_unref (src);
      }
      gst_sample_unref (s);
      continue;
    }
    m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
    if (m != NULL) {
      GError *e = NULL;
      gchar *dbg = NULL;

      gst_message_parse_error (m, &e, &dbg);
      r.error = g_strdup_printf ("%s (%s)", e->message, dbg ? dbg : "");
      g_error_free (e);
      g_free (dbg);
      gst_message_unref (m);
      done = TRUE;
    } else if (gst_app_sink_is_eos (GST_APP_SINK (sink))) {
      done = TRUE;
    } else if (g_get_monotonic_time () > deadline) {
      gst_element_set_state (p, GST_STATE_NULL);
      fail ("%s: no EOS within %u s", desc, 120 * avf_slowdown ());
    }
  }
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pe);
  gst_object_unref (sink);
  gst_object_unref (p);
  g_free (desc);
  g_free (abranch);
  return r;
}

static gboolean
same_output (const Result * a, const Result * b)
{
  if (a->fused->len != b->fused->len)
    return FALSE;
  for (guint i = 0; i < a->fused->len; i++) {
    GstBuffer *x = g_ptr_array_index (a->fused, i);
    GstBuffer *y = g_ptr_array_index (b->fused, i);
    GstMapInfo mx, my;
    gboolean same;

    fail_unless (gst_buffer_map (x, &mx, GST_MAP_READ));
    fail_unless (gst_buffer_map (y, &my, GST_MAP_READ));
    same = mx.size == my.size && memcmp (mx.data, my.data, mx.size) == 0
        && GST_BUFFER_PTS (x) == GST_BUFFER_PTS (y);
    gst_buffer_unmap (x, &mx);
    gst_buffer_unmap (y, &my);
    if (!same)
      return FALSE;
  }
  return TRUE;
}

/* ---- the default: the shipped trained model ----------------------------- */

GST_START_TEST (test_default_is_the_shipped_model)
{
  AvfConfig shipped = avf_shipped_model_config ();
  GstElement *pe = gst_element_factory_make ("avpatchembed", NULL);
  gchar *path, *want = avf_shipped_model_path ();
  Result r;

  /* the plugin of the build tree reads the copy beside it */
  fail_unless (pe != NULL);
  path = gst_av_default_model_path (pe);
  fail_unless_equals_string (path, want);
  avf_check_enum_nick (pe, "model", "trained");
  gst_object_unref (pe);

  r = run ("", "", &shipped);
  fail_unless (r.error == NULL, "%s", r.error);
  fail_unless_equals_int (r.fused->len, n_frames ());
  /* E read off the caps equals the file's */
  fail_unless_equals_int (r.patch_embed_dim, shipped.E);
  fail_unless_equals_int (r.patch_count, shipped.N);
  fail_unless_equals_int (r.fused_width, 2 * shipped.E);
  for (guint i = 0; i < r.fused->len; i++) {
    GstAvAttentionMeta *meta =
        gst_buffer_get_av_attention_meta (g_ptr_array_index (r.fused, i));

    fail_unless (meta != NULL);
    fail_unless_equals_int (meta->n_layers, shipped.L);
    fail_unless_equals_int (meta->model_heads, shipped.H);
    fail_unless_equals_float (meta->visible_threshold,
        shipped.visible_threshold);
  }

  /* it is that file: giving it as "weights" changes no byte */
  {
    gchar *props = g_strdup_printf ("weights=\"%s\"", want);
    Result f = run (props, props, &shipped);

    fail_unless (f.error == NULL, "%s", f.error);
    fail_unless (same_output (&r, &f), "the default differs from %s", want);
    result_clear (&f);
    g_free (props);
  }
  result_clear (&r);
  g_free (path);
  g_free (want);
}

GST_END_TEST;

/* ---- the first shipped model, by name ----------------------------------- */

/* A shipped model chosen by name (@nick, set as @pe_props or @att_props on
 * one element only: the other follows) is @file beside the plugin, which
 * holds @format: the same bytes as that file given as "weights", its sizes
 * and threshold, not the default's output. */
static void
check_shipped_by_name (const gchar * element, GstAvModel model,
    const gchar * nick, const gchar * file, const gchar * format)
{
  GstElement *el = gst_element_factory_make (element, NULL);
  gchar *path, *props, *choice = g_strdup_printf ("model=%s", nick);
  gboolean on_pe = g_str_equal (element, "avpatchembed");
  AvfWeights *w = NULL;
  AvfError err;
  AvfConfig cfg, shipped = avf_shipped_model_config ();
  Result by_name, by_file, by_default;

  fail_unless (avf_weights_load (&w, file, &err) == AVF_OK, "%s",
      err.message);
  fail_unless_equals_string (avf_weights_format (w), format);
  cfg = w->cfg;
  avf_weights_free (w);

  fail_unless (el != NULL);
  path = gst_av_shipped_model_path (el, model);
  fail_unless_equals_string (path, file);
  gst_util_set_object_arg (G_OBJECT (el), "model", nick);
  avf_check_enum_nick (el, "model", nick);
  gst_object_unref (el);

  by_name = run (on_pe ? choice : "", on_pe ? "" : choice, &cfg);
  fail_unless (by_name.error == NULL, "%s", by_name.error);
  fail_unless_equals_int (by_name.fused->len, n_frames ());
  fail_unless_equals_int (by_name.patch_embed_dim, cfg.E);
  fail_unless_equals_int (by_name.fused_width, 2 * cfg.E);
  fail_unless_equals_float (gst_buffer_get_av_attention_meta
      (g_ptr_array_index (by_name.fused, 0))->visible_threshold,
      cfg.visible_threshold);

  props = g_strdup_printf ("weights=\"%s\"", file);
  by_file = run (props, props, &cfg);
  fail_unless (by_file.error == NULL, "%s", by_file.error);
  fail_unless (same_output (&by_name, &by_file), "%s differs from %s",
      choice, file);

  by_default = run ("", "", &shipped);
  fail_unless (by_default.error == NULL, "%s", by_default.error);
  fail_if (same_output (&by_name, &by_default), "%s gives the default "
      "model's output", choice);

  result_clear (&by_name);
  result_clear (&by_file);
  result_clear (&by_default);
  g_free (props);
  g_free (path);
  g_free (choice);
}

/* model=trained-v1, set on avpatchembed only, is the v1 file; the default
 * is avfusion-v2. */
GST_START_TEST (test_trained_v1)
{
  gchar *v1 = g_build_filename (AVF_PLUGIN_BUILD_DIR, AVF_MODEL_V1_NAME,
      NULL);
  gchar *dflt = avf_shipped_model_path ();
  AvfWeights *w = NULL;
  AvfError err;

  fail_unless (avf_weights_load (&w, dflt, &err) == AVF_OK, "%s",
      err.message);
  fail_unless_equals_string (avf_weights_format (w), "avfusion-v2");
  avf_weights_free (w);
  check_shipped_by_name ("avpatchembed", GST_AV_MODEL_TRAINED_V1,
      "trained-v1", v1, "avfusion-v1");
  g_free (dflt);
  g_free (v1);
}

GST_END_TEST;

/* ---- the model trained without truth, by name --------------------------- */

/* model=unlabeled, set on avattention only, is the unlabelled v2 file. */
GST_START_TEST (test_unlabeled_model)
{
  gchar *file = g_build_filename (AVF_PLUGIN_BUILD_DIR,
      AVF_MODEL_UNLABELED_NAME, NULL);

  check_shipped_by_name ("avattention", GST_AV_MODEL_UNLABELED, "unlabeled",
      file, "avfusion-v2");
  g_free (file);
}

GST_END_TEST;

/* ---- seeded on request -------------------------------------------------- */

GST_START_TEST (test_seeded_on_request)
{
  const AvfConfig seeded_cfg = avf_config_default ();
  gchar *dir = g_dir_make_tmp ("avf-default-model-XXXXXX", NULL);
  gchar *file = g_build_filename (dir, "seeded-0.safetensors", NULL);
  gchar *props;
  AvfWeights *w = NULL;
  AvfError err;
  Result by_model, by_seed, by_file, trained_then_seed;

  by_model = run ("model=seeded", "model=seeded", &seeded_cfg);
  fail_unless (by_model.error == NULL, "%s", by_model.error);
  fail_unless_equals_int (by_model.patch_embed_dim, 256);
  fail_unless_equals_int (by_model.fused_width, 512);
  fail_unless_equals_int (by_model.fused->len, n_frames ());
  fail_unless_equals_float (gst_buffer_get_av_attention_meta
      (g_ptr_array_index (by_model.fused, 0))->visible_threshold, 0.0f);

  /* a seed selects the seeded weights; seed 0 is model=seeded's */
  by_seed = run ("seed=0", "seed=0", &seeded_cfg);
  fail_unless (by_seed.error == NULL, "%s", by_seed.error);
  fail_unless (same_output (&by_model, &by_seed));
  /* a later model=trained wins over an earlier seed, and back */
  trained_then_seed = run ("model=trained seed=0", "model=trained seed=0",
      &seeded_cfg);
  fail_unless (trained_then_seed.error == NULL, "%s",
      trained_then_seed.error);
  fail_unless (same_output (&by_model, &trained_then_seed));

  /* the same weights as a file give the same bytes (spec §4: the seeded
   * weights are the same numbers everywhere) */
  fail_unless (avf_weights_new_default (&w, &seeded_cfg, 0, &err) == AVF_OK,
      "%s", err.message);
  fail_unless (avf_weights_save (w, file, &err) == AVF_OK, "%s",
      err.message);
  avf_weights_free (w);
  props = g_strdup_printf ("weights=\"%s\"", file);
  by_file = run (props, props, &seeded_cfg);
  fail_unless (by_file.error == NULL, "%s", by_file.error);
  fail_unless (same_output (&by_model, &by_file));
  result_clear (&by_file);
  g_free (props);

  /* "weights" wins over model=seeded and over a seed */
  {
    AvfConfig shipped = avf_shipped_model_config ();
    gchar *shipped_path = avf_shipped_model_path ();
    Result r;

    props = g_strdup_printf ("model=seeded seed=5 weights=\"%s\"",
        shipped_path);
    r = run (props, props, &shipped);
    fail_unless (r.error == NULL, "%s", r.error);
    fail_unless_equals_int (r.patch_embed_dim, shipped.E);
    result_clear (&r);
    g_free (props);
    g_free (shipped_path);
  }

  result_clear (&by_model);
  result_clear (&by_seed);
  result_clear (&trained_then_seed);
  g_unlink (file);
  g_rmdir (dir);
  g_free (file);
  g_free (dir);
}

GST_END_TEST;

/* ---- the plugin file elsewhere ------------------------------------------ */

/* The plugin file the registry loaded avattention from. */
static gchar *
plugin_file (void)
{
  GstPlugin *plugin = gst_registry_find_plugin (gst_registry_get (),
      "avattention");
  gchar *file;

  fail_unless (plugin != NULL);
  fail_unless (gst_plugin_get_filename (plugin) != NULL);
  file = g_strdup (gst_plugin_get_filename (plugin));
  gst_object_unref (plugin);
  return file;
}

/* Runs gst-launch-1.0 @pipeline with the plugin found only in @plugin_dir
 * (a registry of its own in @tmp); returns its exit status, *out its
 * output. */
static gint
launch_with_plugin_dir (const gchar * tmp, const gchar * plugin_dir,
    const gchar * pipeline, gchar ** out)
{
  gchar **env = g_get_environ ();
  gchar *registry = g_build_filename (tmp, "registry.bin", NULL);
  gchar *cmd = g_strdup_printf ("gst-launch-1.0 %s", pipeline);
  gchar **argv = NULL;
  gchar *o = NULL, *e = NULL;
  gint status = -1;
  GError *err = NULL;

  env = g_environ_setenv (env, "GST_PLUGIN_PATH", plugin_dir, TRUE);
  env = g_environ_setenv (env, "GST_PLUGIN_PATH_1_0", plugin_dir, TRUE);
  env = g_environ_setenv (env, "GST_REGISTRY", registry, TRUE);
  env = g_environ_setenv (env, "GST_REGISTRY_1_0", registry, TRUE);
  fail_unless (g_shell_parse_argv (cmd, NULL, &argv, NULL));
  fail_unless (g_spawn_sync (NULL, argv, env, G_SPAWN_SEARCH_PATH, NULL,
          NULL, &o, &e, &status, &err), "%s", err ? err->message : "");
  *out = g_strconcat (o, e, NULL);
  g_unlink (registry);
  g_free (o);
  g_free (e);
  g_strfreev (argv);
  g_free (cmd);
  g_free (registry);
  g_strfreev (env);
  return status;
}

/* The same plugin file copied out of the build tree is an "installed"
 * plugin: it looks for the installed model, and when that is missing
 * both elements stop with an error that names its path and the two
 * properties.  Through a symbolic link to the build tree's folder the
 * plugin still uses the build tree's copy. */
GST_START_TEST (test_plugin_elsewhere)
{
  const gchar *installed = AVF_MODEL_INSTALL_DIR "/" AVF_MODEL_NAME;
  static const gchar *const others[][2] = {
    {"trained-v1", AVF_MODEL_INSTALL_DIR "/" AVF_MODEL_V1_NAME},
    {"unlabeled", AVF_MODEL_INSTALL_DIR "/" AVF_MODEL_UNLABELED_NAME},
  };
  gchar *tmp = g_dir_make_tmp ("avf-plugin-XXXXXX", NULL);
  gchar *so = plugin_file (), *contents, *out = NULL;
  gchar *elements = g_build_filename (tmp, "elements", NULL);
  gchar *copy = g_build_filename (elements, "libgstavattention.so", NULL);
  gchar *lib_link = g_build_filename (tmp, "meta", NULL);
  gchar *build_lib = g_build_filename (AVF_PLUGIN_BUILD_DIR, "..", "meta",
      NULL);
  gchar *link = g_build_filename (tmp, "through-a-link", NULL);
  gchar *shipped_path = avf_shipped_model_path ();
  const gchar *pipelines[] = {
    "videotestsrc num-buffers=1 ! videoconvert ! videoscale ! avpatchembed "
        "! fakesink",
    "avattention ! fakesink",
  };
  gsize len;
  gint status;

#if defined(__SANITIZE_ADDRESS__)
  /* gst-launch-1.0 is not built with the sanitizers, so it cannot load the
   * instrumented plugin: the normal, leaks and valgrind runs cover this */
  g_print ("test_plugin_elsewhere: skipped in a sanitizer build\n");
  goto done;
#endif
  fail_unless (tmp != NULL);
  /* the copy finds libgstavattention-1.0 as the original does
   * ($ORIGIN/../meta) */
  fail_unless (g_mkdir (elements, 0755) == 0);
  fail_unless (g_file_get_contents (so, &contents, &len, NULL));
  fail_unless (g_file_set_contents (copy, contents, len, NULL));
  g_free (contents);
  fail_unless (symlink (build_lib, lib_link) == 0);

  if (g_file_test (installed, G_FILE_TEST_EXISTS)) {
    g_print ("test_plugin_elsewhere: %s is installed; the missing-model "
        "error is not checked\n", installed);
  } else {
    for (guint i = 0; i < G_N_ELEMENTS (pipelines); i++) {
      status = launch_with_plugin_dir (tmp, elements, pipelines[i], &out);
      fail_if (g_spawn_check_wait_status (status, NULL),
          "%s ran without the installed model: %s", pipelines[i], out);
      fail_unless (strstr (out, installed) != NULL, "%s: the error does not "
          "name %s: %s", pipelines[i], installed, out);
      fail_unless (strstr (out, "\"weights\"") != NULL
          && strstr (out, "model=seeded") != NULL
          && strstr (out, "\"model\"") != NULL, "%s: the error does not "
          "name the weights and model properties: %s", pipelines[i], out);
      fail_unless (strstr (out, "not found") != NULL, "%s", out);
      /* and not the build tree's copy */
      fail_if (strstr (out, shipped_path) != NULL, "%s", out);
      g_free (out);
    }
    /* model=trained-v1 and model=unlabeled look for their installed files */
    for (guint i = 0; i < G_N_ELEMENTS (others); i++) {
      gchar *line;

      if (g_file_test (others[i][1], G_FILE_TEST_EXISTS))
        continue;
      line = g_strdup_printf ("videotestsrc num-buffers=1 ! videoconvert ! "
          "videoscale ! avpatchembed model=%s ! fakesink", others[i][0]);
      status = launch_with_plugin_dir (tmp, elements, line, &out);
      fail_if (g_spawn_check_wait_status (status, NULL), "model=%s ran "
          "without the installed model: %s", others[i][0], out);
      fail_unless (strstr (out, others[i][1]) != NULL
          && strstr (out, others[i][0]) != NULL, "%s", out);
      g_free (line);
      g_free (out);
    }
    /* model=seeded needs no file */
    status = launch_with_plugin_dir (tmp, elements, "videotestsrc "
        "num-buffers=1 ! videoconvert ! videoscale ! avpatchembed "
        "model=seeded ! fakesink", &out);
    fail_unless (g_spawn_check_wait_status (status, NULL), "%s", out);
    g_free (out);
  }

  /* a symbolic link to the build tree's plugin folder is the build tree */
  fail_unless (symlink (AVF_PLUGIN_BUILD_DIR, link) == 0);
  status = launch_with_plugin_dir (tmp, link, pipelines[0], &out);
  fail_unless (g_spawn_check_wait_status (status, NULL), "through a link: "
      "%s", out);
  g_free (out);

#if defined(__SANITIZE_ADDRESS__)
done:
#endif
  avf_remove_tree (tmp);
  g_free (shipped_path);
  g_free (link);
  g_free (build_lib);
  g_free (lib_link);
  g_free (copy);
  g_free (elements);
  g_free (so);
  g_free (tmp);
}

GST_END_TEST;

static Suite *
default_model_suite (void)
{
  Suite *s = suite_create ("default_model");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 300);
  tcase_add_test (tc, test_default_is_the_shipped_model);
  tcase_add_test (tc, test_trained_v1);
  tcase_add_test (tc, test_unlabeled_model);
  tcase_add_test (tc, test_seeded_on_request);
  tcase_add_test (tc, test_plugin_elsewhere);
  return s;
}

AVF_CHECK_MAIN (default_model);
