#!/usr/bin/env bash
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The command-line tool: exit codes, the files it writes, its messages for
# bad arguments and for clips without audio or video.
#   run-cli.sh AVATTENTION_RUN CLIP
set -u
run=$1 clip=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check () { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }

"$run" >"$tmp/o" 2>"$tmp/e"; code=$?
check "no argument: exit 2 and usage" '[ $code -eq 2 ] && grep -q usage "$tmp/e"'

"$run" /nonexistent/clip.webm >"$tmp/o" 2>"$tmp/e"; code=$?
check "missing clip: exit 2 naming the file" '[ $code -eq 2 ] && grep -q "/nonexistent/clip.webm: no such file" "$tmp/e"'

"$run" "$clip" --weights /nonexistent/w.safetensors >"$tmp/o" 2>"$tmp/e"; code=$?
check "missing weights: exit 2 naming the file" '[ $code -eq 2 ] && grep -q "weights file /nonexistent/w.safetensors" "$tmp/e"'

"$run" "$clip" --frobnicate >"$tmp/o" 2>"$tmp/e"; code=$?
check "unknown option: exit 2" '[ $code -eq 2 ] && grep -q "unexpected argument" "$tmp/e"'

head -c 5000 /dev/urandom >"$tmp/junk.webm"
"$run" "$tmp/junk.webm" --out "$tmp/junk" >"$tmp/o" 2>"$tmp/e"; code=$?
check "junk clip: exit 1 with an error message" '[ $code -eq 1 ] && grep -q "error from" "$tmp/e"'

gst-launch-1.0 -q videotestsrc num-buffers=20 ! video/x-raw,width=64,height=48 ! vp8enc ! webmmux ! filesink location="$tmp/video-only.webm"
"$run" "$tmp/video-only.webm" --out "$tmp/vo" >"$tmp/o" 2>"$tmp/e"; code=$?
check "clip without audio: exit 3 saying so" '[ $code -eq 3 ] && grep -q "has no audio track" "$tmp/e"'

gst-launch-1.0 -q audiotestsrc num-buffers=20 ! vorbisenc ! webmmux ! filesink location="$tmp/audio-only.webm"
"$run" "$tmp/audio-only.webm" --out "$tmp/ao" >"$tmp/o" 2>"$tmp/e"; code=$?
check "clip without video: exit 3 saying so" '[ $code -eq 3 ] && grep -q "has no video track" "$tmp/e"'

"$run" "$clip" --out "$tmp/ok" >"$tmp/o" 2>"$tmp/e"; code=$?
cat "$tmp/o"
check "good clip: exit 0" '[ $code -eq 0 ]'
check "good clip: progress lines" 'grep -q "progress: .*%.*fps" "$tmp/o"'
check "good clip: summary" 'grep -q "^frames: *90 " "$tmp/o" && grep -q "^throughput:" "$tmp/o" && grep -q "^the sound:" "$tmp/o"'
check "good clip: features.npz written" '[ -s "$tmp/ok/features.npz" ]'
check "good clip: annotated.webm written and decodable with 90 frames" \
  '[ "$(gst-launch-1.0 -v filesrc location="$tmp/ok/annotated.webm" ! matroskademux ! vp8dec ! fakesink silent=false 2>&1 | grep -c "chain   ")" -eq 90 ]'
check "good clip: no warnings" '! grep -qi "warn\|critical" "$tmp/e"'
[ $fail -eq 0 ]
