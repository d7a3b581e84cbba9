/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* avattention's audio window (internal, not installed): the history of
 * spectrogram frames taken from audio_sink, the dropping of the frames no
 * window needs any more, and the filling of a job's window from it; and
 * whether the audio input has ended, with the new streams that bring an
 * ended audio_sink back.  The state lives in struct _GstAvAttention
 * (gstavattentionpriv.h), with its locking rules. */
#ifndef __GST_AV_ATTENTION_AUDIO_H__
#define __GST_AV_ATTENTION_AUDIO_H__

#include <gst/gst.h>

#include "gstavattention.h"

G_BEGIN_DECLS

void gst_av_attention_history_clear (GstAvAttention * self);
void gst_av_attention_history_prune (GstAvAttention * self, gint64 t);
void gst_av_attention_drop_audio (GstAvAttention * self);
GstFlowReturn gst_av_attention_feed_audio (GstAvAttention * self,
    GstClockTime t, gboolean * reached);
gint gst_av_attention_window_fill (GstAvAttention * self, gfloat * mel,
    guint8 * mask, GstClockTime t);

/* A new stream on audio_sink: gst_av_attention_audio_start_queued (any
 * thread, with the element's audio_start_lock held) when its stream-start
 * was queued on the pad, gst_av_attention_audio_start_handled (aggregate
 * thread) when the element handles it; gst_av_attention_audio_reset when
 * the element starts. */
void gst_av_attention_audio_start_queued (GstAvAttention * self);
void gst_av_attention_audio_start_handled (GstAvAttention * self);
void gst_av_attention_audio_reset (GstAvAttention * self);

/* Aggregate thread.  gst_av_attention_audio_ended: the audio input has
 * ended for the frame being taken up -- audio_sink is at end-of-stream and
 * no new stream's stream-start waits in its queue.
 * gst_av_attention_audio_waiting: aggregate returns to wait for audio_sink
 * (its data, or the handling of such a stream-start). */
gboolean gst_av_attention_audio_ended (GstAvAttention * self);
void gst_av_attention_audio_waiting (GstAvAttention * self);

G_END_DECLS

#endif /* __GST_AV_ATTENTION_AUDIO_H__ */
