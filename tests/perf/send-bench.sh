#!/usr/bin/env bash
# What `zfs send` costs against reading the same files, on one sparse
# 16 GiB file (pool version VERSION, default 5000), the file system
# mounted, its data SIZE MiB (default 2048) of incompressible files:
#   read:  the files read through the mount with cat, cold (the pool
#          exported and imported first, so nothing is cached);
#   send:  a full `zfs send` of its snapshot to /dev/null, cold the same
#          way (bar: at least 80% of the read's speed);
#   pipe:  the same through a pipe into cat, as `zfs send | ...` runs;
#   incr:  1% of the data rewritten (128 KiB records spread over every
#          file), snapshotted, and `zfs send -i` of that change to
#          /dev/null, cold, against the full send (bar: at most 10% of
#          its time), with the data blocks each read from the disks (ARC misses);
#   recv:  the full stream, saved to a file first, received into a new
#          file system (`zfs receive < file`), against writing the same
#          files through the mount into another new file system, each
#          ending when its data is on disk (bar: at least 70% of the write),
#          and the CPU time each of the daemon's threads used meanwhile.
#
#   tests/perf/send-bench.sh   (needs root and /dev/fuse; UZFS_BIN: one
#                               directory holding zpool and zfs, default the build tree's;
#                               BENCH_DIR: where the device file and the stream go,
#                               default /var/tmp; /dev/shm takes the disk out and
#                               leaves what the daemon's CPU costs)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${BENCH_DIR:-/var/tmp}/uzfs-sendbench.XXXXXX")
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

# 1% of the records, spread evenly: each rewritten in place.
records=$((size * 8))  # 128 KiB records
step=100
for ((r = 0; r < records; r += step)); do
  f=$((r / 512)) off=$((r % 512))
  dd if="$work/chunk" of="$mnt/data/fill$f" bs=128k count=1 skip=$(((r * 7) % 512)) seek="$off" \
     conv=notrunc status=none
done
"$zfsb" snapshot sendbench/data@change
# Data blocks the ARC had to read from the disks (demand and read-ahead).
reads() { "$zp" arcstats | awk '$1 == "demand_data_misses" || $1 == "prefetch_data_misses" { n += $3 } END { print n }'; }
cold
r0=$(reads); t0=$(now); "$zfsb" send sendbench/data@full > /dev/null; t1=$(now); r1=$(reads)
full_ns=$((t1 - t0)) full_reads=$((r1 - r0))
cold
r0=$(reads); t0=$(now); "$zfsb" send -i @full sendbench/data@change > /dev/null; t1=$(now); r1=$(reads)
awk -v f="$full_ns" -v i="$((t1 - t0))" -v fr="$full_reads" -v ir="$((r1 - r0))" -v n=$((records / step)) 'BEGIN {
  printf "incr:    -i of %d rewritten records: %.3f s against %.3f s full (%.1f%%); reads %d against %d\n",
         n, i / 1e9, f / 1e9, 100 * i / f, ir, fr }'

# Receive against write: the same data, each into a new file system and
# on disk at the end (a receive ends with its txg synced; the write with
# sync -f).
"$zfsb" send sendbench/data@full > "$work/full.zs"
"$zfsb" create sendbench/w
t0=$(now); fill "$mnt/w" "$size"; sync -f "$mnt/w/fill0"; t1=$(now)
write_ns=$((t1 - t0))
threads_start "$(cat "$UZFS_RUNDIR/uzfsd.pid")"
t0=$(now); "$zfsb" receive sendbench/r < "$work/full.zs"; t1=$(now)
awk -v w="$write_ns" -v r="$((t1 - t0))" -v m="$size" 'BEGIN {
  printf "recv:    full stream from a file: %.0f MiB/s; writing the files: %.0f MiB/s (%.0f%%)\n",
         m / (r / 1e9), m / (w / 1e9), 100 * w / r }'
echo "recv:    the daemon's threads' CPU time during the receive:"
threads_stop
