#!/usr/bin/python3
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Trains avfusion-v1 on the sounding-objects world and exports the weights.

One command, seeded, resumable::

    model/train.py --out models/sounding-objects-v1.safetensors

1. *prepare*: renders training scenes (model/soworld.py), encodes each into a
   clip (H.264/AAC in MP4 or VP8/Vorbis in WebM, 16:9, 4:3 and other frame
   sizes), then decodes it again through GStreamer exactly as a pipeline
   does: ``decodebin``, ``audioconvert ! audioresample`` to 16 kHz and the
   plugin's own ``avspectrogram`` for the log-mel frames, ``videoconvert !
   videoscale`` to 224x224 RGB for the picture.  Each scene lands in
   ``WORK/data/scene-SEED.npz``; scenes already there are not made again.
2. *train*: the reference model of model/avfusion.py (so the export gives the
   same numbers in the plugin), on the causal 1 s windows the element
   builds (masked slots at the start and in gaps).  Losses: the last
   layer's audio-cross map (mean over heads and unmasked slots, exactly what
   ``gst_av_attention_meta_get_strongest_patch`` sums) against the truth
   boxes, and against a flat map when nothing visible sounds; and a kind
   classifier on the fused vector (auxiliary, not exported).  A checkpoint
   ``WORK/checkpoint.pt`` is written every ``--checkpoint-every`` steps and
   on SIGTERM/SIGINT; a new run resumes from it.
3. *threshold*: on validation scenes (seeds never trained on) picks the
   strongest-patch weight that best separates "a visible object sounds" from
   silence and off-screen sounds, stored as ``visible_threshold``.
4. *export*: ``avfusion.py``'s exporter, with metadata saying what the model
   is and how it was made (script, seed, steps, scenes).

Needs the plugin built (``--plugin-path``, default build-ci/elements, then
build/elements) and Debian's python3-torch, python3-torchaudio, python3-gi,
python3-gst-1.0.
"""

import argparse
import json
import math
import multiprocessing as mp
import os
import random
import signal
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import soworld  # noqa: E402

MODEL_SIDE = 224
PATCH = 16
GRID = MODEL_SIDE // PATCH          # 14
N_PATCHES = GRID * GRID             # 196
SAMPLE_RATE = 16000
HOP = 160
HOP_NS = HOP * 1e9 / SAMPLE_RATE    # 10 ms
WINDOW_NS = 1_000_000_000
T_SLOTS = 100
N_KINDS = 6

# frame sizes and rates of the training scenes: 16:9, 4:3 and others
SIZES = [(640, 360), (640, 360), (854, 480), (1280, 720), (960, 540),
         (640, 480), (480, 360), (800, 600), (320, 240),
         (480, 480), (400, 300), (720, 576)]
CODECS = [".mp4", ".webm"]


def find_plugin_path(given=None):
    cands = [given] if given else [os.path.join(ROOT, "build-ci", "elements"),
                                   os.path.join(ROOT, "build", "elements")]
    for c in cands:
        if c and os.path.isdir(c) and any(f.startswith("libgstavattention") for f in os.listdir(c)):
            return os.path.abspath(c)
    raise SystemExit(f"no built plugin in {cands}; build first (tools/run-tests or "
                     f"meson setup build && ninja -C build)")


# --------------------------------------------------------------------------
# decoding through the real pipeline
# --------------------------------------------------------------------------

# avpatchembed's sink formats: offered the same choice, videoconvert and
# videoscale negotiate the same format as in front of the element (xBGR from
# decodebin's I420), and videoscale scales each format its own way
PATCH_FORMATS = "{ RGB, BGR, RGBx, BGRx, xRGB, xBGR, RGBA, BGRA, ARGB, ABGR }"


def decode_clip(path, plugin_path, side=MODEL_SIDE, with_durations=False):
    """Decodes ``path`` as the project's pipelines do: ``videoscale`` squashes
    the picture to side x side (it changes the pixel aspect ratio, as it does
    in front of avpatchembed, which accepts any), never letterboxes it, in
    the pixel format avpatchembed would get; the truth boxes (box_patch_mass)
    are squashed the same way.  Returns frames uint8
    [F, side, side, 3], their times (ns), (with_durations: their durations,
    -1 where unknown,) log-mel frames [Fm, 64] from avspectrogram and their
    times.

    The times are *running times* (each buffer's PTS through its own
    stream's segment), which is what avattention places the audio window
    and the video history by.  They differ from the PTS where a container
    starts one stream's segment later than the other's: H.264 with
    B-frames in MP4 (mp4mux) starts the video segment, and its first PTS,
    two frames in (an edit list), so its PTS run two frames ahead of the
    sound's while its running times do not."""
    os.environ["GST_PLUGIN_PATH"] = plugin_path
    import gi
    gi.require_version("Gst", "1.0")
    from gi.repository import Gst
    Gst.init(None)
    desc = (f"filesrc location=\"{path}\" ! decodebin name=d "
            f"d. ! queue ! videoconvert ! videoscale ! video/x-raw,format={PATCH_FORMATS},"
            f"width={side},height={side} ! appsink name=v sync=false "
            f"d. ! queue ! audioconvert ! audioresample ! audio/x-raw,format=F32LE,"
            f"rate={SAMPLE_RATE} ! avspectrogram ! appsink name=a sync=false")
    pipe = Gst.parse_launch(desc)
    frames, fpts, fdur, mels, mpts = [], [], [], [], []

    def running_time(s, pts):
        seg = s.get_segment()
        if seg is None or seg.format != Gst.Format.TIME or pts == Gst.CLOCK_TIME_NONE:
            return pts
        rt = seg.to_running_time(Gst.Format.TIME, pts)
        return rt if rt != Gst.CLOCK_TIME_NONE else pts

    def on_video(sink):
        s = sink.emit("pull-sample")
        b = s.get_buffer()
        ok, m = b.map(Gst.MapFlags.READ)
        fmt = s.get_caps().get_structure(0).get_value("format")
        px = np.frombuffer(m.data, dtype=np.uint8).reshape(side, side, len(fmt))
        frames.append(px[..., [fmt.index(c) for c in "RGB"]].copy())
        b.unmap(m)
        fpts.append(running_time(s, b.pts))
        fdur.append(b.duration if b.duration != Gst.CLOCK_TIME_NONE else -1)
        return Gst.FlowReturn.OK

    def on_audio(sink):
        s = sink.emit("pull-sample")
        b = s.get_buffer()
        ok, m = b.map(Gst.MapFlags.READ)
        x = np.frombuffer(m.data, dtype=np.float32).copy().reshape(-1, 64)
        b.unmap(m)
        t0 = running_time(s, b.pts)
        for k in range(x.shape[0]):
            mels.append(x[k])
            mpts.append(t0 + int(round(k * HOP_NS)))
        return Gst.FlowReturn.OK

    for name, cb in (("v", on_video), ("a", on_audio)):
        sink = pipe.get_by_name(name)
        sink.set_property("emit-signals", True)
        sink.connect("new-sample", cb)
    pipe.set_state(Gst.State.PLAYING)
    bus = pipe.get_bus()
    msg = bus.timed_pop_filtered(600 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    err = None
    if msg is None:
        err = "timed out"
    elif msg.type == Gst.MessageType.ERROR:
        e, dbg = msg.parse_error()
        err = f"{e.message} ({dbg})"
    pipe.set_state(Gst.State.NULL)
    if err:
        raise RuntimeError(f"decoding {path}: {err}")
    fr = np.stack(frames).reshape(len(frames), side, side, 3) if frames else \
        np.zeros((0, side, side, 3), np.uint8)
    ml = np.stack(mels) if mels else np.zeros((0, 64), np.float32)
    if with_durations:
        return fr, np.array(fpts, np.int64), np.array(fdur, np.int64), ml, np.array(mpts, np.int64)
    return fr, np.array(fpts, np.int64), ml, np.array(mpts, np.int64)


def window_index(frame_pts, mel_pts):
    """[F, T] index of the mel frame in each slot of each frame's causal
    window, -1 where the slot is missing (spec section 3 slot rule)."""
    F = len(frame_pts)
    idx = np.full((F, T_SLOTS), -1, np.int64)
    if len(mel_pts) == 0:
        return idx
    for f, t in enumerate(frame_pts):
        d = mel_pts.astype(np.int64) - (int(t) - WINDOW_NS)
        j = np.floor(d.astype(np.float64) / HOP_NS + 0.5).astype(np.int64)
        ok = (j >= 0) & (j < T_SLOTS)
        idx[f, j[ok]] = np.nonzero(ok)[0]
    return idx


def box_patch_mass(box, W, H):
    """Share of each of the 196 patches covered by ``box`` (frame pixels)
    once the frame is squashed to 224x224, normalised to sum 1."""
    sx, sy = MODEL_SIDE / W, MODEL_SIDE / H
    x0, y0, x1, y1 = box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy
    edges = np.arange(GRID + 1) * PATCH
    ox = np.clip(np.minimum(edges[1:], x1) - np.maximum(edges[:-1], x0), 0, None)
    oy = np.clip(np.minimum(edges[1:], y1) - np.maximum(edges[:-1], y0), 0, None)
    m = (oy[:, None] * ox[None, :]).reshape(-1)
    s = m.sum()
    return m / s if s > 0 else m


def scene_path(work, seed, world):
    """Where a prepared scene lives: scene-SEED.npz (world 1, as before)
    or scene2-SEED.npz (world 2)."""
    return os.path.join(work, "data", f"scene-{seed}.npz" if world == 1 else f"scene2-{seed}.npz")


def prepare_scene(args):
    """Renders, encodes and decodes one training scene into WORK/data."""
    seed, work, plugin_path, duration, world = args
    out = scene_path(work, seed, world)
    if os.path.exists(out):
        return out
    rng = random.Random(seed * 7919 + 17)
    W, H = SIZES[rng.randrange(len(SIZES))]
    # world 2's rhythm needs frames: on intervals last 80 to 300 ms
    fps = rng.choice([10, 12, 15, 15, 25] if world == 1 else [15, 20, 24, 25, 30])
    sr = rng.choice([48000, 44100, 32000, 16000, 22050])
    ch = rng.choice([1, 1, 2])
    ext = CODECS[rng.randrange(2)]
    kbps = int(max(150, W * H * fps / 1e6 * rng.choice([40, 80, 160])))
    sc = make_scene(seed, W, H, fps, duration, sr, ch, world)
    with tempfile.TemporaryDirectory() as tmp:
        clip = os.path.join(tmp, "scene" + ext)
        soworld.encode(sc, clip, quality=kbps)
        frames, fpts, fdur, mel, mpts = decode_clip(clip, plugin_path, with_durations=True)
    n = min(len(frames), sc.n_frames())
    frames, fpts, fdur = frames[:n], fpts[:n], fdur[:n]
    targets = np.zeros((n, N_PATCHES), np.float32)
    # steady, negative, n_sources, t, since_segment_start, state, lookalike
    info = np.zeros((n, 7), np.float32)
    kinds = np.zeros((n, N_KINDS), np.float32)
    for i in range(n):
        tr = sc.truth(i)
        if tr["boxes"]:
            for b in tr["boxes"]:
                targets[i] += box_patch_mass(b, W, H) / len(tr["boxes"])
        info[i] = (tr["steady"], tr["negative"], len(tr["sources"]), tr["t"],
                   tr["t"] - tr["segment_start"], {"onscreen": 0, "offscreen": 1}.get(tr["state"], 2),
                   bool(tr.get("lookalike", False)))
        for k in tr["sound_kinds"]:
            kinds[i, k] = 1.0
    widx = window_index(fpts, mpts)
    tmp_out = out + ".tmp.npz"
    np.savez(tmp_out, frames=frames, mel=mel.astype(np.float32), widx=widx, targets=targets,
             info=info, kinds=kinds, size=np.array([W, H]), fps=np.array([fps]),
             codec=np.array([ext]), fpts=fpts, fdur=fdur, world=np.array([world]))
    os.replace(tmp_out, out)
    return out


def make_scene(seed, W, H, fps, duration, sr, channels, world):
    if world == 1:
        return soworld.Scene(seed, W, H, fps, duration, sr, variants=True, channels=channels)
    return soworld.Scene(seed, W, H, fps, duration, sr, variants=True, channels=channels,
                         world=world)


def prepare_clip(args):
    """Decodes one of your own clips with its truth file (the format of
    model/soworld.py: per frame steady, negative, sources, kinds, boxes) into
    WORK/data.  Kinds 0..5 train the kind heads; others are ignored."""
    clip, truth, work, plugin_path = args
    name = os.path.splitext(os.path.basename(clip))[0]
    out = os.path.join(work, "data", f"clip-{name}.npz")
    if os.path.exists(out):
        return out
    head, rows = soworld.read_truth_tsv(truth)
    W, H = int(head["width"]), int(head["height"])
    frames, fpts, fdur, mel, mpts = decode_clip(clip, plugin_path, with_durations=True)
    by_pts = {r["pts"]: r for r in rows}
    keys = np.array(sorted(by_pts))
    n = len(frames)
    targets = np.zeros((n, N_PATCHES), np.float32)
    info = np.zeros((n, 7), np.float32)
    kinds = np.zeros((n, N_KINDS), np.float32)
    for i in range(n):
        j = int(np.argmin(np.abs(keys - fpts[i]))) if len(keys) else -1
        r = by_pts[int(keys[j])] if j >= 0 else None
        if r is None:
            info[i] = (0, 1, 0, fpts[i] / 1e9, 0, 2, 0)
            continue
        for b in r["boxes"]:
            targets[i] += box_patch_mass(b, W, H) / len(r["boxes"])
        info[i] = (r["steady"], r["negative"], len(r["sources"]), fpts[i] / 1e9, 0,
                   0 if r["sources"] else 1, bool(r.get("lookalike", False)))
        for k in r["kinds"]:
            if 0 <= k < N_KINDS:
                kinds[i, k] = 1.0
    np.savez(out + ".tmp.npz", frames=frames, mel=mel.astype(np.float32),
             widx=window_index(fpts, mpts), targets=targets, info=info, kinds=kinds,
             size=np.array([W, H]), fps=np.array([0.0]), codec=np.array([os.path.splitext(clip)[1]]),
             own=np.array([1]), fpts=fpts, fdur=fdur)
    os.replace(out + ".tmp.npz", out)
    return out


def own_clips(folder):
    """(clip, truth) pairs of a folder: every video file with a
    <name>.truth.tsv beside it."""
    pairs = []
    for f in sorted(os.listdir(folder)):
        base, ext = os.path.splitext(f)
        truth = os.path.join(folder, base + ".truth.tsv")
        if ext.lower() in (".mp4", ".webm", ".mkv", ".ogg", ".ogv", ".mov", ".avi") and os.path.exists(truth):
            pairs.append((os.path.join(folder, f), truth))
    if not pairs:
        raise SystemExit(f"train: no clip with a .truth.tsv beside it in {folder}")
    return pairs


def prepare(seeds, work, plugin_path, duration, jobs, world_of):
    os.makedirs(os.path.join(work, "data"), exist_ok=True)
    todo = [(s, work, plugin_path, duration, world_of(s)) for s in seeds
            if not os.path.exists(scene_path(work, s, world_of(s)))]
    t0 = time.time()
    print(f"prepare: {len(seeds) - len(todo)} of {len(seeds)} scenes ready, making {len(todo)}",
          flush=True)
    if not todo:
        return
    done = 0
    ctx = mp.get_context("spawn")
    with ctx.Pool(jobs) as pool:
        for _ in pool.imap_unordered(prepare_scene, todo):
            done += 1
            if done % 10 == 0 or done == len(todo):
                el = time.time() - t0
                print(f"prepare: {done}/{len(todo)} scenes, {el:.0f} s, "
                      f"about {el / done * (len(todo) - done):.0f} s left", flush=True)


def patch_kinds(scene, times):
    """[F, 196] int8 label of each patch at each time: the kind of the object
    covering at least 40% of it, 6 for none, -1 (ignored) for a partial
    cover.  Drawn from the scene's own layout (no rendering)."""
    W, H = scene.W, scene.H
    sx, sy = MODEL_SIDE / W, MODEL_SIDE / H
    edges = np.arange(GRID + 1) * PATCH
    out = np.full((len(times), N_PATCHES), 6, np.int8)
    for f, t in enumerate(times):
        for o in scene.objects:
            b = scene.box(o, t)
            x0, y0, x1, y1 = b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy
            ox = np.clip(np.minimum(edges[1:], x1) - np.maximum(edges[:-1], x0), 0, None)
            oy = np.clip(np.minimum(edges[1:], y1) - np.maximum(edges[:-1], y0), 0, None)
            frac = (oy[:, None] * ox[None, :]).reshape(-1) / (PATCH * PATCH)
            out[f][(frac > 0.05) & (frac < 0.4)] = -1
            out[f][frac >= 0.4] = o["kind"]
    return out


def kind_timeline(scene, step=0.01):
    """[n, 6] which kinds sound at times k * step."""
    n = int(math.ceil(scene.duration / step)) + 1
    out = np.zeros((n, N_KINDS), np.float32)
    for (t0, t1, what, p) in scene.timeline:
        if what == "gap":
            continue
        a, b = int(math.ceil(t0 / step)), int(math.ceil(t1 / step))
        for k in p["kinds"]:
            out[a:b, k] = 1.0
    return out


RHYTHM_POOL = 4
BIN_SLOTS = 4
N_BINS = T_SLOTS // BIN_SLOTS
LAG_MIN, N_LAGS = -1, 5          # the video 40 ms early .. 120 ms late


def set_bins(bin_slots, lag_min, lags):
    """--bin-slots, --lag-min, --lags: the rhythm bins every part of the
    training reads (module globals, as the unlabelled trainer reads them)."""
    global BIN_SLOTS, N_BINS, LAG_MIN, N_LAGS
    if bin_slots < 1 or T_SLOTS % bin_slots:
        raise SystemExit(f"train: --bin-slots {bin_slots} does not divide the window's {T_SLOTS} slots")
    BIN_SLOTS, N_BINS, LAG_MIN, N_LAGS = bin_slots, T_SLOTS // bin_slots, lag_min, lags


def pooled_frames(frames, pool=RHYTHM_POOL):
    """[F, S, S, 3] uint8 -> [F, 3, S/pool, S/pool] float16: the mean of each
    pool x pool block (what avfusion-v2's rhythm map reads, before the
    per-channel normalisation, which commutes with the mean)."""
    F, S = len(frames), frames.shape[1] // pool
    out = np.empty((F, 3, S, S), np.float16)
    for k in range(0, F, 64):
        x = frames[k:k + 64].reshape(-1, S, pool, S, pool, 3).astype(np.float32).mean(axis=(2, 4))
        out[k:k + 64] = x.transpose(0, 3, 1, 2)
    return out


def scene_bins(fpts, fdur, window_ns=WINDOW_NS, bin_slots=BIN_SLOTS, n_bins=N_BINS, lag=0):
    """[F, K] index of the earlier frame that shows the centre c_{k+lag} of
    each rhythm bin k in each frame's window, -1 where none does
    (avfusion2.bin_frames for a stream without gaps, vectorised)."""
    fpts = np.asarray(fpts, np.int64)
    F = len(fpts)
    nxt = np.append(fpts[1:], np.iinfo(np.int64).max)
    dur = np.asarray(fdur, np.int64) if fdur is not None else np.full(F, -1, np.int64)
    ends = np.where(dur >= 0, np.minimum(fpts + np.maximum(dur, 0), nxt), nxt)
    k = np.arange(n_bins, dtype=np.int64) + lag
    off = ((2 * k + 1) * bin_slots * HOP * 1_000_000_000) // (2 * SAMPLE_RATE)
    c = fpts[:, None] - window_ns + off[None, :]                     # [F, K]
    g = np.searchsorted(fpts, c, side="right") - 1
    ok = (g >= 0) & (g < np.arange(F)[:, None]) & (c < fpts[:, None])
    gs = np.clip(g, 0, max(F - 1, 0))
    ok &= c < ends[gs]
    return np.where(ok, g, -1)


class SceneSet:
    """The prepared scenes, in memory, with labels drawn again from the
    scenes' seeds (layout of every object, which kinds sound when).  With
    ``rhythm`` (avfusion-v2) also each frame's pooled picture and the
    rhythm bins of each frame's window."""

    def __init__(self, paths, duration, rhythm=False):
        self.scenes = []
        self.rhythm = rhythm
        for p in paths:
            z = np.load(p)
            d = {k: z[k] for k in ("frames", "mel", "widx", "targets", "info", "kinds", "size", "fps")}
            if d["info"].shape[1] < 7:
                d["info"] = np.concatenate([d["info"], np.zeros((len(d["info"]), 7 - d["info"].shape[1]),
                                                                np.float32)], axis=1)
            world = int(z["world"][0]) if "world" in z.files else 1
            if rhythm:
                if "fpts" in z.files:
                    fpts, fdur = z["fpts"], z["fdur"]
                else:
                    fpts = np.rint(d["info"][:, 3] * 1e9).astype(np.int64)
                    fdur = None
                d["pooled"] = pooled_frames(d["frames"])
                d["bins"] = np.stack([scene_bins(fpts, fdur, bin_slots=BIN_SLOTS, n_bins=N_BINS,
                                                 lag=LAG_MIN + j)
                                      for j in range(N_LAGS)], axis=1)      # [F, lags, K]
            if "own" in z.files:
                # your own clip: no per-patch labels; the kinds sounding at
                # each frame stand for those of its audio slots
                d["patch_kind"] = np.full((len(d["frames"]), N_PATCHES), -1, np.int8)
                t = d["info"][:, 3]
                n = int(math.ceil((t.max() if len(t) else 0) / 0.01)) + 2
                grid = np.arange(n) * 0.01
                j = np.clip(np.searchsorted(t, grid, side="right") - 1, 0, max(len(t) - 1, 0))
                d["timeline"] = d["kinds"][j] if len(t) else np.zeros((n, N_KINDS), np.float32)
            else:
                seed = int(os.path.basename(p).split("-")[1].split(".")[0])
                sc = make_scene(seed, int(d["size"][0]), int(d["size"][1]),
                                float(d["fps"][0]), duration, SAMPLE_RATE, 1, world)
                d["patch_kind"] = patch_kinds(sc, d["info"][:, 3])
                d["timeline"] = kind_timeline(sc)
            self.scenes.append(d)
        self.index = [(s, f) for s, d in enumerate(self.scenes)
                      for f in range(len(d["frames"])) if (d["widx"][f] >= 0).any()]

    def __len__(self):
        return len(self.index)

    def batch(self, items, flip=None, av_offset=None):
        """Tensors for a list of (scene, frame).  ``flip``: mirror these
        samples' pictures; ``av_offset``: per sample, audio slots (10 ms) by
        which its sound is moved late against its picture (negative: early),
        as encoders and containers move them (the slots that fall outside
        the clip are masked)."""
        import torch
        B = len(items)
        rgb = np.zeros((B, MODEL_SIDE, MODEL_SIDE, 3), np.uint8)
        mel = np.zeros((B, T_SLOTS, 64), np.float32)
        mask = np.ones((B, T_SLOTS), bool)
        tgt = np.zeros((B, N_PATCHES), np.float32)
        info = np.zeros((B, 7), np.float32)
        kinds = np.zeros((B, N_KINDS), np.float32)
        pk = np.zeros((B, N_PATCHES), np.int64)
        sk = np.zeros((B, T_SLOTS, N_KINDS), np.float32)
        if self.rhythm:
            # the pooled pictures the batch's bins need, each once, and
            # [B, lags, K] indices into them (-1: no frame)
            hidx = np.full((B, N_LAGS, N_BINS), -1, np.int64)
            hframes = []
        for b, (s, f) in enumerate(items):
            d = self.scenes[s]
            if self.rhythm:
                g = d["bins"][f]
                u, inv = np.unique(g, return_inverse=True)
                inv = inv.reshape(g.shape)
                keep = u >= 0
                base = len(hframes) - int((~keep).sum())
                for fr in u[keep]:
                    h = d["pooled"][fr]
                    hframes.append(h[..., ::-1] if flip is not None and flip[b] else h)
                hidx[b] = np.where(g >= 0, base + inv, -1)
            img = d["frames"][f]
            t = d["targets"][f].reshape(GRID, GRID)
            lab = d["patch_kind"][f].reshape(GRID, GRID)
            if flip is not None and flip[b]:
                img = img[:, ::-1]
                t = t[:, ::-1]
                lab = lab[:, ::-1]
            rgb[b] = img
            tgt[b] = t.reshape(-1)
            pk[b] = lab.reshape(-1)
            o = int(av_offset[b]) if av_offset is not None else 0
            tl = d["timeline"]
            ti = np.rint((d["info"][f, 3] - 1.0 + np.arange(T_SLOTS) * 0.01 + 0.0125) / 0.01).astype(int) - o
            ok = (ti >= 0) & (ti < len(tl))
            sk[b, ok] = tl[ti[ok]]
            w = d["widx"][f]
            ok = (w >= 0) & (w - o >= 0) & (w - o < len(d["mel"]))
            mel[b, ok] = d["mel"][w[ok] - o]
            mask[b] = ~ok
            info[b] = d["info"][f]
            kinds[b] = d["kinds"][f]
        out = (torch.from_numpy(rgb), torch.from_numpy(mel), torch.from_numpy(mask),
               torch.from_numpy(tgt), torch.from_numpy(info), torch.from_numpy(kinds),
               torch.from_numpy(pk), torch.from_numpy(sk))
        if self.rhythm:
            side = MODEL_SIDE // RHYTHM_POOL
            hf = np.stack(hframes) if hframes else np.zeros((0, 3, side, side), np.float16)
            out += (torch.from_numpy(np.ascontiguousarray(hf)), torch.from_numpy(hidx))
        return out


# --------------------------------------------------------------------------
# the model and its losses
# --------------------------------------------------------------------------

def history_rows(model, hframes, hidx, dtype):
    """The rhythm features [B, lags, K, N, D] of the pooled pictures
    ``hframes`` [U, 3, S, S] that ``hidx`` [B, lags, K] points at (zeros
    where it is -1: no frame), each picture's features computed once."""
    import torch
    x = hframes.to(dtype) / 255.0
    x = (x - model.pixel_mean) / model.pixel_std
    r = model.rhythm_from_pooled(x)                        # [U, N, D]
    r = torch.cat([r, r.new_zeros((1,) + tuple(r.shape[1:]))], dim=0)
    return r[torch.where(hidx >= 0, hidx, torch.full_like(hidx, r.shape[0] - 1))]


def video_tokens(model, rgb, mel, mask, hframes=None, hidx=None):
    """The patch tokens entering the layers, [B, N, E], and the rhythm term
    in them (None for v1): v1's tokens, plus for avfusion-v2 the rhythm
    term of the pooled pictures ``hframes`` [U, 3, S, S] that ``hidx``
    [B, lags, K] points at (-1 where a bin has no frame)."""
    import torch
    import avfusion
    v = avfusion.AvFusion.embed_video(model, rgb)
    if hframes is None:
        return v, None
    term = model.rhythm_term(mel, mask, history_rows(model, hframes, hidx, v.dtype), hidx < 0)
    return v + term, term


def forward_with_map(model, rgb, mel, mask, all_layers=False, hist=None, hmiss=None):
    """fused [B, 2E] and the last layer's audio-cross map reduced as the
    meta does: mean over heads and over unmasked slots, [B, N].  With
    all_layers: also the reduced map of every layer, the audio and video
    tokens after the first layer, and the rhythm term (v2; ``hist`` and
    ``hmiss`` are video_tokens' hframes and hidx)."""
    import torch
    v, term = video_tokens(model, rgb, mel, mask, hist, hmiss)
    T = mel.shape[1]
    a = model.audio_proj(mel) + model.audio_pos[:T]
    L = len(model.layers)
    keep = (~mask).to(a.dtype).unsqueeze(-1)
    count = keep.sum(dim=1).clamp(min=1.0)
    qs, first = [], None
    for i, layer in enumerate(model.layers):
        last = i == L - 1
        a, v, maps = layer(a, v, mask, need_weights=last or all_layers)
        if last or all_layers:
            qs.append((maps["audio_cross"] * keep).sum(dim=1) / count)   # [B, N]
        if i == 0:
            first = (a, v)
    fused = torch.cat([(a * keep).sum(dim=1) / count, v.mean(dim=1)], dim=-1)
    if all_layers:
        return fused, qs, first, term
    return fused, qs[-1]


def losses(model, heads, batch, nonsteady_weight=0.5, lookalike_weight=2.0, twin_weight=0.0):
    """Map losses of the last layer (and, weighted by 0.5, of the earlier
    ones), the kind from the fused vector, and two auxiliary labels on the
    first layer's tokens: the kind under each patch and the kinds sounding
    in each audio slot.  With ``twin_weight``, on steady frames of one
    source with a look-alike, also -log(m_s / (m_s + m_t)) of the last
    map's mass on the source's patches (m_s) and on its twin's (m_t: the
    patches of the sounding kind outside the source's box)."""
    import torch
    import torch.nn.functional as Fn
    rgb, mel, mask, tgt, info, kinds, pk, sk = batch[:8]
    hist, hmiss = batch[8:] if len(batch) > 8 else (None, None)
    fused, qs, (a1, v1), term = forward_with_map(model, rgb, mel, mask, all_layers=True,
                                                 hist=hist, hmiss=hmiss)
    q = qs[-1]
    steady, negative = info[:, 0], info[:, 1]
    has_audio = (~mask).any(dim=1).float()
    # target: the sources' patches, or a flat map when nothing visible sounds
    flat = torch.full_like(tgt, 1.0 / N_PATCHES)
    p = torch.where((negative > 0.5)[:, None], flat, tgt)
    w = has_audio * torch.where(steady > 0.5, torch.ones_like(steady),
                                torch.full_like(steady, nonsteady_weight))
    # two sources at once are rare (about 1 segment in 10) and the hardest
    # case: their frames count three times
    w = w * torch.where(info[:, 2] > 1.5, torch.full_like(w, 3.0), torch.ones_like(w))
    # a look-alike is the only case where the rhythm must decide: twice
    w = w * torch.where(info[:, 6] > 0.5, torch.full_like(w, lookalike_weight), torch.ones_like(w))
    ent = (p * torch.log(p.clamp(min=1e-12))).sum(dim=1)

    def map_loss_of(qq):
        kl = ent - (p * torch.log(qq.clamp(min=1e-9))).sum(dim=1)
        return (w * kl).sum() / w.sum().clamp(min=1.0)
    map_loss = map_loss_of(q)
    early = sum(map_loss_of(qq) for qq in qs[:-1]) if len(qs) > 1 else map_loss * 0
    logits = heads["kind"](fused)
    kind_loss = (Fn.binary_cross_entropy_with_logits(logits, kinds, reduction="none").mean(dim=1)
                 * has_audio).sum() / has_audio.sum().clamp(min=1.0)
    if bool((pk >= 0).any()):
        patch_loss = Fn.cross_entropy(heads["patch"](v1).reshape(-1, N_KINDS + 1),
                                      pk.reshape(-1), ignore_index=-1)
    else:                                   # your own clips: no per-patch labels
        patch_loss = v1.sum() * 0
    keep = (~mask).float()
    slot = Fn.binary_cross_entropy_with_logits(heads["slot"](a1), sk, reduction="none").mean(dim=2)
    slot_loss = (slot * keep).sum() / keep.sum().clamp(min=1.0)
    aux = 0.5 * early + kind_loss * 0.2 + 0.3 * patch_loss + 0.3 * slot_loss
    sync = map_loss * 0
    if term is not None:
        # the rhythm term alone points at the source (aux head, not
        # exported): trains the rhythm features directly
        vis = w * (negative < 0.5).float()
        ls = torch.log_softmax(heads["sync"](term)[..., 0], dim=1)
        sync = (vis * (ent - (p * ls).sum(dim=1))).sum() / vis.sum().clamp(min=1.0)
        aux = aux + 0.5 * sync
    twin = map_loss * 0
    if twin_weight > 0:
        twin = twin_loss(q, tgt, pk, kinds, info, has_audio)
        map_loss = map_loss + twin_weight * twin
    return map_loss, aux, dict(kind=float(kind_loss), patch=float(patch_loss),
                               slot=float(slot_loss), early=float(early), sync=float(sync),
                               twin=float(twin))


def twin_loss(q, tgt, pk, kinds, info, has_audio):
    """Mean over the steady frames of one source with a look-alike (and
    sound) of -log(m_s / (m_s + m_t)): the map ``q`` [B, N]'s mass on the
    source's patches (``tgt`` > 0) against that on its twin's (the patches
    ``pk`` labels with the sounding kind, outside the source's box); 0 when
    the batch has no such frame."""
    import torch
    one = (info[:, 0] > 0.5) & (info[:, 1] < 0.5) & (info[:, 2].round() == 1) & (info[:, 6] > 0.5)
    kind = kinds.argmax(dim=1)
    tw = ((pk == kind[:, None]) & (tgt <= 0)).to(q.dtype)
    m_s = (q * (tgt > 0).to(q.dtype)).sum(dim=1)
    m_t = (q * tw).sum(dim=1)
    use = (one & (m_t > 0)).to(q.dtype) * has_audio
    if float(use.sum()) == 0:
        return q.sum() * 0
    nll = -torch.log(m_s.clamp(min=1e-9) / (m_s + m_t).clamp(min=1e-9))
    return (use * nll).sum() / use.sum()


def strongest(q):
    w, i = q.max(dim=1)
    return w, i


# --------------------------------------------------------------------------
# training loop (resumable)
# --------------------------------------------------------------------------

def make_model(args):
    import torch
    import avfusion
    import avfusion2
    torch.manual_seed(args.seed)
    if args.model == "v2":
        model = avfusion2.AvFusionV2(embed_dim=args.embed_dim, num_heads=args.heads,
                                     num_layers=args.layers, ffn_dim=args.ffn_dim,
                                     rhythm_dim=args.rhythm_dim,
                                     audio_rhythm_dim=args.audio_rhythm_dim,
                                     rhythm_pool=RHYTHM_POOL, bin_slots=BIN_SLOTS,
                                     num_bins=N_BINS, num_lags=N_LAGS, lag_min=LAG_MIN,
                                     neighbourhood=args.rhythm_neighbourhood,
                                     neighbourhood_from=args.rhythm_neighbourhood_from)
    else:
        model = avfusion.AvFusion(embed_dim=args.embed_dim, num_heads=args.heads,
                                  num_layers=args.layers, ffn_dim=args.ffn_dim)
    E = args.embed_dim
    heads = torch.nn.ModuleDict(dict(kind=torch.nn.Linear(2 * E, N_KINDS),
                                     patch=torch.nn.Linear(E, N_KINDS + 1),
                                     slot=torch.nn.Linear(E, N_KINDS),
                                     sync=torch.nn.Linear(E, 1)))
    return model, heads


def init_from(model, path):
    """Starts from the tensors of a weights file (v1 or v2) that the model
    has with the same shapes; the others keep their fresh values.  From a v1
    file into v2, the rhythm projection starts at a tenth of its fresh
    values, so the model starts as the v1 model and learns to use the
    rhythm.  From a v2 file of other bins or lags they are resampled
    (resample_rhythm); from one of fewer rhythm features, widened
    (widen_rhythm)."""
    import torch
    import avfusion
    tensors, meta = avfusion.read_safetensors(path)
    own = model.state_dict()
    taken = {k: torch.from_numpy(v) for k, v in tensors.items()
             if k in own and tuple(own[k].shape) == tuple(v.shape)}
    model.load_state_dict(taken, strict=False)
    if ("rhythm_proj.weight" in own and "rhythm_proj.weight" in tensors
            and "rhythm_proj.weight" not in taken and "rhythm_bin_slots" in meta
            and tensors["rhythm_embed.weight"].shape == tuple(own["rhythm_embed.weight"].shape)
            and tensors["audio_rhythm.weight"].shape == tuple(own["audio_rhythm.weight"].shape)):
        resample_rhythm(model, tensors, meta)
        taken.update(rhythm_proj=None, rhythm_bin_weight=None)
    elif "rhythm_proj.weight" in own and "rhythm_proj.weight" not in taken and widens(own, tensors):
        widen_rhythm(model, tensors)
        taken.update({k: None for k in RHYTHM_WIDENED})
    elif "rhythm_proj.weight" in own and "rhythm_proj.weight" not in taken:
        with torch.no_grad():
            model.rhythm_proj.weight.mul_(0.1)
    print(f"train: started from {path} ({meta.get('format')}): {len(taken)} of {len(own)} "
          f"tensors", flush=True)


RHYTHM_WIDENED = ("rhythm_embed.weight", "rhythm_embed.bias", "audio_rhythm.weight",
                  "audio_rhythm.bias", "rhythm_proj.weight")


def widens(own, tensors):
    """True when the file is a v2 model with the same lags, bins and pooling
    as the model but fewer rhythm features (D) or audio rhythm features (C)."""
    if not all(k in tensors for k in RHYTHM_WIDENED + ("rhythm_bin_weight",)):
        return False
    D, Df = own["rhythm_embed.weight"].shape[0], tensors["rhythm_embed.weight"].shape[0]
    C, Cf = own["audio_rhythm.weight"].shape[0], tensors["audio_rhythm.weight"].shape[0]
    return (tuple(own["rhythm_embed.weight"].shape[1:]) == tuple(tensors["rhythm_embed.weight"].shape[1:])
            and tuple(own["rhythm_bin_weight"].shape) == tuple(tensors["rhythm_bin_weight"].shape)
            and Df <= D and Cf <= C and (Df, Cf) != (D, C))


def widen_rhythm(model, tensors):
    """A v2 file of fewer rhythm features into a wider model (--rhythm-dim,
    --audio-rhythm-dim): its features become the first ones, the new ones
    keep their fresh values, and the projection's columns that read a new
    feature start at zero, so the model starts as the file's exactly and
    learns what the new features add."""
    import torch
    E, L = model.rhythm_proj.weight.shape[0], model.num_lags
    D, C = model.rhythm_dim, model.audio_rhythm_dim
    Df, Cf = tensors["rhythm_embed.weight"].shape[0], tensors["audio_rhythm.weight"].shape[0]
    p = np.zeros((E, L, D, C), np.float32)
    p[:, :, :Df, :Cf] = tensors["rhythm_proj.weight"].reshape(E, L, Df, Cf)
    copies = getattr(model, "neighbourhood_from", 0) == Df and model.neighbourhood > 1
    with torch.no_grad():
        for name, n in (("rhythm_embed", Df), ("audio_rhythm", Cf)):
            getattr(model, name).weight[:n] = torch.from_numpy(tensors[name + ".weight"])
            getattr(model, name).bias[:n] = torch.from_numpy(tensors[name + ".bias"])
        if copies:
            # the new features are the file's averaged over the neighbourhood
            for d in range(Df, D):
                model.rhythm_embed.weight[d] = model.rhythm_embed.weight[d % Df]
                model.rhythm_embed.bias[d] = model.rhythm_embed.bias[d % Df]
        model.rhythm_proj.weight.copy_(torch.from_numpy(p.reshape(E, L * D * C)))
    how = ", as copies of the first averaged over the neighbourhood" if copies else ""
    print(f"train: rhythm features widened from D {Df}, C {Cf} to D {D}, C {C} (the new "
          f"ones start unread{how})", flush=True)


def resample_rhythm(model, tensors, meta):
    """A v2 file of other rhythm bins or lags (--bin-slots, --lag-min,
    --lags) into the model: its lags, in ms, read off the file's by linear
    interpolation (clamped at the ends), its bin weights at each new bin's
    centre, and the projection scaled by the ratio of the lag counts, so that
    the sum over lags starts about where the file's was."""
    import torch
    Gs, l0s = int(meta["rhythm_bin_slots"]), int(meta["rhythm_lag_min"])
    ws = tensors["rhythm_bin_weight"]                       # [Ls, Ks]
    Ls, Ks = ws.shape
    E, D, C = model.rhythm_proj.weight.shape[0], model.rhythm_dim, model.audio_rhythm_dim
    ps = tensors["rhythm_proj.weight"].reshape(E, Ls, D * C)
    Gt, l0t, Lt, Kt = model.bin_slots, model.lag_min, model.num_lags, model.num_bins
    w = np.zeros((Lt, Kt), np.float32)
    p = np.zeros((E, Lt, D * C), np.float32)
    for lt in range(Lt):
        x = min(max((l0t + lt) * Gt / Gs - l0s, 0.0), Ls - 1.0)   # position among the file's lags
        a = int(math.floor(x)); b = min(a + 1, Ls - 1); f = x - a
        p[:, lt] = ((1 - f) * ps[:, a] + f * ps[:, b]) * (Ls / Lt)
        for kt in range(Kt):
            ks = min(int(((kt + 0.5) * Gt) // Gs), Ks - 1)
            w[lt, kt] = (1 - f) * ws[a, ks] + f * ws[b, ks]
    with torch.no_grad():
        model.rhythm_bin_weight.copy_(torch.from_numpy(w))
        model.rhythm_proj.weight.copy_(torch.from_numpy(p.reshape(E, Lt * D * C)))
    print(f"train: rhythm bins of {Gs} slots, lags {l0s}..{l0s + Ls - 1} resampled to "
          f"{Gt} slots, lags {l0t}..{l0t + Lt - 1}", flush=True)


def evaluate_set(model, data, items, bs=64):
    """Strongest-patch statistics on (scene, frame) items."""
    import torch
    out = []
    model.eval()
    with torch.no_grad():
        for k in range(0, len(items), bs):
            it = items[k:k + bs]
            bt = data.batch(it)
            rgb, mel, mask, tgt, info = bt[:5]
            hist, hmiss = bt[8:] if len(bt) > 8 else (None, None)
            _, q = forward_with_map(model, rgb, mel, mask, hist=hist, hmiss=hmiss)
            w, i = strongest(q)
            hit = tgt.gather(1, i[:, None])[:, 0] > 0
            for b in range(len(it)):
                out.append((float(w[b]), bool(hit[b]), bool(info[b, 0] > 0.5),
                            bool(info[b, 1] > 0.5), int(info[b, 2]), bool(info[b, 6] > 0.5)))
    model.train()
    return out


def auc(pos, neg):
    if not pos or not neg:
        return float("nan")
    s = np.concatenate([np.asarray(pos), np.asarray(neg)])
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s))
    ranks[order] = np.arange(1, len(s) + 1)
    # average ranks for ties
    _, inv, cnt = np.unique(s, return_inverse=True, return_counts=True)
    sums = np.bincount(inv, ranks)
    ranks = (sums / cnt)[inv]
    rp = ranks[:len(pos)].sum()
    return (rp - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def summarise(stats):
    st = [s for s in stats if s[2]]
    pos = [s for s in st if not s[3]]
    neg = [s for s in st if s[3]]
    point = sum(s[1] for s in pos) / max(1, len(pos))
    look = [s for s in pos if s[5]]
    return dict(pointing=point, auc=auc([s[0] for s in pos], [s[0] for s in neg]),
                lookalike=sum(s[1] for s in look) / len(look) if look else float("nan"),
                n_pos=len(pos), n_neg=len(neg), n_lookalike=len(look))


def pick_threshold(stats):
    """Threshold on the strongest-patch weight with the best balanced
    accuracy between steady on-screen frames and steady negative ones."""
    st = [s for s in stats if s[2]]
    pos = np.array([s[0] for s in st if not s[3]])
    neg = np.array([s[0] for s in st if s[3]])
    if len(pos) == 0 or len(neg) == 0:
        return 1.0 / N_PATCHES * 2, float("nan")
    cands = np.unique(np.concatenate([pos, neg]))
    best, best_t = -1.0, float(cands[0])
    for c in cands:
        ba = 0.5 * ((pos >= c).mean() + (neg < c).mean())
        if ba > best:
            best, best_t = ba, float(c)
    # halfway to the next lower candidate, so the value is not on a sample
    lower = cands[cands < best_t]
    if len(lower):
        best_t = 0.5 * (best_t + float(lower[-1]))
    return best_t, best


def train(args, train_data, val_data):
    import torch
    torch.set_num_threads(args.threads)
    model, head = make_model(args)
    if args.init:
        init_from(model, args.init)
    params = list(model.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    ck = os.path.join(args.work, "checkpoint.pt")
    step = 0
    if os.path.exists(ck):
        state = torch.load(ck, map_location="cpu")
        same = state.get("config") == config_of(args)
        if args.export_checkpoint:
            # the settings but the step count must match
            strip = lambda c: {k: v for k, v in (c or {}).items() if k != "steps"}
            same = strip(state.get("config")) == strip(config_of(args))
        if same:
            model.load_state_dict(state["model"])
            head.load_state_dict(state["head"])
            opt.load_state_dict(state["opt"])
            step = state["step"]
            print(f"train: resuming from {ck} at step {step}", flush=True)
        else:
            print(f"train: {ck} is from other settings; starting afresh", flush=True)

    stop = {"now": False}

    def on_signal(signum, frame):
        stop["now"] = True
    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}

    def save():
        tmp = ck + ".tmp"
        torch.save(dict(model=model.state_dict(), head=head.state_dict(), opt=opt.state_dict(),
                        step=step, config=config_of(args)), tmp)
        os.replace(tmp, ck)

    if args.export_checkpoint:
        if step == 0:
            raise SystemExit(f"train: --export-checkpoint: no checkpoint of these settings in {ck}")
        print(f"train: exporting the checkpoint of step {step} (no more training)", flush=True)
        return model, step
    rng_items = train_data.index
    t0 = time.time()
    start_step = step
    run = dict(map=0.0, n=0)
    val_items = val_sample(val_data, 600, args.seed)
    while step < args.steps and not stop["now"]:
        g = np.random.default_rng([args.seed, step])
        pick = g.integers(0, len(rng_items), args.batch)
        items = [rng_items[i] for i in pick]
        flip = g.random(args.batch) < 0.5
        # sound moved against the picture by up to --av-jitter ms either way
        jit = int(round(args.av_jitter / 10))
        offs = g.integers(-jit, jit + 1, args.batch) if jit > 0 else None
        batch = train_data.batch(items, flip, offs)
        # learning rate: warm-up then cosine
        warm = min(1.0, (step + 1) / max(1, args.steps // 20))
        lr = args.lr * warm * 0.5 * (1 + math.cos(math.pi * step / args.steps))
        for gr in opt.param_groups:
            gr["lr"] = lr
        map_loss, aux_loss, parts = losses(model, head, batch, lookalike_weight=args.lookalike_weight,
                                           twin_weight=args.twin_weight)
        loss = map_loss + aux_loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        step += 1
        run["map"] += float(map_loss)
        for k, v in parts.items():
            run[k] = run.get(k, 0.0) + v
        run["n"] += 1
        if step % args.log_every == 0 or step == args.steps:
            el = time.time() - t0
            rate = (step - start_step) / max(el, 1e-9)
            msg = (f"train: step {step}/{args.steps}  map loss {run['map'] / run['n']:.4f} "
                   f"(first layer {run['early'] / run['n']:.3f})  kind {run['kind'] / run['n']:.3f} "
                   f"patch {run['patch'] / run['n']:.3f} slot {run['slot'] / run['n']:.3f} "
                   f"sync {run['sync'] / run['n']:.3f} twin {run['twin'] / run['n']:.3f}  lr {lr:.2e}  "
                   f"{rate:.2f} steps/s, about {(args.steps - step) / max(rate, 1e-9) / 60:.1f} min left")
            run = dict(map=0.0, n=0)
            if val_items and (step % (args.log_every * 5) == 0 or step == args.steps):
                s = summarise(evaluate_set(model, val_data, val_items))
                msg += (f"  | val pointing {s['pointing']:.3f} look-alike {s['lookalike']:.3f} "
                        f"({s['n_lookalike']}) AUC {s['auc']:.3f}")
            print(msg, flush=True)
        if step % args.checkpoint_every == 0:
            save()
    save()
    for s, h in old.items():
        signal.signal(s, h)
    if stop["now"]:
        print(f"train: stopped at step {step}; run the same command again to resume", flush=True)
        sys.exit(130)
    return model, step


def val_sample(data, n, seed):
    if data is None or not len(data):
        return []
    g = np.random.default_rng([seed, 99])
    idx = g.choice(len(data.index), size=min(n, len(data.index)), replace=False)
    return [data.index[i] for i in sorted(idx)]


def config_of(args):
    return dict(seed=args.seed, embed_dim=args.embed_dim, heads=args.heads, layers=args.layers,
                ffn_dim=args.ffn_dim, steps=args.steps, batch=args.batch, lr=args.lr,
                scenes=args.scenes, duration=args.duration, aux="v4", model=args.model,
                world=args.world, v1_share=args.v1_share, rhythm_dim=args.rhythm_dim,
                init=os.path.basename(args.init) if args.init else None,
                audio_rhythm_dim=args.audio_rhythm_dim,
                **({"av_jitter": args.av_jitter} if args.av_jitter else {}),
                **({"lookalike_weight": args.lookalike_weight}
                   if args.lookalike_weight != 2.0 else {}),
                **({"twin_weight": args.twin_weight} if args.twin_weight else {}),
                **({"neighbourhood": args.rhythm_neighbourhood}
                   if args.rhythm_neighbourhood != 1 else {}),
                **({"neighbourhood_from": args.rhythm_neighbourhood_from}
                   if args.rhythm_neighbourhood_from else {}),
                **({"bins": [args.bin_slots, args.lag_min, args.lags]}
                   if (args.bin_slots, args.lag_min, args.lags) != (4, -1, 5) else {}))


def world_of(args):
    """Which world each training seed is rendered in: args.world, except a
    share args.v1_share of the seeds (drawn from the seed) in world 1."""
    def of(seed):
        if args.world == 1:
            return 1
        return 1 if random.Random(seed * 31 + 7).random() < args.v1_share else args.world
    return of


def export(args, model, step, threshold, val):
    import avfusion
    import avfusion2
    v2 = args.model == "v2"
    world = (soworld.WORLD if not v2 else
             f"sounding-objects-v2 ({1 - args.v1_share:.0%} of the scenes) and "
             f"sounding-objects-v1 ({args.v1_share:.0%})")
    meta_extra = {
        "world": world if not args.clips else f"own clips ({os.path.basename(os.path.abspath(args.clips))})",
        "description": (("avfusion-v2 trained on the sounding-objects world, version 2 (shared "
                         "spec sounding-objects-2.md): coloured objects among grey clutter that "
                         "pulse with rhythms of their own; a sounding object is loud when it "
                         "swells, and two objects may look alike, so it matches what it sees "
                         "move with what it hears. "
                         if v2 else
                         "avfusion-v1 trained on the sounding-objects world (shared spec "
                         "sounding-objects.md): coloured objects among grey clutter whose "
                         "colour tells their sound. ") +
                        "It knows that world only; train on your own footage with "
                        "model/train.py --clips for anything else."
                        if not args.clips else
                        f"avfusion-{args.model} trained with model/train.py --clips on {args.clips}"),
        "visible_threshold": f"{threshold:.6g}",
        "trained_by": "model/train.py",
        "training_seed": str(args.seed),
        "training_init": os.path.basename(args.init) if args.init else "none (from scratch)",
        "training_steps": str(step),
        "training_batch": str(args.batch),
        **({"training_av_jitter_ms": f"{args.av_jitter:g}"} if args.av_jitter else {}),
        "training_scenes": (f"{args.scenes} of your clips from {args.clips}" if args.clips else
                            f"{args.scenes} scenes of {args.duration:g} s, seeds "
                            f"{args.first_seed}..{args.first_seed + args.scenes - 1}"),
        "validation": json.dumps(val, sort_keys=True),
    }
    sd = {k: v.detach() for k, v in model.state_dict().items()}
    opt = dict(sample_rate=SAMPLE_RATE, n_fft=400, hop_length=HOP, n_mels=64,
               patch_size=PATCH, window_ms=1000)
    tmp = args.out + ".tmp"
    if v2:
        sizes = avfusion2.export_state_dict(sd, args.heads, BIN_SLOTS, LAG_MIN, tmp,
                                            metadata=meta_extra,
                                            neighbourhood=args.rhythm_neighbourhood,
                                            neighbourhood_from=args.rhythm_neighbourhood_from,
                                            **opt)
    else:
        sizes = avfusion.export_state_dict(sd, args.heads, tmp, **opt)
        # add the extra metadata (the exporter writes the spec's keys)
        tensors, meta = avfusion.read_safetensors(tmp)
        meta.update(meta_extra)
        avfusion.write_safetensors(tmp, list(tensors.items()), meta)
    os.replace(tmp, args.out)
    print(f"export: wrote {args.out} ({os.path.getsize(args.out) / 1e6:.2f} MB): "
          f"E {sizes['embed_dim']} H {args.heads} L {sizes['num_layers']} F {sizes['ffn_dim']}, "
          f"visible_threshold {threshold:.4g}", flush=True)


def add_size_args(ap):
    """The model's sizes, the same options for the labelled and the
    unlabelled trainer."""
    ap.add_argument("--embed-dim", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--ffn-dim", type=int, default=128)
    ap.add_argument("--rhythm-dim", type=int, default=8, help="v2: rhythm features per patch (D)")
    ap.add_argument("--rhythm-neighbourhood", type=int, default=5,
                    help="v2: each patch's rhythm features are the mean over the k x k patches "
                         "around it (odd k; 1: the patch alone, as the first v2 model)")
    ap.add_argument("--rhythm-neighbourhood-from", type=int, default=0, metavar="F",
                    help="v2: only rhythm features F and up are averaged over the neighbourhood; "
                         "those below F stay each patch's own (0: all averaged).  With --init "
                         "of a model of F rhythm features and --rhythm-dim 2F, the new features "
                         "start as copies of its F, averaged")
    ap.add_argument("--bin-slots", type=int, default=4,
                    help="v2: audio slots per rhythm bin (G; 4: 40 ms bins)")
    ap.add_argument("--lag-min", type=int, default=-1, help="v2: the first lag, in bins")
    ap.add_argument("--lags", type=int, default=5, help="v2: number of lags")
    ap.add_argument("--audio-rhythm-dim", type=int, default=8,
                    help="v2: audio rhythm features (C)")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if any(x == "--unlabeled" or x.startswith("--unlabeled=") for x in argv):
        # no truth at all: training by synchrony (model/train_unlabeled.py)
        import train_unlabeled
        return train_unlabeled.main(argv)
    ap = argparse.ArgumentParser(description="train avfusion-v2 (or v1) on the sounding-objects "
                                 "world (resumable: run the same command again after a stop)")
    ap.add_argument("--model", choices=("v1", "v2"), default="v2",
                    help="avfusion-v2 (sees time; default) or avfusion-v1 (still pictures)")
    ap.add_argument("--world", type=int, choices=(1, 2), default=None,
                    help="world version of the training scenes (default: 2 for v2, 1 for v1)")
    ap.add_argument("--v1-share", type=float, default=0.2,
                    help="with --world 2: share of the scenes rendered in world 1 (objects that "
                         "do not pulse), so that the model keeps version 1 scenes")
    ap.add_argument("--export-checkpoint", action="store_true",
                    help="train no further: pick the threshold for the checkpoint in --work "
                         "(made with the same settings, any --steps) and export it")
    ap.add_argument("--init", default=None,
                    help="start from this weights file (v1 or v2; the tensors of the same "
                         "name and shape), e.g. models/sounding-objects-v1.safetensors")
    ap.add_argument("--out", default=None,
                    help="the weights file to write (default models/sounding-objects-v2."
                         "safetensors, or -v1 for --model v1)")
    ap.add_argument("--work", default=os.path.join(ROOT, "build-train"),
                    help="scene cache and checkpoint (default build-train/)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scenes", type=int, default=320, help="training scenes")
    ap.add_argument("--val-scenes", type=int, default=12)
    ap.add_argument("--first-seed", type=int, default=100000,
                    help="training scenes use seeds first-seed.. (evaluation uses seeds < 100000)")
    ap.add_argument("--duration", type=float, default=12.0, help="seconds per training scene")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=2e-3)
    add_size_args(ap)
    ap.add_argument("--lookalike-weight", type=float, default=2.0,
                    help="weight of a look-alike frame in the map and auxiliary losses (default 2: "
                         "counted twice)")
    ap.add_argument("--twin-weight", type=float, default=0.0,
                    help="weight of a loss on look-alike frames that moves the map's mass from "
                         "the twin onto the source (default 0: off)")
    ap.add_argument("--av-jitter", type=float, default=0.0,
                    help="ms: move each training sample's sound against its picture by a "
                         "uniform offset up to this much either way (audio encoders delay "
                         "the sound, B-frames the picture; the model must not depend on it)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=2, help="scenes prepared at once")
    ap.add_argument("--log-every", type=int, default=25)
    ap.add_argument("--checkpoint-every", type=int, default=100)
    ap.add_argument("--plugin-path", default=None)
    ap.add_argument("--clips", default=None,
                    help="train on your own clips instead: a folder of clips, each with a "
                         "<name>.truth.tsv beside it (the format model/soworld.py writes); "
                         "every 8th clip is kept for validation")
    ap.add_argument("--unlabeled", metavar="DIR",
                    help="train without any truth, by synchrony, on the clips of DIR (- renders "
                         "scenes, clip files only); see model/train.py --unlabeled - -h")
    args = ap.parse_args(argv)
    set_bins(args.bin_slots, args.lag_min, args.lags)
    if args.world is None:
        args.world = 2 if args.model == "v2" else 1
    if args.world == 1:
        args.v1_share = 0.0
    if args.out is None:
        args.out = os.path.join(ROOT, "models", f"sounding-objects-{args.model}.safetensors")
    rhythm = args.model == "v2"
    t0 = time.time()
    plugin_path = find_plugin_path(args.plugin_path)
    os.makedirs(args.work, exist_ok=True)
    if args.clips:
        pairs = own_clips(args.clips)
        os.makedirs(os.path.join(args.work, "data"), exist_ok=True)
        paths = []
        for k, (clip, truth) in enumerate(pairs):
            print(f"prepare: {clip} ({k + 1}/{len(pairs)})", flush=True)
            paths.append(prepare_clip((clip, truth, args.work, plugin_path)))
        va = [p for k, p in enumerate(paths) if len(paths) > 1 and k % 8 == 7 or
              (len(paths) > 1 and len(paths) < 8 and k == len(paths) - 1)]
        tr = [p for p in paths if p not in va]
        args.scenes, args.first_seed = len(tr), -1
        train_data = SceneSet(tr, args.duration, rhythm)
        val_data = SceneSet(va, args.duration, rhythm)
    else:
        tr_seeds = list(range(args.first_seed, args.first_seed + args.scenes))
        va_seeds = list(range(args.first_seed + 50000, args.first_seed + 50000 + args.val_scenes))
        wo = world_of(args)
        prepare(tr_seeds + va_seeds, args.work, plugin_path, args.duration, args.jobs, wo)
        dp = lambda s: scene_path(args.work, s, wo(s))
        train_data = SceneSet([dp(s) for s in tr_seeds], args.duration, rhythm)
        val_data = SceneSet([dp(s) for s in va_seeds], args.duration, rhythm)
    print(f"prepare: done in {time.time() - t0:.0f} s", flush=True)
    print(f"train: {len(train_data)} training frames in {args.scenes} scenes, "
          f"{len(val_data)} validation frames", flush=True)
    model, step = train(args, train_data, val_data)
    stats = evaluate_set(model, val_data, val_data.index)
    thr, ba = pick_threshold(stats)
    val = summarise(stats)
    val["threshold_balanced_accuracy"] = ba
    print(f"validation ({len(val_data.index)} frames): pointing {val['pointing']:.3f}, "
          f"look-alike pointing {val['lookalike']:.3f} ({val['n_lookalike']} frames), "
          f"nothing-visible AUC {val['auc']:.3f}, threshold {thr:.4g} "
          f"(balanced accuracy {ba:.3f})", flush=True)
    val = {k: ((round(v, 4) if v == v else None) if isinstance(v, float) else v)
           for k, v in val.items()}
    export(args, model, step, thr, val)
    print(f"train: finished in {(time.time() - t0) / 60:.1f} min", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
