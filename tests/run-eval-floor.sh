#!/usr/bin/env bash
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Accuracy floor of the shipped model: two short held-out scenes of the
# sounding-objects world (one H.264/AAC MP4 at 16:9, one VP8/Vorbis WebM at
# 4:3, seeds never used in training) rendered, encoded and played through
# real pipelines with the elements' default model; fails when the pointing
# accuracy of either is below 0.90.  An accuracy floor, not a timing.
#   run-eval-floor.sh PLUGIN_DIR
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
exec /usr/bin/python3 "$src/tools/evaluate.py" --plugin-path "$1" \
  --scenes 1 --first-seed ${AVF_EVAL_SEED:-11} --duration 12 --min-pointing 0.90
