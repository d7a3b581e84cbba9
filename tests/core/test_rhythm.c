/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * avfusion-v2's rhythm stage against its PyTorch twin (model/avfusion2.py,
 * fixtures by model/avfusion2_fixtures.py in v2_core.safetensors): the
 * [N, E + D] rows of a picture (patch embedding then rhythm features, also
 * in 4-byte layouts with padded rows), the rhythm term (a correlation per
 * lag, the fixture's lags -1, 0 and 1) and the whole fusion for windows
 * with every bin, some, a lag with too few bins, one and no audio, the
 * frames of the bin centres of a history (bin_frames, also before the
 * window and after t), c_j in exact nanoseconds (floored below zero), and
 * the window that is not K G slots.  rhythm_neighbourhood k > 1: the mean
 * over the k x k block against a direct loop on hand-made grids, and the
 * rows of pictures on a 4 x 3 and a 3 x 4 grid at k 1, 3, 5, 7 against the
 * twin (v2_neighbourhood.safetensors), also read from a file exported with
 * k 5 (v2_weights_hood5.safetensors).
 */
#include "avf_test.h"
#include "fusion.h"
#include "patch_embed.h"
#include "rhythm.h"

#define TOL 1e-4

static const char *const MODULES[] = {
  "audio_self", "video_self", "audio_cross", "video_cross"
};

static AvfWeights *
load_v2 (void)
{
  return avf_test_load_weights_fixture ("v2_weights_small.safetensors");
}

static void
test_weights_sizes (void)
{
  AvfWeights *w = load_v2 ();
  if (w == NULL)
    return;
  const AvfRhythmConfig *r = &w->rhythm;
  AVF_CHECK (r->D == 5 && r->C == 3 && r->Q == 2 && r->K == 10 && r->G == 4
      && r->lags == 3 && r->lag_min == -1, "D %d C %d Q %d K %d G %d lags "
      "%d from %d", r->D, r->C, r->Q, r->K, r->G, r->lags, r->lag_min);
  AVF_CHECK (avf_rhythm_n_centres (r) == 12, "%d centres",
      avf_rhythm_n_centres (r));
  AVF_CHECK (w->cfg.E == 48 && w->cfg.N == 12 && w->cfg.P == 8
      && w->cfg.T_max == 40 && w->cfg.window_ms == 400, "v1 sizes");
  AVF_CHECK (strcmp (avf_weights_format (w), "avfusion-v2") == 0, "%s",
      avf_weights_format (w));
  AVF_CHECK (avf_weights_n_tensors (w) == avf_weights_count (&w->cfg) + 6,
      "%zu tensors", avf_weights_n_tensors (w));
  AvfWeightTensor t;
  AVF_CHECK (avf_weights_tensor (w, avf_weights_count (&w->cfg) + 5, &t)
      && strcmp (t.name, "rhythm_proj.weight") == 0
      && t.shape[0] == 48 && t.shape[1] == 45, "last tensor %s", t.name);
  avf_weights_free (w);
}

/* The picture of the fixture in @layout with @pad bytes after each row:
 * core's [N, E + D] rows (e_n then r_n: what avpatchembed emits as its
 * [N, E] tensor and the [N, D] rows of its GstAvRhythmMeta) equal
 * AvFusionV2.embed_video. */
static void
check_rows (AvfPixelLayout layout, size_t pad)
{
  AvfSafetensors *fx = avf_test_open_fixture ("v2_core.safetensors");
  AvfWeights *w = load_v2 ();
  uint8_t *rgb = avf_test_tensor (fx, "rgb", AVF_DTYPE_U8, NULL);
  size_t n_ref = 0;
  float *ref = avf_test_tensor (fx, "patches", AVF_DTYPE_F32, &n_ref);
  const int width = avf_test_meta_int (fx, "image_width");
  const int height = avf_test_meta_int (fx, "image_height");
  AvfPatchEmbed *pe = NULL;
  AvfRhythmEmbed *re = NULL;
  AvfError err;

  if (w && rgb && ref) {
    const size_t E = (size_t) w->cfg.E, ld = E + (size_t) w->rhythm.D;
    AVF_CHECK (n_ref == (size_t) w->cfg.N * ld, "%zu values", n_ref);
    AVF_CHECK (avf_patch_embed_new (&pe, w, width, height, &err) == AVF_OK,
        "%s", err.message);
    AVF_CHECK (avf_rhythm_embed_new (&re, w, &err) == AVF_OK, "%s",
        err.message);
    size_t stride;
    uint8_t *img = avf_test_pack_rgb (rgb, width, height, layout, pad, 0x5A,
        &stride);
    float *out = malloc (n_ref * sizeof (float));
    if (pe && re) {
      avf_patch_embed_forward_rows (pe, out, ld, img, stride, layout);
      avf_rhythm_embed_forward (re, out + E, ld, avf_patch_embed_patches (pe),
          width / w->cfg.P);
      char what[64];
      snprintf (what, sizeof what, "[N, E + D] rows, bpp %d pad %zu",
          layout.bpp, pad);
      AVF_CHECK_CLOSE (out, ref, n_ref, TOL, what);
      /* the first E columns are v1's embedding, to the bit */
      float *v1 = malloc ((size_t) w->cfg.N * E * sizeof (float));
      avf_patch_embed_forward (pe, v1, img, stride, layout);
      int same = 1;
      for (int n = 0; n < w->cfg.N; n++)
        same &= memcmp (v1 + n * E, out + n * ld, E * sizeof (float)) == 0;
      AVF_CHECK (same, "the embedding columns differ from the v1 forward");
      free (v1);
    }
    free (out);
    free (img);
  }
  avf_rhythm_embed_free (re);
  avf_patch_embed_free (pe);
  avf_weights_free (w);
  free (rgb);
  free (ref);
  avf_safetensors_free (fx);
}

static void
test_rows_packed_rgb (void)
{
  check_rows (avf_pixel_layout_rgb (), 0);
}

static void
test_rows_bgrx_padded (void)
{
  AvfPixelLayout bgrx = { 4, 2, 1, 0 };
  check_rows (bgrx, 36);
}

/* One window of the fixture: the tokens after the rhythm term, the number
 * of valid bins per lag, the fused vector and every head-mean map. */
static void
check_case (const char *name)
{
  AvfSafetensors *fx = avf_test_open_fixture ("v2_core.safetensors");
  AvfWeights *w = load_v2 ();
  char key[128];
  size_t n_tok = 0, n_fused = 0, n_valid = 0;
  float *patches = avf_test_tensor (fx, "patches", AVF_DTYPE_F32, NULL);
#define FX(var, suffix, dtype, n)                                       \
  snprintf (key, sizeof key, "%s.%s", name, suffix);                    \
  var = avf_test_tensor (fx, key, dtype, n)
  float *mel, *hist, *tokens, *fused;
  uint8_t *mask, *missing;
  int64_t *valid;
  FX (mel, "mel", AVF_DTYPE_F32, NULL);
  FX (mask, "mask", AVF_DTYPE_U8, NULL);
  FX (hist, "hist", AVF_DTYPE_F32, NULL);
  FX (missing, "hist_missing", AVF_DTYPE_U8, NULL);
  FX (tokens, "tokens", AVF_DTYPE_F32, &n_tok);
  FX (fused, "fused", AVF_DTYPE_F32, &n_fused);
  FX (valid, "valid", AVF_DTYPE_I64, &n_valid);
  AvfRhythm *rh = NULL;
  AvfFusion *f = NULL;
  AvfError err;

  if (w && patches && mel && mask && hist && missing && tokens && fused
      && valid) {
    const int K = w->rhythm.K, T = K * w->rhythm.G;
    const int NC = avf_rhythm_n_centres (&w->rhythm), lags = w->rhythm.lags;
    const size_t ND = (size_t) w->cfg.N * w->rhythm.D;
    const float *rows[64];
    int per_lag[64], sum = 0;
    AVF_CHECK (NC <= 64 && lags <= 64 && n_valid == (size_t) lags,
        "%s: %d centres, %zu lags", name, NC, n_valid);
    AVF_CHECK (avf_rhythm_new (&rh, w, T, &err) == AVF_OK, "%s",
        err.message);
    AVF_CHECK (avf_fusion_new (&f, w, T, &err) == AVF_OK, "%s", err.message);
    for (int i = 0; i < NC; i++)
      rows[i] = missing[i] ? NULL : hist + i * ND;
    float *got = malloc (n_tok * sizeof (float));
    float *got_fused = malloc (n_fused * sizeof (float));
    if (rh && f) {
      int v = avf_rhythm_tokens (rh, got, patches,
          (size_t) w->cfg.E + w->rhythm.D, mel, mask, rows, per_lag);
      for (int l = 0; l < lags; l++) {
        AVF_CHECK (per_lag[l] == valid[l], "%s: lag %d: %d valid bins, "
            "PyTorch %lld", name, w->rhythm.lag_min + l, per_lag[l],
            (long long) valid[l]);
        sum += per_lag[l];
      }
      AVF_CHECK (v == sum, "%s: %d valid bins in all, %d per lag", name, v,
          sum);
      snprintf (key, sizeof key, "%s: tokens", name);
      AVF_CHECK_CLOSE (got, tokens, n_tok, TOL, key);
      avf_fusion_forward (f, got_fused, mel, mask, got, AVF_ATTN_MEAN);
      snprintf (key, sizeof key, "%s: fused", name);
      AVF_CHECK_CLOSE (got_fused, fused, n_fused, TOL, key);
      for (int l = 0; l < w->cfg.L; l++)
        for (int m = 0; m < AVF_N_MODULES; m++) {
          int heads, tq, tk;
          const float *map = avf_fusion_map (f, l, (AvfModule) m, &heads,
              &tq, &tk);
          size_t n_map;
          snprintf (key, sizeof key, "%s.layers.%d.%s", name, l, MODULES[m]);
          float *want = avf_test_tensor (fx, key, AVF_DTYPE_F32, &n_map);
          if (want && map) {
            AVF_CHECK (n_map == (size_t) tq * tk, "%s: size", key);
            AVF_CHECK_CLOSE (map, want, n_map, TOL, key);
          }
          free (want);
        }
    }
    free (got);
    free (got_fused);
  }
#undef FX
  avf_fusion_free (f);
  avf_rhythm_free (rh);
  avf_weights_free (w);
  free (patches);
  free (mel);
  free (mask);
  free (hist);
  free (missing);
  free (tokens);
  free (fused);
  free (valid);
  avf_safetensors_free (fx);
}

static void
test_term_full (void)
{
  check_case ("full");
}

static void
test_term_partial (void)
{
  check_case ("partial");
}

/* Lag -1 has two valid bins, lag 0 one (no correlation: S 0), lag 1
 * none. */
static void
test_term_two_centres (void)
{
  check_case ("two_centres");
}

/* One bin centre with a frame: at most one valid bin per lag, no
 * correlation, the tokens are v1's e_n exactly. */
static void
test_term_one_bin (void)
{
  check_case ("one");
}

/* No audio at all: no valid bin, and v1's masked fusion. */
static void
test_term_silent (void)
{
  check_case ("silent");
}

/* Which frame shows each bin centre c_first .. equals
 * avfusion2.bin_frames(..., lag = first): at lag 0, from the lags' first
 * centre before the window, up to centres at or after t. */
static void
test_bins (void)
{
  static const char *const cases[] = { "regular30", "regular30_lags",
    "start", "short_durations", "no_durations", "odd_rate", "odd_rate_lags",
    "empty", "late_centres", "positive_lags", "before_window",
    "floor_negative"
  };
  AvfSafetensors *fx = avf_test_open_fixture ("v2_core.safetensors");
  for (size_t c = 0; c < sizeof cases / sizeof cases[0] && fx; c++) {
    char key[128];
    size_t n = 0, nk = 0;
    snprintf (key, sizeof key, "bins.%s.start", cases[c]);
    int64_t *start = avf_test_tensor (fx, key, AVF_DTYPE_I64, &n);
    snprintf (key, sizeof key, "bins.%s.end", cases[c]);
    int64_t *end = avf_test_tensor (fx, key, AVF_DTYPE_I64, NULL);
    snprintf (key, sizeof key, "bins.%s.params", cases[c]);
    int64_t *p = avf_test_tensor (fx, key, AVF_DTYPE_I64, NULL);
    snprintf (key, sizeof key, "bins.%s.expect", cases[c]);
    int64_t *expect = avf_test_tensor (fx, key, AVF_DTYPE_I64, &nk);
    if (start && end && p && expect) {
      int got[64];
      AVF_CHECK (nk == (size_t) p[5] && nk <= 64, "%s: n", cases[c]);
      avf_rhythm_bin_frames (got, (int) p[5], (int) p[6], (int) p[2], start,
          end, n, p[0], p[1], (int) p[3], (int) p[4]);
      for (size_t k = 0; k < nk; k++)
        AVF_CHECK (got[k] == expect[k], "%s: centre %lld shows frame %d, "
            "PyTorch %lld", cases[c], (long long) (p[6] + (int64_t) k),
            got[k], (long long) expect[k]);
    }
    free (start);
    free (end);
    free (p);
    free (expect);
  }
  avf_safetensors_free (fx);
}

/* c_k in exact integer nanoseconds, also where floating point would round
 * and far from zero. */
static void
test_bin_centre (void)
{
  /* 1 s window, 25 bins of 4 slots of 10 ms: centres 20, 60, ... ms */
  AVF_CHECK (avf_rhythm_bin_centre (INT64_C (1000000000), 1000000000, 0, 4,
          160, 16000) == 20000000, "k 0");
  AVF_CHECK (avf_rhythm_bin_centre (INT64_C (1000000000), 1000000000, 24, 4,
          160, 16000) == 980000000, "k 24");
  /* 3 slots of 441 at 44.1 kHz: (2k + 1) 15 ms */
  AVF_CHECK (avf_rhythm_bin_centre (0, 0, 3, 3, 441, 44100) == 105000000,
      "44.1 kHz");
  /* hop 512 at 48 kHz, G 1: floor(512e9 / 96000) = 5333333 */
  AVF_CHECK (avf_rhythm_bin_centre (0, 0, 0, 1, 512, 48000) == 5333333,
      "48 kHz: %lld", (long long) avf_rhythm_bin_centre (0, 0, 0, 1, 512,
          48000));
  /* k 2: floor(5 * 512e9 / 96000) = 26666666 */
  AVF_CHECK (avf_rhythm_bin_centre (0, 0, 2, 1, 512, 48000) == 26666666,
      "48 kHz, k 2");
  const int64_t big = INT64_C (4000000000000000000);
  AVF_CHECK (avf_rhythm_bin_centre (big, 1000000000, 0, 4, 160, 16000)
      == big - 980000000, "far from zero");
  /* before the window: c_-1 = -20 ms, c_-3 = -100 ms exactly */
  AVF_CHECK (avf_rhythm_bin_centre (INT64_C (1000000000), 1000000000, -1,
          4, 160, 16000) == -20000000, "j -1");
  AVF_CHECK (avf_rhythm_bin_centre (INT64_C (1000000000), 1000000000, -3,
          4, 160, 16000) == -100000000, "j -3");
  /* floor, not C's truncation: -512e9 / 96000 = -5333333.3 -> -5333334,
   * -2560e9 / 96000 = -26666666.7 -> -26666667 */
  AVF_CHECK (avf_rhythm_bin_centre (0, 0, -1, 1, 512, 48000) == -5333334,
      "48 kHz, j -1: %lld", (long long) avf_rhythm_bin_centre (0, 0, -1, 1,
          512, 48000));
  AVF_CHECK (avf_rhythm_bin_centre (0, 0, -3, 1, 512, 48000) == -26666667,
      "48 kHz, j -3");
  AVF_CHECK (avf_rhythm_bin_centre (big, 0, -25, 4, 441, 44100) == big
      - 980000000, "far from zero, j -25");
}

/* ---- rhythm_neighbourhood ------------------------------------------------ */

/* A tiny seeded v2 model: P 4, Q 2 (S 2), D 2 rhythm features, N patches,
 * neighbourhood k from feature f (rhythm_neighbourhood_from). */
static AvfWeights *
tiny_v2_from (int N, int k, int f)
{
  AvfConfig cfg = { 8, 2, 1, 8, 4, 4, N, 8, 0, 0, 0, 0, 0.0f };
  AvfRhythmConfig r = { 2, 1, 2, 2, 2, 1, 0, k, f };
  AvfWeights *w = NULL;
  AvfError err;
  AVF_CHECK (avf_weights_new_default_v2 (&w, &cfg, &r, 5, &err) == AVF_OK,
      "N %d k %d from %d: %s", N, k, f, err.message);
  return w;
}

static AvfWeights *
tiny_v2 (int N, int k)
{
  return tiny_v2_from (N, k, 0);
}

/* rows x cols grid, D 2, rows ldo floats apart: the features d >= f at k
 * equal the mean of those at k 1 over the block, by a direct O(N k^2)
 * loop; those below f equal the ones at k 1. */
static void
check_neighbourhood_from (int cols, int rows, int k, size_t ldo, int f)
{
  const int N = cols * rows, D = 2, P = 4, h = k / 2;
  AvfWeights *w1 = tiny_v2 (N, 1), *wk = tiny_v2_from (N, k, f);
  AvfRhythmEmbed *re1 = NULL, *rek = NULL;
  AvfError err;
  char what[96];
  float *patches = malloc ((size_t) N * 3 * P * P * sizeof (float));
  float *r1 = calloc ((size_t) N * ldo, sizeof (float));
  float *rk = calloc ((size_t) N * ldo, sizeof (float));
  float *got = malloc ((size_t) N * D * sizeof (float));
  float *want = malloc ((size_t) N * D * sizeof (float));

  snprintf (what, sizeof what, "%d x %d grid, k %d from %d, ldo %zu", cols,
      rows, k, f, ldo);
  if (w1 && wk && patches && r1 && rk && got && want) {
    AVF_CHECK (wk->rhythm.neighbourhood == k, "k %d", wk->rhythm.neighbourhood);
    AVF_CHECK (avf_rhythm_embed_new (&re1, w1, &err) == AVF_OK, "%s",
        err.message);
    AVF_CHECK (avf_rhythm_embed_new (&rek, wk, &err) == AVF_OK, "%s",
        err.message);
    /* patch n: a ramp that differs from patch to patch */
    for (int i = 0; i < N * 3 * P * P; i++)
      patches[i] = (float) ((i * 37) % 101) / 50.0f - 1.0f;
    /* columns past D must stay untouched */
    for (size_t i = 0; i < (size_t) N * ldo; i++)
      r1[i] = rk[i] = -7.0f;
    if (re1 && rek) {
      avf_rhythm_embed_forward (re1, r1, ldo, patches, cols);
      avf_rhythm_embed_forward (rek, rk, ldo, patches, cols);
      for (int y = 0; y < rows; y++)
        for (int x = 0; x < cols; x++)
          for (int d = 0; d < D; d++) {
            double sum = 0.0;
            int count = 0;
            const int hh = d >= f ? h : 0;
            for (int yy = y - hh; yy <= y + hh; yy++)
              for (int xx = x - hh; xx <= x + hh; xx++)
                if (yy >= 0 && yy < rows && xx >= 0 && xx < cols) {
                  sum += r1[(size_t) (yy * cols + xx) * ldo + d];
                  count++;
                }
            want[(y * cols + x) * D + d] = (float) (sum / count);
            got[(y * cols + x) * D + d] = rk[(size_t) (y * cols + x) * ldo + d];
          }
      AVF_CHECK_CLOSE (got, want, (size_t) N * D, 1e-6, what);
      int untouched = 1;
      for (int n = 0; n < N; n++)
        for (size_t i = D; i < ldo; i++)
          untouched &= rk[(size_t) n * ldo + i] == -7.0f;
      AVF_CHECK (untouched, "%s: columns past D written", what);
    }
  }
  avf_rhythm_embed_free (re1);
  avf_rhythm_embed_free (rek);
  avf_weights_free (w1);
  avf_weights_free (wk);
  free (patches);
  free (r1);
  free (rk);
  free (got);
  free (want);
}

static void
check_neighbourhood (int cols, int rows, int k, size_t ldo)
{
  check_neighbourhood_from (cols, rows, k, ldo, 0);
}

/* By hand on a 4 x 3 grid (4 columns, 3 rows), D 2, k 3: patch 0 (a
 * corner) is the mean of patches 0, 1, 4, 5; patch 5 (inside) of the nine
 * 0, 1, 2, 4, 5, 6, 8, 9, 10; patch 7 (right edge) of the six 2, 3, 6, 7,
 * 10, 11.  Then other grids, k and row strides against a direct loop. */
static void
test_neighbourhood_math (void)
{
  AvfWeights *w1 = tiny_v2 (12, 1), *w3 = tiny_v2 (12, 3);
  AvfRhythmEmbed *re1 = NULL, *re3 = NULL;
  AvfError err;
  float patches[12 * 3 * 4 * 4], r1[12 * 2], r3[12 * 2];
  for (int i = 0; i < 12 * 3 * 4 * 4; i++)
    patches[i] = (float) ((i * 13) % 29) / 14.0f - 1.0f;
  if (w1 && w3 && avf_rhythm_embed_new (&re1, w1, &err) == AVF_OK
      && avf_rhythm_embed_new (&re3, w3, &err) == AVF_OK) {
    avf_rhythm_embed_forward (re1, r1, 2, patches, 4);
    avf_rhythm_embed_forward (re3, r3, 2, patches, 4);
    for (int d = 0; d < 2; d++) {
#define R(n) r1[(n) * 2 + d]
      const float c0 = (R (0) + R (1) + R (4) + R (5)) / 4.0f;
      const float c5 = (R (0) + R (1) + R (2) + R (4) + R (5) + R (6) + R (8)
          + R (9) + R (10)) / 9.0f;
      const float c7 = (R (2) + R (3) + R (6) + R (7) + R (10) + R (11))
          / 6.0f;
#undef R
      AVF_CHECK (fabsf (r3[0 * 2 + d] - c0) < 1e-6f, "patch 0, d %d: %g, by "
          "hand %g", d, r3[d], c0);
      AVF_CHECK (fabsf (r3[5 * 2 + d] - c5) < 1e-6f, "patch 5, d %d: %g, by "
          "hand %g", d, r3[5 * 2 + d], c5);
      AVF_CHECK (fabsf (r3[7 * 2 + d] - c7) < 1e-6f, "patch 7, d %d: %g, by "
          "hand %g", d, r3[7 * 2 + d], c7);
    }
    AVF_CHECK (r1[0] != r3[0] && r1[1] != r3[1], "k 3 changed nothing");
  } else {
    AVF_CHECK (0, "tiny models: %s", err.message);
  }
  avf_rhythm_embed_free (re1);
  avf_rhythm_embed_free (re3);
  avf_weights_free (w1);
  avf_weights_free (w3);

  check_neighbourhood (4, 3, 3, 2);
  check_neighbourhood (3, 4, 3, 2);
  check_neighbourhood (4, 3, 5, 2);
  check_neighbourhood (4, 3, 7, 5);
  check_neighbourhood (12, 1, 5, 3);
  check_neighbourhood (1, 12, 7, 2);
  check_neighbourhood (7, 5, 5, 4);
  check_neighbourhood (6, 6, 11, 2);
  /* rhythm_neighbourhood_from 1: feature 0 the patch's own, 1 the mean */
  check_neighbourhood_from (4, 3, 3, 2, 1);
  check_neighbourhood_from (7, 5, 5, 4, 1);
  check_neighbourhood_from (1, 12, 7, 3, 1);
}

/* A picture of v2_neighbourhood.safetensors with weights @w (whose
 * neighbourhood is k): the [N, E + D] rows equal the twin's "{name}.k{k}.
 * patches". */
static void
check_hood_rows (AvfSafetensors * fx, AvfWeights * w, const char *name,
    int width, int height)
{
  char key[64];
  const int k = w->rhythm.neighbourhood;
  snprintf (key, sizeof key, "%s.rgb", name);
  uint8_t *rgb = avf_test_tensor (fx, key, AVF_DTYPE_U8, NULL);
  snprintf (key, sizeof key, "%s.k%d.patches", name, k);
  size_t n_ref = 0;
  float *ref = avf_test_tensor (fx, key, AVF_DTYPE_F32, &n_ref);
  AvfPatchEmbed *pe = NULL;
  AvfRhythmEmbed *re = NULL;
  AvfError err;
  const size_t E = (size_t) w->cfg.E, ld = E + (size_t) w->rhythm.D;

  if (rgb && ref && n_ref == (size_t) w->cfg.N * ld
      && avf_patch_embed_new (&pe, w, width, height, &err) == AVF_OK
      && avf_rhythm_embed_new (&re, w, &err) == AVF_OK) {
    float *out = malloc (n_ref * sizeof (float));
    int cols, rows;
    avf_patch_embed_grid (pe, &cols, &rows);
    AVF_CHECK (cols * w->cfg.P == width && rows * w->cfg.P == height, "grid");
    avf_patch_embed_forward_rows (pe, out, ld, rgb, (size_t) width * 3,
        avf_pixel_layout_rgb ());
    avf_rhythm_embed_forward (re, out + E, ld, avf_patch_embed_patches (pe),
        cols);
    AVF_CHECK_CLOSE (out, ref, n_ref, TOL, key);
    free (out);
  } else {
    AVF_CHECK (0, "%s: %zu values, %s", key, n_ref, pe ? err.message : "");
  }
  avf_rhythm_embed_free (re);
  avf_patch_embed_free (pe);
  free (rgb);
  free (ref);
}

/* The twin's rows at k 1, 3, 5, 7 on a 4 x 3 and a 3 x 4 grid, with the
 * small model's tensors; and the file exported with k 5 reads as k 5 and
 * gives the same rows. */
static void
test_neighbourhood_rows (void)
{
  AvfSafetensors *fx = avf_test_open_fixture ("v2_neighbourhood.safetensors");
  AvfWeights *w = load_v2 ();
  AvfWeights *w5 =
      avf_test_load_weights_fixture ("v2_weights_hood5.safetensors");
  const int ks[] = { 1, 3, 5, 7 };
  if (fx && w && w5) {
    AVF_CHECK (w->rhythm.neighbourhood == 1, "v2_weights_small: k %d",
        w->rhythm.neighbourhood);
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
      /* the same tensors, another k (as the twin sets it) */
      w->rhythm.neighbourhood = ks[i];
      check_hood_rows (fx, w, "wide", 32, 24);
      check_hood_rows (fx, w, "tall", 24, 32);
    }
    AVF_CHECK (w5->rhythm.neighbourhood == 5
        && avf_test_meta_int (fx, "rhythm_neighbourhood") == 5,
        "v2_weights_hood5: k %d", w5->rhythm.neighbourhood);
    check_hood_rows (fx, w5, "wide", 32, 24);
    check_hood_rows (fx, w5, "tall", 24, 32);
  }
  avf_weights_free (w);
  avf_weights_free (w5);
  avf_safetensors_free (fx);
}

/* The window must hold K G slots; an avfusion-v1 model has no rhythm. */
static void
test_wrong_window (void)
{
  AvfWeights *w = load_v2 ();
  AvfRhythm *rh = NULL;
  AvfRhythmEmbed *re = NULL;
  AvfError err;
  if (w) {
    AVF_CHECK (avf_rhythm_new (&rh, w, 37, &err) == AVF_ERR_SHAPE, "T 37");
    AVF_CHECK_CONTAINS (err.message, "37 slots");
    AVF_CHECK_CONTAINS (err.message, "10 bins of 4 = 40 (rhythm_bin_weight "
        "[3, 10], rhythm_bin_slots 4)");
    AVF_CHECK (rh == NULL, "no object");
  }
  AvfConfig cfg = avf_config_default ();
  AvfWeights *v1 = NULL;
  AVF_CHECK (avf_weights_new_default (&v1, &cfg, 0, &err) == AVF_OK, "%s",
      err.message);
  AVF_CHECK (avf_rhythm_new (&rh, v1, 100, &err) == AVF_ERR_INVALID, "v1");
  AVF_CHECK_CONTAINS (err.message, "avfusion-v1");
  AVF_CHECK (avf_rhythm_embed_new (&re, v1, &err) == AVF_ERR_INVALID, "v1");
  avf_weights_free (v1);
  avf_weights_free (w);
}

AVF_TEST_MAIN (AVF_TEST (test_weights_sizes),
    AVF_TEST (test_rows_packed_rgb), AVF_TEST (test_rows_bgrx_padded),
    AVF_TEST (test_term_full), AVF_TEST (test_term_partial),
    AVF_TEST (test_term_two_centres), AVF_TEST (test_term_one_bin),
    AVF_TEST (test_term_silent),
    AVF_TEST (test_bins), AVF_TEST (test_bin_centre),
    AVF_TEST (test_neighbourhood_math), AVF_TEST (test_neighbourhood_rows),
    AVF_TEST (test_wrong_window))
