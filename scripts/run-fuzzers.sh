#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD_DIR for SECONDS each, starting from its
# seed corpus in tests/fuzz/corpus/<name>/ (new inputs go to a scratch copy,
# so the committed corpus only changes by hand), JOBS targets at a time
# (default: the number of CPUs). Fails when any target finds a crash, after
# printing its report.
#
#   scripts/run-fuzzers.sh BUILD_DIR [SECONDS] [JOBS]
set -euo pipefail
build=${1:?build dir}; secs=${2:-20}; jobs=${3:-$(nproc)}
src=$(cd "$(dirname "$0")/.." && pwd)
shopt -s nullglob
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# One target: its corpus copy and log under the scratch directory; the exit
# status is libFuzzer's.
fuzz_one() {  # binary
  local bin=$1 name corpus work
  name=$(basename "$bin"); corpus="$src/tests/fuzz/corpus/${name#fuzz_}"
  work="$scratch/$name"; mkdir -p "$work/corpus"
  cp -r "$corpus"/. "$work/corpus"/ 2>/dev/null || true
  "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=262144 \
    -artifact_prefix="$build/$name-" "$work/corpus" >"$work/log" 2>&1
}

# What a target printed: the last line when it ran clean; the sanitizer's or
# libFuzzer's report, without the progress lines, when it did not.
report() {  # name status
  local log="$scratch/$1/log"
  if [ "$2" -eq 0 ]; then
    echo "fuzz: $1: $(tail -1 "$log")"
  else
    echo "fuzz: $1 FAILED:"
    grep -v -E '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse|INITED)|^INFO:' "$log" | tail -60
  fi
}

bins=()
for bin in "$build"/tests/fuzz_*; do [ -x "$bin" ] && bins+=("$bin"); done
[ ${#bins[@]} -gt 0 ] || { echo "fuzz: no fuzz targets were built"; exit 1; }
echo "fuzz: ${#bins[@]} targets, ${secs}s each, $jobs at a time"

declare -A running=()  # pid -> target name
failed=0
reap() {  # waits for one target to end and reports it
  local pid status=0
  wait -n -p pid "${!running[@]}" || status=$?
  report "${running[$pid]}" "$status"
  [ "$status" -eq 0 ] || failed=$((failed + 1))
  unset "running[$pid]"
}
for bin in "${bins[@]}"; do
  while [ ${#running[@]} -ge "$jobs" ]; do reap; done
  fuzz_one "$bin" &
  running[$!]=$(basename "$bin")
done
while [ ${#running[@]} -gt 0 ]; do reap; done
[ "$failed" -eq 0 ] || { echo "fuzz: $failed of ${#bins[@]} targets failed"; exit 1; }
echo "fuzz: ${#bins[@]} targets ran clean"
