/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Test signals of the element tests, and the spectrogram core computes of
 * a signal.
 */
#ifndef AVF_SIGNAL_H
#define AVF_SIGNAL_H

#include <glib.h>

#include "mel.h"

G_BEGIN_DECLS

/* @n interleaved frames of @channels float samples at @rate: channel c is
 * a tone of amplitude 0.5 at 300 + c * @tone_step Hz plus deterministic
 * noise of @seed (an LCG, uniform in [-0.1, 0.1)).  g_free. */
gfloat *avf_make_signal (gsize n, gint channels, gint rate, guint32 seed,
    gdouble tone_step);

/* core/mel.h on the whole signal @x (@n interleaved frames of @channels)
 * at once, what a fresh avspectrogram gives: its frames of cfg->n_mels
 * (g_free), their number in *@n_frames. */
gfloat *avf_reference_mel (const AvfMelConfig * cfg, const gfloat * x,
    gsize n, gint channels, gsize * n_frames);

G_END_DECLS
#endif /* AVF_SIGNAL_H */
