/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Test signals of the element tests and their spectrograms
 * (avf_signal.h).
 */
#include "avf_signal.h"

#include <gst/check/gstcheck.h>
#include <math.h>

gfloat *
avf_make_signal (gsize n, gint channels, gint rate, guint32 seed,
    gdouble tone_step)
{
  gfloat *x = g_new (gfloat, n * channels);
  guint32 s = seed;

  for (gsize i = 0; i < n; i++) {
    for (gint c = 0; c < channels; c++) {
      gfloat noise;
      s = s * 1664525u + 1013904223u;
      noise = ((gfloat) (s >> 8) / 16777216.0f - 0.5f) * 0.2f;
      x[i * channels + c] = 0.5f * (gfloat) sin (2.0 * G_PI * (300.0 +
              tone_step * c) * (gdouble) i / rate) + noise;
    }
  }
  return x;
}

gfloat *
avf_reference_mel (const AvfMelConfig * cfg, const gfloat * x, gsize n,
    gint channels, gsize * n_frames)
{
  AvfMel *mel = NULL;
  AvfError err;
  gsize frames, got;
  gfloat *out;

  fail_unless (avf_mel_new (&mel, cfg, &err) == AVF_OK, "%s", err.message);
  frames = avf_mel_frames_after (mel, n);
  out = g_new0 (gfloat, MAX (frames, 1) * cfg->n_mels);
  got = avf_mel_push (mel, out, frames, x, n, channels, NULL);
  fail_unless_equals_uint64 (got, frames);
  avf_mel_free (mel);
  *n_frames = frames;
  return out;
}
