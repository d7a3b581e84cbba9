#!/usr/bin/env bash
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# GStreamer's `leaks` tracer over a whole pipeline with every element of
# the plugin (decode, avspectrogram, avpatchembed, avattention, tee,
# avattnoverlay, avtensorsink): after gst_deinit no GstObject, buffer,
# caps, event or meta may still be alive.  A leaked object shows as a
# "object-alive, type-name=(string)..." record (checked: a program that
# leaks one GstBuffer prints exactly that).   run-leaks-tracer.sh CLIP
set -u
clip=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
GST_TRACERS=leaks GST_DEBUG="GST_TRACER:7" timeout 300 gst-launch-1.0 \
  filesrc location="$clip" ! decodebin name=d \
  d. ! queue ! audioconvert ! audioresample ! avspectrogram ! queue ! att.audio_sink \
  d. ! queue ! videoconvert ! tee name=v \
  v. ! queue ! videoscale ! avpatchembed ! queue ! att.video_sink \
  v. ! queue ! ov.video_sink \
  avattention name=att post-messages=true ! tee name=t \
  t. ! queue ! ov.attention_sink \
  t. ! queue ! avtensorsink location="$tmp/f.npz" \
  avattnoverlay name=ov ! fakesink >"$tmp/log" 2>&1
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: the pipeline exited with $rc"; grep -E "ERROR|WARN" "$tmp/log" | head -5; exit 1; }
grep -q "Got EOS" "$tmp/log" || { echo "FAIL: no EOS"; exit 1; }
alive=$(grep -c "object-alive, type-name=(string)[A-Za-z]" "$tmp/log")
if [ "$alive" -ne 0 ]; then
  echo "FAIL: $alive objects alive after gst_deinit:"
  grep "object-alive, type-name=(string)[A-Za-z]" "$tmp/log" | sed 's/.*object-alive/object-alive/' | head -20
  exit 1
fi
echo "leaks tracer: no object alive after the pipeline"
