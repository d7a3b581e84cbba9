/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * weights: the avfusion-v1 tensor set (spec §4), or avfusion-v2's (v1's
 * plus the rhythm stage, docs/avfusion-v2.md §4), read from a safetensors
 * file and checked against itself, or built from a seed (spec defaults).
 *
 * Dimension vocabulary (spec notation), used in every core header:
 *   E embedding width, H heads (E % H == 0), P patch size, M mel bands,
 *   F feed-forward width, T audio slots per window (T <= T_max),
 *   N video patches per frame, L layers;
 * avfusion-v2 adds: D rhythm features per patch, C audio rhythm features,
 *   Q side of the rhythm map's patch (Q divides P; S = P / Q pixels are
 *   pooled), K rhythm bins, G audio slots per bin (T = K G), and the
 *   lags lag_min .. lag_min + lags - 1 in bins (the doc's lambda_0 and
 *   Lambda; positive: the video shows an event that much later).
 */
#ifndef AVF_WEIGHTS_H
#define AVF_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#include "avf_error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int E, H, L, F, M, P, N, T_max;
  /* optional metadata; 0 when the file does not name it */
  int sample_rate, n_fft, hop_length, window_ms;
  /* optional metadata "visible_threshold": the strongest-patch weight
   * (audio-cross map of the last layer, head mean over the slots that hold
   * audio) from which a visible object is taken to sound; in (0, 1], 0 when
   * the file does not name it (unknown; the seeded weights) */
  float visible_threshold;
} AvfConfig;

/* avfusion-v2's rhythm stage (docs/avfusion-v2.md): D, C, Q, K and the
 * number of lags are read off the shapes, G from the metadata
 * "rhythm_bin_slots", lag_min (any sign, |lag_min| <= K and
 * |lag_min + lags - 1| <= K) from "rhythm_lag_min", neighbourhood (k, odd,
 * 1 .. 2 ceil(sqrt(N)) - 1: each patch's rhythm features are the mean over
 * the k x k patches around it inside the grid) from the optional
 * "rhythm_neighbourhood" (absent: 1).  neighbourhood 0 in a configuration
 * built in code means 1 (the weights hold 1 then).  All 0 for an
 * avfusion-v1 model.  (Apart from AvfConfig, whose layout tests and tools initialise
 * positionally.) */
typedef struct {
  int D, C, Q, K, G;
  int lags, lag_min;
  int neighbourhood;
  int neighbourhood_from;       /* "rhythm_neighbourhood_from" (absent: 0):
                                 * the features d >= it are averaged over
                                 * the neighbourhood, those below stay the
                                 * patch's own; 0 with neighbourhood 1 */
} AvfRhythmConfig;

/* The largest rhythm_neighbourhood of a model of N patches:
 * 2 ceil(sqrt(N)) - 1 (docs/avfusion-v2.md §4). */
int avf_rhythm_neighbourhood_max (int N);

/* 2 for an avfusion-v2 configuration (D > 0), 1 for v1 (all zero). */
int avf_rhythm_config_version (const AvfRhythmConfig * r);

/* "avfusion-v1" or "avfusion-v2": the "format" a configuration has. */
const char *avf_rhythm_config_format (const AvfRhythmConfig * r);

/* Checks the v2 sizes against the v1 ones (1..65536 each, Q divides P,
 * K G <= T_max, lags D C <= 65536, the lags within K bins either way, the
 * neighbourhood 0 or odd in 1 .. avf_rhythm_neighbourhood_max,
 * neighbourhood_from 0, or 1 .. D - 1 with a neighbourhood above 1); AVF_OK
 * for all zero (v1). */
AvfStatus avf_rhythm_config_check (const AvfRhythmConfig * r,
    const AvfConfig * cfg, AvfError * err);

/* The spec defaults: E 256, H 8, L 1, F 1024, M 64, P 16, N 196, T_max 100,
 * sample_rate 16000, n_fft 400, hop_length 160, window_ms 1000. */
AvfConfig avf_config_default (void);

typedef enum {
  AVF_MODULE_AUDIO_SELF = 0,
  AVF_MODULE_VIDEO_SELF,
  AVF_MODULE_AUDIO_CROSS,
  AVF_MODULE_VIDEO_CROSS,
  AVF_N_MODULES
} AvfModule;

/* "audio_self", "video_self", "audio_cross", "video_cross" */
const char *avf_module_name (AvfModule m);

/* The queries and keys of a module's map with T audio slots and N patches:
 * audio_self (T, T), video_self (N, N), audio_cross (T, N), video_cross
 * (N, T). */
void avf_module_dims (AvfModule m, int T, int N, int *tq, int *tk);

typedef struct {
  const float *in_proj_weight;  /* (3E, E) row-major: q, k, v blocks */
  const float *in_proj_bias;    /* (3E) */
  const float *out_proj_weight; /* (E, E) */
  const float *out_proj_bias;   /* (E) */
} AvfMhaWeights;

typedef struct {
  const float *weight;          /* (E) */
  const float *bias;            /* (E) */
} AvfLnWeights;

typedef struct {
  const float *w1;              /* (F, E) */
  const float *b1;              /* (F) */
  const float *w2;              /* (E, F) */
  const float *b2;              /* (E) */
} AvfFfnWeights;

typedef struct {
  AvfMhaWeights mha[AVF_N_MODULES];
  AvfLnWeights audio_norm[3], video_norm[3];
  AvfFfnWeights audio_ffn, video_ffn;
} AvfLayerWeights;

typedef struct {
  AvfConfig cfg;
  AvfRhythmConfig rhythm;               /* all 0: avfusion-v1 */
  const float *audio_proj_weight;       /* (E, M) */
  const float *audio_proj_bias;         /* (E) */
  const float *audio_pos;               /* (T_max, E) */
  const float *patch_embed_weight;      /* (E, 3, P, P) */
  const float *patch_embed_bias;        /* (E) */
  const float *video_pos;               /* (N, E) */
  AvfLayerWeights *layers;              /* (L) */
  /* avfusion-v2 only (NULL for v1), docs/avfusion-v2.md §4 */
  const float *rhythm_embed_weight;     /* (D, 3, Q, Q) */
  const float *rhythm_embed_bias;       /* (D) */
  const float *audio_rhythm_weight;     /* (C, M) */
  const float *audio_rhythm_bias;       /* (C) */
  const float *rhythm_bin_weight;       /* (lags, K) */
  const float *rhythm_proj_weight;      /* (E, lags D C) */
  /* private: one aligned allocation holding every tensor */
  float *storage_;
  size_t n_floats_;
} AvfWeights;

/* Reads and checks a weights file of format avfusion-v1 or avfusion-v2.
 * Missing file: AVF_ERR_NOT_FOUND; a malformed file (or metadata value,
 * such as a visible_threshold that is not a finite number in (0, 1], or an
 * avfusion-v2 file without a positive "rhythm_bin_slots" or an integer
 * "rhythm_lag_min", or with a "rhythm_neighbourhood" that is not an odd
 * positive integer): AVF_ERR_FORMAT;
 * a tensor set that does not form a model of its format (or a
 * "rhythm_lag_min" or "rhythm_neighbourhood" out of the range its tensors
 * allow): AVF_ERR_SHAPE, naming the tensor with the expected and found
 * shape.  Metadata keys other than those of AvfConfig (world,
 * description, training provenance, ...) are accepted and ignored. */
AvfStatus avf_weights_load (AvfWeights ** out, const char *path,
    AvfError * err);

struct AvfSafetensors;
AvfStatus avf_weights_from_safetensors (AvfWeights ** out,
    const struct AvfSafetensors *st, AvfError * err);

/* Built-in weights never take more than this (1 GiB): a property such as
 * avpatchembed's patch-size could otherwise ask for terabytes. */
#define AVF_WEIGHTS_DEFAULT_MAX_BYTES ((uint64_t) 1 << 30)

/* Built-in weights from the project PRNG (prng.h); see model/avfusion_default.py
 * default_state_dict() for the same rule in numpy (avfusion-v1; a v2
 * configuration also gets seeded rhythm tensors, which have no PyTorch
 * twin: for tests only).  AVF_ERR_INVALID when they would exceed
 * AVF_WEIGHTS_DEFAULT_MAX_BYTES. */
AvfStatus avf_weights_new_default (AvfWeights ** out, const AvfConfig * cfg,
    uint64_t seed, AvfError * err);

/* The same with avfusion-v2's rhythm tensors after v1's (@rhythm all zero:
 * exactly avf_weights_new_default).  The rhythm tensors are seeded like
 * v1's (weights bound sqrt(3 / fan_in), biases 1 / sqrt(fan_in),
 * rhythm_bin_weight 1); no PyTorch twin: for tests. */
AvfStatus avf_weights_new_default_v2 (AvfWeights ** out,
    const AvfConfig * cfg, const AvfRhythmConfig * rhythm, uint64_t seed,
    AvfError * err);

/* "avfusion-v1" or "avfusion-v2". */
const char *avf_weights_format (const AvfWeights * w);

void avf_weights_free (AvfWeights * w);

/* Canonical tensor enumeration: n-th tensor name/shape/data, for the
 * writer, checksums and tests.  Returns 0 past the end. */
typedef struct {
  char name[64];
  int ndim;
  uint64_t shape[4];
  uint64_t numel;
  const float *data;
} AvfWeightTensor;

/* avf_weights_count: the tensors of avfusion-v1 (the v1 part of any
 * model); avf_weights_n_tensors: all of @w's, v2's rhythm tensors last.
 * avf_weights_tensor enumerates all of them. */
size_t avf_weights_count (const AvfConfig * cfg);
size_t avf_weights_n_tensors (const AvfWeights * w);
int avf_weights_tensor (const AvfWeights * w, size_t i, AvfWeightTensor * out);

/* Checks a configuration for consistency (positive sizes, E % H == 0, size
 * arithmetic in range; for v2 also Q dividing P and K G <= T_max). */
AvfStatus avf_config_check (const AvfConfig * cfg, AvfError * err);

#ifdef __cplusplus
}
#endif
#endif /* AVF_WEIGHTS_H */
