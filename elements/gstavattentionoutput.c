/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* avattention's output side: the attention meta attached to an output
 * buffer, the reused output of a frame that is not fused, and the finishing
 * of a job (pushing its output and posting the "avattention" element
 * message).  The state and its locking rules: gstavattentionpriv.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstavattentionpriv.h"

#include <string.h>

#include "gstavattentionmeta.h"
#include "fusion.h"

#define GST_CAT_DEFAULT gst_av_attention_debug

/* attach_meta's loop over the modules hands each to core as AvfModule
 * (core/weights.h) and to the meta as GstAvAttentionModule: the values
 * agree (gstavmodulecheck.h asserts it) */
#include "gstavmodulecheck.h"

static gboolean
gst_av_attention_attach_meta (GstAvAttention * self, GstBuffer * out,
    const AvJob * job, GstAvAttentionMeta ** out_meta)
{
  const AvfConfig *c = &self->w->cfg;
  const AvWorkspace *ws = job->ws;
  const GstClockTime t = job->t;
  GstBuffer *data = NULL;
  GstAvAttentionMeta *meta;

  *out_meta = NULL;
  if (gst_buffer_pool_acquire_buffer (self->meta_pool, &data, NULL) !=
      GST_FLOW_OK)
    return FALSE;
  meta = gst_buffer_add_av_attention_meta (out, (guint) c->L,
      self->map_heads, (guint) c->H, (guint) self->T, self->grid_columns,
      self->grid_rows, data);
  if (meta == NULL)
    return FALSE;
  meta->window_start = t > (GstClockTime) self->window_ns ?
      t - (GstClockTime) self->window_ns : 0;
  meta->window_end = t;
  meta->n_audio_present = (guint) job->present;
  meta->audio_missing = job->present == 0;
  meta->audio_ended = job->audio_ended;
  meta->visible_threshold = c->visible_threshold;
  memcpy (gst_av_attention_meta_get_audio_mask_writable (meta), ws->mask,
      (gsize) self->T);
  for (gint l = 0; l < c->L; l++) {
    for (gint m = 0; m < AVF_N_MODULES; m++) {
      int heads, tq, tk;
      guint mh, mq, mk;
      const gfloat *src = avf_fusion_map (ws->fusion, l, (AvfModule) m,
          &heads, &tq, &tk);

      gst_av_attention_meta_get_weights (meta, (guint) l,
          (GstAvAttentionModule) m, &mh, &mq, &mk);
      if (src == NULL || (guint) heads != mh || (guint) tq != mq
          || (guint) tk != mk) {
        GST_ERROR_OBJECT (self, "map %d/%d is %d x %d x %d, the meta holds "
            "%u x %u x %u", l, m, heads, tq, tk, mh, mq, mk);
        return FALSE;
      }
      memcpy (gst_av_attention_meta_get_weights_writable (meta, (guint) l,
              (GstAvAttentionModule) m), src,
          (gsize) heads * tq * tk * sizeof (gfloat));
      gst_av_attention_meta_set_skipped (meta, (guint) l,
          (GstAvAttentionModule) m, avf_fusion_map_skipped (ws->fusion, l,
              (AvfModule) m));
    }
  }
  *out_meta = meta;
  return TRUE;
}

/* The output of a frame that reuses the last result: a copy of the fused
 * vector, and a meta that shares the maps' data block (the meta's copy
 * transform), marked reused. */
static GstBuffer *
reused_output (GstAvAttention * self)
{
  GstBuffer *out = gst_buffer_copy_deep (self->last_result);
  GstAvAttentionMeta *meta;

  if (out == NULL)
    return NULL;
  meta = gst_buffer_get_av_attention_meta (out);
  if (meta)
    meta->reused = TRUE;
  return out;
}

/* Takes the oldest job off the queue, waits for its worker and pushes its
 * output with its meta (and bus message).  The aggregate thread only. */
GstFlowReturn
gst_av_attention_finish_job (GstAvAttention * self)
{
  GstAggregator *agg = GST_AGGREGATOR (self);
  const AvfConfig *c = &self->w->cfg;
  AvJob *job = g_queue_pop_head (&self->jobs);
  GstAvAttentionMeta *meta = NULL;
  GstStructure *s = NULL;
  GstBuffer *out;
  GstFlowReturn ret;
  gboolean post, reused = job->ws == NULL;

  gst_av_attention_job_wait (self, job);
  if (job->failed) {
    gst_av_attention_job_free (job);
    GST_ELEMENT_ERROR (self, RESOURCE, READ,
        ("Cannot map a patch-embedding or output buffer"), (NULL));
    return GST_FLOW_ERROR;
  }
  if (reused) {
    out = reused_output (self);
    if (out == NULL) {
      gst_av_attention_job_free (job);
      GST_ELEMENT_ERROR (self, CORE, FAILED,
          ("src: cannot copy the last result"), (NULL));
      return GST_FLOW_ERROR;
    }
    meta = gst_buffer_get_av_attention_meta (out);
  } else {
    out = g_steal_pointer (&job->out);
    if (self->mode != AVF_ATTN_NONE
        && !gst_av_attention_attach_meta (self, out, job, &meta)) {
      gst_buffer_unref (out);
      gst_av_attention_job_free (job);
      GST_ELEMENT_ERROR (self, CORE, FAILED,
          ("src: cannot attach the attention metadata"), (NULL));
      return GST_FLOW_ERROR;
    }
  }
  GST_BUFFER_PTS (out) = job->pts;
  GST_BUFFER_DTS (out) = GST_CLOCK_TIME_NONE;
  GST_BUFFER_DURATION (out) = job->dur;
  if (job->keep_result) {
    gst_clear_buffer (&self->last_result);
    self->last_result = gst_buffer_copy_deep (out);
  }

  GST_OBJECT_LOCK (self);
  post = self->post_messages;
  GST_OBJECT_UNLOCK (self);
  if (post) {
    guint col, row;
    gfloat weight, threshold;
    gboolean visible;
    gint present = reused && meta ? (gint) meta->n_audio_present :
        job->present;
    GstClockTime t = reused && meta ? meta->window_end : job->t;

    s = gst_structure_new ("avattention",
        "timestamp", G_TYPE_UINT64, (guint64) job->pts,
        "stream-time", G_TYPE_UINT64, (guint64) job->stream_time,
        "running-time", G_TYPE_UINT64, (guint64) job->t,
        "duration", G_TYPE_UINT64, (guint64) job->dur,
        "audio-slots", G_TYPE_UINT, (guint) self->T,
        "audio-present", G_TYPE_UINT, (guint) present,
        "audio-missing", G_TYPE_BOOLEAN, present == 0,
        "audio-ended", G_TYPE_BOOLEAN, job->audio_ended,
        "reused", G_TYPE_BOOLEAN, reused,
        "window-end", G_TYPE_UINT64, (guint64) t, NULL);
    if (meta && gst_av_attention_meta_get_strongest_patch (meta,
            (guint) c->L - 1, &col, &row, &weight))
      gst_structure_set (s, "patch-column", G_TYPE_UINT, col,
          "patch-row", G_TYPE_UINT, row,
          "patch-weight", G_TYPE_DOUBLE, (gdouble) weight, NULL);
    /* without maps, as with no audio: nothing visible is known to sound */
    visible = meta != NULL
        && gst_av_attention_meta_get_sound_visible (meta, NULL, NULL);
    threshold = c->visible_threshold;
    gst_structure_set (s, "sound-visible", G_TYPE_BOOLEAN, visible,
        "visible-threshold", G_TYPE_DOUBLE, (gdouble) threshold, NULL);
  }

  GST_LOG_OBJECT (self, "frame %" GST_TIME_FORMAT " (running time %"
      GST_TIME_FORMAT "): %d of %d audio slots%s", GST_TIME_ARGS (job->pts),
      GST_TIME_ARGS (job->t), job->present, self->T,
      reused ? ", last result reused" : "");
  GST_OBJECT_LOCK (self);
  GST_AGGREGATOR_PAD (agg->srcpad)->segment.position =
      GST_CLOCK_TIME_IS_VALID (job->dur) ? job->pts + job->dur : job->pts;
  GST_OBJECT_UNLOCK (self);
  gst_aggregator_selected_samples (agg, job->pts, GST_CLOCK_TIME_NONE,
      job->dur, NULL);
  gst_av_attention_job_free (job);

  ret = gst_aggregator_finish_buffer (agg, out);
  if (s != NULL) {
    if (ret == GST_FLOW_OK)
      gst_element_post_message (GST_ELEMENT (self),
          gst_message_new_element (GST_OBJECT (self), s));
    else
      gst_structure_free (s);
  }
  return ret;
}
