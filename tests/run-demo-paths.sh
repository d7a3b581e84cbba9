#!/usr/bin/env bash
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tools/run-demo on a clip, a weights file and an output folder whose paths
# hold a space, double and single quotes and a non-ASCII letter, given
# absolute and relative: the outputs are written where the summary says,
# with the weights file's name in the .npz's "model".  Runs the build's
# avattention-run (AVATTENTION_BUILD: nothing is installed or built).
#   run-demo-paths.sh RUN_DEMO BUILD_DIR CLIP WEIGHTS
set -u
demo=$(realpath "$1") build=$(realpath "$2") clip=$3 weights=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check () { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
# model_is NPZ WEIGHTS: the .npz's "model" is the weights file's name
model_is () {
  /usr/bin/python3 -c '
import os, sys, numpy as np
m = np.load(sys.argv[1])["model"].item()
assert m == os.fsencode(os.path.basename(sys.argv[2])), m
' "$1" "$2"
}

odd="$(realpath "$tmp")/a \"b\" 'c' ü"
oclip="$odd/clip 'ü'.webm" oweights="$odd/model \"ü\".safetensors" oout="$odd/out \"x\" 'y'"
mkdir -p "$odd"
cp "$clip" "$oclip"
cp "$weights" "$oweights"

LC_ALL=C.UTF-8 AVATTENTION_BUILD="$build" "$demo" "$oclip" --weights "$oweights" \
  --out "$oout" >"$tmp/o" 2>"$tmp/e"; code=$?
cat "$tmp/o" "$tmp/e"
check "absolute paths: exit 0, every frame" '[ $code -eq 0 ] && grep -q "^frames: *90 " "$tmp/o"'
check "absolute paths: the summary names the clip and both outputs as they are" \
  'grep -qxF "avattention-run: $oclip" "$tmp/o" &&
   grep -qxF "written:     $oout/features.npz" "$tmp/o" &&
   grep -qxF "written:     $oout/annotated.webm" "$tmp/o"'
check "absolute paths: both outputs written, \"model\" the weights file's name" \
  '[ -s "$oout/annotated.webm" ] && model_is "$oout/features.npz" "$oweights"'

# relative to the folder it is run from (run-demo resolves the clip and the
# weights file, avattention-run the output folder)
rel="rel 'ü'"
(cd "$odd" && LC_ALL=C.UTF-8 AVATTENTION_BUILD="$build" "$demo" "clip 'ü'.webm" \
  --weights "model \"ü\".safetensors" --out "$rel" >"$tmp/o" 2>"$tmp/e"); code=$?
[ $code -eq 0 ] || cat "$tmp/o" "$tmp/e"
check "relative paths: exit 0, both outputs in the folder named" \
  '[ $code -eq 0 ] && [ -s "$odd/$rel/annotated.webm" ] && model_is "$odd/$rel/features.npz" "$oweights"'
[ $fail -eq 0 ]
