/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The video history of avattention with avfusion-v2 weights
 * (docs/avfusion-v2.md §3.1-3.2): for each video frame received since the
 * last flush, new segment, GAP or DISCONT, its running time, the end of its
 * duration and its rhythm features (N, D); and, for a frame at running time
 * t, the frame that shows each bin centre the rhythm term reads at its
 * lags: c_{lag_min} .. c_{lag_min + K + lags - 2}, K + lags - 1 of them
 * (core/rhythm.h avf_rhythm_bin_frames, the rule of model/avfusion2.py
 * bin_frames).  With a negative lag_min the earliest lie before the
 * window: the history keeps the frames that show them.
 *
 * Each frame's rhythm features are copied into a buffer of the history's
 * own pool (never a reference to upstream's buffers, which would hold a
 * bounded upstream pool), written once and read-only afterwards.  A lookup
 * hands out references to those buffers: a job that fuses its frame on a
 * worker thread keeps the rows of exactly the frames received before it,
 * whatever the history does meanwhile.
 */
#ifndef __GST_AV_HISTORY_H__
#define __GST_AV_HISTORY_H__

#include <gst/gst.h>

#include "rhythm.h"

G_BEGIN_DECLS

/* Locking: a GstAvHistory has no lock of its own.  It is filled, looked
 * up and emptied only under avattention's src pad stream lock (aggregate
 * and sink_event in the src pad task, flush, which GstAggregator calls
 * with that lock held), made in start and freed in stop while no stream
 * runs; never by the worker threads.  Workers only read, through
 * gst_av_rhythm_work_tokens(), the buffers a lookup gave their job
 * (immutable once added; a buffer goes back to the pool when its last
 * reference is dropped). */
typedef struct _GstAvHistory GstAvHistory;

/* A history of frames of @n_patches x D rhythm features, for windows of
 * K bins of G audio slots read at the lags of @rhythm (an avfusion-v2
 * configuration, copied).  NULL when the pool cannot be set up. */
GstAvHistory *gst_av_history_new (guint n_patches,
    const AvfRhythmConfig * rhythm);
void gst_av_history_free (GstAvHistory * h);

/* Forgets every frame (flush, new segment, GAP, DISCONT). */
void gst_av_history_clear (GstAvHistory * h);

/* Number of frames held. */
guint gst_av_history_length (const GstAvHistory * h);

/* The references a lookup gives: K + lags - 1, one per bin centre. */
guint gst_av_history_n_centres (const GstAvHistory * h);

/* Adds the frame that starts at running time @start and lasts until @end
 * (start + its duration; AVF_RHYTHM_NO_END without a duration); its rhythm
 * features are @rows: n_patches rows of D float32 (any alignment),
 * @row_bytes apart.  Frames that can show no bin centre of a window
 * ending at @start or later, at any lag, are dropped: those that end
 * showing at or before both @start - @window_ns and c_{lag_min} of that
 * window (@hop and @rate: of the audio window).  FALSE when no buffer
 * could be had from the pool. */
gboolean gst_av_history_add (GstAvHistory * h, const guint8 * rows,
    gsize row_bytes, gint64 start, gint64 end, gint64 window_ns, gint hop,
    gint rate);

/* For the frame at running time @t: bins[i] (n_centres of them) is a new
 * reference to the rhythm features (n_patches, D) of the frame that shows
 * the centre c_{lag_min + i}, NULL where none does (bin k at lag lag_min
 * + l reads bins[k + l]).  Returns how many centres have a frame.  @hop
 * and @rate: of the audio window. */
guint gst_av_history_lookup (GstAvHistory * h, GstBuffer ** bins, gint64 t,
    gint64 window_ns, gint hop, gint rate);

/* Drops the references of a lookup (n of them). */
void gst_av_history_bins_clear (GstBuffer ** bins, guint n);

/* ---- the worker side ------------------------------------------------------
 *
 * What one fusion workspace needs for the rhythm term: core's workspace,
 * the tokens (N, E) and room to map a lookup's K + lags - 1 buffers.  Used
 * by one thread at a time (the workspace's job). */
typedef struct _GstAvRhythmWork GstAvRhythmWork;

/* For windows of @T audio slots (T = K G, see avf_rhythm_new). */
GstAvRhythmWork *gst_av_rhythm_work_new (const AvfWeights * w, gint T,
    AvfError * err);
void gst_av_rhythm_work_free (GstAvRhythmWork * rw);

/* The patch tokens (N, E) that enter the layers for a frame whose
 * avpatchembed tensor is @video (N, E): e_n plus the rhythm term of the
 * window (@mel (T, M), @mask (T)) and the frames of @bins (a lookup's,
 * K + lags - 1 of them).  NULL when a buffer cannot be mapped.  *@valid
 * (optional): the number of valid bins summed over the lags. */
const gfloat *gst_av_rhythm_work_tokens (GstAvRhythmWork * rw,
    const gfloat * video, const gfloat * mel, const guint8 * mask,
    GstBuffer ** bins, gint * valid);

G_END_DECLS

#endif /* __GST_AV_HISTORY_H__ */
