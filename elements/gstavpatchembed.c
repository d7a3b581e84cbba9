/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/**
 * SECTION:element-avpatchembed
 * @title: avpatchembed
 * @short_description: patch embeddings from video frames
 * @see_also: avattention, avspectrogram
 *
 * avpatchembed cuts every video frame into square patches and turns each
 * patch into an embedding vector, the video input of the avfusion model
 * (spec §2): packed RGB video in, one tensor of N patches x E values
 * (`other/x-avtensor, kind=patch-embedding`) per frame out, with the
 * frame's timestamp and duration (with avfusion-v2 weights also the
 * frame's rhythm rows, in a meta: below).
 *
 * Weights: the #GstAvPatchEmbed:weights file when set; else the shipped
 * trained model (#GstAvPatchEmbed:model=trained, the default), a model of
 * the sounding-objects world installed with the plugin; else, with
 * model=seeded (also selected by setting #GstAvPatchEmbed:seed), built-in
 * untrained weights made from the seed with #GstAvPatchEmbed:patch-size and
 * #GstAvPatchEmbed:embed-dim (spec §4).
 *
 * One model for both elements: the weights are chosen once, on either
 * element.  When none of #GstAvPatchEmbed:weights, #GstAvPatchEmbed:model
 * and #GstAvPatchEmbed:seed is set here, avpatchembed asks, when it starts,
 * the avattention downstream (through queues and other elements, with a
 * custom query named GstAvModelQuery) for the choice set on it and uses
 * that; when neither element has one both use the shipped model.  So
 * `avpatchembed ! queue ! avattention weights=my.safetensors` needs the file
 * once.  The patch caps carry the model's fingerprint (model-fingerprint: a
 * SHA-256 of the format, the sizes and every number of the weights), and
 * avattention refuses embeddings of another model, also one of the same
 * shape, with an error that names both files.
 *
 * An avfusion-v2 weights file (docs/avfusion-v2.md §2) adds each patch's
 * rhythm features: D values from the picture average-pooled by S x S and
 * mapped patch by patch (rhythm_embed), with metadata rhythm_neighbourhood
 * k > 1 averaged over the k x k patches around each patch in the grid.
 * The tensor stays [N, E] (frame-shape "N,E", embed-dim E, as with v1);
 * the rhythm rows [N, D] travel with each buffer as a #GstAvRhythmMeta
 * (gstavrhythmmeta.h, the public metadata library), and the caps add
 * rhythm-dim D so that avattention knows at negotiation that they come;
 * avattention keeps them in its history of the last second.  Elements that
 * copy or pass the buffer (queue, tee, GstBaseTransform) keep the meta;
 * avtensorsink writes the [N, E] tensor only.  With either version the
 * caps also name the model (model-format, weights), so that an avattention
 * with other weights refuses them with an error naming both.
 *
 * Negotiation: the picture must give exactly the N patches the weights
 * have positions for.  The sink caps query offers every size (cols*P,
 * rows*P) with cols*rows == N, the most square first (224x224 for the
 * seeded defaults), so that a videoscale in front picks one by itself; any
 * other size that reaches the element is refused with an error that names
 * the sizes that work.  Padded strides and GstVideoMeta are respected.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=10 ! videoconvert ! videoscale ! avpatchembed ! avtensorsink location=patches.npy
 * ]| writes the patch embeddings of ten frames to patches.npy.
 */

/* The math is in core/patch_embed.h (and core/rhythm.h for avfusion-v2);
 * this element loads the weights at start, negotiates the picture size,
 * maps frames and calls core. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstavpatchembed.h"
#include "gstavelements.h"
#include "gstavtensor.h"
#include "gstavweights.h"
#include "gstavproperty.h"
#include "gstavrhythmmeta.h"

#include <string.h>

#include <gst/video/video.h>

#include "patch_embed.h"
#include "rhythm.h"
#include "weights.h"

GST_DEBUG_CATEGORY_STATIC (gst_av_patch_embed_debug);
#define GST_CAT_DEFAULT gst_av_patch_embed_debug

#define DEFAULT_WEIGHTS ""
#define DEFAULT_MODEL GST_AV_MODEL_TRAINED
#define DEFAULT_SEED 0
#define DEFAULT_PATCH_SIZE 16
#define DEFAULT_EMBED_DIM 256

#define VIDEO_FORMATS \
  "{ RGB, BGR, RGBx, BGRx, xRGB, xBGR, RGBA, BGRA, ARGB, ABGR }"

/* Sizes named in an error message at most. */
#define MAX_SIZES_NAMED 6

enum
{
  PROP_0,
  PROP_WEIGHTS,
  PROP_MODEL,
  PROP_SEED,
  PROP_PATCH_SIZE,
  PROP_EMBED_DIM
};

struct _GstAvPatchEmbed
{
  GstBaseTransform parent;

  /* properties, under the object lock */
  GstAvWeightsChoice choice;    /* "weights", "model", "seed" */
  gint patch_size, embed_dim;
  gboolean size_set;            /* patch-size or embed-dim was set */

  /* model shape for the caps functions (any thread), under the object
   * lock; 0 until the weights are loaded.  D: rhythm features per patch
   * (avfusion-v2), 0 for v1; format and weights_name name the model in the
   * caps (NULL until loaded) */
  gint P, E, N, D;
  const gchar *format;
  gchar *weights_name;
  gchar *fingerprint;           /* gst_av_weights_fingerprint */

  /* set in start/stop and set_caps; used by the streaming thread */
  AvfWeights *weights;
  AvfPatchEmbed *pe;
  AvfRhythmEmbed *rhythm;       /* avfusion-v2 only */
  GstBufferPool *rhythm_pool;   /* v2: blocks of N * D floats for the meta */
  GstVideoInfo in_info;
  AvfPixelLayout layout;
  gsize out_size;               /* N * E * 4 bytes */
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_VIDEO_CAPS_MAKE (VIDEO_FORMATS)));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_AV_TENSOR_CAPS_PATCHES));

#define gst_av_patch_embed_parent_class parent_class
G_DEFINE_TYPE (GstAvPatchEmbed, gst_av_patch_embed, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE (avpatchembed, "avpatchembed", GST_RANK_NONE,
    GST_TYPE_AV_PATCH_EMBED);

static void gst_av_patch_embed_finalize (GObject * object);
static void gst_av_patch_embed_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_av_patch_embed_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static gboolean gst_av_patch_embed_start (GstBaseTransform * trans);
static gboolean gst_av_patch_embed_stop (GstBaseTransform * trans);
static GstCaps *gst_av_patch_embed_transform_caps (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, GstCaps * filter);
static gboolean gst_av_patch_embed_accept_caps (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps);
static gboolean gst_av_patch_embed_sink_event (GstBaseTransform * trans,
    GstEvent * event);
static gboolean gst_av_patch_embed_set_caps (GstBaseTransform * trans,
    GstCaps * incaps, GstCaps * outcaps);
static gboolean gst_av_patch_embed_transform_size (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, gsize size,
    GstCaps * othercaps, gsize * othersize);
static gboolean gst_av_patch_embed_decide_allocation (GstBaseTransform *
    trans, GstQuery * query);
static GstFlowReturn gst_av_patch_embed_transform (GstBaseTransform * trans,
    GstBuffer * inbuf, GstBuffer * outbuf);
static gboolean gst_av_patch_embed_query (GstBaseTransform * trans,
    GstPadDirection direction, GstQuery * query);

/* The properties, each with its documentation: the blurbs are short (what
 * gst-inspect-1.0 shows), the gtk-doc comments say everything. */
static void
gst_av_patch_embed_install_properties (GObjectClass * gobject_class)
{
  const GParamFlags flags = GST_AV_PARAM_READY;

  /**
   * GstAvPatchEmbed:weights:
   *
   * Path of an avfusion-v1 or avfusion-v2 safetensors weights file whose
   * patch_embed.weight, patch_embed.bias and video_pos tensors are used. A
   * v2 file adds each patch's rhythm features (the picture pooled and
   * mapped by rhythm_embed): the frames stay [N, E] and each buffer
   * carries the D rhythm features per patch, [N, D], in a #GstAvRhythmMeta
   * (caps field rhythm-dim D).
   *
   * When set it wins over #GstAvPatchEmbed:model; empty (the default)
   * means the weights that model selects, or, when neither is set here,
   * the choice set on the avattention downstream. An avattention without a
   * choice of its own uses this file too. Read at the next start.
   */
  g_object_class_install_property (gobject_class, PROP_WEIGHTS,
      g_param_spec_string ("weights", "Weights file",
          "Path of an avfusion-v1 or avfusion-v2 safetensors weights file; "
          "empty: the weights \"model\" selects", DEFAULT_WEIGHTS, flags));
  /**
   * GstAvPatchEmbed:model:
   *
   * Which weights to use when #GstAvPatchEmbed:weights is empty:
   *
   * - trained (the default): the shipped model (avfusion-v2 of the
   *   sounding-objects world, versions 1 and 2, whose coloured objects'
   *   colour tells their sound and whose rhythm tells look-alikes apart;
   *   installed as avattention/sounding-objects-v2.safetensors in the data
   *   directory, or the copy beside a plugin run from its build tree),
   *   which knows only that world: real-world footage needs weights
   *   trained on your data (#GstAvPatchEmbed:weights);
   * - trained-v1: the first shipped model, avfusion-v1 of the version 1
   *   world (sounding-objects-v1.safetensors), which sees colour only;
   * - unlabeled: the avfusion-v2 model trained without truth, by
   *   synchrony (sounding-objects-unlabeled.safetensors; model/train.py
   *   --unlabeled), less accurate than the default;
   * - seeded: built-in weights that are not trained, made from
   *   #GstAvPatchEmbed:seed with #GstAvPatchEmbed:patch-size and
   *   #GstAvPatchEmbed:embed-dim (E 256, P 16 by default), for tests and
   *   experiments. Setting seed selects them too.
   *
   * Set here or on avattention, it holds for both. Applied at the next
   * start.
   */
  g_object_class_install_property (gobject_class, PROP_MODEL,
      g_param_spec_enum ("model", "Model",
          "Which weights to use when \"weights\" is empty: a shipped "
          "trained model or built-in seeded ones", GST_TYPE_AV_MODEL,
          DEFAULT_MODEL, flags));
  /**
   * GstAvPatchEmbed:seed:
   *
   * Seed from which the built-in seeded weights are made (the same seed
   * gives the same weights everywhere, spec §4). Setting it selects
   * model=seeded; a #GstAvPatchEmbed:weights file still wins. Applied at
   * the next start.
   */
  g_object_class_install_property (gobject_class, PROP_SEED,
      g_param_spec_uint64 ("seed", "Seed",
          "Seed of the built-in seeded weights; setting it selects "
          "model=seeded", 0, G_MAXUINT64, DEFAULT_SEED, flags));
  /**
   * GstAvPatchEmbed:patch-size:
   *
   * Side in pixels of the square patches (P) of the seeded weights only
   * (model=seeded or a seed set); the trained model and a weights file set
   * their own, and then this is ignored, with a warning when it was set.
   * Applied at the next start.
   */
  g_object_class_install_property (gobject_class, PROP_PATCH_SIZE,
      g_param_spec_int ("patch-size", "Patch size",
          "Side in pixels of the square patches of the seeded weights",
          1, 65536, DEFAULT_PATCH_SIZE, flags));
  /**
   * GstAvPatchEmbed:embed-dim:
   *
   * Values per patch embedding (E) of the seeded weights only
   * (model=seeded or a seed set); it must be a multiple of their 8
   * attention heads. The trained model and a weights file set their own,
   * and then this is ignored, with a warning when it was set. Applied at
   * the next start.
   */
  g_object_class_install_property (gobject_class, PROP_EMBED_DIM,
      g_param_spec_int ("embed-dim", "Embedding width",
          "Values per patch embedding (E) of the seeded weights, a multiple "
          "of 8", 1, 65536, DEFAULT_EMBED_DIM, flags));
}

static void
gst_av_patch_embed_class_init (GstAvPatchEmbedClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);

  gobject_class->finalize = gst_av_patch_embed_finalize;
  gobject_class->set_property = gst_av_patch_embed_set_property;
  gobject_class->get_property = gst_av_patch_embed_get_property;

  gst_av_patch_embed_install_properties (gobject_class);

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "Patch embedding", "Filter/Converter/Video",
      "Turns every video frame into patch embeddings, the video input of "
      "the avfusion model; avfusion-v2 weights add each patch's rhythm "
      "features in a meta on the buffer (for avattention's one-second "
      "video history)",
      "The avattention authors");

  trans_class->start = GST_DEBUG_FUNCPTR (gst_av_patch_embed_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (gst_av_patch_embed_stop);
  trans_class->transform_caps =
      GST_DEBUG_FUNCPTR (gst_av_patch_embed_transform_caps);
  trans_class->accept_caps = GST_DEBUG_FUNCPTR (gst_av_patch_embed_accept_caps);
  trans_class->sink_event = GST_DEBUG_FUNCPTR (gst_av_patch_embed_sink_event);
  trans_class->set_caps = GST_DEBUG_FUNCPTR (gst_av_patch_embed_set_caps);
  trans_class->transform_size =
      GST_DEBUG_FUNCPTR (gst_av_patch_embed_transform_size);
  trans_class->decide_allocation =
      GST_DEBUG_FUNCPTR (gst_av_patch_embed_decide_allocation);
  trans_class->transform = GST_DEBUG_FUNCPTR (gst_av_patch_embed_transform);
  trans_class->query = GST_DEBUG_FUNCPTR (gst_av_patch_embed_query);
  trans_class->passthrough_on_same_caps = FALSE;

  GST_DEBUG_CATEGORY_INIT (gst_av_patch_embed_debug, "avpatchembed", 0,
      "patch embedding");
}

static void
gst_av_patch_embed_init (GstAvPatchEmbed * self)
{
  gst_av_weights_choice_init (&self->choice);
  self->patch_size = DEFAULT_PATCH_SIZE;
  self->embed_dim = DEFAULT_EMBED_DIM;
  gst_video_info_init (&self->in_info);
}

static void
gst_av_patch_embed_finalize (GObject * object)
{
  GstAvPatchEmbed *self = GST_AV_PATCH_EMBED (object);

  avf_patch_embed_free (self->pe);
  avf_rhythm_embed_free (self->rhythm);
  avf_weights_free (self->weights);
  g_free (self->weights_name);
  g_free (self->fingerprint);
  gst_av_weights_choice_clear (&self->choice);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_av_patch_embed_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstAvPatchEmbed *self = GST_AV_PATCH_EMBED (object);

  if (!gst_av_property_can_change (GST_ELEMENT (self), pspec))
    return;
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_WEIGHTS:
    case PROP_MODEL:
    case PROP_SEED:
      gst_av_weights_choice_set (&self->choice, pspec, value);
      break;
    case PROP_PATCH_SIZE:
      self->patch_size = g_value_get_int (value);
      self->size_set = TRUE;
      break;
    case PROP_EMBED_DIM:
      self->embed_dim = g_value_get_int (value);
      self->size_set = TRUE;
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_av_patch_embed_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstAvPatchEmbed *self = GST_AV_PATCH_EMBED (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_WEIGHTS:
    case PROP_MODEL:
    case PROP_SEED:
      gst_av_weights_choice_get (&self->choice, pspec, value);
      break;
    case PROP_PATCH_SIZE:
      g_value_set_int (value, self->patch_size);
      break;
    case PROP_EMBED_DIM:
      g_value_set_int (value, self->embed_dim);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* ---- one model for both elements ------------------------------------ */

/* avattention downstream asks, when its own model is not set, for the one
 * set here (gstavweights.h, the model query): answered from the
 * properties, in any state, and never passed further upstream. */
static gboolean
gst_av_patch_embed_query (GstBaseTransform * trans, GstPadDirection direction,
    GstQuery * query)
{
  GstAvPatchEmbed *self = GST_AV_PATCH_EMBED (trans);

  if (direction == GST_PAD_SRC && GST_QUERY_TYPE (query) == GST_QUERY_CUSTOM) {
    gboolean ours;

    GST_OBJECT_LOCK (self);
    ours = gst_av_model_query_answer (query, GST_ELEMENT (self),
        &self->choice, self->size_set ? self->patch_size : 0,
        self->size_set ? self->embed_dim : 0);
    GST_OBJECT_UNLOCK (self);
    if (ours)
      return TRUE;
  }
  return GST_BASE_TRANSFORM_CLASS (parent_class)->query (trans, direction,
      query);
}

/* ---- start / stop ---------------------------------------------------- */

static gboolean
gst_av_patch_embed_start (GstBaseTransform * trans)
{
  GstAvPatchEmbed *self = GST_AV_PATCH_EMBED (trans);
  AvfWeights *w = NULL;
  AvfError err;
  AvfStatus st = AVF_OK;
  gchar *path, *used = NULL, *fingerprint;
  GstAvModel model;
  guint64 seed;
  gint patch_size, embed_dim;
  gboolean size_set;

  GstAvWeightsChoice choice;
  gchar *from = NULL;

  GST_OBJECT_LOCK (self);
  gst_av_weights_choice_copy (&choice, &self->choice);
  patch_size = self->patch_size;
  embed_dim = self->embed_dim;
  size_set = self->size_set;
  GST_OBJECT_UNLOCK (self);

  /* no model set here: the one set on avattention downstream, if any */
  if (gst_av_weights_choice_ask_peer (GST_ELEMENT (self),
          GST_BASE_TRANSFORM_SRC_PAD (trans), &choice, NULL, NULL, &from))
    GST_INFO_OBJECT (self, "no model set: uses the one set on %s", from);
  g_free (from);
  path = choice.path;
  choice.path = NULL;
  model = choice.model;
  seed = choice.seed;
  gst_av_weights_choice_clear (&choice);

  if ((path != NULL && path[0] != '\0') || gst_av_model_is_shipped (model)) {
    w = gst_av_load_weights (GST_ELEMENT (self), path, model, &used);
    if (w == NULL)
      st = AVF_ERR_NOT_FOUND;   /* the error is posted */
    else if (size_set && (w->cfg.P != patch_size || w->cfg.E != embed_dim))
      GST_ELEMENT_WARNING (self, LIBRARY, SETTINGS,
          ("patch-size %d and embed-dim %d apply to the seeded weights "
              "only; the weights \"%s\" have P %d and E %d and are used as "
              "they are. Set model=seeded (or a seed) for seeded weights of "
              "these sizes.", patch_size, embed_dim, used, w->cfg.P,
              w->cfg.E), (NULL));
  } else {
    /* the spec defaults with P and E from the properties */
    AvfConfig cfg = avf_config_default ();

    cfg.P = patch_size;
    cfg.E = embed_dim;
    st = avf_weights_new_default (&w, &cfg, seed, &err);
    if (st != AVF_OK)
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("Cannot make built-in weights with patch-size %d and embed-dim "
              "%d: %s", patch_size, embed_dim, err.message), (NULL));
  }
  g_free (path);
  if (st == AVF_OK && avf_rhythm_config_version (&w->rhythm) == 2
      && avf_rhythm_embed_new (&self->rhythm, w, &err) != AVF_OK) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("Cannot set up the rhythm features of the weights \"%s\": %s",
            used, err.message), (NULL));
    avf_weights_free (w);
    st = AVF_ERR_NOMEM;
  }
  if (st != AVF_OK) {
    g_free (used);
    return FALSE;
  }

  fingerprint = gst_av_weights_fingerprint (w, used == NULL, seed);
  GST_INFO_OBJECT (self, "weights %s (%s, %s): E %d, P %d, N %d, D %d, "
      "rhythm_neighbourhood %d (from feature %d)", used ? used : "(seeded)",
      fingerprint, avf_weights_format (w), w->cfg.E, w->cfg.P, w->cfg.N,
      w->rhythm.D, w->rhythm.neighbourhood, w->rhythm.neighbourhood_from);
  self->weights = w;
  GST_OBJECT_LOCK (self);
  self->P = w->cfg.P;
  self->E = w->cfg.E;
  self->N = w->cfg.N;
  self->D = w->rhythm.D;
  self->format = avf_weights_format (w);
  g_free (self->weights_name);
  self->weights_name = used ? used :
      g_strdup_printf ("seeded (seed %" G_GUINT64_FORMAT ")", seed);
  g_free (self->fingerprint);
  self->fingerprint = fingerprint;
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

static gboolean
gst_av_patch_embed_stop (GstBaseTransform * trans)
{
  GstAvPatchEmbed *self = GST_AV_PATCH_EMBED (trans);

  GST_OBJECT_LOCK (self);
  self->P = self->E = self->N = self->D = 0;
  self->format = NULL;
  g_clear_pointer (&self->weights_name, g_free);
  g_clear_pointer (&self->fingerprint, g_free);
  GST_OBJECT_UNLOCK (self);
  avf_patch_embed_free (self->pe);
  self->pe = NULL;
  avf_rhythm_embed_free (self->rhythm);
  self->rhythm = NULL;
  if (self->rhythm_pool != NULL) {
    gst_buffer_pool_set_active (self->rhythm_pool, FALSE);
    gst_clear_object (&self->rhythm_pool);
  }
  avf_weights_free (self->weights);
  self->weights = NULL;
  gst_video_info_init (&self->in_info);
  self->out_size = 0;
  return TRUE;
}

/* ---- caps ------------------------------------------------------------ */

typedef struct
{
  gint cols, rows;              /* grid */
  gint width, height;           /* pixels */
} GridSize;

/* What the caps say of the model, read under the object lock. */
typedef struct
{
  gint P, E, N, D;
  const gchar *format;          /* static */
  gchar *weights;               /* g_free */
  gchar *fingerprint;           /* g_free */
} ModelCaps;

static void
model_caps_get (GstAvPatchEmbed * self, ModelCaps * m)
{
  GST_OBJECT_LOCK (self);
  m->P = self->P;
  m->E = self->E;
  m->N = self->N;
  m->D = self->D;
  m->format = self->format;
  m->weights = g_strdup (self->weights_name);
  m->fingerprint = g_strdup (self->fingerprint);
  GST_OBJECT_UNLOCK (self);
}

static void
model_caps_clear (ModelCaps * m)
{
  g_clear_pointer (&m->weights, g_free);
  g_clear_pointer (&m->fingerprint, g_free);
}

/* The patch tensors [N, E] of a cols x rows grid, with rhythm-dim D for
 * avfusion-v2 (the rows in a GstAvRhythmMeta), the model's format and
 * weights; NULL when too large. */
static GstCaps *
patch_caps (const ModelCaps * m, gint cols, gint rows, gint fps_n, gint fps_d)
{
  GstCaps *caps = m->D > 0 ?
      gst_av_tensor_caps_patches_v2 (m->E, m->D, cols, rows, m->P, fps_n,
      fps_d) : gst_av_tensor_caps_patches (m->E, cols, rows, m->P, fps_n,
      fps_d);

  if (caps != NULL && m->format != NULL)
    gst_av_tensor_caps_set_model (caps, m->format,
        m->weights ? m->weights : "");
  if (caps != NULL && m->fingerprint != NULL)
    gst_av_tensor_caps_set_fingerprint (caps, m->fingerprint);
  return caps;
}

/* Every grid with cols * rows == N whose pixel size fits in a gint, the
 * most square first (landscape before portrait).  Returns how many; free
 * *out with g_free. */
static guint
grid_sizes (gint P, gint N, GridSize ** out)
{
  GArray *a = g_array_new (FALSE, FALSE, sizeof (GridSize));
  guint len;
  gint d = 1;

  while ((gint64) (d + 1) * (d + 1) <= N)
    d++;
  for (; d >= 1; d--) {
    GridSize g[2];
    guint k, n = 0;

    if (N % d != 0)
      continue;
    g[n].cols = N / d;
    g[n++].rows = d;
    if (N / d != d) {
      g[n].cols = d;
      g[n++].rows = N / d;
    }
    for (k = 0; k < n; k++) {
      if ((gint64) g[k].cols * P > G_MAXINT
          || (gint64) g[k].rows * P > G_MAXINT)
        continue;
      g[k].width = g[k].cols * P;
      g[k].height = g[k].rows * P;
      g_array_append_val (a, g[k]);
    }
  }
  len = a->len;
  *out = (GridSize *) g_array_free (a, FALSE);
  return len;
}

static GstStructure *
video_structure (const GridSize * g, const GValue * framerate)
{
  GstStructure *s = gst_structure_from_string ("video/x-raw, format=(string)"
      VIDEO_FORMATS, NULL);

  gst_structure_set (s, "width", G_TYPE_INT, g->width, "height", G_TYPE_INT,
      g->height, NULL);
  if (framerate)
    gst_structure_set_value (s, "framerate", framerate);
  else
    gst_structure_set (s, "framerate", GST_TYPE_FRACTION_RANGE, 0, 1,
        G_MAXINT, 1, NULL);
  return s;
}

/* Video caps -> the patch tensors of the sizes they allow. */
static GstCaps *
video_to_tensor (GstCaps * caps, const ModelCaps * m)
{
  GstCaps *result = gst_caps_new_empty ();
  GridSize *sizes;
  guint n_sizes = grid_sizes (m->P, m->N, &sizes);

  for (guint i = 0; i < gst_caps_get_size (caps); i++) {
    const GstStructure *s = gst_caps_get_structure (caps, i);
    const GValue *framerate = gst_structure_get_value (s, "framerate");

    for (guint k = 0; k < n_sizes; k++) {
      GstStructure *probe = gst_structure_new (gst_structure_get_name (s),
          "width", G_TYPE_INT, sizes[k].width, "height", G_TYPE_INT,
          sizes[k].height, NULL);
      gboolean fits = gst_structure_can_intersect (s, probe);

      gst_structure_free (probe);
      if (fits) {
        GstCaps *t = patch_caps (m, sizes[k].cols, sizes[k].rows, 0, 1);
        if (t == NULL)
          continue;
        if (framerate)
          gst_structure_set_value (gst_caps_get_structure (t, 0),
              "framerate", framerate);
        result = gst_caps_merge (result, t);
      }
    }
  }
  g_free (sizes);
  return result;
}

/* Tensor caps -> the video sizes that give them, most square first.  With
 * avfusion-v2 weights what downstream says of the model (width, rhythm
 * features, format, weights) does not restrict the sizes: tensors of
 * another model then reach the caps event, refused there naming both
 * (check_downstream), instead of a bare not-negotiated upstream. */
static GstCaps *
tensor_to_video (GstCaps * caps, const ModelCaps * m)
{
  static const gchar *const model_fields[] = { "embed-dim", "rhythm-dim",
    "model-format", "weights", "model-fingerprint", "frame-shape",
    "frame-size", NULL
  };
  GstCaps *result = gst_caps_new_empty ();
  GridSize *sizes;
  guint n_sizes = grid_sizes (m->P, m->N, &sizes);

  caps = gst_caps_copy (caps);
  for (guint i = 0; m->D > 0 && i < gst_caps_get_size (caps); i++)
    for (guint k = 0; model_fields[k] != NULL; k++)
      gst_structure_remove_field (gst_caps_get_structure (caps, i),
          model_fields[k]);

  for (guint k = 0; k < n_sizes; k++) {
    GstCaps *probe = patch_caps (m, sizes[k].cols, sizes[k].rows, 0, 1);
    GstCaps *isect;

    if (probe == NULL)
      continue;

    gst_structure_remove_field (gst_caps_get_structure (probe, 0),
        "framerate");
    isect = gst_caps_intersect (probe, caps);
    for (guint i = 0; i < gst_caps_get_size (isect); i++) {
      const GstStructure *s = gst_caps_get_structure (isect, i);
      gst_caps_append_structure (result, video_structure (&sizes[k],
              gst_structure_get_value (s, "framerate")));
    }
    gst_caps_unref (isect);
    gst_caps_unref (probe);
  }
  gst_caps_unref (caps);
  g_free (sizes);
  return result;
}

static GstCaps *
gst_av_patch_embed_transform_caps (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, GstCaps * filter)
{
  GstAvPatchEmbed *self = GST_AV_PATCH_EMBED (trans);
  GstCaps *result;
  ModelCaps m;

  model_caps_get (self, &m);
  if (m.N == 0) {
    /* no weights yet: anything of the other pad's template */
    result = gst_pad_get_pad_template_caps (direction == GST_PAD_SINK
        ? GST_BASE_TRANSFORM_SRC_PAD (trans)
        : GST_BASE_TRANSFORM_SINK_PAD (trans));
  } else if (direction == GST_PAD_SINK) {
    if (gst_caps_is_any (caps)) {
      GstCaps *templ = gst_static_pad_template_get_caps (&sink_template);
      result = video_to_tensor (templ, &m);
      gst_caps_unref (templ);
    } else {
      result = video_to_tensor (caps, &m);
    }
  } else {
    result = tensor_to_video (caps, &m);
  }
  model_caps_clear (&m);

  if (filter) {
    GstCaps *tmp = gst_caps_intersect_full (result, filter,
        GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref (result);
    result = tmp;
  }
  GST_DEBUG_OBJECT (self, "%s %" GST_PTR_FORMAT " -> %" GST_PTR_FORMAT,
      direction == GST_PAD_SINK ? "sink" : "src", caps, result);
  return result;
}

/* Any video the template allows is accepted, so that a size that does not
 * work reaches sink_event and is refused there with a readable error.  The
 * caps query still offers only the sizes that work. */
static gboolean
gst_av_patch_embed_accept_caps (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps)
{
  GstPad *pad = direction == GST_PAD_SINK ? GST_BASE_TRANSFORM_SINK_PAD (trans)
      : GST_BASE_TRANSFORM_SRC_PAD (trans);
  GstCaps *templ = gst_pad_get_pad_template_caps (pad);
  gboolean ret = gst_caps_is_subset (caps, templ);

  gst_caps_unref (templ);
  return ret;
}

/* "224x224, 112x448, ..." */
static gchar *
sizes_text (gint P, gint N)
{
  GString *text = g_string_new (NULL);
  GridSize *sizes;
  guint n_sizes = grid_sizes (P, N, &sizes);

  for (guint k = 0; k < n_sizes && k < MAX_SIZES_NAMED; k++)
    g_string_append_printf (text, "%s%dx%d", k ? ", " : "", sizes[k].width,
        sizes[k].height);
  if (n_sizes > MAX_SIZES_NAMED)
    g_string_append (text, ", ...");
  if (n_sizes == 0)
    g_string_append (text, "(no size fits in a 32-bit integer)");
  g_free (sizes);
  return g_string_free (text, FALSE);
}

/* Refuses, with an error that names the sizes that work, video whose patch
 * grid would not have exactly N patches. */
static gboolean
check_size (GstAvPatchEmbed * self, GstCaps * caps)
{
  GstVideoInfo info;
  gint P, N, w, h;
  gchar *sizes;

  if (!gst_video_info_from_caps (&info, caps)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("avpatchembed cannot read a video format from %" GST_PTR_FORMAT ".",
            caps), (NULL));
    return FALSE;
  }
  GST_OBJECT_LOCK (self);
  P = self->P;
  N = self->N;
  GST_OBJECT_UNLOCK (self);
  if (N == 0) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("avpatchembed received caps before its weights were loaded."),
        (NULL));
    return FALSE;
  }
  w = GST_VIDEO_INFO_WIDTH (&info);
  h = GST_VIDEO_INFO_HEIGHT (&info);
  if (w % P == 0 && h % P == 0 && (gint64) (w / P) * (h / P) == N)
    return TRUE;

  sizes = sizes_text (P, N);
  GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
      ("avpatchembed cannot embed %dx%d video: its weights cut a picture "
          "into %dx%d-pixel patches and need exactly %d of them, so the "
          "picture must be %s. Put videoscale in front to get such a size.",
          w, h, P, P, N, sizes), ("caps %" GST_PTR_FORMAT, caps));
  g_free (sizes);
  return FALSE;
}

/* avfusion-v2: the [N, E] tensors with rhythm-dim D of @caps must be what
 * downstream takes; when not, an error names both sides instead of a bare
 * not-negotiated.  (avattention takes v2 patch embeddings of any width and
 * names both weights itself when they are not its own.) */
static gboolean
check_downstream (GstAvPatchEmbed * self, GstCaps * caps)
{
  GstCaps *mine = gst_av_patch_embed_transform_caps (GST_BASE_TRANSFORM
      (self), GST_PAD_SINK, caps, NULL);
  GstCaps *peer = gst_pad_peer_query_caps (GST_BASE_TRANSFORM_SRC_PAD (self),
      mine);
  gboolean ok = gst_caps_can_intersect (mine, peer);

  if (!ok) {
    const GstStructure *s = gst_caps_is_empty (peer) ? NULL :
        gst_caps_get_structure (peer, 0);
    gint want_e = 0;
    gchar *want;
    ModelCaps m;

    model_caps_get (self, &m);
    if (s != NULL && gst_structure_get_int (s, "embed-dim", &want_e))
      want = g_strdup_printf ("patch embeddings %d wide", want_e);
    else
      want = gst_caps_to_string (peer);
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("avpatchembed's weights \"%s\" (%s: E %d, D %d rhythm features, "
            "%d patches) make [%d, %d] patch embeddings with [%d, %d] rhythm "
            "rows, but downstream takes %s: set \"weights\" (or \"model\") "
            "on one of avpatchembed and avattention only, the other one "
            "follows it.", m.weights, m.format, m.E, m.D, m.N, m.N, m.E,
            m.N, m.D, want),
        ("downstream accepts %" GST_PTR_FORMAT, peer));
    g_free (want);
    model_caps_clear (&m);
  }
  gst_caps_unref (mine);
  gst_caps_unref (peer);
  return ok;
}

static gboolean
gst_av_patch_embed_sink_event (GstBaseTransform * trans, GstEvent * event)
{
  GstAvPatchEmbed *self = GST_AV_PATCH_EMBED (trans);

  if (GST_EVENT_TYPE (event) == GST_EVENT_CAPS) {
    GstCaps *caps;

    gst_event_parse_caps (event, &caps);
    if (!check_size (self, caps)
        || (self->rhythm != NULL && !check_downstream (self, caps))) {
      gst_event_unref (event);
      return FALSE;
    }
  }
  return GST_BASE_TRANSFORM_CLASS (parent_class)->sink_event (trans, event);
}

/* Where R, G and B are in a pixel of a packed 8-bit RGB format, from
 * GstVideoFormatInfo; FALSE for any other format. */
static gboolean
layout_for_format (GstVideoFormat format, AvfPixelLayout * layout)
{
  const GstVideoFormatInfo *f = gst_video_format_get_info (format);
  const guint pstride = f ? (guint) GST_VIDEO_FORMAT_INFO_PSTRIDE (f, 0) : 0;

  if (f == NULL || !GST_VIDEO_FORMAT_INFO_IS_RGB (f)
      || GST_VIDEO_FORMAT_INFO_N_PLANES (f) != 1
      || (pstride != 3 && pstride != 4))
    return FALSE;
  for (guint c = 0; c < 3; c++)
    if (GST_VIDEO_FORMAT_INFO_DEPTH (f, c) != 8
        || GST_VIDEO_FORMAT_INFO_SHIFT (f, c) != 0
        || GST_VIDEO_FORMAT_INFO_PSTRIDE (f, c) != (gint) pstride)
      return FALSE;
  layout->bpp = (int) pstride;
  layout->r = GST_VIDEO_FORMAT_INFO_POFFSET (f, 0);
  layout->g = GST_VIDEO_FORMAT_INFO_POFFSET (f, 1);
  layout->b = GST_VIDEO_FORMAT_INFO_POFFSET (f, 2);
  return TRUE;
}

static gboolean
gst_av_patch_embed_set_caps (GstBaseTransform * trans, GstCaps * incaps,
    GstCaps * outcaps)
{
  GstAvPatchEmbed *self = GST_AV_PATCH_EMBED (trans);
  GstVideoInfo info;
  AvfPixelLayout layout;
  AvfPatchEmbed *pe = NULL;
  AvfError err;
  guint64 out_size;

  if (!gst_video_info_from_caps (&info, incaps)
      || !layout_for_format (GST_VIDEO_INFO_FORMAT (&info), &layout)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("avpatchembed takes packed 8-bit RGB video (" VIDEO_FORMATS "), "
            "not %" GST_PTR_FORMAT ".", incaps), (NULL));
    return FALSE;
  }
  if (self->weights == NULL) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("avpatchembed was given caps before its weights were loaded."),
        (NULL));
    return FALSE;
  }
  if (avf_patch_embed_new (&pe, self->weights, GST_VIDEO_INFO_WIDTH (&info),
          GST_VIDEO_INFO_HEIGHT (&info), &err) != AVF_OK) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("avpatchembed cannot embed %dx%d video: %s.",
            GST_VIDEO_INFO_WIDTH (&info), GST_VIDEO_INFO_HEIGHT (&info),
            err.message), ("caps %" GST_PTR_FORMAT, incaps));
    return FALSE;
  }
  /* E, D and N were checked against each other when the weights were
   * made */
  if (!avf_size_mul (&out_size, (guint64) self->weights->cfg.N,
          (guint64) self->weights->cfg.E)
      || !avf_size_mul (&out_size, out_size, sizeof (gfloat))
      || out_size > G_MAXSIZE) {
    avf_patch_embed_free (pe);
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("A %d x %d patch tensor is too large.", self->weights->cfg.N,
            self->weights->cfg.E), (NULL));
    return FALSE;
  }
  if (self->rhythm != NULL && self->rhythm_pool == NULL) {
    /* avfusion-v2: the rows of the meta, N * D floats a frame (N, D <=
     * 65536, checked with the weights) */
    const gsize rows = gst_av_rhythm_meta_data_size (1,
        (guint) self->weights->cfg.N, (guint) self->weights->rhythm.D);

    self->rhythm_pool = rows <= G_MAXUINT ?
        gst_av_buffer_pool_new (NULL, (guint) rows) : NULL;
    if (self->rhythm_pool == NULL) {
      avf_patch_embed_free (pe);
      GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
          ("Cannot set up a pool for the rhythm rows [%d, %d].",
              self->weights->cfg.N, self->weights->rhythm.D), (NULL));
      return FALSE;
    }
  }

  avf_patch_embed_free (self->pe);
  self->pe = pe;
  self->in_info = info;
  self->layout = layout;
  self->out_size = (gsize) out_size;
  GST_INFO_OBJECT (self, "%dx%d %s -> %" GST_PTR_FORMAT,
      GST_VIDEO_INFO_WIDTH (&info), GST_VIDEO_INFO_HEIGHT (&info),
      GST_VIDEO_INFO_NAME (&info), outcaps);
  return TRUE;
}

static gboolean
gst_av_patch_embed_transform_size (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, gsize size,
    GstCaps * othercaps, gsize * othersize)
{
  if (direction == GST_PAD_SINK) {
    GstAvTensorInfo tinfo;

    if (!gst_av_tensor_info_from_caps (&tinfo, othercaps, NULL)
        || tinfo.frame_size > G_MAXSIZE / sizeof (gfloat))
      return FALSE;
    *othersize = tinfo.frame_size * sizeof (gfloat);
  } else {
    GstVideoInfo vinfo;

    if (!gst_video_info_from_caps (&vinfo, othercaps))
      return FALSE;
    *othersize = GST_VIDEO_INFO_SIZE (&vinfo);
  }
  return TRUE;
}

/* Makes sure output buffers come from a pool of N*E*4-byte buffers, also
 * when downstream proposes none. */
static gboolean
gst_av_patch_embed_decide_allocation (GstBaseTransform * trans,
    GstQuery * query)
{
  GstAvPatchEmbed *self = GST_AV_PATCH_EMBED (trans);
  GstBufferPool *pool = NULL;
  guint size = 0, min = 0, max = 0;

  if (self->out_size > G_MAXUINT) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("Output tensors of %" G_GSIZE_FORMAT " bytes are too large.",
            self->out_size), (NULL));
    return FALSE;
  }
  if (gst_query_get_n_allocation_pools (query) > 0)
    gst_query_parse_nth_allocation_pool (query, 0, &pool, &size, &min, &max);
  if (pool == NULL)
    pool = gst_buffer_pool_new ();
  size = MAX (size, (guint) self->out_size);
  if (max != 0 && max < 2)
    max = 2;
  if (gst_query_get_n_allocation_pools (query) > 0)
    gst_query_set_nth_allocation_pool (query, 0, pool, size, min, max);
  else
    gst_query_add_allocation_pool (query, pool, size, min, max);
  gst_object_unref (pool);

  return GST_BASE_TRANSFORM_CLASS (parent_class)->decide_allocation (trans,
      query);
}

/* ---- data ------------------------------------------------------------ */

static GstFlowReturn
gst_av_patch_embed_transform (GstBaseTransform * trans, GstBuffer * inbuf,
    GstBuffer * outbuf)
{
  GstAvPatchEmbed *self = GST_AV_PATCH_EMBED (trans);
  const gint width = GST_VIDEO_INFO_WIDTH (&self->in_info);
  const gint height = GST_VIDEO_INFO_HEIGHT (&self->in_info);
  GstVideoFrame frame;
  GstMapInfo omap;
  const guint8 *pixels;
  gint stride;
  gsize skip, avail, row_bytes;

  if (G_UNLIKELY (self->pe == NULL)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("avpatchembed received video before its format was negotiated."),
        (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }

  if (!gst_video_frame_map (&frame, &self->in_info, inbuf, GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("An input buffer of %" G_GSIZE_FORMAT " bytes does not hold a "
            "%dx%d %s picture (too small, or its video meta does not match "
            "the caps).", gst_buffer_get_size (inbuf), width, height,
            GST_VIDEO_INFO_NAME (&self->in_info)), (NULL));
    return GST_FLOW_ERROR;
  }

  /* nothing may be read beyond the mapping, whatever the meta says */
  pixels = GST_VIDEO_FRAME_PLANE_DATA (&frame, 0);
  stride = GST_VIDEO_FRAME_PLANE_STRIDE (&frame, 0);
  row_bytes = (gsize) width * (gsize) self->layout.bpp;
  skip = (gsize) (pixels - (const guint8 *) frame.map[0].data);
  avail = skip <= frame.map[0].size ? frame.map[0].size - skip : 0;
  if (stride < 0 || (gsize) stride < row_bytes || avail < row_bytes
      || (avail - row_bytes) / (gsize) stride < (gsize) (height - 1)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("An input buffer does not hold a whole %dx%d %s picture with rows "
            "of %d bytes (%" G_GSIZE_FORMAT " bytes mapped).", width, height,
            GST_VIDEO_INFO_NAME (&self->in_info), stride, avail), (NULL));
    gst_video_frame_unmap (&frame);
    return GST_FLOW_ERROR;
  }

  if (!gst_buffer_map (outbuf, &omap, GST_MAP_WRITE)) {
    gst_video_frame_unmap (&frame);
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
        ("Could not map an output buffer for writing."), (NULL));
    return GST_FLOW_ERROR;
  }
  if (omap.size < self->out_size) {
    gst_buffer_unmap (outbuf, &omap);
    gst_video_frame_unmap (&frame);
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
        ("An output buffer of %" G_GSIZE_FORMAT " bytes is smaller than "
            "the %" G_GSIZE_FORMAT " bytes of a patch tensor.", omap.size,
            self->out_size), (NULL));
    return GST_FLOW_ERROR;
  }

  avf_patch_embed_forward (self->pe, (gfloat *) omap.data, pixels,
      (size_t) stride, self->layout);
  gst_buffer_unmap (outbuf, &omap);
  gst_video_frame_unmap (&frame);
  gst_buffer_set_size (outbuf, self->out_size);

  if (self->rhythm != NULL) {
    /* avfusion-v2: r_n of the patches just embedded, [N, D] in a meta
     * (docs/avfusion-v2.md §2) */
    GstAvRhythmMeta *meta;
    GstBuffer *rows = NULL;
    int cols, grid_rows;

    /* one frame, one meta: never one copied from the input */
    while ((meta = gst_buffer_get_av_rhythm_meta (outbuf)) != NULL)
      gst_buffer_remove_meta (outbuf, (GstMeta *) meta);
    if (gst_buffer_pool_acquire_buffer (self->rhythm_pool, &rows, NULL)
        != GST_FLOW_OK || (meta = gst_buffer_add_av_rhythm_meta (outbuf, 1,
                (guint) self->weights->cfg.N,
                (guint) self->weights->rhythm.D, rows)) == NULL) {
      GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
          ("Cannot attach the rhythm rows [%d, %d] to a patch tensor.",
              self->weights->cfg.N, self->weights->rhythm.D), (NULL));
      return GST_FLOW_ERROR;
    }
    avf_patch_embed_grid (self->pe, &cols, &grid_rows);
    avf_rhythm_embed_forward (self->rhythm,
        gst_av_rhythm_meta_get_rows_writable (meta, 0),
        (size_t) self->weights->rhythm.D, avf_patch_embed_patches (self->pe),
        cols);
  }
  return GST_FLOW_OK;
}
