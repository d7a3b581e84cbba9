#!/usr/bin/env python3
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The trainer places sound and picture in time as avattention does.

A world 2 scene is encoded as model/evaluate.py encodes its MP4 clips
(H.264 with B-frames and AAC, mp4mux): the video's segment and first PTS
start two frames after the sound's, and the element aligns the two by
running time, not by PTS.  The clip goes through a real pipeline
(`decodebin ! … avspectrogram ! avattention`, `… avpatchembed !
avattention`, `avtensorsink`), and through the trainer's own path
(train.decode_clip, the training windows and video history of
train.SceneSet, the PyTorch twin).  The per-patch maps (the last layer's
audio-cross map, mean over heads and slots with audio) must be equal frame
for frame once the window is full.  A trainer that placed the frames by
PTS moved the MP4 picture two frames against the sound: the twin and the
pipeline then chose another strongest patch on about a third of the frames.

  check-train-timing.py PLUGIN_DIR WEIGHTS
"""
import os
import sys
import tempfile

import numpy as np
import torch

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "model"))
import avfusion2  # noqa: E402
import evaluate  # noqa: E402
import soworld  # noqa: E402
import train  # noqa: E402

SEED = 50022            # a design scene (never a held-out one) with a look-alike pair
DURATION = 5.0
TOL = 1e-4


def pipeline_maps(plugin, clip, weights, out):
    """The clip through evaluate.py's pipeline (avtensorsink's summary maps)."""
    evaluate.run_pipeline(clip, out, plugin, weights)
    z = np.load(out)
    return z["patch_weights"].astype(np.float64), z["audio_mask"], z["pts"]


def main():
    plugin, weights = sys.argv[1:3]
    ext, W, H, fps, sr, ch = (".mp4", 640, 360, 30, 48000, 2)
    sc = soworld.Scene(SEED, W, H, fps, DURATION, sr, variants=True, channels=ch, world=2)
    train.set_bins(4, -1, 5)
    model = avfusion2.AvFusionV2.from_safetensors(weights).eval()
    with tempfile.TemporaryDirectory() as tmp:
        clip = os.path.join(tmp, "scene.mp4")
        soworld.encode(sc, clip)
        frames, fpts, fdur, mel, mpts = train.decode_clip(clip, plugin, with_durations=True)
        q_el, mask_el, pts_el = pipeline_maps(plugin, clip, weights, os.path.join(tmp, "m.npz"))
        # the case this test is about: the video's PTS start after the sound's
        if not pts_el[0] > 0:
            sys.exit(f"check-train-timing: the MP4's first video PTS is {pts_el[0]} ns; "
                     "expected a later start than the sound's (B-frames in mp4mux)")
        if fpts[0] != 0:
            sys.exit(f"check-train-timing: the trainer's first frame is at {fpts[0]} ns, "
                     f"its PTS is {pts_el[0]} ns: expected running time 0")
        n = len(frames)
        npz = os.path.join(tmp, "own.npz")
        np.savez(npz, frames=frames, mel=mel.astype(np.float32),
                 widx=train.window_index(fpts, mpts),
                 targets=np.zeros((n, train.N_PATCHES), np.float32),
                 info=np.zeros((n, 7), np.float32), kinds=np.zeros((n, 6), np.float32),
                 size=np.array([W, H]), fps=np.array([fps]), fpts=fpts, fdur=fdur,
                 own=np.array([1]), world=np.array([2]))
        data = train.SceneSet([npz], DURATION, rhythm=True)
        q_tw = np.zeros((n, train.N_PATCHES))
        with torch.no_grad():
            for k in range(0, n, 32):
                it = [(0, f) for f in range(k, min(n, k + 32))]
                bt = data.batch(it)
                _, q = train.forward_with_map(model, bt[0], bt[1], bt[2], hist=bt[8],
                                              hmiss=bt[9])
                q_tw[k:k + len(it)] = q.double().numpy()
    if len(q_el) != n:
        sys.exit(f"check-train-timing: the trainer decoded {n} frames, the pipeline gave {len(q_el)}")
    full = ~mask_el.any(axis=1)        # frames whose window is full (from 1 s on)
    if full.sum() < n // 2:
        sys.exit(f"check-train-timing: only {int(full.sum())} of {n} frames have a full window")
    err = np.abs(q_tw - q_el)[full].max(axis=1)
    same = (q_tw.argmax(axis=1) == q_el.argmax(axis=1))[full]
    print(f"check-train-timing: {int(full.sum())} frames with a full window: largest map "
          f"difference {err.max():.2e}, same strongest patch on {same.mean():.3f}")
    bad = np.flatnonzero(err > TOL)
    if len(bad):
        sys.exit(f"check-train-timing: the twin's maps on the trainer's decode differ from the "
                 f"pipeline's by more than {TOL} on {len(bad)} of {int(full.sum())} frames "
                 f"(first: full frame {bad[0]}, {err[bad[0]]:.3g})")
    print("check-train-timing: ok")


if __name__ == "__main__":
    main()
