/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* avattention's instance state, shared by the element (gstavattention.c),
 * its video input and aggregate loop (gstavattentionvideo.c), its ordered
 * worker pool (gstavattentionpool.c), its audio window
 * (gstavattentionaudio.c), its model (gstavattentionmodel.c), its caps
 * (gstavattentioncaps.c), its output (gstavattentionoutput.c) and its QoS
 * (gstavattentionqos.c).  Internal, not installed.
 *
 * Locking rules (for every field below):
 * - the properties, the QoS state (but qos_processed and qos_dropped) and
 *   the caps-query limits q_*: the object lock;
 * - everything else is built in start, freed in stop and used by the src
 *   pad task alone (aggregate, sink_event, flush: "the aggregate thread"),
 *   without a lock: the audio history, the workspaces' busy flags, the job
 *   FIFO and the video history (gstavhistory.h);
 * - a worker thread touches only the job it was handed and that job's
 *   workspace, and marks the job done under jobs_lock (signalling
 *   jobs_cond); the aggregate thread reads done under jobs_lock, and takes
 *   a job's result only once it is done;
 * - the new streams on audio_sink (audio_starts_queued, audio_start_waited):
 *   audio_start_lock, which the upstream thread holds while it queues a
 *   stream-start on the pad (it takes GstAggregator's locks inside). */
#ifndef __GST_AV_ATTENTION_PRIV_H__
#define __GST_AV_ATTENTION_PRIV_H__

#include <gst/gst.h>
#include <gst/base/gstaggregator.h>

#include "gstavattention.h"
#include "gstavattentionpool.h"
#include "gstavattentionaudio.h"
#include "gstavtensor.h"
#include "gstavweights.h"
#include "gstavhistory.h"
#include "fusion.h"
#include "weights.h"

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_av_attention_debug);

struct _GstAvAttention
{
  GstAggregator parent;

  GstAggregatorPad *audio_pad;  /* owned by the element */
  GstAggregatorPad *video_pad;

  /* properties (object lock) */
  GstAvWeightsChoice choice;    /* "weights", "model", "seed" */
  guint64 window;
  GstAvAttentionWeights attention_weights;
  gboolean post_messages;
  gint blas_threads;
  gboolean qos;
  gint threads;
  guint interval;

  /* QoS (object lock): frames ending before earliest_time are skipped */
  GstClockTime earliest_time;
  gdouble qos_proportion;
  guint64 qos_processed, qos_dropped;     /* streaming thread only */

  /* what the sink caps queries restrict to, 0 = not known (object lock);
   * q_rate is the sample rate audio_sink prefers; q_rhythm: avfusion-v2
   * weights (then any width is let through to the caps event, which names
   * both models when they differ) */
  gint q_mels, q_embed, q_patches, q_rate;
  gboolean q_rhythm;

  /* everything below: built in start, freed in stop, used by the src pad
   * task (aggregate, sink_event, flush) */
  AvfWeights *w;
  gchar *weights_name;          /* for messages: the file, or "seeded ..." */
  gchar *fingerprint;           /* of w: gst_av_weights_fingerprint */
  gboolean model_chosen;        /* set here or found upstream at start: an
                                 * avattention without adopts the model of
                                 * the patch embeddings (issue 21) */
  AvfAttnMode mode;
  guint map_heads;              /* heads stored per map in the meta */
  gint64 window_ns;
  gint default_rate, default_hop;
  GstBufferPool *out_pool;      /* fused vectors (2E) float32 */
  gboolean failed;              /* an error was posted: stop */

  gboolean have_audio_caps;
  GstCaps *audio_caps;          /* the last ones accepted */
  GstAvTensorInfo ainfo;
  /* audio caps with another rate or hop, received after the last frame of
   * the old format: they apply from the first buffer after them, once the
   * video frames before that buffer are done with the old audio */
  gboolean audio_caps_pending;
  GstAvTensorInfo pending_ainfo;
  gboolean have_video_caps;
  GstAvTensorInfo vinfo;
  gboolean need_setup;

  /* the window set-up */
  gint T;
  gint rate, hop;               /* of the history and window */
  guint grid_columns, grid_rows;        /* of the meta pool */
  guint n_workers;              /* threads that fuse (set in start) */
  AvWorkspace *ws;              /* n_ws workspaces, one per thread */
  guint n_ws;
  GstBufferPool *meta_pool;     /* attention data blocks */

  /* the frames being fused, in output order (aggregate thread); workers
   * mark them done under jobs_lock */
  GThreadPool *workers;         /* NULL: fuse in the aggregate thread */
  GQueue jobs;
  GMutex jobs_lock;
  GCond jobs_cond;
  guint64 frames_out;           /* frames since start or flush (interval) */
  GstBuffer *last_result;       /* copy of the last fused output (interval) */
  GstClockTime latency_set;     /* the aggregator latency we asked for */

  /* audio history: spectrogram frames (hist_cap, M) and their running
   * times; the live ones are [hist_first, hist_first + hist_n) */
  gfloat *hist_frames;
  gint64 *hist_rt;
  gsize hist_cap, hist_first, hist_n;
  GstClockTime audio_known;     /* audio is complete up to this running time */

  /* new streams on audio_sink (audio_start_lock): the stream-starts queued
   * on the pad and not handled yet -- an audio branch linked while playing
   * to an audio_sink that had ended is heard from the first (see
   * gst_av_attention_audio_ended); start_waited: aggregate returned so
   * that GstAggregator handles them */
  GMutex audio_start_lock;
  guint audio_starts_queued;
  gboolean audio_start_waited;

  /* avfusion-v2's video history (NULL for v1); its locking rule is in
   * gstavhistory.h: the aggregate thread only */
  GstAvHistory *vhist;

  /* the head buffers being consumed frame by frame */
  GstBuffer *video_cur;
  guint64 video_idx;
  GstBuffer *audio_cur;
  guint64 audio_idx;
};

/* in gstavattentionmodel.c */
void gst_av_attention_reset_qos (GstAvAttention * self);
void gst_av_attention_reset_stream (GstAvAttention * self);
void gst_av_attention_free_all (GstAvAttention * self);
gboolean gst_av_attention_use_weights (GstAvAttention * self, AvfWeights * w,
    gchar * path, gchar * fingerprint, guint64 seed);
GstFlowReturn gst_av_attention_setup (GstAvAttention * self);
gdouble gst_av_attention_window_frames (gint64 window_ns, gint hop,
    gint rate);

/* avattention without a model of its own (none of "weights", "model" and
 * "seed" set, none found upstream at start) takes the model that made the
 * patch embeddings of @caps when they name a weights file whose numbers
 * (fingerprint) are still those: 1 when it did, 0 when it did not (the
 * caps checks then name both models), -1 after an error (posted). */
gint gst_av_attention_adopt_patch_model (GstAvAttention * self,
    GstCaps * caps);

/* in gstavattentioncaps.c */
gboolean gst_av_attention_set_audio_caps (GstAvAttention * self,
    GstCaps * caps);
gboolean gst_av_attention_set_video_caps (GstAvAttention * self,
    GstCaps * caps);
GstFlowReturn gst_av_attention_update_src_caps (GstAggregator * agg,
    GstCaps * downstream, GstCaps ** ret);
GstCaps *gst_av_attention_sink_caps (GstAvAttention * self,
    GstAggregatorPad * pad, GstCaps * filter);
gboolean gst_av_attention_answer_caps_query (GstQuery * query,
    GstCaps * caps);

/* in gstavattentionoutput.c */
GstFlowReturn gst_av_attention_finish_job (GstAvAttention * self);

/* in gstavattentionvideo.c: GstAggregator's aggregate and get_next_time */
GstFlowReturn gst_av_attention_aggregate (GstAggregator * agg,
    gboolean timeout);
GstClockTime gst_av_attention_get_next_time (GstAggregator * agg);

/* in gstavattentionqos.c */
void gst_av_attention_update_qos (GstAvAttention * self, GstEvent * event);
gboolean gst_av_attention_skip_late (GstAvAttention * self,
    GstClockTime pts, GstClockTime dur, GstClockTime t);

G_END_DECLS

#endif /* __GST_AV_ATTENTION_PRIV_H__ */
