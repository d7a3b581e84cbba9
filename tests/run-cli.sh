#!/usr/bin/env bash
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The command-line tool: exit codes, the files it writes, its messages for
# bad arguments and for clips without audio or video, paths with quotes,
# spaces and non-ASCII letters; avattention-score on the features.npz it
# wrote (the same pointing lines, its per-frame table, its errors).
#   run-cli.sh AVATTENTION_RUN CLIP WEIGHTS AVATTENTION_SCORE
set -u
run=$1 clip=$2 weights=$3 score=$4
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

# fixed bytes, not /dev/urandom: random bytes now and then hold a frame sync
# that typefind takes for a stream (it happened once in this session)
/usr/bin/python3 -c 'import sys; sys.stdout.buffer.write(bytes([0xAA, 0x55, 0x12, 0x34]) * 1250)' >"$tmp/junk.webm"
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
check "good clip: visible-object line with the threshold" 'grep -q "^visible: .* of 90 frames" "$tmp/o"'
check "good clip: no truth file, no pointing accuracy" '! grep -q "pointing accuracy" "$tmp/o"'

# --threads: one thread or three give the same features, byte for byte
"$run" "$clip" --out "$tmp/th1" --no-video-out --threads 1 >"$tmp/o" 2>"$tmp/e"; code1=$?
"$run" "$clip" --out "$tmp/th3" --no-video-out --threads 3 >"$tmp/o" 2>"$tmp/e"; code3=$?
check "--threads 1 and 3: exit 0, the same features.npz" '[ $code1 -eq 0 ] && [ $code3 -eq 0 ] && cmp -s "$tmp/th1/features.npz" "$tmp/th3/features.npz"'
# --maps: summary by default (no per-layer maps), all (every map, the data
# the same), none; a bad value is exit 2
"$run" "$clip" --out "$tmp/mall" --no-video-out --maps all >"$tmp/o" 2>"$tmp/e"; code=$?
"$run" "$clip" --out "$tmp/mnone" --no-video-out --maps none >"$tmp/o" 2>"$tmp/e"; coden=$?
check "--maps: default summary, all and none" '[ $code -eq 0 ] && [ $coden -eq 0 ] && /usr/bin/python3 -c "
import sys, numpy as np
s, a, n = (np.load(sys.argv[i] + \"/features.npz\") for i in (1, 2, 3))
assert \"patch_weights\" in s.files and not any(k.startswith(\"layers.\") for k in s.files)
assert \"layers.0.audio_cross\" in a.files and \"patch_weights\" not in a.files
assert \"patch_weights\" not in n.files and \"strongest_column\" in n.files
assert (s[\"data\"] == a[\"data\"]).all() and (n[\"pts\"] == a[\"pts\"]).all()
" "$tmp/th1" "$tmp/mall" "$tmp/mnone"'
"$run" "$clip" --maps some >"$tmp/o" 2>"$tmp/e"; code=$?
check "--maps some: exit 2 naming the choices" '[ $code -eq 2 ] && grep -q "summary, all or none" "$tmp/e"'
"$run" "$clip" --threads many >"$tmp/o" 2>"$tmp/e"; code=$?
check "--threads many: exit 2 naming the range" '[ $code -eq 2 ] && grep -q "0 (every core) to 64" "$tmp/e"'

# A truth file beside the clip (CLIP without extension + .truth.tsv), written
# by hand for the 320x240 30 fps clip: frames 30-59 steady with a box over
# the whole picture (every strongest patch hits), 60-69 steady with a box
# outside the picture (every one misses, grown by 320/28 or not), 70-79 not
# steady and 80-84 with no source (neither counts), frame 200 past the end
# (no output: reported).  Pointing accuracy 30 of 40, whatever the model.
mkdir -p "$tmp/t"
cp "$clip" "$tmp/t/clip.webm"
{
  printf '# sounding-objects-v1 truth  width=320 height=240 fps=30/1 seed=0\n'
  printf '# objects 0:red:disk (hand-written for the test)\n'
  printf 'frame\tpts_ns\tsteady\tnegative\tsources\tkinds\tboxes\n'
  for f in $(seq 0 29); do printf '%d\t%d\t0\t0\t-\t-\t-\n' $f $((f * 33333333)); done
  for f in $(seq 30 59); do printf '%d\t%d\t1\t0\t0\t0\t0,0,320,240\n' $f $((f * 33333333)); done
  for f in $(seq 60 69); do printf '%d\t%d\t1\t0\t3\t5\t-900,-900,-800,-800\n' $f $((f * 33333333)); done
  for f in $(seq 70 79); do printf '%d\t%d\t0\t0\t0\t0\t0,0,320,240\n' $f $((f * 33333333)); done
  for f in $(seq 80 84); do printf '%d\t%d\t1\t1\t-\t-\t-\n' $f $((f * 33333333)); done
  printf '200\t6666666666\t1\t0\t0,1\t0,1\t0,0,320,240;1,1,2,2\n'
} >"$tmp/t/clip.truth.tsv"
"$run" "$tmp/t/clip.webm" --out "$tmp/t/out" --no-video-out >"$tmp/o" 2>"$tmp/e"; code=$?
cat "$tmp/o" | tail -4
check "truth beside the clip: exit 0" '[ $code -eq 0 ]'
check "truth beside the clip: pointing accuracy 30 of 40" 'grep -qF "pointing accuracy: 0.750 (30 of 40 steady frames with a visible source; truth file $tmp/t/clip.truth.tsv)" "$tmp/o"'
check "truth beside the clip: the frame past the end is reported" 'grep -q "1 steady frames with a source in the truth file had no output" "$tmp/o"'

# avattention-score: the same measure (tools/truth.c) on the features.npz
grep -E "^pointing accuracy|had no output" "$tmp/o" >"$tmp/run-lines"
"$score" "$tmp/t/out/features.npz" "$tmp/t/clip.truth.tsv" >"$tmp/so" 2>"$tmp/e"; code=$?
cat "$tmp/so"
check "avattention-score: exit 0, avattention-run's pointing lines" \
  '[ $code -eq 0 ] && grep -E "^pointing accuracy|had no output" "$tmp/so" | cmp -s - "$tmp/run-lines"'
check "avattention-score: both-of-two from the map (no two-source frame here)" \
  'grep -qx "both-of-two: none (no steady frame with two sources that hits one)" "$tmp/so"'
"$score" --frames "$tmp/t/out/features.npz" "$tmp/t/clip.truth.tsv" >"$tmp/sf" 2>"$tmp/e"; code=$?
check "avattention-score --frames: a header and one line per truth row" \
  '[ $code -eq 0 ] && [ "$(head -1 "$tmp/sf")" = "$(printf "frame\tpts_ns\toutput\tpointing\thit\tboth\tlookalike")" ] && [ $(wc -l <"$tmp/sf") -eq 87 ]'
check "avattention-score --frames: 30 hits and 10 misses that count, frame 200 without output" \
  '[ $(awk -F"\t" "\$1 >= 30 && \$1 <= 59 && \$4 == 1 && \$5 == 1" "$tmp/sf" | wc -l) -eq 30 ] &&
   [ $(awk -F"\t" "\$1 >= 60 && \$1 <= 69 && \$4 == 1 && \$5 == 0" "$tmp/sf" | wc -l) -eq 10 ] &&
   [ $(awk -F"\t" "\$4 == 1" "$tmp/sf" | wc -l) -eq 40 ] &&
   grep -qx "$(printf "200\t6666666666\t-1\t0\t-\t-\t0")" "$tmp/sf"'
"$score" "$tmp/mnone/features.npz" "$tmp/t/clip.truth.tsv" >"$tmp/so" 2>"$tmp/e"; code=$?
check "avattention-score on maps=none: pointing, no both-of-two" \
  '[ $code -eq 0 ] && grep -q "^pointing accuracy: 0.750 (30 of 40" "$tmp/so" && ! grep -q both-of-two "$tmp/so"'
"$score" "$tmp/mall/features.npz" "$tmp/t/clip.truth.tsv" >"$tmp/so" 2>"$tmp/e"; code=$?
check "avattention-score on maps=all: exit 2, no strongest patch" \
  '[ $code -eq 2 ] && grep -q "has no \"strongest_column\"" "$tmp/e"'
"$score" "$tmp/no-such.npz" "$tmp/t/clip.truth.tsv" >"$tmp/so" 2>"$tmp/e"; code=$?
check "avattention-score, missing features: exit 2 naming the file" '[ $code -eq 2 ] && grep -q "no-such.npz" "$tmp/e"'
"$score" "$tmp/t/out/features.npz" >"$tmp/so" 2>"$tmp/e"; code=$?
check "avattention-score, one file: exit 2 and usage" '[ $code -eq 2 ] && grep -q usage "$tmp/e"'

# --truth FILE: the same file from elsewhere
mv "$tmp/t/clip.truth.tsv" "$tmp/truth-elsewhere.tsv"
"$run" "$tmp/t/clip.webm" --truth "$tmp/truth-elsewhere.tsv" --out "$tmp/t/out" --no-video-out >"$tmp/o" 2>"$tmp/e"; code=$?
check "--truth FILE: the same accuracy" '[ $code -eq 0 ] && grep -qF "pointing accuracy: 0.750 (30 of 40 steady frames with a visible source; truth file $tmp/truth-elsewhere.tsv)" "$tmp/o"'

"$run" "$tmp/t/clip.webm" --truth "$tmp/no-such.tsv" --out "$tmp/t/out" >"$tmp/o" 2>"$tmp/e"; code=$?
check "--truth missing: exit 2 naming the file" '[ $code -eq 2 ] && grep -q "truth file $tmp/no-such.tsv: no such file" "$tmp/e"'

# malformed truth files: exit 2 before anything runs, naming file and line
bad () {  # bad NAME EXPECTED-TEXT  (file content on stdin)
  bad_name=$1 bad_want=$2
  cat >"$tmp/$bad_name.tsv"
  "$run" "$tmp/t/clip.webm" --truth "$tmp/$bad_name.tsv" --out "$tmp/t/out" >"$tmp/o" 2>"$tmp/e"; code=$?
  check "malformed truth ($bad_name): exit 2 with \"$bad_want\"" \
    '[ $code -eq 2 ] && grep -qF "$tmp/$bad_name.tsv:$bad_want" "$tmp/e" && ! grep -q progress "$tmp/o"'
}
printf '# w width=320 height=240\nframe\tpts_ns\tsteady\tnegative\tsources\tkinds\tboxes\n0\t0\t2\t0\t-\t-\t-\n' | bad steady '3: steady "2" is not 0 or 1'
printf '# w width=320 height=240\nframe\tpts_ns\tsteady\tnegative\tsources\tkinds\tboxes\n0\t0\t1\t0\t0,1\t0,1\t1,2,3,4\n' | bad boxes '3: 1 boxes for 2 sources'
printf '# w width=320 height=240\nframe\tpts_ns\tsteady\tnegative\tsources\tkinds\tboxes\n0\t0\t1\t0\t0\t0\t5,5,1,1\n' | bad box-order '3: box "5,5,1,1" is not x0,y0,x1,y1'
printf '# w width=320 height=240\nframe\tpts_ns\tsteady\tnegative\tsources\tkinds\tboxes\n0\t0\t1\t0\n' | bad fields '3: 4 tab-separated fields, the header line has 7'
printf '# w width=320 height=240\n0\t0\t1\t0\t-\t-\t-\n' | bad no-header '2: a data line before the header line'
printf '# w width=320 height=240\nframe\tpts_ns\tsteady\tnegative\tsources\tkinds\n' | bad column '2: the header line has no column "boxes"'
printf '# w width=abc height=240\nframe\tpts_ns\tsteady\tnegative\tsources\tkinds\tboxes\n' | bad width '1: "width=abc" is not a positive number of pixels'
printf 'frame\tpts_ns\tsteady\tnegative\tsources\tkinds\tboxes\n' | bad size ' no "#" line names the clip'"'"'s frame size'

# Paths with a space, double and single quotes and a non-ASCII letter for
# the clip, the weights file and the output folder reach the elements as
# they are (properties, never pasted into the pipeline description): the
# same features as the default model's run above, the weights file's name
# in the .npz's "model", both outputs where the summary says.
odd="$tmp/a \"b\" 'c' ü"
oclip="$odd/clip 'ü'.webm" oweights="$odd/model \"ü\".safetensors" oout="$odd/out \"x\" 'y'"
mkdir -p "$odd"
cp "$clip" "$oclip"
cp "$weights" "$oweights"
LC_ALL=C.UTF-8 "$run" "$oclip" --weights "$oweights" --out "$oout" >"$tmp/o" 2>"$tmp/e"; code=$?
[ $code -eq 0 ] || cat "$tmp/o" "$tmp/e"
check "odd paths: exit 0" '[ $code -eq 0 ]'
check "odd paths: the summary names the clip and both outputs as they are" \
  'grep -qxF "avattention-run: $oclip" "$tmp/o" &&
   grep -qxF "written:     $oout/features.npz" "$tmp/o" &&
   grep -qxF "written:     $oout/annotated.webm" "$tmp/o"'
check "odd paths: annotated.webm written" '[ -s "$oout/annotated.webm" ]'
check "odd paths: the default run's features, \"model\" the weights file's name" '/usr/bin/python3 -c "
import os, sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
assert a.files == b.files, (a.files, b.files)
for k in a.files:
    if k != \"model\":
        assert np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == \"f\"), k
assert b[\"model\"].item() == os.fsencode(os.path.basename(sys.argv[3])), b[\"model\"]
" "$tmp/ok/features.npz" "$oout/features.npz" "$oweights"'
# a folder name that would close the quotes of a pasted description and
# name another file: the features go into the folder named
mkdir -p "$tmp/elsewhere"
inj="$tmp/inj/o\" location=\"$tmp/elsewhere"
"$run" "$clip" --no-video-out --out "$inj" >"$tmp/o" 2>"$tmp/e"; code=$?
check "a folder name holding a property: features.npz in it, nothing elsewhere" \
  '[ $code -eq 0 ] && [ -s "$inj/features.npz" ] && [ -z "$(ls -A "$tmp/elsewhere")" ]'
[ $fail -eq 0 ]
