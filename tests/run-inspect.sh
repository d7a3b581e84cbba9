#!/usr/bin/env bash
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# gst-inspect-1.0 documents the plugin: it lists the elements, each element
# inspects without a warning or critical, and every property and pad
# template has a description.
set -u
fail=0
out=$(gst-inspect-1.0 avattention 2>&1) || { echo "FAIL: gst-inspect-1.0 avattention: $out"; exit 1; }
echo "$out" | sed -n '1,/^$/p' | head -12
for e in avspectrogram avpatchembed avattention avtensorsink "$@"; do
  if ! echo "$out" | grep -q "^ *$e:"; then
    echo "FAIL: the plugin does not list $e"; fail=1; continue
  fi
  txt=$(gst-inspect-1.0 "$e" 2>&1)
  if echo "$txt" | grep -qiE "critical|warning"; then
    echo "FAIL: gst-inspect-1.0 $e printed a warning:"; echo "$txt" | grep -iE "critical|warning"; fail=1
  fi
  # every property line "  name   : blurb" has a blurb of at least 3 words
  props=$(echo "$txt" | sed -n '/^Element Properties:/,/^Element Signals:\|^Element Actions:\|^$/p' | grep -E '^  [a-z][a-z0-9-]* +: ')
  while IFS= read -r line; do
    [ -z "$line" ] && continue
    blurb=${line#*: }
    if [ "$(echo "$blurb" | wc -w)" -lt 3 ]; then
      echo "FAIL: $e property without a real description: $line"; fail=1
    fi
  done <<< "$props"
  n=$(echo "$props" | grep -c .)
  echo "ok: $e ($n properties described)"
done
[ $fail -eq 0 ] && echo "inspect: all elements documented"
exit $fail
