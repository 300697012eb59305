#!/usr/bin/env bash
# How fast `zpool trim` gives freed space back, and what autotrim costs
# the writes, in one run. A raidz2 pool over six sparse 2 GiB files, FILL
# (default 1G) of incompressible data written through the mount and
# deleted, the frees synced past their deferral; then
#   trim:      zpool trim -w: seconds, and the bytes the six files hold
#              before and after (du), so the rate is bytes given back per
#              second;
#   nbd:       the same over six NBD exports of such files (nbdkit's file
#              plugin on Unix sockets: each discard is an NBD TRIM);
#   autotrim:  FILL written, deleted and synced with autotrim=off, then
#              with autotrim=on (a fresh pool each): seconds per write
#              and delete cycle, and the bytes left in the files once
#              autotrim's pass ran.
#
#   tests/perf/trim-bench.sh    (needs root and /dev/fuse; UZFS_BIN: one
#                                directory holding zpool, default the build tree's)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /var/tmp/uzfs-trimbench.XXXXXX)
export UZFS_RUNDIR=$work/run UZFS_AUTOMOUNT=1
zp=${UZFS_BIN:-$here/build/cmd/zpool}/zpool
mnt=$work/mnt
servers=()
cleanup() {
  "$zp" destroy -f trimbench 2>/dev/null || true
  for p in "${servers[@]}"; do { kill -9 "$p" && wait "$p"; } 2>/dev/null || true; done
  [ -f "$UZFS_RUNDIR/uzfsd.pid" ] && kill "$(cat "$UZFS_RUNDIR/uzfsd.pid")" 2>/dev/null || true
  sleep 1
  case $work in /var/tmp/uzfs-trimbench.*) rm -rf "$work" ;; esac
}
trap cleanup EXIT
# shellcheck source=tests/perf/bench-lib.sh
. "$here/tests/perf/bench-lib.sh"
fill_mib=$(( $(numfmt --from=iec "${FILL:-1G}") >> 20 ))

# new_pool KIND [props...]: a fresh raidz2 over six files (KIND files) or
# six NBD exports of files (KIND nbd); sets `files`.
new_pool() {
  local kind=$1 devs=()
  shift
  if "$zp" list trimbench >/dev/null 2>&1; then "$zp" destroy -f trimbench; fi
  for p in "${servers[@]}"; do { kill -9 "$p" && wait "$p"; } 2>/dev/null || true; done
  servers=()
  rm -rf "$work/devs"
  mkdir -p "$work/devs" "$mnt"
  files=()
  for i in 0 1 2 3 4 5; do
    truncate -s 2G "$work/devs/d$i"
    files+=("$work/devs/d$i")
    if [ "$kind" = nbd ]; then
      nbdkit --foreground -U "$work/devs/s$i" file "$work/devs/d$i" >> "$work/nbdkit.log" 2>&1 &
      servers+=($!)
      devs+=("nbd+unix:///?socket=$work/devs/s$i")
    else
      devs+=("$work/devs/d$i")
    fi
  done
  if [ "$kind" = nbd ]; then
    for i in 0 1 2 3 4 5; do
      for _ in $(seq 100); do [ -S "$work/devs/s$i" ] && break; sleep 0.05; done
    done
  fi
  "$zp" create -f "$@" -m "$mnt" trimbench raidz2 "${devs[@]}"
  for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
}
held() { du -scm "${files[@]}" | tail -1 | cut -f1; }  # MiB the files hold
settle() { for _ in 1 2 3 4; do "$zp" sync trimbench; done; }

trim_row() {  # KIND -> "seconds MiB-before MiB-after"
  new_pool "$1"
  fill "$mnt" "$fill_mib"
  "$zp" sync trimbench
  rm -f "$mnt"/fill*
  settle
  local before a b
  before=$(held)
  a=$(now)
  "$zp" trim -w trimbench
  b=$(now)
  echo "$(secs $((b - a))) $before $(held)"
}

autotrim_row() {  # on|off -> "seconds MiB-after"
  new_pool files -o autotrim="$1"
  local a b
  a=$(now)
  fill "$mnt" "$fill_mib"
  "$zp" sync trimbench
  rm -f "$mnt"/fill*
  settle
  b=$(now)
  sleep 2  # autotrim's pass (once a second)
  echo "$(secs $((b - a))) $(held)"
}

# Each row in this shell (not a subshell), so new_pool stops the servers
# the last one started.
trim_row files > "$work/row"; read -r ft fb fa < "$work/row"
trim_row nbd > "$work/row"; read -r nt nb na < "$work/row"
autotrim_row off > "$work/row"; read -r off_s off_held < "$work/row"
autotrim_row on > "$work/row"; read -r on_s on_held < "$work/row"
rate() { awk -v mib="$(( $2 - $3 ))" -v s="$1" 'BEGIN { printf "%.0f", (s > 0 ? mib / s : 0) }'; }
printf '| leaves | zpool trim -w, s | held before, MiB | held after, MiB | given back, MiB/s |\n|---|---:|---:|---:|---:|\n'
printf '| files | %s | %s | %s | %s |\n' "$ft" "$fb" "$fa" "$(rate "$ft" "$fb" "$fa")"
printf '| nbd | %s | %s | %s | %s |\n' "$nt" "$nb" "$na" "$(rate "$nt" "$nb" "$na")"
printf '\n| autotrim | write %s MiB, delete, sync: s | held after, MiB |\n|---|---:|---:|\n' "$fill_mib"
printf '| off | %s | %s |\n' "$off_s" "$off_held"
printf '| on | %s | %s |\n' "$on_s" "$on_held"
