/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* avattention's ordered worker pool: each video frame becomes a job, fused
 * on a free workspace by a worker thread (or in the aggregate thread with
 * one thread), and the results leave strictly in input order (see
 * "Threads" in gstavattention.c).  The state and its locking rules:
 * gstavattentionpriv.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstavattentionpriv.h"

#include <string.h>

#define GST_CAT_DEFAULT gst_av_attention_debug

void
gst_av_attention_free_workspaces (GstAvAttention * self)
{
  for (guint i = 0; i < self->n_ws; i++) {
    avf_fusion_free (self->ws[i].fusion);
    g_free (self->ws[i].mel);
    g_free (self->ws[i].mask);
    g_free (self->ws[i].video_scratch);
    gst_av_rhythm_work_free (self->ws[i].rhythm);
  }
  g_free (self->ws);
  self->ws = NULL;
  self->n_ws = 0;
}

/* Fuses the frame of a job into its output buffer: in a worker thread, or
 * in the aggregate thread with one thread. */
static void
gst_av_attention_fuse (GstAvAttention * self, AvJob * job)
{
  AvWorkspace *ws = job->ws;
  GstMapInfo omap, vmap;
  const gfloat *video;

  if (!gst_buffer_map (job->out, &omap, GST_MAP_WRITE)) {
    job->failed = TRUE;
    return;
  }
  if (!gst_buffer_map (job->vbuf, &vmap, GST_MAP_READ)) {
    gst_buffer_unmap (job->out, &omap);
    job->failed = TRUE;
    return;
  }
  video = (const gfloat *) (vmap.data + job->k * job->frame_bytes);
  if (((guintptr) video) % G_ALIGNOF (gfloat) != 0) {
    memcpy (ws->video_scratch, video, job->frame_bytes);
    video = ws->video_scratch;
  }
  if (ws->rhythm != NULL) {
    /* avfusion-v2: the tokens e_n + the rhythm term of the job's bins */
    video = gst_av_rhythm_work_tokens (ws->rhythm, video, ws->mel, ws->mask,
        job->bins, NULL);
    if (video == NULL) {
      gst_buffer_unmap (job->vbuf, &vmap);
      gst_buffer_unmap (job->out, &omap);
      job->failed = TRUE;
      return;
    }
  }
  avf_fusion_forward (ws->fusion, (gfloat *) omap.data, ws->mel, ws->mask,
      video, self->mode);
  gst_buffer_unmap (job->vbuf, &vmap);
  gst_buffer_unmap (job->out, &omap);
}

/* GThreadPool function: one job, then wake the aggregate thread. */
void
gst_av_attention_work (gpointer data, gpointer user_data)
{
  GstAvAttention *self = user_data;
  AvJob *job = data;

  gst_av_attention_fuse (self, job);
  g_mutex_lock (&self->jobs_lock);
  job->done = TRUE;
  g_cond_broadcast (&self->jobs_cond);
  g_mutex_unlock (&self->jobs_lock);
}

void
gst_av_attention_job_wait (GstAvAttention * self, AvJob * job)
{
  g_mutex_lock (&self->jobs_lock);
  while (!job->done)
    g_cond_wait (&self->jobs_cond, &self->jobs_lock);
  g_mutex_unlock (&self->jobs_lock);
}

void
gst_av_attention_job_free (AvJob * job)
{
  if (job->ws)
    job->ws->busy = FALSE;
  gst_clear_buffer (&job->vbuf);
  gst_clear_buffer (&job->out);
  if (job->bins != NULL) {
    gst_av_history_bins_clear (job->bins, job->n_bins);
    g_free (job->bins);
  }
  g_free (job);
}

/* Empties the job queue: pushes every result in order (push) or drops
 * them (flush, stop).  After a failed push the rest are dropped.  Returns
 * the first failure. */
GstFlowReturn
gst_av_attention_drain (GstAvAttention * self, gboolean push)
{
  GstFlowReturn ret = GST_FLOW_OK;

  while (!g_queue_is_empty (&self->jobs)) {
    if (push && ret == GST_FLOW_OK) {
      ret = gst_av_attention_finish_job (self);
    } else {
      AvJob *job = g_queue_pop_head (&self->jobs);

      gst_av_attention_job_wait (self, job);
      gst_av_attention_job_free (job);
    }
  }
  return ret;
}

/* Pushes the results at the head of the queue that are ready, without
 * waiting. */
GstFlowReturn
gst_av_attention_push_done (GstAvAttention * self)
{
  GstFlowReturn ret = GST_FLOW_OK;

  while (ret == GST_FLOW_OK && !g_queue_is_empty (&self->jobs)) {
    AvJob *job = g_queue_peek_head (&self->jobs);
    gboolean done;

    g_mutex_lock (&self->jobs_lock);
    done = job->done;
    g_mutex_unlock (&self->jobs_lock);
    if (!done)
      break;
    ret = gst_av_attention_finish_job (self);
  }
  return ret;
}

/* Queues frame k of the video buffer at running time t: with its audio
 * window on a free workspace, fused by a worker (or here, with one
 * thread), or, with interval > 1, as a reuse of the last result. */
GstFlowReturn
gst_av_attention_produce (GstAvAttention * self, GstBuffer * vbuf, guint64 k,
    GstClockTime pts, GstClockTime dur, GstClockTime t, gboolean audio_ended)
{
  AvWorkspace *ws = NULL;
  GstFlowReturn ret = GST_FLOW_OK;
  AvJob *job;
  guint interval;

  GST_OBJECT_LOCK (self);
  interval = self->interval;
  GST_OBJECT_UNLOCK (self);

  job = g_new0 (AvJob, 1);
  job->pts = pts;
  job->dur = dur;
  job->t = t;
  job->audio_ended = audio_ended;
  GST_OBJECT_LOCK (self->video_pad);
  job->stream_time = self->video_pad->segment.format == GST_FORMAT_TIME ?
      gst_segment_to_stream_time (&self->video_pad->segment,
      GST_FORMAT_TIME, pts) : GST_CLOCK_TIME_NONE;
  GST_OBJECT_UNLOCK (self->video_pad);

  gst_av_attention_history_prune (self, (gint64) t);
  /* one frame in interval is fused, the first after a start or flush
   * among them; the result a reused frame copies is pushed before it */
  if (interval > 1 && self->frames_out % interval != 0) {
    self->frames_out++;
    job->done = TRUE;
    g_queue_push_tail (&self->jobs, job);
    return self->workers ? gst_av_attention_push_done (self) :
        gst_av_attention_drain (self, TRUE);
  }
  self->frames_out++;

  /* a free workspace: with every one busy, the oldest job goes out */
  for (;;) {
    for (guint i = 0; i < self->n_ws && ws == NULL; i++)
      if (!self->ws[i].busy)
        ws = &self->ws[i];
    if (ws != NULL)
      break;
    ret = gst_av_attention_finish_job (self);
    if (ret != GST_FLOW_OK) {
      g_free (job);
      return ret;
    }
  }
  job->present = gst_av_attention_window_fill (self, ws->mel, ws->mask, t);
  ret = gst_buffer_pool_acquire_buffer (self->out_pool, &job->out, NULL);
  if (ret != GST_FLOW_OK) {
    g_free (job);
    return ret;
  }
  if (self->vhist != NULL) {
    job->n_bins = gst_av_history_n_centres (self->vhist);
    job->bins = g_new0 (GstBuffer *, job->n_bins);
    gst_av_history_lookup (self->vhist, job->bins, (gint64) t,
        self->window_ns, self->hop, self->rate);
  }
  ws->busy = TRUE;
  job->ws = ws;
  job->keep_result = interval > 1;
  job->vbuf = gst_buffer_ref (vbuf);
  job->k = k;
  job->frame_bytes = self->vinfo.frame_size * sizeof (gfloat);
  g_queue_push_tail (&self->jobs, job);

  if (self->workers == NULL) {
    gst_av_attention_fuse (self, job);
    job->done = TRUE;
    return gst_av_attention_drain (self, TRUE);
  }
  GST_LOG_OBJECT (self, "frame %" GST_TIME_FORMAT " to a worker, %u in "
      "the queue", GST_TIME_ARGS (pts), g_queue_get_length (&self->jobs));
  g_thread_pool_push (self->workers, job, NULL);
  return gst_av_attention_push_done (self);
}
