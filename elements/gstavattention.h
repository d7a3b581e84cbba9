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

#include "gstavenums.h"

G_BEGIN_DECLS

#define GST_TYPE_AV_ATTENTION (gst_av_attention_get_type ())
G_DECLARE_FINAL_TYPE (GstAvAttention, gst_av_attention, GST, AV_ATTENTION,
    GstAggregator)

G_END_DECLS

#endif /* __GST_AV_ATTENTION_H__ */
