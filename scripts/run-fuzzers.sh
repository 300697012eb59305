#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD_DIR for SECONDS each, starting from its
# seed corpus in tests/fuzz/corpus/<name>/ (new inputs go to a scratch copy,
# so the committed corpus only changes by hand). Fails on the first crash.
set -euo pipefail
build=${1:?build dir}; secs=${2:-20}
src=$(cd "$(dirname "$0")/.." && pwd)
shopt -s nullglob
ran=0
for bin in "$build"/tests/fuzz_*; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin"); corpus="$src/tests/fuzz/corpus/${name#fuzz_}"
  work=$(mktemp -d); cp -r "$corpus"/. "$work"/ 2>/dev/null || true
  echo "fuzz: $name for ${secs}s"
  log=$(mktemp)
  if ! "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=262144 \
         -artifact_prefix="$build/$name-" "$work" >"$log" 2>&1; then
    # The report: what the target printed and the sanitizer's or libFuzzer's
    # stack, without the progress lines.
    grep -v -E '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse|INITED)|^INFO:' "$log" | tail -60
    rm -rf "$work" "$log"
    exit 1
  fi
  tail -1 "$log"
  rm -rf "$work" "$log"
  ran=$((ran+1))
done
[ "$ran" -gt 0 ] || { echo "fuzz: no fuzz targets were built"; exit 1; }
echo "fuzz: $ran targets ran clean"
