/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * avattention: a video-master GstAggregator that runs the avfusion-v1
 * audio-visual attention stack (spec §3) once per video frame, over the
 * causal audio window [t - window, t) of log-mel frames, and attaches the
 * attention maps as GstAvAttentionMeta.
 */
#ifndef __GST_AV_ATTENTION_H__
#define __GST_AV_ATTENTION_H__

#include <gst/gst.h>
#include <gst/base/gstaggregator.h>

G_BEGIN_DECLS

/**
 * GstAvAttentionWeights:
 * @GST_AV_ATTENTION_WEIGHTS_NONE: no attention maps; only the fused vector
 *   (no GstAvAttentionMeta is attached)
 * @GST_AV_ATTENTION_WEIGHTS_MEAN: maps averaged over the heads
 * @GST_AV_ATTENTION_WEIGHTS_PER_HEAD: one map per head
 *
 * Which attention maps ride on the output buffers.
 */
typedef enum {
  GST_AV_ATTENTION_WEIGHTS_NONE = 0,
  GST_AV_ATTENTION_WEIGHTS_MEAN,
  GST_AV_ATTENTION_WEIGHTS_PER_HEAD
} GstAvAttentionWeights;

#define GST_TYPE_AV_ATTENTION_WEIGHTS (gst_av_attention_weights_get_type ())
GType gst_av_attention_weights_get_type (void);

#define GST_TYPE_AV_ATTENTION (gst_av_attention_get_type ())
G_DECLARE_FINAL_TYPE (GstAvAttention, gst_av_attention, GST, AV_ATTENTION,
    GstAggregator)

G_END_DECLS

#endif /* __GST_AV_ATTENTION_H__ */
