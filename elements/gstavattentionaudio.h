/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* avattention's audio window (internal, not installed): the history of
 * spectrogram frames taken from audio_sink, the dropping of the frames no
 * window needs any more, and the filling of a job's window from it.  The
 * state lives in struct _GstAvAttention (gstavattentionpriv.h), with its
 * locking rules. */
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

G_END_DECLS

#endif /* __GST_AV_ATTENTION_AUDIO_H__ */
