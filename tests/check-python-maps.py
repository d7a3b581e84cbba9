#!/usr/bin/python3
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The attention maps that Python reads through GstAvAttention equal what
avtensorsink writes into its .npz for the same frames.

One pipeline per run: avattention ! tee, one branch to an appsink read here
through the introspected meta, the other to avtensorsink location=X.npz.
For every frame, layer and module the map from get_weights_bytes() (as a
(heads, queries, keys) numpy array) equals the .npz's "layers.{l}.{module}"
frame ([queries, keys] for the head mean gets a head axis of 1), NaN where
the map was skipped; get_weights_buffer() (the copy-free path) gives the
same array; the audio mask, sound_visible, visible_threshold, the fused
vector and pts equal the .npz's; and the README's numpy heat map points
at get_strongest_patch()'s patch.  With --readme, the README's Python
snippet (section "From Python") runs on a buffer of each run and its heat
map peaks at its strongest patch.  Skipped (77) where Python cannot load
the typelib.

    check-python-maps.py [--readme README.md] CLIP:ATTENTION_WEIGHTS...
        (ATTENTION_WEIGHTS: mean or per-head)
"""
import os
import sys
import tempfile

try:
    import gi
    import numpy
    gi.require_version("Gst", "1.0")
    gi.require_version("GstApp", "1.0")
    gi.require_version("GstAvAttention", "1.0")
    from gi.repository import Gst, GstApp, GstAvAttention  # noqa: F401
except (ImportError, ValueError) as e:
    print("SKIP: %s (GI_TYPELIB_PATH=%s)" % (e, os.environ.get("GI_TYPELIB_PATH", "")))
    sys.exit(77)

Module = GstAvAttention.AvAttentionModule
MODULES = [Module.AUDIO_SELF, Module.VIDEO_SELF, Module.AUDIO_CROSS,
           Module.VIDEO_CROSS]


def readme_snippet(path):
    """The ```python block of the README's "From Python" section."""
    text = open(path, encoding="utf-8").read()
    section = text[text.index("### From Python"):]
    start = section.index("```python\n") + len("```python\n")
    return section[start:section.index("```", start)]


def run_readme_snippet(snippet, buf):
    ns = {"buf": buf}
    exec(compile(snippet, "README.md (From Python)", "exec"), ns)
    heat, row, column = ns["heat"], ns["row"], ns["column"]
    assert ns["ok"] and ns["maps"].ndim == 3
    assert heat.max() - heat[row, column] < 1e-6, \
        "the README's heat map does not peak at its strongest patch"


def run(clip, weights_mode, npz, snippet=None):
    """Frames read through the meta: a list of dicts."""
    desc = ("filesrc name=src ! decodebin name=d "
            "d. ! queue ! audioconvert ! audioresample ! audio/x-raw,rate=16000 "
            "! avspectrogram ! queue ! att.audio_sink "
            "d. ! queue ! videoconvert ! videoscale ! avpatchembed ! queue "
            "! att.video_sink "
            "avattention name=att attention-weights=%s ! tee name=t "
            "t. ! queue ! appsink name=sink sync=false "
            "t. ! queue ! avtensorsink name=npz maps=all" % weights_mode)
    pipeline = Gst.parse_launch(desc)
    pipeline.get_by_name("src").set_property("location", clip)
    pipeline.get_by_name("npz").set_property("location", npz)
    sink = pipeline.get_by_name("sink")
    pipeline.set_state(Gst.State.PLAYING)
    frames = []
    while True:
        sample = sink.pull_sample()
        if sample is None:
            break
        buf = sample.get_buffer()
        meta = GstAvAttention.buffer_get_av_attention_meta(buf)
        assert meta is not None, "a buffer without GstAvAttentionMeta"
        f = {"pts": buf.pts}
        with buf.map(Gst.MapFlags.READ) as info:
            f["data"] = numpy.frombuffer(info.data, numpy.float32).copy()
        f["mask"] = numpy.frombuffer(meta.get_audio_mask_bytes().get_data(),
                                     numpy.uint8).astype(bool)
        f["visible"], _, f["threshold"] = meta.get_sound_visible()
        f["strongest"] = meta.get_strongest_patch(meta.n_layers - 1)
        if snippet and f["strongest"][0] and not meta.audio_ended:
            run_readme_snippet(snippet, buf)
            snippet = None
        f["grid"] = (meta.grid_rows, meta.grid_columns)
        f["n_layers"], f["n_heads"] = meta.n_layers, meta.n_heads
        f["model_heads"] = meta.model_heads
        for layer in range(meta.n_layers):
            for m in MODULES:
                w, h, q, k = meta.get_weights_bytes(layer, m)
                a = numpy.frombuffer(w.get_data(), numpy.float32).reshape(h, q, k)
                b, h2, q2, k2 = meta.get_weights_buffer(layer, m)
                assert (h2, q2, k2) == (h, q, k)
                with b.map(Gst.MapFlags.READ) as info:
                    nocopy = numpy.frombuffer(info.data, numpy.float32)
                    assert numpy.array_equal(nocopy.reshape(h, q, k), a,
                                             equal_nan=True), \
                        "get_weights_buffer differs from get_weights_bytes"
                f[(layer, m)] = a
                f[("skipped", layer, m)] = meta.is_skipped(layer, m)
        frames.append(f)
    # the appsink is done; wait until avtensorsink is too (the pipeline's
    # EOS), or the .npz is written at the state change without its last frames
    msg = pipeline.get_bus().timed_pop_filtered(
        Gst.CLOCK_TIME_NONE, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    pipeline.set_state(Gst.State.NULL)
    if msg.type == Gst.MessageType.ERROR:
        err, dbg = msg.parse_error()
        raise SystemExit("FAIL: pipeline error from %s: %s (%s)"
                         % (msg.src.get_name(), err.message, dbg))
    if snippet:
        raise SystemExit("FAIL: no frame with audio to run the README's snippet on")
    return frames


def check(clip, weights_mode, snippet):
    with tempfile.TemporaryDirectory() as tmp:
        npz = os.path.join(tmp, "maps.npz")
        frames = run(clip, weights_mode, npz, snippet)
        z = numpy.load(npz)
        n = len(frames)
        assert n > 0 and z["data"].shape[0] == n, \
            "%d frames through the appsink, %d in the .npz" % (n, z["data"].shape[0])
        assert numpy.array_equal(numpy.stack([f["data"] for f in frames]), z["data"])
        assert numpy.array_equal([f["pts"] for f in frames], z["pts"])
        assert numpy.array_equal(numpy.stack([f["mask"] for f in frames]), z["audio_mask"])
        assert numpy.array_equal([f["visible"] for f in frames], z["sound_visible"])
        assert numpy.array_equal(numpy.array([f["threshold"] for f in frames], numpy.float32),
                                 z["visible_threshold"])
        heads = frames[0]["n_heads"]
        assert heads == (1 if weights_mode == "mean" else frames[0]["model_heads"])
        compared = skipped = 0
        for layer in range(frames[0]["n_layers"]):
            for m in MODULES:
                key = "layers.%d.%s" % (layer, GstAvAttention.av_attention_module_name(m))
                ref = z[key]
                if ref.ndim == 3:          # head mean: [frames, Tq, Tk]
                    ref = ref[:, numpy.newaxis]
                ours = numpy.stack([f[(layer, m)] for f in frames])
                assert ours.shape == ref.shape, \
                    "%s: %s through the meta, %s in the .npz" % (key, ours.shape, ref.shape)
                for i, f in enumerate(frames):
                    if f[("skipped", layer, m)]:
                        skipped += 1
                        assert numpy.isnan(ref[i]).all(), "%s frame %d: skipped but not NaN" % (key, i)
                    assert numpy.array_equal(ours[i], ref[i], equal_nan=True), \
                        "%s frame %d: the meta's map differs from the .npz's" % (key, i)
                compared += n
        # the README's heat map: mean over heads and the slots with audio
        pointed = 0
        last = frames[0]["n_layers"] - 1
        for f in frames:
            ok, column, row, weight = f["strongest"]
            if not ok:
                continue
            maps = f[(last, Module.AUDIO_CROSS)].astype(numpy.float64)
            heat = maps[:, ~f["mask"]].mean(axis=(0, 1)).reshape(f["grid"])
            assert abs(heat[row, column] - weight) < 1e-5 and \
                heat.max() - heat[row, column] < 1e-6, \
                "numpy's heat map does not peak at get_strongest_patch's patch"
            pointed += 1
        print("ok: %s, attention-weights=%s: %d frames, %d maps of shape (heads=%d, queries, "
              "keys) equal to the .npz's (%d skipped, NaN in both); %d strongest patches "
              "agree with numpy%s" % (os.path.basename(clip), weights_mode, n, compared,
                                       heads, skipped, pointed,
                                       "; the README's snippet ran" if snippet else ""))


def main():
    args = sys.argv[1:]
    snippet = None
    if args[:1] == ["--readme"] and len(args) > 1:
        snippet = readme_snippet(args[1])
        args = args[2:]
    if not args:
        print(__doc__)
        return 2
    Gst.init(None)
    for arg in args:
        clip, _, mode = arg.rpartition(":")
        check(clip, mode, snippet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
