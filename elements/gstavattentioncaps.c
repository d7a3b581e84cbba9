/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* avattention's caps: the checks of the audio and video caps against the
 * weights, the source caps, and the sink caps a caps query is answered
 * with.  The state and its locking rules: gstavattentionpriv.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstavattentionpriv.h"

#include "gstavtensor.h"
#include "gstavweights.h"
#include "window.h"

#define GST_CAT_DEFAULT gst_av_attention_debug

gboolean
gst_av_attention_set_audio_caps (GstAvAttention * self, GstCaps * caps)
{
  const AvfConfig *c = &self->w->cfg;
  GstAvTensorInfo info;
  gchar *why = NULL;
  gint T;

  if (!gst_av_tensor_info_from_caps (&info, caps, &why)
      || info.kind != GST_AV_TENSOR_LOG_MEL) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("audio_sink: expected log-mel spectrogram tensors (from "
            "avspectrogram): %s", why ? why : "the caps are of another kind"),
        ("caps: %" GST_PTR_FORMAT, caps));
    g_free (why);
    return FALSE;
  }
  if (info.n_mels != c->M) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("audio_sink: the spectrogram has %d mel bands but the weights "
            "expect %d (audio_proj.weight [%d, %d])", info.n_mels, c->M,
            c->E, c->M), ("caps: %" GST_PTR_FORMAT, caps));
    return FALSE;
  }
  T = avf_window_slots (self->window_ns, info.hop_length, info.rate);
  if (T < 1 && gst_av_attention_window_frames (self->window_ns,
          info.hop_length, info.rate) < 0.5) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("audio_sink: the window of %.3f ms is shorter than half a "
            "spectrogram hop (%d samples at %d Hz); make the window longer",
            self->window_ns / 1e6, info.hop_length, info.rate),
        ("caps: %" GST_PTR_FORMAT, caps));
    return FALSE;
  }
  if (T < 1 || T > c->T_max) {
    /* (avf_window_slots gives 0 beyond a million frames) */
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("audio_sink: the window of %.3f ms holds %.0f spectrogram frames at "
            "a hop of %d samples at %d Hz, but the weights have positions for "
            "at most %d (audio_pos [%d, %d]); use a window of at most "
            "%.3f ms", self->window_ns / 1e6,
            gst_av_attention_window_frames (self->window_ns,
                info.hop_length, info.rate), info.hop_length,
            info.rate, c->T_max, c->T_max, c->E,
            (c->T_max * (gdouble) info.hop_length / info.rate) * 1e3),
        ("caps: %" GST_PTR_FORMAT, caps));
    return FALSE;
  }
  if (!gst_av_check_rhythm_window (GST_ELEMENT (self), self->w,
          self->weights_name, self->window_ns, T, info.hop_length, info.rate,
          "audio_sink: "))
    return FALSE;
  if (c->sample_rate > 0 && info.rate != c->sample_rate)
    GST_WARNING_OBJECT (self, "the spectrogram is at %d Hz, the weights were "
        "made for %d Hz", info.rate, c->sample_rate);
  if (self->have_audio_caps && (info.rate != self->ainfo.rate
          || info.hop_length != self->ainfo.hop_length)) {
    /* the old audio is complete (the aggregator hands over caps after the
     * last buffer before them); gst_av_attention_feed_audio switches */
    self->pending_ainfo = info;
    self->audio_caps_pending = TRUE;
  } else {
    if (!self->have_audio_caps)
      self->need_setup = TRUE;
    self->ainfo = info;
    self->have_audio_caps = TRUE;
    self->audio_caps_pending = FALSE;
  }
  gst_caps_replace (&self->audio_caps, caps);
  GST_DEBUG_OBJECT (self, "audio: %d mel bands, hop %d at %d Hz: %d slots",
      info.n_mels, info.hop_length, info.rate, T);
  return TRUE;
}

/* With workers, upstream may queue (threads - 1) frames more on the pads
 * (GstAggregator queues up to its latency) so that the workers find the
 * next frames waiting; in a live pipeline that is also the delay a busy
 * pool adds.  A larger latency set by the application stays. */
static void
gst_av_attention_raise_latency (GstAvAttention * self)
{
  GstClockTime frame, want, have;

  if (self->n_workers <= 1)
    return;
  frame = self->vinfo.fps_n > 0 && self->vinfo.fps_d > 0 ?
      gst_util_uint64_scale (GST_SECOND, self->vinfo.fps_d,
      self->vinfo.fps_n) : GST_SECOND / 30;
  want = frame * (self->n_workers - 1);
  g_object_get (self, "latency", &have, NULL);
  if (have >= want)
    return;
  GST_INFO_OBJECT (self, "latency %" GST_TIME_FORMAT " for %u threads",
      GST_TIME_ARGS (want), self->n_workers);
  g_object_set (self, "latency", want, NULL);
}

gboolean
gst_av_attention_set_video_caps (GstAvAttention * self, GstCaps * caps)
{
  const AvfConfig *c;
  GstAvTensorInfo info;
  gchar *why = NULL;
  gint adopted;

  if (!gst_av_tensor_info_from_caps (&info, caps, &why)
      || info.kind != GST_AV_TENSOR_PATCHES) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("video_sink: expected patch-embedding tensors (from avpatchembed): "
            "%s", why ? why : "the caps are of another kind"),
        ("caps: %" GST_PTR_FORMAT, caps));
    g_free (why);
    return FALSE;
  }
  /* no model of its own: the one of the embeddings, when they name it */
  adopted = gst_av_attention_adopt_patch_model (self, caps);
  if (adopted < 0)
    return FALSE;
  c = &self->w->cfg;
  if (!gst_av_check_patch_model (GST_ELEMENT (self), self->w,
          self->weights_name, &info, caps))
    return FALSE;
  if (info.embed_dim != c->E || info.num_patches != c->N) {
    /* another model: both named when the caps name theirs */
    const gchar *theirs = gst_structure_get_string (gst_caps_get_structure
        (caps, 0), "weights");
    gchar *from = theirs ? g_strdup_printf (" (from the weights \"%s\")",
        theirs) : g_strdup ("");

    if (info.embed_dim != c->E)
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
          ("video_sink: the patch embeddings%s are %d wide but the weights "
              "\"%s\" of %s expect %d (video_pos [%d, %d]); set \"weights\" "
              "(or \"model\") on one of avpatchembed and avattention only, "
              "the other one follows it", from, info.embed_dim,
              self->weights_name, GST_OBJECT_NAME (self), c->E, c->N, c->E),
          ("caps: %" GST_PTR_FORMAT, caps));
    else
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
          ("video_sink: the picture has %d patches (a %d x %d grid)%s but "
              "the weights \"%s\" of %s expect %d (video_pos [%d, %d])",
              info.num_patches, info.grid_columns, info.grid_rows, from,
              self->weights_name, GST_OBJECT_NAME (self), c->N, c->N, c->E),
          ("caps: %" GST_PTR_FORMAT, caps));
    g_free (from);
    return FALSE;
  }
  /* the same shape is not the same model: the numbers too (issue 21) */
  if (!gst_av_check_patch_fingerprint (GST_ELEMENT (self), self->weights_name,
          self->fingerprint, caps))
    return FALSE;
  if (!self->have_video_caps || info.fps_n != self->vinfo.fps_n
      || info.fps_d != self->vinfo.fps_d)
    gst_pad_mark_reconfigure (GST_AGGREGATOR_SRC_PAD (self));
  self->vinfo = info;
  self->have_video_caps = TRUE;
  self->need_setup = TRUE;
  gst_av_attention_raise_latency (self);
  return TRUE;
}

GstFlowReturn
gst_av_attention_update_src_caps (GstAggregator * agg, GstCaps * downstream,
    GstCaps ** ret)
{
  GstAvAttention *self = GST_AV_ATTENTION (agg);
  GstCaps *mine;

  if (!self->have_video_caps || self->w == NULL)
    return GST_AGGREGATOR_FLOW_NEED_DATA;
  mine = gst_av_tensor_caps_fused (2 * self->w->cfg.E, self->vinfo.fps_n,
      self->vinfo.fps_d);
  *ret = gst_caps_intersect_full (mine, downstream, GST_CAPS_INTERSECT_FIRST);
  if (gst_caps_is_empty (*ret)) {
    gchar *s = gst_caps_to_string (mine);
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("src: downstream does not accept the fused tensors %s", s),
        ("downstream accepts %" GST_PTR_FORMAT, downstream));
    g_free (s);
    gst_caps_unref (mine);
    gst_clear_caps (ret);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  gst_caps_unref (mine);
  return GST_FLOW_OK;
}

/* The template caps of a sink pad restricted to what the weights take.
 * audio_sink lists the weights' sample rate (else the spec's 16 kHz) first,
 * then any rate: avspectrogram asks for the first fixed rate downstream
 * names, so `audioconvert ! audioresample ! avspectrogram ! avattention`
 * resamples to the model's rate by itself. */
GstCaps *
gst_av_attention_sink_caps (GstAvAttention * self, GstAggregatorPad * pad,
    GstCaps * filter)
{
  GstCaps *caps = gst_pad_get_pad_template_caps (GST_PAD (pad));
  gint mels, embed, patches, rate;
  gboolean rhythm;

  GST_OBJECT_LOCK (self);
  mels = self->q_mels;
  embed = self->q_embed;
  patches = self->q_patches;
  rate = self->q_rate;
  rhythm = self->q_rhythm;
  GST_OBJECT_UNLOCK (self);

  caps = gst_caps_make_writable (caps);
  if (pad == self->audio_pad && mels > 0) {
    GstCaps *wanted;

    gst_caps_set_simple (caps, "n-mels", G_TYPE_INT, mels, NULL);
    wanted = gst_caps_copy (caps);
    gst_caps_set_simple (wanted, "rate", G_TYPE_INT, rate, NULL);
    caps = gst_caps_merge (wanted, caps);
  } else if (pad == self->video_pad && embed > 0) {
    gboolean v2_filter = FALSE, named_filter = FALSE;

    for (guint i = 0; filter && i < gst_caps_get_size (filter); i++) {
      const GstStructure *f = gst_caps_get_structure (filter, i);

      v2_filter |= gst_structure_has_field (f, "rhythm-dim");
      named_filter |= gst_structure_has_field (f, "model-fingerprint");
    }
    /* patch embeddings that name their model (avpatchembed's) reach the
     * caps event whatever their sizes: it names both models when they
     * differ, where a restricted answer would end in a bare
     * not-negotiated */
    if (!named_filter)
      gst_caps_set_simple (caps, "num-patches", G_TYPE_INT, patches, NULL);
    /* avfusion-v2 on either side: patch embeddings of any width reach the
     * caps event, which names both models when they differ */
    if (!rhythm && !v2_filter && !named_filter)
      gst_caps_set_simple (caps, "embed-dim", G_TYPE_INT, embed, NULL);
  }
  return caps;
}

gboolean
gst_av_attention_answer_caps_query (GstQuery * query, GstCaps * caps)
{
  GstCaps *filter;

  gst_query_parse_caps (query, &filter);
  if (filter) {
    GstCaps *tmp = gst_caps_intersect_full (filter, caps,
        GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref (caps);
    caps = tmp;
  }
  gst_query_set_caps_result (query, caps);
  gst_caps_unref (caps);
  return TRUE;
}
