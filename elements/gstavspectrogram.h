/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * avspectrogram: raw float audio in, log-mel spectrogram frames out
 * (avfusion-v1 spec §1).  A thin adapter over core/mel.h.
 */
#ifndef __GST_AV_SPECTROGRAM_H__
#define __GST_AV_SPECTROGRAM_H__

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_AV_SPECTROGRAM (gst_av_spectrogram_get_type ())
G_DECLARE_FINAL_TYPE (GstAvSpectrogram, gst_av_spectrogram, GST,
    AV_SPECTROGRAM, GstElement);

G_END_DECLS

#endif /* __GST_AV_SPECTROGRAM_H__ */
