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
#include "gstavenums.h"
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

/* ---- which weights: a file, a shipped trained model, or seeded ---------
 *
 * avpatchembed and avattention use, in this order: the "weights" file when
 * set; else, with model=trained (the default), the project's shipped
 * default model (models/sounding-objects-v2.safetensors, avfusion-v2,
 * docs/avfusion-v2.md); with model=trained-v1 the first shipped model
 * (models/sounding-objects-v1.safetensors, avfusion-v1, spec
 * sounding-objects.md); else, with model=seeded (also selected by setting
 * "seed"), built-in weights made from the seed (spec §4).  The shipped
 * models are installed to <datadir>/avattention; in the build tree they are
 * copied beside the plugin, and a plugin loaded from the build tree uses
 * those copies.  GstAvModel, the installed paths
 * (GST_AV_DEFAULT_MODEL_INSTALLED, GST_AV_V1_MODEL_INSTALLED) and the texts
 * that describe the models are in gstavenums.h. */

/* The three properties that choose the weights, the same on avpatchembed
 * and avattention: "weights" (a file; "" = none), "model" and "seed"
 * (setting it selects model=seeded).  Stored under the element's object
 * lock by set_property, read at start. */
typedef struct {
  gchar *path;
  GstAvModel model;
  guint64 seed;
  gboolean model_set;           /* "model" or "seed" was set */
} GstAvWeightsChoice;

void gst_av_weights_choice_init (GstAvWeightsChoice * choice);
void gst_av_weights_choice_clear (GstAvWeightsChoice * choice);
/* @dst (uninitialised) becomes a copy of @src (the caller holds the lock
 * that guards @src); gst_av_weights_choice_clear it after use. */
void gst_av_weights_choice_copy (GstAvWeightsChoice * dst,
    const GstAvWeightsChoice * src);

/* set_property and get_property of "weights", "model" and "seed" (by the
 * property's name); FALSE for any other property. */
gboolean gst_av_weights_choice_set (GstAvWeightsChoice * choice,
    GParamSpec * pspec, const GValue * value);
gboolean gst_av_weights_choice_get (const GstAvWeightsChoice * choice,
    GParamSpec * pspec, GValue * value);

/* TRUE when the user chose the model on this element: a non-empty
 * "weights", or "model" or "seed" set.  An element without a choice
 * follows the other element's (below). */
gboolean gst_av_weights_choice_is_set (const GstAvWeightsChoice * choice);

/* ---- one choice for both elements: the model query -----------------------
 *
 * avpatchembed and avattention each load the weights, but the model is one
 * choice: set on either element it holds for both.  An element whose own
 * choice is not set asks, when it starts, the other one with a custom
 * query (structure GST_AV_MODEL_QUERY_NAME): avpatchembed downstream from
 * its src pad, avattention upstream from its video_sink.  Elements in
 * between (queue, tee, capsfilter, ...) pass it on as they pass any query
 * they do not know.  The other element answers with its *properties*
 * ("weights", "model", "seed"; avpatchembed also its seeded patch-size and
 * embed-dim), whatever its state, so the order in which the two start does
 * not matter; it answers "not set" when it has no choice either, and both
 * then use the default.  What was loaded is checked at negotiation: the
 * patch caps carry the weights' fingerprint (gst_av_weights_fingerprint)
 * and avattention refuses embeddings of another model with an error that
 * names both files (gst_av_check_patch_fingerprint).
 *
 * Why a query and not a GstContext: a context is pipeline-wide (a GstBin
 * keeps the contexts its children announce and hands them to any element
 * that asks), while the model belongs to one stream of patch embeddings:
 * one pipeline may run two avattention branches with different models.
 * Why not the caps query: the choice must be known before avpatchembed can
 * answer caps at all (its picture sizes come from the weights), and a model
 * field in the caps query would turn two different models into a bare
 * not-negotiated instead of an error naming both files. */

#define GST_AV_MODEL_QUERY_NAME "GstAvModelQuery"

/* Answers @query when it is the model query: fills in @choice (the
 * answering @element's properties, read by the caller under its object
 * lock) and, when @patch_size / @embed_dim are > 0, the seeded sizes.
 * Returns FALSE for any other query. */
gboolean gst_av_model_query_answer (GstQuery * query, GstElement * element,
    const GstAvWeightsChoice * choice, gint patch_size, gint embed_dim);

/* When @choice is not set: asks the peer of @pad (and the elements beyond
 * it) for the other element's choice.  TRUE when it has one: @choice then
 * holds it, *@patch_size and *@embed_dim (optional) the seeded sizes it
 * named (left alone when it named none), *@from (optional, g_free) the
 * answering element's name.  FALSE, @choice untouched, otherwise. */
gboolean gst_av_weights_choice_ask_peer (GstElement * element, GstPad * pad,
    GstAvWeightsChoice * choice, gint * patch_size, gint * embed_dim,
    gchar ** from);

/* The fingerprint of a model, carried in the patch caps
 * ("model-fingerprint"): for weights read from a file
 * "sha256:" + the SHA-256 of what decides the numbers both elements
 * compute: the format, every size and number of the configuration
 * (AvfConfig, AvfRhythmConfig), and every tensor's name, shape and float32
 * values (little-endian) in the canonical order of avf_weights_tensor.  So
 * two files of the same shape with different numbers differ, and two
 * copies of one file (another path, other metadata text such as the
 * training provenance) are the same model.  Built-in seeded weights are a
 * function of their sizes and seed (spec §4): "seeded:" + format, seed, E
 * and P, without hashing their megabytes.  g_free. */
gchar *gst_av_weights_fingerprint (const AvfWeights * w, gboolean seeded,
    guint64 seed);

/* TRUE for the models that are files shipped with the project
 * (model=trained, model=trained-v1), FALSE for model=seeded. */
gboolean gst_av_model_is_shipped (GstAvModel model);

/* The path of the shipped model @model (GST_AV_MODEL_TRAINED or
 * GST_AV_MODEL_TRAINED_V1) for the plugin that @element comes from: the
 * copy beside the plugin when the plugin file lives in the build tree
 * (AVF_PLUGIN_BUILD_DIR, compared as the same directory on disk), else the
 * installed one (GST_AV_DEFAULT_MODEL_INSTALLED, GST_AV_V1_MODEL_INSTALLED).
 * g_free the result. */
gchar *gst_av_shipped_model_path (GstElement * element, GstAvModel model);

/* gst_av_shipped_model_path() of the default, model=trained. */
gchar *gst_av_default_model_path (GstElement * element);

/* Loads the weights file @path, or the shipped model @model (trained or
 * trained-v1) when @path is NULL or empty.  On failure posts a
 * GST_ELEMENT_ERROR (a missing shipped model: RESOURCE/NOT_FOUND naming its
 * path and the "weights" and "model" properties) and returns NULL.  *@used
 * (optional, g_free) gets the path that was read. */
AvfWeights *gst_av_load_weights (GstElement * element, const gchar * path,
    GstAvModel model, gchar ** used);

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

/* avattention's video_sink: patch caps whose "model-fingerprint" differs
 * from @fingerprint (the weights @name of @element) come from another
 * model: FALSE after a CORE/NEGOTIATION error that names both weights
 * (the caps' "weights" and @name).  Caps without a fingerprint (patch
 * tensors not made by avpatchembed) pass. */
gboolean gst_av_check_patch_fingerprint (GstElement * element,
    const gchar * name, const gchar * fingerprint, GstCaps * caps);

/* avfusion-v2 cuts the window into K bins of G slots: a window of @T
 * spectrogram frames (@window_ns at @hop / @rate) must be K G.  TRUE for
 * an avfusion-v1 model; else FALSE after a CORE/NEGOTIATION error that
 * names both numbers, prefixed by @where ("audio_sink: " or ""). */
gboolean gst_av_check_rhythm_window (GstElement * element,
    const AvfWeights * w, const gchar * name, gint64 window_ns, gint T,
    gint hop, gint rate, const gchar * where);

G_END_DECLS

#endif /* __GST_AV_WEIGHTS_H__ */
