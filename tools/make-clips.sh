#!/usr/bin/env bash
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Records the project's own test clips with GStreamer: espeak-ng speech over
# a moving picture (videotestsrc's bouncing ball), encoded to WebM, Ogg and
# MP4 with different sample rates, channel counts, sizes and frame rates.
# The results are committed in tests/clips/; run this to make them again.
#   tools/make-clips.sh [OUT_DIR]
set -euo pipefail
out=${1:-$(cd "$(dirname "$0")/.." && pwd)/tests/clips}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v espeak-ng >/dev/null || { echo "make-clips: needs espeak-ng (apt-get install espeak-ng)"; exit 1; }

# make NAME TEXT VOICE SECONDS RATE CHANNELS WIDTH HEIGHT FPS PATTERN AENC VENC MUX
make () {
  local name=$1 text=$2 voice=$3 secs=$4 rate=$5 ch=$6 w=$7 h=$8 fps=$9
  local pattern=${10} aenc=${11} venc=${12} mux=${13}
  espeak-ng -v "$voice" -s 150 -w "$tmp/$name.wav" "$text"
  local frames=$((secs * fps))
  gst-launch-1.0 -q \
    filesrc location="$tmp/$name.wav" ! wavparse ! audioconvert ! audioresample \
      ! "audio/x-raw,rate=$rate,channels=$ch" ! $aenc ! queue ! mux. \
    videotestsrc $pattern num-buffers="$frames" \
      ! "video/x-raw,width=$w,height=$h,framerate=$fps/1" ! videoconvert \
      ! video/x-raw,format=I420 ! $venc ! queue ! mux. \
    $mux name=mux ! filesink location="$out/$name"
  echo "made $out/$name ($(stat -c %s "$out/$name") bytes)"
}

make speech-vp8-vorbis.webm "The ball bounces across the picture while I speak." \
  en 3 16000 1 320 240 30 "pattern=ball background-color=0xff3c6e8f motion=sweep" "vorbisenc quality=0.2" "vp8enc deadline=1 target-bitrate=200000" webmmux
make speech-theora-opus.ogg "Audio and video meet in one pipeline." \
  en-us 2 48000 2 176 144 25 pattern=ball "opusenc bitrate=48000" "theoraenc bitrate=200" oggmux
make speech-vp9-aac.mp4 "Attention finds where the sound is in the picture." \
  en-gb 3 44100 2 256 144 24 pattern=smpte "avenc_aac bitrate=64000" "vp9enc deadline=1 target-bitrate=200000 ! vp9parse" mp4mux
