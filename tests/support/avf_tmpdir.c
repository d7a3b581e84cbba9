/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Temporary folders of the tests (avf_tmpdir.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* program_invocation_short_name */
#endif

#include "avf_tmpdir.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *avf_tmp = NULL;

static char *
path_join (const char *dir, const char *name)
{
  size_t n = strlen (dir) + 1 + strlen (name) + 1;
  char *p = malloc (n);

  if (p == NULL)
    abort ();
  snprintf (p, n, "%s/%s", dir, name);
  return p;
}

char *
avf_tmp_dir_new (const char *prefix)
{
  const char *base = getenv ("TMPDIR");
  char *tmpl, *name;
  size_t n;

  if (base == NULL || base[0] == '\0')
    base = "/tmp";
  n = strlen (prefix) + sizeof "-XXXXXX";
  name = malloc (n);
  if (name == NULL)
    abort ();
  snprintf (name, n, "%s-XXXXXX", prefix);
  tmpl = path_join (base, name);
  free (name);
  if (mkdtemp (tmpl) == NULL) {
    fprintf (stderr, "could not make a temporary directory %s: %s\n", tmpl,
        strerror (errno));
    abort ();
  }
  return tmpl;
}

static int
remove_one (const char *path, const struct stat *sb, int flag,
    struct FTW *ftw)
{
  (void) sb;
  (void) flag;
  (void) ftw;
  remove (path);
  return 0;                     /* go on with the others */
}

void
avf_remove_tree (const char *path)
{
  /* depth first (the contents before their folder), links not followed */
  if (nftw (path, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
    remove (path);
}

void
avf_tmp_dir_free (char *dir)
{
  if (dir == NULL)
    return;
  avf_remove_tree (dir);
  free (dir);
}

void
avf_tmp_setup (void)
{
  size_t n = strlen (program_invocation_short_name) + sizeof "avf-";
  char *prefix = malloc (n);

  if (prefix == NULL)
    abort ();
  snprintf (prefix, n, "avf-%s", program_invocation_short_name);
  avf_tmp = avf_tmp_dir_new (prefix);
  free (prefix);
}

void
avf_tmp_teardown (void)
{
  avf_tmp_dir_free (avf_tmp);
  avf_tmp = NULL;
}

char *
avf_tmp_path (const char *name)
{
  if (avf_tmp == NULL) {
    fprintf (stderr, "avf_tmp_path (%s) without avf_tmp_setup\n", name);
    abort ();
  }
  return path_join (avf_tmp, name);
}
