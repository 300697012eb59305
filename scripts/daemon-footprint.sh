#!/usr/bin/env bash
# uzfsd's memory (RSS) and thread count with N small imported pools, idle:
# each pool is one 256 MiB sparse file with its root file system mounted
# and 16 MiB written to it; every pool is then exported and imported again
# (nothing cached from the writes), the daemon is left alone for IDLE
# seconds (default 8: longer than the two seconds after which idle worker
# threads leave), and /proc/PID/status gives VmRSS and Threads (kernel
# io_uring workers included). Prints one line per pool count.
#
#   scripts/daemon-footprint.sh [COUNTS...]   (default: 1 5)
#
# Needs root and /dev/fuse. UZFS_BIN: the build directory (default build).
# SMAPS_OUT=PREFIX keeps /proc/PID/smaps at each count as PREFIX.N (which
# mappings hold the memory).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${UZFS_BIN:-$here/build}/cmd
idle=${IDLE:-8}
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1 5)
work=$(mktemp -d /var/tmp/uzfs-footprint.XXXXXX)
export UZFS_RUNDIR=$work/run UZFS_AUTOMOUNT=1
pools=()
cleanup() {
  for p in "${pools[@]}"; do "$bin/zpool/zpool" destroy -f "$p" >/dev/null 2>&1 || true; done
  if [ -f "$UZFS_RUNDIR/uzfsd.pid" ]; then kill "$(cat "$UZFS_RUNDIR/uzfsd.pid")" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
field() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$2/status"; }
have=0
for n in "${counts[@]}"; do
  while [ "$have" -lt "$n" ]; do
    p=fp$have
    truncate -s 256M "$work/$p.dev"
    "$bin/zpool/zpool" create -m "$work/mnt/$p" "$p" "$work/$p.dev"
    pools+=("$p")
    dd if=/dev/urandom of="$work/mnt/$p/data" bs=1M count=16 status=none
    have=$((have + 1))
  done
  for p in "${pools[@]}"; do
    "$bin/zpool/zpool" export "$p"
    "$bin/zpool/zpool" import -d "$work" "$p"
  done
  sleep "$idle"
  pid=$(cat "$UZFS_RUNDIR/uzfsd.pid")
  [ -z "${SMAPS_OUT:-}" ] || cp "/proc/$pid/smaps" "$SMAPS_OUT.$n"
  echo "pools $n: RSS $(( $(field VmRSS "$pid") / 1024 )) MiB, $(field Threads "$pid") threads"
done
