/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Checks of written files with numpy (/usr/bin/python3), for the element
 * tests (gst-check).
 */
#ifndef AVF_NUMPY_H
#define AVF_NUMPY_H

#include <glib.h>

G_BEGIN_DECLS

/* TRUE when /usr/bin/python3 imports numpy (asked once). */
gboolean avf_have_numpy (void);

/* Runs @script with /usr/bin/python3 -c and the arguments (@arg2 may be
 * NULL); fails the test when it fails.  Returns FALSE (and says so) when
 * numpy is not installed. */
gboolean avf_run_numpy (const gchar * script, const gchar * arg1,
    const gchar * arg2);

G_END_DECLS
#endif /* AVF_NUMPY_H */
