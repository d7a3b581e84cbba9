/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * truth: the per-frame truth of a sounding-objects clip (the .truth.tsv
 * file tools/soworld.py writes beside it), and the pointing accuracy of
 * spec sounding-objects.md §3 against the strongest patches of a run.
 *
 *   # sounding-objects-v1 truth  width=1280 height=720 fps=30/1 seed=7
 *   frame  pts_ns  steady  negative  sources  kinds  boxes      (tabs)
 *   57     1900000000  1  0  0,2  1,4  10,20,80,90;300,40,380,120
 *
 * "#" lines are comments; their key=value words give the clip's original
 * frame size (width, height: required) and frame rate (fps, optional).
 * One header line starts with "frame" and names the columns (in any order,
 * more allowed).  steady and negative are 0 or 1; sources the object ids
 * (comma list, or "-"), kinds theirs, boxes one x0,y0,x1,y1 box in frame
 * pixels per source, separated by ";" (or "-").
 */
#ifndef AVF_TRUTH_H
#define AVF_TRUTH_H

#include <glib.h>
#include <gst/gst.h>

G_BEGIN_DECLS

typedef struct
{
  guint64 frame;
  GstClockTime pts;
  gboolean steady, negative;
  guint n_sources;
  gdouble *boxes;               /* (n_sources, 4): x0, y0, x1, y1 */
} AvfTruthRow;

typedef struct
{
  gchar *path;
  gint width, height;           /* of the original clip */
  gint fps_n, fps_d;            /* 0/1 when the file does not say */
  GArray *rows;                 /* AvfTruthRow, in file order */
} AvfTruth;

/* Reads a truth file.  NULL and an error "FILE:LINE: what is wrong" (or
 * "FILE: ..." for the file as a whole) when it is unreadable or malformed. */
AvfTruth *avf_truth_load (const gchar * path, GError ** error);
void avf_truth_free (AvfTruth * truth);

/* What the run gave for one video frame. */
typedef struct
{
  GstClockTime pts, duration;
  gboolean has_patch;           /* the window held audio */
  guint column, row;            /* the strongest patch of the last layer */
  guint grid_columns, grid_rows;
} AvfTruthOutput;

typedef struct
{
  guint frames;                 /* steady frames with a source, matched */
  guint hits;                   /* ... whose strongest patch is in a box */
  guint unmatched;              /* such truth frames without an output */
} AvfPointing;

/* Pointing accuracy (sounding-objects.md §3): over the truth's steady
 * frames with at least one source, each matched to the output nearest in
 * PTS within half a frame (of the truth's fps, else of the output's
 * duration), the share whose strongest patch has its centre, mapped to the
 * clip's frame pixels (grid cell centre times width / grid_columns, height
 * / grid_rows), inside a source's box grown by max(width, height) / 28 on
 * each side.  A matched frame without audio is a miss.  @outputs (any
 * order) is sorted by PTS. */
AvfPointing avf_truth_pointing (const AvfTruth * truth, GArray * outputs);

G_END_DECLS

#endif /* AVF_TRUTH_H */
