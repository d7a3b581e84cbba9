/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The whole model against PyTorch (model/avfusion.py fixtures): the fused
 * vector and every attention map, head mean and per head, at the default
 * sizes (built-in seeded weights) and at an odd small configuration
 * (E 48, H 3, L 2, F 96, M 40, P 8, T 37, N 12, weights exported from
 * PyTorch), with full, partially masked and fully masked audio windows.
 */
#if defined(__GLIBC__) || defined(__linux__)
#define _GNU_SOURCE 1
#endif
#include <malloc.h>

#include "avf_test.h"
#include "fusion.h"
#include "weights.h"

static const char *const cases[] = { "full", "partial", "empty" };

static void
check_fixture (const char *file, AvfAttnMode mode)
{
  AvfSafetensors *fx = avf_test_open_fixture (file);
  if (fx == NULL)
    return;
  AvfWeights *w = avf_test_fixture_weights (fx, "seed");
  if (w == NULL) {
    avf_safetensors_free (fx);
    return;
  }
  const int T = avf_test_meta_int (fx, "T");
  const int E = w->cfg.E, L = w->cfg.L, H = w->cfg.H;
  AvfFusion *f = NULL;
  AvfError err;
  AVF_CHECK (avf_fusion_new (&f, w, T, &err) == AVF_OK, "%s", err.message);
  float *video = avf_test_tensor (fx, "patches", AVF_DTYPE_F32, NULL);
  float *fused = malloc ((size_t) 2 * E * sizeof (float));
  char name[128];

  /* under valgrind (memcheck takes ~25 s per frame at the default sizes)
   * the default-size fixture checks its first case only */
  const size_t n_cases = getenv ("AVF_UNDER_VALGRIND") && E >= 128 ? 1 : 3;

  for (size_t c = 0; c < n_cases && f && video; c++) {
    snprintf (name, sizeof name, "%s.mel", cases[c]);
    float *mel = avf_test_tensor (fx, name, AVF_DTYPE_F32, NULL);
    snprintf (name, sizeof name, "%s.mask", cases[c]);
    uint8_t *mask = avf_test_tensor (fx, name, AVF_DTYPE_U8, NULL);
    snprintf (name, sizeof name, "%s.fused", cases[c]);
    float *ref = avf_test_tensor (fx, name, AVF_DTYPE_F32, NULL);
    if (!mel || !mask || !ref) {
      free (mel);
      free (mask);
      free (ref);
      continue;
    }
    int present = avf_fusion_forward (f, fused, mel, mask, video, mode);
    int want_present = 0;
    for (int j = 0; j < T; j++)
      want_present += !mask[j];
    AVF_CHECK (present == want_present, "%s: %d slots present", cases[c],
        present);
    snprintf (name, sizeof name, "%s %s fused", file, cases[c]);
    AVF_CHECK_CLOSE (fused, ref, (size_t) 2 * E, 1e-4, name);
    for (int e = 0; e < 2 * E; e++)
      AVF_CHECK (isfinite (fused[e]), "%s: fused[%d] is %g", name, e,
          fused[e]);

    for (int l = 0; l < L && mode != AVF_ATTN_NONE; l++) {
      for (int m = 0; m < AVF_N_MODULES; m++) {
        int heads, tq, tk;
        const float *map = avf_fusion_map (f, l, (AvfModule) m, &heads, &tq,
            &tk);
        snprintf (name, sizeof name, "%s.layers.%d.%s%s", cases[c], l,
            avf_module_name ((AvfModule) m),
            mode == AVF_ATTN_PER_HEAD ? ".per_head" : "");
        size_t n;
        float *rmap = avf_test_tensor (fx, name, AVF_DTYPE_F32, &n);
        if (rmap == NULL)
          continue;
        AVF_CHECK (heads == (mode == AVF_ATTN_PER_HEAD ? H : 1), "heads");
        AVF_CHECK (n == (size_t) heads * tq * tk, "%s: %zu values, map has "
            "%d x %d x %d", name, n, heads, tq, tk);
        char what[200];
        snprintf (what, sizeof what, "%s %s", file, name);
        AVF_CHECK_CLOSE (map, rmap, n, 1e-4, what);
        int skipped = avf_fusion_map_skipped (f, l, (AvfModule) m);
        AVF_CHECK (skipped == (isnan (rmap[0]) ? 1 : 0),
            "%s: skipped flag %d", what, skipped);
        free (rmap);
      }
    }
    free (mel);
    free (mask);
    free (ref);
  }
  free (fused);
  free (video);
  avf_fusion_free (f);
  avf_weights_free (w);
  avf_safetensors_free (fx);
}

static void
test_default_sizes_head_mean (void)
{
  check_fixture ("fusion_default.safetensors", AVF_ATTN_MEAN);
}

static void
test_default_sizes_no_maps (void)
{
  check_fixture ("fusion_default.safetensors", AVF_ATTN_NONE);
}

static void
test_small_config_head_mean (void)
{
  check_fixture ("fusion_small.safetensors", AVF_ATTN_MEAN);
}

static void
test_small_config_per_head (void)
{
  check_fixture ("fusion_small.safetensors", AVF_ATTN_PER_HEAD);
}

static void
test_same_input_same_bytes_no_allocation (void)
{
  /* Robustness 32: identical bytes for identical input; and the per-frame
   * call allocates nothing (heap in use is unchanged after warm-up). */
  AvfConfig cfg = avf_config_default ();
  AvfWeights *w;
  AvfFusion *f;
  avf_weights_new_default (&w, &cfg, 3, NULL);
  avf_fusion_new (&f, w, 100, NULL);
  float *mel = calloc (100 * 64, sizeof (float));
  float *video = calloc (196 * 256, sizeof (float));
  uint8_t mask[100] = { 0 };
  for (int i = 0; i < 100 * 64; i++)
    mel[i] = (float) (i % 17) * 0.25f - 2.0f;
  for (int i = 0; i < 196 * 256; i++)
    video[i] = (float) (i % 13) * 0.1f - 0.6f;
  for (int j = 0; j < 100; j += 3)
    mask[j] = 1;
  float a[512], b[512];
  avf_fusion_forward (f, a, mel, mask, video, AVF_ATTN_MEAN);
#if !defined(__SANITIZE_ADDRESS__)
  struct mallinfo2 before = mallinfo2 ();
#endif
  const int repeats = getenv ("AVF_UNDER_VALGRIND") ? 1 : 3;
  for (int k = 0; k < repeats; k++)
    avf_fusion_forward (f, b, mel, mask, video, AVF_ATTN_PER_HEAD);
  avf_fusion_forward (f, b, mel, mask, video, AVF_ATTN_MEAN);
#if !defined(__SANITIZE_ADDRESS__)
  struct mallinfo2 after = mallinfo2 ();
  AVF_CHECK (after.uordblks == before.uordblks,
      "heap in use changed from %zu to %zu bytes during forward",
      before.uordblks, after.uordblks);
#endif
  AVF_CHECK (memcmp (a, b, sizeof a) == 0, "second run differs");
  free (mel);
  free (video);
  avf_fusion_free (f);
  avf_weights_free (w);
}

static void
test_window_longer_than_positions (void)
{
  AvfConfig cfg = avf_config_default ();
  AvfWeights *w;
  AvfFusion *f = NULL;
  AvfError err;
  avf_weights_new_default (&w, &cfg, 0, NULL);
  AVF_CHECK (avf_fusion_new (&f, w, 101, &err) == AVF_ERR_SHAPE, "T 101");
  AVF_CHECK_CONTAINS (err.message, "101 slots");
  AVF_CHECK_CONTAINS (err.message, "audio_pos");
  avf_weights_free (w);
  avf_fusion_free (NULL);
}

AVF_TEST_MAIN (AVF_TEST (test_default_sizes_head_mean),
    AVF_TEST (test_default_sizes_no_maps),
    AVF_TEST (test_small_config_head_mean),
    AVF_TEST (test_small_config_per_head),
    AVF_TEST (test_same_input_same_bytes_no_allocation),
    AVF_TEST (test_window_longer_than_positions))
