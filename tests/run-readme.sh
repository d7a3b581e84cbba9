#!/usr/bin/env bash
# avattention — attention for media pipelines
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Runs every gst-launch-1.0 pipeline of README.md, so the documentation
# cannot rot: each must reach EOS with no error or warning.  A window
# (autovideosink) becomes a fakesink.  Also runs the README's "meson devenv"
# lines (the Python example) in a folder where build-ci is BUILD_DIR: each
# must print its summary with no warning (skipped where the build has no
# typelib or /usr/bin/python3 no gi; python3 is /usr/bin/python3 there, as
# on a stock Debian).   run-readme.sh README.md [BUILD_DIR]
set -u
readme=$1
build=${2:-}
src=$(cd "$(dirname "$readme")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$src/tests" "$work/tests"
ln -s "$src/examples" "$work/examples"
ln -s "$src/models" "$work/models"
if [ -n "$build" ]; then
  ln -s "$(cd "$build" && pwd)" "$work/build-ci"
fi
mkdir "$work/bin"
[ -x /usr/bin/python3 ] && ln -s /usr/bin/python3 "$work/bin/python3"
export PATH="$work/bin:$PATH"
cd "$work"

# collect the pipelines: lines from a ```sh block that start a gst-launch
# or meson devenv command, joined over trailing backslashes
awk '
  /^```sh/ { inblock = 1; next }
  /^```/   { inblock = 0; next }
  inblock {
    line = $0
    if (cmd != "" || line ~ /^(gst-launch-1.0|meson devenv) /) {
      cont = sub(/\\[ \t]*$/, "", line)
      cmd = cmd line
      if (!cont) { print cmd; cmd = "" }
    }
  }' "$src/$(basename "$readme")" > pipelines.txt

n=$(grep -c . pipelines.txt)
[ "$n" -ge 4 ] || { echo "FAIL: found only $n pipelines in $readme"; exit 1; }
fail=0
i=0
skipped=0
while IFS= read -r cmd; do
  i=$((i + 1))
  run=${cmd//autovideosink/fakesink}
  echo "--- pipeline $i: ${run:0:110}..."
  case $run in
    "meson devenv "*)
      if [ ! -f build-ci/meta/GstAvAttention-1.0.typelib ] \
          || ! python3 -c 'import gi, numpy' 2>/dev/null; then
        echo "skip: pipeline $i (no build dir given, no typelib in it, or no gi/numpy for python3)"
        skipped=$((skipped + 1)); continue
      fi
      if ! timeout 300 bash -c "$run" >"out$i.txt" 2>&1; then
        echo "FAIL: pipeline $i exited with an error:"; tail -5 "out$i.txt"; fail=1; continue
      fi
      if grep -qiE "warning|critical|traceback" "out$i.txt"; then
        echo "FAIL: pipeline $i printed:"; grep -iE "warning|critical|traceback" "out$i.txt" | head -3; fail=1; continue
      fi
      grep -q " video frames, " "out$i.txt" || { echo "FAIL: pipeline $i printed no summary"; fail=1; continue; }
      echo "ok: pipeline $i ($(grep -c 'sound at patch' "out$i.txt") frames with a patch)"
      continue ;;
  esac
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
[ $fail -eq 0 ] && echo "readme: $((i - skipped)) pipelines ran, $skipped skipped"
exit $fail
