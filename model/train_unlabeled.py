#!/usr/bin/python3
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Trains avfusion-v2 from clips nobody labelled: by synchrony (issue 19).

    model/train.py --unlabeled DIR --work build-unl --out my-model.safetensors
    model/train.py --unlabeled - --work build-unl      # rendered scenes, truth never written

Reads the clips of DIR (any clip the pipeline decodes; no ``.truth.tsv`` is
opened, and a folder with none is the normal case).  ``-`` renders
sounding-objects scenes into WORK/clips/ first, clip files only: their truth
is never written, so the trainer cannot read it.

What it learns from, per training frame f of a clip (the frame's picture and
its one-second video history, the rhythm bins of avfusion-v2):

* its own audio window (in sync), against
* the same clip's audio windows from other times (``--shifts`` of them, at
  least ``--min-shift`` seconds away): same colours, same kinds, often the
  same sounds, only the timing differs (``--near-shifts`` more from nearer
  times, ``--near-min-shift`` to ``--min-shift`` away, count for sync and
  rhythm only: such a window often holds the same sound, so it is no
  "nothing sounds" window for the null loss);
* silence (the log-mel of digital silence, made here) and noise (the frame's
  own audio with its slots shuffled in time, which keeps the sounds and
  destroys the rhythm): windows no visible object can follow.

Losses, all on what the plugin reports or computes:

* **sync**: the *peak* of the map the plugin reports (the last layer's
  audio-cross attention, mean over heads and unmasked slots, as
  ``gst_av_attention_meta_get_strongest_patch`` sums it), measured as the
  map's sharpness ``log N + sum_n q_n log q_n`` (its KL from the flat map),
  must be largest for the in-sync audio: an InfoNCE over the in-sync window
  and the shifted ones.  A map can only be sharper for the in-sync window if
  it rests on a patch that moves with that sound.
* **null**: for silence, noise and shifted windows the map is pulled to the
  flat map (KL(flat || q), the labelled trainer's target for "nothing
  visible sounds"), so that the strongest-patch weight can tell "no visible
  source" (the silence loss of DenseAV / SSL-SaN, on the map itself).
* **rhythm** (auxiliary, not exported): the rhythm term alone, read out per
  patch by a linear head (``--readout-hidden H``: a hidden layer of H units)
  and max-pooled over patches, must score the in-sync
  window above the shifted ones (the synchrony signal of Owens & Efros 2018,
  SyncNet): trains the rhythm features directly.
* **located** (``--located-weight W``, auxiliary): the same, but every
  window's read-out is pooled where the *in-sync* window's read-out looks (its
  softmax over patches) instead of at its own best patch: a patch whose
  rhythm matches any window alike (a look-alike twin that swells to a rhythm
  of its own) scores the shifted windows as high as the in-sync one there,
  so the in-sync read-out is pushed off it, onto the patch whose match
  belongs to this time only.
* **follow** (``--early-follow-weight``, then ``--follow-weight`` from
  ``--follow-from``): the in-sync map
  is pulled (KL) to the softmax of that per-patch read-out, which is local to
  each patch, so the map rests on a patch that moves with the sound.  The
  read-out of a one-second window marks the path a moving source swept in
  it; with ``--follow-future S`` the teacher is the product of the frame's
  read-out and that of the frame S seconds later in the same clip (whose
  window starts about where the frame's ends), renormalised (to the power
  ``--follow-future-power`` first): the two paths cross where the source is
  at the frame.  Training may look ahead; the model it trains does not.
  ``--follow-confidence K`` weighs each frame's follow by its teacher's
  sharpness to the power K (measured: it costs pointing, model/README.md).
* ``--focal GAMMA`` makes sync and rhythm focal losses (Lin et al. 2017):
  frames whose rhythm the model already hears weigh little.

The defaults (model/README.md, "One command from nothing"): sync, null
(x 2), rhythm and follow at half weight at rhythm neighbourhood 5 for the
first 4/7 of the steps, then follow at full weight at neighbourhood 1 (each
patch's own rhythm, which puts the map on the source, not beside it), with
the sound moved against the picture by up to 30 ms.  The early follow is
what makes synchrony start: the sync loss's gradient is zero at the flat
map, which the null loss pulls every map to, while follow's target (the
read-out, which learns in every run) is not flat.  With ``--init`` follow is
on from step 0 at neighbourhood 1.

No colour jitter, no greyscale (colour is what tells kinds apart).  Model
selection: the checkpoint with the best truth-free validation measure (sync
accuracy: how often the in-sync window gets the sharpest map among it and
the shifted ones, on held-out clips) is the one exported.  The "nothing
visible sounds" threshold (``visible_threshold``) is picked from the model's
own behaviour on held-out clips: the strongest-patch weight that best
separates in-sync windows from shifted and silent ones (balanced accuracy);
the metadata says so (``visible_threshold_method``).
"""

import json
import math
import os
import random
import signal
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import soworld  # noqa: E402
import train as T  # noqa: E402

VIDEO_EXTS = (".mp4", ".webm", ".mkv", ".ogg", ".ogv", ".mov", ".avi")


# --------------------------------------------------------------------------
# clips: rendered (truth never written) or the user's own
# --------------------------------------------------------------------------

def render_clip(job):
    """Renders one scene into FOLDER as a clip file only (the truth file that
    soworld.encode writes goes to a temporary folder and is deleted)."""
    seed, folder, duration, world = job
    rng = random.Random(seed * 7919 + 17)
    W, H = T.SIZES[rng.randrange(len(T.SIZES))]
    fps = rng.choice([10, 12, 15, 15, 25] if world == 1 else [15, 20, 24, 25, 30])
    sr = rng.choice([48000, 44100, 32000, 16000, 22050])
    ch = rng.choice([1, 1, 2])
    ext = T.CODECS[rng.randrange(2)]
    out = os.path.join(folder, f"scene{world}-{seed}{ext}")
    if os.path.exists(out):
        return out
    kbps = int(max(150, W * H * fps / 1e6 * rng.choice([40, 80, 160])))
    sc = T.make_scene(seed, W, H, fps, duration, sr, ch, world)
    with tempfile.TemporaryDirectory() as tmp:
        clip = os.path.join(tmp, "scene" + ext)
        soworld.encode(sc, clip, quality=kbps)
        os.replace(clip, out + ".part")
    os.replace(out + ".part", out)
    return out


def render_clips(seeds, folder, duration, jobs, world_of):
    import multiprocessing as mp
    os.makedirs(folder, exist_ok=True)
    todo = [(s, folder, duration, world_of(s)) for s in seeds]
    t0 = time.time()
    done = 0
    with mp.get_context("spawn").Pool(jobs) as pool:
        for _ in pool.imap_unordered(render_clip, todo):
            done += 1
            if done % 10 == 0 or done == len(todo):
                print(f"render: {done}/{len(todo)} clips (no truth written), "
                      f"{time.time() - t0:.0f} s", flush=True)


def clips_of(folder):
    clips = sorted(os.path.join(folder, f) for f in os.listdir(folder)
                   if os.path.splitext(f)[1].lower() in VIDEO_EXTS)
    if not clips:
        raise SystemExit(f"train: --unlabeled: no clip ({', '.join(VIDEO_EXTS)}) in {folder}")
    return clips


def prepare_unlabeled(job):
    """Decodes one clip through the real pipeline into WORK/data/unl-NAME.npz:
    pictures, log-mel frames and the windows, nothing else."""
    clip, work, plugin_path = job
    name = os.path.splitext(os.path.basename(clip))[0]
    out = os.path.join(work, "data", f"unl-{name}.npz")
    if os.path.exists(out):
        return out
    frames, fpts, fdur, mel, mpts = T.decode_clip(clip, plugin_path, with_durations=True)
    if len(frames) == 0 or len(mel) == 0:
        raise SystemExit(f"train: --unlabeled: {clip} gave no video or no audio "
                         f"({len(frames)} frames, {len(mel)} mel frames); it needs both")
    np.savez(out + ".tmp.npz", frames=frames, mel=mel.astype(np.float32),
             widx=T.window_index(fpts, mpts), fpts=fpts, fdur=fdur)
    os.replace(out + ".tmp.npz", out)
    return out


def prepare_all(clips, work, plugin_path, jobs):
    import multiprocessing as mp
    os.makedirs(os.path.join(work, "data"), exist_ok=True)
    t0 = time.time()
    jobs_ = [(c, work, plugin_path) for c in clips]
    paths = []

    def note(k):
        if (k + 1) % 10 == 0 or k + 1 == len(jobs_):
            print(f"prepare: {k + 1}/{len(jobs_)} clips decoded, {time.time() - t0:.0f} s",
                  flush=True)
    if jobs <= 1:                           # in this process (what the no-truth test watches)
        for k, j in enumerate(jobs_):
            paths.append(prepare_unlabeled(j))
            note(k)
        return paths
    with mp.get_context("spawn").Pool(jobs) as pool:
        for k, p in enumerate(pool.imap(prepare_unlabeled, jobs_)):
            paths.append(p)
            note(k)
    return paths


# --------------------------------------------------------------------------
# the prepared clips, in memory: pictures, audio windows, rhythm bins
# --------------------------------------------------------------------------

class ClipSet:
    """Prepared clips (prepare_unlabeled's files only: pictures, log-mel
    frames, windows, frame times) and, per frame, the rhythm bins of its
    window (which earlier frame shows each bin at each lag)."""

    def __init__(self, paths, min_shift, near_min_shift=None):
        self.clips = []
        for p in paths:
            z = np.load(p)
            d = {k: z[k] for k in ("frames", "mel", "widx", "fpts", "fdur")}
            d["pooled"] = T.pooled_frames(d["frames"])
            d["bins"] = np.stack([T.scene_bins(d["fpts"], d["fdur"], bin_slots=T.BIN_SLOTS,
                                                n_bins=T.N_BINS, lag=T.LAG_MIN + j)
                                  for j in range(T.N_LAGS)], axis=1)          # [F, lags, K]
            d["full"] = (d["widx"] >= 0).mean(axis=1)                           # share of slots
            self.clips.append(d)
        self.min_shift_ns = int(min_shift * 1e9)
        self.near_min_ns = int((min_shift if near_min_shift is None else near_min_shift) * 1e9)
        # frames with a whole window of audio and at least two video bins
        self.index = [(c, f) for c, d in enumerate(self.clips) for f in range(len(d["frames"]))
                      if d["full"][f] > 0.99 and (d["bins"][f] >= 0).sum() >= 2 * T.N_LAGS
                      and len(self.shift_candidates(c, f))]
        import avfusion
        import torch
        self.silence = avfusion.log_mel(torch.zeros(T.SAMPLE_RATE * 2), T.SAMPLE_RATE, 400,
                                        T.HOP, 64, 0.0, 8000.0)[0].numpy().astype(np.float32)

    def __len__(self):
        return len(self.index)

    def shift_candidates(self, c, f, near=False):
        """Frames of clip c with a whole window at least min_shift from
        frame f's (near: at least --near-min-shift, less than min_shift)."""
        d = self.clips[c]
        dt = np.abs(d["fpts"] - d["fpts"][f])
        ok = ((dt >= self.near_min_ns) & (dt < self.min_shift_ns) if near
              else dt >= self.min_shift_ns)
        return np.nonzero(ok & (d["full"] > 0.99))[0]

    def near_shifted(self, c, f, n, rng):
        """n frames of clip c whose windows lie at least --near-min-shift but
        less than min_shift from frame f's (--near-shifts; the far ones
        where the clip has none so near)."""
        ok = self.shift_candidates(c, f, near=True)
        if not len(ok):
            ok = self.shift_candidates(c, f)
        return rng.choice(ok, size=n, replace=len(ok) < n)

    def shifted(self, c, f, n, rng):
        """n frames of clip c whose windows lie at least min_shift from frame
        f's (drawn with replacement where the clip has fewer)."""
        ok = self.shift_candidates(c, f)
        return rng.choice(ok, size=n, replace=len(ok) < n)

    def later(self, c, f, dt):
        """The frame of clip c nearest ``dt`` seconds after frame f that has a
        whole window and its rhythm bins (the follow teacher's second
        window, --follow-future), or f itself when the clip ends before."""
        d = self.clips[c]
        t = d["fpts"]
        g = int(np.argmin(np.abs(t - (t[f] + dt * 1e9))))
        ok = (g > f and d["full"][g] > 0.99 and (d["bins"][g] >= 0).sum() >= 2 * T.N_LAGS
              and abs(int(t[g]) - int(t[f]) - dt * 1e9) < 0.2e9)
        return g if ok else f

    def later_batch(self, items, dt, rng, flip=None, av_offset=None):
        """The follow teacher's second windows (--follow-future): for B (clip,
        frame) items, (hframes, hidx, mel, has) of the frame ``dt`` seconds
        later in the same clip (``later``), with the same flips and audio
        offsets; ``has`` [B] is False where there is none."""
        import torch
        li = [(c, self.later(c, f, dt)) for c, f in items]
        _, hf, hidx, mel = self.batch(li, 0, rng, flip=flip, av_offset=av_offset)
        return hf, hidx, mel, torch.tensor([x[1] != y[1] for x, y in zip(li, items)])

    def _windows(self, mel, d, frames, first, o):
        """Into mel[first:], the audio windows of frames of clip d, moved o
        slots late; slots outside the clip are silence."""
        for w, fr in enumerate(frames, start=first):
            src = d["widx"][fr] - o
            ok = (d["widx"][fr] >= 0) & (src >= 0) & (src < len(d["mel"]))
            mel[w, ok] = d["mel"][src[ok]]
            mel[w, ~ok] = self.silence

    def batch(self, items, shifts, rng, flip=None, av_offset=None, near=0):
        """For B (clip, frame) items: the picture [B, 224, 224, 3], the
        pooled history frames and [B, lags, K] indices into them, and the
        candidate audio windows [B, 1 + shifts + 2, T, M]: in sync, shifted,
        noise (the in-sync window's slots shuffled), silence, then ``near``
        windows from nearer times (--near-shifts).  ``av_offset``:
        per item, audio slots (10 ms) by which every one of its windows is
        moved late against the picture (negative: early), as encoders move
        the sound (--av-jitter); slots that fall outside the clip are
        silence."""
        import torch
        B, W = len(items), 1 + shifts + 2 + near
        rgb = np.zeros((B, T.MODEL_SIDE, T.MODEL_SIDE, 3), np.uint8)
        mel = np.zeros((B, W, T.T_SLOTS, 64), np.float32)
        hidx = np.full((B, T.N_LAGS, T.N_BINS), -1, np.int64)
        hframes = []
        for b, (c, f) in enumerate(items):
            d = self.clips[c]
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
            rgb[b] = img[:, ::-1] if flip is not None and flip[b] else img
            o = int(av_offset[b]) if av_offset is not None else 0
            self._windows(mel[b], d, [f] + list(self.shifted(c, f, shifts, rng)), 0, o)
            mel[b, 1 + shifts] = mel[b, 0][rng.permutation(T.T_SLOTS)]
            mel[b, 2 + shifts] = self.silence
        # the nearer windows last, so that the others are drawn as without them
        for b, (c, f) in enumerate(items if near else []):
            o = int(av_offset[b]) if av_offset is not None else 0
            self._windows(mel[b], self.clips[c], self.near_shifted(c, f, near, rng), 3 + shifts, o)
        hf = np.stack(hframes) if hframes else np.zeros((0, 3, 56, 56), np.float16)
        return (torch.from_numpy(rgb), torch.from_numpy(np.ascontiguousarray(hf)),
                torch.from_numpy(hidx), torch.from_numpy(mel))


# --------------------------------------------------------------------------
# the model's map for each candidate window, and the losses
# --------------------------------------------------------------------------

def maps_of(model, rgb, hframes, hidx, mel):
    """The reported map q [B, W, N] (last layer's audio-cross attention, mean
    over heads and slots) and the rhythm term [B, W, N, E] for each of the W
    candidate windows of each frame; the picture and the rhythm features are
    computed once per frame."""
    import torch
    import avfusion
    B, W, Tn, M = mel.shape
    v0 = avfusion.AvFusion.embed_video(model, rgb)                       # [B, N, E]
    term = windows_term(model, hframes, hidx, mel)
    melf = mel.reshape(B * W, Tn, M)
    mask = torch.zeros((B * W, Tn), dtype=torch.bool)
    v = v0.unsqueeze(1).expand(B, W, *v0.shape[1:]).reshape(B * W, *v0.shape[1:]) + term
    a = model.audio_proj(melf) + model.audio_pos[:Tn]
    L = len(model.layers)
    for i, layer in enumerate(model.layers):
        a, v, maps = layer(a, v, mask, need_weights=i == L - 1)
    q = maps["audio_cross"].mean(dim=1)                                 # [B*W, N]
    N = q.shape[-1]
    return q.reshape(B, W, N), term.reshape(B, W, N, -1)


def windows_term(model, hframes, hidx, mel):
    """The rhythm term [B*W, N, E] of each of the W candidate windows
    ``mel`` [B, W, T, M] of B frames, at the model's neighbourhood; each
    frame's rhythm features are computed once."""
    import torch
    B, W, Tn, M = mel.shape
    hist = T.history_rows(model, hframes, hidx, mel.dtype)
    rep = lambda t: t.unsqueeze(1).expand(B, W, *t.shape[1:]).reshape(B * W, *t.shape[1:])
    return model.rhythm_term(mel.reshape(B * W, Tn, M), torch.zeros((B * W, Tn), dtype=torch.bool),
                             rep(hist), rep(hidx < 0))


def teacher(logits, wide_logits, teacher_weight):
    """Follow's teacher over patches from the read-out's logits [B, N]: its
    softmax, or with a wide read-out's logits the product of the two
    softmaxes, the wide one to the power ``teacher_weight``, renormalised."""
    import torch
    if wide_logits is None:
        return torch.softmax(logits, dim=-1)
    return torch.softmax(torch.log_softmax(logits, dim=-1) +
                         teacher_weight * torch.log_softmax(wide_logits, dim=-1), dim=-1)


def local_peaks(p, k, share=1.0):
    """--teacher-peaks K: follow's teacher [B, N] (N patches of a square
    grid) kept at its local maxima over K x K patches and scaled by 1e-3
    elsewhere, renormalised; with ``share`` (--teacher-peaks-share S) below
    1, S of that and 1 - S of the teacher as it was.  The split
    neighbourhood's read-out spreads a source over the ring its K x K mean
    reaches, and the map learns that ring from it (a second source loses to
    it, model/README.md); the map is then pulled to one patch per peak."""
    import torch.nn.functional as Fn
    B, N = p.shape
    g = int(round(math.sqrt(N)))
    grid = p.reshape(B, 1, g, g)
    peak = (grid >= Fn.max_pool2d(grid, k, 1, k // 2)).reshape(B, N).to(p.dtype)
    kept = p * (peak + 1e-3)
    kept = kept / kept.sum(dim=-1, keepdim=True)
    return kept if share == 1.0 else share * kept + (1.0 - share) * p


def sharpness(q):
    """KL(q || flat) = log N + sum q log q: 0 for a flat map, log N for one
    patch."""
    return math.log(q.shape[-1]) + (q * torch_log(q)).sum(dim=-1)


def torch_log(q):
    return q.clamp(min=1e-9).log()


def readout(model, head, hframes, hidx, mel, teacher_weight=1.0):
    """The rhythm read-out's softmax over patches [B, N] for the in-sync
    window (``mel[:, 0]``) of B frames: the rhythm term alone, no layers.
    With a wide read-out (--teacher-neighbourhood) the product of the two,
    the wide one to the power ``teacher_weight``, renormalised."""
    import torch
    mask = torch.zeros(mel.shape[:1] + mel.shape[2:3], dtype=torch.bool)
    hist = T.history_rows(model, hframes, hidx, mel.dtype)
    logits = head(model.rhythm_term(mel[:, 0], mask, hist, hidx < 0))[..., 0]
    wide = None
    if getattr(head, "wide", None) is not None:
        with at_neighbourhood(model, head.neighbourhood):
            hist = T.history_rows(model, hframes, hidx, mel.dtype)
        wide = head.wide(model.rhythm_term(mel[:, 0], mask, hist, hidx < 0))[..., 0]
    return teacher(logits, wide, teacher_weight)


class at_neighbourhood:
    """``with at_neighbourhood(model, k):`` the model's rhythm features at
    neighbourhood k inside the block (a forward-time setting, no tensor)."""

    def __init__(self, model, k):
        self.model, self.k = model, k

    def __enter__(self):
        self.old, self.model.neighbourhood = self.model.neighbourhood, self.k

    def __exit__(self, *exc):
        self.model.neighbourhood = self.old


def wide_readout(head, embed_dim, k):
    """--teacher-neighbourhood K: the rhythm read-out ``head`` (still what
    ``head(term)`` computes) with a second linear read-out, ``.wide``, of the
    rhythm term at neighbourhood K, trained by the same rhythm loss and
    joining follow's teacher.  Not exported (the model keeps its own
    neighbourhood)."""
    import torch

    class ReadOut(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.near = head
            self.wide = torch.nn.Linear(embed_dim, 1)
            self.neighbourhood = k
            # .wide loaded from a read-out trained at k (make_model): no warm-up
            self.trained = False

        def forward(self, term):
            return self.near(term)

        def load_state_dict(self, state, strict=True):
            if not any(key.startswith("near.") for key in state):
                # a checkpoint without the wide read-out: its read-out is .near
                return self.near.load_state_dict(state, strict)
            return super().load_state_dict(state, strict)
    return ReadOut()


def first_ce(logits, gamma=0.0):
    """Cross-entropy of the first of each row's candidates (the in-sync
    window); with ``gamma`` > 0 the focal loss (Lin et al. 2017),
    -(1 - p)^gamma log p: frames the model already places in sync weigh
    little, hard ones (a rhythm it does not yet hear) nearly fully."""
    import torch
    import torch.nn.functional as Fn
    if not gamma:
        return Fn.cross_entropy(logits, torch.zeros(len(logits), dtype=torch.long))
    logp = Fn.log_softmax(logits, dim=-1)[:, 0]
    return -((1 - logp.exp()) ** gamma * logp).mean()


def located_ce(logits, gamma=0.0):
    """--located-weight's loss on the read-out's logits [B, W, N] (window 0
    in sync): every window's logits pooled by the in-sync window's softmax
    over patches, then first_ce.  Not detached: the in-sync read-out moves
    off a patch that matches the shifted windows as well as its own, onto
    one whose match belongs to this time only."""
    import torch
    att = torch.softmax(logits[:, 0], dim=-1)                           # [B, N]
    return first_ce((att[:, None, :] * logits).sum(dim=-1), gamma)


def losses(model, head, batch, tau, null_weight, rhythm_weight, follow_weight=0.0,
           later=None, power=1.0, focal=0.0, confidence=0.0, near=0, located=0.0,
           teacher_weight=1.0, peaks=0, peaks_share=1.0):
    """``focal`` (--focal): the sync and rhythm losses as focal losses.
    ``confidence`` (--follow-confidence K): each frame's follow loss weighed
    by its teacher's sharpness (KL to the flat map over log N, 0..1) to the
    power K, the weights normalised to mean 1 over the batch.
    ``later`` (--follow-future): (hframes, hidx, mel, has) of a frame about
    a second after each one; the follow teacher is then the read-out of the
    frame's own window times that of the later frame's, raised to ``power``
    (--follow-future-power; 0.5: their geometric mean) and renormalised,
    where ``has`` says there is one (elsewhere the frame's read-out to that
    power): a moving source's past path and its future path cross where it
    is now.  ``near`` (--near-shifts): the batch's last windows are from
    nearer times; they are synchrony's negatives but not the null loss's.
    ``located`` (--located-weight): the weight of the rhythm loss on each
    window's read-out pooled by the in-sync window's softmax over patches.
    With a wide read-out (``head.wide``, --teacher-neighbourhood K) the same
    rhythm loss trains it on the rhythm term at neighbourhood K (reported as
    ``rhythm_wide``), and follow's teacher is the product of the two
    read-outs' softmaxes, the wide one to the power ``teacher_weight``
    (--teacher-weight), renormalised: the wide one tells which of two
    look-alikes follows the sound (its 5 x 5 mean is robust to the motion of
    one patch), the one at the model's own neighbourhood which patch.
    ``peaks`` (--teacher-peaks K): the teacher kept at its local maxima over
    K x K patches, ``peaks_share`` of it (local_peaks).
    """
    import torch
    import torch.nn.functional as Fn
    rgb, hframes, hidx, mel = batch
    q, term = maps_of(model, rgb, hframes, hidx, mel)
    B, W, N = q.shape
    s = sharpness(q)                                                    # [B, W]
    sync = first_ce(s / tau, focal)
    # everything but the in-sync window: no visible source, the flat map
    null = (-math.log(N) - torch_log(q[:, 1:W - near]).mean(dim=-1)).mean()
    logits = head(term)[..., 0]                                         # [B, W, N]
    score = torch.logsumexp(logits, dim=-1)                             # [B, W]
    rhythm = first_ce(score, focal)
    acc = float((s[:, 0:1] > s[:, 1:]).all(dim=1).float().mean())
    # follow: the in-sync map rests where the rhythm read-out (per patch,
    # local to the patch) finds the sound's rhythm, KL(p || q), p detached
    wide = getattr(head, "wide", None)
    wlogits = None
    if wide is not None:
        with at_neighbourhood(model, head.neighbourhood):
            wlogits = wide(windows_term(model, hframes, hidx, mel))[..., 0].reshape(B, W, N)
        rhythm_wide = first_ce(torch.logsumexp(wlogits, dim=-1), focal)
    p = teacher(logits[:, 0], None if wlogits is None else wlogits[:, 0], teacher_weight).detach()
    if later is not None:
        with torch.no_grad():
            pl = readout(model, head, *later[:3], teacher_weight=teacher_weight)
        pl = torch.where(later[3][:, None], pl, torch.ones_like(pl))
        p = (p * pl) ** power
        p = p / p.sum(dim=-1, keepdim=True)
    if peaks:
        p = local_peaks(p, peaks, peaks_share)
    kl = (p * (torch_log(p) - torch_log(q[:, 0]))).sum(dim=-1)             # [B]
    if confidence:
        w = (sharpness(p) / math.log(N)).clamp(min=0.0) ** confidence
        follow = (w * kl).sum() / w.sum().clamp(min=1e-9)
    else:
        follow = kl.mean()
    total = sync + null_weight * null + rhythm_weight * rhythm + follow_weight * follow
    parts = dict(sync=float(sync), null=float(null), rhythm=float(rhythm),
                 follow=float(follow), acc=acc)
    if wide is not None:
        total = total + rhythm_weight * rhythm_wide
        parts["rhythm_wide"] = float(rhythm_wide)
    if located:
        loc = located_ce(logits, focal)
        total = total + located * loc
        parts["located"] = float(loc)
    return total, parts


def validate(model, head, data, items, shifts, seed, bs=16):
    """Truth-free measures on held-out clips: sync accuracy (the in-sync
    window's map is the sharpest of it and its shifted windows), the
    strongest-patch weight of in-sync, shifted and silent windows, and how
    often the in-sync map's strongest patch is the rhythm read-out's
    (``map_on_readout``: the map rests where a patch's own rhythm follows
    the sound; over runs it follows the design scenes'
    pointing, which sync accuracy does not: model/README.md)."""
    import torch
    rng = np.random.default_rng([seed, 7])
    ins, outs, sil, hits, on = [], [], [], [], []
    model.eval()
    with torch.no_grad():
        for k in range(0, len(items), bs):
            q, term = maps_of(model, *data.batch(items[k:k + bs], shifts, rng))
            s = sharpness(q)
            hits += list((s[:, 0:1] > s[:, 1:1 + shifts]).all(dim=1).numpy())
            r = head(term[:, 0])[..., 0]
            on += list((q[:, 0].argmax(dim=-1) == r.argmax(dim=-1)).numpy())
            w = q.max(dim=-1).values.numpy()
            ins += list(w[:, 0])
            outs += list(w[:, 1:1 + shifts].reshape(-1))
            sil += list(w[:, -1])
    model.train()
    neg = outs + sil
    return dict(sync_accuracy=float(np.mean(hits)) if hits else float("nan"),
                sync_auc=T.auc(ins, neg), ins=ins, neg=neg,
                map_on_readout=float(np.mean(on)) if on else float("nan"))


def truth_free_threshold(ins, neg):
    """The strongest-patch weight with the best balanced accuracy between
    in-sync windows and shifted or silent ones (all from held-out clips):
    the train.py rule, with the model's own windows standing for the truth."""
    stats = [(w, True, True, False, 1, False) for w in ins] + \
            [(w, False, True, True, 0, False) for w in neg]
    return T.pick_threshold(stats)


# --------------------------------------------------------------------------
# training (resumable) and export
# --------------------------------------------------------------------------

def config_of(a):
    return dict(mode="unlabeled-sync-v1", seed=a.seed, steps=a.steps, batch=a.batch, lr=a.lr,
                shifts=a.shifts, min_shift=a.min_shift, tau=a.tau, null_weight=a.null_weight,
                rhythm_weight=a.rhythm_weight,
                **({"follow_weight": a.follow_weight} if a.follow_weight else {}),
                **({"follow_from": a.follow_from} if a.follow_from else {}),
                **({"early_neighbourhood": a.early_neighbourhood}
                   if a.early_neighbourhood not in (None, a.rhythm_neighbourhood) else {}),
                **({"early_null_weight": a.early_null_weight}
                   if a.early_null_weight not in (None, a.null_weight) else {}),
                **({"early_follow_weight": a.early_follow_weight}
                   if a.early_follow_weight else {}),
                **({"av_jitter": a.av_jitter} if a.av_jitter else {}),
                **({"follow_future": a.follow_future} if a.follow_future else {}),
                **({"follow_future_power": a.follow_future_power}
                   if a.follow_future and a.follow_future_power != 1.0 else {}),
                **({"focal": a.focal} if a.focal else {}),
                **({"follow_confidence": a.follow_confidence} if a.follow_confidence else {}),
                **({"readout_hidden": a.readout_hidden} if a.readout_hidden else {}),
                **({"near_shifts": a.near_shifts, "near_min_shift": a.near_min_shift}
                   if a.near_shifts else {}),
                **({"located_weight": a.located_weight} if a.located_weight else {}),
                **({"teacher_neighbourhood": a.teacher_neighbourhood,
                    "teacher_weight": a.teacher_weight} if a.teacher_neighbourhood else {}),
                **({"teacher_peaks": a.teacher_peaks} if a.teacher_peaks else {}),
                **({"head_warmup": a.head_warmup} if a.head_warmup else {}),
                **({"teacher_peaks_share": a.teacher_peaks_share}
                   if a.teacher_peaks and a.teacher_peaks_share != 1.0 else {}),
                **({"bins": [a.bin_slots, a.lag_min, a.lags]}
                   if (a.bin_slots, a.lag_min, a.lags) != (4, -1, 5) else {}), embed_dim=a.embed_dim, heads=a.heads,
                layers=a.layers, ffn_dim=a.ffn_dim, rhythm_dim=a.rhythm_dim,
                audio_rhythm_dim=a.audio_rhythm_dim, neighbourhood=a.rhythm_neighbourhood,
                **({"neighbourhood_from": a.rhythm_neighbourhood_from}
                   if a.rhythm_neighbourhood_from else {}),
                init=os.path.basename(a.init) if a.init else None, clips=a.n_clips)


def make_model(a):
    import torch
    import avfusion2
    torch.manual_seed(a.seed)
    model = avfusion2.AvFusionV2(embed_dim=a.embed_dim, num_heads=a.heads, num_layers=a.layers,
                                 ffn_dim=a.ffn_dim, rhythm_dim=a.rhythm_dim,
                                 audio_rhythm_dim=a.audio_rhythm_dim, rhythm_pool=T.RHYTHM_POOL,
                                 bin_slots=T.BIN_SLOTS, num_bins=T.N_BINS, num_lags=T.N_LAGS,
                                 lag_min=T.LAG_MIN, neighbourhood=a.rhythm_neighbourhood,
                                 neighbourhood_from=a.rhythm_neighbourhood_from)
    head = (torch.nn.Sequential(torch.nn.Linear(a.embed_dim, a.readout_hidden), torch.nn.GELU(),
                                torch.nn.Linear(a.readout_hidden, 1))
            if a.readout_hidden else torch.nn.Linear(a.embed_dim, 1))
    if a.teacher_neighbourhood:
        head = wide_readout(head, a.embed_dim, a.teacher_neighbourhood)
    if a.init and a.init.endswith(".pt"):
        # a checkpoint of this trainer: the model and its rhythm read-out
        st = torch.load(a.init, map_location="cpu")
        model.load_state_dict(st["model"])
        head.load_state_dict(st["head"])
        if (a.teacher_neighbourhood and not any(k.startswith("near.") for k in st["head"])
                and st.get("config", {}).get("neighbourhood") == a.teacher_neighbourhood):
            # its read-out was trained at the second read-out's neighbourhood
            # (.wide, whatever K): it starts that one too, which then needs no
            # warm-up
            head.wide.load_state_dict(st["head"])
            head.trained = True
            print(f"train: the second read-out (neighbourhood {a.teacher_neighbourhood}) starts "
                  f"from the checkpoint's, trained there", flush=True)
        print(f"train: started from the checkpoint {a.init} (step {st['step']})", flush=True)
    elif a.init:
        T.init_from(model, a.init)
    return model, head


def phase_value(a, step, early, late):
    """``early`` (when set) before --follow-from, ``late`` from it on."""
    return early if early is not None and step < a.follow_from else late


def neighbourhood_at(a, step):
    """The rhythm neighbourhood of training step ``step``."""
    return phase_value(a, step, a.early_neighbourhood, a.rhythm_neighbourhood)


def null_weight_at(a, step):
    """The null loss's weight at training step ``step``."""
    return phase_value(a, step, a.early_null_weight, a.null_weight)


def follow_weight_at(a, step):
    """The follow loss's weight at training step ``step`` (before
    --follow-from: --early-follow-weight's, 0 unless set)."""
    return phase_value(a, step, a.early_follow_weight or 0.0, a.follow_weight)


def teacher_weight_at(a, step, head=None):
    """--teacher-weight, rising from 0 over the first quarter of the steps
    (from where a run starts: the wide read-out starts untrained), or from
    the start where it was loaded from a read-out trained at its
    neighbourhood (make_model), or once --head-warmup has trained it."""
    if getattr(head, "trained", False) or (a.head_warmup and step >= a.head_warmup):
        return a.teacher_weight
    return a.teacher_weight * min(1.0, step / max(1.0, a.steps / 4))


def warming_up(a, step):
    """True in the first --head-warmup steps: the read-outs train, the
    model does not, and follow is off (its teacher is not yet trained)."""
    return step < a.head_warmup


def train(a, data, val, val_items):
    import torch
    torch.set_num_threads(a.threads)
    model, head = make_model(a)
    params = list(model.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=a.lr, weight_decay=0.01)
    ck = os.path.join(a.work, "checkpoint-unlabeled.pt")
    best_path = os.path.join(a.work, "best-unlabeled.pt")
    step, best = 0, dict(score=-1.0, step=0)
    if os.path.exists(ck):
        st = torch.load(ck, map_location="cpu")
        if st.get("config") == config_of(a):
            model.load_state_dict(st["model"])
            head.load_state_dict(st["head"])
            opt.load_state_dict(st["opt"])
            step, best = st["step"], st["best"]
            print(f"train: resuming from {ck} at step {step}", flush=True)
        else:
            print(f"train: {ck} is from other settings; starting afresh", flush=True)
    stop = {"now": False}
    old = {s: signal.signal(s, lambda *_: stop.update(now=True)) for s in (signal.SIGTERM, signal.SIGINT)}

    def save(path, extra=None):
        torch.save(dict(model=model.state_dict(), head=head.state_dict(), opt=opt.state_dict(),
                        step=step, best=best, config=config_of(a), **(extra or {})), path + ".tmp")
        os.replace(path + ".tmp", path)

    t0, start, run = time.time(), step, {}
    while step < a.steps and not stop["now"]:
        g = np.random.default_rng([a.seed, step])
        items = [data.index[i] for i in g.integers(0, len(data), a.batch)]
        flip = g.random(a.batch) < 0.5
        # sound moved against the picture by up to --av-jitter ms either way
        jit = int(round(a.av_jitter / 10))
        offs = g.integers(-jit, jit + 1, a.batch) if jit > 0 else None
        batch = data.batch(items, a.shifts, g, flip=flip, av_offset=offs, near=a.near_shifts)
        warming = warming_up(a, step)
        model.requires_grad_(not warming)   # the read-outs only: no backward through the model
        follow_w = 0.0 if warming else follow_weight_at(a, step)
        later = None
        if a.follow_future and follow_w:
            later = data.later_batch(items, a.follow_future, g, flip=flip, av_offset=offs)
        warm = min(1.0, (step + 1) / max(1, a.steps // 20))
        lr = a.lr * warm * 0.5 * (1 + math.cos(math.pi * step / a.steps))
        for gr in opt.param_groups:
            gr["lr"] = lr
        # the neighbourhood is a forward-time setting (no tensor): before
        # --follow-from it may be --early-neighbourhood's, after it the one
        # exported
        model.neighbourhood = neighbourhood_at(a, step)
        loss, parts = losses(model, head, batch, a.tau, null_weight_at(a, step), a.rhythm_weight,
                             follow_w, later, a.follow_future_power, a.focal,
                             a.follow_confidence, a.near_shifts, a.located_weight,
                             teacher_weight_at(a, step, head), a.teacher_peaks,
                             a.teacher_peaks_share)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        step += 1
        for k, v in parts.items():
            run[k] = run.get(k, 0.0) + v
        run["n"] = run.get("n", 0) + 1
        if step % a.log_every == 0 or step == a.steps:
            rate = (step - start) / max(time.time() - t0, 1e-9)
            n = run.pop("n")
            msg = (f"train: step {step}/{a.steps}  " +
                   "  ".join(f"{k} {v / n:.3f}" for k, v in run.items()) +
                   f"  lr {lr:.2e}  {rate:.2f} steps/s, about "
                   f"{(a.steps - step) / max(rate, 1e-9) / 60:.1f} min left")
            run = {}
            if val_items and (step % (a.log_every * a.val_every) == 0 or step == a.steps):
                v = validate(model, head, val, val_items, a.shifts, a.seed)
                msg += (f"  | val sync accuracy {v['sync_accuracy']:.3f} AUC {v['sync_auc']:.3f}"
                        f" map on read-out {v['map_on_readout']:.3f}")
                # the best of the last phase: before --follow-from the map
                # is not yet pulled onto the rhythm, whatever its sharpness
                if (v["sync_accuracy"] > best["score"] and step > a.follow_from
                        and step > a.head_warmup):
                    best = dict(score=v["sync_accuracy"], step=step)
                    save(best_path)
                    msg += " (best)"
            print(msg, flush=True)
        if step % a.checkpoint_every == 0:
            save(ck)
    save(ck)
    model.neighbourhood = a.export_neighbourhood
    for s, h in old.items():
        signal.signal(s, h)
    if stop["now"]:
        print(f"train: stopped at step {step}; run the same command again to resume", flush=True)
        sys.exit(130)
    if os.path.exists(best_path):
        st = torch.load(best_path, map_location="cpu")
        if st.get("config") == config_of(a):
            model.load_state_dict(st["model"])
            head.load_state_dict(st["head"])
            print(f"train: exporting the best checkpoint by truth-free validation: step "
                  f"{st['step']} (sync accuracy {best['score']:.3f})", flush=True)
            step = st["step"]
    return model, head, step


def export(a, model, step, thr, ba, v):
    import avfusion2
    meta = {
        "world": (f"rendered sounding-objects scenes, clips only (seeds {a.first_seed}.., "
                  f"world 2 with {a.v1_share:.0%} world 1)" if a.unlabeled == "-"
                  else f"unlabelled clips ({os.path.basename(os.path.abspath(a.unlabeled))})"),
        "description": ("avfusion-v2 trained without truth (model/train.py --unlabeled): by "
                        "synchrony, the map of a frame with its own audio against the same "
                        "clip's audio from other times, silence and noise. No boxes, sources, "
                        "segments or negative flags were read."),
        "training_truth": "none",
        "visible_threshold": f"{thr:.6g}",
        "visible_threshold_method": (
            "truth-free: the strongest-patch weight with the best balanced accuracy "
            f"({ba:.3f}) between in-sync windows and the same clips' shifted and silent "
            f"windows, on {a.n_val} held-out clips"),
        "trained_by": "model/train.py --unlabeled",
        "training_seed": str(a.seed),
        "training_init": os.path.basename(a.init) if a.init else "none (from scratch)",
        "training_steps": str(step),
        "training_batch": f"{a.batch} frames x {a.shifts + 3} windows",
        "training_clips": str(a.n_clips),
        "training_losses": ((f"focal (gamma {a.focal:g}) " if a.focal else "")
                            + f"sync (tau {a.tau:g}), null "
                            + (f"{a.early_null_weight:g} then "
                               if a.early_null_weight not in (None, a.null_weight) else "")
                            + f"{a.null_weight:g}, rhythm "
                            f"{a.rhythm_weight:g}" + (" (focal)" if a.focal else "") + ", follow "
                            + (f"{a.early_follow_weight:g} then " if a.early_follow_weight else "")
                            + f"{a.follow_weight:g}"
                            + (f" from step {a.follow_from}" if a.follow_from else "")
                            + (f" (teacher: the read-out of the frame's window times that of "
                               f"the frame {a.follow_future:g} s later"
                               + (f", to the power {a.follow_future_power:g}"
                                  if a.follow_future_power != 1.0 else "") + ")"
                               if a.follow_future else "")
                            + (f", each frame's follow weighed by its teacher's sharpness to "
                               f"the power {a.follow_confidence:g}" if a.follow_confidence else "")
                            + (f"; rhythm read-out: a hidden layer of {a.readout_hidden}"
                               if a.readout_hidden else "")
                            + (f"; {a.near_shifts} more shifted windows {a.near_min_shift:g} to "
                               f"{a.min_shift:g} s away, in sync and rhythm only"
                               if a.near_shifts else "")
                            + (f"; located {a.located_weight:g} (each window's read-out pooled "
                               f"where the in-sync window's looks)" if a.located_weight else "")
                            + (f"; follow's teacher also the read-out at neighbourhood "
                               f"{a.teacher_neighbourhood} (to the power {a.teacher_weight:g})"
                               if a.teacher_neighbourhood else "")
                            + (f"; follow's teacher kept at its local maxima over "
                               f"{a.teacher_peaks} x {a.teacher_peaks} patches"
                               + (f" ({a.teacher_peaks_share:g} of it; the rest the whole "
                                  f"teacher)" if a.teacher_peaks_share != 1.0 else "")
                               if a.teacher_peaks else "")
                            + (f"; the first {a.head_warmup} steps trained the rhythm "
                               f"read-out only (the model frozen, no follow)"
                               if a.head_warmup else "")
                            + (f"; trained at rhythm neighbourhood {a.rhythm_neighbourhood}, "
                               f"exported (and its threshold picked) at {a.export_neighbourhood}"
                               if a.export_neighbourhood != a.rhythm_neighbourhood else "")),
        **({"training_av_jitter_ms": f"{a.av_jitter:g}"} if a.av_jitter else {}),
        "validation": json.dumps(dict(sync_accuracy=round(v["sync_accuracy"], 4),
                                      sync_auc=round(v["sync_auc"], 4),
                                      map_on_readout=round(v["map_on_readout"], 4)),
                                 sort_keys=True),
    }
    sd = {k: t.detach() for k, t in model.state_dict().items()}
    tmp = a.out + ".tmp"
    avfusion2.export_state_dict(sd, a.heads, T.BIN_SLOTS, T.LAG_MIN, tmp, metadata=meta,
                                neighbourhood=a.export_neighbourhood,
                                neighbourhood_from=a.rhythm_neighbourhood_from,
                                sample_rate=T.SAMPLE_RATE,
                                n_fft=400, hop_length=T.HOP, n_mels=64, patch_size=T.PATCH,
                                window_ms=1000)
    os.replace(tmp, a.out)
    print(f"export: wrote {a.out} ({os.path.getsize(a.out) / 1e6:.2f} MB), trained without "
          f"truth, visible_threshold {thr:.4g} (truth-free, balanced accuracy {ba:.3f})",
          flush=True)


def parse(argv):
    import argparse
    ap = argparse.ArgumentParser(
        prog="model/train.py --unlabeled",
        description="train avfusion-v2 without truth, by synchrony (resumable: run the same "
                    "command again after a stop)")
    ap.add_argument("--unlabeled", required=True, metavar="DIR",
                    help="a folder of clips (no truth files are read), or - to render "
                         "sounding-objects scenes into WORK/clips first (clip files only)")
    ap.add_argument("--out", default=None,
                    help="weights file (default models/sounding-objects-unlabeled.safetensors)")
    ap.add_argument("--work", default=os.path.join(T.ROOT, "build-train-unlabeled"))
    ap.add_argument("--init", default=None,
                    help="fine-tune from this weights file (or a checkpoint .pt of this trainer)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scenes", type=int, default=128, help="with -: clips to render")
    ap.add_argument("--val-scenes", type=int, default=10, help="with -: held-out clips to render")
    ap.add_argument("--first-seed", type=int, default=100000)
    ap.add_argument("--world", type=int, choices=(1, 2), default=2)
    ap.add_argument("--v1-share", type=float, default=0.2)
    ap.add_argument("--duration", type=float, default=8.0, help="with -: seconds per clip")
    ap.add_argument("--steps", type=int, default=700)
    ap.add_argument("--batch", type=int, default=12, help="frames per step")
    ap.add_argument("--shifts", type=int, default=3, help="shifted windows per frame")
    ap.add_argument("--min-shift", type=float, default=1.0, help="seconds")
    ap.add_argument("--near-shifts", type=int, default=0, metavar="K",
                    help="K more shifted windows per frame from nearer times, --near-min-shift "
                         "to --min-shift away: negatives of the sync and rhythm losses only, not "
                         "of the null loss (a window 0.3 s off still holds the same sound); "
                         "validation keeps the far ones (default 0)")
    ap.add_argument("--near-min-shift", type=float, default=0.3, help="seconds")
    ap.add_argument("--tau", type=float, default=0.2)
    ap.add_argument("--null-weight", type=float, default=2.0)
    ap.add_argument("--rhythm-weight", type=float, default=0.5)
    ap.add_argument("--follow-weight", type=float, default=1.0,
                    help="weight of the loss pulling the in-sync map to where the rhythm "
                         "read-out finds the sound's rhythm")
    ap.add_argument("--follow-future", type=float, default=0.0, metavar="SECONDS",
                    help="follow's teacher: the read-out of the frame's own window times that "
                         "of the frame this much later in the same clip (its window starts "
                         "about where the frame's ends: a moving source's past and future "
                         "paths cross where it is now); 0: the frame's own read-out only "
                         "(default)")
    ap.add_argument("--follow-future-power", type=float, default=1.0, metavar="P",
                    help="with --follow-future: raise the product of the two read-outs to P "
                         "before renormalising (0.5: their geometric mean, as sharp as one "
                         "read-out; default 1)")
    ap.add_argument("--focal", type=float, default=0.0, metavar="GAMMA",
                    help="the sync and rhythm losses as focal losses, -(1 - p)^GAMMA log p "
                         "of the in-sync window: frames already placed in sync weigh little, "
                         "so the rhythms the model does not yet hear weigh more (0: plain "
                         "cross-entropy, the default)")
    ap.add_argument("--follow-confidence", type=float, default=0.0, metavar="K",
                    help="weigh each frame's follow loss by its teacher's sharpness (KL to "
                         "the flat map over log N, 0 to 1) to the power K, normalised over the "
                         "batch: the map is pulled where the rhythm read-out is sure (0: every "
                         "frame alike, the default)")
    ap.add_argument("--readout-hidden", type=int, default=0, metavar="H",
                    help="the rhythm read-out (the rhythm loss's head and follow's teacher) "
                         "as a hidden layer of H units with GELU instead of one linear map (0: "
                         "linear, the default); not exported")
    ap.add_argument("--located-weight", type=float, default=0.0, metavar="W",
                    help="weight of a second rhythm loss on each window's read-out pooled "
                         "where the in-sync window's read-out looks (its softmax over "
                         "patches), not at the window's own best patch: pushes the read-out "
                         "(follow's teacher) off a look-alike whose rhythm matches any time "
                         "alike (0: off, the default)")
    ap.add_argument("--teacher-neighbourhood", type=int, default=0, metavar="K",
                    help="a second rhythm read-out at neighbourhood K (odd), trained by the "
                         "same rhythm loss, whose softmax multiplies follow's teacher.  With "
                         "the model at 1 and K = 5 (ft24, ft28) the map did not follow it to "
                         "more look-alikes; with the model at 5 (--rhythm-neighbourhood 5, the "
                         "5 x 5 mean tells which of two look-alikes follows the sound) and K = 1 "
                         "(which patch), from --init of a checkpoint trained at 1, whose read-out "
                         "then starts this one too (ft32, ft34), it did on the hardest twins but "
                         "lost other look-alikes and second sources: model/README.md "
                         "(0: off, the default); not exported")
    ap.add_argument("--teacher-weight", type=float, default=1.0, metavar="B",
                    help="with --teacher-neighbourhood: the second read-out's softmax enters the "
                         "teacher to the power B, rising from 0 over the first quarter of the "
                         "steps unless it starts from a read-out trained at K (default 1)")
    ap.add_argument("--teacher-peaks", type=int, default=0, metavar="K",
                    help="keep follow's teacher at its local maxima over K x K patches (odd K "
                         ">= 3), 1e-3 of it elsewhere: the map is pulled to one patch per peak, "
                         "not to the ring a neighbourhood's mean spreads a source over (0: off, "
                         "the default)")
    ap.add_argument("--teacher-peaks-share", type=float, default=1.0, metavar="S",
                    help="with --teacher-peaks: the teacher is S of the peaks and 1 - S of "
                         "itself (0 < S <= 1; default 1): at 1 the map is sharper for every "
                         "sound and the nothing-visible AUC falls (model/README.md)")
    ap.add_argument("--head-warmup", type=int, default=0, metavar="STEPS",
                    help="the first STEPS steps train the rhythm read-out(s) only, the model "
                         "frozen and follow off: for --init of a weights file, which holds no "
                         "read-out, so that follow's teacher is trained before it pulls the map "
                         "(0: off, the default); the exported checkpoint is one after them")
    ap.add_argument("--follow-from", type=int, default=None, metavar="STEP",
                    help="switch follow to --follow-weight from this step (before it: "
                         "--early-follow-weight, --early-neighbourhood, --early-null-weight); "
                         "the exported checkpoint is the best one after it "
                         "(default: 4/7 of --steps from scratch, 0 with --init)")
    ap.add_argument("--export-neighbourhood", type=int, default=None, metavar="K",
                    help="the rhythm neighbourhood of the exported file and of the truth-free "
                         "threshold picked for it (default: --rhythm-neighbourhood's; the "
                         "checkpoint is still picked at the neighbourhood it trained at). The "
                         "neighbourhood is a forward-time setting, no tensor: a model trained at "
                         "5 maps at 1 without losing the second source (model/README.md); the "
                         "command of a finished run with it only exports again")
    ap.add_argument("--early-neighbourhood", type=int, default=None, metavar="K",
                    help="the rhythm neighbourhood before --follow-from (default: 5 from "
                         "scratch, --rhythm-neighbourhood's with --init); from scratch, "
                         "synchrony starts at 5 but not at 1, and the map lands on the source "
                         "at 1")
    ap.add_argument("--early-null-weight", type=float, default=None, metavar="W",
                    help="the null loss's weight before --follow-from (default: "
                         "--null-weight's throughout); measured from scratch at 0.5 and 0, "
                         "each once, both worse than 2 (model/README.md)")
    ap.add_argument("--early-follow-weight", type=float, default=None, metavar="W",
                    help="the follow loss's weight before --follow-from (default: 0.5 from "
                         "scratch, which starts synchrony in every run measured; 0 turns it "
                         "off)")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--av-jitter", type=float, default=30.0,
                    help="ms: move each training frame's sound (all its candidate windows) "
                         "against its picture by a uniform offset up to this much either way, "
                         "in 10 ms steps, as encoders and containers move it (0: none; "
                         "default 30)")
    T.add_size_args(ap)
    # each patch's own rhythm features: with the labelled default's 5 x 5
    # neighbourhood, synchrony finds the source's surroundings but not which
    # patch is on it (model/README.md, "Near, not on")
    ap.set_defaults(rhythm_neighbourhood=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--val-every", type=int, default=5, help="validate every N log lines")
    ap.add_argument("--val-frames", type=int, default=240)
    ap.add_argument("--checkpoint-every", type=int, default=25)
    ap.add_argument("--plugin-path", default=None)
    a = ap.parse_args(argv)
    T.set_bins(a.bin_slots, a.lag_min, a.lags)
    if a.out is None:
        a.out = os.path.join(T.ROOT, "models", "sounding-objects-unlabeled.safetensors")
    if a.world == 1:
        a.v1_share = 0.0
    # the best run's recipe (model/README.md): from scratch, synchrony at
    # neighbourhood 5 first, then follow at 1; a fine-tune follows at once
    if a.follow_from is None:
        a.follow_from = 0 if a.init else round(a.steps * 4 / 7)
    if a.early_neighbourhood is None and not a.init:
        a.early_neighbourhood = 5
    # follow at half weight before --follow-from: the only loss on the map
    # whose gradient is not zero at the flat map (the sync and null losses'
    # are), so that synchrony starts
    if a.early_follow_weight is None and not a.init:
        a.early_follow_weight = 0.5
    if a.follow_future < 0 or a.follow_future_power <= 0:
        ap.error("--follow-future takes seconds >= 0 and --follow-future-power a power > 0")
    if a.follow_confidence < 0:
        ap.error(f"--follow-confidence {a.follow_confidence:g}: expected a power >= 0")
    if a.focal < 0:
        ap.error(f"--focal {a.focal:g}: expected a gamma >= 0")
    if a.located_weight < 0:
        ap.error(f"--located-weight {a.located_weight:g}: expected W >= 0")
    if a.near_shifts < 0 or (a.near_shifts and not 0 < a.near_min_shift < a.min_shift):
        ap.error(f"--near-shifts {a.near_shifts}, --near-min-shift {a.near_min_shift:g}: expected "
                 f"K >= 0 and 0 < seconds < --min-shift ({a.min_shift:g})")
    if a.teacher_neighbourhood and (a.teacher_neighbourhood < 1 or a.teacher_neighbourhood % 2 == 0
                                    or a.teacher_weight < 0):
        ap.error(f"--teacher-neighbourhood {a.teacher_neighbourhood}, --teacher-weight "
                 f"{a.teacher_weight:g}: expected an odd K >= 1 and B >= 0")
    if a.teacher_peaks and (a.teacher_peaks < 3 or a.teacher_peaks % 2 == 0):
        ap.error(f"--teacher-peaks {a.teacher_peaks}: expected an odd K >= 3 (0: off)")
    if not 0.0 < a.teacher_peaks_share <= 1.0:
        ap.error(f"--teacher-peaks-share {a.teacher_peaks_share:g}: expected 0 < S <= 1")
    if not 0 <= a.head_warmup < a.steps:
        ap.error(f"--head-warmup {a.head_warmup}: expected 0 to --steps - 1 ({a.steps - 1})")
    if a.readout_hidden < 0:
        ap.error(f"--readout-hidden {a.readout_hidden}: expected a number of units >= 0")
    if a.export_neighbourhood is None:
        a.export_neighbourhood = a.rhythm_neighbourhood
    if a.rhythm_neighbourhood_from and a.export_neighbourhood != a.rhythm_neighbourhood:
        ap.error("--export-neighbourhood with --rhythm-neighbourhood-from: a split model "
                 "keeps its neighbourhood")
    for k in (a.rhythm_neighbourhood, a.early_neighbourhood, a.export_neighbourhood):
        if k is not None and (k < 1 or k % 2 == 0):
            ap.error(f"rhythm neighbourhood {k}: expected an odd number >= 1")
    if a.rhythm_neighbourhood_from and not (a.rhythm_neighbourhood > 1
                                            and 0 < a.rhythm_neighbourhood_from < a.rhythm_dim):
        ap.error(f"--rhythm-neighbourhood-from {a.rhythm_neighbourhood_from}: expected 1 to "
                 f"--rhythm-dim - 1 ({a.rhythm_dim - 1}) with --rhythm-neighbourhood above 1")
    return a


def main(argv=None):
    a = parse(argv)
    t0 = time.time()
    plugin_path = T.find_plugin_path(a.plugin_path)
    os.makedirs(a.work, exist_ok=True)
    if a.unlabeled == "-":
        wo = T.world_of(a)
        folder = os.path.join(a.work, "clips")
        tr_seeds = list(range(a.first_seed, a.first_seed + a.scenes))
        va_seeds = list(range(a.first_seed + 50000, a.first_seed + 50000 + a.val_scenes))
        render_clips(tr_seeds + va_seeds, folder, a.duration, a.jobs, wo)
        clips = clips_of(folder)
        names = {f"scene{wo(s)}-{s}" for s in va_seeds}
        va = [c for c in clips if os.path.splitext(os.path.basename(c))[0] in names]
    else:
        clips = clips_of(a.unlabeled)
        va = [c for k, c in enumerate(clips) if len(clips) > 1 and
              (k % 8 == 7 or (len(clips) < 8 and k == len(clips) - 1))]
    tr = [c for c in clips if c not in va]
    paths = dict(zip(clips, prepare_all(clips, a.work, plugin_path, a.jobs)))
    a.n_clips, a.n_val = len(tr), len(va)
    data = ClipSet([paths[c] for c in tr], a.min_shift, a.near_min_shift)
    val = ClipSet([paths[c] for c in va], a.min_shift) if va else None
    if not len(data):
        raise SystemExit("train: --unlabeled: no frame with a whole second of audio and video "
                         "before it; the clips must be longer than 1 s")
    val_items = []
    if val is not None and len(val):
        g = np.random.default_rng([a.seed, 99])
        pick = g.choice(len(val), size=min(a.val_frames, len(val)), replace=False)
        val_items = [val.index[i] for i in sorted(pick)]
    print(f"prepare: done in {time.time() - t0:.0f} s; {len(data)} training frames in "
          f"{len(tr)} clips, {len(val_items)} validation frames in {len(va)} clips "
          f"(no truth read)", flush=True)
    model, head, step = train(a, data, val, val_items)
    v = (validate(model, head, val, val_items, a.shifts, a.seed) if val_items else
         validate(model, head, data, data.index[:a.val_frames], a.shifts, a.seed))
    thr, ba = truth_free_threshold(v["ins"], v["neg"])
    print(f"validation (truth-free, {len(v['ins'])} frames): sync accuracy "
          f"{v['sync_accuracy']:.3f}, in-sync against shifted/silent AUC {v['sync_auc']:.3f}, "
          f"threshold {thr:.4g} (balanced accuracy {ba:.3f}), the map on the rhythm "
          f"read-out's strongest patch {v['map_on_readout']:.3f}", flush=True)
    export(a, model, step, thr, ba, v)
    print(f"train: finished in {(time.time() - t0) / 60:.1f} min", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
