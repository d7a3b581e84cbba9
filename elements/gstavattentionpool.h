/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* avattention's ordered worker pool (internal, not installed): the jobs of
 * the frames being fused, the workspaces they fuse on, and the push of
 * their results strictly in input order (see "Threads" in
 * gstavattention.c).  The state lives in struct _GstAvAttention
 * (gstavattentionpriv.h), with its locking rules. */
#ifndef __GST_AV_ATTENTION_POOL_H__
#define __GST_AV_ATTENTION_POOL_H__

#include <gst/gst.h>

#include "gstavattention.h"
#include "gstavhistory.h"
#include "fusion.h"

G_BEGIN_DECLS

/* What one worker thread needs to fuse a frame (see "Threads" in
 * gstavattention.c). */
typedef struct
{
  AvfFusion *fusion;
  gfloat *mel;                  /* (T, M) */
  guint8 *mask;                 /* (T) */
  gfloat *video_scratch;        /* (N, E [+ D]) for unaligned input */
  GstAvRhythmWork *rhythm;      /* avfusion-v2 only */
  gboolean busy;                /* a queued job holds it (aggregate thread) */
} AvWorkspace;

/* One video frame on its way out.  ws == NULL: the frame reuses the last
 * fused result (interval > 1). */
typedef struct
{
  AvWorkspace *ws;
  GstBuffer *vbuf;              /* holds the frame's patch embeddings */
  guint64 k;                    /* frame index in vbuf */
  gsize frame_bytes;
  GstClockTime pts, dur, t, stream_time;
  gboolean audio_ended;
  gint present;
  GstBuffer *out;               /* the fused vector, filled by the worker */
  gboolean done;                /* jobs_lock */
  gboolean failed;              /* the worker could not map a buffer */
  gboolean keep_result;         /* later frames reuse it (interval > 1) */
  GstBuffer **bins;             /* avfusion-v2: (n_bins = K + lags - 1)
                                 * rows of the frames that show the bin
                                 * centres, NULL where missing */
  guint n_bins;
} AvJob;

void gst_av_attention_free_workspaces (GstAvAttention * self);
void gst_av_attention_work (gpointer data, gpointer user_data);
void gst_av_attention_job_wait (GstAvAttention * self, AvJob * job);
void gst_av_attention_job_free (AvJob * job);
GstFlowReturn gst_av_attention_drain (GstAvAttention * self, gboolean push);
GstFlowReturn gst_av_attention_push_done (GstAvAttention * self);
GstFlowReturn gst_av_attention_produce (GstAvAttention * self,
    GstBuffer * vbuf, guint64 k, GstClockTime pts, GstClockTime dur,
    GstClockTime t, gboolean audio_ended);

G_END_DECLS

#endif /* __GST_AV_ATTENTION_POOL_H__ */
