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
  C code (core/prng.h), and the PRNG: in avfusion_default.py
* ``write_safetensors`` / ``read_safetensors``  spec section 4 files, without
  the ``safetensors`` package: in safetensors_io.py
* the test fixtures and ``selftest``: in avfusion_fixtures.py

This module re-exports the names of those three, so ``avfusion.X`` works
for every one of them.

Command line (run ``model/avfusion.py -h``)::

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
import math
import re
import sys

import numpy as np
import torch
import torch.nn as nn
import torchaudio

# Run as a script this file is __main__; register it as avfusion too, so the
# modules split out of it (which import avfusion) share this one copy.
if __name__ == "__main__":
    sys.modules.setdefault("avfusion", sys.modules[__name__])

from avfusion_default import (_GOLDEN, _MASK64, _MIX1, _MIX2, _fan_in,  # noqa: E402,F401
                              _prng_selftest, default_state_dict, prng_symmetric,
                              prng_u64, prng_uniform, splitmix64_py)
from safetensors_io import (_DTYPES, _dtype_name, read_safetensors,  # noqa: E402,F401
                            write_safetensors)

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


# The fixtures and selftest (avfusion_fixtures.py), re-exported; imported last
# because that module imports the model above from avfusion.
from avfusion_fixtures import (DEFAULT_H, DEFAULT_SEED, DEFAULT_T,  # noqa: E402,F401
                               DEFAULT_W, FIXTURE_FILES, MEL_CASES, PIPELINE,
                               SMALL, SMALL_H, SMALL_META, SMALL_T, SMALL_W,
                               _SEED_MEL, _SEED_RGB, _SEED_SIGNAL, _compare,
                               _fixture_mel, _fixture_weights_small,
                               _fusion_fixture, _is_output, _masks, _normalish,
                               _sequential_sum, _small_state_dict, _test_rgb,
                               _test_signal, check_fixtures, cmd_fixtures,
                               cmd_pipeline_fixture, cmd_selftest, pipeline_audio,
                               pipeline_fixture, pipeline_video, write_fixtures,
                               write_pipeline_fixture)


if __name__ == "__main__":
    sys.exit(main())
