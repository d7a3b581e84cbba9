/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Window assembly (spec §3): which spectrogram frame lands in which slot.
 */
#include "avf_test.h"
#include "window.h"

#define SEC INT64_C(1000000000)
#define MS INT64_C(1000000)

/* Frame timestamps as the spectrogram element computes them from its
 * sample counter: first + k * hop / rate seconds, rounded down to ns. */
static int64_t
frame_ts (int64_t first, int64_t k, int hop, int rate)
{
  return first + (int64_t) ((__int128) k * hop * SEC / rate);
}

static void
test_slot_count (void)
{
  AVF_CHECK (avf_window_slots (SEC, 160, 16000) == 100, "default T");
  AVF_CHECK (avf_window_slots (370 * MS, 160, 16000) == 37, "T 37");
  /* 44.1 kHz, hop 441: exactly 10 ms */
  AVF_CHECK (avf_window_slots (SEC, 441, 44100) == 100, "44.1k T");
  /* 1 s / (512 / 48000 s) = 93.75 -> 94 */
  AVF_CHECK (avf_window_slots (SEC, 512, 48000) == 94, "rounded T");
  AVF_CHECK (avf_window_slots (0, 160, 16000) == 0, "empty window");
  AVF_CHECK (avf_window_slots (SEC, 0, 16000) == 0, "zero hop");
}

static void
test_full_window_is_causal (void)
{
  enum { T = 100, M = 2, NF = 300 };
  static float frames[NF * M], mel[T * M];
  static int64_t pts[NF];
  uint8_t mask[T];
  for (int k = 0; k < NF; k++) {
    pts[k] = frame_ts (0, k, 160, 16000);
    frames[k * M] = (float) k;
    frames[k * M + 1] = -(float) k;
  }
  /* video at t = 2 s: slots hold frames 100..199, frame 200 (at t) is out */
  int filled = avf_window_assemble (mel, mask, T, M, frames, pts, NF,
      2 * SEC, SEC, 160, 16000);
  AVF_CHECK (filled == T, "filled %d", filled);
  for (int j = 0; j < T; j++) {
    AVF_CHECK (mask[j] == 0, "slot %d masked", j);
    AVF_CHECK (mel[j * M] == (float) (100 + j), "slot %d holds %g", j,
        mel[j * M]);
  }
  AVF_CHECK (avf_window_slot (pts[200], 2 * SEC, SEC, 160, 16000, T) == -1,
      "the frame at t itself is in the future");
  AVF_CHECK (avf_window_slot (pts[99], 2 * SEC, SEC, 160, 16000, T) == -1,
      "a frame older than the window is out");
}

static void
test_stream_start_and_gap (void)
{
  enum { T = 100, M = 1 };
  float frames[200], mel[T];
  int64_t pts[200];
  uint8_t mask[T];
  size_t n = 0;
  /* 0..0.3 s of audio, a gap until 0.5 s, then audio again */
  for (int k = 0; k < 30; k++, n++) {
    pts[n] = frame_ts (0, k, 160, 16000);
    frames[n] = 1.0f;
  }
  for (int k = 0; k < 40; k++, n++) {
    pts[n] = frame_ts (500 * MS, k, 160, 16000);
    frames[n] = 2.0f;
  }
  /* video at 0.6 s: window [-0.4 s, 0.6 s) */
  int filled = avf_window_assemble (mel, mask, T, M, frames, pts, n,
      600 * MS, SEC, 160, 16000);
  AVF_CHECK (filled == 30 + 10, "filled %d", filled);
  for (int j = 0; j < T; j++) {
    double t = -0.4 + j * 0.01;
    int expect_present = (t >= -1e-9 && t < 0.3 - 1e-9)
        || (t >= 0.5 - 1e-9 && t < 0.6 - 1e-9);
    AVF_CHECK (mask[j] == !expect_present, "slot %d (%.2f s) mask %d", j, t,
        mask[j]);
    if (mask[j])
      AVF_CHECK (mel[j] == 0.0f, "masked slot %d not zero", j);
    else
      AVF_CHECK (mel[j] == (t < 0.4 ? 1.0f : 2.0f), "slot %d value", j);
  }
}

static void
test_no_audio (void)
{
  enum { T = 37, M = 3 };
  float mel[T * M];
  uint8_t mask[T];
  memset (mel, 0x7f, sizeof mel);
  int filled = avf_window_assemble (mel, mask, T, M, NULL, NULL, 0, 5 * SEC,
      370 * MS, 160, 16000);
  AVF_CHECK (filled == 0, "filled %d", filled);
  for (int j = 0; j < T; j++)
    AVF_CHECK (mask[j] == 1 && mel[j * M] == 0.0f, "slot %d", j);
}

static void
test_later_frame_wins_and_rounding (void)
{
  enum { T = 10, M = 1 };
  float frames[3] = { 1.0f, 2.0f, 3.0f }, mel[T];
  uint8_t mask[T];
  /* 10 ms hop; video at 100 ms, window 100 ms: slot j starts at j*10 ms.
   * 14.9 ms -> slot 1, 15 ms -> slot 2 (halves round up), 24 ms -> 2 */
  int64_t pts[3] = { 14900000, 15 * MS, 24 * MS };
  int filled = avf_window_assemble (mel, mask, T, M, frames, pts, 3,
      100 * MS, 100 * MS, 160, 16000);
  AVF_CHECK (filled == 2, "filled %d", filled);
  AVF_CHECK (mel[1] == 1.0f && mel[2] == 3.0f, "slots %g %g", mel[1], mel[2]);
  /* just before the window start rounds into slot 0 when within half a hop */
  AVF_CHECK (avf_window_slot (-4 * MS, 100 * MS, 100 * MS, 160, 16000,
          T) == 0, "-4 ms -> slot 0");
  AVF_CHECK (avf_window_slot (-6 * MS, 100 * MS, 100 * MS, 160, 16000,
          T) == -1, "-6 ms -> outside");
}

static void
test_ten_hours_no_drift (void)
{
  /* frames 10 h into a 44.1 kHz stream still fill every slot exactly once */
  enum { T = 100, M = 1, NF = 100 };
  const int hop = 441, rate = 44100;
  const int64_t k0 = (int64_t) 10 * 3600 * rate / hop;  /* frame index at 10 h */
  float frames[NF], mel[T];
  int64_t pts[NF];
  uint8_t mask[T];
  for (int k = 0; k < NF; k++) {
    pts[k] = frame_ts (0, k0 + k, hop, rate);
    frames[k] = (float) k;
  }
  int64_t t = frame_ts (0, k0 + NF, hop, rate);
  int filled = avf_window_assemble (mel, mask, T, M, frames, pts, NF, t, SEC,
      hop, rate);
  AVF_CHECK (filled == T, "filled %d of %d", filled, T);
  for (int j = 0; j < T; j++)
    AVF_CHECK (mel[j] == (float) j, "slot %d holds %g", j, mel[j]);
}

static void
test_extreme_timestamps (void)
{
  AVF_CHECK (avf_window_slot (INT64_MAX, 0, SEC, 160, 16000, 100) == -1,
      "INT64_MAX");
  AVF_CHECK (avf_window_slot (INT64_MIN, INT64_MAX, SEC, 160, 16000,
          100) == -1, "INT64_MIN");
  AVF_CHECK (avf_window_slot (0, INT64_MIN / 2 - 1, SEC, 160, 16000,
          100) == -1, "far past");
}

AVF_TEST_MAIN (AVF_TEST (test_slot_count),
    AVF_TEST (test_full_window_is_causal),
    AVF_TEST (test_stream_start_and_gap),
    AVF_TEST (test_no_audio),
    AVF_TEST (test_later_frame_wins_and_rounding),
    AVF_TEST (test_ten_hours_no_drift), AVF_TEST (test_extreme_timestamps))
