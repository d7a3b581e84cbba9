/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Tensor stream caps shared by the elements.
 *
 *   other/x-avtensor, kind=(string)K, dtype=(string)float32,
 *       frame-shape=(string)"d0,d1", frame-size=(int)floats per frame,
 *       framerate=(fraction)frames per second, ...kind fields
 *
 * kind "log-mel"          frame [M]:    n-mels, rate, hop-length, n-fft
 * kind "patch-embedding"  frame [N, E]: embed-dim, num-patches,
 *                                       grid-columns, grid-rows, patch-size
 * kind "fused"            frame [2E]:   width
 *
 * A buffer holds one or more whole frames of float32 row-major data; its
 * PTS is that of the first frame, frame i is at PTS + i / framerate and
 * the duration covers all its frames.
 */
#ifndef __GST_AV_TENSOR_H__
#define __GST_AV_TENSOR_H__

#include <gst/gst.h>

#include "avf_error.h"
#include "weights.h"

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
  /* patch-embedding */
  gint embed_dim, num_patches, grid_columns, grid_rows, patch_size;
  /* fused */
  gint width;
} GstAvTensorInfo;

GstCaps *gst_av_tensor_caps_log_mel (gint n_mels, gint rate, gint hop_length,
    gint n_fft);
/* NULL when a size is below 1 or the frame ([N, E] floats) would not fit
 * in an int. */
GstCaps *gst_av_tensor_caps_patches (gint embed_dim, gint grid_columns,
    gint grid_rows, gint patch_size, gint fps_n, gint fps_d);
GstCaps *gst_av_tensor_caps_fused (gint width, gint fps_n, gint fps_d);

/* Parses fixed tensor caps.  FALSE (and a readable reason in *why, to be
 * g_free'd) when they are not one of the kinds above. */
gboolean gst_av_tensor_info_from_caps (GstAvTensorInfo * info,
    const GstCaps * caps, gchar ** why);

/* The timestamp of frame i of a buffer that starts at pts. */
GstClockTime gst_av_tensor_frame_pts (const GstAvTensorInfo * info,
    GstClockTime pts, guint64 i);

/* Posts the GST_ELEMENT_ERROR for a failed weights load (core error
 * record): missing file RESOURCE/NOT_FOUND, unreadable or malformed file
 * RESOURCE/READ, out of memory RESOURCE/NO_SPACE_LEFT, a tensor set that is
 * not an avfusion-v1 model RESOURCE/SETTINGS.  The text names the file and
 * carries the core message (tensor, shapes, byte offset). */
/* Forwards a gap [pts, pts + dur) of the input that leads the output
 * timeline out of @srcpad, so that downstream (a sink waiting to preroll,
 * a muxer) moves on.  Nothing is sent before the pad carries a segment
 * (the first output buffer sends caps and segment): a gap before the
 * first output cannot be forwarded.  Returns TRUE when sent. */
gboolean gst_av_push_gap (GstPad * srcpad, GstClockTime pts,
    GstClockTime dur);

#include <gst/base/gstaggregator.h>

/* Inputs that no source can feed (used by the aggregators, whose base
 * class waits for data on every sink pad in a pipeline that is not live).
 *
 * gst_av_pad_has_no_source: TRUE when nothing upstream of @sinkpad can ever
 * produce data -- the pad is unlinked, or every path upstream ends at an
 * unlinked sink pad (the branch of `decodebin ! ...` for a track the file
 * does not have, a ghost pad without target).  Anything unknown counts as
 * a source.
 *
 * gst_av_end_dead_pad: when @sinkpad has no source and is not at
 * end-of-stream yet, sends it stream-start (if it has none) and EOS, so the
 * aggregator stops waiting for it.  Returns TRUE when it did. */
gboolean gst_av_pad_has_no_source (GstPad * sinkpad);
gboolean gst_av_end_dead_pad (GstElement * element, GstPad * sinkpad);

/* For each event on the leading input of an aggregator: on stream-start,
 * caps and segment, ends @follower when no source can feed it. */
void gst_av_watch_lead_event (GstElement * element, GstEvent * event,
    GstPad * follower);

/* Seeks on an aggregator whose input @pad may have no source.
 *
 * gst_av_aggregator_init_dead_inputs (from the instance init): the source
 * pad's internal links become the sink pads that are not hidden, so that
 * GstAggregator forwards a seek only to the inputs that can take it.
 *
 * gst_av_seek_past_dead_pad: when no source can feed @pad, hides it while
 * @parent_src_event forwards @seek (a branch that ends unlinked would
 * refuse it and fail the whole seek) and, for a flushing seek, flushes it
 * with the seek's seqnum so that the aggregator resumes once every sink
 * pad saw the flush.  Returns the base class's answer: that of the inputs
 * that have a source. */
void gst_av_aggregator_init_dead_inputs (GstAggregator * agg);
gboolean gst_av_seek_past_dead_pad (GstAggregator * agg, GstEvent * seek,
    gboolean (*parent_src_event) (GstAggregator *, GstEvent *),
    GstPad * pad);

void gst_av_post_weights_error (GstElement * element, const gchar * path,
    const AvfError * err);

/* ---- which weights: a file, the shipped trained model, or seeded ---------
 *
 * avpatchembed and avattention use, in this order: the "weights" file when
 * set; else, with model=trained (the default), the project's shipped model
 * (models/sounding-objects-v1.safetensors, spec sounding-objects.md); else,
 * with model=seeded (also selected by setting "seed"), built-in weights made
 * from the seed (spec §4).  The shipped model is installed to
 * <datadir>/avattention; in the build tree it is copied beside the plugin,
 * and a plugin loaded from the build tree uses that copy. */

/* Where an installed plugin finds the shipped model. */
#define GST_AV_DEFAULT_MODEL_INSTALLED AVF_MODEL_INSTALL_DIR "/" AVF_MODEL_NAME

/* What the elements' descriptions say about the default model. */
#define GST_AV_DEFAULT_MODEL_TEXT \
  "avfusion-v1 trained on the sounding-objects world (coloured objects " \
  "whose colour tells their sound; see the project's docs), file " \
  GST_AV_DEFAULT_MODEL_INSTALLED " (a plugin run from its build tree uses " \
  "the copy beside it). It knows only that world: real-world footage needs " \
  "weights trained on your data (property \"weights\")"

/**
 * GstAvModel:
 * @GST_AV_MODEL_TRAINED: the shipped trained model (the default)
 * @GST_AV_MODEL_SEEDED: built-in seeded weights (not trained; spec §4)
 *
 * Which weights avpatchembed and avattention use when no "weights" file is
 * set.
 */
typedef enum {
  GST_AV_MODEL_TRAINED = 0,
  GST_AV_MODEL_SEEDED = 1
} GstAvModel;

#define GST_TYPE_AV_MODEL (gst_av_model_get_type ())
GType gst_av_model_get_type (void);

/* The shipped model's path for the plugin that @element comes from: the
 * copy beside the plugin when the plugin file lives in the build tree
 * (AVF_PLUGIN_BUILD_DIR, compared as the same directory on disk), else
 * GST_AV_DEFAULT_MODEL_INSTALLED.  g_free the result. */
gchar *gst_av_default_model_path (GstElement * element);

/* Loads the weights file @path, or the shipped model when @path is NULL or
 * empty.  On failure posts a GST_ELEMENT_ERROR (a missing shipped model:
 * RESOURCE/NOT_FOUND naming its path and the "weights" and "model"
 * properties) and returns NULL.  *@used (optional, g_free) gets the path
 * that was read. */
AvfWeights *gst_av_load_weights (GstElement * element, const gchar * path,
    gchar ** used);

G_END_DECLS

#endif /* __GST_AV_TENSOR_H__ */
