# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""safetensors files (avfusion-v1 spec section 4) without the
``safetensors`` package: ``write_safetensors`` and ``read_safetensors``.

Split out of model/avfusion.py, which re-exports these names (import them
from either).
"""

import json
import struct

import numpy as np
import torch


_DTYPES = {"F32": np.dtype("<f4"), "F64": np.dtype("<f8"), "U8": np.dtype("u1"),
           "I64": np.dtype("<i8"), "BOOL": np.dtype("?")}


def _dtype_name(dt):
    dt = np.dtype(dt)
    for name, d in _DTYPES.items():
        if d.kind == dt.kind and d.itemsize == dt.itemsize:
            return name
    raise ValueError(f"safetensors: unsupported dtype {dt}")


def write_safetensors(path, tensors, metadata=None):
    """Writes ``tensors`` (an iterable of (name, array) or a dict, in that
    order) with ``metadata`` (dict str -> str) to ``path``."""
    items = list(tensors.items()) if isinstance(tensors, dict) else list(tensors)
    header = {}
    if metadata:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise ValueError(f"safetensors: metadata {k!r}: keys and values must be str")
        header["__metadata__"] = dict(metadata)
    blobs = []
    offset = 0
    for name, arr in items:
        if torch.is_tensor(arr):
            arr = arr.detach().cpu().numpy()
        arr = np.asarray(arr)
        if name in header:
            raise ValueError(f"safetensors: duplicate tensor {name}")
        dname = _dtype_name(arr.dtype)
        data = np.ascontiguousarray(arr.astype(_DTYPES[dname], copy=False)).tobytes()
        header[name] = {"dtype": dname, "shape": [int(s) for s in arr.shape],
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    hbytes = json.dumps(header, separators=(",", ":"), ensure_ascii=True).encode("utf-8")
    hbytes += b" " * ((8 - (8 + len(hbytes)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hbytes)))
        f.write(hbytes)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """Reads a safetensors file: returns (dict name -> numpy array in file
    order, metadata dict)."""
    with open(path, "rb") as f:
        buf = f.read()
    if len(buf) < 8:
        raise ValueError(f"{path}: too short for a safetensors file")
    (n,) = struct.unpack("<Q", buf[:8])
    if n > len(buf) - 8 or n > 100_000_000:
        raise ValueError(f"{path}: header length {n} out of bounds")
    header = json.loads(buf[8:8 + n].decode("utf-8"))
    if not isinstance(header, dict):
        raise ValueError(f"{path}: header is not a JSON object")
    meta = header.pop("__metadata__", None) or {}
    data = buf[8 + n:]
    entries = sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0])
    out = {}
    expect = 0
    for name, info in entries:
        dname = info["dtype"]
        if dname not in _DTYPES:
            raise ValueError(f"{path}: tensor {name}: unsupported dtype {dname}")
        begin, end = info["data_offsets"]
        shape = tuple(int(s) for s in info["shape"])
        dt = _DTYPES[dname]
        if begin != expect or end - begin != int(np.prod(shape, dtype=np.int64)) * dt.itemsize:
            raise ValueError(f"{path}: tensor {name}: bad data_offsets {[begin, end]}")
        expect = end
        out[name] = np.frombuffer(data[begin:end], dtype=dt).reshape(shape).copy()
    if expect != len(data):
        raise ValueError(f"{path}: data area is {len(data)} bytes, tensors cover {expect}")
    return out, meta
