/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "mel.h"

#include <fftw3.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* The FFTW planner is not thread-safe: plans are made and destroyed under
 * this lock; only fftwf_execute_dft_r2c runs concurrently. */
static pthread_mutex_t avf_fftw_lock = PTHREAD_MUTEX_INITIALIZER;

struct AvfMel
{
  AvfMelConfig cfg;
  int n_freqs;                  /* n_fft / 2 + 1 */
  float *window;                /* (n_fft) periodic Hann */
  float *buf;                   /* (n_fft) samples of the frame being filled */
  int fill;                     /* samples in buf */
  uint64_t skip;                /* samples to drop before the next frame (hop > n_fft) */
  float *frame;                 /* (n_fft) windowed samples, FFT input */
  fftwf_complex *spec;          /* (n_freqs) */
  float *power;                 /* (n_freqs) */
  /* sparse filterbank: band j uses bins [lo[j], lo[j] + len[j]) with
   * weights coef[off[j] ...] */
  int *lo, *len, *off;
  float *coef;
  fftwf_plan plan;
};

AvfMelConfig
avf_mel_config_default (void)
{
  AvfMelConfig c = {
    .sample_rate = 16000,.n_fft = 400,.hop = 160,.n_mels = 64,
    .f_min = 0.0,.f_max = 0.0,
  };
  return c;
}

/* ref: torchaudio.functional.functional._hz_to_mel(mel_scale="htk") */
static double
hz_to_mel (double f)
{
  return 2595.0 * log10 (1.0 + f / 700.0);
}

/* ref: torchaudio.functional.functional._mel_to_hz(mel_scale="htk") */
static double
mel_to_hz (double m)
{
  return 700.0 * (pow (10.0, m / 2595.0) - 1.0);
}

/* The band edges: m_pts = linspace(m_min, m_max, n_mels + 2),
 * f_pts = mel_to_hz(m_pts).  NULL when out of memory. */
static double *
mel_points (double f_min, double f_max, int n_mels)
{
  const double m_min = hz_to_mel (f_min), m_max = hz_to_mel (f_max);
  double *f_pts = malloc ((size_t) (n_mels + 2) * sizeof *f_pts);
  if (f_pts != NULL)
    for (int i = 0; i < n_mels + 2; i++)
      f_pts[i] = mel_to_hz (m_min + (m_max - m_min) * i / (n_mels + 1));
  return f_pts;
}

/* Frequency of bin k: all_freqs = linspace(0, sample_rate // 2, n_freqs) */
static double
bin_freq (int k, int n_freqs, int sample_rate)
{
  const double top = (double) (sample_rate / 2);
  return n_freqs > 1 ? top * k / (n_freqs - 1) : 0.0;
}

/* Weight of band j at frequency f: the triangular filter
 * max(0, min(down, up)).  One function for the dense reference and the
 * sparse build, so both give the same doubles. */
static double
filter_value (const double *f_pts, int j, double f)
{
  double down = (f - f_pts[j]) / (f_pts[j + 1] - f_pts[j]);
  double up = (f_pts[j + 2] - f) / (f_pts[j + 2] - f_pts[j + 1]);
  double v = down < up ? down : up;
  return v > 0.0 ? v : 0.0;
}

void
avf_mel_filterbank (double *fb, int n_freqs, double f_min, double f_max,
    int n_mels, int sample_rate)
{
  double *f_pts = mel_points (f_min, f_max, n_mels);
  if (f_pts == NULL) {
    memset (fb, 0, (size_t) n_freqs * (size_t) n_mels * sizeof *fb);
    return;
  }
  for (int k = 0; k < n_freqs; k++) {
    double f = bin_freq (k, n_freqs, sample_rate);
    for (int j = 0; j < n_mels; j++)
      fb[(size_t) k * n_mels + j] = filter_value (f_pts, j, f);
  }
  free (f_pts);
}

/* The bins where band j may be non-zero: those with f_pts[j] < f <
 * f_pts[j + 2], widened by two bins so that rounding never cuts one off
 * (outside, the filter is negative, hence 0, for any f_pts). */
static void
band_bins (const double *f_pts, int j, int n_freqs, int sample_rate,
    int *k0, int *k1)
{
  const double step = n_freqs > 1 ? (double) (sample_rate / 2) /
      (n_freqs - 1) : 1.0;
  double a = step > 0.0 ? floor (f_pts[j] / step) - 2.0 : 0.0;
  double b = step > 0.0 ? ceil (f_pts[j + 2] / step) + 3.0 : n_freqs;
  *k0 = a < 0.0 ? 0 : a > n_freqs ? n_freqs : (int) a;
  *k1 = b < 0.0 ? 0 : b > n_freqs ? n_freqs : (int) b;
  if (step <= 0.0) {            /* sample rate 1: every bin at 0 Hz */
    *k0 = 0;
    *k1 = n_freqs;
  }
}

void
avf_mel_band (const AvfMel * m, int j, int *lo, int *len, const float **coef)
{
  *lo = m->lo[j];
  *len = m->len[j];
  *coef = m->coef + m->off[j];
}

void
avf_mel_free (AvfMel * m)
{
  if (m == NULL)
    return;
  if (m->plan) {
    pthread_mutex_lock (&avf_fftw_lock);
    fftwf_destroy_plan (m->plan);
    pthread_mutex_unlock (&avf_fftw_lock);
  }
  fftwf_free (m->frame);
  fftwf_free (m->spec);
  free (m->window);
  free (m->buf);
  free (m->power);
  free (m->lo);
  free (m->len);
  free (m->off);
  free (m->coef);
  free (m);
}

AvfStatus
avf_mel_new (AvfMel ** out, const AvfMelConfig * cfg, AvfError * err)
{
  AvfMelConfig c = *cfg;
  if (c.sample_rate < 1 || c.sample_rate > 768000)
    return avf_error_set (err, AVF_ERR_INVALID, -1,
        "sample rate %d Hz is outside 1..768000", c.sample_rate);
  if (c.n_fft < 2 || c.n_fft > 65536)
    return avf_error_set (err, AVF_ERR_INVALID, -1,
        "n-fft %d is outside 2..65536", c.n_fft);
  if (c.hop < 1 || c.hop > 1 << 24)
    return avf_error_set (err, AVF_ERR_INVALID, -1,
        "hop length %d is outside 1..%d", c.hop, 1 << 24);
  if (c.n_mels < 1 || c.n_mels > 4096)
    return avf_error_set (err, AVF_ERR_INVALID, -1,
        "n-mels %d is outside 1..4096", c.n_mels);
  if (c.f_max == 0.0)
    c.f_max = (double) (c.sample_rate / 2);
  if (!(c.f_min >= 0.0) || !(c.f_max > c.f_min)
      || c.f_max > c.sample_rate / 2.0)
    return avf_error_set (err, AVF_ERR_INVALID, -1,
        "mel range f-min %g Hz .. f-max %g Hz must satisfy 0 <= f-min < "
        "f-max <= %g Hz (half the sample rate)", c.f_min, c.f_max,
        c.sample_rate / 2.0);

  AvfMel *m = calloc (1, sizeof *m);
  if (m == NULL)
    return avf_error_set (err, AVF_ERR_NOMEM, -1, "out of memory");
  m->cfg = c;
  const int nf = c.n_fft / 2 + 1, M = c.n_mels;
  m->n_freqs = nf;
  m->window = malloc ((size_t) c.n_fft * sizeof (float));
  m->buf = malloc ((size_t) c.n_fft * sizeof (float));
  m->frame = fftwf_malloc ((size_t) c.n_fft * sizeof (float));
  m->spec = fftwf_malloc ((size_t) nf * sizeof (fftwf_complex));
  m->power = malloc ((size_t) nf * sizeof (float));
  m->lo = calloc ((size_t) M, sizeof (int));
  m->len = calloc ((size_t) M, sizeof (int));
  m->off = calloc ((size_t) M, sizeof (int));
  /* the filterbank is kept sparse: a dense (nf, M) table would take a
   * gigabyte at n-fft 65536 and 4096 bands */
  double *f_pts = mel_points (c.f_min, c.f_max, M);
  if (!m->window || !m->buf || !m->frame || !m->spec || !m->power || !m->lo
      || !m->len || !m->off || !f_pts) {
    free (f_pts);
    avf_mel_free (m);
    return avf_error_set (err, AVF_ERR_NOMEM, -1,
        "out of memory for a %d-point spectrogram", c.n_fft);
  }

  /* ref: torch.hann_window(n_fft, periodic=True) */
  for (int i = 0; i < c.n_fft; i++)
    m->window[i] = (float) (0.5 - 0.5 * cos (2.0 * M_PI * i / c.n_fft));

  size_t total = 0;
  for (int j = 0; j < M; j++) {
    int lo = nf, hi = 0, k0, k1;
    band_bins (f_pts, j, nf, c.sample_rate, &k0, &k1);
    for (int k = k0; k < k1; k++) {
      if (filter_value (f_pts, j, bin_freq (k, nf, c.sample_rate)) != 0.0) {
        if (k < lo)
          lo = k;
        hi = k + 1;
      }
    }
    if (hi <= lo)
      lo = hi = 0;              /* an empty band: output log(1e-6) */
    m->lo[j] = lo;
    m->len[j] = hi - lo;
    m->off[j] = (int) total;
    total += (size_t) (hi - lo);
    if (total > INT_MAX) {
      free (f_pts);
      avf_mel_free (m);
      return avf_error_set (err, AVF_ERR_INVALID, -1,
          "the mel filterbank of %d bands over %d bins is too large", M, nf);
    }
  }
  m->coef = malloc ((total ? total : 1) * sizeof (float));
  if (m->coef == NULL) {
    free (f_pts);
    avf_mel_free (m);
    return avf_error_set (err, AVF_ERR_NOMEM, -1, "out of memory");
  }
  for (int j = 0; j < M; j++)
    for (int k = 0; k < m->len[j]; k++)
      m->coef[m->off[j] + k] = (float) filter_value (f_pts, j,
          bin_freq (m->lo[j] + k, nf, c.sample_rate));
  free (f_pts);

  /* FFTW_ESTIMATE: the plan does not depend on timing, so every instance
   * computes bit-identical spectra. */
  pthread_mutex_lock (&avf_fftw_lock);
  m->plan = fftwf_plan_dft_r2c_1d (c.n_fft, m->frame, m->spec, FFTW_ESTIMATE);
  pthread_mutex_unlock (&avf_fftw_lock);
  if (m->plan == NULL) {
    avf_mel_free (m);
    return avf_error_set (err, AVF_ERR_NOMEM, -1,
        "FFTW could not plan a %d-point transform", c.n_fft);
  }
  avf_mel_reset (m);
  *out = m;
  return AVF_OK;
}

void
avf_mel_reset (AvfMel * m)
{
  m->fill = 0;
  m->skip = 0;
}

int
avf_mel_n_mels (const AvfMel * m)
{
  return m->cfg.n_mels;
}

uint64_t
avf_mel_frames_after (const AvfMel * m, uint64_t n)
{
  const uint64_t n_fft = (uint64_t) m->cfg.n_fft, hop = (uint64_t) m->cfg.hop;
  /* samples available from the start of the frame being filled (a frame
   * that is complete but not yet emitted counts too) */
  const uint64_t fresh = n > m->skip ? n - m->skip : 0;
  const uint64_t avail = (uint64_t) m->fill + fresh;
  if (avail < n_fft)
    return 0;
  return 1 + (avail - n_fft) / hop;
}

/* One frame from m->buf into out (M). */
static void
compute_frame (AvfMel * m, float *out)
{
  const int n_fft = m->cfg.n_fft, M = m->cfg.n_mels;
  for (int i = 0; i < n_fft; i++)
    m->frame[i] = m->buf[i] * m->window[i];
  fftwf_execute_dft_r2c (m->plan, m->frame, m->spec);
  /* ref: power=2.0: |rfft|^2 */
  for (int k = 0; k < m->n_freqs; k++)
    m->power[k] = m->spec[k][0] * m->spec[k][0]
        + m->spec[k][1] * m->spec[k][1];
  for (int j = 0; j < M; j++) {
    const float *w = m->coef + m->off[j];
    const float *p = m->power + m->lo[j];
    float acc = 0.0f;
    for (int k = 0; k < m->len[j]; k++)
      acc += w[k] * p[k];
    out[j] = logf (acc + AVF_MEL_LOG_EPS);
  }
}

size_t
avf_mel_push (AvfMel * m, float *out, size_t max_frames,
    const float *samples, size_t n, int channels, size_t *consumed)
{
  const int n_fft = m->cfg.n_fft, hop = m->cfg.hop, M = m->cfg.n_mels;
  size_t used = 0, frames = 0;

  for (;;) {
    if (m->fill == n_fft) {
      if (frames == max_frames)
        break;
      compute_frame (m, out + frames * (size_t) M);
      frames++;
      if (hop < n_fft) {
        memmove (m->buf, m->buf + hop, (size_t) (n_fft - hop) * sizeof (float));
        m->fill = n_fft - hop;
      } else {
        m->fill = 0;
        m->skip = (uint64_t) (hop - n_fft);
      }
    }
    if (used == n)
      break;
    if (m->skip > 0) {
      size_t drop = n - used;
      if ((uint64_t) drop > m->skip)
        drop = (size_t) m->skip;
      used += drop;
      m->skip -= drop;
      continue;
    }
    size_t take = (size_t) (n_fft - m->fill);
    if (take > n - used)
      take = n - used;
    const float *src = samples + used * (size_t) channels;
    float *dst = m->buf + m->fill;
    if (channels == 1) {
      memcpy (dst, src, take * sizeof (float));
    } else {
      for (size_t i = 0; i < take; i++) {
        float acc = 0.0f;
        for (int ch = 0; ch < channels; ch++)
          acc += src[i * (size_t) channels + ch];
        dst[i] = acc / (float) channels;
      }
    }
    m->fill += (int) take;
    used += take;
  }
  if (consumed)
    *consumed = used;
  return frames;
}
