# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The built-in seeded weights of avfusion-v1 (spec section 4) and the
project PRNG they come from (core/prng.h), bit-identical to the C code:
``splitmix64_py``, ``prng_u64``, ``prng_uniform``, ``prng_symmetric``,
``default_state_dict``, and the PRNG self check of ``selftest`` and
``check-fixtures``.

Split out of model/avfusion.py, which re-exports these names (import them
from either).  The tensor order comes from avfusion.canonical_shapes,
imported when called, so avfusion can import this module at its top.
"""

import math

import numpy as np


_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB
_MASK64 = (1 << 64) - 1


def splitmix64_py(seed, i):
    """Plain-Python-int reference of avf_prng_u64(seed, i).

    avf_prng_u64(0, 0..3) = 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4,
                            0x06c45d188009454f, 0xf88bb8a8724c81ec
    (the standard splitmix64 stream from state 0; checked by ``selftest``).
    """
    z = (seed + (i + 1) * _GOLDEN) & _MASK64
    z = ((z ^ (z >> 30)) * _MIX1) & _MASK64
    z = ((z ^ (z >> 27)) * _MIX2) & _MASK64
    return z ^ (z >> 31)


def prng_u64(seed, first, n):
    """avf_prng_u64(seed, first + k) for k in [0, n), as a numpy uint64 array."""
    i = np.arange(n, dtype=np.uint64) + np.uint64(first)
    with np.errstate(over="ignore"):
        z = np.uint64(seed & _MASK64) + (i + np.uint64(1)) * np.uint64(_GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(_MIX1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(_MIX2)
        z = z ^ (z >> np.uint64(31))
    return z


def prng_uniform(seed, first, n):
    """avf_prng_uniform: float32 (u64 >> 40) * 2^-24, exact, in [0, 1)."""
    return (prng_u64(seed, first, n) >> np.uint64(40)).astype(np.float32) * np.float32(2.0 ** -24)


def prng_symmetric(seed, first, n, bound):
    """avf_prng_fill_symmetric: (2u - 1) * bound, float32 arithmetic."""
    u = prng_uniform(seed, first, n)
    return (np.float32(2.0) * u - np.float32(1.0)) * np.float32(bound)


def _fan_in(shape):
    return int(np.prod(shape[1:])) if len(shape) > 1 else 1


def default_state_dict(seed=0, E=256, H=8, L=1, F=1024, M=64, P=16, N=196, T_max=100):
    """The built-in weights (spec section 4), as an ordered dict of float32
    numpy arrays in the canonical order.

    One counter runs over the random tensors in canonical order, each taking
    numel values in row-major order.  Bounds (float32): weights
    sqrt(3 / fan_in), biases 1 / sqrt(fan_in) with the fan_in of the matching
    weight (product of its shape after the first dim), audio_pos and
    video_pos 1.  LayerNorm weights are 1 and biases 0 and take no counter
    values.  H does not change any tensor (kept for symmetry with the file
    metadata).
    """
    if E % H:
        raise ValueError(f"E {E} is not a multiple of H {H}")
    from avfusion import canonical_shapes   # avfusion imports this module
    shapes = canonical_shapes(E, L, F, M, P, N, T_max)
    shape_of = dict(shapes)
    out = {}
    counter = 0
    for name, shape in shapes:
        n = int(np.prod(shape))
        if ".audio_norm" in name or ".video_norm" in name:
            val = 1.0 if name.endswith(".weight") else 0.0
            out[name] = np.full(shape, val, dtype=np.float32)
            continue
        if name in ("audio_pos", "video_pos"):
            bound = np.float32(1.0)
        elif name.endswith("bias"):
            wname = name[:-len("bias")] + "weight"
            if name.endswith(".in_proj_bias"):
                wname = name[:-len("in_proj_bias")] + "in_proj_weight"
            bound = np.float32(1.0 / math.sqrt(_fan_in(shape_of[wname])))
        else:
            bound = np.float32(math.sqrt(3.0 / _fan_in(shape)))
        out[name] = prng_symmetric(seed, counter, n, bound).reshape(shape)
        counter += n
    return out


def _prng_selftest(verbose=True):
    ok = True
    for seed in (0, 12345, (1 << 64) - 1):
        got = prng_u64(seed, 0, 16)
        for i in range(16):
            if int(got[i]) != splitmix64_py(seed, i):
                ok = False
        # far counters too (wrapping of (i + 1) * golden)
        far = prng_u64(seed, (1 << 40) + 3, 2)
        ok &= int(far[0]) == splitmix64_py(seed, (1 << 40) + 3)
        ok &= int(far[1]) == splitmix64_py(seed, (1 << 40) + 4)
        u = prng_uniform(seed, 0, 16)
        for i in range(16):
            ok &= float(u[i]) == (splitmix64_py(seed, i) >> 40) / float(1 << 24)
    if verbose:
        for seed in (0, 12345):
            print(f"u64(seed {seed}, i 0..3): "
                  + " ".join(f"0x{splitmix64_py(seed, i):016x}" for i in range(4)))
    return ok
