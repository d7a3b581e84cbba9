/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstavweights.h"

#include <glib/gstdio.h>
#include <string.h>

void
gst_av_post_weights_error (GstElement * element, const gchar * path,
    const AvfError * err)
{
  const gchar *what = path && path[0] ? path : "(built-in weights)";

  switch (err->status) {
    case AVF_ERR_NOT_FOUND:
      GST_ELEMENT_ERROR (element, RESOURCE, NOT_FOUND,
          ("The weights file \"%s\" was not found.", what),
          ("%s", err->message));
      break;
    case AVF_ERR_FORMAT:
    case AVF_ERR_IO:
      GST_ELEMENT_ERROR (element, RESOURCE, READ,
          ("The weights file \"%s\" cannot be read as avfusion "
              "safetensors (avfusion-v1 or avfusion-v2): %s", what,
              err->message),
          ("%s (byte offset %" G_GINT64_FORMAT ")",
              avf_status_name (err->status), (gint64) err->offset));
      break;
    case AVF_ERR_NOMEM:
      GST_ELEMENT_ERROR (element, RESOURCE, NO_SPACE_LEFT,
          ("Not enough memory to load the weights \"%s\": %s", what,
              err->message), (NULL));
      break;
    default:
      GST_ELEMENT_ERROR (element, RESOURCE, SETTINGS,
          ("The weights file \"%s\" does not form an avfusion model "
              "(avfusion-v1 or avfusion-v2): %s", what, err->message),
          ("%s", avf_status_name (err->status)));
      break;
  }
}

/* ---- which weights ------------------------------------------------------ */

void
gst_av_weights_choice_init (GstAvWeightsChoice * choice)
{
  choice->path = g_strdup ("");
  choice->model = GST_AV_MODEL_TRAINED;
  choice->seed = 0;
  choice->model_set = FALSE;
}

void
gst_av_weights_choice_clear (GstAvWeightsChoice * choice)
{
  g_clear_pointer (&choice->path, g_free);
}

void
gst_av_weights_choice_copy (GstAvWeightsChoice * dst,
    const GstAvWeightsChoice * src)
{
  *dst = *src;
  dst->path = g_strdup (src->path);
}

gboolean
gst_av_weights_choice_set (GstAvWeightsChoice * choice, GParamSpec * pspec,
    const GValue * value)
{
  if (g_str_equal (pspec->name, "weights")) {
    g_free (choice->path);
    choice->path = g_value_dup_string (value);
    if (choice->path == NULL)
      choice->path = g_strdup ("");
  } else if (g_str_equal (pspec->name, "model")) {
    choice->model = g_value_get_enum (value);
    choice->model_set = TRUE;
  } else if (g_str_equal (pspec->name, "seed")) {
    /* asking for a seed asks for the seeded weights */
    choice->seed = g_value_get_uint64 (value);
    choice->model = GST_AV_MODEL_SEEDED;
    choice->model_set = TRUE;
  } else {
    return FALSE;
  }
  return TRUE;
}

gboolean
gst_av_weights_choice_get (const GstAvWeightsChoice * choice,
    GParamSpec * pspec, GValue * value)
{
  if (g_str_equal (pspec->name, "weights"))
    g_value_set_string (value, choice->path);
  else if (g_str_equal (pspec->name, "model"))
    g_value_set_enum (value, choice->model);
  else if (g_str_equal (pspec->name, "seed"))
    g_value_set_uint64 (value, choice->seed);
  else
    return FALSE;
  return TRUE;
}

gboolean
gst_av_weights_choice_is_set (const GstAvWeightsChoice * choice)
{
  return (choice->path != NULL && choice->path[0] != '\0')
      || choice->model_set;
}

/* ---- the model query ---------------------------------------------------- */

gboolean
gst_av_model_query_answer (GstQuery * query, GstElement * element,
    const GstAvWeightsChoice * choice, gint patch_size, gint embed_dim)
{
  const GstStructure *q;
  GstStructure *s;

  if (GST_QUERY_TYPE (query) != GST_QUERY_CUSTOM)
    return FALSE;
  q = gst_query_get_structure (query);
  if (q == NULL || !gst_structure_has_name (q, GST_AV_MODEL_QUERY_NAME))
    return FALSE;
  s = gst_query_writable_structure (query);
  gst_structure_set (s, "answered", G_TYPE_BOOLEAN, TRUE,
      "set", G_TYPE_BOOLEAN, gst_av_weights_choice_is_set (choice),
      "element", G_TYPE_STRING, GST_OBJECT_NAME (element),
      "weights", G_TYPE_STRING, choice->path ? choice->path : "",
      "model", G_TYPE_INT, (gint) choice->model,
      "seed", G_TYPE_UINT64, choice->seed,
      "patch-size", G_TYPE_INT, patch_size,
      "embed-dim", G_TYPE_INT, embed_dim, NULL);
  return TRUE;
}

gboolean
gst_av_weights_choice_ask_peer (GstElement * element, GstPad * pad,
    GstAvWeightsChoice * choice, gint * patch_size, gint * embed_dim,
    gchar ** from)
{
  GstQuery *query;
  const GstStructure *s;
  gboolean answered = FALSE, set = FALSE;
  const gchar *path, *who;
  gint model = 0, p = 0, e = 0;
  guint64 seed = 0;

  if (gst_av_weights_choice_is_set (choice) || pad == NULL)
    return FALSE;
  query = gst_query_new_custom (GST_QUERY_CUSTOM,
      gst_structure_new_empty (GST_AV_MODEL_QUERY_NAME));
  if (!gst_pad_peer_query (pad, query)) {
    gst_query_unref (query);
    GST_DEBUG_OBJECT (element, "no element answers which model to use");
    return FALSE;
  }
  s = gst_query_get_structure (query);
  path = gst_structure_get_string (s, "weights");
  who = gst_structure_get_string (s, "element");
  if (!gst_structure_get_boolean (s, "answered", &answered) || !answered
      || !gst_structure_get_boolean (s, "set", &set) || !set
      || !gst_structure_get_int (s, "model", &model)
      || !gst_structure_get_uint64 (s, "seed", &seed) || path == NULL
      || (model != GST_AV_MODEL_SEEDED && !gst_av_model_is_shipped (model))) {
    GST_DEBUG_OBJECT (element, "%s has no model set either: the default",
        GST_STR_NULL (who));
    gst_query_unref (query);
    return FALSE;
  }
  g_free (choice->path);
  choice->path = g_strdup (path);
  choice->model = (GstAvModel) model;
  choice->seed = seed;
  choice->model_set = TRUE;
  if (patch_size && gst_structure_get_int (s, "patch-size", &p) && p > 0)
    *patch_size = p;
  if (embed_dim && gst_structure_get_int (s, "embed-dim", &e) && e > 0)
    *embed_dim = e;
  GST_INFO_OBJECT (element, "uses the model set on %s: weights \"%s\", "
      "model %d, seed %" G_GUINT64_FORMAT, GST_STR_NULL (who), path, model,
      seed);
  if (from)
    *from = g_strdup (who);
  gst_query_unref (query);
  return TRUE;
}

/* ---- the fingerprint ---------------------------------------------------- */

static void
hash_int (GChecksum * sum, gint64 v)
{
  guint64 le = GUINT64_TO_LE ((guint64) v);

  g_checksum_update (sum, (const guchar *) &le, sizeof le);
}

gchar *
gst_av_weights_fingerprint (const AvfWeights * w, gboolean seeded,
    guint64 seed)
{
  const AvfConfig *c = &w->cfg;
  const AvfRhythmConfig *r = &w->rhythm;
  const gint64 sizes[] = { c->E, c->H, c->L, c->F, c->M, c->P, c->N,
    c->T_max, c->sample_rate, c->n_fft, c->hop_length, c->window_ms,
    r->D, r->C, r->Q, r->K, r->G, r->lags, r->lag_min,
    r->neighbourhood > 1 ? r->neighbourhood : 1
  };
  /* (only a split neighbourhood adds to the sizes hashed: the fingerprints
   * of every other model stay as they were) */
  const gint64 from = r->neighbourhood > 1 ? r->neighbourhood_from : 0;
  const gchar *format = avf_weights_format (w);
  GChecksum *sum;
  AvfWeightTensor t;
  union
  {
    gfloat f;
    guint32 u;
  } threshold;
  gchar *text;

  if (seeded)
    return g_strdup_printf ("seeded:%s:seed=%" G_GUINT64_FORMAT ":E=%d:P=%d",
        format, seed, c->E, c->P);

  sum = g_checksum_new (G_CHECKSUM_SHA256);
  g_checksum_update (sum, (const guchar *) format, strlen (format) + 1);
  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
    hash_int (sum, sizes[i]);
  if (from != 0)
    hash_int (sum, from);
  threshold.f = c->visible_threshold;
  hash_int (sum, threshold.u);
  for (gsize i = 0; avf_weights_tensor (w, i, &t); i++) {
    g_checksum_update (sum, (const guchar *) t.name, strlen (t.name) + 1);
    hash_int (sum, t.ndim);
    for (gint d = 0; d < t.ndim && d < 4; d++)
      hash_int (sum, (gint64) t.shape[d]);
#if G_BYTE_ORDER == G_LITTLE_ENDIAN
    g_checksum_update (sum, (const guchar *) t.data, t.numel * sizeof (gfloat));
#else
    for (guint64 k = 0; k < t.numel; k++) {
      guint32 v;

      memcpy (&v, &t.data[k], sizeof v);
      v = GUINT32_TO_LE (v);
      g_checksum_update (sum, (const guchar *) &v, sizeof v);
    }
#endif
  }
  text = g_strconcat ("sha256:", g_checksum_get_string (sum), NULL);
  g_checksum_free (sum);
  return text;
}

/* TRUE when @a and @b name the same directory on disk (symbolic links and
 * different spellings of one path included). */
static gboolean
same_directory (const gchar * a, const gchar * b)
{
  GStatBuf sa, sb;

  if (g_stat (a, &sa) != 0 || g_stat (b, &sb) != 0)
    return FALSE;
  return S_ISDIR (sa.st_mode) && sa.st_dev == sb.st_dev
      && sa.st_ino == sb.st_ino;
}

/* The shipped models: how an error names the choice, the file's name
 * beside a plugin in the build tree, and where an installed plugin finds
 * it.  The first row is the default. */
typedef struct
{
  GstAvModel model;
  const gchar *choice;
  const gchar *name;
  const gchar *installed;
} ShippedModel;

static const ShippedModel shipped_models[] = {
  {GST_AV_MODEL_TRAINED, "trained (the default)", AVF_MODEL_NAME,
      GST_AV_DEFAULT_MODEL_INSTALLED},
  {GST_AV_MODEL_TRAINED_V1, "trained-v1", AVF_MODEL_V1_NAME,
      GST_AV_V1_MODEL_INSTALLED},
  {GST_AV_MODEL_UNLABELED, "unlabeled", AVF_MODEL_UNLABELED_NAME,
      GST_AV_UNLABELED_MODEL_INSTALLED},
};

/* @model's row, NULL when it is not a shipped model. */
static const ShippedModel *
find_shipped (GstAvModel model)
{
  for (guint i = 0; i < G_N_ELEMENTS (shipped_models); i++)
    if (shipped_models[i].model == model)
      return &shipped_models[i];
  return NULL;
}

/* @model's row, the default's for any other value. */
static const ShippedModel *
shipped_model (GstAvModel model)
{
  const ShippedModel *m = find_shipped (model);

  return m != NULL ? m : &shipped_models[0];
}

gboolean
gst_av_model_is_shipped (GstAvModel model)
{
  return find_shipped (model) != NULL;
}

gchar *
gst_av_shipped_model_path (GstElement * element, GstAvModel model)
{
  const gchar *name = shipped_model (model)->name;
  GstElementFactory *factory = gst_element_get_factory (element);
  GstPlugin *plugin = NULL;
  const gchar *file = NULL;
  gboolean build_tree = FALSE;

  if (factory != NULL)
    plugin = gst_plugin_feature_get_plugin (GST_PLUGIN_FEATURE (factory));
  if (plugin != NULL)
    file = gst_plugin_get_filename (plugin);
  if (file != NULL) {
    gchar *dir = g_path_get_dirname (file);

    build_tree = same_directory (dir, AVF_PLUGIN_BUILD_DIR);
    g_free (dir);
  }
  GST_DEBUG_OBJECT (element, "plugin file %s: %s", GST_STR_NULL (file),
      build_tree ? "the build tree" : "installed");
  if (plugin != NULL)
    gst_object_unref (plugin);
  if (build_tree)
    return g_build_filename (AVF_PLUGIN_BUILD_DIR, name, NULL);
  return g_strdup (shipped_model (model)->installed);
}

gchar *
gst_av_default_model_path (GstElement * element)
{
  return gst_av_shipped_model_path (element, GST_AV_MODEL_TRAINED);
}

AvfWeights *
gst_av_load_weights (GstElement * element, const gchar * path,
    GstAvModel model, gchar ** used)
{
  const gboolean shipped = path == NULL || path[0] == '\0';
  gchar *file = shipped ? gst_av_shipped_model_path (element, model) :
      g_strdup (path);
  AvfWeights *w = NULL;
  AvfError err;

  avf_error_clear (&err);
  if (avf_weights_load (&w, file, &err) != AVF_OK) {
    if (shipped && err.status == AVF_ERR_NOT_FOUND) {
      GST_ELEMENT_ERROR (element, RESOURCE, NOT_FOUND,
          ("The shipped trained model \"%s\", which %s uses when its "
              "\"weights\" property is empty and \"model\" is %s, was not "
              "found. Set \"weights\" to an avfusion-v1 or avfusion-v2 "
              "weights file, or model=seeded for the built-in seeded "
              "weights, or reinstall avattention.", file,
              GST_OBJECT_NAME (element), shipped_model (model)->choice),
          ("%s (an installed plugin reads the model from "
              AVF_MODEL_INSTALL_DIR ", a plugin in the build tree "
              AVF_PLUGIN_BUILD_DIR " the copy beside it)", err.message));
    } else {
      gst_av_post_weights_error (element, file, &err);
    }
    g_free (file);
    return NULL;
  }
  if (used)
    *used = file;
  else
    g_free (file);
  return w;
}

/* ---- one model on both elements ----------------------------------------- */

/* The model of patch embeddings, for messages: "avfusion-v2 weights
 * \"x.safetensors\" (E 64, D 8 rhythm features per patch)"; g_free. */
static gchar *
patch_model_text (const GstAvTensorInfo * info, GstCaps * caps)
{
  const gchar *weights = gst_structure_get_string (gst_caps_get_structure
      (caps, 0), "weights");
  gchar *name = weights ? g_strdup_printf (" \"%s\"", weights) :
      g_strdup ("");
  gchar *text = info->rhythm_dim > 0 ?
      g_strdup_printf ("avfusion-v2 weights%s (E %d, D %d rhythm features "
      "per patch)", name, info->embed_dim, info->rhythm_dim) :
      g_strdup_printf ("avfusion-v1 weights%s (E %d, no rhythm features)",
      name, info->embed_dim);

  g_free (name);
  return text;
}

gboolean
gst_av_check_patch_model (GstElement * element, const AvfWeights * w,
    const gchar * name, const GstAvTensorInfo * info, GstCaps * caps)
{
  const gchar *fix = "set \"weights\" (or \"model\") on one of "
      "avpatchembed and avattention only, the other one follows it";
  const gboolean v2 = w->rhythm.D > 0;
  gchar *theirs;

  if ((info->rhythm_dim > 0) == v2 && (!v2 || (info->embed_dim == w->cfg.E
              && info->rhythm_dim == w->rhythm.D)))
    return TRUE;
  theirs = patch_model_text (info, caps);
  if ((info->rhythm_dim > 0) != v2)
    GST_ELEMENT_ERROR (element, CORE, NEGOTIATION,
        ("video_sink: the patch embeddings come from %s, but the weights "
            "\"%s\" of %s are %s (E %d, %s); %s", theirs, name,
            GST_OBJECT_NAME (element), avf_weights_format (w), w->cfg.E,
            v2 ? "they need the rhythm features of avfusion-v2 frames "
            "(rhythm-dim in the caps, [N, D] rows on every buffer)" :
            "no rhythm features", fix),
        ("caps: %" GST_PTR_FORMAT, caps));
  else
    GST_ELEMENT_ERROR (element, CORE, NEGOTIATION,
        ("video_sink: the patch embeddings come from %s, but the "
            "avfusion-v2 weights \"%s\" of %s expect E %d (video_pos "
            "[%d, %d]) and D %d rhythm features per patch "
            "(rhythm_embed.weight [%d, 3, %d, %d]); %s", theirs, name,
            GST_OBJECT_NAME (element), w->cfg.E, w->cfg.N, w->cfg.E,
            w->rhythm.D, w->rhythm.D, w->rhythm.Q, w->rhythm.Q, fix),
        ("caps: %" GST_PTR_FORMAT, caps));
  g_free (theirs);
  return FALSE;
}

/* "sha256:0123456789ab..." (the first 12 hex digits): for messages;
 * g_free. */
static gchar *
short_fingerprint (const gchar * fingerprint)
{
  const gchar *colon = strchr (fingerprint, ':');

  if (g_str_has_prefix (fingerprint, "sha256:") && strlen (colon + 1) > 12)
    return g_strdup_printf ("%.*s...", (gint) (colon - fingerprint) + 13,
        fingerprint);
  return g_strdup (fingerprint);
}

gboolean
gst_av_check_patch_fingerprint (GstElement * element, const gchar * name,
    const gchar * fingerprint, GstCaps * caps)
{
  const GstStructure *s = gst_caps_get_structure (caps, 0);
  const gchar *theirs = gst_structure_get_string (s, "model-fingerprint");
  const gchar *their_name = gst_structure_get_string (s, "weights");
  gchar *a, *b;

  if (theirs == NULL || fingerprint == NULL
      || g_str_equal (theirs, fingerprint))
    return TRUE;
  a = short_fingerprint (theirs);
  b = short_fingerprint (fingerprint);
  GST_ELEMENT_ERROR (element, CORE, NEGOTIATION,
      ("video_sink: the patch embeddings come from the weights \"%s\" "
          "(fingerprint %s), but %s uses the weights \"%s\" (fingerprint "
          "%s): two different models, whose attention maps would be wrong "
          "together. Set \"weights\" (or \"model\") on one of avpatchembed "
          "and avattention only, the other one follows it; or give both the "
          "same file.", their_name ? their_name : "(unnamed)", a,
          GST_OBJECT_NAME (element), name, b),
      ("caps: %" GST_PTR_FORMAT "; avattention's fingerprint %s", caps,
          fingerprint));
  g_free (a);
  g_free (b);
  return FALSE;
}

gboolean
gst_av_check_rhythm_window (GstElement * element, const AvfWeights * w,
    const gchar * name, gint64 window_ns, gint T, gint hop, gint rate,
    const gchar * where)
{
  const AvfRhythmConfig *r = &w->rhythm;

  if (r->D == 0 || T == r->K * r->G)
    return TRUE;
  GST_ELEMENT_ERROR (element, CORE, NEGOTIATION,
      ("%sthe window of %.3f ms holds %d spectrogram frames at a hop of %d "
          "samples at %d Hz, but the avfusion-v2 weights \"%s\" need %d: %d "
          "rhythm bins of %d frames (rhythm_bin_weight [%d, %d], "
          "rhythm_bin_slots %d). Set window to %.3f ms.", where,
          window_ns / 1e6, T, hop, rate, name, r->K * r->G, r->K, r->G,
          r->lags, r->K, r->G, (gdouble) r->K * r->G * hop / rate * 1e3),
      (NULL));
  return FALSE;
}
