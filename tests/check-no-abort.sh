#!/usr/bin/env bash
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Robustness item 33: no g_assert/abort on stream or file data.  The code
# of the plugin (elements/, meta/, core/) must not contain any call that
# aborts the process: g_assert*, g_error, assert, abort, exit.  Bad input
# gets a GStreamer error message instead.  (g_return_*_if_fail checks of API
# misuse only warn and return, so they stay.)
set -uo pipefail
src=${1:-$(cd "$(dirname "$0")/.." && pwd)}
pattern='\b(g_assert[a-z_]*|g_error|assert|abort|exit|_exit|g_abort)[[:space:]]*\('
hits=$(grep -nE "$pattern" "$src"/elements/*.[ch] "$src"/meta/*.[ch] "$src"/core/*.[ch] |
  grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/\*|\*)')
if [ -n "$hits" ]; then
  echo "calls that abort the process in plugin code:"
  echo "$hits"
  exit 1
fi
n=$(ls "$src"/elements/*.[ch] "$src"/meta/*.[ch] "$src"/core/*.[ch] | wc -l)
echo "no aborting call in $n source files of elements/, meta/, core/"
