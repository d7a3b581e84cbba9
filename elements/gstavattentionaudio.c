/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* avattention's audio window: spectrogram frames from audio_sink join the
 * history, the frames no later window needs leave it, and a job's window is
 * filled from it (core/window.h).  The state and its locking rules:
 * gstavattentionpriv.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstavattentionpriv.h"

#include <string.h>

#include "gstavinputs.h"
#include "window.h"

#define GST_CAT_DEFAULT gst_av_attention_debug

void
gst_av_attention_history_clear (GstAvAttention * self)
{
  self->hist_first = self->hist_n = 0;
  self->audio_known = GST_CLOCK_TIME_NONE;
}

/* TRUE when a frame at running time s can take part neither in the window
 * of the video frame at t nor in any later one. */
static gboolean
history_too_old (GstAvAttention * self, gint64 s, gint64 t)
{
  return s < t - self->window_ns
      && avf_window_slot (s, t, self->window_ns, self->hop, self->rate,
      self->T) < 0;
}

void
gst_av_attention_history_prune (GstAvAttention * self, gint64 t)
{
  while (self->hist_n > 0
      && history_too_old (self, self->hist_rt[self->hist_first], t)) {
    self->hist_first++;
    self->hist_n--;
  }
  if (self->hist_n == 0)
    self->hist_first = 0;
}

/* Adds the spectrogram frame (M floats, any alignment) at running time s,
 * while the video frame at t waits for its window. */
static void
history_add (GstAvAttention * self, const guint8 * frame, gint64 s, gint64 t)
{
  const gsize M = (gsize) self->w->cfg.M;
  gsize at;

  if (history_too_old (self, s, t))
    return;
  gst_av_attention_history_prune (self, t);
  if (self->hist_n == self->hist_cap) {
    /* only with frames closer than a hop apart; the oldest goes */
    GST_DEBUG_OBJECT (self, "audio history full (%" G_GSIZE_FORMAT
        " frames), dropping the oldest", self->hist_cap);
    self->hist_first++;
    self->hist_n--;
  }
  if (self->hist_first + self->hist_n == self->hist_cap) {
    memmove (self->hist_frames, self->hist_frames + self->hist_first * M,
        self->hist_n * M * sizeof (gfloat));
    memmove (self->hist_rt, self->hist_rt + self->hist_first,
        self->hist_n * sizeof (gint64));
    self->hist_first = 0;
  }
  at = self->hist_first + self->hist_n;
  memcpy (self->hist_frames + at * M, frame, M * sizeof (gfloat));
  self->hist_rt[at] = s;
  self->hist_n++;
}

void
gst_av_attention_drop_audio (GstAvAttention * self)
{
  gst_aggregator_pad_drop_buffer (self->audio_pad);
  gst_buffer_replace (&self->audio_cur, NULL);
  self->audio_idx = 0;
}

static void
audio_known_until (GstAvAttention * self, GstClockTime rt)
{
  if (GST_CLOCK_TIME_IS_VALID (rt) && (!GST_CLOCK_TIME_IS_VALID
          (self->audio_known) || rt > self->audio_known))
    self->audio_known = rt;
}

/* The audio buffer the next spectrogram frame comes from
 * (self->audio_cur, not reffed), or NULL when audio_sink has none queued
 * now. */
static GstBuffer *
audio_head (GstAvAttention * self)
{
  GstBuffer *buf = gst_aggregator_pad_peek_buffer (self->audio_pad);

  if (buf == NULL)
    return NULL;
  if (buf != self->audio_cur) {
    gst_buffer_replace (&self->audio_cur, buf);
    self->audio_idx = 0;
  }
  gst_buffer_unref (buf);
  return self->audio_cur;
}

/* The first buffer in a new rate or hop (at @pts): the audio of the old
 * format is complete, and nothing lies between its end and this buffer, so
 * a frame up to here uses the old window (*reached); after it the window is
 * rebuilt for the new format and the old frames are dropped (no mixing of
 * hops in one window). */
static GstFlowReturn
apply_pending_caps (GstAvAttention * self, GstClockTime pts, GstClockTime t,
    gboolean * reached)
{
  GstClockTime start = gst_av_pad_running_time (self->audio_pad, pts);

  if (GST_CLOCK_TIME_IS_VALID (start) && t <= start) {
    *reached = TRUE;
    return GST_FLOW_OK;
  }
  GST_DEBUG_OBJECT (self, "audio_sink: %d Hz, hop %d from %"
      GST_TIME_FORMAT, self->pending_ainfo.rate,
      self->pending_ainfo.hop_length, GST_TIME_ARGS (start));
  self->ainfo = self->pending_ainfo;
  self->audio_caps_pending = FALSE;
  return gst_av_attention_setup (self);
}

/* A gap or empty buffer at @pts for @dur: no spectrogram frames here, but
 * the audio is known to its end.  TRUE when it reaches t (the buffer
 * stays); otherwise it is dropped. */
static gboolean
audio_gap (GstAvAttention * self, GstClockTime pts, GstClockTime dur,
    GstClockTime t)
{
  GstClockTime start = gst_av_pad_running_time (self->audio_pad, pts);
  GstClockTime end = GST_CLOCK_TIME_IS_VALID (pts)
      && GST_CLOCK_TIME_IS_VALID (dur) ?
      gst_av_pad_running_time (self->audio_pad, pts + dur) :
      GST_CLOCK_TIME_NONE;

  if (GST_CLOCK_TIME_IS_VALID (start) && start >= t)
    return TRUE;
  audio_known_until (self, end);
  if (GST_CLOCK_TIME_IS_VALID (end) && end > t)
    return TRUE;
  GST_LOG_OBJECT (self, "audio gap until %" GST_TIME_FORMAT,
      GST_TIME_ARGS (end));
  gst_av_attention_drop_audio (self);
  return FALSE;
}

/* Checks the spectrogram buffer @buf of @size bytes (caps, whole frames,
 * timestamp) and moves its frames before t into the history.  *reached:
 * a frame at t or later was found (the buffer stays); otherwise the buffer
 * is dropped. */
static GstFlowReturn
audio_take_frames (GstAvAttention * self, GstBuffer * buf, gsize size,
    GstClockTime t, gboolean * reached)
{
  GstClockTime pts = GST_BUFFER_PTS (buf), dur = GST_BUFFER_DURATION (buf);
  GstMapInfo map;
  gsize frame_bytes;
  guint64 n;

  if (!self->have_audio_caps) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("audio_sink: received spectrogram data before its caps"), (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  frame_bytes = self->ainfo.frame_size * sizeof (gfloat);
  if (size % frame_bytes != 0) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("audio_sink: a buffer of %" G_GSIZE_FORMAT " bytes does not hold "
            "whole spectrogram frames of %d float32 mel bands (%"
            G_GSIZE_FORMAT " bytes)", size, self->ainfo.n_mels,
            frame_bytes), (NULL));
    return GST_FLOW_ERROR;
  }
  if (!GST_CLOCK_TIME_IS_VALID (pts)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("audio_sink: a spectrogram buffer has no timestamp; avattention "
            "places audio frames in the window by their time"), (NULL));
    return GST_FLOW_ERROR;
  }
  n = size / frame_bytes;
  if (!gst_buffer_map (buf, &map, GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ,
        ("audio_sink: cannot map a spectrogram buffer"), (NULL));
    return GST_FLOW_ERROR;
  }
  for (; self->audio_idx < n; self->audio_idx++) {
    GstClockTime fpts = gst_av_tensor_frame_pts (&self->ainfo, pts,
        self->audio_idx);
    GstClockTime rt = gst_av_pad_running_time (self->audio_pad, fpts);

    if (GST_CLOCK_TIME_IS_VALID (rt) && rt >= t) {
      *reached = TRUE;
      break;
    }
    if (GST_CLOCK_TIME_IS_VALID (rt)) {
      history_add (self, map.data + self->audio_idx * frame_bytes,
          (gint64) rt, (gint64) t);
      /* the frame lasts one hop */
      audio_known_until (self, gst_av_pad_running_time (self->audio_pad,
              gst_av_tensor_frame_pts (&self->ainfo, pts,
                  self->audio_idx + 1)));
    }
  }
  gst_buffer_unmap (buf, &map);
  if (*reached)
    return GST_FLOW_OK;
  if (GST_CLOCK_TIME_IS_VALID (dur))
    audio_known_until (self, gst_av_pad_running_time (self->audio_pad,
            pts + dur));
  gst_av_attention_drop_audio (self);
  return GST_FLOW_OK;
}

/* Moves the spectrogram frames before running time t from the audio pad
 * into the history.  *reached: the audio is known up to t. */
GstFlowReturn
gst_av_attention_feed_audio (GstAvAttention * self, GstClockTime t,
    gboolean * reached)
{
  *reached = FALSE;
  for (;;) {
    GstBuffer *buf = audio_head (self);
    GstFlowReturn ret;
    gsize size;

    if (buf == NULL)
      break;
    size = gst_buffer_get_size (buf);
    if (self->audio_caps_pending) {
      ret = apply_pending_caps (self, GST_BUFFER_PTS (buf), t, reached);
      if (ret != GST_FLOW_OK || *reached)
        return ret;
    }
    if (GST_BUFFER_FLAG_IS_SET (buf, GST_BUFFER_FLAG_GAP) || size == 0) {
      if (audio_gap (self, GST_BUFFER_PTS (buf), GST_BUFFER_DURATION (buf),
              t)) {
        *reached = TRUE;
        return GST_FLOW_OK;
      }
      continue;
    }
    ret = audio_take_frames (self, buf, size, t, reached);
    if (ret != GST_FLOW_OK || *reached)
      return ret;
  }
  *reached = GST_CLOCK_TIME_IS_VALID (self->audio_known)
      && self->audio_known >= t;
  return GST_FLOW_OK;
}

/* Fills a job's window (mel: T x M, mask: T) with the history's frames in
 * [t - window, t); returns the slots that hold audio. */
gint
gst_av_attention_window_fill (GstAvAttention * self, gfloat * mel,
    guint8 * mask, GstClockTime t)
{
  const AvfConfig *c = &self->w->cfg;

  return avf_window_assemble (mel, mask, self->T, c->M,
      self->hist_frames + self->hist_first * (gsize) c->M,
      self->hist_rt + self->hist_first, self->hist_n, (gint64) t,
      self->window_ns, self->hop, self->rate);
}

/* ---- the end of the audio, and new streams ------------------------------ */

/* audio_sink at end-of-stream (its source ended, or the element ended it
 * for want of a source, gstavinputs.h) comes back with a new stream: the
 * stream-start of an audio branch linked while playing.  GstAggregator
 * queues that event on the pad and clears the end when the element has
 * handled it, between two aggregate calls; the frames taken up meanwhile,
 * in the same call (with workers, as long as video frames are queued),
 * must not go out as if the audio had ended while its data waits behind
 * the event.  So a queued stream-start counts as the audio going on: the
 * frame waits, aggregate returns, the event is handled and from then on
 * the frames wait for the audio of their window as for an input present
 * from the start (or, live, until the aggregator's timeout).  A frame
 * taken up before the stream-start reached the pad still finds the audio
 * ended: the element cannot know that a source, wherever it was linked
 * upstream, will ever send anything. */

void
gst_av_attention_audio_start_queued (GstAvAttention * self)
{
  self->audio_starts_queued++;
}

void
gst_av_attention_audio_start_handled (GstAvAttention * self)
{
  g_mutex_lock (&self->audio_start_lock);
  if (self->audio_starts_queued > 0)
    self->audio_starts_queued--;
  self->audio_start_waited = FALSE;
  g_mutex_unlock (&self->audio_start_lock);
}

void
gst_av_attention_audio_reset (GstAvAttention * self)
{
  g_mutex_lock (&self->audio_start_lock);
  self->audio_starts_queued = 0;
  self->audio_start_waited = FALSE;
  g_mutex_unlock (&self->audio_start_lock);
}

gboolean
gst_av_attention_audio_ended (GstAvAttention * self)
{
  gboolean ended;

  if (!gst_aggregator_pad_is_eos (self->audio_pad))
    return FALSE;
  g_mutex_lock (&self->audio_start_lock);
  if (self->audio_starts_queued > 0 && self->audio_start_waited) {
    /* aggregate returned for it and GstAggregator handles a pad's queued
     * events before the next call: it was dropped (a flush, an error) */
    GST_DEBUG_OBJECT (self->audio_pad, "the stream-start it waited for is "
        "gone");
    self->audio_starts_queued = 0;
    self->audio_start_waited = FALSE;
  }
  ended = self->audio_starts_queued == 0;
  g_mutex_unlock (&self->audio_start_lock);
  if (!ended)
    GST_LOG_OBJECT (self->audio_pad, "at end-of-stream, but a new stream "
        "starts: the audio goes on");
  return ended;
}

void
gst_av_attention_audio_waiting (GstAvAttention * self)
{
  gboolean eos = gst_aggregator_pad_is_eos (self->audio_pad);

  g_mutex_lock (&self->audio_start_lock);
  self->audio_start_waited = eos && self->audio_starts_queued > 0;
  g_mutex_unlock (&self->audio_start_lock);
}
