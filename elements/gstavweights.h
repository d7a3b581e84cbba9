/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The weights of avpatchembed and avattention: which file, loading it, the
 * element error for a file that cannot be used, and the checks that the
 * two elements (and the window) go with one model.
 */
#ifndef __GST_AV_WEIGHTS_H__
#define __GST_AV_WEIGHTS_H__

#include <gst/gst.h>

#include "avf_error.h"
#include "gstavtensor.h"
#include "weights.h"

G_BEGIN_DECLS

/* Posts the GST_ELEMENT_ERROR for a failed weights load (core error
 * record): missing file RESOURCE/NOT_FOUND, unreadable or malformed file
 * RESOURCE/READ, out of memory RESOURCE/NO_SPACE_LEFT, a tensor set that is
 * not an avfusion-v1 or avfusion-v2 model RESOURCE/SETTINGS.  The text names the file and
 * carries the core message (tensor, shapes, byte offset). */
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

/* The three properties that choose the weights, the same on avpatchembed
 * and avattention: "weights" (a file; "" = none), "model" and "seed"
 * (setting it selects model=seeded).  Stored under the element's object
 * lock by set_property, read at start. */
typedef struct {
  gchar *path;
  GstAvModel model;
  guint64 seed;
} GstAvWeightsChoice;

void gst_av_weights_choice_init (GstAvWeightsChoice * choice);
void gst_av_weights_choice_clear (GstAvWeightsChoice * choice);

/* set_property and get_property of "weights", "model" and "seed" (by the
 * property's name); FALSE for any other property. */
gboolean gst_av_weights_choice_set (GstAvWeightsChoice * choice,
    GParamSpec * pspec, const GValue * value);
gboolean gst_av_weights_choice_get (const GstAvWeightsChoice * choice,
    GParamSpec * pspec, GValue * value);

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

/* ---- one model on both elements ----------------------------------------- */

/* avattention's video_sink: the patch embeddings of @info (parsed from
 * @caps, whose "weights" field names their weights when avpatchembed made
 * them) must come from a model like @w (called @name): the same format
 * (rhythm features or not, docs/avfusion-v2.md §2) and, for avfusion-v2,
 * the same E and D.  FALSE after a CORE/NEGOTIATION error that names both
 * weights and formats.  (v1's own width and patch checks stay with the
 * element.) */
gboolean gst_av_check_patch_model (GstElement * element, const AvfWeights * w,
    const gchar * name, const GstAvTensorInfo * info, GstCaps * caps);

/* avfusion-v2 cuts the window into K bins of G slots: a window of @T
 * spectrogram frames (@window_ns at @hop / @rate) must be K G.  TRUE for
 * an avfusion-v1 model; else FALSE after a CORE/NEGOTIATION error that
 * names both numbers, prefixed by @where ("audio_sink: " or ""). */
gboolean gst_av_check_rhythm_window (GstElement * element,
    const AvfWeights * w, const gchar * name, gint64 window_ns, gint T,
    gint hop, gint rate, const gchar * where);

G_END_DECLS

#endif /* __GST_AV_WEIGHTS_H__ */
