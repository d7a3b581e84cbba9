/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * avtensorsink: writes a tensor stream to a NumPy .npy file (the frames)
 * or .npz archive (frames, timestamps and attention maps).
 */
#ifndef __GST_AV_TENSOR_SINK_H__
#define __GST_AV_TENSOR_SINK_H__

#include <gst/gst.h>
#include <gst/base/gstbasesink.h>

#include "gstavtensor.h"
#include "gstavattentionmeta.h"
#include "npy.h"

G_BEGIN_DECLS

#define GST_TYPE_AV_TENSOR_SINK (gst_av_tensor_sink_get_type ())
G_DECLARE_FINAL_TYPE (GstAvTensorSink, gst_av_tensor_sink, GST, AV_TENSOR_SINK,
    GstBaseSink)

/* Arrays of the .npz archive before the attention maps. */
enum
{
  GST_AV_TENSOR_SINK_DATA,
  GST_AV_TENSOR_SINK_PTS,
  GST_AV_TENSOR_SINK_DURATION,
  GST_AV_TENSOR_SINK_AUDIO_MASK,
  GST_AV_TENSOR_SINK_SOUND_VISIBLE,
  GST_AV_TENSOR_SINK_VISIBLE_THRESHOLD,
  GST_AV_TENSOR_SINK_N_FIXED
};

#define GST_AV_TENSOR_SINK_MAX_ARRAYS \
  (GST_AV_TENSOR_SINK_N_FIXED \
   + GST_AV_ATTENTION_MAX_LAYERS * GST_AV_ATTENTION_N_MODULES)

struct _GstAvTensorSink
{
  GstBaseSink parent;

  /* property, under the object lock */
  gchar *location;

  /* set up in start () */
  gchar *path;                  /* the location this run writes */
  gboolean npz;

  /* stream state, streaming thread */
  gboolean have_info;
  GstAvTensorInfo info;
  GstAvNpyArray *arrays[GST_AV_TENSOR_SINK_MAX_ARRAYS];
  guint n_arrays;               /* in use: data (.npy), + pts, duration, ... */
  guint64 n_frames;
  gboolean dirty;               /* frames since the last save */
  gboolean broken;              /* a temporary file failed: no final file */

  /* attention: fixed by the first buffer that carries the meta */
  gboolean have_attention;
  guint n_layers, n_heads, n_audio_slots, n_patches;
  guint8 *mask_frame;           /* T bytes: the 0/1 mask of one frame */
};

G_END_DECLS

#endif /* __GST_AV_TENSOR_SINK_H__ */
