#!/usr/bin/env python3
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Python reads avfusion-v2's rhythm rows through GstAvAttention, and they
are the PyTorch twin's.

A real pipeline (`filesrc ! decodebin ! videoconvert ! videoscale !
avpatchembed weights=V2 ! appsink`) embeds a clip; for every buffer, Python
takes the [N, E] tensor and the GstAvRhythmMeta (through the typelib of the
metadata library: buffer_get_av_rhythm_meta, get_rows_bytes) and compares
them with model/avfusion2.py's embed_video of the same frames (decoded as
model/train.py decodes them, which tests/check-train-decode.py shows are
the pictures avpatchembed sees): the first E columns are the tensor, the
last D the meta's rows, to 1e-4.

  check-python-rhythm.py PLUGIN_DIR CLIP V2_WEIGHTS
"""
import os
import sys

import numpy as np
import torch

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "model"))
import avfusion2  # noqa: E402
import train  # noqa: E402


def element_rows(clip, weights):
    import gi
    gi.require_version("Gst", "1.0")
    gi.require_version("GstApp", "1.0")
    gi.require_version("GstAvAttention", "1.0")
    from gi.repository import Gst, GstApp, GstAvAttention  # noqa: F401

    Gst.init(None)
    p = Gst.parse_launch(
        "filesrc name=src ! decodebin ! videoconvert ! videoscale ! "
        "avpatchembed name=pe ! appsink name=sink sync=false")
    p.get_by_name("src").set_property("location", clip)
    p.get_by_name("pe").set_property("weights", weights)
    sink = p.get_by_name("sink")
    p.set_state(Gst.State.PLAYING)
    tokens, rows = [], []
    while True:
        s = sink.emit("try-pull-sample", 10 * Gst.SECOND)
        if s is None:
            break
        buf = s.get_buffer()
        ok, info = buf.map(Gst.MapFlags.READ)
        assert ok
        tokens.append(np.frombuffer(info.data, np.float32).copy())
        buf.unmap(info)
        meta = GstAvAttention.buffer_get_av_rhythm_meta(buf)
        if meta is None:
            sys.exit(f"check-python-rhythm: buffer {len(rows)} carries no GstAvRhythmMeta")
        if meta.n_frames != 1:
            sys.exit(f"check-python-rhythm: a meta of {meta.n_frames} frames, 1 expected")
        r = np.frombuffer(meta.get_rows_bytes(0).get_data(), np.float32)
        rows.append(r.reshape(meta.n_patches, meta.rhythm_dim).copy())
    msg = p.get_bus().pop_filtered(Gst.MessageType.ERROR)
    p.set_state(Gst.State.NULL)
    if msg is not None:
        sys.exit("check-python-rhythm: pipeline error: %s" % msg.parse_error()[0].message)
    return tokens, rows


def main():
    plugin, clip, weights = sys.argv[1:4]
    frames, _fpts, _mel, _mpts = train.decode_clip(clip, plugin)
    tokens, rows = element_rows(clip, weights)
    if len(frames) != len(rows) or not rows:
        sys.exit(f"check-python-rhythm: the trainer decoded {len(frames)} frames, "
                 f"the pipeline gave {len(rows)}")
    model = avfusion2.AvFusionV2.from_safetensors(weights).double()
    with torch.no_grad():
        twin = model.embed_video(torch.from_numpy(frames)).numpy()
    E, D = model.embed_dim, model.rhythm_dim
    N = twin.shape[1]
    rows = np.stack(rows)
    tokens = np.stack(tokens)
    if rows.shape != (len(frames), N, D) or tokens.shape != (len(frames), N * E):
        sys.exit(f"check-python-rhythm: rows {rows.shape}, tokens {tokens.shape}; "
                 f"expected ({len(frames)}, {N}, {D}) and ({len(frames)}, {N * E})")
    err_e = np.abs(tokens.reshape(-1, N, E) - twin[..., :E]).max()
    err_r = np.abs(rows - twin[..., E:]).max()
    if not (err_e <= 1e-4 and err_r <= 1e-4):
        sys.exit(f"check-python-rhythm: max |difference| tensor {err_e:.3g}, "
                 f"rhythm rows {err_r:.3g} (1e-4 allowed)")
    if float(np.abs(rows).max()) == 0.0:
        sys.exit("check-python-rhythm: the rhythm rows are all zero")
    print(f"check-python-rhythm: {len(frames)} frames, N {N}, E {E}, D {D}: max |difference| "
          f"tensor {err_e:.2g}, rhythm rows {err_r:.2g}: ok")


if __name__ == "__main__":
    main()
