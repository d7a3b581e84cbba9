/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* avattention's model and what depends on it: making a weights file (or
 * the seeded weights) the model, adopting the model the patch caps name,
 * building the window, workspaces and pools for the negotiated audio and
 * patch grid, and freeing all of it.  The state and its locking rules:
 * gstavattentionpriv.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstavattentionpriv.h"

#include "gstavelements.h"
#include "gstavtensor.h"
#include "gstavweights.h"
#include "gstavattentionmeta.h"
#include "gstavhistory.h"
#include "fusion.h"
#include "rhythm.h"
#include "weights.h"
#include "window.h"

#define GST_CAT_DEFAULT gst_av_attention_debug

/* spec §1 defaults, assumed while the audio pad has no caps */
#define DEFAULT_RATE 16000
#define DEFAULT_HOP 160
/* the attention maps of one frame may not take more than this */
#define MAX_META_BYTES ((gsize) 1 << 30)

void
gst_av_attention_reset_qos (GstAvAttention * self)
{
  GST_OBJECT_LOCK (self);
  self->earliest_time = GST_CLOCK_TIME_NONE;
  self->qos_proportion = 1.0;
  GST_OBJECT_UNLOCK (self);
  self->qos_processed = self->qos_dropped = 0;
}

void
gst_av_attention_reset_stream (GstAvAttention * self)
{
  gst_buffer_replace (&self->video_cur, NULL);
  gst_buffer_replace (&self->audio_cur, NULL);
  self->video_idx = self->audio_idx = 0;
  gst_av_attention_history_clear (self);
  if (self->vhist)
    gst_av_history_clear (self->vhist);
  self->frames_out = 0;
  gst_buffer_replace (&self->last_result, NULL);
}

static void
clear_pool (GstBufferPool ** pool)
{
  if (*pool) {
    gst_buffer_pool_set_active (*pool, FALSE);
    gst_object_unref (*pool);
    *pool = NULL;
  }
}

static void
gst_av_attention_free_window (GstAvAttention * self)
{
  gst_av_attention_free_workspaces (self);
  g_free (self->hist_frames);
  g_free (self->hist_rt);
  self->hist_frames = NULL;
  self->hist_rt = NULL;
  self->hist_cap = 0;
  self->T = 0;
  self->rate = self->hop = 0;
  clear_pool (&self->meta_pool);
  self->grid_columns = self->grid_rows = 0;
  gst_av_attention_history_clear (self);
}

void
gst_av_attention_free_all (GstAvAttention * self)
{
  gst_av_attention_reset_stream (self);
  gst_av_attention_free_window (self);
  clear_pool (&self->out_pool);
  gst_buffer_replace (&self->last_result, NULL);
  g_clear_pointer (&self->vhist, gst_av_history_free);
  avf_weights_free (self->w);
  self->w = NULL;
  g_clear_pointer (&self->weights_name, g_free);
  g_clear_pointer (&self->fingerprint, g_free);
  gst_clear_caps (&self->audio_caps);
  self->have_audio_caps = self->have_video_caps = FALSE;
  self->audio_caps_pending = FALSE;
  self->need_setup = TRUE;
  self->failed = FALSE;
  gst_av_attention_reset_qos (self);
}

/* Makes @w the model (@path: the file it was read from, NULL for the
 * seeded weights of @seed; @fingerprint: gst_av_weights_fingerprint; all
 * three taken) with what depends on it alone: the video history, the
 * output pool, the heads of the maps, the rate assumed without audio caps
 * and the caps-query limits.  The window, the workspaces and the meta pool
 * follow in gst_av_attention_setup.  FALSE after an error (posted), with
 * nothing kept. */
gboolean
gst_av_attention_use_weights (GstAvAttention * self, AvfWeights * w,
    gchar * path, gchar * fingerprint, guint64 seed)
{
  GstAvAttentionWeights attn;

  GST_OBJECT_LOCK (self);
  attn = self->attention_weights;
  GST_OBJECT_UNLOCK (self);
  if (w->cfg.L > GST_AV_ATTENTION_MAX_LAYERS) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("The weights file \"%s\" has %d layers; the attention metadata "
            "holds at most %d.", path ? path : "(built-in)", w->cfg.L,
            GST_AV_ATTENTION_MAX_LAYERS), (NULL));
    avf_weights_free (w);
    g_free (path);
    g_free (fingerprint);
    return FALSE;
  }
  GST_INFO_OBJECT (self, "weights %s (%s): E %d H %d L %d F %d M %d N %d "
      "T_max %d, visible_threshold %g; D %d C %d K %d G %d lags %d from %d",
      path ? path : "(seeded)", avf_weights_format (w), w->cfg.E, w->cfg.H,
      w->cfg.L, w->cfg.F, w->cfg.M, w->cfg.N, w->cfg.T_max,
      (gdouble) w->cfg.visible_threshold, w->rhythm.D, w->rhythm.C,
      w->rhythm.K, w->rhythm.G, w->rhythm.lags, w->rhythm.lag_min);
  self->weights_name = path ? path :
      g_strdup_printf ("seeded (seed %" G_GUINT64_FORMAT ")", seed);
  self->fingerprint = fingerprint;
  GST_INFO_OBJECT (self, "model fingerprint %s", self->fingerprint);

  self->w = w;
  if (w->rhythm.D > 0) {
    self->vhist = gst_av_history_new ((guint) w->cfg.N, &w->rhythm);
    if (self->vhist == NULL) {
      GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
          ("Cannot set up the video history of %d patches x %d rhythm "
              "features.", w->cfg.N, w->rhythm.D), (NULL));
      gst_av_attention_free_all (self);
      return FALSE;
    }
  }
  switch (attn) {
    case GST_AV_ATTENTION_WEIGHTS_NONE:
      self->mode = AVF_ATTN_NONE;
      self->map_heads = 0;
      break;
    case GST_AV_ATTENTION_WEIGHTS_PER_HEAD:
      self->mode = AVF_ATTN_PER_HEAD;
      self->map_heads = (guint) w->cfg.H;
      break;
    default:
      self->mode = AVF_ATTN_MEAN;
      self->map_heads = 1;
      break;
  }
  self->default_rate = w->cfg.sample_rate > 0 ?
      w->cfg.sample_rate : DEFAULT_RATE;
  self->default_hop = w->cfg.hop_length > 0 ?
      w->cfg.hop_length : DEFAULT_HOP;

  self->out_pool = gst_av_buffer_pool_new (NULL,
      (guint) (2 * w->cfg.E * sizeof (gfloat)));
  if (self->out_pool == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("Cannot allocate the buffers for %d patches of width %d.",
            w->cfg.N, w->cfg.E), (NULL));
    gst_av_attention_free_all (self);
    return FALSE;
  }
  GST_OBJECT_LOCK (self);
  self->q_mels = w->cfg.M;
  self->q_embed = w->cfg.E;
  self->q_patches = w->cfg.N;
  self->q_rate = self->default_rate;
  self->q_rhythm = w->rhythm.D > 0;
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

gint
gst_av_attention_adopt_patch_model (GstAvAttention * self, GstCaps * caps)
{
  const GstStructure *s = gst_caps_get_structure (caps, 0);
  const gchar *theirs = gst_structure_get_string (s, "model-fingerprint");
  const gchar *path = gst_structure_get_string (s, "weights");
  AvfWeights *w = NULL;
  AvfError err;
  gchar *fingerprint;

  if (self->model_chosen || theirs == NULL || path == NULL
      || !g_str_has_prefix (theirs, "sha256:")
      || (self->fingerprint && g_str_equal (theirs, self->fingerprint)))
    return 0;
  /* the file avpatchembed read, and still the same numbers; else the
   * checks that follow name both models */
  if (avf_weights_load (&w, path, &err) != AVF_OK) {
    GST_WARNING_OBJECT (self, "cannot read the weights \"%s\" of the patch "
        "embeddings: %s", path, err.message);
    return 0;
  }
  fingerprint = gst_av_weights_fingerprint (w, FALSE, 0);
  if (!g_str_equal (fingerprint, theirs)) {
    GST_WARNING_OBJECT (self, "the weights \"%s\" have changed since "
        "avpatchembed read them", path);
    g_free (fingerprint);
    avf_weights_free (w);
    return 0;
  }
  GST_INFO_OBJECT (self, "no model set here nor found upstream when "
      "starting: adopts the weights \"%s\" of the patch embeddings", path);

  /* drop what the old model made (the frames before were pushed by
   * sink_event), then take the new one */
  gst_av_attention_free_window (self);
  g_clear_pointer (&self->vhist, gst_av_history_free);
  clear_pool (&self->out_pool);
  gst_buffer_replace (&self->last_result, NULL);
  avf_weights_free (self->w);
  self->w = NULL;
  g_clear_pointer (&self->weights_name, g_free);
  g_clear_pointer (&self->fingerprint, g_free);
  self->need_setup = TRUE;
  if (!gst_av_attention_use_weights (self, w, g_strdup (path), fingerprint,
          0))
    return -1;
  gst_pad_mark_reconfigure (GST_AGGREGATOR_SRC_PAD (self));
  /* the spectrogram negotiated for the old model must suit this one */
  if (self->audio_caps != NULL
      && !gst_av_attention_set_audio_caps (self, self->audio_caps))
    return -1;
  return 1;
}


/* Spectrogram frames in the window, unrounded, for messages (the slot
 * count itself is avf_window_slots). */
gdouble
gst_av_attention_window_frames (gint64 window_ns, gint hop, gint rate)
{
  return hop > 0 ? (gdouble) window_ns / 1e9 * rate / hop : 0.0;
}

/* The workspaces (one per thread) and the audio history for a window of
 * T slots; everything is freed again after an error (posted). */
static GstFlowReturn
gst_av_attention_alloc_window (GstAvAttention * self, gint T)
{
  const AvfConfig *c = &self->w->cfg;
  AvfError err;
  const guint n_ws = MAX (self->n_workers, 1);
  gboolean ok = TRUE;
  gsize tm, ne, cap, cap_m;

  gst_av_attention_free_window (self);
  /* T <= T_max <= 65536 and M, N, E <= 65536: no overflow in gsize */
  tm = (gsize) T * (gsize) c->M;
  ne = (gsize) c->N * (gsize) c->E;
  cap = 2 * (gsize) T + 16;
  cap_m = cap * (gsize) c->M;
  self->ws = g_new0 (AvWorkspace, n_ws);
  self->n_ws = n_ws;
  for (guint i = 0; i < n_ws && ok; i++) {
    AvWorkspace *ws = &self->ws[i];

    if (avf_fusion_new (&ws->fusion, self->w, T, &err) != AVF_OK) {
      GST_ELEMENT_ERROR (self, LIBRARY, INIT,
          ("Cannot set up the attention stack for %d audio slots: %s", T,
              err.message), (NULL));
      gst_av_attention_free_window (self);
      return GST_FLOW_ERROR;
    }
    if (self->vhist != NULL
        && (ws->rhythm = gst_av_rhythm_work_new (self->w, T, &err)) == NULL) {
      GST_ELEMENT_ERROR (self, LIBRARY, INIT,
          ("Cannot set up the rhythm term for %d audio slots: %s", T,
              err.message), (NULL));
      gst_av_attention_free_window (self);
      return GST_FLOW_ERROR;
    }
    ws->mel = g_try_new0 (gfloat, tm);
    ws->mask = g_try_new0 (guint8, (gsize) T);
    ws->video_scratch = g_try_new (gfloat, ne);
    ok = ws->mel && ws->mask && ws->video_scratch;
  }
  self->hist_frames = g_try_new (gfloat, cap_m);
  self->hist_rt = g_try_new (gint64, cap);
  if (!ok || !self->hist_frames || !self->hist_rt) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("Cannot allocate the audio window of %d frames of %d mel bands.",
            T, c->M), (NULL));
    gst_av_attention_free_window (self);
    return GST_FLOW_ERROR;
  }
  self->hist_cap = cap;
  self->T = T;
  return GST_FLOW_OK;
}

/* The pool of attention data blocks, for the grid of the video caps and a
 * window of T slots. */
static GstFlowReturn
gst_av_attention_setup_meta_pool (GstAvAttention * self, gint T)
{
  const AvfConfig *c = &self->w->cfg;
  const guint N = (guint) c->N;
  gsize size;

  clear_pool (&self->meta_pool);
  size = gst_av_attention_meta_data_size ((guint) c->L, self->map_heads,
      (guint) T, N);
  /* L <= 64, heads, T, N <= 65536: the product fits in 64 bits */
  if (size > MAX_META_BYTES) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("The attention maps of one frame would take %" G_GSIZE_FORMAT
            " bytes (%d layers, %u heads, %d audio slots, %u patches); use "
            "attention-weights=none or mean.", size, c->L,
            self->map_heads, T, N), (NULL));
    return GST_FLOW_ERROR;
  }
  /* size <= MAX_META_BYTES: fits a guint */
  self->meta_pool = gst_av_buffer_pool_new (NULL, (guint) size);
  if (self->meta_pool == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("Cannot set up a pool of %" G_GSIZE_FORMAT "-byte attention "
            "blocks.", size), (NULL));
    return GST_FLOW_ERROR;
  }
  self->grid_columns = (guint) self->vinfo.grid_columns;
  self->grid_rows = (guint) self->vinfo.grid_rows;
  return GST_FLOW_OK;
}

/* Builds what depends on the audio window (T slots at rate/hop) and on the
 * patch grid: the fusion workspaces, the history and the meta pool.  Runs
 * after caps changes, before the next video frame. */
GstFlowReturn
gst_av_attention_setup (GstAvAttention * self)
{
  const AvfConfig *c = &self->w->cfg;
  const gint rate = self->have_audio_caps ? self->ainfo.rate :
      self->default_rate;
  const gint hop = self->have_audio_caps ? self->ainfo.hop_length :
      self->default_hop;
  const gint T = avf_window_slots (self->window_ns, hop, rate);
  GstFlowReturn ret;

  /* the workspaces may change: the frames on them go out first */
  ret = gst_av_attention_drain (self, TRUE);
  if (ret != GST_FLOW_OK)
    return ret;

  if (T < 1 || T > c->T_max) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("The audio window of %.3f s holds %.0f spectrogram frames at a hop "
            "of %d samples at %d Hz (%s), but the weights have positions for "
            "1 to %d frames (audio_pos [%d, %d]).",
            self->window_ns / 1e9,
            gst_av_attention_window_frames (self->window_ns, hop, rate),
            hop, rate,
            self->have_audio_caps ? "audio_sink caps" :
            "assumed: audio_sink has no caps yet", c->T_max, c->T_max,
            c->E), (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  if (!gst_av_check_rhythm_window (GST_ELEMENT (self), self->w,
          self->weights_name, self->window_ns, T, hop, rate, ""))
    return GST_FLOW_NOT_NEGOTIATED;

  if (T != self->T || self->ws == NULL) {
    ret = gst_av_attention_alloc_window (self, T);
    if (ret != GST_FLOW_OK)
      return ret;
    self->rate = rate;
    self->hop = hop;
  } else if (rate != self->rate || hop != self->hop) {
    /* frames of another hop do not mix with the new ones */
    gst_av_attention_history_clear (self);
    self->rate = rate;
    self->hop = hop;
  }

  if (self->mode != AVF_ATTN_NONE && self->have_video_caps
      && (self->meta_pool == NULL
          || self->grid_columns != (guint) self->vinfo.grid_columns
          || self->grid_rows != (guint) self->vinfo.grid_rows)) {
    ret = gst_av_attention_setup_meta_pool (self, T);
    if (ret != GST_FLOW_OK)
      return ret;
  }
  GST_DEBUG_OBJECT (self, "window %" G_GINT64_FORMAT " ns: %d slots at hop "
      "%d / %d Hz", self->window_ns, T, hop, rate);
  self->need_setup = FALSE;
  return GST_FLOW_OK;
}
