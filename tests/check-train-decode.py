#!/usr/bin/env python3
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The pictures model/train.py trains on are the pictures avpatchembed sees.

train.decode_clip() decodes a clip for training; a real pipeline
(`filesrc ! decodebin ! videoconvert ! videoscale ! avpatchembed`) embeds
the same clip.  The PyTorch twin's patch embedding of the training frames
must equal the element's output to 1e-4, frame for frame.  On a 16:9 clip
this catches a trainer that letterboxes while videoscale, in front of
avpatchembed, squashes (the truth boxes are squashed too).  The twin is the
weights' own: model/avfusion.py for avfusion-v1, model/avfusion2.py for
avfusion-v2 (the shipped default; its first E columns are the [N, E] tensor
avpatchembed outputs, the rhythm rows ride in a meta and are compared by
check-python-rhythm.py).

  check-train-decode.py PLUGIN_DIR CLIP WEIGHTS
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "model"))
import avfusion  # noqa: E402
import avfusion2  # noqa: E402
import train  # noqa: E402


def main():
    plugin, clip, weights = sys.argv[1:4]
    frames, fpts, _mel, _mpts = train.decode_clip(clip, plugin)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "patches.npy")
        env = dict(os.environ, GST_PLUGIN_PATH=plugin)
        subprocess.run(["gst-launch-1.0", "-q", "filesrc", f"location={clip}", "!", "decodebin",
                        "!", "videoconvert", "!", "videoscale", "!", "avpatchembed",
                        f"weights={weights}", "!", "avtensorsink", f"location={out}"],
                       env=env, check=True)
        element = np.load(out)
    if len(frames) != len(element):
        sys.exit(f"check-train-decode: the trainer decoded {len(frames)} frames, "
                 f"the pipeline {len(element)}")
    _tensors, meta = avfusion.read_safetensors(weights)
    if meta.get("format") == avfusion2.FORMAT:
        model = avfusion2.AvFusionV2.from_safetensors(weights).double()
    else:
        model = avfusion.AvFusion.from_safetensors(weights).double()
    with torch.no_grad():
        twin = model.embed_video(torch.from_numpy(frames))[..., :model.embed_dim].numpy()
    if twin.shape[1:] != element.shape[1:]:
        sys.exit(f"check-train-decode: twin tokens {twin.shape}, element {element.shape}")
    err = np.abs(twin - element).max(axis=(1, 2))
    bad = np.flatnonzero(err > 1e-4)
    if len(bad):
        sys.exit(f"check-train-decode: {len(bad)} of {len(frames)} frames differ "
                 f"(first: frame {bad[0]}, max |difference| {err[bad[0]]:.4g}); the trainer "
                 f"does not see the pictures avpatchembed sees")
    print(f"check-train-decode: {len(frames)} frames of {os.path.basename(clip)}, "
          f"{frames.shape[1]}x{frames.shape[2]}, max |difference| {err.max():.2g}: ok")


if __name__ == "__main__":
    main()
