/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * avtensorsink's parts: the element, its files and rolling
 * (gstavtensorsink.c) and the arrays of the attention metadata, in full or
 * summarised (gstavtensorsinkmaps.c).
 */
#ifndef __GST_AV_TENSOR_SINK_PRIV_H__
#define __GST_AV_TENSOR_SINK_PRIV_H__

#include "gstavtensorsink.h"

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_av_tensor_sink_debug);

/* gstavtensorsink.c */

/* A new array of the file being written (its temporary file beside it);
 * NULL after an element error. */
GstAvNpyArray *gst_av_tensor_sink_add_array (GstAvTensorSink * self,
    const gchar * name, GstAvNpyDtype dtype, guint ndim,
    const guint64 * shape);
/* RESOURCE/NO_SPACE_LEFT or RESOURCE/WRITE naming the file; takes @err and
 * marks the stream broken. */
void gst_av_tensor_sink_post_write_error (GstAvTensorSink * self,
    GError * err, const gchar * when);
/* The same while storing the arrays; returns FALSE. */
gboolean gst_av_tensor_sink_write_error (GstAvTensorSink * self,
    GError * err);

/* gstavtensorsinkmaps.c */

/* The attention arrays of the current file, for the geometry of the first
 * meta (a new rolling file gets them when it opens). */
gboolean gst_av_tensor_sink_setup_attention_arrays (GstAvTensorSink * self);
/* FALSE (after an error) when @meta does not fit the stream; the first
 * meta sets the attention arrays up. */
gboolean gst_av_tensor_sink_check_attention (GstAvTensorSink * self,
    GstAvAttentionMeta * meta);
/* @n_frames frames that carry @meta, or no meta. */
gboolean gst_av_tensor_sink_append_attention (GstAvTensorSink * self,
    GstAvAttentionMeta * meta, guint64 n_frames);
gboolean gst_av_tensor_sink_append_missing_attention (GstAvTensorSink *
    self, guint64 n_frames);

G_END_DECLS

#endif /* __GST_AV_TENSOR_SINK_PRIV_H__ */
