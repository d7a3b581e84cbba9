/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Shared by the element tests: the main (with the leaks check), file
 * places (fixtures, clips), and the pieces of pipelines the tests build;
 * the helpers of tests/support (pipeline runs, bus waits, signals,
 * temporary folders).
 *
 * AVF_CHECK_MAIN (name): GST_CHECK_MAIN plus GStreamer's `leaks` tracer
 * (robustness item 33).  Under `meson test --setup leaks` (GST_TRACERS=leaks,
 * CK_FORK=no, AVF_LEAKS_CHECK=1) every test of the program runs in one
 * process; when they all pass, gst_deinit () makes the tracer list every
 * GstObject and mini object (buffer, caps, event, query, message, memory)
 * still alive.  Each is printed and the program fails.  Without the setup
 * this is GST_CHECK_MAIN.
 */
#ifndef AVF_CHECK_H
#define AVF_CHECK_H

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* tests/support: pipeline runs and bus waits, avf_message_text, test
 * signals, numpy checks, buffers and fixture tensors, temporary folders */
#include "avf_data.h"
#include "avf_numpy.h"
#include "avf_pipeline.h"
#include "avf_signal.h"
#include "avf_tmpdir.h"

static guint avf_leaks_alive;

static void
avf_leaks_log (GstDebugCategory * category, GstDebugLevel level,
    const gchar * file, const gchar * function, gint line, GObject * object,
    GstDebugMessage * message, gpointer user_data)
{
  const gchar *text;

  if (strcmp (gst_debug_category_get_name (category), "GST_TRACER") != 0)
    return;
  text = gst_debug_message_get (message);
  /* "object-alive, type-name=(string)GstBuffer, address=..., ..." */
  if (text != NULL && g_str_has_prefix (text, "object-alive")) {
    avf_leaks_alive++;
    g_printerr ("leaks tracer: %s\n", text);
  }
}

/* Runs the suite; with AVF_LEAKS_CHECK set and every test passed, ends
 * GStreamer and fails on any object the leaks tracer finds alive. */
static inline gint
avf_check_run (Suite * suite, const gchar * name, const gchar * file)
{
  gint nf = gst_check_run_suite (suite, name, file);

  if (nf != 0 || g_getenv ("AVF_LEAKS_CHECK") == NULL)
    return nf;
  if (!g_strrstr (g_getenv ("GST_TRACERS") ? g_getenv ("GST_TRACERS") : "",
          "leaks")) {
    g_printerr ("AVF_LEAKS_CHECK is set but GST_TRACERS has no leaks "
        "tracer\n");
    return 1;
  }
  gst_debug_set_threshold_for_name ("GST_TRACER", GST_LEVEL_TRACE);
  gst_debug_remove_log_function (gst_debug_log_default);
  gst_debug_add_log_function (avf_leaks_log, NULL, NULL);
  /* the tracer reports when it is finalized, in gst_deinit */
  g_log_set_always_fatal (G_LOG_LEVEL_CRITICAL);
  gst_deinit ();
  if (avf_leaks_alive > 0)
    g_print ("%s: the leaks tracer found %u objects alive after the "
        "tests\n", name, avf_leaks_alive);
  else
    g_print ("%s: the leaks tracer found no object alive after the tests\n",
        name);
  /* gst-check ends GStreamer again at exit, which is an error once done */
  fflush (stdout);
  fflush (stderr);
  _exit (avf_leaks_alive > 0 ? 1 : 0);
}

/* How much longer waits may take: 20 under valgrind (the valgrind test
 * setup sets AVF_UNDER_VALGRIND), else 1. */
static inline guint
avf_slowdown (void)
{
  return g_getenv ("AVF_UNDER_VALGRIND") ? 20 : 1;
}

/* Tears down two harnesses on one element (an aggregator's inputs), the
 * element stopped first.  While another harness keeps the element playing,
 * GstHarness frees the harness it tears down without waiting for the
 * element's threads: GstAggregator's source task asks every input's peer
 * for the latency, and a query that has already looked up the harness
 * being freed reads freed memory (a segfault of test_state_cycles_harness
 * in CI; reproduced every run by stretching those two steps,
 * gst_harness_teardown and the harness's pad functions, with a preloaded
 * shim).  Setting the element to NULL first joins that task. */
static inline void
avf_harness_teardown_pair (GstHarness * h1, GstHarness * h2)
{
  GstStateChangeReturn ret;

  fail_unless (h1->element == h2->element);
  ret = gst_element_set_state (h1->element, GST_STATE_NULL);
  fail_unless_equals_int (ret, GST_STATE_CHANGE_SUCCESS);
  gst_harness_teardown (h1);
  gst_harness_teardown (h2);
}

/* Waits up to 5 s for the next event of @type on the harness's output,
 * skipping the others (stream-start, caps, segment). */
static inline GstEvent *
pull_event_of_type (GstHarness * h, GstEventType type)
{
  const gint64 deadline = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;

  while (g_get_monotonic_time () < deadline) {
    GstEvent *e = gst_harness_try_pull_event (h);

    if (e == NULL) {
      g_usleep (1000);
      continue;
    }
    if (GST_EVENT_TYPE (e) == type)
      return e;
    gst_event_unref (e);
  }
  return NULL;
}

/* Checks that an enum property's value has the nick @want ("trained",
 * "seeded", ...). */
static inline void
avf_check_enum_nick (gpointer object, const gchar * property,
    const gchar * want)
{
  GParamSpec *pspec = g_object_class_find_property (G_OBJECT_GET_CLASS
      (object), property);
  GEnumValue *v;
  gint value = 0;

  fail_unless (pspec != NULL && G_IS_PARAM_SPEC_ENUM (pspec),
      "no enum property %s", property);
  g_object_get (object, property, &value, NULL);
  v = g_enum_get_value (G_PARAM_SPEC_ENUM (pspec)->enum_class, value);
  fail_unless (v != NULL, "%s: value %d", property, value);
  fail_unless_equals_string (v->value_nick, want);
}

/* ---- files ----------------------------------------------------------- */

/* A fixture of tests/fixtures (AVF_FIXTURE_DIR); g_free. */
static inline gchar *
avf_fixture_path (const gchar * name)
{
  const gchar *dir = g_getenv ("AVF_FIXTURE_DIR");
  return g_build_filename (dir ? dir : "tests/fixtures", name, NULL);
}

/* A recorded clip of tests/clips (AVF_CLIP_DIR); g_free. */
static inline gchar *
avf_clip_path (const gchar * name)
{
  const gchar *dir = g_getenv ("AVF_CLIP_DIR");
  return g_build_filename (dir ? dir : "tests/clips", name, NULL);
}

/* Opens the .npz archive @path into the NpzFile @z (npzread.h), or fails
 * the test with the reader's reason. */
#define ASSERT_ZIP_OPEN(z, path) G_STMT_START {                        \
  char err_[512];                                                       \
  fail_unless (npz_open ((z), (path), err_, sizeof err_), "%s", err_);  \
} G_STMT_END

/* Resident memory of the process in KiB, -1 when unknown. */
static inline glong
avf_rss_kib (void)
{
  FILE *f = fopen ("/proc/self/status", "r");
  char line[256];
  glong kib = -1;

  while (f && fgets (line, sizeof line, f))
    if (sscanf (line, "VmRSS: %ld kB", &kib) == 1)
      break;
  if (f)
    fclose (f);
  return kib;
}

/* ---- messages --------------------------------------------------------- */

static inline void
avf_check_contains (const gchar * text, const gchar * what)
{
  fail_unless (strstr (text, what) != NULL, "\"%s\" does not name \"%s\"",
      text, what);
}

/* ---- pipelines -------------------------------------------------------- */

/* TRUE when every element of the NULL-terminated @names is installed;
 * otherwise prints that @test is skipped. */
static inline gboolean
avf_have_elements (const gchar * test, const gchar * const *names)
{
  for (guint i = 0; names[i] != NULL; i++) {
    GstElementFactory *f = gst_element_factory_find (names[i]);
    if (f == NULL) {
      g_print ("SKIPPED %s: no element %s\n", test, names[i]);
      return FALSE;
    }
    gst_object_unref (f);
  }
  return TRUE;
}

/* decodebin's first audio and first video pad go to these sink pads
 * (connect avf_decode_links_pad_added to "pad-added"). */
typedef struct
{
  GstPad *audio_sink, *video_sink;
  gboolean audio_linked, video_linked;
} AvfDecodeLinks;

static inline void
avf_decode_links_pad_added (GstElement * decodebin, GstPad * pad,
    AvfDecodeLinks * l)
{
  GstCaps *caps = gst_pad_get_current_caps (pad);
  const gchar *name;

  if (caps == NULL)
    caps = gst_pad_query_caps (pad, NULL);
  name = gst_structure_get_name (gst_caps_get_structure (caps, 0));
  if (g_str_has_prefix (name, "audio/") && !l->audio_linked)
    l->audio_linked = gst_pad_link (pad, l->audio_sink) == GST_PAD_LINK_OK;
  else if (g_str_has_prefix (name, "video/") && !l->video_linked)
    l->video_linked = gst_pad_link (pad, l->video_sink) == GST_PAD_LINK_OK;
  gst_caps_unref (caps);
}

#ifdef AVF_PLUGIN_BUILD_DIR
#include "weights.h"
#include "safetensors_write.h"

/* The shipped trained model as the plugin of the build tree finds it (the
 * copy beside the plugin; g_free). */
static inline gchar *
avf_shipped_model_path (void)
{
  return g_build_filename (AVF_PLUGIN_BUILD_DIR, AVF_MODEL_NAME, NULL);
}

/* The sizes (and visible_threshold) of the shipped model, read off the
 * file: nothing in the tests hard-codes them. */
static inline AvfConfig
avf_shipped_model_config (void)
{
  gchar *path = avf_shipped_model_path ();
  AvfWeights *w = NULL;
  AvfError err;
  AvfConfig cfg;

  fail_unless (avf_weights_load (&w, path, &err) == AVF_OK,
      "the shipped model %s: %s", path, err.message);
  cfg = w->cfg;
  avf_weights_free (w);
  g_free (path);
  return cfg;
}

/* Writes the weights file @src to @dst with visible_threshold @threshold in
 * its metadata (0: none). */
static inline void
avf_weights_copy_with_threshold (const gchar * src, const gchar * dst,
    gfloat threshold)
{
  AvfWeights *w = NULL;
  AvfError err;

  fail_unless (avf_weights_load (&w, src, &err) == AVF_OK, "%s: %s", src,
      err.message);
  w->cfg.visible_threshold = threshold;
  fail_unless (avf_weights_save (w, dst, &err) == AVF_OK, "%s: %s", dst,
      err.message);
  avf_weights_free (w);
}
#endif

#define AVF_CHECK_MAIN(name)                                            \
int                                                                     \
main (int argc, char **argv)                                            \
{                                                                       \
  gst_check_init (&argc, &argv);                                        \
  return avf_check_run (name##_suite (), #name, __FILE__) ? 1 : 0;      \
}

#endif /* AVF_CHECK_H */
