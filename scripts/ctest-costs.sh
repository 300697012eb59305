#!/usr/bin/env bash
# ctest's scheduling hint for a build directory that has none yet.
#
#   bash scripts/ctest-costs.sh seed BUILD_DIR    before ctest runs there
#   bash scripts/ctest-costs.sh update BUILD...   rewrite tests/ctest-costs.txt
#
# With -j, ctest starts the tests it knows to be slow first, by the times
# it recorded in BUILD_DIR/Testing/Temporary/CTestCostData.txt; a fresh
# build directory (CI's) has no such file, so ctest starts tests in the
# order they were declared and a test of a minute or two that happens to
# come last runs alone at the end. `seed` copies tests/ctest-costs.txt (the
# tests of 4 s or more, from earlier runs) into a build directory that has
# no file of its own; ctest keeps it up to date from then on. `update`
# rebuilds tests/ctest-costs.txt from the given build directories' files.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
costs="$here/tests/ctest-costs.txt"
case "${1:-}" in
  seed)
    [ $# -eq 2 ] || { echo "usage: $0 seed BUILD_DIR" >&2; exit 2; }
    dir="$2/Testing/Temporary"
    [ -e "$dir/CTestCostData.txt" ] && exit 0
    mkdir -p "$dir"
    cp "$costs" "$dir/CTestCostData.txt"
    ;;
  update)
    shift
    [ $# -ge 1 ] || { echo "usage: $0 update BUILD_DIR..." >&2; exit 2; }
    tmp="$(mktemp)"
    for b in "$@"; do
      f="$b/Testing/Temporary/CTestCostData.txt"
      [ -r "$f" ] || { echo "$0: no cost data in $b" >&2; rm -f "$tmp"; exit 1; }
      # Lines before "---" are "name runs average-seconds".
      awk '/^---/{exit} NF==3 && $3>=4 {print $1, 1, $3}' "$f" >> "$tmp"
    done
    { sort -k3,3 -rn "$tmp" | awk '!seen[$1]++'; echo "---"; } > "$costs"
    rm -f "$tmp"
    echo "$costs: $(($(wc -l < "$costs") - 1)) tests"
    ;;
  *)
    echo "usage: $0 seed BUILD_DIR | update BUILD_DIR..." >&2
    exit 2
    ;;
esac
