/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* avattention's video input and its aggregate loop: the frames of the
 * patch-embedding buffer on video_sink are taken one by one, checked,
 * joined by the audio of their window (gstavattentionaudio.c) and handed
 * to the worker pool (gstavattentionpool.c); and the running time a live
 * pipeline waits for.  The state and its locking rules:
 * gstavattentionpriv.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstavattentionpriv.h"

#include "gstavinputs.h"
#include "gstavrhythmmeta.h"
#include "gstavhistory.h"

#define GST_CAT_DEFAULT gst_av_attention_debug

static void
gst_av_attention_drop_video (GstAvAttention * self)
{
  gst_aggregator_pad_drop_buffer (self->video_pad);
  gst_buffer_replace (&self->video_cur, NULL);
  self->video_idx = 0;
}

/* PTS and duration of frame k of n in a video buffer. */
static void
video_frame_times (GstAvAttention * self, GstBuffer * buf, guint64 k,
    guint64 n, GstClockTime * pts, GstClockTime * dur)
{
  const GstAvTensorInfo *vi = &self->vinfo;
  GstClockTime p = GST_BUFFER_PTS (buf), d = GST_BUFFER_DURATION (buf);
  const gboolean fps = vi->fps_n > 0 && vi->fps_d > 0;

  *pts = p;
  *dur = GST_CLOCK_TIME_NONE;
  if (!GST_CLOCK_TIME_IS_VALID (p))
    return;
  if (n == 1) {
    if (GST_CLOCK_TIME_IS_VALID (d))
      *dur = d;
    else if (fps)
      *dur = gst_util_uint64_scale (GST_SECOND, vi->fps_d, vi->fps_n);
  } else if (fps) {
    *pts = gst_av_tensor_frame_pts (vi, p, k);
    *dur = gst_av_tensor_frame_pts (vi, p, k + 1) - *pts;
  } else if (GST_CLOCK_TIME_IS_VALID (d)) {
    GstClockTime off = gst_util_uint64_scale (d, k, n);
    *pts = p + off;
    *dur = gst_util_uint64_scale (d, k + 1, n) - off;
  }
}

/* avfusion-v2: every frame of @vbuf (@n of them, the first at @pts) has
 * its rhythm rows in a GstAvRhythmMeta of the model's N and D.  FALSE
 * after an error that names what is missing: the rows are never made
 * up. */
static gboolean
gst_av_attention_check_rhythm (GstAvAttention * self, GstBuffer * vbuf,
    guint64 n, GstClockTime pts)
{
  const GstAvRhythmMeta *meta;
  gchar *what;

  if (self->vhist == NULL)
    return TRUE;
  meta = gst_buffer_get_av_rhythm_meta (vbuf);
  if (meta != NULL && meta->n_frames == n
      && meta->n_patches == (guint) self->w->cfg.N
      && meta->rhythm_dim == (guint) self->w->rhythm.D)
    return TRUE;
  what = meta == NULL ? g_strdup ("carries no rhythm rows") :
      g_strdup_printf ("carries rhythm rows of %u frames x %u patches x %u "
      "features where its %" G_GUINT64_FORMAT " frames need %" G_GUINT64_FORMAT
      " x %d x %d", meta->n_frames, meta->n_patches, meta->rhythm_dim, n, n,
      self->w->cfg.N, self->w->rhythm.D);
  GST_ELEMENT_ERROR (self, STREAM, FORMAT,
      ("video frame at %" GST_TIME_FORMAT " %s: avfusion-v2 needs "
          "avpatchembed's output with the same weights (\"%s\"), whose "
          "buffers carry each frame's [%d, %d] rhythm rows in a "
          "GstAvRhythmMeta", GST_TIME_ARGS (pts), what, self->weights_name,
          self->w->cfg.N, self->w->rhythm.D),
      ("a patch-embedding buffer of %" G_GUINT64_FORMAT " frames%s", n,
          meta == NULL ? " without a GstAvRhythmMeta (an element between "
          "avpatchembed and avattention may have dropped it)" : ""));
  g_free (what);
  return FALSE;
}

/* avfusion-v2: frame k of @vbuf, at running time @t, joins the video
 * history once its own job has looked up the frames before it; its rows
 * come from the buffer's GstAvRhythmMeta (gst_av_attention_check_rhythm).
 * FALSE after an error. */
static gboolean
gst_av_attention_remember (GstAvAttention * self, GstBuffer * vbuf,
    guint64 k, GstClockTime pts, GstClockTime dur, GstClockTime t)
{
  const gsize row_bytes = (gsize) self->w->rhythm.D * sizeof (gfloat);
  gint64 end = AVF_RHYTHM_NO_END;
  GstAvRhythmMeta *meta;
  const gfloat *rows;

  if (self->vhist == NULL)
    return TRUE;
  if (GST_CLOCK_TIME_IS_VALID (dur) && dur <= G_MAXINT64 / 4) {
    GstClockTime e = gst_av_pad_running_time (self->video_pad, pts + dur);
    end = (gint64) (GST_CLOCK_TIME_IS_VALID (e) ? e : t + dur);
  }
  meta = gst_buffer_get_av_rhythm_meta (vbuf);
  rows = meta != NULL && k < meta->n_frames ?
      gst_av_rhythm_meta_get_rows (meta, (guint) k) : NULL;
  if (rows == NULL) {
    /* (checked before: only a programming error gets here) */
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("video frame at %" GST_TIME_FORMAT " carries no rhythm rows",
            GST_TIME_ARGS (pts)), (NULL));
    return FALSE;
  }
  /* r_n: row n of the frame's [N, D] rows (docs/avfusion-v2.md §2) */
  if (!gst_av_history_add (self->vhist, (const guint8 *) rows, row_bytes,
          (gint64) t, end, self->window_ns, self->hop, self->rate)) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("Cannot keep a frame in the video history."), (NULL));
    return FALSE;
  }
  return TRUE;
}

/* The video buffer the next frame comes from (self->video_cur, not
 * reffed), or NULL when video_sink has none queued now. */
static GstBuffer *
gst_av_attention_video_head (GstAvAttention * self)
{
  GstBuffer *vbuf = gst_aggregator_pad_peek_buffer (self->video_pad);

  if (vbuf == NULL)
    return NULL;
  if (vbuf != self->video_cur) {
    gst_buffer_replace (&self->video_cur, vbuf);
    self->video_idx = 0;
    /* avfusion-v2: the frames before a discontinuity are forgotten */
    if (self->vhist != NULL
        && GST_BUFFER_FLAG_IS_SET (vbuf, GST_BUFFER_FLAG_DISCONT))
      gst_av_history_clear (self->vhist);
  }
  gst_buffer_unref (vbuf);
  return self->video_cur;
}

/* No further frame now: every result goes out before waiting. */
static GstFlowReturn
gst_av_attention_no_video (GstAvAttention * self)
{
  GstFlowReturn dret = gst_av_attention_drain (self, TRUE);

  if (dret != GST_FLOW_OK)
    return dret;
  if (gst_aggregator_pad_is_eos (self->video_pad)) {
    GST_DEBUG_OBJECT (self, "video_sink is at end-of-stream: done");
    return GST_FLOW_EOS;
  }
  return GST_FLOW_OK;
}

/* An empty video buffer: no frame, no output buffer, but a gap goes on. */
static GstFlowReturn
gst_av_attention_empty_video (GstAvAttention * self, GstBuffer * vbuf)
{
  GstClockTime gpts = GST_BUFFER_PTS (vbuf);
  GstClockTime gdur = GST_BUFFER_DURATION (vbuf);
  gboolean gap = GST_BUFFER_FLAG_IS_SET (vbuf, GST_BUFFER_FLAG_GAP);
  GstFlowReturn ret;

  gst_av_attention_drop_video (self);
  if (gap && self->vhist != NULL)
    gst_av_history_clear (self->vhist);
  if (gap) {
    ret = gst_av_attention_drain (self, TRUE);
    if (ret != GST_FLOW_OK)
      return ret;
    gst_av_push_gap (GST_AGGREGATOR_SRC_PAD (self), gpts, gdur);
  }
  return GST_FLOW_OK;
}

/* Checks a video buffer of @size bytes (caps, whole frames, timestamp) and
 * sets the model up before its first frame; *n_frames: the frames in it. */
static GstFlowReturn
gst_av_attention_check_video (GstAvAttention * self, GstBuffer * vbuf,
    gsize size, guint64 * n_frames)
{
  gsize frame_bytes;
  GstFlowReturn ret;

  if (!self->have_video_caps) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("video_sink: received patch embeddings before their caps"), (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  frame_bytes = self->vinfo.frame_size * sizeof (gfloat);
  if (size % frame_bytes != 0) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("video_sink: a buffer of %" G_GSIZE_FORMAT " bytes does not hold "
            "whole patch-embedding frames of [%d, %d] float32 (%"
            G_GSIZE_FORMAT " bytes)", size, self->vinfo.num_patches,
            (gint) self->vinfo.shape[1], frame_bytes), (NULL));
    return GST_FLOW_ERROR;
  }
  if (!GST_BUFFER_PTS_IS_VALID (vbuf)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("video_sink: a patch-embedding buffer has no timestamp; "
            "avattention needs it to find the audio window"), (NULL));
    return GST_FLOW_ERROR;
  }
  if (self->need_setup) {
    ret = gst_av_attention_setup (self);
    if (ret != GST_FLOW_OK) {
      self->failed = TRUE;
      return ret;
    }
  }
  *n_frames = size / frame_bytes;
  return GST_FLOW_OK;
}

/* Frame video_idx of the @n of @vbuf: skipped (outside the segment, or
 * late), fused, or left to wait for its audio.  *again: aggregate goes on
 * with the next frame (the result is then GST_FLOW_OK); otherwise it
 * returns the result. */
static GstFlowReturn
gst_av_attention_next_frame (GstAvAttention * self, GstBuffer * vbuf,
    guint64 n, gboolean timeout, gboolean * again)
{
  GstClockTime pts, dur, t;
  guint64 k = self->video_idx;
  gboolean reached, audio_eos;
  GstFlowReturn ret;

  *again = FALSE;
  video_frame_times (self, vbuf, k, n, &pts, &dur);
  if (!gst_av_attention_check_rhythm (self, vbuf, n, pts)) {
    self->failed = TRUE;
    return GST_FLOW_ERROR;
  }
  t = gst_av_pad_running_time (self->video_pad, pts);
  if (!GST_CLOCK_TIME_IS_VALID (t) || t > G_MAXINT64 / 2) {
    GST_DEBUG_OBJECT (self, "video frame %" GST_TIME_FORMAT " is outside "
        "the segment: skipped", GST_TIME_ARGS (pts));
    if (++self->video_idx >= n)
      gst_av_attention_drop_video (self);
    *again = TRUE;
    return GST_FLOW_OK;
  }
  ret = gst_av_attention_feed_audio (self, t, &reached);
  if (ret != GST_FLOW_OK) {
    self->failed = TRUE;
    return ret;
  }
  if (gst_av_attention_skip_late (self, pts, dur, t)) {
    /* late: no need to wait for its audio either (but the frame was
     * received: it joins the video history) */
    if (!gst_av_attention_remember (self, vbuf, k, pts, dur, t))
      return GST_FLOW_ERROR;
    if (++self->video_idx >= n)
      gst_av_attention_drop_video (self);
    *again = TRUE;
    return GST_FLOW_OK;
  }
  audio_eos = gst_av_attention_audio_ended (self);
  if (!reached && !audio_eos && !timeout) {
    /* wait for the audio to reach t (or for a new audio stream's
     * stream-start to be handled), with every result pushed */
    gst_av_attention_audio_waiting (self);
    return gst_av_attention_drain (self, TRUE);
  }
  ret = gst_av_attention_produce (self, vbuf, k, pts, dur, t, audio_eos);
  self->qos_processed++;
  if (ret == GST_FLOW_OK
      && !gst_av_attention_remember (self, vbuf, k, pts, dur, t))
    ret = GST_FLOW_ERROR;
  if (ret == GST_FLOW_ERROR)
    self->failed = TRUE;
  if (++self->video_idx >= n)
    gst_av_attention_drop_video (self);
  /* with workers, go on with the next queued frame while this one is
   * fused; with none left the queue is emptied above */
  if (ret != GST_FLOW_OK || self->workers == NULL)
    return ret;
  *again = TRUE;
  return GST_FLOW_OK;
}

GstFlowReturn
gst_av_attention_aggregate (GstAggregator * agg, gboolean timeout)
{
  GstAvAttention *self = GST_AV_ATTENTION (agg);

  if (self->failed || self->w == NULL)
    return GST_FLOW_NOT_NEGOTIATED;

  for (;;) {
    GstBuffer *vbuf = gst_av_attention_video_head (self);
    gsize size;
    guint64 n;
    gboolean again;
    GstFlowReturn ret;

    if (vbuf == NULL)
      return gst_av_attention_no_video (self);
    size = gst_buffer_get_size (vbuf);
    if (size == 0) {
      ret = gst_av_attention_empty_video (self, vbuf);
      if (ret != GST_FLOW_OK)
        return ret;
      continue;
    }
    ret = gst_av_attention_check_video (self, vbuf, size, &n);
    if (ret != GST_FLOW_OK)
      return ret;
    ret = gst_av_attention_next_frame (self, vbuf, n, timeout, &again);
    if (!again)
      return ret;
  }
}

/* The running time the aggregator waits for in a live pipeline before it
 * calls aggregate with timeout: that of the waiting video frame. */
GstClockTime
gst_av_attention_get_next_time (GstAggregator * agg)
{
  GstAvAttention *self = GST_AV_ATTENTION (agg);
  GstBuffer *vbuf = gst_aggregator_pad_peek_buffer (self->video_pad);
  GstClockTime pts, dur, t;
  guint64 k, n = 1;

  if (vbuf == NULL) {
    /* at end-of-stream finish at once; otherwise wait for a frame */
    if (gst_aggregator_pad_is_eos (self->video_pad))
      return gst_aggregator_simple_get_next_time (agg);
    return GST_CLOCK_TIME_NONE;
  }
  k = vbuf == self->video_cur ? self->video_idx : 0;
  if (self->have_video_caps && self->vinfo.frame_size > 0)
    n = MAX (1, gst_buffer_get_size (vbuf) / (self->vinfo.frame_size *
            sizeof (gfloat)));
  video_frame_times (self, vbuf, MIN (k, n - 1), n, &pts, &dur);
  gst_buffer_unref (vbuf);
  t = gst_av_pad_running_time (self->video_pad, pts);
  return t;
}
