/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Tensor streams: the caps the elements exchange, frame timestamps, and
 * pools of tensor buffers.
 *
 *   other/x-avtensor, kind=(string)K, dtype=(string)float32,
 *       frame-shape=(string)"d0,d1", frame-size=(int)floats per frame,
 *       framerate=(fraction)frames per second, ...kind fields
 *
 * kind "log-mel"          frame [M]:    n-mels, rate, hop-length, n-fft
 * kind "patch-embedding"  frame [N, E]: embed-dim, num-patches,
 *                                       grid-columns, grid-rows, patch-size
 *                         avfusion-v2: the same frame [N, E] and fields,
 *                                       and rhythm-dim D: every buffer carries
 *                                       a GstAvRhythmMeta with the rhythm
 *                                       rows [frames, N, D] of its frames
 *                                       (docs/avfusion-v2.md §2)
 *                         from avpatchembed also model-format (string,
 *                                       "avfusion-v1" or "avfusion-v2") and
 *                                       weights (string, which weights made
 *                                       them) and model-fingerprint (string,
 *                                       which model: avattention refuses
 *                                       embeddings of another one)
 * kind "fused"            frame [2E]:   width
 *
 * A buffer holds one or more whole frames of float32 row-major data; its
 * PTS is that of the first frame, frame i is at PTS + i / framerate and
 * the duration covers all its frames.
 */
#ifndef __GST_AV_TENSOR_H__
#define __GST_AV_TENSOR_H__

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_AV_TENSOR_MEDIA_TYPE "other/x-avtensor"
#define GST_AV_TENSOR_KIND_LOG_MEL "log-mel"
#define GST_AV_TENSOR_KIND_PATCHES "patch-embedding"
#define GST_AV_TENSOR_KIND_FUSED "fused"

#define GST_AV_TENSOR_CAPS_LOG_MEL \
  GST_AV_TENSOR_MEDIA_TYPE ", kind=(string)" GST_AV_TENSOR_KIND_LOG_MEL \
  ", dtype=(string)float32, n-mels=(int)[1,4096], rate=(int)[1,768000], " \
  "hop-length=(int)[1,16777216], n-fft=(int)[2,65536]"
#define GST_AV_TENSOR_CAPS_PATCHES \
  GST_AV_TENSOR_MEDIA_TYPE ", kind=(string)" GST_AV_TENSOR_KIND_PATCHES \
  ", dtype=(string)float32, embed-dim=(int)[1,65536], " \
  "num-patches=(int)[1,65536], grid-columns=(int)[1,65536], " \
  "grid-rows=(int)[1,65536], patch-size=(int)[1,65536]"
#define GST_AV_TENSOR_CAPS_FUSED \
  GST_AV_TENSOR_MEDIA_TYPE ", kind=(string)" GST_AV_TENSOR_KIND_FUSED \
  ", dtype=(string)float32, width=(int)[1,131072]"
#define GST_AV_TENSOR_CAPS_ANY \
  GST_AV_TENSOR_MEDIA_TYPE ", dtype=(string)float32"

typedef enum {
  GST_AV_TENSOR_LOG_MEL,
  GST_AV_TENSOR_PATCHES,
  GST_AV_TENSOR_FUSED
} GstAvTensorKind;

typedef struct {
  GstAvTensorKind kind;
  guint ndim;                   /* of one frame: 1 or 2 */
  guint shape[2];
  gsize frame_size;             /* floats per frame */
  gint fps_n, fps_d;            /* frames per second; 0/1 unknown */
  /* log-mel */
  gint n_mels, rate, hop_length, n_fft;
  /* patch-embedding, frame [N, E]; rhythm_dim 0 without rhythm features
   * (avfusion-v1), else D: the buffers carry a GstAvRhythmMeta of
   * [frames, N, D] */
  gint embed_dim, num_patches, grid_columns, grid_rows, patch_size;
  gint rhythm_dim;
  /* fused */
  gint width;
} GstAvTensorInfo;

GstCaps *gst_av_tensor_caps_log_mel (gint n_mels, gint rate, gint hop_length,
    gint n_fft);
/* NULL when a size is below 1 or the frame ([N, E] floats) would not fit
 * in an int. */
GstCaps *gst_av_tensor_caps_patches (gint embed_dim, gint grid_columns,
    gint grid_rows, gint patch_size, gint fps_n, gint fps_d);
/* avfusion-v2's patch embeddings: v1's caps ([N, E], frame-shape "N,E",
 * embed-dim E) and rhythm-dim D, saying that every buffer carries its
 * frames' rhythm rows in a GstAvRhythmMeta.  NULL as above. */
GstCaps *gst_av_tensor_caps_patches_v2 (gint embed_dim, gint rhythm_dim,
    gint grid_columns, gint grid_rows, gint patch_size, gint fps_n,
    gint fps_d);
/* Sets "model-format" and "weights" on every structure of @caps
 * (writable). */
void gst_av_tensor_caps_set_model (GstCaps * caps, const gchar * format,
    const gchar * weights);

/* Sets "model-fingerprint" (gst_av_weights_fingerprint) on every
 * structure of @caps. */
void gst_av_tensor_caps_set_fingerprint (GstCaps * caps,
    const gchar * fingerprint);
GstCaps *gst_av_tensor_caps_fused (gint width, gint fps_n, gint fps_d);

/* Parses fixed tensor caps.  FALSE (and a readable reason in *why, to be
 * g_free'd) when they are not one of the kinds above. */
gboolean gst_av_tensor_info_from_caps (GstAvTensorInfo * info,
    const GstCaps * caps, gchar ** why);

/* The timestamp of frame i of a buffer that starts at pts. */
GstClockTime gst_av_tensor_frame_pts (const GstAvTensorInfo * info,
    GstClockTime pts, guint64 i);

/* A pool of @size-byte buffers (at least two), active; NULL when it cannot
 * be set up.  @caps may be NULL. */
GstBufferPool *gst_av_buffer_pool_new (GstCaps * caps, guint size);

G_END_DECLS

#endif /* __GST_AV_TENSOR_H__ */
