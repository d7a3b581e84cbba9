/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "truth.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TRUTH_ERROR (g_quark_from_static_string ("avf-truth-error"))

/* the required columns, then the optional ones */
static const gchar *const columns[] = {
  "frame", "pts_ns", "steady", "negative", "sources", "kinds", "boxes",
  "lookalike"
};

enum
{
  COL_FRAME, COL_PTS, COL_STEADY, COL_NEGATIVE, COL_SOURCES, COL_KINDS,
  COL_BOXES, N_REQUIRED, COL_LOOKALIKE = N_REQUIRED, N_COLS
};

static void
row_clear (gpointer p)
{
  AvfTruthRow *r = p;
  g_free (r->boxes);
}

void
avf_truth_free (AvfTruth * t)
{
  if (t == NULL)
    return;
  if (t->rows)
    g_array_unref (t->rows);
  g_free (t->path);
  g_free (t);
}

/* A whole unsigned decimal integer no larger than @max. */
static gboolean
parse_uint (const gchar * s, guint64 max, guint64 * out)
{
  gchar *end = NULL;
  guint64 v;

  if (s[0] < '0' || s[0] > '9')
    return FALSE;
  errno = 0;
  v = g_ascii_strtoull (s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v > max)
    return FALSE;
  *out = v;
  return TRUE;
}

/* A whole finite decimal number. */
static gboolean
parse_double (const gchar * s, gdouble * out)
{
  gchar *end = NULL;
  gdouble v;

  if (s[0] == '\0' || g_ascii_isspace (s[0]))
    return FALSE;
  v = g_ascii_strtod (s, &end);
  if (end == s || *end != '\0' || !isfinite (v))
    return FALSE;
  *out = v;
  return TRUE;
}

/* "-" (0 items) or a comma list of unsigned integers; the count. */
static gboolean
parse_id_list (const gchar * s, guint * n)
{
  gchar **items;
  gboolean ok = TRUE;
  guint64 v;

  *n = 0;
  if (strcmp (s, "-") == 0)
    return TRUE;
  items = g_strsplit (s, ",", -1);
  for (guint i = 0; items[i] && ok; i++, (*n)++)
    ok = parse_uint (items[i], G_MAXUINT32, &v);
  g_strfreev (items);
  return ok && *n > 0;
}

/* Reads the key=value words of a comment line: width, height, fps. */
static gboolean
parse_comment (AvfTruth * t, const gchar * line, guint lineno,
    GError ** error)
{
  gchar **words = g_strsplit_set (line + 1, " \t", -1);
  gboolean ok = TRUE;

  for (guint i = 0; words[i] && ok; i++) {
    const gchar *w = words[i];
    guint64 v;

    if (g_str_has_prefix (w, "width=") && t->width == 0) {
      ok = parse_uint (w + 6, 1 << 20, &v) && v > 0;
      t->width = (gint) v;
    } else if (g_str_has_prefix (w, "height=") && t->height == 0) {
      ok = parse_uint (w + 7, 1 << 20, &v) && v > 0;
      t->height = (gint) v;
    } else if (g_str_has_prefix (w, "fps=") && t->fps_n == 0) {
      gchar **f = g_strsplit (w + 4, "/", 2);
      guint64 n, d = 1;

      ok = f[0] && parse_uint (f[0], G_MAXINT, &n) && n > 0
          && (f[1] == NULL || (parse_uint (f[1], G_MAXINT, &d) && d > 0));
      if (ok) {
        t->fps_n = (gint) n;
        t->fps_d = (gint) d;
      }
      g_strfreev (f);
    } else {
      continue;
    }
    if (!ok)
      g_set_error (error, TRUTH_ERROR, 0, "%s:%u: \"%s\" is not a positive "
          "%s", t->path, lineno, w, g_str_has_prefix (w, "fps=") ?
          "frame rate (N or N/D)" : "number of pixels");
  }
  g_strfreev (words);
  return ok;
}

static gboolean
parse_header (gint idx[N_COLS], gchar ** fields, const gchar * path,
    guint lineno, GError ** error)
{
  for (guint c = 0; c < N_COLS; c++) {
    idx[c] = -1;
    for (guint i = 0; fields[i]; i++)
      if (strcmp (fields[i], columns[c]) == 0)
        idx[c] = (gint) i;
    if (idx[c] < 0 && c < N_REQUIRED) {
      g_set_error (error, TRUTH_ERROR, 0, "%s:%u: the header line has no "
          "column \"%s\" (it needs frame, pts_ns, steady, negative, "
          "sources, kinds and boxes)", path, lineno, columns[c]);
      return FALSE;
    }
  }
  return TRUE;
}

#define ROW_FAIL(...) G_STMT_START {                                    \
    gchar *what_ = g_strdup_printf (__VA_ARGS__);                       \
    g_set_error (error, TRUTH_ERROR, 0, "%s:%u: %s", t->path, lineno,   \
        what_);                                                         \
    g_free (what_);                                                     \
    goto fail;                                                          \
  } G_STMT_END

static gboolean
parse_row (AvfTruth * t, gchar ** f, guint n_fields, const gint idx[N_COLS],
    guint n_header, guint lineno, GError ** error)
{
  AvfTruthRow r = { 0 };
  guint64 v;
  guint n_kinds;
  gchar **boxes = NULL;

  if (n_fields != n_header)
    ROW_FAIL ("%u tab-separated fields, the header line has %u", n_fields,
        n_header);
  if (!parse_uint (f[idx[COL_FRAME]], G_MAXINT64, &r.frame))
    ROW_FAIL ("frame \"%s\" is not a frame number", f[idx[COL_FRAME]]);
  if (!parse_uint (f[idx[COL_PTS]], G_MAXINT64, &v))
    ROW_FAIL ("pts_ns \"%s\" is not a time in nanoseconds",
        f[idx[COL_PTS]]);
  r.pts = v;
  if (!parse_uint (f[idx[COL_STEADY]], 1, &v))
    ROW_FAIL ("steady \"%s\" is not 0 or 1", f[idx[COL_STEADY]]);
  r.steady = v == 1;
  if (!parse_uint (f[idx[COL_NEGATIVE]], 1, &v))
    ROW_FAIL ("negative \"%s\" is not 0 or 1", f[idx[COL_NEGATIVE]]);
  r.negative = v == 1;
  if (idx[COL_LOOKALIKE] >= 0) {
    if (!parse_uint (f[idx[COL_LOOKALIKE]], 1, &v))
      ROW_FAIL ("lookalike \"%s\" is not 0 or 1", f[idx[COL_LOOKALIKE]]);
    r.lookalike = v == 1;
  }
  if (!parse_id_list (f[idx[COL_SOURCES]], &r.n_sources))
    ROW_FAIL ("sources \"%s\" is not \"-\" or a comma list of object ids",
        f[idx[COL_SOURCES]]);
  if (!parse_id_list (f[idx[COL_KINDS]], &n_kinds))
    ROW_FAIL ("kinds \"%s\" is not \"-\" or a comma list of kinds",
        f[idx[COL_KINDS]]);
  if (n_kinds != r.n_sources)
    ROW_FAIL ("%u kinds for %u sources", n_kinds, r.n_sources);

  if (strcmp (f[idx[COL_BOXES]], "-") == 0) {
    if (r.n_sources != 0)
      ROW_FAIL ("boxes \"-\" for %u sources", r.n_sources);
  } else {
    guint n = 0;

    boxes = g_strsplit (f[idx[COL_BOXES]], ";", -1);
    n = g_strv_length (boxes);
    if (n != r.n_sources)
      ROW_FAIL ("%u boxes for %u sources", n, r.n_sources);
    r.boxes = g_new (gdouble, 4 * (gsize) n);
    for (guint b = 0; b < n; b++) {
      gchar **xy = g_strsplit (boxes[b], ",", -1);
      gboolean ok = g_strv_length (xy) == 4;

      for (guint k = 0; k < 4 && ok; k++)
        ok = parse_double (xy[k], &r.boxes[4 * b + k]);
      ok = ok && r.boxes[4 * b] <= r.boxes[4 * b + 2]
          && r.boxes[4 * b + 1] <= r.boxes[4 * b + 3];
      g_strfreev (xy);
      if (!ok)
        ROW_FAIL ("box \"%s\" is not x0,y0,x1,y1 with x0 <= x1 and y0 <= "
            "y1", boxes[b]);
    }
  }
  g_strfreev (boxes);
  g_array_append_val (t->rows, r);
  return TRUE;

fail:
  g_strfreev (boxes);
  g_free (r.boxes);
  return FALSE;
}

AvfTruth *
avf_truth_load (const gchar * path, GError ** error)
{
  AvfTruth *t = g_new0 (AvfTruth, 1);
  gchar *contents = NULL, **lines = NULL;
  gint idx[N_COLS];
  guint n_header = 0, header_line = 0;
  GError *err = NULL;

  t->path = g_strdup (path);
  t->fps_d = 1;
  t->rows = g_array_new (FALSE, TRUE, sizeof (AvfTruthRow));
  g_array_set_clear_func (t->rows, row_clear);
  if (!g_file_get_contents (path, &contents, NULL, &err)) {
    g_set_error (error, TRUTH_ERROR, 0, "cannot read the truth file %s: %s",
        path, err->message);
    g_error_free (err);
    goto fail;
  }
  lines = g_strsplit (contents, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    gchar *line = lines[i];
    const guint lineno = i + 1;
    gsize len = strlen (line);

    if (len > 0 && line[len - 1] == '\r')
      line[--len] = '\0';
    if (line[0] == '#') {
      if (!parse_comment (t, line, lineno, error))
        goto fail;
    } else if (len == 0 || strspn (line, " \t") == len) {
      continue;
    } else if (g_str_has_prefix (line, "frame\t") || strcmp (line,
            "frame") == 0) {
      gchar **fields;

      if (header_line) {
        g_set_error (error, TRUTH_ERROR, 0, "%s:%u: a second header line "
            "(the first is line %u)", path, lineno, header_line);
        goto fail;
      }
      fields = g_strsplit (line, "\t", -1);
      n_header = g_strv_length (fields);
      if (!parse_header (idx, fields, path, lineno, error)) {
        g_strfreev (fields);
        goto fail;
      }
      g_strfreev (fields);
      header_line = lineno;
      t->has_lookalike = idx[COL_LOOKALIKE] >= 0;
    } else if (!header_line) {
      g_set_error (error, TRUTH_ERROR, 0, "%s:%u: a data line before the "
          "header line (the one that starts with \"frame\")", path, lineno);
      goto fail;
    } else {
      gchar **fields = g_strsplit (line, "\t", -1);
      gboolean ok = parse_row (t, fields, g_strv_length (fields), idx,
          n_header, lineno, error);

      g_strfreev (fields);
      if (!ok)
        goto fail;
    }
  }
  if (!header_line) {
    g_set_error (error, TRUTH_ERROR, 0, "%s: no header line (a "
        "tab-separated line that starts with \"frame\")", path);
    goto fail;
  }
  if (t->width == 0 || t->height == 0) {
    g_set_error (error, TRUTH_ERROR, 0, "%s: no \"#\" line names the clip's "
        "frame size (width=W height=H)", path);
    goto fail;
  }
  g_strfreev (lines);
  g_free (contents);
  return t;

fail:
  g_strfreev (lines);
  g_free (contents);
  avf_truth_free (t);
  return NULL;
}

static gint
compare_times (gconstpointer a, gconstpointer b, gpointer user_data)
{
  GArray *outputs = user_data;
  const guint i = *(const guint *) a, j = *(const guint *) b;
  const GstClockTime x = g_array_index (outputs, AvfTruthOutput, i).time;
  const GstClockTime y = g_array_index (outputs, AvfTruthOutput, j).time;

  if (x != y)
    return x < y ? -1 : 1;
  return i < j ? -1 : i > j;
}

/* The outputs' indices sorted by time (then by index). */
static guint *
sorted_outputs (GArray * outputs)
{
  guint *order = g_new (guint, MAX (outputs->len, 1));

  for (guint i = 0; i < outputs->len; i++)
    order[i] = i;
  g_qsort_with_data (order, (gint) outputs->len, sizeof (guint),
      compare_times, outputs);
  return order;
}

#define OUTPUT(k) (&g_array_index (outputs, AvfTruthOutput, order[k]))

/* The index of the output nearest to @t (the later one of two as near),
 * or -1: @order lists the outputs by time. */
static gint
nearest (GArray * outputs, const guint * order, GstClockTime t)
{
  guint lo = 0, hi = outputs->len;
  gint best = -1;

  while (lo < hi) {             /* first output at or after t */
    guint mid = lo + (hi - lo) / 2;
    if (OUTPUT (mid)->time < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < outputs->len)
    best = (gint) lo;
  if (lo > 0 && (best < 0
          || t - OUTPUT (lo - 1)->time < OUTPUT (lo)->time - t))
    best = (gint) lo - 1;
  return best < 0 ? -1 : (gint) order[best];
}

/* The centre of patch (@column, @row) of @o's grid in frame pixels. */
static void
patch_centre (const AvfTruth * t, const AvfTruthOutput * o, guint column,
    guint row, gdouble * x, gdouble * y)
{
  *x = (column + 0.5) * t->width / o->grid_columns;
  *y = (row + 0.5) * t->height / o->grid_rows;
}

/* (@x, @y) inside @box grown by @grow on each side. */
static gboolean
inside (const gdouble * box, gdouble grow, gdouble x, gdouble y)
{
  return x >= box[0] - grow && x <= box[2] + grow
      && y >= box[1] - grow && y <= box[3] + grow;
}

/* The first of @r's boxes that holds (@x, @y), or -1. */
static gint
box_hit (const AvfTruthRow * r, gdouble grow, gdouble x, gdouble y)
{
  for (guint b = 0; b < r->n_sources; b++)
    if (inside (&r->boxes[4 * b], grow, x, y))
      return (gint) b;
  return -1;
}

/* Both-of-two on a row with two sources whose box @first holds the
 * strongest patch: does the map's strongest patch outside that grown box
 * (the first of equals) hit the other source? */
static gboolean
both_of_two (const AvfTruth * t, const AvfTruthRow * r,
    const AvfTruthOutput * o, gint first, gdouble grow)
{
  const gdouble *box = &r->boxes[4 * first];
  gdouble best_w = -INFINITY, x, y;
  gint best = -1;

  for (guint n = 0; n < o->grid_columns * o->grid_rows; n++) {
    patch_centre (t, o, n % o->grid_columns, n / o->grid_columns, &x, &y);
    if (!inside (box, grow, x, y) && o->map[n] > best_w) {
      best_w = o->map[n];
      best = (gint) n;
    }
  }
  if (best < 0)
    return FALSE;
  patch_centre (t, o, best % o->grid_columns, best / o->grid_columns, &x,
      &y);
  return inside (&r->boxes[4 * (1 - first)], grow, x, y);
}

/* Half a frame: of the truth's frame rate, else of @o's duration, else
 * 20 ms. */
static GstClockTime
half_frame (const AvfTruth * t, const AvfTruthOutput * o)
{
  if (t->fps_n > 0)
    return gst_util_uint64_scale (GST_SECOND, t->fps_d,
        2 * (guint64) t->fps_n);
  if (GST_CLOCK_TIME_IS_VALID (o->duration))
    return o->duration / 2;
  return 20 * GST_MSECOND;
}

AvfTruthScore *
avf_truth_score (const AvfTruth * t, GArray * outputs)
{
  AvfTruthScore *s = g_new0 (AvfTruthScore, MAX (t->rows->len, 1));
  const gdouble grow = MAX (t->width, t->height) / 28.0;
  guint *order = sorted_outputs (outputs);

  for (guint i = 0; i < t->rows->len; i++) {
    const AvfTruthRow *r = &g_array_index (t->rows, AvfTruthRow, i);
    const AvfTruthOutput *o;
    gint k = nearest (outputs, order, r->pts), first;
    gdouble x, y;

    s[i].output = -1;
    s[i].both = -1;
    if (k < 0)
      continue;
    o = &g_array_index (outputs, AvfTruthOutput, k);
    if ((o->time > r->pts ? o->time - r->pts : r->pts - o->time)
        > half_frame (t, o))
      continue;
    s[i].output = k;
    s[i].pointing = r->steady && r->n_sources > 0;
    if (!o->has_patch || o->grid_columns == 0 || o->grid_rows == 0)
      continue;                 /* no audio: no patch points anywhere */
    patch_centre (t, o, o->column, o->row, &x, &y);
    first = box_hit (r, grow, x, y);
    s[i].hit = first >= 0;
    if (first >= 0 && r->n_sources == 2 && o->map != NULL)
      s[i].both = both_of_two (t, r, o, first, grow);
  }
  g_free (order);
  return s;
}

AvfPointing
avf_truth_pointing (const AvfTruth * t, GArray * outputs)
{
  AvfPointing p = { 0 };
  AvfTruthScore *s = avf_truth_score (t, outputs);

  for (guint i = 0; i < t->rows->len; i++) {
    const AvfTruthRow *r = &g_array_index (t->rows, AvfTruthRow, i);

    if (r->steady && r->n_sources > 0 && s[i].output < 0)
      p.unmatched++;
    if (!s[i].pointing)
      continue;
    p.frames++;
    p.hits += s[i].hit;
    if (r->lookalike) {
      p.lookalike_frames++;
      p.lookalike_hits += s[i].hit;
    }
    if (s[i].both >= 0) {
      p.both_frames++;
      p.both_hits += s[i].both;
    }
  }
  g_free (s);
  return p;
}

void
avf_truth_print_pointing (const AvfTruth * t, const AvfPointing * p)
{
  if (p->frames > 0)
    g_print ("pointing accuracy: %.3f (%u of %u steady frames with a "
        "visible source; truth file %s)\n", (gdouble) p->hits / p->frames,
        p->hits, p->frames, t->path);
  else
    g_print ("pointing accuracy: none (no steady frame with a visible "
        "source; truth file %s)\n", t->path);
  if (p->unmatched > 0)
    g_print ("             %u steady frames with a source in the truth "
        "file had no output within half a frame\n", p->unmatched);
  if (t->has_lookalike && p->lookalike_frames > 0)
    g_print ("look-alike pointing: %.3f (%u of %u steady frames whose "
        "one source has a look-alike)\n",
        (gdouble) p->lookalike_hits / p->lookalike_frames,
        p->lookalike_hits, p->lookalike_frames);
  else if (t->has_lookalike)
    g_print ("look-alike pointing: none (no steady frame whose one source "
        "has a look-alike)\n");
}
