#!/usr/bin/env bash
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Makes docs/demo-strip.png, the picture in the README, from the tool's own
# output: avattention-run on the bundled scene of the sounding-objects
# world, version 2 (tests/clips/sounding-objects-2-demo.webm: a magenta disk
# and its look-alike, a magenta triangle, take turns) with the shipped
# default model, then a strip of frames of the annotated video across the
# switches of the sounding object (times in seconds as arguments; the
# defaults fall in the demo scene's segments: the disk, the triangle 1.3 s
# after it starts, the disk again, the triangle again, an off-screen sound).
# AVF_PICTURE_CLIP, AVF_PICTURE_WEIGHTS and AVF_PICTURE_OUT name another
# clip, weights file and output; AVF_BUILD another build tree (build-ci).
#   tools/make-readme-picture.sh [T1 T2 ...]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
times=("$@")
[ ${#times[@]} -gt 0 ] || times=(2.0 4.0 6.8 10.4 14.4)
build="${AVF_BUILD:-$src/build-ci}"
"$src/tools/install-deps"
[ -f "$build/build.ninja" ] || meson setup "$build" "$src" -Dbuildtype=debugoptimized >/dev/null
ninja -C "$build" >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GST_PLUGIN_PATH="$build/elements" GST_REGISTRY="$build/registry-demo.bin"
clip=${AVF_PICTURE_CLIP:-$src/tests/clips/sounding-objects-2-demo.webm}
picture=${AVF_PICTURE_OUT:-$src/docs/demo-strip.png}
weights=()
[ -z "${AVF_PICTURE_WEIGHTS:-}" ] || weights=(--weights "$AVF_PICTURE_WEIGHTS")
"$build/tools/avattention-run" "$clip" "${weights[@]}" --out "$tmp/run" >/dev/null
gst-launch-1.0 -q filesrc location="$tmp/run/annotated.webm" ! matroskademux ! vp8dec \
  ! videoconvert ! videoscale ! video/x-raw,format=RGB,width=384,height=216 \
  ! filesink location="$tmp/frames.rgb"
mkdir -p "$src/docs"
/usr/bin/python3 - "$tmp/frames.rgb" "$picture" 25 "${times[@]}" <<'PY'
import struct, sys, zlib
import numpy as np
raw, out, fps, times = sys.argv[1], sys.argv[2], float(sys.argv[3]), [float(t) for t in sys.argv[4:]]
W, H = 384, 216
frames = np.fromfile(raw, np.uint8).reshape(-1, H, W, 3)
pick = [min(len(frames) - 1, int(round(t * fps))) for t in times]
gap = np.full((H, 6, 3), 255, np.uint8)
row = np.concatenate(sum([[frames[i], gap] for i in pick], [])[:-1], axis=1)
h, w, _ = row.shape
data = b"".join(b"\x00" + row[y].tobytes() for y in range(h))
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
with open(out, "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(data, 9)) + chunk(b"IEND", b""))
print(f"wrote {out}: frames {pick} at t = {times} s")
PY
