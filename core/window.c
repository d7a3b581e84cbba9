/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "window.h"

#include <math.h>
#include <string.h>

/* Offsets beyond this many nanoseconds (about 11.6 days) are out of any
 * window; it keeps d * sample_rate inside int64. */
#define AVF_WINDOW_MAX_NS INT64_C(1000000000000000)

int
avf_window_slots (int64_t window_ns, int hop, int sample_rate)
{
  if (window_ns <= 0 || hop <= 0 || sample_rate <= 0
      || window_ns > AVF_WINDOW_MAX_NS / 1000)
    return 0;
  double x = (double) (window_ns * (int64_t) sample_rate)
      / ((double) hop * 1e9);
  double T = floor (x + 0.5);
  return T > 1e6 ? 0 : (int) T;
}

int
avf_window_slot (int64_t s, int64_t t, int64_t window_ns, int hop,
    int sample_rate, int T)
{
  /* d = s - (t - window) without overflow for any int64 inputs */
  if (t < INT64_MIN / 2 || t > INT64_MAX / 2 || s < INT64_MIN / 2
      || s > INT64_MAX / 2 || window_ns < 0 || window_ns > AVF_WINDOW_MAX_NS)
    return -1;
  int64_t d = s - (t - window_ns);
  if (d < -AVF_WINDOW_MAX_NS / 1000 || d > AVF_WINDOW_MAX_NS / 1000)
    return -1;
  double x = (double) (d * (int64_t) sample_rate) / ((double) hop * 1e9);
  double j = floor (x + 0.5);
  if (j < 0.0 || j >= (double) T)
    return -1;
  return (int) j;
}

int
avf_window_assemble (float *mel, uint8_t * mask, int T, int M,
    const float *frames, const int64_t * pts, size_t n, int64_t t,
    int64_t window_ns, int hop, int sample_rate)
{
  memset (mel, 0, (size_t) T * M * sizeof (float));
  memset (mask, 1, (size_t) T);
  int filled = 0;
  for (size_t i = 0; i < n; i++) {
    int j = avf_window_slot (pts[i], t, window_ns, hop, sample_rate, T);
    if (j < 0)
      continue;
    if (mask[j]) {
      mask[j] = 0;
      filled++;
    }
    memcpy (mel + (size_t) j * M, frames + i * (size_t) M,
        (size_t) M * sizeof (float));
  }
  return filled;
}
