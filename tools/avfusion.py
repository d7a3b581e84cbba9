#!/usr/bin/python3
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""avfusion-v1 in PyTorch: the reference model of the avattention plugin.

This file is the PyTorch side of the "avfusion-v1" model spec:

* ``log_mel``         spec section 1 (element ``avspectrogram``)
* ``AvFusion.embed_video``  spec section 2 (element ``avpatchembed``)
* ``AvFusion.fuse``   spec section 3 (element ``avattention``), one window
* ``AvFusion.forward``  the same fusion, batched, for training
* ``window_slot``     which audio slot a spectrogram frame lands in
* ``default_state_dict``  the built-in seeded weights, bit-identical to the
  C code (core/prng.h)
* ``write_safetensors`` / ``read_safetensors``  spec section 4 files, without
  the ``safetensors`` package

Command line (run ``tools/avfusion.py -h``)::

    avfusion.py export --state-dict model.pt --heads 8 --out model.safetensors
    avfusion.py default --seed 0 --out default.safetensors
    avfusion.py fixtures --out tests/fixtures
    avfusion.py pipeline-fixture --out tests/fixtures
    avfusion.py check-fixtures --dir tests/fixtures
    avfusion.py selftest

Train with it like any nn.Module::

    model = AvFusion(embed_dim=256, num_heads=8, num_layers=1)
    fused = model(mel, mask, model.embed_video(rgb))   # [B, 2E]
    ...
    torch.save(model.state_dict(), "model.pt")
    # then: avfusion.py export --state-dict model.pt --heads 8 --out model.safetensors
"""

import argparse
import contextlib
import json
import math
import os
import re
import struct
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torchaudio

FORMAT = "avfusion-v1"

# Built-in default sizes (spec section 4).
DEFAULTS = dict(embed_dim=256, num_heads=8, num_layers=1, ffn_dim=1024,
                n_mels=64, patch_size=16, num_patches=196, max_frames=100)

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

ATTN_MODULES = ("audio_self", "video_self", "audio_cross", "video_cross")
NORMS = ("audio_norm1", "audio_norm2", "audio_norm3",
         "video_norm1", "video_norm2", "video_norm3")
FFNS = ("audio_ffn", "video_ffn")

# Optional __metadata__ fields of a weights file, in the order they are written.
OPTIONAL_METADATA = ("sample_rate", "n_fft", "hop_length", "n_mels",
                     "patch_size", "window_ms")


# --------------------------------------------------------------------------
# 1. Audio: log-mel spectrogram
# --------------------------------------------------------------------------

@contextlib.contextmanager
def _default_dtype(dtype):
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def log_mel(x, sample_rate=16000, n_fft=400, hop=160, n_mels=64, f_min=0.0,
            f_max=None):
    """Log-mel frames of spec section 1: returns ``[frames, n_mels]``.

    ``x`` is ``[samples]`` or ``[channels, samples]`` (channels are averaged
    to mono first).  ``f_max`` None or 0 means ``sample_rate / 2`` (as the
    element property).  The transform is built in the dtype of ``x``
    (float64 input gives a float64 filterbank, window and FFT), so a double
    reference is double all the way.  Trailing samples that do not fill a
    frame are dropped (center=False); fewer than n_fft samples give 0 frames.
    """
    x = torch.as_tensor(x)
    if not torch.is_floating_point(x):
        x = x.to(torch.float32)
    if x.dim() == 2:
        x = x.mean(dim=0)
    elif x.dim() != 1:
        raise ValueError(f"log_mel: expected [samples] or [channels, samples], got {list(x.shape)}")
    if f_max is None or f_max == 0:
        f_max = sample_rate / 2
    if x.shape[0] < n_fft:
        return x.new_zeros((0, n_mels))
    with _default_dtype(x.dtype):
        transform = torchaudio.transforms.MelSpectrogram(
            sample_rate=sample_rate, n_fft=n_fft, hop_length=hop, n_mels=n_mels,
            f_min=f_min, f_max=f_max, center=False, power=2.0, norm=None,
            mel_scale="htk")
    transform = transform.to(dtype=x.dtype, device=x.device)
    mel = transform(x)                      # [n_mels, frames]
    return torch.log(mel + 1e-6).transpose(0, 1)


# --------------------------------------------------------------------------
# 3. Fusion window: which slot a spectrogram frame goes to
# --------------------------------------------------------------------------

def hop_ns(hop, sample_rate):
    """Hop duration in nanoseconds, float64: (hop * 1e9) / sample_rate."""
    return float(hop) * 1e9 / float(sample_rate)


def window_slots(window_ns, hop, sample_rate):
    """T = round(window / hop_duration), round half up (see window_slot)."""
    return int(math.floor(float(window_ns) / hop_ns(hop, sample_rate) + 0.5))


def window_slot(s, t, window_ns, hop, sample_rate):
    """Slot of the spectrogram frame with timestamp ``s`` (ns) in the window of
    the video frame with timestamp ``t`` (ns), or None when it falls outside.

    j = floor((s - (t - window_ns)) / hop_ns + 0.5), valid when 0 <= j < T,
    T = floor(window_ns / hop_ns + 0.5), hop_ns = hop * 1e9 / sample_rate, all
    in float64.  The spec says "round"; the project reads it as "round half
    up" (floor(x + 0.5)), also for negative x, so a frame exactly half a hop
    before the window start gets slot 0 and one exactly half a hop before
    the end is out.  The difference s - (t - window_ns) is formed in exact
    integer arithmetic before the conversion to float64.
    """
    h = hop_ns(hop, sample_rate)
    T = window_slots(window_ns, hop, sample_rate)
    d = int(s) - (int(t) - int(window_ns))
    j = int(math.floor(float(d) / h + 0.5))
    if 0 <= j < T:
        return j
    return None


# --------------------------------------------------------------------------
# 2 + 3. The model
# --------------------------------------------------------------------------

class AvFusionLayer(nn.Module):
    """One post-norm audio-visual layer (spec section 3)."""

    def __init__(self, embed_dim, num_heads, ffn_dim):
        super().__init__()
        E, H, F = embed_dim, num_heads, ffn_dim
        self.audio_self = nn.MultiheadAttention(E, H, batch_first=True)
        self.video_self = nn.MultiheadAttention(E, H, batch_first=True)
        self.audio_cross = nn.MultiheadAttention(E, H, batch_first=True)
        self.video_cross = nn.MultiheadAttention(E, H, batch_first=True)
        self.audio_norm1 = nn.LayerNorm(E)
        self.audio_norm2 = nn.LayerNorm(E)
        self.audio_norm3 = nn.LayerNorm(E)
        self.video_norm1 = nn.LayerNorm(E)
        self.video_norm2 = nn.LayerNorm(E)
        self.video_norm3 = nn.LayerNorm(E)
        self.audio_ffn = nn.Sequential(nn.Linear(E, F), nn.GELU(), nn.Linear(F, E))
        self.video_ffn = nn.Sequential(nn.Linear(E, F), nn.GELU(), nn.Linear(F, E))

    def forward(self, a, v, mask, need_weights=False, per_head=False):
        """a [B, T, E] (or None: no audio at all), v [B, N, E], mask [B, T]
        bool, True = missing slot.  Returns (a, v, maps); maps holds the
        attention weights of the modules that ran when need_weights."""
        avg = not per_head
        maps = {}

        vs, w = self.video_self(v, v, v, need_weights=need_weights,
                                average_attn_weights=avg)
        maps["video_self"] = w
        v1 = self.video_norm1(v + vs)

        if a is None:
            # A window with no audio frame at all: the video cross-attention
            # is skipped (v2 = LN_v2(v1)) and the audio branch is not run.
            v2 = self.video_norm2(v1)
            v = self.video_norm3(v2 + self.video_ffn(v2))
            return None, v, maps

        # Batched training: a sample whose slots are all missing would make
        # the softmax 0/0.  Its audio result is discarded and its video
        # cross-attention replaced by 0 below, so let it attend to all slots
        # to stay finite (no NaN in forward or backward).  With one sample
        # that has audio this is exactly `mask`.
        no_audio = mask.all(dim=1)
        kpm = mask & ~no_audio[:, None]

        as_, w = self.audio_self(a, a, a, key_padding_mask=kpm,
                                 need_weights=need_weights, average_attn_weights=avg)
        maps["audio_self"] = w
        a1 = self.audio_norm1(a + as_)

        ac, w = self.audio_cross(a1, v1, v1, need_weights=need_weights,
                                 average_attn_weights=avg)
        maps["audio_cross"] = w
        a2 = self.audio_norm2(a1 + ac)

        vc, w = self.video_cross(v1, a1, a1, key_padding_mask=kpm,
                                 need_weights=need_weights, average_attn_weights=avg)
        maps["video_cross"] = w
        vc = vc.masked_fill(no_audio[:, None, None], 0.0)
        v2 = self.video_norm2(v1 + vc)

        a = self.audio_norm3(a2 + self.audio_ffn(a2))
        v = self.video_norm3(v2 + self.video_ffn(v2))
        return a, v, maps


class AvFusion(nn.Module):
    """avfusion-v1.  ``state_dict()`` names are exactly those of spec section 4."""

    def __init__(self, embed_dim=256, num_heads=8, num_layers=1, ffn_dim=1024,
                 n_mels=64, patch_size=16, num_patches=196, max_frames=100):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not a multiple of num_heads {num_heads}")
        E = embed_dim
        self.embed_dim = E
        self.num_heads = num_heads
        self.patch_size = patch_size
        self.audio_proj = nn.Linear(n_mels, E)
        self.audio_pos = nn.Parameter(torch.empty(max_frames, E))
        self.patch_embed = nn.Conv2d(3, E, patch_size, stride=patch_size)
        self.video_pos = nn.Parameter(torch.empty(num_patches, E))
        self.layers = nn.ModuleList(
            [AvFusionLayer(E, num_heads, ffn_dim) for _ in range(num_layers)])
        nn.init.normal_(self.audio_pos, std=0.02)
        nn.init.normal_(self.video_pos, std=0.02)
        self.register_buffer("pixel_mean", torch.tensor(IMAGENET_MEAN).view(3, 1, 1),
                             persistent=False)
        self.register_buffer("pixel_std", torch.tensor(IMAGENET_STD).view(3, 1, 1),
                             persistent=False)

    # -- loading ---------------------------------------------------------

    @classmethod
    def from_state_dict(cls, state, num_heads):
        """Builds a model sized from the shapes of ``state`` (checked against
        the spec) and loads it."""
        sizes = check_state_dict(state, num_heads)
        model = cls(**sizes)
        model.load_state_dict({k: torch.as_tensor(np.asarray(v)) if not torch.is_tensor(v) else v
                               for k, v in state.items()})
        return model

    @classmethod
    def from_safetensors(cls, path):
        tensors, meta = read_safetensors(path)
        if meta.get("format") != FORMAT:
            raise ValueError(f"{path}: __metadata__ format is {meta.get('format')!r}, expected {FORMAT!r}")
        if "num_heads" not in meta:
            raise ValueError(f"{path}: __metadata__ has no num_heads")
        return cls.from_state_dict(tensors, int(meta["num_heads"]))

    # -- section 2 -------------------------------------------------------

    def embed_video(self, rgb):
        """Patch tokens of one packed-RGB uint8 frame [H, W, 3] -> [N, E]
        (or a batch [B, H, W, 3] -> [B, N, E])."""
        rgb = torch.as_tensor(rgb)
        single = rgb.dim() == 3
        if single:
            rgb = rgb.unsqueeze(0)
        if rgb.dim() != 4 or rgb.shape[-1] != 3:
            raise ValueError(f"embed_video: expected [H, W, 3] RGB, got {list(rgb.shape)}")
        P = self.patch_size
        Hh, Ww = rgb.shape[1], rgb.shape[2]
        if Hh % P or Ww % P:
            raise ValueError(f"embed_video: {Ww}x{Hh} is not a multiple of the patch size {P}")
        if (Hh // P) * (Ww // P) != self.video_pos.shape[0]:
            raise ValueError(f"embed_video: {Ww}x{Hh} gives {(Hh // P) * (Ww // P)} patches, "
                             f"video_pos has {self.video_pos.shape[0]}")
        dtype = self.patch_embed.weight.dtype
        x = rgb.permute(0, 3, 1, 2).to(dtype) / 255.0          # [B, 3, H, W]
        x = (x - self.pixel_mean.to(dtype)) / self.pixel_std.to(dtype)
        e = self.patch_embed(x).flatten(2).transpose(1, 2) + self.video_pos
        return e[0] if single else e

    # -- section 3 -------------------------------------------------------

    def fuse(self, mel, mask, video_tokens, per_head=False):
        """One window, exactly as spec section 3.

        mel [T, M], mask bool [T] (True = missing slot), video_tokens [N, E].
        Returns (fused [2E], maps) where maps["layers.{i}.{module}"] is
        [Tq, Tk] (head mean) or [H, Tq, Tk] (per_head).  When every slot is
        missing the audio branch is not run: its maps and the video_cross map
        are NaN and the audio half of fused is zeros.
        """
        mask = torch.as_tensor(mask).to(torch.bool)
        T = mel.shape[0]
        N = video_tokens.shape[0]
        H = self.num_heads
        no_audio = bool(mask.all())
        a = None
        if not no_audio:
            a = (self.audio_proj(mel) + self.audio_pos[:T]).unsqueeze(0)
        v = video_tokens.unsqueeze(0)
        kpm = mask.unsqueeze(0)
        maps = {}
        for i, layer in enumerate(self.layers):
            a, v, m = layer(a, v, kpm, need_weights=True, per_head=per_head)
            if no_audio:
                lead = (H,) if per_head else ()
                nan = lambda tq, tk: torch.full(lead + (tq, tk), float("nan"),
                                                dtype=v.dtype, device=v.device)
                m["audio_self"] = nan(T, T)[None]
                m["audio_cross"] = nan(T, N)[None]
                m["video_cross"] = nan(N, T)[None]
            for name in ATTN_MODULES:
                maps[f"layers.{i}.{name}"] = m[name][0]
        if no_audio:
            audio_half = v.new_zeros(self.embed_dim)
        else:
            audio_half = a[0][~mask].mean(dim=0)
        video_half = v[0].mean(dim=0)
        return torch.cat([audio_half, video_half]), maps

    def forward(self, mel, mask, video_tokens):
        """Batched fusion for training: mel [B, T, M], mask bool [B, T]
        (True = missing), video_tokens [B, N, E] -> fused [B, 2E].  Same
        numbers as ``fuse`` for each sample (no attention maps)."""
        mask = mask.to(torch.bool)
        T = mel.shape[1]
        a = self.audio_proj(mel) + self.audio_pos[:T]
        v = video_tokens
        for layer in self.layers:
            a, v, _ = layer(a, v, mask, need_weights=False)
        keep = (~mask).to(a.dtype).unsqueeze(-1)                 # [B, T, 1]
        count = keep.sum(dim=1).clamp(min=1.0)
        audio_half = (a * keep).sum(dim=1) / count                # zeros when no audio
        return torch.cat([audio_half, v.mean(dim=1)], dim=-1)


# --------------------------------------------------------------------------
# Tensor names and shapes (spec section 4)
# --------------------------------------------------------------------------

def canonical_shapes(embed_dim, num_layers, ffn_dim, n_mels, patch_size,
                     num_patches, max_frames):
    """Ordered list of (name, shape) in the canonical file order."""
    E, L, F, M, P, N, T = (embed_dim, num_layers, ffn_dim, n_mels, patch_size,
                           num_patches, max_frames)
    out = [("audio_proj.weight", (E, M)), ("audio_proj.bias", (E,)),
           ("audio_pos", (T, E)),
           ("patch_embed.weight", (E, 3, P, P)), ("patch_embed.bias", (E,)),
           ("video_pos", (N, E))]
    for i in range(L):
        p = f"layers.{i}."
        for m in ATTN_MODULES:
            out += [(p + m + ".in_proj_weight", (3 * E, E)),
                    (p + m + ".in_proj_bias", (3 * E,)),
                    (p + m + ".out_proj.weight", (E, E)),
                    (p + m + ".out_proj.bias", (E,))]
        for n in NORMS:
            out += [(p + n + ".weight", (E,)), (p + n + ".bias", (E,))]
        for f in FFNS:
            out += [(p + f + ".0.weight", (F, E)), (p + f + ".0.bias", (F,)),
                    (p + f + ".2.weight", (E, F)), (p + f + ".2.bias", (E,))]
    return out


def _shape(t):
    return [int(s) for s in t.shape]


def check_state_dict(state, num_heads):
    """Checks names and shapes against the spec; returns the AvFusion sizes.
    Raises ValueError naming the tensor on anything missing, extra or
    misshapen."""
    def get(name, ndim):
        if name not in state:
            raise ValueError(f"tensor {name}: missing")
        s = _shape(state[name])
        if len(s) != ndim:
            raise ValueError(f"tensor {name}: expected {ndim} dimensions, found shape {s}")
        return s

    E, M = get("audio_proj.weight", 2)
    T_max = get("audio_pos", 2)[0]
    pw = get("patch_embed.weight", 4)
    if pw[1] != 3 or pw[2] != pw[3]:
        raise ValueError(f"tensor patch_embed.weight: expected shape [{E}, 3, P, P], found {pw}")
    P = pw[2]
    N = get("video_pos", 2)[0]
    layer_ids = set()
    for name in state:
        m = re.match(r"layers\.(\d+)\.", name)
        if m:
            layer_ids.add(int(m.group(1)))
    if not layer_ids:
        raise ValueError("no layers.{i}.* tensors: a model needs at least one layer")
    L = max(layer_ids) + 1
    F = get("layers.0.audio_ffn.0.weight", 2)[0]
    if num_heads < 1 or E % num_heads:
        raise ValueError(f"num_heads {num_heads}: the embedding width {E} "
                         f"(audio_proj.weight {[E, M]}) is not a multiple of it")
    if min(E, M, T_max, P, N, F) < 1:
        raise ValueError(f"empty dimension: E {E} M {M} T_max {T_max} P {P} N {N} F {F}")
    expected = canonical_shapes(E, L, F, M, P, N, T_max)
    names = {n for n, _ in expected}
    for name, shape in expected:
        if name not in state:
            raise ValueError(f"tensor {name}: missing (expected shape {list(shape)})")
        found = _shape(state[name])
        if found != list(shape):
            raise ValueError(f"tensor {name}: expected shape {list(shape)}, found {found}")
    extra = [n for n in state if n not in names]
    if extra:
        raise ValueError(f"tensor {extra[0]}: not part of avfusion-v1"
                         + (f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""))
    return dict(embed_dim=E, num_heads=num_heads, num_layers=L, ffn_dim=F,
                n_mels=M, patch_size=P, num_patches=N, max_frames=T_max)


# --------------------------------------------------------------------------
# Built-in default weights (core/prng.h), bit-identical to the C code
# --------------------------------------------------------------------------

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


# --------------------------------------------------------------------------
# safetensors, without the safetensors package
# --------------------------------------------------------------------------

_DTYPES = {"F32": np.dtype("<f4"), "F64": np.dtype("<f8"), "U8": np.dtype("u1"),
           "I64": np.dtype("<i8"), "BOOL": np.dtype("?")}


def _dtype_name(dt):
    dt = np.dtype(dt)
    for name, d in _DTYPES.items():
        if d.kind == dt.kind and d.itemsize == dt.itemsize:
            return name
    raise ValueError(f"safetensors: unsupported dtype {dt}")


def write_safetensors(path, tensors, metadata=None):
    """Writes ``tensors`` (an iterable of (name, array) or a dict, in that
    order) with ``metadata`` (dict str -> str) to ``path``."""
    items = list(tensors.items()) if isinstance(tensors, dict) else list(tensors)
    header = {}
    if metadata:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise ValueError(f"safetensors: metadata {k!r}: keys and values must be str")
        header["__metadata__"] = dict(metadata)
    blobs = []
    offset = 0
    for name, arr in items:
        if torch.is_tensor(arr):
            arr = arr.detach().cpu().numpy()
        arr = np.asarray(arr)
        if name in header:
            raise ValueError(f"safetensors: duplicate tensor {name}")
        dname = _dtype_name(arr.dtype)
        data = np.ascontiguousarray(arr.astype(_DTYPES[dname], copy=False)).tobytes()
        header[name] = {"dtype": dname, "shape": [int(s) for s in arr.shape],
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    hbytes = json.dumps(header, separators=(",", ":"), ensure_ascii=True).encode("utf-8")
    hbytes += b" " * ((8 - (8 + len(hbytes)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hbytes)))
        f.write(hbytes)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """Reads a safetensors file: returns (dict name -> numpy array in file
    order, metadata dict)."""
    with open(path, "rb") as f:
        buf = f.read()
    if len(buf) < 8:
        raise ValueError(f"{path}: too short for a safetensors file")
    (n,) = struct.unpack("<Q", buf[:8])
    if n > len(buf) - 8 or n > 100_000_000:
        raise ValueError(f"{path}: header length {n} out of bounds")
    header = json.loads(buf[8:8 + n].decode("utf-8"))
    if not isinstance(header, dict):
        raise ValueError(f"{path}: header is not a JSON object")
    meta = header.pop("__metadata__", None) or {}
    data = buf[8 + n:]
    entries = sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0])
    out = {}
    expect = 0
    for name, info in entries:
        dname = info["dtype"]
        if dname not in _DTYPES:
            raise ValueError(f"{path}: tensor {name}: unsupported dtype {dname}")
        begin, end = info["data_offsets"]
        shape = tuple(int(s) for s in info["shape"])
        dt = _DTYPES[dname]
        if begin != expect or end - begin != int(np.prod(shape, dtype=np.int64)) * dt.itemsize:
            raise ValueError(f"{path}: tensor {name}: bad data_offsets {[begin, end]}")
        expect = end
        out[name] = np.frombuffer(data[begin:end], dtype=dt).reshape(shape).copy()
    if expect != len(data):
        raise ValueError(f"{path}: data area is {len(data)} bytes, tensors cover {expect}")
    return out, meta


# --------------------------------------------------------------------------
# export / default
# --------------------------------------------------------------------------

def load_state_dict_file(path):
    """torch.load a state_dict, a whole pickled AvFusion module, or a
    checkpoint dict holding a "state_dict" entry."""
    try:
        obj = torch.load(path, map_location="cpu", weights_only=False)
    except TypeError:                      # torch without weights_only
        obj = torch.load(path, map_location="cpu")
    if isinstance(obj, nn.Module):
        obj = obj.state_dict()
    if isinstance(obj, dict) and "state_dict" in obj and isinstance(obj["state_dict"], dict):
        obj = obj["state_dict"]
    if not isinstance(obj, dict):
        raise ValueError(f"{path}: holds a {type(obj).__name__}, expected a state_dict or an AvFusion module")
    for k, v in obj.items():
        if not torch.is_tensor(v):
            raise ValueError(f"{path}: entry {k!r} is a {type(v).__name__}, not a tensor")
    return obj


def _metadata(num_heads, sizes, **opt):
    meta = {"format": FORMAT, "num_heads": str(int(num_heads))}
    for key in OPTIONAL_METADATA:
        val = opt.get(key)
        if val is not None:
            meta[key] = str(val)
    # consistency of what was given with the shapes
    if opt.get("n_mels") is not None and int(opt["n_mels"]) != sizes["n_mels"]:
        raise ValueError(f"n_mels {opt['n_mels']} disagrees with tensor audio_proj.weight "
                         f"[{sizes['embed_dim']}, {sizes['n_mels']}]")
    if opt.get("patch_size") is not None and int(opt["patch_size"]) != sizes["patch_size"]:
        raise ValueError(f"patch_size {opt['patch_size']} disagrees with tensor patch_embed.weight "
                         f"(P = {sizes['patch_size']})")
    if opt.get("window_ms") is not None:
        sr = opt.get("sample_rate") or 16000
        hop = opt.get("hop_length") or 160
        T = window_slots(float(opt["window_ms"]) * 1e6, hop, sr)
        if T > sizes["max_frames"]:
            raise ValueError(f"window_ms {opt['window_ms']} needs T = {T} slots, tensor audio_pos "
                             f"has only {sizes['max_frames']} rows")
        if T < 1:
            raise ValueError(f"window_ms {opt['window_ms']} gives no audio slot")
    return meta


def export_state_dict(state, num_heads, out, **opt):
    """Checks ``state`` against the spec and writes it as float32
    safetensors in the canonical order.  ``opt``: the OPTIONAL_METADATA
    fields (None = not written)."""
    state = {k: (v.detach().cpu() if torch.is_tensor(v) else torch.as_tensor(np.asarray(v)))
             for k, v in state.items()}
    sizes = check_state_dict(state, num_heads)
    for name, t in state.items():
        if not (torch.is_floating_point(t)):
            raise ValueError(f"tensor {name}: dtype {t.dtype} is not floating point")
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"tensor {name}: holds NaN or infinite values")
    meta = _metadata(num_heads, sizes, **opt)
    shapes = canonical_shapes(sizes["embed_dim"], sizes["num_layers"], sizes["ffn_dim"],
                              sizes["n_mels"], sizes["patch_size"], sizes["num_patches"],
                              sizes["max_frames"])
    write_safetensors(out, [(n, state[n].to(torch.float32).contiguous().numpy())
                            for n, _ in shapes], meta)
    return sizes


def _opt_from_args(args):
    return {k: getattr(args, k, None) for k in OPTIONAL_METADATA}


def cmd_export(args):
    try:
        state = load_state_dict_file(args.state_dict)
        sizes = export_state_dict(state, args.heads, args.out, **_opt_from_args(args))
    except (ValueError, OSError, RuntimeError) as e:
        print(f"avfusion export: {e}", file=sys.stderr)
        return 1
    print(f"wrote {args.out}: E {sizes['embed_dim']} H {args.heads} L {sizes['num_layers']} "
          f"F {sizes['ffn_dim']} M {sizes['n_mels']} P {sizes['patch_size']} "
          f"N {sizes['num_patches']} T_max {sizes['max_frames']}")
    return 0


def cmd_default(args):
    try:
        sd = default_state_dict(args.seed, args.embed_dim, args.heads, args.layers,
                                args.ffn_dim, args.n_mels, args.patch_size,
                                args.num_patches, args.t_max)
        opt = _opt_from_args(args)
        sizes = check_state_dict(sd, args.heads)
        meta = _metadata(args.heads, sizes, **opt)
    except ValueError as e:
        print(f"avfusion default: {e}", file=sys.stderr)
        return 1
    write_safetensors(args.out, sd, meta)
    print(f"wrote {args.out}: built-in weights, seed {args.seed}")
    return 0


# --------------------------------------------------------------------------
# Test fixtures
# --------------------------------------------------------------------------
#
# Inputs come from the project PRNG (portable, exact), not from torch's
# generator; only weights_small uses torch's own init (torch.manual_seed(7)).
# References are computed in float64 with the real torch modules and stored
# as float32.

# PRNG seeds of the fixture inputs (streams independent of the weights).
_SEED_SIGNAL = 0xA0D10
_SEED_MEL = 0x3E1
_SEED_RGB = 0x5CB

MEL_CASES = {
    "default": dict(sample_rate=16000, n_fft=400, hop=160, n_mels=64, f_min=0.0, f_max=8000.0),
    "odd": dict(sample_rate=44100, n_fft=1024, hop=441, n_mels=40, f_min=50.0, f_max=15000.0),
}

SMALL = dict(embed_dim=48, num_heads=3, num_layers=2, ffn_dim=96, n_mels=40,
             patch_size=8, num_patches=12, max_frames=40)
SMALL_META = dict(sample_rate=16000, n_fft=400, hop_length=160, n_mels=40,
                  patch_size=8, window_ms=370)
SMALL_T, SMALL_W, SMALL_H = 37, 32, 24
DEFAULT_T, DEFAULT_W, DEFAULT_H, DEFAULT_SEED = 100, 224, 224, 0

FIXTURE_FILES = ("mel.safetensors", "weights_small.safetensors",
                 "fusion_small.safetensors", "fusion_default.safetensors",
                 "pipeline_small.safetensors")


def _normalish(seed, first, n):
    """Deterministic approximately-normal float64 values (mean 0, variance
    1): sum of 4 PRNG uniforms, exact arithmetic, no libm."""
    u = prng_uniform(seed, first, 4 * n).astype(np.float64).reshape(n, 4)
    return (u.sum(axis=1) - 2.0) * math.sqrt(3.0)


def _test_signal(sample_rate):
    """About 1.03 s: three sines, PRNG noise, a stretch of exact zeros from
    0.50 s to 0.60 s (several whole frames of digital silence)."""
    n = int(round(1.03 * sample_rate))
    tones = ((440.0, 0.30), (1234.5, 0.20), (3000.0, 0.10))
    noise = _normalish(_SEED_SIGNAL + sample_rate, 0, n) * 0.02
    x = []
    for k in range(n):
        t = k / sample_rate
        x.append(sum(a * math.sin(2.0 * math.pi * f * t) for f, a in tones))
    x = np.asarray(x, dtype=np.float64) + noise
    x[int(0.50 * sample_rate):int(0.60 * sample_rate)] = 0.0
    return x.astype(np.float32)


def _fixture_mel():
    tensors, meta = [], {}
    for case, c in MEL_CASES.items():
        sig = _test_signal(c["sample_rate"])
        ref = log_mel(torch.from_numpy(sig.astype(np.float64)), c["sample_rate"], c["n_fft"],
                      c["hop"], c["n_mels"], c["f_min"], c["f_max"])
        tensors += [(f"{case}.signal", sig), (f"{case}.logmel", ref.numpy().astype(np.float32))]
        for k in ("sample_rate", "n_fft", "hop", "n_mels"):
            meta[f"{case}.{k}"] = str(c[k])
        for k in ("f_min", "f_max"):
            meta[f"{case}.{k}"] = format(float(c[k]), "g")      # "0", "8000", "50"
    return tensors, meta


def _small_state_dict():
    """torch's own init under torch.manual_seed(7), then every LayerNorm
    weight 1 + 0.1 randn, LayerNorm bias and MHA bias 0.1 randn, positional
    embeddings 0.5 randn, so that nothing is trivial (torch inits the MHA
    biases and LayerNorm to constants)."""
    torch.manual_seed(7)
    model = AvFusion(**SMALL)
    with torch.no_grad():
        for name, p in model.named_parameters():       # registration order
            if name in ("audio_pos", "video_pos"):
                p.copy_(0.5 * torch.randn_like(p))
            elif re.search(r"_norm\d\.weight$", name):
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif re.search(r"_norm\d\.bias$", name) or name.endswith("in_proj_bias") \
                    or name.endswith("out_proj.bias"):
                p.copy_(0.1 * torch.randn_like(p))
    return model.state_dict()


def _fixture_weights_small(tmpdir):
    """Produced through the export code path (state_dict -> .pt -> export)."""
    pt = os.path.join(tmpdir, "weights_small.pt")
    out = os.path.join(tmpdir, "weights_small.safetensors")
    torch.save(_small_state_dict(), pt)
    export_state_dict(load_state_dict_file(pt), SMALL["num_heads"], out, **SMALL_META)
    os.unlink(pt)
    return out


def _test_rgb(width, height):
    """Deterministic varied uint8 picture: gradients, a checker, a bright disc
    and PRNG noise, integer arithmetic only."""
    yy, xx = np.mgrid[0:height, 0:width].astype(np.int64)
    noise = (prng_u64(_SEED_RGB, 0, height * width * 3) >> np.uint64(58)).astype(np.int64)
    noise = noise.reshape(height, width, 3)                         # 0..63
    r = (xx * 255) // max(width - 1, 1)
    g = (yy * 255) // max(height - 1, 1)
    b = np.where(((xx // 4) + (yy // 4)) % 2 == 0, 40, 200)
    cx, cy, rad = (2 * width) // 3, height // 3, min(width, height) // 4
    disc = (xx - cx) ** 2 + (yy - cy) ** 2 <= rad * rad
    rgb = np.stack([r, g, b], axis=-1)
    rgb = np.where(disc[..., None], np.array([250, 230, 30]), rgb)
    rgb = np.clip(rgb + noise - 32, 0, 255)
    return rgb.astype(np.uint8)


def _masks(T):
    """full: nothing missing; partial: the first ~T/10 slots and a run in the
    middle (about a third in all); empty: everything missing."""
    partial = np.zeros(T, dtype=np.uint8)
    head = max(3, T // 10)
    partial[:head] = 1
    run = T // 3 - head + 1
    mid = T // 2 - run // 2
    partial[mid:mid + run] = 1
    return {"full": np.zeros(T, dtype=np.uint8), "partial": partial,
            "empty": np.ones(T, dtype=np.uint8)}


def _fusion_fixture(state, num_heads, sizes, T, width, height, per_head, mel_seed, extra_meta):
    """Tensors and metadata of one fusion fixture.  ``state``: float32
    numpy weights; the model runs in float64."""
    model = AvFusion(**sizes)
    model.load_state_dict({k: torch.from_numpy(np.asarray(v, dtype=np.float32)) for k, v in state.items()})
    model = model.double().eval()
    rgb = _test_rgb(width, height)
    # Grad mode stays on: nn.MultiheadAttention then takes its plain
    # (non-fused) path for every head count.
    patches = model.embed_video(torch.from_numpy(rgb)).detach().numpy().astype(np.float32)
    # The fusion reference runs on the stored float32 patches, so a test
    # that feeds `patches` to its fusion has an exact input.
    tokens = torch.from_numpy(patches.astype(np.float64))
    M = sizes["n_mels"]
    tensors = [("rgb", rgb), ("patches", patches)]
    for k, (case, mask) in enumerate(_masks(T).items()):
        mel = (_normalish(mel_seed + k, 0, T * M) * 2.0 - 4.0).reshape(T, M)
        mel[mask.astype(bool)] = 0.0
        mel = mel.astype(np.float32)
        mel_t = torch.from_numpy(mel.astype(np.float64))
        mask_t = torch.from_numpy(mask.astype(bool))
        fused, maps = model.fuse(mel_t, mask_t, tokens, per_head=False)
        tensors += [(f"{case}.mel", mel), (f"{case}.mask", mask),
                    (f"{case}.fused", fused.detach().numpy().astype(np.float32))]
        tensors += [(f"{case}.{n}", w.detach().numpy().astype(np.float32)) for n, w in maps.items()]
        if per_head:
            fused_h, maps_h = model.fuse(mel_t, mask_t, tokens, per_head=True)
            if not torch.equal(fused_h, fused):
                raise RuntimeError("fuse: per-head run changed the fused output")
            tensors += [(f"{case}.{n}.per_head", w.detach().numpy().astype(np.float32))
                        for n, w in maps_h.items()]
    meta = {"T": str(T), "E": str(sizes["embed_dim"]), "H": str(num_heads),
            "L": str(sizes["num_layers"]), "F": str(sizes["ffn_dim"]), "M": str(M),
            "P": str(sizes["patch_size"]), "N": str(sizes["num_patches"]),
            "T_max": str(sizes["max_frames"]),
            "image_width": str(width), "image_height": str(height)}
    meta.update(extra_meta)
    return tensors, meta


def write_fixtures(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)                  # same summation order every run
    try:
        tensors, meta = _fixture_mel()
        write_safetensors(os.path.join(out_dir, "mel.safetensors"), tensors, meta)

        with tempfile.TemporaryDirectory() as tmp:
            path = _fixture_weights_small(tmp)
            with open(path, "rb") as f:
                blob = f.read()
        with open(os.path.join(out_dir, "weights_small.safetensors"), "wb") as f:
            f.write(blob)
        small, small_meta = read_safetensors(os.path.join(out_dir, "weights_small.safetensors"))
        heads = int(small_meta["num_heads"])
        sizes = check_state_dict(small, heads)
        tensors, meta = _fusion_fixture(small, heads, sizes, SMALL_T, SMALL_W, SMALL_H,
                                        per_head=True, mel_seed=_SEED_MEL,
                                        extra_meta={"weights": "weights_small.safetensors"})
        write_safetensors(os.path.join(out_dir, "fusion_small.safetensors"), tensors, meta)

        d = DEFAULTS
        state = default_state_dict(DEFAULT_SEED, d["embed_dim"], d["num_heads"], d["num_layers"],
                                   d["ffn_dim"], d["n_mels"], d["patch_size"], d["num_patches"],
                                   d["max_frames"])
        tensors, meta = _fusion_fixture(state, d["num_heads"], dict(d), DEFAULT_T, DEFAULT_W,
                                        DEFAULT_H, per_head=False, mel_seed=_SEED_MEL + 100,
                                        extra_meta={"seed": str(DEFAULT_SEED),
                                                    "weights": "built-in"})
        for name, w in state.items():
            tensors.append((f"wsum.{name}", np.array([math.fsum(w.astype(np.float64).ravel().tolist())],
                                                     dtype=np.float64)))
            tensors.append((f"whead.{name}", w.ravel()[:min(8, w.size)].copy()))
        write_safetensors(os.path.join(out_dir, "fusion_default.safetensors"), tensors, meta)

        write_pipeline_fixture(os.path.join(out_dir, "pipeline_small.safetensors"),
                               os.path.join(out_dir, "weights_small.safetensors"))
    finally:
        torch.set_num_threads(threads)


# --------------------------------------------------------------------------
# Pipeline fixture: what a whole GStreamer pipeline writes
# --------------------------------------------------------------------------
#
#   appsrc (audio) ! avspectrogram ! queue ! att.audio_sink
#   appsrc (video) ! avpatchembed ! queue ! att.video_sink
#   avattention name=att attention-weights=mean ! avtensorsink location=X.npz
#
# tests/elements/test_pipeline.c regenerates the same inputs with core/prng.h
# and libm's sin() and compares the .npz with this file.

PIPELINE = dict(sample_rate=16000, n_fft=400, hop=160, n_mels=40,
                samples=19200, tone_hz=440.0, tone_amp=0.3, audio_seed=2026,
                noise_bound=0.2, width=32, height=24, fps=10, frames=12,
                video_seed=2027, window_ns=370_000_000)


def pipeline_audio(n, sample_rate, tone_hz, amp, seed, bound):
    """float32 samples: i -> float32(amp * sin(2 pi tone_hz i / rate)), the
    sine in float64 with libm's sin in exactly this operation order, plus
    avf_prng_fill_symmetric(seed, first 0, bound), added in float32."""
    tone = np.array([amp * math.sin(2.0 * math.pi * tone_hz * i / sample_rate)
                     for i in range(n)], dtype=np.float64).astype(np.float32)
    return tone + prng_symmetric(seed, 0, n, bound)


def pipeline_video(frames, width, height, seed):
    """uint8 [frames, height, width, 3]: byte k of frame f is
    avf_prng_u64(seed, f * width * height * 3 + k) >> 56."""
    size = width * height * 3
    return (prng_u64(seed, 0, frames * size) >> np.uint64(56)).astype(np.uint8) \
        .reshape(frames, height, width, 3)


def _sequential_sum(x):
    """Plain left-to-right float64 sum, as a C loop computes it."""
    s = 0.0
    for v in x.astype(np.float64).tolist():
        s += v
    return s


def pipeline_fixture(weights_path, c=PIPELINE):
    """Tensors and metadata of the pipeline fixture, computed in float64
    from the float32 inputs, stored as float32."""
    _, wmeta = read_safetensors(weights_path)
    for key, ours in (("sample_rate", c["sample_rate"]), ("n_fft", c["n_fft"]),
                      ("hop_length", c["hop"]), ("n_mels", c["n_mels"])):
        if key in wmeta and int(wmeta[key]) != ours:
            raise ValueError(f"{weights_path}: metadata {key} {wmeta[key]}, the pipeline uses {ours}")
    model = AvFusion.from_safetensors(weights_path).double().eval()
    rate, hop = c["sample_rate"], c["hop"]
    window_ns = c["window_ns"]
    T = window_slots(window_ns, hop, rate)
    if not 1 <= T <= model.audio_pos.shape[0]:
        raise ValueError(f"window {window_ns} ns gives T = {T}, audio_pos has {model.audio_pos.shape[0]} rows")

    audio = pipeline_audio(c["samples"], rate, c["tone_hz"], c["tone_amp"],
                           c["audio_seed"], c["noise_bound"])
    mel = log_mel(torch.from_numpy(audio.astype(np.float64)), rate, c["n_fft"], hop,
                  c["n_mels"], 0.0, None)                         # [K, M] float64
    K = mel.shape[0]
    # GStreamer timestamps: first sample of each frame, floor(k hop 1e9 / rate)
    mel_pts = [(k * hop * 1_000_000_000) // rate for k in range(K)]

    rgb = pipeline_video(c["frames"], c["width"], c["height"], c["video_seed"])
    video_pts = [(f * 1_000_000_000) // c["fps"] for f in range(c["frames"])]

    fused_all, mask_all, patches_all = [], [], []
    maps_all = {}
    M = c["n_mels"]
    for f, t in enumerate(video_pts):
        mel_w = torch.zeros((T, M), dtype=torch.float64)
        mask = np.ones(T, dtype=np.uint8)
        for k, s in enumerate(mel_pts):
            j = window_slot(s, t, window_ns, hop, rate)
            if j is not None:
                mel_w[j] = mel[k]
                mask[j] = 0
        # Grad mode stays on: nn.MultiheadAttention takes its plain path.
        tokens = model.embed_video(torch.from_numpy(rgb[f]))
        fused, maps = model.fuse(mel_w, torch.from_numpy(mask.astype(bool)), tokens,
                                 per_head=False)
        fused_all.append(fused.detach().numpy())
        mask_all.append(mask)
        patches_all.append(tokens.detach().numpy())
        for name, w in maps.items():
            maps_all.setdefault(name, []).append(w.detach().numpy())

    tensors = [("fused", np.stack(fused_all).astype(np.float32)),
               ("mask", np.stack(mask_all)),
               ("pts", np.asarray(video_pts, dtype=np.int64))]
    tensors += [(name, np.stack(ws).astype(np.float32)) for name, ws in maps_all.items()]
    tensors += [("audio_check", audio[:16].copy()),
                # the stage inputs, to tell which element differs
                ("logmel", mel.numpy().astype(np.float32)),
                ("mel_pts", np.asarray(mel_pts, dtype=np.int64)),
                ("patches", np.stack(patches_all).astype(np.float32))]
    meta = {"weights": os.path.basename(weights_path),
            "sample_rate": str(rate), "n_fft": str(c["n_fft"]), "hop": str(hop),
            "n_mels": str(M), "window_ns": str(window_ns), "T": str(T),
            "fps": str(c["fps"]), "width": str(c["width"]), "height": str(c["height"]),
            "frames": str(c["frames"]), "samples": str(c["samples"]),
            "tone_hz": format(c["tone_hz"], "g"), "tone_amp": format(c["tone_amp"], "g"),
            "audio_seed": str(c["audio_seed"]), "noise_bound": format(c["noise_bound"], "g"),
            "video_seed": str(c["video_seed"]),
            "audio_sum": repr(_sequential_sum(audio)),
            "video_byte_sum": str(int(rgb.sum(dtype=np.int64))),
            "mel_frames": str(K)}
    return tensors, meta


def write_pipeline_fixture(out_path, weights_path):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)                  # same summation order every run
    try:
        tensors, meta = pipeline_fixture(weights_path)
    finally:
        torch.set_num_threads(threads)
    write_safetensors(out_path, tensors, meta)


def _is_output(fname, tname):
    """Outputs are compared with a tolerance, everything else exactly."""
    if fname == "mel.safetensors":
        return tname.endswith(".logmel")
    if fname.startswith("fusion_"):
        return tname == "patches" or ".fused" in tname or ".layers." in tname
    if fname.startswith("pipeline_"):
        return tname in ("fused", "logmel", "patches") or tname.startswith("layers.")
    return False


def _compare(fname, ref_path, new_path, tol=1e-6):
    errors = []
    ref, ref_meta = read_safetensors(ref_path)
    new, new_meta = read_safetensors(new_path)
    if ref_meta != new_meta:
        keys = sorted(set(ref_meta) | set(new_meta))
        diff = [k for k in keys if ref_meta.get(k) != new_meta.get(k)]
        errors.append(f"metadata differs at {diff}")
    for name in ref:
        if name not in new:
            errors.append(f"{name}: in the committed file, not regenerated")
    for name in new:
        if name not in ref:
            errors.append(f"{name}: regenerated, missing from the committed file")
    for name, a in ref.items():
        b = new.get(name)
        if b is None:
            continue
        if a.dtype != b.dtype or a.shape != b.shape:
            errors.append(f"{name}: {a.dtype}{list(a.shape)} vs regenerated {b.dtype}{list(b.shape)}")
            continue
        if _is_output(fname, name):
            af, bf = a.astype(np.float64), b.astype(np.float64)
            an, bn = np.isnan(af), np.isnan(bf)
            if not np.array_equal(an, bn):
                errors.append(f"{name}: NaN in different places")
                continue
            d = np.abs(af[~an] - bf[~an])
            m = float(d.max()) if d.size else 0.0
            if m > tol:
                errors.append(f"{name}: max abs diff {m:.3g} > {tol:g}")
        else:
            if a.tobytes() != b.tobytes():
                errors.append(f"{name}: differs (compared exactly)")
    return errors, len(ref)


def check_fixtures(fix_dir):
    ok, bad = 0, 0
    if not _prng_selftest(verbose=False):
        print("prng: numpy generator disagrees with the reference", file=sys.stderr)
        bad += 1
    with tempfile.TemporaryDirectory() as tmp:
        write_fixtures(tmp)
        for fname in FIXTURE_FILES:
            ref_path = os.path.join(fix_dir, fname)
            if not os.path.exists(ref_path):
                print(f"{fname}: FAIL: missing from {fix_dir}")
                bad += 1
                continue
            errors, n = _compare(fname, ref_path, os.path.join(tmp, fname))
            if errors:
                bad += 1
                print(f"{fname}: FAIL")
                for e in errors[:20]:
                    print(f"  {e}")
                if len(errors) > 20:
                    print(f"  ... {len(errors) - 20} more")
            else:
                ok += 1
                print(f"{fname}: ok ({n} tensors)")
    print(f"fixtures: {ok} passed, {bad} failed")
    return 0 if bad == 0 else 1


# --------------------------------------------------------------------------
# self test
# --------------------------------------------------------------------------

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


def cmd_selftest(args):
    ok = _prng_selftest()
    print(f"prng numpy vs python ints: {'ok' if ok else 'FAIL'}")
    # forward (batched) against fuse (one window) on the small config
    torch.manual_seed(1)
    model = AvFusion(**SMALL).double().eval()
    T, M = SMALL_T, SMALL["n_mels"]
    rgb = torch.from_numpy(_test_rgb(SMALL_W, SMALL_H))
    tok = model.embed_video(rgb)
    mel = torch.randn(3, T, M, dtype=torch.float64)
    masks = torch.stack([torch.from_numpy(m.astype(bool)) for m in _masks(T).values()])
    batched = model(mel, masks, tok.expand(3, -1, -1))
    for b in range(3):
        single, _ = model.fuse(mel[b], masks[b], tok)
        d = float((batched[b] - single).abs().max())
        good = d < 1e-12
        ok &= good
        print(f"forward vs fuse, sample {b}: max abs diff {d:.3g} {'ok' if good else 'FAIL'}")
    return 0 if ok else 1


# --------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------

def _add_meta_options(p, sizes=True):
    p.add_argument("--sample-rate", dest="sample_rate", type=int, help="metadata sample_rate (Hz)")
    p.add_argument("--n-fft", dest="n_fft", type=int, help="metadata n_fft")
    p.add_argument("--hop-length", dest="hop_length", type=int, help="metadata hop_length")
    p.add_argument("--window-ms", dest="window_ms", type=int, help="metadata window_ms")
    if sizes:
        p.add_argument("--n-mels", dest="n_mels", type=int,
                       help="metadata n_mels (checked against the weights)")
        p.add_argument("--patch-size", dest="patch_size", type=int,
                       help="metadata patch_size (checked against the weights)")


def cmd_fixtures(args):
    write_fixtures(args.out)
    for f in FIXTURE_FILES:
        path = os.path.join(args.out, f)
        print(f"wrote {path} ({os.path.getsize(path)} bytes)")
    return 0


def cmd_pipeline_fixture(args):
    out = os.path.join(args.out, "pipeline_small.safetensors")
    weights = args.weights or os.path.join(args.out, "weights_small.safetensors")
    try:
        os.makedirs(args.out, exist_ok=True)
        write_pipeline_fixture(out, weights)
    except (ValueError, OSError) as e:
        print(f"avfusion pipeline-fixture: {e}", file=sys.stderr)
        return 1
    print(f"wrote {out} ({os.path.getsize(out)} bytes)")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="avfusion.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("export", help="export a trained state_dict to an avfusion-v1 safetensors file")
    p.add_argument("--state-dict", required=True, help="a .pt file (state_dict or pickled AvFusion)")
    p.add_argument("--heads", type=int, required=True, help="number of attention heads H")
    p.add_argument("--out", required=True, help="output .safetensors path")
    _add_meta_options(p)
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("default", help="write the built-in seeded weights")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.add_argument("--embed-dim", type=int, default=DEFAULTS["embed_dim"])
    p.add_argument("--heads", type=int, default=DEFAULTS["num_heads"])
    p.add_argument("--layers", type=int, default=DEFAULTS["num_layers"])
    p.add_argument("--ffn-dim", type=int, default=DEFAULTS["ffn_dim"])
    p.add_argument("--n-mels", dest="n_mels", type=int, default=DEFAULTS["n_mels"],
                   help="M, mel bands (also written as metadata n_mels)")
    p.add_argument("--patch-size", dest="patch_size", type=int, default=DEFAULTS["patch_size"],
                   help="P, patch size (also written as metadata patch_size)")
    p.add_argument("--num-patches", type=int, default=DEFAULTS["num_patches"], help="N")
    p.add_argument("--t-max", type=int, default=DEFAULTS["max_frames"], help="T_max")
    _add_meta_options(p, sizes=False)
    p.set_defaults(func=cmd_default)

    p = sub.add_parser("fixtures", help="write the test fixtures")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_fixtures)

    p = sub.add_parser("pipeline-fixture",
                       help="write the whole-pipeline reference (pipeline_small.safetensors)")
    p.add_argument("--out", required=True, help="fixture directory")
    p.add_argument("--weights", help="weights file (default: OUT/weights_small.safetensors)")
    p.set_defaults(func=cmd_pipeline_fixture)

    p = sub.add_parser("check-fixtures", help="regenerate the fixtures and compare")
    p.add_argument("--dir", required=True)
    p.set_defaults(func=lambda a: check_fixtures(a.dir))

    p = sub.add_parser("selftest", help="PRNG and fuse/forward self checks")
    p.set_defaults(func=cmd_selftest)

    args = ap.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
