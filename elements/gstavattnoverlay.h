/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * avattnoverlay: a video-master GstAggregator that draws, over each video
 * frame, where the audio attends in the picture as a heat map, from the
 * GstAvAttentionMeta of the avattention output with the same timestamp.
 */
#ifndef __GST_AV_ATTN_OVERLAY_H__
#define __GST_AV_ATTN_OVERLAY_H__

#include <gst/gst.h>
#include <gst/base/gstaggregator.h>

#include "gstavenums.h"

G_BEGIN_DECLS

#define GST_TYPE_AV_ATTN_OVERLAY (gst_av_attn_overlay_get_type ())
G_DECLARE_FINAL_TYPE (GstAvAttnOverlay, gst_av_attn_overlay, GST,
    AV_ATTN_OVERLAY, GstAggregator)

G_END_DECLS

#endif /* __GST_AV_ATTN_OVERLAY_H__ */
