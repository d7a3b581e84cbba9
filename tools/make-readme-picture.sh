#!/usr/bin/env bash
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Makes docs/demo-frame.png, the picture in the README, from the tool's own
# output: avattention-run on the bundled clip, then one frame of the
# annotated video (heat map of where the sound is) as PNG.
#   tools/make-readme-picture.sh [FRAME_INDEX]   (default 60)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
frame=${1:-60}
build="$src/build-ci"
"$src/tools/install-deps"
[ -f "$build/build.ninja" ] || meson setup "$build" "$src" >/dev/null
ninja -C "$build" >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GST_PLUGIN_PATH="$build/elements" GST_REGISTRY="$build/registry-demo.bin"
"$build/tools/avattention-run" "$src/tests/clips/speech-vp8-vorbis.webm" --out "$tmp/run" >/dev/null
gst-launch-1.0 -q filesrc location="$tmp/run/annotated.webm" ! matroskademux ! vp8dec \
  ! videoconvert ! pngenc ! multifilesink location="$tmp/frame-%04d.png"
mkdir -p "$src/docs"
cp "$(printf "$tmp/frame-%04d.png" "$frame")" "$src/docs/demo-frame.png"
echo "wrote docs/demo-frame.png (frame $frame of the annotated demo video)"
