#!/usr/bin/env bash
# Runs every bench_* in BUILD_DIR (optionally only those matching a
# --benchmark_filter regex) and keeps JSON results in BUILD_DIR/bench-results/.
set -euo pipefail
build=${1:?build dir}; filter=${2:-}
mkdir -p "$build/bench-results"
for bin in "$build"/tests/bench_*; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  args=(--benchmark_out="$build/bench-results/$name.json" --benchmark_out_format=json)
  [ -n "$filter" ] && args+=(--benchmark_filter="$filter")
  echo "== $name"
  "$bin" "${args[@]}"
done
