/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Running pipelines in the element tests (gst-check): one run to
 * end-of-stream or the first error that keeps the ERROR and WARNING
 * messages, waits for one message on a bus, the text of a message, and
 * the end of a harness whose element posts to a bus of the test.
 * Timeouts are taken as given (callers scale them with avf_slowdown ()
 * where they did).
 */
#ifndef AVF_PIPELINE_H
#define AVF_PIPELINE_H

#include <gst/gst.h>
#include <gst/check/gstharness.h>

G_BEGIN_DECLS

/* One run of a pipeline: what to do (zero is the default) and what
 * happened.  avf_run_clear frees what it holds. */
typedef struct
{
  /* in */
  GstClockTime timeout;         /* for EOS or an ERROR in all; 0: 300 s,
                                 * GST_CLOCK_TIME_NONE: no limit */
  gboolean timeout_is_result;   /* a timeout ends the run with timed_out
                                 * set; otherwise it fails the test (after
                                 * stopping the pipeline) */
  gboolean keep_state;          /* the pipeline stays as it is at the end
                                 * (the caller sets it to NULL) */
  /* called once the pipeline went to PLAYING (not when that failed) */
  void (*started) (GstElement * pipeline, gpointer user_data);
  gpointer user_data;
  const gchar *what;            /* names the run in a failed test */

  /* out */
  gboolean eos;                 /* end-of-stream came */
  gboolean timed_out;           /* nothing ended the run in time */
  GList *messages;              /* the ERROR and WARNING messages, oldest
                                 * first */
} AvfRun;

/* Sets @pipeline PLAYING, calls run->started, waits up to run->timeout in
 * all for end-of-stream or the first ERROR, keeping the ERROR and WARNING
 * messages (added to those run->messages holds), takes those still on the
 * bus (also those of a state change that failed) and sets the pipeline to
 * NULL.  A timeout sets run->timed_out or, without timeout_is_result,
 * fails the test. */
void avf_run_pipeline (GstElement * pipeline, AvfRun * run);

/* What went wrong in @run: its first ERROR (or, with @warnings, ERROR or
 * WARNING) message as avf_message_text gives it, with that message's
 * domain and code (optional); else after a timeout "no EOS and no error
 * within ..."; else without EOS "no EOS and no error"; else NULL.
 * g_free. */
gchar *avf_run_problem (const AvfRun * run, gboolean warnings,
    GQuark * domain, gint * code);

/* Fails the test, naming @what, on any message of @run (ERROR or
 * WARNING). */
void avf_run_fail_on_messages (const AvfRun * run, const gchar * what);

/* Frees the messages of @run (eos and timed_out stay). */
void avf_run_clear (AvfRun * run);

/* Waits up to @timeout (GST_CLOCK_TIME_NONE: no limit) for a message of
 * @type on @bus; fails the test, naming @what, when none comes in time or
 * an ERROR (or, with @warnings_fail, a WARNING) comes first. */
void avf_wait_message (GstBus * bus, GstMessageType type,
    GstClockTime timeout, gboolean warnings_fail, const gchar * what);

/* Waits up to @timeout for end-of-stream or the first ERROR on @bus, as
 * avf_run_pipeline does.  NULL at end-of-stream (with @warnings: and no WARNING
 * before it), else the problem as avf_run_problem gives it: the first
 * ERROR (or, with @warnings, ERROR or WARNING), or no EOS in time.
 * g_free. */
gchar *avf_wait_end (GstBus * bus, GstClockTime timeout, gboolean warnings);

/* avf_wait_message for end-of-stream. */
void avf_wait_eos (GstBus * bus, GstClockTime timeout,
    gboolean warnings_fail, const gchar * what);

/* "message (debug)" of an ERROR or WARNING message; its domain and code
 * (optional).  g_free. */
gchar *avf_message_text (GstMessage * m, GQuark * domain, gint * code);

/* The first ERROR on @bus, waiting up to @timeout for it (0: only one
 * already there): its message, with @with_debug as "message (debug)"
 * (avf_message_text); its domain and code (optional).  NULL when none
 * came.  g_free. */
gchar *avf_pop_error (GstBus * bus, GstClockTime timeout,
    gboolean with_debug, GQuark * domain, gint * code);

/* The first ERROR on @bus within @timeout (0: already there), which must
 * be of @domain and @code: its "message (debug)".  Otherwise the test
 * fails.  g_free. */
gchar *avf_expect_error (GstBus * bus, GstClockTime timeout, GQuark domain,
    gint code);

/* Tears down @h, whose element posts to @bus, and unrefs @bus: the
 * messages (they hold references to the element, which holds the bus) are
 * dropped first. */
void avf_harness_teardown_with_bus (GstHarness * h, GstBus * bus);

G_END_DECLS
#endif /* AVF_PIPELINE_H */
