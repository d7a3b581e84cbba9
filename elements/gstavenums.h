/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The enums of the elements' properties, all in this one header: meson
 * (gnome.mkenums with gstavenumtypes.{h,c}.template; fuzz/run-fuzzers.sh
 * the same way) generates their GTypes, GST_TYPE_AV_MODEL and the others in
 * gstavenumtypes.h, from it.  The nicks are the values' names without the
 * common prefix, lower case, '_' as '-' (model=seeded, maps=summary,
 * dtype=float16 ...).  Each value's <NAME>_TEXT is its description in
 * gst-inspect-1.0 (the GEnumValue's value_name).
 */
#ifndef __GST_AV_ENUMS_H__
#define __GST_AV_ENUMS_H__

#include <glib-object.h>

/**
 * SECTION:gstavenums
 * @title: Property types
 * @short_description: the enums of the elements' properties
 *
 * The values of the enum properties of avpatchembed and avattention
 * (model), avattention (attention-weights), avtensorsink (maps, dtype) and
 * avattnoverlay (colormap).  On a gst-launch-1.0 line a value is named by
 * its nick: the value's name without the common prefix, lower case, '_'
 * as '-' (model=seeded, maps=summary, dtype=float16 ...).  avattnoverlay's
 * module takes a #GstAvAttentionModule.
 */

G_BEGIN_DECLS

/* ---- avpatchembed, avattention: model ----------------------------------- */

/* Where an installed plugin finds the shipped models: the default
 * (model=trained), the first one, avfusion-v1 (model=trained-v1), and the
 * one trained without truth (model=unlabeled). */
#define GST_AV_DEFAULT_MODEL_INSTALLED AVF_MODEL_INSTALL_DIR "/" AVF_MODEL_NAME
#define GST_AV_V1_MODEL_INSTALLED AVF_MODEL_INSTALL_DIR "/" AVF_MODEL_V1_NAME
#define GST_AV_UNLABELED_MODEL_INSTALLED \
  AVF_MODEL_INSTALL_DIR "/" AVF_MODEL_UNLABELED_NAME

/* What gst-inspect-1.0 says about the default model (in model=trained's
 * description). */
#define GST_AV_DEFAULT_MODEL_TEXT \
  "avfusion-v2 trained on the sounding-objects world, version 2 (coloured " \
  "objects whose colour tells their sound and that pulse with rhythms of " \
  "their own, look-alike pairs included: it matches what it sees move " \
  "with what it hears; see the project's docs), file " \
  GST_AV_DEFAULT_MODEL_INSTALLED " (a plugin run from its build tree uses " \
  "the copy beside it). It knows only that world: real-world footage needs " \
  "weights trained on your data (property \"weights\")"

/**
 * GstAvModel:
 * @GST_AV_MODEL_TRAINED: the shipped trained model (the default; avfusion-v2)
 * @GST_AV_MODEL_SEEDED: built-in seeded weights (not trained; spec §4)
 * @GST_AV_MODEL_TRAINED_V1: the first shipped model, avfusion-v1 (the
 *   default before the v2 model)
 * @GST_AV_MODEL_UNLABELED: the shipped avfusion-v2 model trained without
 *   truth (by synchrony; model/train.py --unlabeled)
 *
 * Which weights avpatchembed and avattention use when no "weights" file is
 * set.
 */
typedef enum {
  GST_AV_MODEL_TRAINED = 0,
  GST_AV_MODEL_SEEDED = 1,
  GST_AV_MODEL_TRAINED_V1 = 2,
  GST_AV_MODEL_UNLABELED = 3
} GstAvModel;

#define GST_AV_MODEL_TRAINED_TEXT \
  "The shipped trained model: " GST_AV_DEFAULT_MODEL_TEXT
#define GST_AV_MODEL_SEEDED_TEXT \
  "Built-in seeded weights, not trained (E 256, 8 heads, 1 layer, made " \
  "from the \"seed\" property), for tests and experiments"
#define GST_AV_MODEL_TRAINED_V1_TEXT \
  "The first shipped model, the default before avfusion-v2: avfusion-v1 " \
  "trained on the sounding-objects world, version 1 (colour only: it " \
  "cannot tell two look-alike objects apart), file " \
  GST_AV_V1_MODEL_INSTALLED " (a plugin run from its build tree uses the " \
  "copy beside it)"
#define GST_AV_MODEL_UNLABELED_TEXT \
  "The shipped avfusion-v2 model trained without truth, by synchrony (no " \
  "boxes, sources or segments were read: a frame's own sound against the " \
  "same clip's sound from other times, silence and noise), on the " \
  "sounding-objects world; less accurate than the default, file " \
  GST_AV_UNLABELED_MODEL_INSTALLED " (a plugin run from its build tree " \
  "uses the copy beside it)"

/* ---- avattention: attention-weights ------------------------------------- */

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

#define GST_AV_ATTENTION_WEIGHTS_NONE_TEXT \
  "No attention maps, only the fused vector"
#define GST_AV_ATTENTION_WEIGHTS_MEAN_TEXT \
  "Attention maps averaged over the heads"
#define GST_AV_ATTENTION_WEIGHTS_PER_HEAD_TEXT "One attention map per head"

/* ---- avtensorsink: maps, dtype ------------------------------------------ */

/**
 * GstAvTensorSinkMaps:
 * @GST_AV_TENSOR_SINK_MAPS_SUMMARY: per frame the last layer's audio-cross
 *   map reduced to one weight per patch, and the strongest patch
 * @GST_AV_TENSOR_SINK_MAPS_ALL: every attention map of every frame
 * @GST_AV_TENSOR_SINK_MAPS_NONE: no map (the strongest patch and the
 *   flags stay)
 *
 * What an .npz holds of the attention maps.
 */
typedef enum {
  GST_AV_TENSOR_SINK_MAPS_SUMMARY,
  GST_AV_TENSOR_SINK_MAPS_ALL,
  GST_AV_TENSOR_SINK_MAPS_NONE
} GstAvTensorSinkMaps;

#define GST_AV_TENSOR_SINK_MAPS_SUMMARY_TEXT \
  "Per frame the last layer's audio-cross weight of each patch and the " \
  "strongest patch"
#define GST_AV_TENSOR_SINK_MAPS_ALL_TEXT "Every attention map of every frame"
#define GST_AV_TENSOR_SINK_MAPS_NONE_TEXT \
  "No map; the strongest patch and the flags stay"

/**
 * GstAvTensorSinkDtype:
 * @GST_AV_TENSOR_SINK_DTYPE_FLOAT32: maps as float32
 * @GST_AV_TENSOR_SINK_DTYPE_FLOAT16: maps as float16 (half the bytes)
 *
 * The data type of the attention maps in an .npz.
 */
typedef enum {
  GST_AV_TENSOR_SINK_DTYPE_FLOAT32,
  GST_AV_TENSOR_SINK_DTYPE_FLOAT16
} GstAvTensorSinkDtype;

#define GST_AV_TENSOR_SINK_DTYPE_FLOAT32_TEXT "32-bit floats"
#define GST_AV_TENSOR_SINK_DTYPE_FLOAT16_TEXT "16-bit floats (half the bytes)"

/* ---- avattnoverlay: colormap -------------------------------------------- */

/**
 * GstAvAttnOverlayColormap:
 * @GST_AV_ATTN_OVERLAY_COLORMAP_INFERNO: black, purple, orange, pale yellow
 * @GST_AV_ATTN_OVERLAY_COLORMAP_JET: blue, cyan, yellow, red
 * @GST_AV_ATTN_OVERLAY_COLORMAP_GRAY: black to white
 *
 * The colours of avattnoverlay's heat map (core's AvfColormap, to which
 * gstavattnoverlay.c asserts the values are equal).
 */
typedef enum {
  GST_AV_ATTN_OVERLAY_COLORMAP_INFERNO = 0,
  GST_AV_ATTN_OVERLAY_COLORMAP_JET,
  GST_AV_ATTN_OVERLAY_COLORMAP_GRAY
} GstAvAttnOverlayColormap;

#define GST_AV_ATTN_OVERLAY_COLORMAP_INFERNO_TEXT \
  "Inferno: black, purple, orange, pale yellow"
#define GST_AV_ATTN_OVERLAY_COLORMAP_JET_TEXT "Jet: blue, cyan, yellow, red"
#define GST_AV_ATTN_OVERLAY_COLORMAP_GRAY_TEXT "Gray: black to white"

G_END_DECLS

/* GST_TYPE_AV_MODEL, GST_TYPE_AV_ATTENTION_WEIGHTS,
 * GST_TYPE_AV_TENSOR_SINK_MAPS, GST_TYPE_AV_TENSOR_SINK_DTYPE,
 * GST_TYPE_AV_ATTN_OVERLAY_COLORMAP (generated) */
#include "gstavenumtypes.h"

#endif /* __GST_AV_ENUMS_H__ */
