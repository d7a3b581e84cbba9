/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "prng.h"

uint64_t
avf_prng_u64 (uint64_t seed, uint64_t i)
{
  uint64_t z = seed + (i + 1) * UINT64_C (0x9E3779B97F4A7C15);
  z = (z ^ (z >> 30)) * UINT64_C (0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C (0x94D049BB133111EB);
  return z ^ (z >> 31);
}

float
avf_prng_uniform (uint64_t seed, uint64_t i)
{
  /* 24 random bits times 2^-24: exactly representable in float32 */
  return (float) (avf_prng_u64 (seed, i) >> 40) * 0x1p-24f;
}

void
avf_prng_fill_symmetric (float *out, uint64_t n, uint64_t seed,
    uint64_t first, float bound)
{
  for (uint64_t k = 0; k < n; k++) {
    float u = avf_prng_uniform (seed, first + k);
    out[k] = (2.0f * u - 1.0f) * bound;
  }
}
