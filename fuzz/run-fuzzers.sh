#!/usr/bin/env bash
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Builds the libFuzzer harnesses with clang and ASan+UBSan in the meson
# build dir build-fuzz/ (CC=clang meson setup -Dfuzzing=true
# -Db_sanitize=address,undefined -Db_lundef=false ..., reconfigured when it
# exists; fuzz/meson.build links them from the libraries the plugin is made
# of, so there is no source list here), into build-fuzz/fuzz/:
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
#   FUZZ_ELEMENTS_EXPLORE=1  builds fuzz_elements (-Dfuzz_explore=true) so
#                 that it steps around the bugs it already found, to look for
#                 others (local runs only: their regression inputs then pass)
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
common_flags=(-rss_limit_mb=2048 -timeout=10)
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
# build-fuzz/ is a meson build dir configured with clang, the sanitizers and
# -Dfuzzing=true (fuzz/meson.build: the harnesses link the libraries the
# plugin is made of); an existing one is reconfigured, so the script can run
# again and again.  Only the asked targets are built, into build-fuzz/fuzz/.
mkdir -p "$out/logs"
explore=false
if [ "${FUZZ_ELEMENTS_EXPLORE:-}" = 1 ]; then
  echo "(exploration build: fuzz_elements steps around the bugs already found)"
  explore=true
fi
meson_opts=(-Dfuzzing=true "-Dfuzz_explore=$explore"
  "-Db_sanitize=address,undefined" -Db_lundef=false
  -Dbuildtype=debug -Doptimization=1 -Dintrospection=disabled)
if [ -f "$out/meson-private/coredata.dat" ]; then
  setup=(meson setup --reconfigure "${meson_opts[@]}" "$out")
else
  # what the hand-written build before meson left in build-fuzz/ (its
  # config.h and enum files would sit on the include path); corpus, logs
  # and artifacts stay
  rm -rf "$out/helpers" "$out/libgstavhelpers.a" "$out/config.h" \
    "$out"/gstavattention-enumtypes.[ch] "$out"/gstavenumtypes.[ch] \
    "$out/fuzz_safetensors" "$out/fuzz_weights" "$out/fuzz_elements"
  setup=(meson setup "${meson_opts[@]}" "$out")
fi
ninja_targets=()
for t in "${targets[@]}"; do
  if [ ! -f "fuzz/$t.c" ]; then
    echo "run-fuzzers: unknown target $t (known: ${all_targets[*]})" >&2
    finish 0 "${#targets[@]}"
  fi
  ninja_targets+=("fuzz/$t")
done
echo "=== build ${targets[*]} (meson, $out) ==="
if ! CC=clang "${setup[@]}" >"$out/logs/meson-setup.log" 2>&1; then
  cat "$out/logs/meson-setup.log"
  echo "run-fuzzers: meson setup of $out failed"
  finish 0 "${#targets[@]}"
fi
if ! ninja -C "$out" "${ninja_targets[@]}" >"$out/logs/build.log" 2>&1; then
  grep -v '^\[[0-9]*/[0-9]*\] ' "$out/logs/build.log"
  echo "run-fuzzers: building ${targets[*]} failed (log $out/logs/build.log)"
  finish 0 "${#targets[@]}"
fi
# warnings are shown, not fatal
grep -v '^\[[0-9]*/[0-9]*\] \|^ninja: ' "$out/logs/build.log"

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
    if ! FUZZ_ELEMENTS_LEAK_CHECK=1 "$out/fuzz/$t" "${common_flags[@]}" \
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
  (cd "$out/logs/$t" && exec "$out/fuzz/$t" "${common_flags[@]}" \
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
