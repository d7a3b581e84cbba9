#!/usr/bin/env bash
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Builds the libFuzzer harnesses with clang and ASan+UBSan into build-fuzz/:
# fuzz_safetensors and fuzz_weights (the weights-file reader of core/) and
# fuzz_elements (the five elements, each in an appsrc ! element ! fakesink
# pipeline, see fuzz/fuzz_elements.c); runs the regression inputs once
# through their targets (fuzz/regressions/* through the two weights-file
# targets, fuzz/regressions/<target>/* through that target), then fuzzes
# each target for SECONDS_PER_TARGET seconds (default 60) on a copy of its
# seed corpus (fuzz/corpus/safetensors and weights, or
# fuzz/corpus/<target>).
#
#   fuzz/run-fuzzers.sh [SECONDS_PER_TARGET]
#
# Environment (all optional):
#   FUZZ_TARGETS  targets to run, space-separated (default: all)
#   FUZZ_JOBS     N > 1 runs N fuzzing jobs per target in parallel
#                 (libFuzzer -jobs=N -workers=N); each job runs the full time
#   FUZZ_ARGS     more libFuzzer flags, e.g. "-use_value_profile=1"
#   FUZZ_ELEMENTS_EXPLORE=1  builds fuzz_elements so that it steps around the
#                 bugs it already found, to look for others (local runs only:
#                 their regression inputs then pass)
#
# Nothing is written to fuzz/: the working corpus, logs and crash files are
# under build-fuzz/ (corpus/<target>/, logs/<target>.log, artifacts/<target>/).
# The exit status is non-zero when a regression input fails or a target
# finds a crash, leak, timeout or out-of-memory input; the path of the input
# is printed.  The last line reads "fuzz: N passed, N failed".
# docs/fuzzing.md tells more.
set -uo pipefail
export LC_ALL=C

src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src"

secs=${1:-60}
if ! [[ "$secs" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: fuzz/run-fuzzers.sh [SECONDS_PER_TARGET]   (a positive integer, default 60)" >&2
  exit 2
fi
all_targets=(fuzz_safetensors fuzz_weights fuzz_elements)
read -r -a targets <<<"${FUZZ_TARGETS:-${all_targets[*]}}"
jobs=${FUZZ_JOBS:-1}
if ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then
  echo "run-fuzzers: FUZZ_JOBS must be a positive integer" >&2
  exit 2
fi
read -r -a extra_args <<<"${FUZZ_ARGS:-}"

out=$src/build-fuzz
core_sources=(core/avf_error.c core/safetensors.c core/json_lex.c core/weights.c core/prng.c)
cflags=(-std=c11 -D_POSIX_C_SOURCE=200809L -g -O1
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
  -fno-omit-frame-pointer -Wall -Wextra -Icore)
common_flags=(-rss_limit_mb=2048 -timeout=10)
# fuzz_elements: GStreamer and the libraries core/ uses
element_pkgs=(gstreamer-1.0 gstreamer-base-1.0 gstreamer-audio-1.0
  gstreamer-video-1.0 gstreamer-app-1.0 fftw3f openblas zlib)
# GLib's slice allocator would hide GStreamer objects from ASan; one
# OpenBLAS thread keeps the runs alike (both are read when the libraries
# load, so they are set here and not in the harness)
export G_SLICE=always-malloc OPENBLAS_NUM_THREADS=1

# The seed folders of fuzz/corpus/ a target starts from, and its dictionary
seed_dirs () {
  case $1 in
    fuzz_elements) echo fuzz/corpus/fuzz_elements ;;
    *) echo fuzz/corpus/safetensors fuzz/corpus/weights ;;
  esac
}
# fuzz_elements runs every regression input 20 times: the elements run in
# their own streaming threads, and an input that shows a race (such as
# fuzz/regressions/fuzz_elements/attention-running-time-after-flushing-seek.bin,
# about one run in three) must still fail the replay.
replay_flags () {
  case $1 in
    fuzz_elements) echo "-runs=20" ;;
  esac
}
dict_flags () {
  case $1 in
    fuzz_elements) ;;  # a binary format read position by position: none
    *) echo "-dict=$src/fuzz/safetensors.dict" ;;
  esac
}

# The last line, then the exit status.
finish () {
  echo "fuzz: $1 passed, $2 failed"
  [ "$2" -eq 0 ]
  exit
}

# Prints the sanitizer or libFuzzer report of a log (at most 80 lines).
show_report () {
  awk '/^fuzz_[a-z]+: |==[0-9]+==ERROR|runtime error:|ERROR: libFuzzer|deadly signal/ { on = 1 }
       on && n < 80 { print "    " $0; n++ }' "$1"
}

# --- toolchain ------------------------------------------------------------
# clang, its fuzzer/sanitizer runtimes and llvm-symbolizer (stack traces).
if ! tools/install-deps clang libclang-rt-14-dev llvm-14; then
  echo "run-fuzzers: installing clang failed"
  finish 0 "${#targets[@]}"
fi
for sym in /usr/bin/llvm-symbolizer-14 /usr/bin/llvm-symbolizer; do
  if [ -x "$sym" ]; then
    export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$sym}
    break
  fi
done
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

# --- build ----------------------------------------------------------------
mkdir -p "$out/logs"

# fuzz_elements compiles the plugin in: the element sources linked with the
# element helpers as a static library (as meson builds them), the metadata,
# all of core/ and plugin/plugin.c (its plugin registered statically), with
# the config.h that meson would write.
build_elements () {
  local version
  version=$(sed -n "s/^  version : '\([^']*\)',\$/\1/p" meson.build | head -n 1)
  local model
  model=$(sed -n "s/^model_name = '\([^']*\)'\$/\1/p" meson.build | head -n 1)
  {
    echo "/* written by fuzz/run-fuzzers.sh, as meson.build writes it */"
    for k in PACKAGE PACKAGE_NAME PACKAGE_ORIGIN GST_PACKAGE_NAME \
        GST_PACKAGE_ORIGIN; do
      echo "#define $k \"avattention\""
    done
    echo "#define PACKAGE_VERSION \"$version\""
    echo "#define VERSION \"$version\""
    # the plugin is registered statically (no plugin file): the elements
    # look for the shipped model where an installed one would, here the
    # source tree's models/
    echo "#define AVF_MODEL_NAME \"$model\""
    echo "#define AVF_MODEL_INSTALL_DIR \"$src/models\""
    echo "#define AVF_PLUGIN_BUILD_DIR \"$out\""
  } >"$out/config.h"
  local defs=(-DHAVE_CONFIG_H -DGST_PLUGIN_BUILD_STATIC
    -DFUZZ_SRC_DIR="\"$src\"" -DFUZZ_BUILD_DIR="\"$out\""
    -DFUZZ_GST_PLUGINS_DIR="\"$(pkg-config --variable=pluginsdir gstreamer-1.0)\"")
  if [ "${FUZZ_ELEMENTS_EXPLORE:-}" = 1 ]; then
    echo "(exploration build: the bugs already found are stepped around)"
    defs+=(-DFUZZ_EXPLORE)
  fi
  # the GType of GstAvAttentionModule, as plugin/meson.build's
  # gnome.mkenums_simple writes it
  glib-mkenums --fhead '#include <glib-object.h>\nG_BEGIN_DECLS\n' \
    --eprod 'GType @enum_name@_get_type (void);\n#define @ENUMPREFIX@_TYPE_@ENUMSHORT@ (@enum_name@_get_type ())\n' \
    --ftail 'G_END_DECLS\n' plugin/gstavattentionmeta.h \
    >"$out/gstavattention-enumtypes.h" || return 1
  glib-mkenums --fhead '#include "gstavattentionmeta.h"\n#include "gstavattention-enumtypes.h"\n' \
    --vhead 'GType\n@enum_name@_get_type (void)\n{\n  static gsize id = 0;\n  static const G@Type@Value values[] = {' \
    --vprod '    { @VALUENAME@, "@VALUENAME@", "@valuenick@" },' \
    --vtail '    { 0, NULL, NULL }\n  };\n  if (g_once_init_enter (&id))\n    g_once_init_leave (&id, g_@type@_register_static ("@EnumName@", values));\n  return (GType) id;\n}\n' \
    plugin/gstavattentionmeta.h >"$out/gstavattention-enumtypes.c" || return 1
  # the GTypes of the elements' property enums, as elements/meson.build's
  # gnome.mkenums writes them (same templates)
  glib-mkenums --template elements/gstavenumtypes.h.template \
    elements/gstavenums.h >"$out/gstavenumtypes.h" || return 1
  glib-mkenums --template elements/gstavenumtypes.c.template \
    elements/gstavenums.h >"$out/gstavenumtypes.c" || return 1
  # the helpers of elements/meson.build, as libgstavhelpers.a
  local helpers=(elements/gstavtensor.c elements/gstavinputs.c
    elements/gstavweights.c elements/gstavproperty.c elements/gstavhistory.c
    elements/npy.c)
  local f objs=()
  rm -rf "$out/helpers"
  mkdir -p "$out/helpers"
  for f in "${helpers[@]}"; do
    objs+=("$out/helpers/$(basename "$f" .c).o")
    # shellcheck disable=SC2046  # pkg-config prints several flags
    clang "${cflags[@]}" -Wno-unused-parameter -Ielements -Iplugin \
      -I"$out" "${defs[@]}" $(pkg-config --cflags "${element_pkgs[@]}") \
      -c "$f" -o "${objs[-1]}" || return 1
  done
  rm -f "$out/libgstavhelpers.a"
  ar rcs "$out/libgstavhelpers.a" "${objs[@]}" || return 1
  # shellcheck disable=SC2046  # pkg-config prints several flags
  clang "${cflags[@]}" -Wno-unused-parameter -Ielements -Iplugin -I"$out" \
    "${defs[@]}" $(pkg-config --cflags "${element_pkgs[@]}") \
    fuzz/fuzz_elements.c elements/gstav{spectrogram,patchembed,attention,attentionpool,attentionaudio,attentionoutput,attentioncaps,attentionqos,attentionmodel,tensorsink,tensorsinkmaps,attnoverlay}.c \
    plugin/*.c "$out/gstavattention-enumtypes.c" "$out/gstavenumtypes.c" \
    core/*.c \
    "$out/libgstavhelpers.a" \
    $(pkg-config --libs "${element_pkgs[@]}") -lm -o "$out/fuzz_elements"
}

for t in "${targets[@]}"; do
  if [ ! -f "fuzz/$t.c" ]; then
    echo "run-fuzzers: unknown target $t (known: ${all_targets[*]})" >&2
    finish 0 "${#targets[@]}"
  fi
  echo "=== build $t ==="
  if [ "$t" = fuzz_elements ]; then
    build_elements >"$out/logs/$t.build.log" 2>&1
  else
    clang "${cflags[@]}" "fuzz/$t.c" "${core_sources[@]}" -lm \
      -o "$out/$t" >"$out/logs/$t.build.log" 2>&1
  fi
  if [ $? -ne 0 ]; then
    cat "$out/logs/$t.build.log"
    echo "run-fuzzers: building $t failed"
    finish 0 "${#targets[@]}"
  fi
  # warnings are shown, not fatal
  [ -s "$out/logs/$t.build.log" ] && cat "$out/logs/$t.build.log"
done

# --- regressions ------------------------------------------------------------
# The files directly in fuzz/regressions/ are weights files: they go through
# both weights-file targets.  fuzz/regressions/<target>/ holds the inputs of
# one target only.
regressions_of () {
  local dir=fuzz/regressions/$1 depth=()
  case $1 in
    fuzz_safetensors|fuzz_weights) dir=fuzz/regressions; depth=(-maxdepth 1) ;;
  esac
  [ -d "$dir" ] || return 0
  find "$dir" "${depth[@]}" -type f ! -name '*.md' ! -name '.*' -print0 | sort -z
}

passed=0
failed=0
for t in "${targets[@]}"; do
  art=$out/artifacts/$t
  mkdir -p "$art"

  regressions=()
  while IFS= read -r -d '' f; do
    regressions+=("$f")
  done < <(regressions_of "$t")
  if [ ${#regressions[@]} -gt 0 ]; then
    log=$out/logs/$t.regressions.log
    echo "=== $t: ${#regressions[@]} regression input(s) ==="
    # FUZZ_ELEMENTS_LEAK_CHECK: fuzz_elements checks for leaks after every
    # input (libFuzzer alone does not when it runs single files)
    read -r -a replay <<<"$(replay_flags "$t")"
    if ! FUZZ_ELEMENTS_LEAK_CHECK=1 "$out/$t" "${common_flags[@]}" \
        "${replay[@]}" -artifact_prefix="$art/regression-" \
        "${regressions[@]}" >"$log" 2>&1; then
      bad=$(grep '^Running: ' "$log" | tail -n 1 | sed 's/^Running: //')
      show_report "$log"
      echo "fuzz: $t: FAIL on the regression input ${bad:-?} (log $log)"
      failed=$((failed + 1))
      continue
    fi
  fi

  # --- fuzzing on a copy of the seed corpus -------------------------------
  work=$out/corpus/$t
  mkdir -p "$work" "$out/logs/$t"
  # fuzz_elements' temporary folders (a crashed run leaves its own behind)
  rm -rf "$out/fuzz_elements-tmp"
  for d in $(seed_dirs "$t"); do
    for f in "$d"/*; do
      [ -f "$f" ] && cp "$f" "$work/seed-$(basename "$d")-$(basename "$f")"
    done
  done
  read -r -a dict <<<"$(dict_flags "$t")"
  log=$out/logs/$t.log
  before=$(ls "$art")
  job_args=()
  if [ "$jobs" -gt 1 ]; then
    job_args=(-jobs="$jobs" -workers="$jobs")
    rm -f "$out/logs/$t"/fuzz-*.log
  fi
  echo "=== $t: fuzzing for $secs s (jobs: $jobs) ==="
  (cd "$out/logs/$t" && exec "$out/$t" "${common_flags[@]}" \
      -max_total_time="$secs" "${dict[@]}" \
      -artifact_prefix="$art/" -print_final_stats=1 \
      "${job_args[@]}" "${extra_args[@]}" "$work") >"$log" 2>&1
  rc=$?

  # with -jobs every job writes its own fuzz-N.log
  logs=("$log")
  [ "$jobs" -gt 1 ] && logs+=("$out/logs/$t"/fuzz-*.log)
  execs=$(cat "${logs[@]}" 2>/dev/null |
      sed -n 's/^stat::number_of_executed_units: *//p' |
      awk '{ s += $1 } END { print s + 0 }')
  if [ "$execs" -eq 0 ]; then
    # -fork=N prints no final stats: its last progress line counts the runs
    execs=$(sed -n 's/^#\([0-9][0-9]*\): cov: .*/\1/p' "$log" | tail -n 1)
    execs=${execs:-0}
  fi
  new=$(comm -13 <(echo "$before") <(ls "$art") |
      grep -E '^(crash|leak|timeout|oom)-' || true)
  inputs=$(find "$work" -type f | wc -l)

  if [ $rc -ne 0 ] || [ -n "$new" ]; then
    for l in "${logs[@]}"; do
      show_report "$l"
    done
    if [ -n "$new" ]; then
      while IFS= read -r f; do
        echo "fuzz: $t: FAIL, found $art/$f"
      done <<<"$new"
    else
      echo "fuzz: $t: FAIL (libFuzzer exit status $rc, no input saved; see $log)"
    fi
    echo "fuzz: $t: $execs executions; log $log"
    failed=$((failed + 1))
  else
    echo "fuzz: $t: ok, $execs executions in $secs s, corpus $inputs inputs"
    passed=$((passed + 1))
  fi
done

finish "$passed" "$failed"
