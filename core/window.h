/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * window: which spectrogram frame goes to which audio slot (spec §3), as
 * pure functions of timestamps (nanoseconds on one timeline, e.g. running
 * time).
 *
 * The hop duration is hop / sample_rate seconds.  For the video frame at t
 * the window covers [t - window, t) and has T = round(window / hop_duration)
 * slots; a frame with timestamp s goes to slot
 *   j = round((s - (t - window)) / hop_duration)   when 0 <= j < T.
 * "round" is floor(x + 0.5) here (halves round up), computed in float64
 * exactly as model/avfusion.py window_slot() does.
 */
#ifndef AVF_WINDOW_H
#define AVF_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "avf_error.h"

/* T for a window; 0 when the window is shorter than half a hop. */
int avf_window_slots (int64_t window_ns, int hop, int sample_rate);

/* The slot of a frame at s for the video frame at t, or -1 outside. */
int avf_window_slot (int64_t s, int64_t t, int64_t window_ns, int hop,
    int sample_rate, int T);

/* Fills mel (T, M) and mask (T) (1 = no frame, row zero) from n frames
 * (n, M) with timestamps pts (n).  When two frames land in one slot the
 * later one in the list wins.  Returns the number of filled slots. */
int avf_window_assemble (float *mel, uint8_t * mask, int T, int M,
    const float *frames, const int64_t * pts, size_t n, int64_t t,
    int64_t window_ns, int hop, int sample_rate);

#endif /* AVF_WINDOW_H */
