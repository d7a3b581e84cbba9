/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * avattention-score: the pointing measures of a run that is over, from
 * the features.npz that avtensorsink wrote (avattention-run's, or any
 * pipeline's with maps=summary or maps=none) and the clip's truth file
 * (tools/truth.h, the same code as avattention-run's summary).
 *
 *   avattention-score [--frames] FEATURES.npz TRUTH.tsv
 *
 * Prints the pointing accuracy as avattention-run does (and, for a
 * version 2 truth file, the look-alike pointing; with the per-patch map of
 * maps=summary, both-of-two).  --frames prints instead one tab-separated
 * line per truth row, after a header line:
 *
 *   frame  pts_ns  output  pointing  hit  both  lookalike
 *
 * output: the index of the matched frame in FEATURES.npz, -1 when none is
 * within half a frame (matched by its "stream_time", the time the truth's
 * pts_ns are, or by its "pts" where that is -1 or, in files written
 * before avtensorsink had it, absent); pointing: 1 when the row counts in
 * the pointing accuracy (steady, a source, an output); hit: 1 when the
 * output's strongest patch has its centre in a source's grown box, "-"
 * without an output; both: both-of-two's 1 or 0 on a row with two sources
 * that hits one, "-" elsewhere or without a map; lookalike: the truth's (0
 * without the column).  model/evaluate.py reads this table.
 *
 * Exit status: 0 done, 2 bad arguments or an unreadable or malformed file.
 */
#include <glib.h>
#include <locale.h>

#include "npzread.h"
#include "truth.h"

/* One per-frame array of @z: @name, of @dtype, one value per frame (@n
 * frames, or any number when *@n is 0, which then gets it).  NULL and a
 * message when it is not so (@required) or absent (not @required). */
static const NpzArray *
frame_array (const NpzFile * z, const gchar * path, const gchar * name,
    NpzDtype dtype, guint64 * n, gboolean required, gboolean * ok)
{
  const NpzArray *a = npz_find (z, name);

  if (a == NULL) {
    if (required) {
      g_printerr ("avattention-score: %s has no \"%s\" (features of "
          "avtensorsink with maps=summary or maps=none)\n", path, name);
      *ok = FALSE;
    }
    return NULL;
  }
  if (a->dtype != dtype || a->ndim < 1 || (*n > 0 && a->shape[0] != *n)) {
    g_printerr ("avattention-score: %s: \"%s\" is not a %s array of one "
        "row per frame\n", path, name, dtype == NPZ_I64 ? "int64" :
        dtype == NPZ_I32 ? "int32" : "float");
    *ok = FALSE;
    return NULL;
  }
  *n = a->shape[0];
  return a;
}

/* The outputs of FEATURES.npz, with their maps (@maps, freed by the
 * caller) when it has patch_weights; NULL after saying what is wrong. */
static GArray *
read_outputs (const gchar * path, gfloat ** maps)
{
  NpzFile z;
  char err[512];
  const NpzArray *pts, *st, *dur, *col, *row, *grid, *pw;
  guint64 n = 0;
  gboolean ok = TRUE;
  GArray *outputs = NULL;
  guint columns = 0, rows = 0;

  *maps = NULL;
  if (!npz_open (&z, path, err, sizeof err)) {
    g_printerr ("avattention-score: %s\n", err);
    return NULL;
  }
  pts = frame_array (&z, path, "pts", NPZ_I64, &n, TRUE, &ok);
  /* absent in files written before avtensorsink had it */
  st = ok ? frame_array (&z, path, "stream_time", NPZ_I64, &n, FALSE, &ok) :
      NULL;
  dur = ok ? frame_array (&z, path, "duration", NPZ_I64, &n, FALSE, &ok) :
      NULL;
  col = ok ? frame_array (&z, path, "strongest_column", NPZ_I32, &n, TRUE,
      &ok) : NULL;
  row = ok ? frame_array (&z, path, "strongest_row", NPZ_I32, &n, TRUE,
      &ok) : NULL;
  grid = ok ? npz_find (&z, "grid_shape") : NULL;
  if (ok && (grid == NULL || grid->dtype != NPZ_I32 || grid->numel != 2
          || npz_i32 (grid, 0) <= 0 || npz_i32 (grid, 1) <= 0)) {
    g_printerr ("avattention-score: %s has no \"grid_shape\" of two "
        "positive int32 (rows, columns)\n", path);
    ok = FALSE;
  }
  if (ok) {
    rows = (guint) npz_i32 (grid, 0);
    columns = (guint) npz_i32 (grid, 1);
  }
  pw = npz_find (&z, "patch_weights");
  if (ok && pw != NULL && ((pw->dtype != NPZ_F32 && pw->dtype != NPZ_F16)
          || pw->ndim != 2 || pw->shape[0] != n
          || pw->shape[1] != (guint64) columns * rows)) {
    g_printerr ("avattention-score: %s: \"patch_weights\" is not a float "
        "array of one map of %u x %u patches per frame\n", path, rows,
        columns);
    ok = FALSE;
  }
  if (!ok)
    goto done;

  if (pw != NULL) {
    *maps = g_new (gfloat, MAX (pw->numel, 1));
    for (guint64 i = 0; i < pw->numel; i++)
      (*maps)[i] = pw->dtype == NPZ_F32 ? npz_f32 (pw, i) : npz_f16 (pw, i);
  }
  outputs = g_array_sized_new (FALSE, TRUE, sizeof (AvfTruthOutput), n);
  for (guint64 i = 0; i < n; i++) {
    AvfTruthOutput o = { 0 };
    const gint64 p = npz_i64 (pts, i), d = dur ? npz_i64 (dur, i) : -1;
    const gint64 t = st ? npz_i64 (st, i) : -1;
    const gint32 c = npz_i32 (col, i), r = npz_i32 (row, i);

    /* the truth's times are stream times; the pts where it is unknown */
    o.time = t >= 0 ? (GstClockTime) t : p >= 0 ? (GstClockTime) p :
        GST_CLOCK_TIME_NONE;
    o.duration = d >= 0 ? (GstClockTime) d : GST_CLOCK_TIME_NONE;
    o.has_patch = c >= 0 && r >= 0 && (guint) c < columns
        && (guint) r < rows;
    o.column = o.has_patch ? (guint) c : 0;
    o.row = o.has_patch ? (guint) r : 0;
    o.grid_columns = columns;
    o.grid_rows = rows;
    o.map = *maps ? *maps + i * columns * rows : NULL;
    g_array_append_val (outputs, o);
  }

done:
  npz_close (&z);
  return outputs;
}

static void
print_frames (const AvfTruth * truth, GArray * outputs)
{
  AvfTruthScore *s = avf_truth_score (truth, outputs);

  g_print ("frame\tpts_ns\toutput\tpointing\thit\tboth\tlookalike\n");
  for (guint i = 0; i < truth->rows->len; i++) {
    const AvfTruthRow *r = &g_array_index (truth->rows, AvfTruthRow, i);

    g_print ("%" G_GUINT64_FORMAT "\t%" G_GUINT64_FORMAT "\t%d\t%d\t%s\t%s"
        "\t%d\n", r->frame, (guint64) r->pts, s[i].output, s[i].pointing,
        s[i].output < 0 ? "-" : s[i].hit ? "1" : "0",
        s[i].both < 0 ? "-" : s[i].both ? "1" : "0", r->lookalike);
  }
  g_free (s);
}

static void
print_summary (const AvfTruth * truth, GArray * outputs, gboolean maps)
{
  AvfPointing p = avf_truth_pointing (truth, outputs);

  avf_truth_print_pointing (truth, &p);
  if (maps && p.both_frames > 0)
    g_print ("both-of-two: %.3f (%u of %u steady frames with two sources "
        "that hit one)\n", (gdouble) p.both_hits / p.both_frames,
        p.both_hits, p.both_frames);
  else if (maps)
    g_print ("both-of-two: none (no steady frame with two sources that "
        "hits one)\n");
}

int
main (int argc, char **argv)
{
  gboolean frames = FALSE;
  const GOptionEntry entries[] = {
    {"frames", 0, 0, G_OPTION_ARG_NONE, &frames,
        "one line per truth row instead of the summary", NULL},
    {NULL}
  };
  GOptionContext *ctx;
  GError *err = NULL;
  AvfTruth *truth = NULL;
  GArray *outputs = NULL;
  gfloat *maps = NULL;
  gint status = 0;

  setlocale (LC_CTYPE, "");
  ctx = g_option_context_new ("FEATURES.npz TRUTH.tsv");
  g_option_context_set_summary (ctx, "Prints the pointing accuracy of the "
      "run that wrote FEATURES.npz against the clip's truth file.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &err) || argc != 3) {
    g_printerr ("avattention-score: %s\nusage: avattention-score [--frames] "
        "FEATURES.npz TRUTH.tsv\n", err ? err->message :
        "needs two files");
    g_clear_error (&err);
    g_option_context_free (ctx);
    return 2;
  }
  g_option_context_free (ctx);

  truth = avf_truth_load (argv[2], &err);
  if (truth == NULL) {
    g_printerr ("avattention-score: %s\n", err->message);
    g_clear_error (&err);
    return 2;
  }
  outputs = read_outputs (argv[1], &maps);
  if (outputs == NULL)
    status = 2;
  else if (frames)
    print_frames (truth, outputs);
  else
    print_summary (truth, outputs, maps != NULL);

  if (outputs)
    g_array_unref (outputs);
  g_free (maps);
  avf_truth_free (truth);
  return status;
}
