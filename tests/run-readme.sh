#!/usr/bin/env bash
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Runs every gst-launch-1.0 pipeline of README.md, so the documentation
# cannot rot: each must reach EOS with no error or warning.  A window
# (autovideosink) becomes a fakesink.   run-readme.sh README.md
set -u
readme=$1
src=$(cd "$(dirname "$readme")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$src/tests" "$work/tests"
cd "$work"

# collect the pipelines: lines from a ```sh block that start a gst-launch
# command, joined over trailing backslashes
awk '
  /^```sh/ { inblock = 1; next }
  /^```/   { inblock = 0; next }
  inblock {
    line = $0
    if (cmd != "" || line ~ /^gst-launch-1.0 /) {
      cont = sub(/\\[ \t]*$/, "", line)
      cmd = cmd line
      if (!cont) { print cmd; cmd = "" }
    }
  }' "$src/$(basename "$readme")" > pipelines.txt

n=$(grep -c . pipelines.txt)
[ "$n" -ge 4 ] || { echo "FAIL: found only $n pipelines in $readme"; exit 1; }
fail=0
i=0
while IFS= read -r cmd; do
  i=$((i + 1))
  run=${cmd//autovideosink/fakesink}
  echo "--- pipeline $i: ${run:0:110}..."
  if ! timeout 300 bash -c "$run" >"out$i.txt" 2>&1; then
    echo "FAIL: pipeline $i exited with an error:"; tail -5 "out$i.txt"; fail=1; continue
  fi
  if grep -qE "^(ERROR|WARNING)|CRITICAL" "out$i.txt"; then
    echo "FAIL: pipeline $i printed:"; grep -E "^(ERROR|WARNING)|CRITICAL" "out$i.txt" | head -3; fail=1; continue
  fi
  grep -q "Got EOS" "out$i.txt" || { echo "FAIL: pipeline $i did not reach EOS"; fail=1; continue; }
  case $run in
    *"gst-launch-1.0 -m"*)
      c=$(grep -c "from element \"att\" (element): avattention" "out$i.txt")
      [ "$c" -gt 0 ] || { echo "FAIL: pipeline $i posted no avattention message"; fail=1; continue; }
      echo "ok: pipeline $i ($c avattention messages)" ;;
    *) echo "ok: pipeline $i" ;;
  esac
done < pipelines.txt
for f in features.npz mel.npy; do
  [ -s "$f" ] || { echo "FAIL: the README pipeline writing $f wrote nothing"; fail=1; }
done
[ $fail -eq 0 ] && echo "readme: $i pipelines ran"
exit $fail
