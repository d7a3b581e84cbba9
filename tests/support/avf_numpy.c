/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Checks of written files with numpy (avf_numpy.h).
 */
#include "avf_numpy.h"

#include <gst/check/gstcheck.h>

gboolean
avf_have_numpy (void)
{
  static gint have = -1;

  if (have < 0) {
    gchar *argv[] = { (gchar *) "/usr/bin/python3", (gchar *) "-c",
      (gchar *) "import numpy", NULL
    };
    gint status = 1;

    have = g_spawn_sync (NULL, argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL |
        G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, NULL, NULL, &status, NULL)
        && g_spawn_check_wait_status (status, NULL);
  }
  return have;
}

gboolean
avf_run_numpy (const gchar * script, const gchar * arg1, const gchar * arg2)
{
  gchar *argv[] = { (gchar *) "/usr/bin/python3", (gchar *) "-c",
    (gchar *) script, (gchar *) arg1, (gchar *) arg2, NULL
  };
  gchar *out = NULL, *errs = NULL;
  gint status = 1;
  GError *err = NULL;

  if (!avf_have_numpy ()) {
    g_print ("numpy.load check skipped: /usr/bin/python3 has no numpy\n");
    return FALSE;
  }
  fail_unless (g_spawn_sync (NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL,
          &out, &errs, &status, &err), "%s", err ? err->message : "");
  fail_unless (g_spawn_check_wait_status (status, NULL),
      "numpy check failed:\n%s%s", out, errs);
  g_free (out);
  g_free (errs);
  return TRUE;
}
