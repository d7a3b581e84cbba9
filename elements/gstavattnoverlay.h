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

G_BEGIN_DECLS

/**
 * GstAvAttnOverlayColormap:
 * @GST_AV_ATTN_OVERLAY_COLORMAP_INFERNO: black, purple, orange, pale yellow
 * @GST_AV_ATTN_OVERLAY_COLORMAP_JET: blue, cyan, yellow, red
 * @GST_AV_ATTN_OVERLAY_COLORMAP_GRAY: black to white
 */
typedef enum {
  GST_AV_ATTN_OVERLAY_COLORMAP_INFERNO = 0,
  GST_AV_ATTN_OVERLAY_COLORMAP_JET,
  GST_AV_ATTN_OVERLAY_COLORMAP_GRAY
} GstAvAttnOverlayColormap;

#define GST_TYPE_AV_ATTN_OVERLAY_COLORMAP \
  (gst_av_attn_overlay_colormap_get_type ())
GType gst_av_attn_overlay_colormap_get_type (void);

#define GST_TYPE_AV_ATTN_OVERLAY (gst_av_attn_overlay_get_type ())
G_DECLARE_FINAL_TYPE (GstAvAttnOverlay, gst_av_attn_overlay, GST,
    AV_ATTN_OVERLAY, GstAggregator)

G_END_DECLS

#endif /* __GST_AV_ATTN_OVERLAY_H__ */
