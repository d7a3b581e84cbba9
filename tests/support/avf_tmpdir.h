/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Temporary folders of the tests (core and element suites; plain C, no
 * GLib): make one, remove one with everything in it, and a fixture that
 * gives each test program (or each test) its own.
 */
#ifndef AVF_TMPDIR_H
#define AVF_TMPDIR_H

#ifdef __cplusplus
extern "C" {
#endif

/* A new folder $TMPDIR/@prefix-XXXXXX (/tmp without TMPDIR); free () or
 * g_free () it.  Aborts the program when it cannot be made. */
char *avf_tmp_dir_new (const char *prefix);

/* Removes the folder @dir of avf_tmp_dir_new with everything in it, and
 * frees @dir. */
void avf_tmp_dir_free (char *dir);

/* Removes @path: a file, a symbolic link (not what it points to), or a
 * folder with everything in it.  What cannot be removed stays. */
void avf_remove_tree (const char *path);

/* The fixture: avf_tmp_setup makes a new folder avf_tmp named after the
 * program ("avf-" and its name), avf_tmp_teardown removes it with all in
 * it.  For tcase_add_unchecked_fixture (one folder for all the tests of
 * the case, removed in the parent process: nothing stays behind when a
 * test fails) or tcase_add_checked_fixture (one per test). */
extern char *avf_tmp;
void avf_tmp_setup (void);
void avf_tmp_teardown (void);

/* @name in avf_tmp; free () or g_free () it. */
char *avf_tmp_path (const char *name);

#ifdef __cplusplus
}
#endif
#endif /* AVF_TMPDIR_H */
