#!/usr/bin/env python3
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""where_is_the_sound.py: where-is-the-sound.c in Python.

Decodes a clip, runs avspectrogram, avpatchembed and avattention, and reads
the attention metadata (GstAvAttention.AvAttentionMeta, through GObject
introspection) from an appsink: for every video frame it prints the patch of
the picture that the audio attends to most, its weight, whether the model
takes a visible object to sound there, and the norm of the fused feature
vector (the buffer's data, read with numpy).  The lines are those of the C
example.  With --npz it also writes the fused features and attention maps
through avtensorsink.

    python3 examples/where_is_the_sound.py CLIP [--weights FILE] [--npz OUT.npz] [--quiet]

From a build tree (the typelib, the library and the plugin are found through
GI_TYPELIB_PATH, LD_LIBRARY_PATH and GST_PLUGIN_PATH, which meson sets):

    meson devenv -C build-ci -w . python3 examples/where_is_the_sound.py CLIP

Needs python3-gi, python3-gst-1.0, gir1.2-gst-plugins-base-1.0 and
python3-numpy (tools/install-deps installs them).
"""
import os
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstApp", "1.0")
try:
    gi.require_version("GstAvAttention", "1.0")
except ValueError:
    sys.stderr.write(
        "%s: GstAvAttention-1.0.typelib not found.  From a build tree run "
        "`meson devenv -C BUILD_DIR -w . python3 %s ...`, or set "
        "GI_TYPELIB_PATH and LD_LIBRARY_PATH to BUILD_DIR/meta (after "
        "`meson install`: GI_TYPELIB_PATH to <libdir>/girepository-1.0 of "
        "the install when that is not a system folder).\n"
        % (sys.argv[0], sys.argv[0]))
    sys.exit(1)
# GstApp: the appsink is then a GstApp.AppSink, with pull_sample()
from gi.repository import GLib, Gst, GstApp, GstAvAttention  # noqa: E402,F401
import numpy  # noqa: E402


def time_str(t):
    """GST_TIME_FORMAT: h:mm:ss.nnnnnnnnn (99:99:99.999999999 when unknown)."""
    if t == Gst.CLOCK_TIME_NONE:
        return "99:99:99.999999999"
    s = Gst.SECOND
    return "%u:%02u:%02u.%09u" % (t // (s * 3600), (t // (s * 60)) % 60,
                                  (t // s) % 60, t % s)


def fused_norm(buf):
    """Euclidean norm of the buffer's float32 data, the fused vector [2E]."""
    with buf.map(Gst.MapFlags.READ) as info:
        v = numpy.frombuffer(info.data, numpy.float32).astype(numpy.float64)
    return float(numpy.sqrt(numpy.dot(v, v)))


class Stats:
    def __init__(self, quiet):
        self.frames = 0
        self.with_audio = 0
        self.visible = 0          # frames where a visible object sounds
        self.threshold = 0.0
        self.quiet = quiet
        self.hist = None          # (rows, columns) frames per strongest patch


def on_sample(sink, st):
    sample = sink.pull_sample()
    if sample is None:
        return Gst.FlowReturn.EOS
    buf = sample.get_buffer()
    meta = GstAvAttention.buffer_get_av_attention_meta(buf)
    norm = fused_norm(buf)
    pts = time_str(buf.pts)
    st.frames += 1
    if meta is None:
        if not st.quiet:
            print("%s  (no attention metadata)  fused norm %.4f" % (pts, norm))
        return Gst.FlowReturn.OK
    if st.hist is None:
        st.hist = numpy.zeros((meta.grid_rows, meta.grid_columns), numpy.int64)
    visible, _, st.threshold = meta.get_sound_visible()
    found, col, row, weight = meta.get_strongest_patch(meta.n_layers - 1)
    if found:
        st.with_audio += 1
        st.visible += visible
        if row < st.hist.shape[0] and col < st.hist.shape[1]:
            st.hist[row, col] += 1
        if not st.quiet:
            print("%s  sound at patch (column %2u, row %2u) weight %.4f  "
                  "audio slots %u/%u  %s  fused norm %.4f"
                  % (pts, col, row, weight, meta.n_audio_present,
                     meta.n_audio_slots, "a visible object sounds" if visible
                     else "no visible object sounds", norm))
    elif not st.quiet:
        print("%s  no audio in the window%s  fused norm %.4f"
              % (pts, " (audio ended)" if meta.audio_ended else "", norm))
    return Gst.FlowReturn.OK


def main():
    argv = Gst.init(sys.argv)
    prog = argv[0]
    clip = weights = npz = None
    quiet = False
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--weights" and i + 1 < len(argv):
            i += 1
            weights = argv[i]
        elif a == "--npz" and i + 1 < len(argv):
            i += 1
            npz = argv[i]
        elif a == "--quiet":
            quiet = True
        elif not a.startswith("-") and clip is None:
            clip = a
        else:
            clip = None
            break
        i += 1
    if clip is None:
        sys.stderr.write("usage: %s CLIP [--weights FILE] [--npz OUT.npz] "
                         "[--quiet]\n" % prog)
        return 2
    if not os.path.isfile(clip):
        sys.stderr.write("%s: no such file: %s\n" % (prog, clip))
        return 1

    # avspectrogram negotiates the weights' sample rate with audioresample by
    # itself; paths are set as properties, never pasted into the description
    # (a quote or a space in a file name would break it)
    desc = ("filesrc name=src ! decodebin name=d "
            "d. ! queue ! audioconvert ! audioresample "
            "! avspectrogram ! queue ! att.audio_sink "
            "d. ! queue ! videoconvert ! videoscale ! avpatchembed name=embed "
            "! queue ! att.video_sink "
            "avattention name=att ! tee name=t "
            "t. ! queue ! appsink name=sink sync=false ")
    if npz:
        desc += "t. ! queue ! avtensorsink name=npz"
    try:
        pipeline = Gst.parse_launch(desc)
    except GLib.Error as e:
        sys.stderr.write("cannot build the pipeline: %s\n" % e.message)
        return 1
    pipeline.get_by_name("src").set_property("location", clip)
    if weights:
        pipeline.get_by_name("embed").set_property("weights", weights)
        pipeline.get_by_name("att").set_property("weights", weights)
    if npz:
        pipeline.get_by_name("npz").set_property("location", npz)
    st = Stats(quiet)
    sink = pipeline.get_by_name("sink")
    sink.set_property("emit-signals", True)
    sink.connect("new-sample", on_sample, st)

    ret = 0
    pipeline.set_state(Gst.State.PLAYING)
    bus = pipeline.get_bus()
    msg = bus.timed_pop_filtered(Gst.CLOCK_TIME_NONE,
                                 Gst.MessageType.EOS | Gst.MessageType.ERROR)
    if msg.type == Gst.MessageType.ERROR:
        err, dbg = msg.parse_error()
        sys.stderr.write("error from %s: %s\n" % (msg.src.get_name(),
                                                  err.message))
        if dbg:
            sys.stderr.write("  (%s)\n" % dbg)
        ret = 1
    pipeline.set_state(Gst.State.NULL)

    if ret == 0:
        line = ("%u video frames, %u with audio, %u with a visible object "
                "sounding (threshold %s%.3g)"
                % (st.frames, st.with_audio, st.visible,
                   "" if st.threshold > 0 else "unknown: ", st.threshold))
        if st.hist is not None and st.hist.max() > 0:
            best = int(st.hist.argmax())   # the first of equal counts, as in C
            rows, cols = st.hist.shape
            line += ("; the sound was most often at patch (column %u, row %u) "
                     "of the %ux%u grid (%u frames)"
                     % (best % cols, best // cols, cols, rows,
                        st.hist.flat[best]))
        print(line)
        if npz:
            print("features and attention maps written to %s" % npz)
        if st.frames == 0:
            ret = 1
    return ret


if __name__ == "__main__":
    sys.exit(main())
