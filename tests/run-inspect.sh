#!/usr/bin/env bash
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# gst-inspect-1.0 documents the plugin: it lists the elements, each element
# inspects without a warning or critical, and every property and pad
# template has a description; every property of ours shows when it can
# change (GST_PARAM_MUTABLE_*: "changeable only in NULL or READY state" or
# "changeable in NULL, READY, PAUSED or PLAYING state").
set -u
fail=0
inherited="name parent emit-signals stats sync max-lateness qos async ts-offset
  enable-last-sample last-sample blocksize render-delay throttle-time max-bitrate
  processing-deadline latency min-upstream-latency start-time-selection start-time
  silent"
inherited=$(echo $inherited)
# "gst-inspect-1.0 avattention" shows the element of that name; the plugin
# listing is "--plugin avattention"
out=$(gst-inspect-1.0 --plugin avattention 2>&1) || { echo "FAIL: gst-inspect-1.0 --plugin avattention: $out"; exit 1; }
echo "$out" | grep -E "^  av"
for e in avspectrogram avpatchembed avattention avtensorsink avattnoverlay; do
  if ! echo "$out" | grep -q "^ *$e:"; then
    echo "FAIL: the plugin does not list $e"; fail=1; continue
  fi
  txt=$(gst-inspect-1.0 "$e" 2>&1)
  if echo "$txt" | grep -qE "(CRITICAL|WARNING) \*\*|-CRITICAL|-WARNING"; then
    echo "FAIL: gst-inspect-1.0 $e printed a warning:"; echo "$txt" | grep -E "CRITICAL|WARNING"; fail=1
  fi
  # every property line "  name   : blurb" has a blurb of at least 3 words
  props=$(echo "$txt" | sed -n '/^Element Properties:/,/^Element Signals:\|^Element Actions:\|^$/p' | grep -E '^  [a-z][a-z0-9-]* +: ')
  while IFS= read -r line; do
    [ -z "$line" ] && continue
    pname=$(echo "$line" | awk '{print $1}')
    # properties of GStreamer's base classes are documented by GStreamer
    case " $inherited " in *" $pname "*) continue ;; esac
    blurb=${line#*: }
    if [ "$(echo "$blurb" | wc -w)" -lt 3 ]; then
      echo "FAIL: $e property without a real description: $line"; fail=1
    fi
  done <<< "$props"
  # the flags line under each of our properties says when it can change
  section=$(echo "$txt" | sed -n '/^Element Properties:/,/^Element Signals:\|^Element Actions:\|^$/p')
  while IFS= read -r pname; do
    case " $inherited " in *" $pname "*) continue ;; esac
    flags=$(echo "$section" | grep -A1 -E "^  $pname +: " | sed -n 2p)
    if ! echo "$flags" | grep -q "changeable"; then
      echo "FAIL: $e property $pname does not show its mutability: $flags"; fail=1
    fi
  done <<< "$(echo "$props" | awk '{print $1}')"
  n=$(echo "$props" | grep -c .)
  echo "ok: $e ($n properties described)"
done
[ $fail -eq 0 ] && echo "inspect: all elements documented"
exit $fail
