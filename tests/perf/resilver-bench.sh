#!/usr/bin/env bash
# Resilver speed against the new device's own write speed, in one run: a
# raidz2 pool over six sparse 2 GiB files, FILL (default 4G: the pool half
# full) of incompressible data written through the mount in 128 KiB
# records, exported; one file deleted (the disk died), the pool imported
# DEGRADED and `zpool replace -w` onto a new sparse file; then
#   resilver: the bytes the new device received (its share: what it holds
#             after, as `zpool iostat -v` counts its writes) / wall time of
#             the replace;
#   raw:      the same number of bytes written sequentially to another new
#             file in the same directory (1 MiB O_DIRECT writes), the page
#             cache dropped first.
# Prints both rates and their ratio.
#
# SOURCES=ram puts the six first devices in a tmpfs (/dev/shm) and only the
# new device (and the raw write) on the disk: the surviving disks then
# cost the new one no bandwidth, as separate disks would not, and the
# ratio shows whether uzfs keeps the new device busy. By default every
# file shares one file system, so the resilver's reads of five columns
# compete with its one column of writes.
#
#   tests/perf/resilver-bench.sh    (needs root and /dev/fuse; UZFS_BIN: one
#                                    directory holding zpool and zfs, default the build tree's)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /var/tmp/uzfs-resilverbench.XXXXXX)
src=$work/devs
if [ "${SOURCES:-disk}" = ram ]; then
  src=$(mktemp -d /dev/shm/uzfs-resilverbench.XXXXXX)
fi
export UZFS_RUNDIR=$work/run UZFS_AUTOMOUNT=1
mnt=$work/mnt
mkdir -p "$mnt" "$work/devs"
devs=()
for i in 0 1 2 3 4 5; do truncate -s 2G "$src/d$i"; devs+=("$src/d$i"); done
zp=${UZFS_BIN:-$here/build/cmd/zpool}/zpool
cleanup() {
  "$zp" destroy -f rsbench 2>/dev/null || true
  [ -f "$UZFS_RUNDIR/uzfsd.pid" ] && kill "$(cat "$UZFS_RUNDIR/uzfsd.pid")" 2>/dev/null || true
  sleep 1
  rm -rf "$work"
  if [ "$src" != "$work/devs" ]; then rm -rf "$src"; fi
}
trap cleanup EXIT
fill=${FILL:-4G}
"$zp" create -f -m "$mnt" rsbench raidz2 "${devs[@]}"
for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
head -c 64M /dev/urandom > "$work/chunk"
count=$(( $(numfmt --from=iec "$fill") / (64 << 20) ))
for i in $(seq 1 "$count"); do cp "$work/chunk" "$mnt/f$i"; printf '%s' "$i" | dd of="$mnt/f$i" conv=notrunc status=none; done
rm -f "$work/chunk"
"$zp" export rsbench
rm -f "$src/d3"
truncate -s 2G "$work/devs/n3"
sync
echo 3 > /proc/sys/vm/drop_caches
"$zp" import -d "$src" -d "$work/devs" rsbench
t0=$(date +%s.%N)
"$zp" replace -w rsbench "$src/d3" "$work/devs/n3"
t1=$(date +%s.%N)
# What the new device holds: its allocated share, as the pool's
# allocated bytes over the six columns.
alloc=$("$zp" list -Hp -o allocated rsbench)
share=$(( alloc / 6 ))
"$zp" export rsbench
sync
echo 3 > /proc/sys/vm/drop_caches
mib=$(( share / (1 << 20) + 1 ))
r0=$(date +%s.%N)
dd if=/dev/zero of="$work/devs/raw" bs=1M count="$mib" oflag=direct conv=fdatasync status=none
r1=$(date +%s.%N)
awk -v b="$share" -v s="$(echo "$t1 - $t0" | bc)" -v r="$(echo "$r1 - $r0" | bc)" -v mib="$mib" 'BEGIN {
  rs = b / s / 1048576; raw = mib / r;
  printf "resilver: %.0f MiB onto the new device in %.2f s = %.0f MiB/s\n", b / 1048576, s, rs;
  printf "raw:      %.0f MiB written in %.2f s = %.0f MiB/s\n", mib, r, raw;
  printf "resilver / raw: %.2f\n", rs / raw }'
