#!/usr/bin/env bash
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Regenerates the avfusion-v2 fixtures (tests/fixtures/v2_*.safetensors)
# with the PyTorch twin tools/avfusion2.py and compares them with the
# committed ones.  Skipped (exit 77) where Debian's python3-torch is not
# installed: the C tests never need PyTorch.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
if ! /usr/bin/python3 -c 'import torch, torchaudio' 2>/dev/null; then
  echo "python3-torch/python3-torchaudio not installed: fixture regeneration skipped"
  exit 77
fi
OMP_NUM_THREADS=1 exec /usr/bin/python3 "$src/tools/avfusion2_fixtures.py" check-fixtures --dir "$src/tests/fixtures"
