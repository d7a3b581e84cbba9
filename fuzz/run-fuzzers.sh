#!/usr/bin/env bash
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Builds the libFuzzer harnesses of core/ (fuzz_safetensors, fuzz_weights)
# with clang and ASan+UBSan into build-fuzz/, runs every file of
# fuzz/regressions/ once through each of them, then fuzzes each target for
# SECONDS_PER_TARGET seconds (default 60) on a copy of fuzz/corpus/.
#
#   fuzz/run-fuzzers.sh [SECONDS_PER_TARGET]
#
# Environment (all optional):
#   FUZZ_TARGETS  targets to run, space-separated (default: all)
#   FUZZ_JOBS     N > 1 runs N fuzzing jobs per target in parallel
#                 (libFuzzer -jobs=N -workers=N); each job runs the full time
#   FUZZ_ARGS     more libFuzzer flags, e.g. "-use_value_profile=1"
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
all_targets=(fuzz_safetensors fuzz_weights)
read -r -a targets <<<"${FUZZ_TARGETS:-${all_targets[*]}}"
jobs=${FUZZ_JOBS:-1}
if ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then
  echo "run-fuzzers: FUZZ_JOBS must be a positive integer" >&2
  exit 2
fi
read -r -a extra_args <<<"${FUZZ_ARGS:-}"

out=$src/build-fuzz
core_sources=(core/avf_error.c core/safetensors.c core/weights.c core/prng.c)
cflags=(-std=c11 -D_POSIX_C_SOURCE=200809L -g -O1
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
  -fno-omit-frame-pointer -Wall -Wextra -Icore)
common_flags=(-rss_limit_mb=2048 -timeout=10)

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
for t in "${targets[@]}"; do
  if [ ! -f "fuzz/$t.c" ]; then
    echo "run-fuzzers: unknown target $t (known: ${all_targets[*]})" >&2
    finish 0 "${#targets[@]}"
  fi
  echo "=== build $t ==="
  if ! clang "${cflags[@]}" "fuzz/$t.c" "${core_sources[@]}" -lm \
      -o "$out/$t" >"$out/logs/$t.build.log" 2>&1; then
    cat "$out/logs/$t.build.log"
    echo "run-fuzzers: building $t failed"
    finish 0 "${#targets[@]}"
  fi
  # warnings are shown, not fatal
  [ -s "$out/logs/$t.build.log" ] && cat "$out/logs/$t.build.log"
done

# --- regressions: every file, once, through every target ------------------
regressions=()
if [ -d fuzz/regressions ]; then
  while IFS= read -r -d '' f; do
    regressions+=("$f")
  done < <(find fuzz/regressions -type f ! -name '*.md' ! -name '.*' -print0 | sort -z)
fi

passed=0
failed=0
for t in "${targets[@]}"; do
  art=$out/artifacts/$t
  mkdir -p "$art"

  if [ ${#regressions[@]} -gt 0 ]; then
    log=$out/logs/$t.regressions.log
    echo "=== $t: ${#regressions[@]} regression input(s) ==="
    if ! "$out/$t" "${common_flags[@]}" -artifact_prefix="$art/regression-" \
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
  for d in fuzz/corpus/safetensors fuzz/corpus/weights; do
    for f in "$d"/*; do
      [ -f "$f" ] && cp "$f" "$work/seed-$(basename "$d")-$(basename "$f")"
    done
  done
  log=$out/logs/$t.log
  before=$(ls "$art")
  job_args=()
  if [ "$jobs" -gt 1 ]; then
    job_args=(-jobs="$jobs" -workers="$jobs")
    rm -f "$out/logs/$t"/fuzz-*.log
  fi
  echo "=== $t: fuzzing for $secs s (jobs: $jobs) ==="
  (cd "$out/logs/$t" && exec "$out/$t" "${common_flags[@]}" \
      -max_total_time="$secs" -dict="$src/fuzz/safetensors.dict" \
      -artifact_prefix="$art/" -print_final_stats=1 \
      "${job_args[@]}" "${extra_args[@]}" "$work") >"$log" 2>&1
  rc=$?

  # with -jobs every job writes its own fuzz-N.log
  logs=("$log")
  [ "$jobs" -gt 1 ] && logs+=("$out/logs/$t"/fuzz-*.log)
  execs=$(cat "${logs[@]}" 2>/dev/null |
      sed -n 's/^stat::number_of_executed_units: *//p' |
      awk '{ s += $1 } END { print s + 0 }')
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
