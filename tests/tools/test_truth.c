/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The pointing measures of tools/truth.c on hand-made truth files and
 * outputs: which frames count, the match within half a frame, where a
 * patch's centre lands in a 16:9 and a 4:3 frame, the box grown by
 * max(W, H) / 28, a frame without audio, look-alike frames and
 * both-of-two.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "truth.h"

#define HEADER "frame\tpts_ns\tsteady\tnegative\tsources\tkinds\tboxes"

/* Loads @text as a truth file. */
static AvfTruth *
load (const gchar * text)
{
  GError *err = NULL;
  gchar *path = NULL;
  gint fd = g_file_open_tmp ("avf-truth-XXXXXX.tsv", &path, &err);
  AvfTruth *t;

  g_assert_no_error (err);
  g_assert_true (g_file_set_contents (path, text, -1, &err));
  g_assert_no_error (err);
  close (fd);
  t = avf_truth_load (path, &err);
  g_assert_no_error (err);
  g_unlink (path);
  g_free (path);
  return t;
}

static void
add_output (GArray * outputs, GstClockTime time, gint column, gint row,
    const gfloat * map)
{
  AvfTruthOutput o = { 0 };

  o.time = time;
  o.duration = GST_CLOCK_TIME_NONE;
  o.has_patch = column >= 0;
  o.column = column >= 0 ? (guint) column : 0;
  o.row = row >= 0 ? (guint) row : 0;
  o.grid_columns = o.grid_rows = 14;
  o.map = map;
  g_array_append_val (outputs, o);
}

/* 1280x720: patch (3, 2) has its centre at (320, 128.57); the boxes are
 * grown by 1280 / 28 = 45.71 on each side, across and down. */
static void
test_grow_16x9 (void)
{
  AvfTruth *t = load ("# v1 width=1280 height=720 fps=30/1\n" HEADER "\n"
      "0\t0\t1\t0\t0\t0\t365,100,500,200\n"     /* 320 >= 365 - 45.71 */
      "1\t33333333\t1\t0\t0\t0\t366,100,500,200\n"      /* 320 < 320.29 */
      "2\t66666667\t1\t0\t0\t0\t300,174,400,300\n"      /* y: 128.57 >= 128.29 */
      "3\t100000000\t1\t0\t0\t0\t300,175,400,300\n"     /* 128.57 < 129.29 */
      "4\t133333333\t1\t0\t0,1\t0,1\t0,0,10,10;200,0,274.3,100\n");
  GArray *outputs = g_array_new (FALSE, TRUE, sizeof (AvfTruthOutput));
  AvfTruthScore *s;
  AvfPointing p;

  for (guint i = 0; i < 5; i++)
    add_output (outputs, gst_util_uint64_scale (i, GST_SECOND, 30), 3, 2,
        NULL);
  s = avf_truth_score (t, outputs);
  g_assert_true (s[0].pointing && s[0].hit);
  g_assert_true (s[1].pointing && !s[1].hit);
  g_assert_true (s[2].pointing && s[2].hit);
  g_assert_true (s[3].pointing && !s[3].hit);
  g_assert_true (s[4].pointing && s[4].hit);        /* the second box */
  g_assert_cmpint (s[4].both, ==, -1);  /* no map */
  for (guint i = 0; i < 5; i++)
    g_assert_cmpint (s[i].output, ==, (gint) i);
  p = avf_truth_pointing (t, outputs);
  g_assert_cmpuint (p.frames, ==, 5);
  g_assert_cmpuint (p.hits, ==, 3);
  g_assert_cmpuint (p.unmatched, ==, 0);
  g_assert_false (t->has_lookalike);
  g_free (s);
  g_array_unref (outputs);
  avf_truth_free (t);
}

/* 640x480: patch (3, 2) at (160, 85.71); grown by 640 / 28 = 22.86 down
 * too (not by 480 / 28). */
static void
test_grow_4x3 (void)
{
  AvfTruth *t = load ("# v1 width=640 height=480 fps=25/1\n" HEADER "\n"
      "0\t0\t1\t0\t0\t0\t0,108.5,300,200\n"     /* 85.71 >= 85.64 */
      "1\t40000000\t1\t0\t0\t0\t0,108.6,300,200\n"      /* 85.71 < 85.74 */
      "2\t80000000\t1\t0\t0\t0\t182.8,0,300,200\n"      /* 160 >= 159.94 */
      "3\t120000000\t1\t0\t0\t0\t182.9,0,300,200\n");   /* 160 < 160.04 */
  GArray *outputs = g_array_new (FALSE, TRUE, sizeof (AvfTruthOutput));
  AvfTruthScore *s;

  for (guint i = 0; i < 4; i++)
    add_output (outputs, i * 40 * GST_MSECOND, 3, 2, NULL);
  s = avf_truth_score (t, outputs);
  g_assert_true (s[0].hit);
  g_assert_false (s[1].hit);
  g_assert_true (s[2].hit);
  g_assert_false (s[3].hit);
  g_free (s);
  g_array_unref (outputs);
  avf_truth_free (t);
}

/* Which rows count: steady with a source and an output; a frame without
 * audio counts and misses; outputs in any order, matched within half a
 * frame (16666666 ns at 30 fps), the later of two as near. */
static void
test_frames_that_count (void)
{
  AvfTruth *t = load ("# v1 width=320 height=240 fps=30/1\n" HEADER "\n"
      "0\t0\t0\t0\t0\t0\t0,0,320,240\n" /* not steady */
      "1\t33333333\t1\t1\t-\t-\t-\n"    /* no source */
      "2\t66666667\t1\t0\t0\t0\t0,0,320,240\n"  /* no audio */
      "3\t100000000\t1\t0\t0\t0\t0,0,320,240\n" /* output 16666666 late */
      "4\t200000000\t1\t0\t0\t0\t0,0,320,240\n" /* output 16666667 late */
      "5\t300000000\t1\t0\t0\t0\t0,0,160,240\n");       /* a tie */
  GArray *outputs = g_array_new (FALSE, TRUE, sizeof (AvfTruthOutput));
  AvfTruthScore *s;
  AvfPointing p;

  add_output (outputs, 300000000 + 10, 13, 0, NULL);    /* 0: later, misses */
  add_output (outputs, 216666667, 0, 0, NULL);  /* 1 */
  add_output (outputs, 116666666, 0, 0, NULL);  /* 2 */
  add_output (outputs, 66666667, -1, -1, NULL); /* 3: no audio */
  add_output (outputs, 33333333, 0, 0, NULL);   /* 4 */
  add_output (outputs, 0, 0, 0, NULL);  /* 5 */
  add_output (outputs, 300000000 - 10, 0, 0, NULL);     /* 6: earlier, hits */
  s = avf_truth_score (t, outputs);
  g_assert_cmpint (s[0].output, ==, 5);
  g_assert_true (!s[0].pointing && s[0].hit);
  g_assert_cmpint (s[1].output, ==, 4);
  g_assert_true (!s[1].pointing && !s[1].hit);
  g_assert_cmpint (s[2].output, ==, 3);
  g_assert_true (s[2].pointing && !s[2].hit);
  g_assert_cmpint (s[3].output, ==, 2);
  g_assert_true (s[3].pointing && s[3].hit);
  g_assert_cmpint (s[4].output, ==, -1);
  g_assert_false (s[4].pointing);
  g_assert_cmpint (s[5].output, ==, 0);
  g_assert_true (s[5].pointing && !s[5].hit);
  p = avf_truth_pointing (t, outputs);
  g_assert_cmpuint (p.frames, ==, 3);
  g_assert_cmpuint (p.hits, ==, 1);
  g_assert_cmpuint (p.unmatched, ==, 1);
  g_free (s);
  g_array_unref (outputs);
  avf_truth_free (t);
}

/* Without the truth's frame rate: half the output's duration. */
static void
test_half_of_duration (void)
{
  AvfTruth *t = load ("# v1 width=320 height=240\n" HEADER "\n"
      "0\t100000000\t1\t0\t0\t0\t0,0,320,240\n"
      "1\t200000000\t1\t0\t0\t0\t0,0,320,240\n");
  GArray *outputs = g_array_new (FALSE, TRUE, sizeof (AvfTruthOutput));
  AvfTruthScore *s;

  add_output (outputs, 120000000, 0, 0, NULL);
  add_output (outputs, 230000000, 0, 0, NULL);
  for (guint i = 0; i < 2; i++)
    g_array_index (outputs, AvfTruthOutput, i).duration = 50 * GST_MSECOND;
  s = avf_truth_score (t, outputs);
  g_assert_cmpint (s[0].output, ==, 0); /* 20 ms <= 25 ms */
  g_assert_cmpint (s[1].output, ==, -1);        /* 30 ms > 25 ms */
  g_free (s);
  g_array_unref (outputs);
  avf_truth_free (t);
}

/* Version 2's column lookalike; both-of-two from the map: the strongest
 * patch outside the grown box that the strongest patch hit. */
static void
test_lookalike_and_both (void)
{
  AvfTruth *t = load ("# v2 width=1400 height=1400 fps=10/1 world=2\n"
      HEADER "\tlookalike\n"
      "0\t0\t1\t0\t0\t0\t0,0,100,100\t1\n"
      "1\t100000000\t1\t0\t0\t0\t0,0,100,100\t1\n"
      "2\t200000000\t1\t0\t0,1\t0,1\t0,0,100,100;1000,1000,1100,1100\t0\n"
      "3\t300000000\t1\t0\t0,1\t0,1\t0,0,100,100;1000,1000,1100,1100\t0\n"
      "4\t400000000\t1\t0\t0,1\t0,1\t0,0,100,100;1000,1000,1100,1100\t0\n");
  GArray *outputs = g_array_new (FALSE, TRUE, sizeof (AvfTruthOutput));
  gfloat *map_b = g_new0 (gfloat, 196), *map_c = g_new0 (gfloat, 196);
  AvfTruthScore *s;
  AvfPointing p;

  /* patch centres at 50 + 100 k; grown by 50: patch (0, 0) is in box 0,
   * patch (1, 1) at (150, 150) is in it too, (10, 10) at (1050, 1050) in
   * box 1 and (5, 5) at (550, 550) in neither */
  map_b[0] = 9;
  map_b[1 * 14 + 1] = 8;        /* inside box 0's grown box: not looked at */
  map_b[10 * 14 + 10] = 7;      /* the strongest outside it: box 1 */
  map_b[5 * 14 + 5] = 6;
  map_c[0] = 9;
  map_c[5 * 14 + 5] = 7;        /* the strongest outside: in neither */
  map_c[10 * 14 + 10] = 6;
  add_output (outputs, 0, 0, 0, NULL);
  add_output (outputs, 100000000, 13, 13, NULL);
  add_output (outputs, 200000000, 0, 0, map_b);
  add_output (outputs, 300000000, 0, 0, map_c);
  add_output (outputs, 400000000, 5, 5, map_b); /* hits neither */
  s = avf_truth_score (t, outputs);
  g_assert_true (t->has_lookalike);
  g_assert_true (s[0].hit && !s[1].hit);
  g_assert_cmpint (s[0].both, ==, -1);
  g_assert_cmpint (s[2].both, ==, 1);
  g_assert_cmpint (s[3].both, ==, 0);
  g_assert_cmpint (s[4].both, ==, -1);
  p = avf_truth_pointing (t, outputs);
  g_assert_cmpuint (p.lookalike_frames, ==, 2);
  g_assert_cmpuint (p.lookalike_hits, ==, 1);
  g_assert_cmpuint (p.both_frames, ==, 2);
  g_assert_cmpuint (p.both_hits, ==, 1);
  g_assert_cmpuint (p.frames, ==, 5);
  g_assert_cmpuint (p.hits, ==, 3);
  g_free (s);
  g_free (map_b);
  g_free (map_c);
  g_array_unref (outputs);
  avf_truth_free (t);
}

static void
test_bad_lookalike (void)
{
  GError *err = NULL;
  gchar *path = NULL;
  gint fd = g_file_open_tmp ("avf-truth-XXXXXX.tsv", &path, &err);

  close (fd);
  g_assert_true (g_file_set_contents (path, "# w width=10 height=10\n"
          HEADER "\tlookalike\n0\t0\t1\t0\t0\t0\t1,1,2,2\t2\n", -1, &err));
  g_assert_null (avf_truth_load (path, &err));
  g_assert_nonnull (err);
  g_assert_nonnull (strstr (err->message, ":3: lookalike \"2\" is not 0 or "
          "1"));
  g_clear_error (&err);
  g_unlink (path);
  g_free (path);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/truth/grow-16x9", test_grow_16x9);
  g_test_add_func ("/truth/grow-4x3", test_grow_4x3);
  g_test_add_func ("/truth/frames-that-count", test_frames_that_count);
  g_test_add_func ("/truth/half-of-duration", test_half_of_duration);
  g_test_add_func ("/truth/lookalike-and-both", test_lookalike_and_both);
  g_test_add_func ("/truth/bad-lookalike", test_bad_lookalike);
  return g_test_run ();
}
