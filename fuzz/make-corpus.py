#!/usr/bin/python3
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes the seed corpus of the fuzzers in fuzz/corpus/ (deterministic).

    /usr/bin/python3 fuzz/make-corpus.py            # (re)write fuzz/corpus/
    /usr/bin/python3 fuzz/make-corpus.py --check    # compare, change nothing

corpus/safetensors/  small valid and broken safetensors images for
                     fuzz_safetensors (each file names what it holds)
corpus/weights/      a tiny but complete avfusion-v1 weights file made by
                     model/avfusion.py (E 8, H 2, L 1, F 8, M 4, P 2, N 4,
                     T_max 4) and variants of it that the loader must refuse,
                     for fuzz_weights
corpus/fuzz_elements/  inputs of fuzz_elements (fuzz/fuzz_elements.c): an
                     element, its properties, the caps of its appsrcs and a
                     list of actions, written by the encoder below, which
                     mirrors the harness's reader byte for byte

fuzz_safetensors and fuzz_weights start from safetensors/ and weights/,
fuzz_elements from fuzz_elements/ (fuzz/run-fuzzers.sh copies them).  The
tiny weights file in weights/ is also the one fuzz_elements gives to
avpatchembed and avattention.  The whole corpus must stay under 200 KB;
this script fails otherwise.
"""

import argparse
import filecmp
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BUDGET = 200 * 1000
SUBDIRS = ("safetensors", "weights", "fuzz_elements")

TINY = ["--embed-dim", "8", "--heads", "2", "--layers", "1", "--ffn-dim", "8",
        "--n-mels", "4", "--patch-size", "2", "--num-patches", "4",
        "--t-max", "4"]

DTYPE_SIZE = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
              "I16": 2, "U16": 2, "F16": 2, "BF16": 2, "I32": 4, "U32": 4,
              "F32": 4, "F64": 8, "I64": 8, "U64": 8}


# --------------------------------------------------------------------------
# A minimal safetensors writer and reader (no numpy, no torch)
# --------------------------------------------------------------------------

def pack(header_text, data=b"", length=None, pad=True):
    """8-byte little-endian length, header text, data.  With pad the header
    is padded with spaces to a multiple of 8, as the project writer does."""
    h = header_text.encode("utf-8") if isinstance(header_text, str) else header_text
    if pad:
        h += b" " * ((-(8 + len(h))) % 8)
    n = len(h) if length is None else length
    return struct.pack("<Q", n) + h + data


def build(tensors, metadata=None):
    """tensors: list of (name, dtype, shape, data bytes), written in order
    with contiguous offsets.  Returns the file image."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    offset = 0
    blob = b""
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blob += data
    return pack(json.dumps(header, separators=(",", ":")), blob)


def read(image):
    """Returns (tensors in file order as (name, dtype, shape, data), metadata)."""
    (n,) = struct.unpack("<Q", image[:8])
    header = json.loads(image[8:8 + n].decode("utf-8"))
    base = 8 + n
    meta = header.pop("__metadata__", None)
    items = sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0])
    tensors = [(k, v["dtype"], v["shape"],
                image[base + v["data_offsets"][0]:base + v["data_offsets"][1]])
               for k, v in items]
    return tensors, meta


def f32(*values):
    return struct.pack("<%df" % len(values), *values)


# --------------------------------------------------------------------------
# corpus/safetensors
# --------------------------------------------------------------------------

def safetensors_seeds():
    two = build([("a", "F32", [2], f32(1.0, -2.5)),
                 ("b", "U8", [3], b"\x01\x02\x03")])
    seeds = {
        "valid-two-tensors": two,
        "valid-metadata": build(
            [("weight", "F16", [2, 2], b"\x00\x3c" * 4),
             ("bf", "BF16", [1], b"\x80\x3f"),
             ("count", "I64", [], struct.pack("<q", -7)),
             ("flags", "BOOL", [4], b"\x00\x01\x01\x00"),
             ("empty", "F32", [0, 3], b""),
             ("wide", "F64", [1, 1, 1, 1, 1, 1, 1, 1], struct.pack("<d", 0.5))],
            {"format": "pt", "note": "tab\there \u00e9 \U0001f600"}),
        "valid-zero-tensors": pack("{}"),
        "valid-metadata-only": pack('{"__metadata__":{"k":"v"}}'),
        "valid-escapes": pack(
            '{ "na\\u006de\\ud83d\\ude00\\/\\"x" : { "data_offsets" : [ 0 , 2 ] ,'
            ' "shape" : [ 1 ] , "dtype" : "I16" } ,\n\t"__metadata__" : { } }',
            b"\xff\x7f"),
        "valid-all-dtypes": build(
            [(dt.lower(), dt, [1], b"\x00" * size)
             for dt, size in DTYPE_SIZE.items()]),
        # broken ones, one fault each
        "bad-short": b"\x08\x00\x00",
        "bad-truncated": two[:len(two) - 3],
        "bad-header-len-zero": pack("{}", length=0),
        "bad-header-len-past-eof": pack("{}", length=4096),
        "bad-header-len-huge": pack("{}", length=2 ** 64 - 1),
        "bad-json": pack('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}',
                         f32(1.0), pad=False),
        "bad-not-object": pack('["a"]'),
        "bad-utf8": pack(b'{"\xc3\x28":{}}'),
        "bad-deep-nesting": pack('{"__metadata__":' + "[" * 20 + "]" * 20 + "}"),
        "bad-gap-in-offsets": pack(
            '{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},'
            '"b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}}', b"\x00" * 6),
        "bad-overlap": pack(
            '{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},'
            '"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}', b"\x00" * 4),
        "bad-size-mismatch": pack(
            '{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}', b"\x00" * 8),
        "bad-shape-overflow": pack(
            '{"a":{"dtype":"F64","shape":[4294967296,4294967296],'
            '"data_offsets":[0,0]}}'),
        "bad-unknown-dtype": pack(
            '{"a":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}}', b"\x00" * 16),
        "bad-duplicate-name": pack(
            '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
            '"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', b"\x00\x00"),
        "bad-metadata-not-string": pack('{"__metadata__":{"k":1}}'),
        "bad-negative-offset": pack(
            '{"a":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}}'),
        "bad-data-after-last": pack(
            '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\x00\x00"),
        "bad-nul-in-name": pack(
            '{"a\\u0000b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\x00"),
    }
    return seeds


# --------------------------------------------------------------------------
# corpus/weights
# --------------------------------------------------------------------------

def tiny_weights(tmp):
    path = os.path.join(tmp, "tiny.safetensors")
    subprocess.run(["/usr/bin/python3", os.path.join(REPO, "tools", "avfusion.py"),
                    "default", "--seed", "0", "--out", path] + TINY,
                   check=True, stdout=subprocess.DEVNULL)
    with open(path, "rb") as f:
        return f.read()


def weights_seeds(tmp):
    base = tiny_weights(tmp)
    tensors, meta = read(base)

    def variant(tensors=tensors, meta=meta):
        return build(tensors, dict(meta) if meta is not None else None)

    by_name = {t[0]: t for t in tensors}

    def replace(name, new):
        return [new if t[0] == name else t for t in tensors]

    nan_bias = ("audio_proj.bias", "F32", [8], f32(float("nan")) + f32(0.0) * 7)
    seeds = {
        "avfusion-v1-tiny": base,
        "valid-all-metadata": variant(meta=dict(
            meta, sample_rate="16000", n_fft="400", hop_length="160",
            window_ms="1000")),
        # the shipped v1 model's metadata: a visible_threshold and keys the
        # loader does not know (world, description, training provenance)
        "valid-threshold-provenance": variant(meta=dict(
            meta, visible_threshold="0.05", world="sounding-objects-v1",
            description="avfusion-v1 trained on the sounding-objects world",
            trained_by="tools/train.py", training_seed="7",
            training_steps="20000")),
        "bad-threshold": variant(meta=dict(meta, visible_threshold="1.5")),
        "bad-no-format": variant(meta={k: v for k, v in meta.items()
                                       if k != "format"}),
        "bad-heads-not-dividing": variant(meta=dict(meta, num_heads="3")),
        "bad-missing-tensor": variant(
            tensors=[t for t in tensors if t[0] != "layers.0.video_ffn.2.bias"]),
        "bad-wrong-shape": variant(tensors=replace(
            "video_pos", ("video_pos", "F32", [8, 4], by_name["video_pos"][3]))),
        "bad-wrong-dtype": variant(tensors=replace(
            "audio_proj.bias", ("audio_proj.bias", "I32", [8], b"\x00" * 32))),
        "bad-non-finite": variant(tensors=replace("audio_proj.bias", nan_bias)),
        "bad-extra-tensor": variant(
            tensors=tensors + [("extra.weight", "F32", [2], f32(1.0, 2.0))]),
        "bad-partial-layer": variant(
            tensors=tensors + [("layers.1.audio_norm1.weight", "F32", [8],
                                f32(1.0) * 8)]),
    }
    return seeds


# --------------------------------------------------------------------------
# corpus/fuzz_elements: the input format of fuzz/fuzz_elements.c
# --------------------------------------------------------------------------
#
# The harness reads its input front to back; bytes past the end read as 0.
# Every table below is a copy of the harness's table of the same name: a
# choice byte c picks table[c - 1], 0 keeps the default, 255 reads a raw
# value (8 bytes for integers, 4 for doubles) that is mapped into the legal
# range.  docs/fuzzing.md describes the layout.

GST_SECOND = 1000000000
GST_MSECOND = 1000000
INT64_MAX = 2 ** 63 - 1
UINT64_MAX = 2 ** 64 - 1
NONE = UINT64_MAX

SMALL_INTS = [1, 2, 3, 4, 8, 16, 64, 100, 160, 196, 256, 400, 4096, 16000,
              65536, 65537, 131072, 768000, 2 ** 31 - 1, 0, -1, -2 ** 31 + 1,
              7, 14, 224]
TIMES = [0, 1, GST_MSECOND, 10 * GST_MSECOND, 40 * GST_MSECOND,
         GST_SECOND // 30, GST_SECOND, 10 * GST_SECOND, 3600 * GST_SECOND,
         INT64_MAX // 2, INT64_MAX - 1, UINT64_MAX - 2, 999999999,
         GST_SECOND // 16000]
RATES = [1.0, 2.0, 0.5, -1.0, 1e-3, 1e3, -0.25, 1e-9, 1e9, -3.0]
AUDIO_RATES = [16000, 1, 2, 8000, 44100, 48000, 768000, 7, 768001, 22050, 100]
AUDIO_CHANNELS = [1, 2, 3, 6, 8, 64, 65, 16]
VIDEO_FORMATS = ["RGB", "BGR", "RGBx", "BGRx", "xRGB", "xBGR", "RGBA", "BGRA",
                 "ARGB", "ABGR", "I420", "NV12", "GRAY8", "YUY2", "RGB16"]
VIDEO_SIDES = [224, 1, 2, 3, 4, 8, 14, 16, 223, 448, 64, 48, 65536, 65537, 17,
               32]
FRAMERATES = [(30, 1), (25, 1), (0, 1), (30000, 1001), (1, 1000),
              (2 ** 31 - 1, 1), (1, 2 ** 31 - 1), (16000, 160), (100, 1)]
NFFT = [400, 2, 3, 4, 16, 256, 512, 1024, 4096, 65536, 401, 50]
HOP = [160, 1, 2, 400, 1000, 65536, 16777216, 25, 3]
NMELS = [64, 1, 2, 4, 40, 128, 4096, 3]
FMIN = [0.0, 20.0, 300.0, 7999.0, 8000.0, 100000.0, 384000.0, 0.5]
FMAX = [0.0, 1.0, 4000.0, 8000.0, 8001.0, 384000.0, 50.0, 7999.5]
SEEDS = [0, 1, 42, UINT64_MAX]
PATCH = [16, 1, 2, 4, 8, 32, 224, 65536, 3]
EMBED = [256, 1, 8, 16, 64, 65536, 24, 3]
WINDOW = [GST_SECOND, GST_MSECOND, 10 * GST_MSECOND, 20 * GST_MSECOND,
          40 * GST_MSECOND, 50 * GST_MSECOND, 100 * GST_MSECOND,
          10 * GST_SECOND, 1000 * GST_SECOND, 5 * GST_MSECOND]
LAYER = [-1, 0, 1, 2, 63]
HEAD = [-1, 0, 1, 2, 7, 65535]
OPACITY = [0.5, 0.0, 1.0, 1e-6, 0.999]
THREADS = [1, 0, 2]
# weights: "" (built-in), the tiny file, the tiny file with metadata, a
# file the loader refuses, a missing file, a folder
WEIGHTS = {"builtin": 1, "tiny": 2, "tiny-metadata": 3, "bad": 4,
           "missing": 5, "folder": 6}
# location: index into the harness's location_names (byte % 8)
LOCATION = {"out.npy": 0, "out.npz": 1, None: 2, "out.bin": 3, "": 4,
            "missing-dir/out.npz": 5, ".npy": 6, "out.NPZ": 7}

SPECTROGRAM, PATCHEMBED, TENSORSINK, ATTENTION, OVERLAY = range(5)
PUSH, CAPS, GAP, SEGMENT, SEEK, EOS, PROPERTY, STATE, WAIT, REPEAT = range(10)

# buffer flags (bit b of the flags byte)
DISCONT, GAPFLAG, DELTA, HEADER, DROPPABLE, RESYNC, CORRUPTED = (
    1 << b for b in range(7))
DTS = 0x80


def pick(table, value):
    """The choice byte that picks value from table (None: keep default)."""
    return 0 if value is None else table.index(value) + 1


class Input:
    """Builds one fuzz_elements input; every method writes what the
    harness's reader of the same name reads."""

    def __init__(self, element):
        self.b = bytearray([element])

    # ---- raw values
    def u8(self, v):
        self.b += struct.pack("<B", v)
        return self

    def u16(self, v):
        self.b += struct.pack("<H", v)
        return self

    def u32(self, v):
        self.b += struct.pack("<I", v)
        return self

    def u64(self, v):
        self.b += struct.pack("<Q", v)
        return self

    def choice(self, table, value):
        return self.u8(pick(table, value))

    # ---- caps
    def audio(self, preset=0):
        """A preset: 0 F32 16 kHz mono, 1 48 kHz stereo, 2 1 Hz, 3 768 kHz,
        4 16 kHz 64 channels, 5 S16, 6 non-interleaved, 7 F64, 8 8 kHz 6
        channels, 9 2 Hz 3 channels."""
        return self.u8(preset)

    def video(self, preset=0):
        """A preset: 0 RGB 224x224, 1 RGBx 4x4, 2 RGBA 8x2, 3 BGR 14x14,
        4 I420 64x48, 5 NV12 64x48, 6 RGB 1x1, 7 ARGB 65536x1, 8 GRAY8
        16x16, 9 RGB 223x224, 10 I420 3x3, 11 NV12 1x1, 12 BGRx 16x16,
        13 ABGR 2x8, 14 xRGB 5x7."""
        return self.u8(preset)

    def video_free(self, fmt, width, height, fps=None, colorimetry=None):
        self.u8(128).u8(VIDEO_FORMATS.index(fmt))
        self.choice(VIDEO_SIDES, width).choice(VIDEO_SIDES, height)
        self.u8(0 if fps is None else FRAMERATES.index(fps) + 1)
        if colorimetry is None:
            return self.u8(0)
        return self.u8(1).u8(colorimetry)

    def tensor(self, preset=0):
        """A preset: 0 log-mel M 64 (16000/160), 1 log-mel M 4, 2 patches
        E 256 14x14, 3 patches E 8 2x2, 4 fused 512, 5 fused 16, 6 log-mel
        M 4 at 100 Hz hop 25, 7 patches E 8 4x1 without frame rate, 8 fused
        1, 9 log-mel M 4096 at 768 kHz, 10 patches E 65536 1x1, 11 log-mel
        M 4 at 1 Hz hop 16777216."""
        return self.u8(preset)

    def tensor_free(self, kind, fields, dtype=0, fps=None):
        """kind: 0 log-mel, 1 patch-embedding, 2 fused, 3 unknown, 4 none;
        fields: value per field name (int, None = absent, "str", 4.0)."""
        self.u8(128).u8(kind).u8(dtype)
        for name in ("n-mels", "rate", "hop-length", "n-fft", "embed-dim",
                     "num-patches", "grid-columns", "grid-rows",
                     "patch-size", "width"):
            v = fields.get(name, None)
            if v is None:
                self.u8(5)
            elif isinstance(v, str):
                self.u8(6)
            elif isinstance(v, float):
                self.u8(7)
            else:
                self.u8(0).choice(SMALL_INTS, v)
        self.u8(1)                      # frame-shape
        return self.u8(0 if fps is None else FRAMERATES.index(fps) + 1)

    # ---- actions
    def push(self, src=0, k=1, delta=None, raw=None, raw32=None, zero=False,
             meta=0,
             layout=(0, 0), mem=0, off=1, cut=1, fill=("sine", 10),
             attention=None, pts=("seq",), dur=("natural",), flags=0):
        """k units (audio: 64 sample frames; video: a picture; tensors: a
        frame); or one small unit plus delta bytes; or raw bytes; or none."""
        self.u8(PUSH).u8(src)
        if zero:
            size_mode = 3
        elif raw32 is not None:
            size_mode = 7
        elif raw is not None:
            size_mode = 2
        elif delta is not None:
            size_mode = 4 * ((delta + 8) % 16) + 1
        else:
            size_mode = 4 * k
        self.u8(size_mode).u8(meta)
        if meta % 4 and attention is None:
            self.u8(layout[0]).u8(layout[1])
        if raw32 is not None:
            self.u32(raw32)
        elif raw is not None:
            self.u16(raw)
        self.u8(mem)
        if mem == 1:
            self.u8(off)
        elif mem == 2:
            self.u16(cut)
        self.fill(fill)
        if attention is not None:
            self.attention(**attention)
        self.pts(pts)
        self.dur(dur)
        return self.u8(flags)

    def fill(self, f):
        mode = f[0]
        if mode == "sine":
            return self.u8(0).u8(f[1])
        if mode == "pattern":
            self.u8(1).u8(len(f[1]) - 1)
            for c in f[1]:
                self.u8(c)
            return self
        if mode == "special":
            return self.u8(2).u8(f[1]).u8(f[2])
        if mode == "zero":
            return self.u8(3)
        return self.u8(4).u8(f[1])          # ramp

    def attention(self, layers=1, heads=1, model_heads=2, T=4, cols=2,
                  rows=2, missing=False, ended=False, mask=None,
                  skipped=0, fill=("ramp", 3), window=(0, 4), present=None):
        self.u8(layers - 1).u8(heads - 1).u8(model_heads - 1)
        self.u8(T).u8(cols).u8(rows)
        flags = (1 if missing else 0) | (2 if ended else 0)
        flags |= 4 if present is None else 0
        flags |= 8 if mask is not None else 0
        self.u8(flags).u8(skipped)
        self.fill(fill)
        self.u8(window[0]).u8(window[1])
        if present is not None:
            self.u8(present)
        if mask is not None and T > 0:
            for m in mask:
                self.u8(m)
        return self

    def pts(self, p):
        if p[0] == "seq":
            return self.u8(0)
        if p[0] == "none":
            return self.u8(1)
        if p[0] == "table":
            return self.u8(2 + 5 * TIMES.index(p[1]))
        if p[0] == "jitter":                # microseconds
            return self.u8(3).u16(p[1] & 0xffff)
        return self.u8(4).u64(p[1])         # raw

    def dur(self, d):
        if d[0] == "natural":
            return self.u8(0)
        if d[0] == "none":
            return self.u8(1)
        if d[0] == "table":
            return self.u8(2 + 4 * TIMES.index(d[1]))
        return self.u8(3).u32(d[1])         # raw

    def caps(self, src=0):
        """CAPS action: call audio/video/tensor(...) next."""
        return self.u8(CAPS).u8(src)

    def gap(self, src=0, ts=None, duration=None):
        return self.u8(GAP).u8(src).choice(TIMES, ts).choice(TIMES, duration)

    def segment(self, src=0, rate=None, applied=None, start=None, span=None,
                time=None, base=None, flags=0):
        self.u8(SEGMENT).u8(src).choice(RATES, rate).choice(RATES, applied)
        self.choice(TIMES, start).choice(TIMES, span)
        return self.choice(TIMES, time).choice(TIMES, base).u8(flags)

    def seek(self, target=0, how=0, rate=None, start=None, span=None):
        """target 0: the pipeline, k: appsrc k - 1 (always flushing)."""
        self.u8(SEEK).u8(target).u8(how).choice(RATES, rate)
        return self.choice(TIMES, start).choice(TIMES, span)

    def eos(self, src=0):
        return self.u8(EOS).u8(src)

    def prop(self, k):
        """PROPERTY action: the value bytes follow (see the element
        helpers' argument order)."""
        return self.u8(PROPERTY).u8(k)

    def state(self):
        """To READY and back to PLAYING."""
        return self.u8(STATE).u8(1)

    def wait(self):
        return self.u8(WAIT)

    def repeat(self, src=0):
        return self.u8(REPEAT).u8(src)

    def bytes(self):
        return bytes(self.b)


def spectrogram(n_fft=None, hop=None, n_mels=None, f_min=None, f_max=None,
                config=0):
    i = Input(SPECTROGRAM).choice(NFFT, n_fft).choice(HOP, hop)
    i.choice(NMELS, n_mels).choice(FMIN, f_min).choice(FMAX, f_max)
    return i.u8(config)


def patchembed(weights=None, seed=None, patch=None, embed=None, config=0):
    i = Input(PATCHEMBED).u8(0 if weights is None else WEIGHTS[weights])
    i.choice(SEEDS, seed).choice(PATCH, patch).choice(EMBED, embed)
    return i.u8(config)


def tensorsink(location="out.npy", config=0):
    return Input(TENSORSINK).u8(LOCATION[location]).u8(config)


def attention(weights=None, seed=None, window=None, attn=None, post=None,
              threads=None, configs=(0, 0)):
    """attn: 0 none, 1 mean, 2 per-head."""
    i = Input(ATTENTION).u8(0 if weights is None else WEIGHTS[weights])
    i.choice(SEEDS, seed).choice(WINDOW, window)
    i.u8(0 if attn is None else attn + 1)
    i.u8(0 if post is None else int(post) + 1).choice(THREADS, threads)
    return i.u8(configs[0]).u8(configs[1])


def overlay(layer=None, module=None, head=None, colormap=None, opacity=None,
            marker=None, configs=(0, 0)):
    """module: 0 audio-self, 1 video-self, 2 audio-cross, 3 video-cross;
    colormap: 0 inferno, 1 jet, 2 gray."""
    i = Input(OVERLAY).choice(LAYER, layer)
    i.u8(0 if module is None else module + 1).choice(HEAD, head)
    i.u8(0 if colormap is None else colormap + 1).choice(OPACITY, opacity)
    i.u8(0 if marker is None else int(marker) + 1)
    return i.u8(configs[0]).u8(configs[1])


def element_seeds():
    seeds = {}

    def add(name, inp):
        seeds[name] = inp.bytes()

    # avspectrogram ------------------------------------------------------
    i = spectrogram().audio(0)
    for _ in range(4):
        i.push(k=25)                    # 1600 samples, a tenth of a second
    add("spectrogram-sine-16k", i)

    i = spectrogram(n_fft=2, hop=1, n_mels=1).audio(9)
    add("spectrogram-nfft2-hop1-2hz-3ch", i.push(k=2).push(k=1))

    i = spectrogram(hop=16777216, n_mels=4096).audio(3)
    add("spectrogram-768k-huge-hop", i.push(k=63).push(k=63))

    add("spectrogram-64-channels",
        spectrogram(n_mels=4).audio(4).push(k=1).push(k=2))
    add("spectrogram-s16-refused", spectrogram().audio(5).push(k=4))
    add("spectrogram-non-interleaved-refused",
        spectrogram().audio(6).push(k=4))

    i = spectrogram(n_fft=16, hop=3).audio(0)
    i.push(k=2, mem=1, off=1).push(delta=-3, mem=2, cut=7)
    i.push(k=3, mem=3, fill=("pattern", b"\x00\x00\x80\x3f"))
    add("spectrogram-unaligned-split-partial", i)

    i = spectrogram(n_fft=256, hop=160).audio(0).push(k=5)
    i.caps().audio(1).push(k=5).caps().audio(4).push(k=1)
    i.caps().audio(0).push(k=5)
    add("spectrogram-caps-changes", i)

    i = spectrogram(n_fft=256).audio(0).push(k=4)
    i.gap(ts=GST_SECOND, duration=10 * GST_MSECOND)
    i.push(k=4, flags=DISCONT).push(k=4, pts=("none",))
    i.push(k=4, flags=GAPFLAG).push(k=4, pts=("jitter", 30000))
    i.push(k=4, pts=("jitter", -30000 & 0xffff))
    add("spectrogram-gap-discont-no-pts-jitter", i)

    i = spectrogram(n_fft=256).audio(0).push(k=8).push(k=8)
    i.seek(0, rate=1.0, start=GST_SECOND).push(k=8)
    i.seek(1, rate=2.0, start=10 * GST_MSECOND).push(k=8)
    add("spectrogram-flushing-seeks", i)

    i = spectrogram(n_fft=256).audio(0)
    i.segment(rate=-1.0, start=GST_SECOND, span=10 * GST_MSECOND,
              base=INT64_MAX // 2).push(k=8, pts=("table", GST_SECOND))
    i.segment(rate=1e9, applied=0.5, start=0, time=3600 * GST_SECOND)
    i.push(k=8, pts=("table", 0))
    add("spectrogram-odd-segments", i)

    i = spectrogram(n_fft=4, hop=2, n_mels=2).audio(0)
    i.push(k=1, fill=("special", 3, 4)).push(k=1, fill=("special", 6, 8))
    add("spectrogram-nan-inf-samples", i)

    add("spectrogram-fmax-above-nyquist-refused",
        spectrogram(f_min=7999.0, f_max=8001.0).audio(0).push(k=8))

    i = spectrogram(n_fft=256).audio(0).push(k=4).state()
    i.push(k=4).prop(0).choice(NFFT, 512).state().push(k=4)
    add("spectrogram-ready-cycles-property", i)

    add("spectrogram-bytes-format-no-pts",
        spectrogram(n_fft=16, config=2).audio(0)
        .push(k=4, pts=("none",), dur=("none",)).push(k=4, pts=("none",)))

    # avpatchembed -------------------------------------------------------
    i = patchembed(embed=8).video(0).push().push(pts=("table", GST_SECOND))
    add("patchembed-builtin-224x224", i)

    i = patchembed(weights="tiny").video(1).push().push(mem=1, off=2)
    i.caps().video(13).push().push(mem=2, cut=5).caps().video(2).push()
    add("patchembed-tiny-weights-sizes", i)

    i = patchembed(weights="tiny").video(1)
    i.push(meta=1, layout=(8, 12)).push(meta=2, layout=(0, 0))
    i.push(meta=1, layout=(3, 1), delta=-8)
    add("patchembed-video-meta-strides", i)

    add("patchembed-wrong-size-refused",
        patchembed(embed=8).video(9).push())
    add("patchembed-patch1-14x14",
        patchembed(patch=1, embed=8).video(3).push().push(flags=DISCONT))
    add("patchembed-i420-refused", patchembed(embed=8).video(4).push())
    add("patchembed-short-and-empty-buffers",
        patchembed(weights="tiny").video(1).push(delta=-8).push(zero=True))
    add("patchembed-bad-weights", patchembed(weights="bad").video(1).push())
    add("patchembed-missing-weights",
        patchembed(weights="missing").video(1).push())

    i = patchembed(weights="tiny").video(1).push(mem=3).repeat()
    i.seek(0, start=GST_SECOND).push().repeat()
    add("patchembed-read-only-repeat-seek", i)

    # avtensorsink -------------------------------------------------------
    i = tensorsink("out.npy").tensor(1)
    i.push(k=10).push(k=3, pts=("none",)).push(k=1, dur=("none",))
    add("tensorsink-npy-log-mel", i)

    meta = dict(layers=1, heads=1, T=4, cols=2, rows=2, mask=[0, 0, 1, 1])
    i = tensorsink("out.npz").tensor(5)
    i.push(k=1).push(k=2, meta=1, attention=meta)
    i.push(k=1, meta=1, attention=dict(meta, skipped=0b0101, ended=True))
    add("tensorsink-npz-fused-attention-meta", i)

    i = tensorsink("out.npz").tensor(5).push(k=1, meta=1, attention=meta)
    i.push(k=1, meta=1, attention=dict(meta, T=8, mask=[0] * 8))
    add("tensorsink-npz-meta-size-change", i)

    i = tensorsink("out.npy").tensor(5).push(k=2).caps().tensor(4).push(k=1)
    add("tensorsink-shape-change-refused", i)
    add("tensorsink-bad-suffix", tensorsink("out.bin").tensor(5).push(k=1))
    add("tensorsink-no-location", tensorsink(None).tensor(5).push(k=1))
    add("tensorsink-unwritable-folder",
        tensorsink("missing-dir/out.npz").tensor(5).push(k=1))

    i = tensorsink("out.npz").tensor_free(
        1, {"embed-dim": 8, "grid-columns": 2, "grid-rows": 2,
            "patch-size": 2}, fps=(25, 1))
    i.push(k=2).state().push(k=1)
    add("tensorsink-free-caps-ready-without-eos", i)

    i = tensorsink("out.npy").tensor_free(0, {"n-mels": 4, "rate": "x"})
    add("tensorsink-caps-field-of-wrong-type", i.push(k=1))

    add("tensorsink-partial-frame",
        tensorsink("out.npz").tensor(3).push(delta=-4).push(delta=4))

    # avattention --------------------------------------------------------
    # tiny weights: E 8, M 4, N 4, T_max 4; a window of 40 ms holds 4
    # spectrogram frames of 10 ms (16000 Hz, hop 160)
    def tiny_attention(**kw):
        return attention(weights="tiny", window=40 * GST_MSECOND, **kw) \
            .tensor(1).tensor(3)

    i = tiny_attention()
    i.push(0, k=8).push(1, k=1).push(0, k=8).push(1, k=2)
    add("attention-tiny-window-40ms", i)

    i = tiny_attention(attn=2, post=True)
    i.push(0, k=4).push(1, k=1).push(1, k=1).push(0, k=12)
    add("attention-tiny-per-head-messages", i)

    i = tiny_attention(attn=0)
    i.push(1, k=3).gap(0, ts=0, duration=10 * GST_MSECOND).eos(0)
    i.push(1, k=1)
    add("attention-tiny-audio-gap-then-eos", i)

    i = attention().tensor(0).tensor(2)
    i.push(0, k=20).push(1, k=1)
    add("attention-builtin-weights", i)

    add("attention-mel-bands-mismatch",
        attention(weights="tiny", window=40 * GST_MSECOND).tensor(0)
        .tensor(3).push(0, k=4).push(1, k=1))
    add("attention-window-too-long",
        attention(weights="tiny").tensor(1).tensor(3)
        .push(0, k=4).push(1, k=1))

    i = tiny_attention()
    i.push(0, k=8).push(1, k=1).seek(0, start=GST_SECOND)
    i.push(0, k=8, pts=("table", GST_SECOND))
    i.push(1, k=1, pts=("table", GST_SECOND))
    add("attention-tiny-pipeline-seek", i)

    i = tiny_attention().push(0, k=4).push(1, k=1, pts=("none",))
    add("attention-video-without-pts", i)

    i = tiny_attention()
    i.segment(1, rate=2.0, start=GST_SECOND, base=GST_SECOND)
    i.push(1, k=2, pts=("table", GST_SECOND)).push(0, k=8, mem=1)
    add("attention-tiny-segment-unaligned", i)

    # avattnoverlay ------------------------------------------------------
    meta = dict(layers=1, heads=1, T=4, cols=2, rows=2, mask=[0, 0, 0, 1])

    def overlay_frames(i, n=2, **kw):
        for _ in range(n):
            i.push(0, k=1).push(1, k=1, meta=1, attention=dict(meta, **kw),
                                 dur=("none",))
        return i

    add("overlay-bgrx-attention-meta",
        overlay_frames(overlay(opacity=1.0, marker=True).video(12)
                       .tensor(5)))
    add("overlay-i420-video-self-jet",
        overlay_frames(overlay(module=1, colormap=1).video(4).tensor(5)))
    add("overlay-nv12-per-head",
        overlay_frames(overlay(head=1).video(5).tensor(5), heads=2))
    add("overlay-odd-sizes",
        overlay_frames(overlay().video(10).tensor(5), n=1)
        .caps(0).video(11).push(0, k=1))

    i = overlay().video(12).tensor(5)
    i.push(0, k=1).push(1, k=1).push(0, k=1).push(1, k=1)
    add("overlay-no-meta-passthrough", i)

    add("overlay-inconsistent-meta",
        overlay_frames(overlay().video(12).tensor(5), n=1, cols=0))

    i = overlay().video(12).tensor(5).gap(0, ts=0, duration=GST_SECOND // 30)
    i.eos(1).push(0, k=1).push(0, k=1)
    add("overlay-video-gap-attention-eos", i)

    i = overlay().video(12).tensor(5)
    i.push(0, k=1, meta=1, layout=(5, 3))
    i.push(1, k=1, meta=1, attention=meta, dur=("none",))
    add("overlay-padded-video-meta", i)

    add("overlay-layer-head-out-of-range",
        overlay_frames(overlay(layer=63, head=65535, module=3).video(1)
                       .tensor(5)))

    i = overlay().video(1).tensor(5)
    overlay_frames(i, n=1).prop(4).choice(OPACITY, 0.0)
    i.prop(3).u8(3).prop(1).u8(1)               # colormap gray, audio-self
    overlay_frames(i, n=1, missing=True)
    add("overlay-properties-while-playing", i)
    return seeds


# --------------------------------------------------------------------------

def write_corpus(root, tmp):
    sets = {"safetensors": safetensors_seeds(), "weights": weights_seeds(tmp),
            "fuzz_elements": element_seeds()}
    for sub, seeds in sets.items():
        d = os.path.join(root, sub)
        os.makedirs(d, exist_ok=True)
        ext = ".bin" if sub == "fuzz_elements" else ".safetensors"
        for name, data in seeds.items():
            with open(os.path.join(d, name + ext), "wb") as f:
                f.write(data)
    total = sum(len(data) for seeds in sets.values() for data in seeds.values())
    count = sum(len(seeds) for seeds in sets.values())
    return total, count


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="regenerate in a temporary folder and compare with "
                    "fuzz/corpus/ instead of writing it")
    args = ap.parse_args()
    corpus = os.path.join(HERE, "corpus")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "corpus")
        total, count = write_corpus(out, tmp)
        if total >= BUDGET:
            print(f"make-corpus: the corpus is {total} bytes, over the budget "
                  f"of {BUDGET}", file=sys.stderr)
            return 1
        if args.check:
            bad = []
            for sub in SUBDIRS:
                a, b = os.path.join(out, sub), os.path.join(corpus, sub)
                names = set(os.listdir(a)) | set(os.listdir(b) if os.path.isdir(b) else [])
                for name in sorted(names):
                    pa, pb = os.path.join(a, name), os.path.join(b, name)
                    if not (os.path.isfile(pa) and os.path.isfile(pb)
                            and filecmp.cmp(pa, pb, shallow=False)):
                        bad.append(os.path.join(sub, name))
            if bad:
                print("make-corpus: differs from the generator: " + ", ".join(bad),
                      file=sys.stderr)
                return 1
            print(f"make-corpus: fuzz/corpus matches ({count} files, {total} bytes)")
            return 0
        for sub in SUBDIRS:
            shutil.rmtree(os.path.join(corpus, sub), ignore_errors=True)
            shutil.copytree(os.path.join(out, sub), os.path.join(corpus, sub))
    print(f"make-corpus: wrote {count} files, {total} bytes to fuzz/corpus/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
