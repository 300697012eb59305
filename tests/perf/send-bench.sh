#!/usr/bin/env bash
# What `zfs send` costs against reading the same files, on one sparse
# 16 GiB file (pool version VERSION, default 5000), the file system
# mounted, its data SIZE MiB (default 2048) of incompressible files:
#   read:  the files read through the mount with cat, cold (the pool
#          exported and imported first, so nothing is cached);
#   send:  a full `zfs send` of its snapshot to /dev/null, cold the same
#          way (bar: at least 80% of the read's speed);
#   pipe:  the same through a pipe into cat, as `zfs send | ...` runs.
#
#   tests/perf/send-bench.sh   (needs root and /dev/fuse; UZFS_BIN: one
#                               directory holding zpool and zfs, default the build tree's)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /var/tmp/uzfs-sendbench.XXXXXX)
export UZFS_RUNDIR=$work/run UZFS_AUTOMOUNT=1
mnt=$work/mnt
mkdir -p "$mnt" "$work/devs"
truncate -s 16G "$work/devs/d0"
zp=${UZFS_BIN:-$here/build/cmd/zpool}/zpool
zfsb=${UZFS_BIN:-$here/build/cmd/zfs}/zfs
cleanup() {
  "$zp" destroy -f sendbench 2>/dev/null || true
  [ -f "$UZFS_RUNDIR/uzfsd.pid" ] && kill "$(cat "$UZFS_RUNDIR/uzfsd.pid")" 2>/dev/null || true
  sleep 1
  rm -rf "$work"
}
trap cleanup EXIT
size=${SIZE:-2048}
"$zp" create -f -o version="${VERSION:-5000}" -m "$mnt" sendbench "$work/devs/d0"
for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
# shellcheck source=tests/perf/bench-lib.sh
source "$here/tests/perf/bench-lib.sh"  # now, secs, fill, $work/chunk
"$zfsb" create sendbench/data
fill "$mnt/data" "$size"
"$zfsb" snapshot sendbench/data@full
cold() {
  "$zp" export sendbench
  "$zp" import -d "$work/devs" sendbench
  for _ in $(seq 1 100); do mountpoint -q "$mnt/data" && break; sleep 0.1; done
}
rate() { awk -v n="$1" -v s="$size" 'BEGIN { printf "%.0f MiB/s", s / (n / 1e9) }'; }

cold
t0=$(now); cat "$mnt"/data/fill* > /dev/null; t1=$(now)
read_ns=$((t1 - t0))
echo "read:    ${size} MiB through the mount, cold: $(rate "$read_ns")"
cold
t0=$(now); "$zfsb" send sendbench/data@full > /dev/null; t1=$(now)
send_ns=$((t1 - t0))
awk -v r="$read_ns" -v s="$send_ns" -v m="$size" 'BEGIN {
  printf "send:    full stream to /dev/null, cold: %.0f MiB/s (%.0f%% of the read)\n", m / (s / 1e9), 100 * r / s }'
cold
t0=$(now); "$zfsb" send sendbench/data@full | cat > /dev/null; t1=$(now)
echo "pipe:    full stream through a pipe, cold: $(rate $((t1 - t0)))"
