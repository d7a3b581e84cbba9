/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * prng: the project's own counter-based generator (splitmix64), so that
 * built-in weights are the same numbers on every machine and in the PyTorch
 * tool (model/avfusion_default.py implements the same three lines with numpy).
 *
 *   z  = seed + (i + 1) * 0x9E3779B97F4A7C15          (mod 2^64)
 *   z  = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
 *   z  = (z ^ (z >> 27)) * 0x94D049BB133111EB
 *   u64(seed, i) = z ^ (z >> 31)
 *   uniform(seed, i) = (float) (u64 >> 40) * 2^-24      in [0, 1), exact
 *   symmetric(seed, i, b) = (2 * uniform - 1) * b        float32 arithmetic
 */
#ifndef AVF_PRNG_H
#define AVF_PRNG_H

#include <stdint.h>

uint64_t avf_prng_u64 (uint64_t seed, uint64_t i);
float avf_prng_uniform (uint64_t seed, uint64_t i);
/* Fills out[0..n) with symmetric(seed, first + k, bound). */
void avf_prng_fill_symmetric (float *out, uint64_t n, uint64_t seed,
    uint64_t first, float bound);

#endif /* AVF_PRNG_H */
