/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * mel: streaming log-mel spectrogram (spec §1).
 *
 * ref: torch.log(torchaudio.transforms.MelSpectrogram(sample_rate,
 *        n_fft=n_fft, hop_length=hop, n_mels=M, f_min=f_min, f_max=f_max,
 *        center=False, power=2.0, norm=None, mel_scale="htk")(x) + 1e-6).T
 *
 * Frame t covers the mono samples [t*hop, t*hop + n_fft) counted from the
 * first sample after creation or avf_mel_reset().  Samples can be pushed in
 * pieces of any size; every completed frame comes out, and the output is
 * bit-identical however the input was split.  The FFTW plan and all buffers
 * are made in avf_mel_new(); pushing never allocates.
 */
#ifndef AVF_MEL_H
#define AVF_MEL_H

#include <stddef.h>
#include <stdint.h>

#include "avf_error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AVF_MEL_LOG_EPS 1e-6f

typedef struct {
  int sample_rate;              /* Hz, 1..768000 */
  int n_fft;                    /* window and FFT length, 2..65536 */
  int hop;                      /* frame step in samples, >= 1 */
  int n_mels;                   /* M */
  double f_min;                 /* Hz */
  double f_max;                 /* Hz; 0 means sample_rate / 2 */
} AvfMelConfig;

/* sample_rate 16000, n_fft 400, hop 160, n_mels 64, f_min 0, f_max 0 */
AvfMelConfig avf_mel_config_default (void);

typedef struct AvfMel AvfMel;

AvfStatus avf_mel_new (AvfMel ** out, const AvfMelConfig * cfg,
    AvfError * err);
void avf_mel_free (AvfMel * mel);

/* Forgets buffered samples: the next pushed sample starts frame 0. */
void avf_mel_reset (AvfMel * mel);

/* How many frames pushing n more samples (per channel) would complete. */
uint64_t avf_mel_frames_after (const AvfMel * mel, uint64_t n);

/* Pushes n interleaved sample frames of `channels` channels (averaged to
 * mono: ref torch.mean(x, dim=channel)).  Writes up to max_frames completed
 * frames to out (max_frames, M) row-major and returns how many.  Stops
 * early when out is full; *consumed (optional) says how many sample frames
 * were taken, so the caller can push the rest later. */
size_t avf_mel_push (AvfMel * mel, float *out, size_t max_frames,
    const float *samples, size_t n, int channels, size_t *consumed);

int avf_mel_n_mels (const AvfMel * mel);

/* The filterbank (n_fft/2 + 1, M) row-major, in float64.
 * ref: torchaudio.functional.melscale_fbanks(n_fft // 2 + 1, f_min, f_max,
 *      M, sample_rate, norm=None, mel_scale="htk") */
/* Band j of the (sparse) filterbank in use: weights coef[0 .. len) for
 * the FFT bins lo .. lo + len (introspection, for tests). */
void avf_mel_band (const AvfMel * mel, int j, int *lo, int *len,
    const float **coef);

void avf_mel_filterbank (double *fb, int n_freqs, double f_min, double f_max,
    int n_mels, int sample_rate);

#ifdef __cplusplus
}
#endif
#endif /* AVF_MEL_H */
