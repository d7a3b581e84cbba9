#!/usr/bin/env bash
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Regenerates the PyTorch fixtures and compares them with the committed
# ones: avfusion-v1's with model/avfusion.py (the default), avfusion-v2's
# (tests/fixtures/v2_*.safetensors) with model/avfusion2_fixtures.py when
# that script is named.  Skipped (exit 77) where Debian's python3-torch is
# not installed: the C tests never need PyTorch.
#   check-fixtures.sh [avfusion.py|avfusion2_fixtures.py]
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
tool=${1:-avfusion.py}
if ! /usr/bin/python3 -c 'import torch, torchaudio' 2>/dev/null; then
  echo "python3-torch/python3-torchaudio not installed: fixture regeneration skipped"
  exit 77
fi
OMP_NUM_THREADS=1 exec /usr/bin/python3 "$src/model/$tool" check-fixtures --dir "$src/tests/fixtures"
