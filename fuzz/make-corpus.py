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
                     tools/avfusion.py (E 8, H 2, L 1, F 8, M 4, P 2, N 4,
                     T_max 4) and variants of it that the loader must refuse,
                     for fuzz_weights

Both fuzzers start from both folders (fuzz/run-fuzzers.sh copies them).
The whole corpus must stay under 200 KB; this script fails otherwise.
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

def write_corpus(root, tmp):
    sets = {"safetensors": safetensors_seeds(), "weights": weights_seeds(tmp)}
    for sub, seeds in sets.items():
        d = os.path.join(root, sub)
        os.makedirs(d, exist_ok=True)
        for name, data in seeds.items():
            with open(os.path.join(d, name + ".safetensors"), "wb") as f:
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
            for sub in ("safetensors", "weights"):
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
        for sub in ("safetensors", "weights"):
            shutil.rmtree(os.path.join(corpus, sub), ignore_errors=True)
            shutil.copytree(os.path.join(out, sub), os.path.join(corpus, sub))
    print(f"make-corpus: wrote {count} files, {total} bytes to fuzz/corpus/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
