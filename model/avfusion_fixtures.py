# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The test fixtures of avfusion-v1: the PyTorch references in tests/fixtures
that the C tests compare with, written (``fixtures``, ``pipeline-fixture``)
and regenerated and compared (``check-fixtures``), and the model's
``selftest``.

Split out of model/avfusion.py, which re-exports these names and runs
these commands (``model/avfusion.py fixtures|pipeline-fixture|
check-fixtures|selftest``).  This module imports the model from avfusion,
and avfusion imports this module at its bottom: import avfusion (or this
module after it).
"""

import math
import os
import re
import sys
import tempfile

import numpy as np
import torch

from avfusion import (DEFAULTS, AvFusion, check_state_dict, export_state_dict,
                      load_state_dict_file, log_mel, window_slot, window_slots)
from avfusion_default import (_prng_selftest, default_state_dict, prng_symmetric,
                              prng_u64, prng_uniform)
from safetensors_io import read_safetensors, write_safetensors


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
        o, b = compare_fixture_files(fix_dir, tmp, FIXTURE_FILES, _compare)
    ok, bad = ok + o, bad + b
    print(f"fixtures: {ok} passed, {bad} failed")
    return 0 if bad == 0 else 1


def compare_fixture_files(fix_dir, new_dir, files, compare):
    """Compares each of ``files`` in ``fix_dir`` (committed) with the one
    just written in ``new_dir`` by ``compare(fname, ref, new)`` ->
    (errors, tensors), printing a line per file; returns (ok, bad)."""
    ok = bad = 0
    for fname in files:
        ref_path = os.path.join(fix_dir, fname)
        if not os.path.exists(ref_path):
            print(f"{fname}: FAIL: missing from {fix_dir}")
            bad += 1
            continue
        errors, n = compare(fname, ref_path, os.path.join(new_dir, fname))
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
    return ok, bad


# --------------------------------------------------------------------------
# self test and the command functions
# --------------------------------------------------------------------------

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
