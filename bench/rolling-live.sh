#!/bin/bash
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Long live recording into rolling files (issue 20): live test sources
# (videotestsrc and audiotestsrc with is-live=true) through the whole
# pipeline into avtensorsink max-size-time=PART, for DURATION seconds of
# wall clock.  Every SAMPLE seconds it prints the recorder's resident
# memory (VmRSS), its temporary disk (the unlinked temporary arrays it
# holds open, and any hidden .tmp file in the folder) and the parts closed
# so far; at the end, the range of each after the first part was closed,
# and checks that every part loads with numpy and that the parts' frames
# follow each other.  Not run by CI (an hour by default).
#
#   bench/rolling-live.sh [--build DIR] [--duration S] [--part S]
#                         [--sample S] [--maps summary|all|none] [--keep DIR]
#
# Defaults: build-ci, 3600 s, 60 s parts, a sample every 30 s, summary.
set -u
build=build-ci duration=3600 part=60 sample=30 maps=summary keep=
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --part) part=$2; shift 2 ;;
    --sample) sample=$2; shift 2 ;;
    --maps) maps=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--duration S] [--part S] [--sample S] [--maps M] [--keep DIR]" >&2; exit 2 ;;
  esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
case $build in /*) ;; *) build=$root/$build ;; esac
export GST_PLUGIN_PATH=$build/elements OPENBLAS_NUM_THREADS=1
out=${keep:-$(mktemp -d /tmp/rolling-live-XXXXXX)}
mkdir -p "$out"

gst-launch-1.0 -q \
  videotestsrc is-live=true pattern=ball ! video/x-raw,width=320,height=240,framerate=30/1 \
  ! videoconvert ! videoscale ! avpatchembed ! queue ! att.video_sink \
  audiotestsrc is-live=true freq=440 ! audioconvert ! audioresample ! avspectrogram ! queue \
  ! att.audio_sink \
  avattention name=att ! queue ! avtensorsink maps="$maps" location="$out/part-%05d.npz" \
  max-size-time=$((part * 1000000000)) >"$out/.log" 2>&1 &
pid=$!

# bytes of the files the recorder holds open that are deleted (its
# temporary arrays) plus hidden temporary files in the folder
temp_bytes() {
  local total=0 f s
  for f in /proc/$pid/fd/*; do
    case $(readlink "$f" 2>/dev/null) in
      *"(deleted)") s=$(stat -L -c %s "$f" 2>/dev/null || echo 0); total=$((total + s)) ;;
    esac
  done
  for f in "$out"/.*.tmp; do [ -e "$f" ] && total=$((total + $(stat -c %s "$f"))); done
  echo $total
}

printf "%8s %10s %12s %6s\n" seconds rss_kib temp_bytes parts
start=$(date +%s)
samples=()
while :; do
  sleep "$sample"
  kill -0 $pid 2>/dev/null || { echo "the recorder stopped:"; cat "$out/.log"; exit 1; }
  now=$(( $(date +%s) - start ))
  rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
  tmp=$(temp_bytes)
  parts=$(ls "$out" | grep -c '^part-.*\.npz$')
  printf "%8d %10d %12d %6d\n" "$now" "$rss" "$tmp" "$parts"
  samples+=("$parts $rss $tmp")
  [ "$now" -ge "$duration" ] && break
done
kill -INT $pid; wait $pid

# after the first part was closed: the spread of RSS and temporary disk
printf '%s\n' "${samples[@]}" | awk '$1 >= 1 { n++; if (n == 1 || $2 < rmin) rmin = $2; if ($2 > rmax) rmax = $2;
  if (n == 1 || $3 < tmin) tmin = $3; if ($3 > tmax) tmax = $3 }
  END { if (n) printf "after the first part: RSS %d..%d KiB (%+.1f%%), temporary disk %d..%d bytes, %d samples\n",
        rmin, rmax, 100.0 * (rmax - rmin) / rmin, tmin, tmax, n;
        else print "no part closed: run longer than --part" }'

/usr/bin/python3 - "$out" <<'EOF'
import glob, os, sys
import numpy as np
parts = sorted(glob.glob(os.path.join(sys.argv[1], "part-*.npz")))
prev = None
frames = 0
for p in parts:
    z = np.load(p)
    pts = z["pts"]
    n = len(pts)
    assert all(len(z[k]) == n for k in z.files if k not in ("grid_shape", "model")), p
    if prev is not None:
        step = pts[1] - pts[0] if n > 1 else 0
        assert abs(pts[0] - prev - step) <= step // 2 + 1, (p, pts[0], prev)
    prev = pts[-1]
    frames += n
    print("%s: %d frames, %d bytes (%.0f bytes a frame)" % (os.path.basename(p), n, os.path.getsize(p),
                                                           os.path.getsize(p) / n))
print("%d parts, %d frames, every part loads and follows the one before" % (len(parts), frames))
EOF
[ -z "$keep" ] && rm -rf "$out"
exit 0
