#!/usr/bin/env bash
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# examples/where_is_the_sound.py prints what examples/where-is-the-sound.c
# prints: every line (time, strongest patch, weight, audio slots, visible
# or not, fused vector's norm) and the summary, on each clip, to the
# printed precision.  Skipped (77) where Python cannot load
# GstAvAttention-1.0.typelib.
#   run-python-example.sh C_EXAMPLE PY_EXAMPLE CLIP...
set -u
cexe=$1 py=$2
shift 2
python=/usr/bin/python3
if ! "$python" -c 'import gi, numpy
gi.require_version("Gst", "1.0"); gi.require_version("GstApp", "1.0")
gi.require_version("GstAvAttention", "1.0")
from gi.repository import GstAvAttention' 2>/dev/null; then
  echo "SKIP: $python cannot import gi, numpy, GstApp or GstAvAttention (GI_TYPELIB_PATH=${GI_TYPELIB_PATH:-})"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
for clip in "$@"; do
  name=$(basename "$clip")
  if ! "$cexe" "$clip" --npz "$out/c.npz" >"$out/c.txt" 2>"$out/c.err"; then
    echo "FAIL: $cexe on $name exited with an error"; cat "$out/c.err"; fail=1; continue
  fi
  if ! "$python" "$py" "$clip" --npz "$out/py.npz" >"$out/py.txt" 2>"$out/py.err"; then
    echo "FAIL: $py on $name exited with an error"; cat "$out/py.err"; fail=1; continue
  fi
  sed -i "s|$out/[a-z]*\.npz|OUT.npz|" "$out/c.txt" "$out/py.txt"
  frames=$(grep -cE '^[0-9]+:[0-9]{2}:[0-9]{2}\.[0-9]{9} ' "$out/c.txt")
  located=$(grep -c 'sound at patch (column' "$out/c.txt")
  if [ "$frames" -lt 10 ] || [ "$located" -lt $((frames / 2)) ]; then
    echo "FAIL: the C example printed $frames frame lines, $located with a patch, on $name"; fail=1; continue
  fi
  if ! diff -u "$out/c.txt" "$out/py.txt" >"$out/diff"; then
    echo "FAIL: the Python example's lines differ from the C example's on $name:"
    head -20 "$out/diff"; fail=1; continue
  fi
  if grep -qiE "warn|critical|traceback" "$out/py.err"; then
    echo "FAIL: the Python example printed on stderr:"; cat "$out/py.err"; fail=1; continue
  fi
  echo "ok: $name: $frames frames ($located with a patch) print the same in C and Python"
  grep ' video frames, ' "$out/py.txt"
done
# paths with a space, quotes and a non-ASCII letter reach the elements as
# they are (set as properties, never pasted into a pipeline description)
odd="$out/a \"b\" 'c' ü"
mkdir -p "$odd"
first=$(basename "$1")
cp "$1" "$odd/clip $first"
weights=$(ls "$(dirname "$py")"/../models/sounding-objects-v2.safetensors 2>/dev/null | head -n 1)
wargs=()
if [ -n "$weights" ]; then cp "$weights" "$odd/model ü.safetensors"; wargs=(--weights "$odd/model ü.safetensors"); fi
if ! "$python" "$py" "$odd/clip $first" "${wargs[@]}" --npz "$odd/out 'x'.npz" --quiet >"$out/odd.txt" 2>&1; then
  echo "FAIL: $py with paths holding spaces and quotes:"; cat "$out/odd.txt"; fail=1
elif ! "$python" -c 'import numpy, sys; assert numpy.load(sys.argv[1])["data"].shape[0] > 0' "$odd/out 'x'.npz"; then
  echo "FAIL: $py wrote no features to a path holding spaces and quotes"; fail=1
else
  echo "ok: paths with spaces, quotes and non-ASCII letters (${#wargs[@]} weights arguments)"
fi
exit $fail
