/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * truth: the per-frame truth of a sounding-objects clip (the .truth.tsv
 * file model/soworld.py writes beside it), and the pointing measures of
 * spec sounding-objects.md §3 (and sounding-objects-2.md §4) against the
 * strongest patches of a run.  The one implementation of them:
 * avattention-run calls it on its run, avattention-score on a
 * features.npz, and model/evaluate.py reads avattention-score's per-frame
 * table.
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
 * pixels per source, separated by ";" (or "-").  An optional column
 * lookalike (version 2's truth: 0 or 1) says that the frame's one source
 * has a look-alike in the picture.
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
  gboolean lookalike;           /* FALSE without the column */
  guint n_sources;
  gdouble *boxes;               /* (n_sources, 4): x0, y0, x1, y1 */
} AvfTruthRow;

typedef struct
{
  gchar *path;
  gint width, height;           /* of the original clip */
  gint fps_n, fps_d;            /* 0/1 when the file does not say */
  gboolean has_lookalike;       /* the file has the column lookalike */
  GArray *rows;                 /* AvfTruthRow, in file order */
} AvfTruth;

/* Reads a truth file.  NULL and an error "FILE:LINE: what is wrong" (or
 * "FILE: ..." for the file as a whole) when it is unreadable or malformed. */
AvfTruth *avf_truth_load (const gchar * path, GError ** error);
void avf_truth_free (AvfTruth * truth);

/* What the run gave for one video frame. */
typedef struct
{
  /* the time it is matched by: its stream time (its PTS through the
   * stream's segment, what the truth's pts_ns are), else its PTS when
   * that is unknown; the two differ where a container starts the segment
   * later, as mp4mux does for H.264 with B-frames */
  GstClockTime time;
  GstClockTime duration;
  gboolean has_patch;           /* the window held audio */
  guint column, row;            /* the strongest patch of the last layer */
  guint grid_columns, grid_rows;
  /* the last layer's audio-cross map (grid_rows x grid_columns, row by
   * row), averaged over heads and the slots with audio, for both-of-two;
   * NULL: not measured */
  const gfloat *map;
} AvfTruthOutput;

/* The measures of one truth row. */
typedef struct
{
  gint output;                  /* the matched output's index, -1: none */
  gboolean pointing;            /* counts in the pointing accuracy: steady,
                                 * a source, an output */
  gboolean hit;                 /* an output whose strongest patch has its
                                 * centre in a source's grown box */
  gint both;                    /* both-of-two: 1 or 0 for a frame with two
                                 * sources that hits one, with a map; else
                                 * -1 */
} AvfTruthScore;

typedef struct
{
  guint frames;                 /* steady frames with a source, matched */
  guint hits;                   /* ... whose strongest patch is in a box */
  guint unmatched;              /* such truth frames without an output */
  guint lookalike_frames;       /* the frames whose source has a look-alike */
  guint lookalike_hits;
  guint both_frames;            /* two sources, one hit, with a map */
  guint both_hits;
} AvfPointing;

/* The measures of every truth row (truth->rows->len of them, g_free).
 *
 * Each row is matched by its pts_ns to the output nearest in time
 * (AvfTruthOutput.time) within half a frame (of the truth's fps, else of
 * the output's duration, else 20 ms; the later one of two as near).  An
 * output's strongest patch has its centre, mapped to the clip's frame
 * pixels, at (column + 0.5) * width / grid_columns, (row + 0.5) * height /
 * grid_rows; it hits when that point lies inside a source's box grown by
 * max(width, height) / 28 on each side.  An output without audio hits
 * nothing.
 *
 * Pointing accuracy (sounding-objects.md §3): the share of hits over the
 * steady rows with at least one source and an output; look-alike pointing
 * (sounding-objects-2.md §4) the same over those with lookalike 1.
 * Both-of-two: over such rows with two sources that hit one (the first in
 * the file's order that holds the centre), whether the map's strongest
 * patch among those whose centre lies outside that source's grown box hits
 * the other.  @outputs is left as it is; indices are into it. */
AvfTruthScore *avf_truth_score (const AvfTruth * truth, GArray * outputs);

/* The sums of avf_truth_score() over the rows. */
AvfPointing avf_truth_pointing (const AvfTruth * truth, GArray * outputs);

/* Prints the pointing accuracy (with the truth file's path), the number of
 * unmatched frames if any and, for a truth file with the column lookalike,
 * the look-alike pointing: the summary lines of avattention-run and
 * avattention-score. */
void avf_truth_print_pointing (const AvfTruth * truth, const AvfPointing * p);

G_END_DECLS

#endif /* AVF_TRUTH_H */
