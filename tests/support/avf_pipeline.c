/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Running pipelines in the element tests (avf_pipeline.h).
 */
#include "avf_pipeline.h"

#include <gst/check/gstcheck.h>

#define AVF_RUN_DEFAULT_TIMEOUT (300 * GST_SECOND)

gchar *
avf_message_text (GstMessage * m, GQuark * domain, gint * code)
{
  GError *err = NULL;
  gchar *debug = NULL, *text;

  if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR)
    gst_message_parse_error (m, &err, &debug);
  else
    gst_message_parse_warning (m, &err, &debug);
  if (domain)
    *domain = err->domain;
  if (code)
    *code = err->code;
  text = g_strdup_printf ("%s (%s)", err->message, debug ? debug : "");
  g_error_free (err);
  g_free (debug);
  return text;
}

static GstClockTime
run_timeout (const AvfRun * run)
{
  return run->timeout == 0 ? AVF_RUN_DEFAULT_TIMEOUT : run->timeout;
}

/* Waits on @bus for end-of-stream or the first ERROR, up to run->timeout
 * in all, adding the ERROR and WARNING messages to run->messages; sets
 * run->eos or run->timed_out. */
static void
wait_end (GstBus * bus, AvfRun * run)
{
  const GstClockTime timeout = run_timeout (run);
  const gint64 deadline = GST_CLOCK_TIME_IS_VALID (timeout) ?
      g_get_monotonic_time () + (gint64) (timeout / GST_USECOND) : G_MAXINT64;

  for (;;) {
    const gint64 left = deadline - g_get_monotonic_time ();
    GstMessage *m = gst_bus_timed_pop_filtered (bus,
        deadline == G_MAXINT64 ? GST_CLOCK_TIME_NONE :
        (GstClockTime) MAX (left, 0) * GST_USECOND,
        GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_WARNING);

    if (m == NULL) {
      run->timed_out = TRUE;
      return;
    }
    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS) {
      run->eos = TRUE;
      gst_message_unref (m);
      return;
    }
    run->messages = g_list_append (run->messages, m);
    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR)
      return;
  }
}

static void
check_timeout (const AvfRun * run)
{
  fail_if (run->timed_out && !run->timeout_is_result, "%s: neither "
      "end-of-stream nor an error within %" GST_TIME_FORMAT ": a hang",
      run->what ? run->what : "the pipeline",
      GST_TIME_ARGS (run_timeout (run)));
}

void
avf_run_pipeline (GstElement * pipeline, AvfRun * run)
{
  GstBus *bus = gst_element_get_bus (pipeline);

  run->eos = run->timed_out = FALSE;
  if (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE) {
    if (run->started)
      run->started (pipeline, run->user_data);
    wait_end (bus, run);
  }
  /* errors posted while the state change failed */
  for (GstMessage * m; (m = gst_bus_pop_filtered (bus,
              GST_MESSAGE_ERROR | GST_MESSAGE_WARNING)) != NULL;)
    run->messages = g_list_append (run->messages, m);
  /* stop the streaming threads before a timeout fails the test */
  if (!run->keep_state || (run->timed_out && !run->timeout_is_result))
    gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  check_timeout (run);
}

gchar *
avf_run_problem (const AvfRun * run, gboolean warnings, GQuark * domain,
    gint * code)
{
  for (GList * l = run->messages; l; l = l->next) {
    GstMessage *m = l->data;

    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR || warnings)
      return avf_message_text (m, domain, code);
  }
  if (run->timed_out)
    return g_strdup_printf ("no EOS and no error within %" GST_TIME_FORMAT,
        GST_TIME_ARGS (run_timeout (run)));
  if (!run->eos)
    return g_strdup ("no EOS and no error");
  return NULL;
}

void
avf_run_fail_on_messages (const AvfRun * run, const gchar * what)
{
  for (GList * l = run->messages; l; l = l->next) {
    gchar *text = avf_message_text (l->data, NULL, NULL);
    fail ("%s: %s from %s: %s", what, GST_MESSAGE_TYPE_NAME (l->data),
        GST_MESSAGE_SRC_NAME (l->data), text);
    g_free (text);
  }
}

void
avf_run_clear (AvfRun * run)
{
  g_list_free_full (run->messages, (GDestroyNotify) gst_message_unref);
  run->messages = NULL;
}

void
avf_wait_message (GstBus * bus, GstMessageType type, GstClockTime timeout,
    gboolean warnings_fail, const gchar * what)
{
  const GstMessageType fatal = GST_MESSAGE_ERROR |
      (warnings_fail ? GST_MESSAGE_WARNING : 0);
  GstMessage *m = gst_bus_timed_pop_filtered (bus, timeout, type | fatal);
  gchar *text;

  fail_unless (m != NULL, "%s: no %s within %" GST_TIME_FORMAT, what,
      gst_message_type_get_name (type), GST_TIME_ARGS (timeout));
  if (GST_MESSAGE_TYPE (m) & type) {
    gst_message_unref (m);
    return;
  }
  text = avf_message_text (m, NULL, NULL);
  fail ("%s: %s from %s before %s: %s", what, GST_MESSAGE_TYPE_NAME (m),
      GST_MESSAGE_SRC_NAME (m), gst_message_type_get_name (type), text);
  g_free (text);
  gst_message_unref (m);
}

gchar *
avf_wait_end (GstBus * bus, GstClockTime timeout, gboolean warnings)
{
  AvfRun run = {.timeout = timeout,.timeout_is_result = TRUE };
  gchar *problem;

  wait_end (bus, &run);
  problem = avf_run_problem (&run, warnings, NULL, NULL);
  avf_run_clear (&run);
  return problem;
}

void
avf_wait_eos (GstBus * bus, GstClockTime timeout, gboolean warnings_fail,
    const gchar * what)
{
  avf_wait_message (bus, GST_MESSAGE_EOS, timeout, warnings_fail, what);
}

gchar *
avf_pop_error (GstBus * bus, GstClockTime timeout, gboolean with_debug,
    GQuark * domain, gint * code)
{
  GstMessage *m = gst_bus_timed_pop_filtered (bus, timeout,
      GST_MESSAGE_ERROR);
  GError *err = NULL;
  gchar *text;

  if (m == NULL)
    return NULL;
  if (with_debug) {
    text = avf_message_text (m, domain, code);
  } else {
    gst_message_parse_error (m, &err, NULL);
    if (domain)
      *domain = err->domain;
    if (code)
      *code = err->code;
    text = g_strdup (err->message);
    g_error_free (err);
  }
  gst_message_unref (m);
  return text;
}

gchar *
avf_expect_error (GstBus * bus, GstClockTime timeout, GQuark domain,
    gint code)
{
  GQuark d = 0;
  gint c = 0;
  gchar *text = avf_pop_error (bus, timeout, TRUE, &d, &c);

  fail_unless (text != NULL, "no error message on the bus");
  fail_unless (d == domain && c == code, "unexpected error %s %d: %s",
      g_quark_to_string (d), c, text);
  GST_INFO ("error as expected: %s", text);
  return text;
}

void
avf_harness_teardown_with_bus (GstHarness * h, GstBus * bus)
{
  gst_bus_set_flushing (bus, TRUE);
  gst_harness_teardown (h);
  gst_object_unref (bus);
}
