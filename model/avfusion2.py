#!/usr/bin/python3
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""avfusion-v2 in PyTorch: avfusion-v1 plus a rhythm stage that lets the
video half see time (docs/avfusion-v2.md, formula by formula).

What v2 adds to v1 (model/avfusion.py):

* ``AvFusionV2.embed_video``: per frame, the v1 patch tokens ``[N, E]`` and
  the patch's *rhythm features* ``r_n`` ``[N, D]`` side by side, ``[N, E + D]``
  (element ``avpatchembed``, which emits the first E columns as its ``[N, E]``
  tensor and the last D in a ``GstAvRhythmMeta`` on the same buffer).  ``r_n`` is a linear map of the patch's pixels
  average-pooled by S x S: ``Conv2d(3, D, P/S, stride=P/S)(avg_pool2d(x, S))``.
* ``bin_frames``: which earlier frame shows each rhythm bin of the window
  (element ``avattention`` keeps that history).
* ``AvFusionV2.rhythm_term``: per patch and per lag (the video may show an
  event up to a few bins after the audio has it: encoders and muxers shift
  one against the other), the weighted correlation over the window's K bins
  between the patch's rhythm features and the audio's rhythm features
  ``u_j = audio_rhythm(mel_j)`` (averaged per bin), mapped to E by
  ``rhythm_proj`` and added to the patch token before the v1 layers.
  A patch that swells when the sound is loud gets a token that says so,
  whatever its colour: two look-alikes differ here and nowhere else.

Everything after the tokens is avfusion-v1 unchanged.
"""

import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as Fn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import avfusion  # noqa: E402

FORMAT = "avfusion-v2"

# v2 sizes: D rhythm features per patch, C audio rhythm features, S pooling
# of the pixels before the rhythm map, G audio slots per bin, the lags
# lag_min .. lag_min + num_lags - 1 (in bins; positive: the video later).
V2_DEFAULTS = dict(rhythm_dim=8, audio_rhythm_dim=8, rhythm_pool=4, bin_slots=4,
                   num_lags=5, lag_min=-1)

# eps of the correlation's denominator (docs/avfusion-v2.md section 3.3)
RHYTHM_EPS = 1e-3


def v2_shapes(embed_dim, n_mels, patch_size, rhythm_dim, audio_rhythm_dim, rhythm_pool,
              num_bins, num_lags=1):
    """(name, shape) of the tensors v2 adds, in their file order (after v1's)."""
    E, M, D, C, K, L = embed_dim, n_mels, rhythm_dim, audio_rhythm_dim, num_bins, num_lags
    Q = patch_size // rhythm_pool
    return [("rhythm_embed.weight", (D, 3, Q, Q)), ("rhythm_embed.bias", (D,)),
            ("audio_rhythm.weight", (C, M)), ("audio_rhythm.bias", (C,)),
            ("rhythm_bin_weight", (L, K)),
            ("rhythm_proj.weight", (E, L * D * C))]


# --------------------------------------------------------------------------
# the history: which earlier frame shows each bin
# --------------------------------------------------------------------------

def bin_centres(t, window_ns, bin_slots, hop, sample_rate, num_bins, lag=0):
    """c_{k+lag} = t - window + floor((2(k + lag) + 1) * G * hop * 1e9 / (2 * rate)),
    int ns (floor also for a negative numerator), k = 0 .. K-1."""
    t, w = int(t), int(window_ns)
    return [t - w + ((2 * (k + lag) + 1) * bin_slots * hop * 1_000_000_000) // (2 * sample_rate)
            for k in range(num_bins)]


def cover_ends(pts, dur, next_pts):
    """End of the time each frame shows: min(pts + duration, next frame's
    pts); a frame without a duration (None or negative) shows until the
    next frame.  ``next_pts`` is the timestamp of the frame after the last."""
    ends = []
    for i, p in enumerate(pts):
        nxt = pts[i + 1] if i + 1 < len(pts) else next_pts
        d = dur[i] if dur is not None else None
        ends.append(min(int(p) + int(d), int(nxt)) if d is not None and d >= 0 else int(nxt))
    return ends


def bin_frames(t, hist_pts, hist_dur, window_ns, bin_slots, hop, sample_rate, num_bins,
               lag=0):
    """For the frame at ``t`` and the earlier frames of its history
    (timestamps ``hist_pts`` ascending, all < t, durations ``hist_dur``):
    [K] index of the history frame that shows the centre c_{k+lag} of each
    bin k, -1 when none does (stream start, a gap, a centre at or after t)."""
    ends = cover_ends(hist_pts, hist_dur, t)
    out = []
    for c in bin_centres(t, window_ns, bin_slots, hop, sample_rate, num_bins, lag):
        found = -1
        if c < int(t):
            for i in range(len(hist_pts) - 1, -1, -1):
                if int(hist_pts[i]) <= c < ends[i]:
                    found = i
                    break
        out.append(found)
    return out


# --------------------------------------------------------------------------
# the model
# --------------------------------------------------------------------------

class AvFusionV2(avfusion.AvFusion):
    """avfusion-v2.  ``state_dict()`` names are those of docs/avfusion-v2.md."""

    def __init__(self, embed_dim=64, num_heads=4, num_layers=2, ffn_dim=128,
                 n_mels=64, patch_size=16, num_patches=196, max_frames=100,
                 rhythm_dim=8, audio_rhythm_dim=8, rhythm_pool=4, bin_slots=4,
                 num_bins=25, num_lags=5, lag_min=-1, neighbourhood=1, neighbourhood_from=0):
        super().__init__(embed_dim, num_heads, num_layers, ffn_dim, n_mels, patch_size,
                         num_patches, max_frames)
        if patch_size % rhythm_pool:
            raise ValueError(f"rhythm_pool {rhythm_pool} does not divide patch_size {patch_size}")
        if num_bins * bin_slots > max_frames:
            raise ValueError(f"{num_bins} bins of {bin_slots} slots exceed audio_pos's "
                             f"{max_frames} rows")
        self.rhythm_dim, self.audio_rhythm_dim = rhythm_dim, audio_rhythm_dim
        self.rhythm_pool, self.bin_slots, self.num_bins = rhythm_pool, bin_slots, num_bins
        self.num_lags, self.lag_min = num_lags, lag_min
        if neighbourhood < 1 or neighbourhood % 2 == 0:
            raise ValueError(f"rhythm_neighbourhood {neighbourhood}: expected an odd number >= 1")
        self.neighbourhood = neighbourhood
        if not 0 <= neighbourhood_from < rhythm_dim:
            raise ValueError(f"rhythm_neighbourhood_from {neighbourhood_from}: expected 0 to "
                             f"{rhythm_dim - 1} (rhythm_dim {rhythm_dim})")
        self.neighbourhood_from = neighbourhood_from
        Q = patch_size // rhythm_pool
        self.rhythm_embed = nn.Conv2d(3, rhythm_dim, Q, stride=Q)
        self.audio_rhythm = nn.Linear(n_mels, audio_rhythm_dim)
        self.rhythm_bin_weight = nn.Parameter(torch.full((num_lags, num_bins), 1.0))
        self.rhythm_proj = nn.Linear(num_lags * rhythm_dim * audio_rhythm_dim, embed_dim,
                                     bias=False)

    # -- loading ---------------------------------------------------------

    @classmethod
    def from_state_dict(cls, state, num_heads, bin_slots, lag_min, neighbourhood=1,
                        neighbourhood_from=0):
        sizes = check_state_dict(state, num_heads, bin_slots, lag_min, neighbourhood,
                                 neighbourhood_from)
        model = cls(**sizes)
        model.load_state_dict({k: torch.as_tensor(np.asarray(v)) if not torch.is_tensor(v) else v
                               for k, v in state.items()})
        return model

    @classmethod
    def from_safetensors(cls, path):
        tensors, meta = avfusion.read_safetensors(path)
        if meta.get("format") != FORMAT:
            raise ValueError(f"{path}: __metadata__ format is {meta.get('format')!r}, "
                             f"expected {FORMAT!r}")
        for key in ("num_heads", "rhythm_bin_slots", "rhythm_lag_min"):
            if key not in meta:
                raise ValueError(f"{path}: __metadata__ has no {key}")
        return cls.from_state_dict(tensors, int(meta["num_heads"]), int(meta["rhythm_bin_slots"]),
                                   int(meta["rhythm_lag_min"]),
                                   int(meta.get("rhythm_neighbourhood", "1")),
                                   int(meta.get("rhythm_neighbourhood_from", "0")))

    # -- avpatchembed ------------------------------------------------------

    def _pixels(self, rgb):
        rgb = torch.as_tensor(rgb)
        if rgb.dim() != 4 or rgb.shape[-1] != 3:
            raise ValueError(f"expected [B, H, W, 3] RGB, got {list(rgb.shape)}")
        dtype = self.patch_embed.weight.dtype
        x = rgb.permute(0, 3, 1, 2).to(dtype) / 255.0
        return (x - self.pixel_mean.to(dtype)) / self.pixel_std.to(dtype)

    def rhythm_pixels(self, rgb):
        """The normalised picture average-pooled by S: [B, H, W, 3] uint8 ->
        [B, 3, H/S, W/S] (what the rhythm map reads; training caches it)."""
        return Fn.avg_pool2d(self._pixels(rgb), self.rhythm_pool)

    def rhythm_from_pooled(self, pooled):
        """[B, 3, H/S, W/S] -> rhythm features [B, N, D]: rhythm_embed per
        patch, then (rhythm_neighbourhood k > 1) features d >= f
        (rhythm_neighbourhood_from f, 0: all) the mean over the k x k patches
        around each patch that lie inside the grid; those below f stay the
        patch's own."""
        r = self.rhythm_embed(pooled)                                # [B, D, rows, cols]
        k, f = self.neighbourhood, self.neighbourhood_from
        if k > 1:
            mean = Fn.avg_pool2d(r[:, f:], k, stride=1, padding=k // 2, count_include_pad=False)
            r = torch.cat([r[:, :f], mean], 1) if f else mean
        return r.flatten(2).transpose(1, 2)

    def embed_video(self, rgb):
        """One frame [H, W, 3] -> [N, E + D] (or a batch): the v1 tokens
        (patch_embed + video_pos) then the rhythm features.  avpatchembed
        gives the first E columns as its [N, E] tensor and the last D as the
        rows of the buffer's GstAvRhythmMeta."""
        rgb = torch.as_tensor(rgb)
        single = rgb.dim() == 3
        if single:
            rgb = rgb.unsqueeze(0)
        e = super().embed_video(rgb)
        r = self.rhythm_from_pooled(self.rhythm_pixels(rgb))
        out = torch.cat([e, r], dim=-1)
        return out[0] if single else out

    # -- avattention: the rhythm term --------------------------------------

    def rhythm_term(self, mel, mask, hist, hist_missing):
        """mel [B, T, M], mask [B, T] (True = missing slot), hist
        [B, Λ, K, N, D] the rhythm features of the frame showing bin k at
        lag λ (any finite values where missing), hist_missing [B, Λ, K] bool
        -> the term added to the patch tokens, [B, N, E]."""
        mask = torch.as_tensor(mask).to(torch.bool)
        hist_missing = torch.as_tensor(hist_missing).to(torch.bool)
        B, T, _ = mel.shape
        K, G, L = self.num_bins, self.bin_slots, self.num_lags
        if T != K * G:
            raise ValueError(f"the window has {T} slots; v2 needs {K} bins of {G} = {K * G}")
        u = self.audio_rhythm(mel)                                   # [B, T, C]
        C = u.shape[-1]
        keep = (~mask).to(u.dtype).view(B, K, G, 1)
        cnt = keep.sum(dim=2)                                        # [B, K, 1]
        U = (u.view(B, K, G, C) * keep).sum(dim=2) / cnt.clamp(min=1.0)
        feats = []
        for lag in range(L):
            valid = (~hist_missing[:, lag]) & (cnt[..., 0] > 0)
            vf = valid.to(u.dtype)                                   # [B, K]
            nv = vf.sum(dim=1)
            nvc = nv.clamp(min=1.0)
            Ubar = (U * vf[..., None]).sum(dim=1) / nvc[:, None]     # [B, C]
            h = hist[:, lag] * vf[:, :, None, None]
            Rbar = h.sum(dim=1) / nvc[:, None, None]                 # [B, N, D]
            Rc = (h - Rbar[:, None]) * vf[:, :, None, None]          # [B, K, N, D]
            Uc = (U - Ubar[:, None]) * vf[..., None]                 # [B, K, C]
            cov = torch.einsum("bknd,bkc->bndc", Rc,
                               Uc * self.rhythm_bin_weight[lag][None, :, None]) / nvc[:, None, None, None]
            var_r = (Rc * Rc).sum(dim=1) / nvc[:, None, None]        # [B, N, D]
            var_u = (Uc * Uc).sum(dim=1) / nvc[:, None]              # [B, C]
            S = cov / torch.sqrt(var_r[..., None] * var_u[:, None, None, :] + RHYTHM_EPS)
            feats.append(S * (nv >= 2).to(u.dtype)[:, None, None, None])
        return self.rhythm_proj(torch.cat([f.flatten(2) for f in feats], dim=-1))

    def tokens(self, video_tokens, mel, mask, hist, hist_missing):
        """The v2 patch tokens [B, N, E] from embed_video's [B, N, E + D]
        (avpatchembed's [B, N, E] tensors alone do as well: only the first E
        columns are read)."""
        E = self.embed_dim
        return video_tokens[..., :E] + self.rhythm_term(mel, mask, hist, hist_missing)

    def fuse(self, mel, mask, video_tokens, hist, hist_missing, per_head=False):
        """One window: mel [T, M], mask [T], video_tokens [N, E + D] (the
        current frame, embed_video's; or avpatchembed's [N, E]), hist [Λ, K, N, D], hist_missing [Λ, K].  Same outputs
        as AvFusion.fuse."""
        mask = torch.as_tensor(mask).to(torch.bool)
        hist_missing = torch.as_tensor(hist_missing).to(torch.bool)
        v = self.tokens(video_tokens[None], mel[None], mask[None], hist[None],
                        hist_missing[None])[0]
        return super().fuse(mel, mask, v, per_head=per_head)

    def forward(self, mel, mask, video_tokens, hist, hist_missing):
        return super().forward(mel, mask, self.tokens(video_tokens, mel, mask, hist, hist_missing))


# --------------------------------------------------------------------------
# names, shapes, files
# --------------------------------------------------------------------------

def check_state_dict(state, num_heads, bin_slots, lag_min, neighbourhood=1, neighbourhood_from=0):
    """v1's checks on the v1 tensors, then the v2 tensors; returns the
    AvFusionV2 sizes.  ValueError naming the tensor on anything wrong."""
    v2_names = {n for n, _ in v2_shapes(1, 1, 1, 1, 1, 1, 1, 1)}
    v1 = {k: v for k, v in state.items() if k not in v2_names}
    sizes = avfusion.check_state_dict(v1, num_heads)
    E, M, P = sizes["embed_dim"], sizes["n_mels"], sizes["patch_size"]
    for n in v2_names:
        if n not in state:
            raise ValueError(f"tensor {n}: missing (avfusion-v2)")
    rw = avfusion._shape(state["rhythm_embed.weight"])
    if len(rw) != 4 or rw[1] != 3 or rw[2] != rw[3] or rw[2] < 1 or P % rw[2]:
        raise ValueError(f"tensor rhythm_embed.weight: expected [D, 3, Q, Q] with Q dividing "
                         f"the patch size {P}, found {rw}")
    D, Q = rw[0], rw[2]
    aw = avfusion._shape(state["audio_rhythm.weight"])
    if len(aw) != 2:
        raise ValueError(f"tensor audio_rhythm.weight: expected [C, {M}], found {aw}")
    C = aw[0]
    kw = avfusion._shape(state["rhythm_bin_weight"])
    if len(kw) != 2 or min(kw) < 1:
        raise ValueError(f"tensor rhythm_bin_weight: expected [lags, K], found {kw}")
    L, K = kw
    if bin_slots < 1 or K * bin_slots > sizes["max_frames"]:
        raise ValueError(f"rhythm_bin_slots {bin_slots} x {K} bins (rhythm_bin_weight) exceed "
                         f"audio_pos's {sizes['max_frames']} rows")
    if abs(lag_min) > K or abs(lag_min + L - 1) > K:
        raise ValueError(f"rhythm_lag_min {lag_min} with {L} lags (rhythm_bin_weight) reaches "
                         f"past the window's {K} bins")
    for name, shape in v2_shapes(E, M, P, D, C, P // Q, K, L):
        found = avfusion._shape(state[name])
        if found != list(shape):
            raise ValueError(f"tensor {name}: expected shape {list(shape)}, found {found}")
    grid = int(math.ceil(sizes["num_patches"] ** 0.5))
    if neighbourhood < 1 or neighbourhood % 2 == 0 or neighbourhood > 2 * grid - 1:
        raise ValueError(f"rhythm_neighbourhood {neighbourhood}: expected an odd number from 1 "
                         f"to {2 * grid - 1}")
    if neighbourhood_from and not (neighbourhood > 1 and 0 < neighbourhood_from < D):
        raise ValueError(f"rhythm_neighbourhood_from {neighbourhood_from}: expected 1 to {D - 1} "
                         f"(rhythm_dim {D}) with a rhythm_neighbourhood above 1, or 0")
    sizes.update(rhythm_dim=D, audio_rhythm_dim=C, rhythm_pool=P // Q, bin_slots=bin_slots,
                 num_bins=K, num_lags=L, lag_min=lag_min, neighbourhood=neighbourhood,
                 neighbourhood_from=neighbourhood_from)
    return sizes


def export_state_dict(state, num_heads, bin_slots, lag_min, out, metadata=None, neighbourhood=1,
                      neighbourhood_from=0, **opt):
    """Checks ``state`` and writes it as float32 safetensors: v1's tensors
    in v1's order, then v2's; metadata format avfusion-v2 with
    rhythm_bin_slots and rhythm_lag_min, the OPTIONAL_METADATA fields of
    ``opt`` and any extra ``metadata`` (str -> str)."""
    state = {k: (v.detach().cpu() if torch.is_tensor(v) else torch.as_tensor(np.asarray(v)))
             for k, v in state.items()}
    sizes = check_state_dict(state, num_heads, bin_slots, lag_min, neighbourhood,
                             neighbourhood_from)
    for name, t in state.items():
        if not torch.is_floating_point(t):
            raise ValueError(f"tensor {name}: dtype {t.dtype} is not floating point")
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"tensor {name}: holds NaN or infinite values")
    v1_sizes = {k: sizes[k] for k in ("embed_dim", "num_heads", "num_layers", "ffn_dim",
                                      "n_mels", "patch_size", "num_patches", "max_frames")}
    meta = avfusion._metadata(num_heads, v1_sizes, **opt)
    meta["format"] = FORMAT
    meta["rhythm_bin_slots"] = str(int(bin_slots))
    meta["rhythm_lag_min"] = str(int(lag_min))
    if neighbourhood != 1:
        meta["rhythm_neighbourhood"] = str(int(neighbourhood))
    if neighbourhood_from:
        meta["rhythm_neighbourhood_from"] = str(int(neighbourhood_from))
    if opt.get("window_ms") is not None:
        T = avfusion.window_slots(float(opt["window_ms"]) * 1e6, opt.get("hop_length") or 160,
                                  opt.get("sample_rate") or 16000)
        if T != sizes["num_bins"] * bin_slots:
            raise ValueError(f"window_ms {opt['window_ms']} gives {T} slots; the rhythm bins "
                             f"need {sizes['num_bins']} x {bin_slots}")
    meta.update(metadata or {})
    names = [n for n, _ in avfusion.canonical_shapes(
        sizes["embed_dim"], sizes["num_layers"], sizes["ffn_dim"], sizes["n_mels"],
        sizes["patch_size"], sizes["num_patches"], sizes["max_frames"])]
    names += [n for n, _ in v2_shapes(sizes["embed_dim"], sizes["n_mels"], sizes["patch_size"],
                                      sizes["rhythm_dim"], sizes["audio_rhythm_dim"],
                                      sizes["rhythm_pool"], sizes["num_bins"], sizes["num_lags"])]
    avfusion.write_safetensors(out, [(n, state[n].to(torch.float32).contiguous().numpy())
                                     for n in names], meta)
    return sizes

