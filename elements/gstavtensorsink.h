/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * avtensorsink: writes a tensor stream to a NumPy .npy file (the frames)
 * or .npz archive (frames, timestamps and attention maps, in full or as a
 * summary), one file or a series of rolling files.
 */
#ifndef __GST_AV_TENSOR_SINK_H__
#define __GST_AV_TENSOR_SINK_H__

#include <gst/gst.h>
#include <gst/base/gstbasesink.h>

#include "gstavtensor.h"
#include "gstavattentionmeta.h"
#include "gstavenums.h"
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
  GST_AV_TENSOR_SINK_STREAM_TIME,
  GST_AV_TENSOR_SINK_DURATION,
  GST_AV_TENSOR_SINK_AUDIO_MASK,
  GST_AV_TENSOR_SINK_SOUND_VISIBLE,
  GST_AV_TENSOR_SINK_VISIBLE_THRESHOLD,
  GST_AV_TENSOR_SINK_N_FIXED
};

/* After those, with maps=summary or none (maps=all has the per-map
 * arrays there instead). */
enum
{
  GST_AV_TENSOR_SINK_REUSED = GST_AV_TENSOR_SINK_N_FIXED,
  GST_AV_TENSOR_SINK_STRONGEST_COLUMN,
  GST_AV_TENSOR_SINK_STRONGEST_ROW,
  GST_AV_TENSOR_SINK_STRONGEST_WEIGHT,
  GST_AV_TENSOR_SINK_GRID_SHAPE,
  GST_AV_TENSOR_SINK_MODEL,
  GST_AV_TENSOR_SINK_PATCH_WEIGHTS,     /* summary only */
  GST_AV_TENSOR_SINK_N_SUMMARY
};

#define GST_AV_TENSOR_SINK_MAX_ARRAYS \
  (GST_AV_TENSOR_SINK_N_FIXED \
   + GST_AV_ATTENTION_MAX_LAYERS * GST_AV_ATTENTION_N_MODULES)

struct _GstAvTensorSink
{
  GstBaseSink parent;

  /* properties, under the object lock */
  gchar *location;
  GstAvTensorSinkMaps maps;
  GstAvTensorSinkDtype dtype;
  gboolean compress;
  guint64 max_size_time;
  guint64 max_size_bytes;

  /* set up in start () from the properties */
  gchar *location_run;          /* the location this run writes */
  GstAvTensorSinkMaps run_maps;
  GstAvTensorSinkDtype run_dtype;
  gboolean run_compress;
  guint64 run_max_time, run_max_bytes;
  gboolean rolling;             /* a max-size is set: a file per part */
  gboolean npz;
  gchar *path;                  /* the file being written */
  guint file_index;             /* of that file, from 0 */
  guint64 file_first_frame;     /* frames of the stream before it */
  GstClockTime file_start;      /* pts of its first frame */
  GstClockTime file_end;        /* pts + duration of its last frame */

  /* stream state, streaming thread */
  gboolean have_info;
  GstAvTensorInfo info;
  GstAvNpyArray *arrays[GST_AV_TENSOR_SINK_MAX_ARRAYS];
  guint n_arrays;               /* in use: data (.npy), + pts, stream_time,
                                 * duration, ... */
  guint64 n_frames;
  gboolean dirty;               /* frames since the last save */
  gboolean broken;              /* a temporary file failed: no final file */

  /* attention: fixed by the first buffer that carries the meta */
  gboolean have_attention;
  guint n_layers, n_heads, n_audio_slots, n_patches;
  guint8 *mask_frame;           /* T bytes: the 0/1 mask of one frame */
  guint grid_columns, grid_rows;
  gchar *model;                 /* which weights, for the summary */
  gfloat *patch_frame;          /* N floats: one frame of patch_weights */
  guint16 *half;                /* the largest map, as float16 */
};

G_END_DECLS

#endif /* __GST_AV_TENSOR_SINK_H__ */
