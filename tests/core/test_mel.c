/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Log-mel spectrogram: torchaudio parity (fixture from model/avfusion.py),
 * streaming equals whole-signal bit for bit, analytic sine, silence,
 * channel averaging, hop larger than the window.
 */
#include "avf_test.h"
#include "mel.h"
#include "prng.h"

static AvfMelConfig
fixture_config (const AvfSafetensors * st, const char *c)
{
  char key[64];
  AvfMelConfig cfg;
#define META(field, name) \
  snprintf (key, sizeof key, "%s.%s", c, name); \
  cfg.field = avf_test_meta_int (st, key);
  META (sample_rate, "sample_rate");
  META (n_fft, "n_fft");
  META (hop, "hop");
  META (n_mels, "n_mels");
  META (f_min, "f_min");
  META (f_max, "f_max");
#undef META
  return cfg;
}

static void
check_fixture_case (const char *c)
{
  AvfSafetensors *st = avf_test_open_fixture ("mel.safetensors");
  if (st == NULL)
    return;
  AvfMelConfig cfg = fixture_config (st, c);
  char name[64];
  size_t n = 0, n_ref = 0;
  snprintf (name, sizeof name, "%s.signal", c);
  float *x = avf_test_tensor (st, name, AVF_DTYPE_F32, &n);
  snprintf (name, sizeof name, "%s.logmel", c);
  float *ref = avf_test_tensor (st, name, AVF_DTYPE_F32, &n_ref);
  AvfMel *mel = NULL;
  AvfError err;
  AVF_CHECK (avf_mel_new (&mel, &cfg, &err) == AVF_OK, "%s", err.message);
  if (x && ref && mel) {
    size_t frames = avf_mel_frames_after (mel, n);
    AVF_CHECK (frames * (size_t) cfg.n_mels == n_ref,
        "%s: %zu frames predicted, reference has %zu values", c, frames,
        n_ref);
    float *out = malloc (n_ref * sizeof (float));
    size_t got = avf_mel_push (mel, out, frames, x, n, 1, NULL);
    AVF_CHECK (got == frames, "%s: %zu frames, want %zu", c, got, frames);
    AVF_CHECK_CLOSE (out, ref, n_ref, 1e-3, c);
    free (out);
  }
  avf_mel_free (mel);
  free (x);
  free (ref);
  avf_safetensors_free (st);
}

/* The sparse filterbank that avf_mel_new builds holds exactly the
 * non-zero weights of the dense reference (avf_mel_filterbank, the
 * torchaudio formula), for ordinary and extreme configurations; and the
 * largest configuration builds without a dense table. */
static void
test_sparse_filterbank_equals_dense (void)
{
  const AvfMelConfig cfgs[] = {
    {16000, 400, 160, 64, 0.0, 0.0},
    {44100, 2048, 512, 128, 20.0, 8000.0},
    {8000, 2, 1, 1, 0.0, 0.0},
    {1, 16, 4, 4, 0.0, 0.5},
    {768000, 4096, 160, 256, 0.0, 0.0},
    {16000, 512, 160, 300, 0.0, 0.0},     /* more bands than bins: empty ones */
  };
  for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
    AvfMelConfig cfg = cfgs[c];
    AvfMel *mel = NULL;
    AvfError err;
    AVF_CHECK (avf_mel_new (&mel, &cfg, &err) == AVF_OK, "config %zu: %s", c,
        err.message);
    if (mel == NULL)
      continue;
    const int nf = cfg.n_fft / 2 + 1, M = cfg.n_mels;
    double f_max = cfg.f_max > 0.0 ? cfg.f_max : cfg.sample_rate / 2;
    double *fb = malloc ((size_t) nf * M * sizeof *fb);
    avf_mel_filterbank (fb, nf, cfg.f_min, f_max, M, cfg.sample_rate);
    int mismatches = 0;
    for (int j = 0; j < M; j++) {
      int lo, len;
      const float *coef;
      avf_mel_band (mel, j, &lo, &len, &coef);
      for (int k = 0; k < nf; k++) {
        float want = (float) fb[(size_t) k * M + j];
        float got = k >= lo && k < lo + len ? coef[k - lo] : 0.0f;
        if (memcmp (&want, &got, sizeof want) != 0)
          mismatches++;
      }
    }
    AVF_CHECK (mismatches == 0, "config %zu: %d weights differ from the "
        "dense filterbank", c, mismatches);
    free (fb);
    avf_mel_free (mel);
  }

  /* n-fft 65536 and 4096 bands at 768 kHz: a dense table would be 1 GB */
  AvfMelConfig big = { 768000, 65536, 160, 4096, 0.0, 0.0 };
  AvfMel *mel = NULL;
  AvfError err;
  AVF_CHECK (avf_mel_new (&mel, &big, &err) == AVF_OK, "%s", err.message);
  if (mel) {
    long weights = 0;
    for (int j = 0; j < 4096; j++) {
      int lo, len;
      const float *coef;
      avf_mel_band (mel, j, &lo, &len, &coef);
      weights += len;
    }
    /* each bin is in at most two triangles */
    AVF_CHECK (weights <= 2 * 32769, "%ld weights", weights);
    avf_mel_free (mel);
  }
}

static void
test_torchaudio_default (void)
{
  check_fixture_case ("default");
}

static void
test_torchaudio_odd (void)
{
  check_fixture_case ("odd");
}

/* Pushes x in pieces whose sizes come from the PRNG; returns frames. */
static size_t
push_in_pieces (AvfMel * mel, float *out, size_t cap, const float *x,
    size_t n, int channels, uint64_t seed, int max_piece)
{
  const int M = avf_mel_n_mels (mel);
  size_t pos = 0, frames = 0;
  for (uint64_t i = 0; pos < n; i++) {
    size_t piece = (size_t) (avf_prng_u64 (seed, i) % (uint64_t) max_piece);
    if (piece > n - pos)
      piece = n - pos;
    frames += avf_mel_push (mel, out + frames * M, cap - frames,
        x + pos * channels, piece, channels, NULL);
    pos += piece;
  }
  return frames;
}

static void
test_streaming_is_bit_identical (void)
{
  const size_t n = 16000 * 3 + 123;
  float *x = malloc (n * sizeof (float));
  avf_prng_fill_symmetric (x, n, 99, 0, 0.5f);
  AvfMelConfig cfg = avf_mel_config_default ();
  const int splits[] = { 1, 7, 160, 161, 400, 4096 };
  AvfMel *whole, *pieces;
  AVF_CHECK (avf_mel_new (&whole, &cfg, NULL) == AVF_OK, "new");
  AVF_CHECK (avf_mel_new (&pieces, &cfg, NULL) == AVF_OK, "new");
  size_t cap = avf_mel_frames_after (whole, n);
  float *a = malloc (cap * 64 * sizeof (float));
  float *b = malloc (cap * 64 * sizeof (float));
  size_t fa = avf_mel_push (whole, a, cap, x, n, 1, NULL);
  AVF_CHECK (fa == (n - 400) / 160 + 1, "frames %zu", fa);
  for (size_t s = 0; s < sizeof splits / sizeof splits[0]; s++) {
    avf_mel_reset (pieces);
    memset (b, 0, cap * 64 * sizeof (float));
    size_t fb = push_in_pieces (pieces, b, cap, x, n, 1, s, splits[s] + 1);
    AVF_CHECK (fb == fa, "pieces up to %d: %zu frames, want %zu", splits[s],
        fb, fa);
    AVF_CHECK (memcmp (a, b, fa * 64 * sizeof (float)) == 0,
        "pieces up to %d: output differs", splits[s]);
  }
  avf_mel_free (whole);
  avf_mel_free (pieces);
  free (a);
  free (b);
  free (x);
}

static void
test_capacity_limit_resumes (void)
{
  const size_t n = 5000;
  float x[5000], a[64 * 40], b[64 * 40];
  avf_prng_fill_symmetric (x, n, 3, 0, 0.5f);
  AvfMelConfig cfg = avf_mel_config_default ();
  AvfMel *m1, *m2;
  avf_mel_new (&m1, &cfg, NULL);
  avf_mel_new (&m2, &cfg, NULL);
  size_t fa = avf_mel_push (m1, a, 40, x, n, 1, NULL);
  /* at most 3 frames per call: the rest of the input is handed back */
  size_t fb = 0, pos = 0, used;
  while (pos < n) {
    fb += avf_mel_push (m2, b + fb * 64, fb + 3 <= 40 ? 3 : 40 - fb,
        x + pos, n - pos, 1, &used);
    pos += used;
  }
  AVF_CHECK (fa == fb && fa == 29, "frames %zu / %zu", fa, fb);
  /* a frame left complete by a full output is counted as pending */
  AvfMel *m3;
  float one[64];
  avf_mel_new (&m3, &cfg, NULL);
  AVF_CHECK (avf_mel_push (m3, one, 0, x, 400, 1, &used) == 0 && used == 400,
      "nothing emitted into no room");
  AVF_CHECK (avf_mel_frames_after (m3, 0) == 1, "pending frame counted: %llu",
      (unsigned long long) avf_mel_frames_after (m3, 0));
  AVF_CHECK (avf_mel_push (m3, one, 1, x, 0, 1, NULL) == 1,
      "the pending frame comes out on the next push");
  avf_mel_free (m3);
  AVF_CHECK (memcmp (a, b, fa * 64 * sizeof (float)) == 0, "output differs");
  avf_mel_free (m1);
  avf_mel_free (m2);
}

static void
test_sine_peaks_in_its_band (void)
{
  /* a 1 kHz sine: the loudest band is the one whose centre is nearest */
  AvfMelConfig cfg = avf_mel_config_default ();
  enum { N = 4000 };
  float x[N], out[64 * 30];
  for (int i = 0; i < N; i++)
    x[i] = (float) sin (2.0 * 3.14159265358979 * 1000.0 * i / 16000.0);
  AvfMel *m;
  avf_mel_new (&m, &cfg, NULL);
  size_t f = avf_mel_push (m, out, 30, x, N, 1, NULL);
  AVF_CHECK (f == 23, "frames %zu", f);
  double fb[201 * 64];
  avf_mel_filterbank (fb, 201, 0.0, 8000.0, 64, 16000);
  /* bin 25 is 1 kHz (16000 / 400 * 25) */
  int want = 0;
  for (int j = 1; j < 64; j++)
    if (fb[25 * 64 + j] > fb[25 * 64 + want])
      want = j;
  for (size_t t = 0; t < f; t++) {
    int best = 0;
    for (int j = 1; j < 64; j++)
      if (out[t * 64 + j] > out[t * 64 + best])
        best = j;
    AVF_CHECK (best == want, "frame %zu peaks in band %d, want %d", t, best,
        want);
  }
  avf_mel_free (m);
}

static void
test_silence_is_log_eps (void)
{
  AvfMelConfig cfg = avf_mel_config_default ();
  float x[800] = { 0 }, out[64 * 3];
  AvfMel *m;
  avf_mel_new (&m, &cfg, NULL);
  size_t f = avf_mel_push (m, out, 3, x, 800, 1, NULL);
  AVF_CHECK (f == 3, "frames %zu", f);
  for (size_t i = 0; i < f * 64; i++)
    AVF_CHECK (out[i] == logf (1e-6f), "silence gives %g", out[i]);
  avf_mel_free (m);
}

static void
test_channels_are_averaged (void)
{
  AvfMelConfig cfg = avf_mel_config_default ();
  enum { N = 1200 };
  float mono[N], stereo[2 * N], a[64 * 6], b[64 * 6];
  avf_prng_fill_symmetric (mono, N, 8, 0, 0.5f);
  for (int i = 0; i < N; i++) {
    /* mean of (m + d, m - d) is m exactly when d is a power of two */
    stereo[2 * i] = mono[i] + 0.25f;
    stereo[2 * i + 1] = mono[i] - 0.25f;
  }
  AvfMel *m1, *m2;
  avf_mel_new (&m1, &cfg, NULL);
  avf_mel_new (&m2, &cfg, NULL);
  size_t fa = avf_mel_push (m1, a, 6, mono, N, 1, NULL);
  size_t fb = avf_mel_push (m2, b, 6, stereo, N, 2, NULL);
  AVF_CHECK (fa == fb && fa == 6, "frames %zu %zu", fa, fb);
  AVF_CHECK_CLOSE (a, b, fa * 64, 1e-5, "stereo mean equals mono");
  avf_mel_free (m1);
  avf_mel_free (m2);
}

static void
test_hop_longer_than_window (void)
{
  /* n_fft 64, hop 100: frame t covers [100 t, 100 t + 64) */
  AvfMelConfig cfg = { 8000, 64, 100, 8, 0.0, 0.0 };
  enum { N = 1000 };
  float x[N], whole[8 * 10], one[8];
  avf_prng_fill_symmetric (x, N, 4, 0, 1.0f);
  AvfMel *m, *ref;
  avf_mel_new (&m, &cfg, NULL);
  avf_mel_new (&ref, &cfg, NULL);
  AVF_CHECK (avf_mel_frames_after (m, N) == 10, "predicted %llu",
      (unsigned long long) avf_mel_frames_after (m, N));
  size_t f = push_in_pieces (m, whole, 10, x, N, 1, 17, 37);
  AVF_CHECK (f == 10, "frames %zu", f);
  for (int t = 0; t < 10; t++) {
    avf_mel_reset (ref);
    size_t g = avf_mel_push (ref, one, 1, x + 100 * t, 64, 1, NULL);
    AVF_CHECK (g == 1 && memcmp (one, whole + 8 * t, sizeof one) == 0,
        "frame %d", t);
  }
  avf_mel_free (m);
  avf_mel_free (ref);
}

static void
test_bad_configurations (void)
{
  AvfMel *m = NULL;
  AvfError err;
  AvfMelConfig c = avf_mel_config_default ();
  c.sample_rate = 0;
  AVF_CHECK (avf_mel_new (&m, &c, &err) == AVF_ERR_INVALID, "rate 0");
  AVF_CHECK_CONTAINS (err.message, "sample rate 0 Hz");
  c = avf_mel_config_default ();
  c.f_max = 9000;
  AVF_CHECK (avf_mel_new (&m, &c, &err) == AVF_ERR_INVALID, "f_max");
  AVF_CHECK_CONTAINS (err.message, "half the sample rate");
  c = avf_mel_config_default ();
  c.n_fft = 1;
  AVF_CHECK (avf_mel_new (&m, &c, &err) == AVF_ERR_INVALID, "n_fft");
  AVF_CHECK_CONTAINS (err.message, "n-fft 1");
  /* the extremes of robustness item 11 still build */
  c = (AvfMelConfig) {
  768000, 4096, 1024, 128, 0.0, 0.0};
  AVF_CHECK (avf_mel_new (&m, &c, &err) == AVF_OK, "768 kHz: %s",
      err.message);
  avf_mel_free (m);
  avf_mel_free (NULL);
}

AVF_TEST_MAIN (AVF_TEST (test_sparse_filterbank_equals_dense), AVF_TEST (test_torchaudio_default),
    AVF_TEST (test_torchaudio_odd),
    AVF_TEST (test_streaming_is_bit_identical),
    AVF_TEST (test_capacity_limit_resumes),
    AVF_TEST (test_sine_peaks_in_its_band),
    AVF_TEST (test_silence_is_log_eps),
    AVF_TEST (test_channels_are_averaged),
    AVF_TEST (test_hop_longer_than_window),
    AVF_TEST (test_bad_configurations))
