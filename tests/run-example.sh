#!/usr/bin/env bash
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Runs the example application on a recorded clip and checks what it
# prints: one line per video frame with the patch where the sound is, a
# summary, and a readable .npz.   run-example.sh EXAMPLE CLIP EXPECTED_FRAMES
set -u
exe=$1 clip=$2 want=$3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if ! "$exe" "$clip" --npz "$out/where.npz" >"$out/stdout" 2>"$out/stderr"; then
  echo "FAIL: $exe exited with an error"; cat "$out/stderr"; exit 1
fi
frames=$(grep -cE '^[0-9]+:[0-9]{2}:[0-9]{2}\.[0-9]+ ' "$out/stdout")
located=$(grep -c 'sound at patch (column' "$out/stdout")
head -3 "$out/stdout"; tail -2 "$out/stdout"
if [ "$frames" -ne "$want" ]; then
  echo "FAIL: $frames per-frame lines, expected $want"; exit 1
fi
if [ "$located" -lt $((want / 2)) ]; then
  echo "FAIL: only $located of $frames frames located the sound"; exit 1
fi
grep -q "^$want video frames" "$out/stdout" || { echo "FAIL: no summary line"; exit 1; }
[ -s "$out/where.npz" ] || { echo "FAIL: no .npz written"; exit 1; }
if grep -qi "warn\|critical" "$out/stderr"; then
  echo "FAIL: warnings on stderr:"; cat "$out/stderr"; exit 1
fi
echo "example: $frames frames, sound located in $located"
