#!/usr/bin/env bash
# What snapshots cost as a file system collects many, on one sparse 8 GiB
# file (VERSION, default 5000), the file system mounted:
#   take:    COUNT (default 1000) times a small change through the mount (a
#            4 KiB file written, the previous one removed) and `zfs snapshot`;
#            seconds for the first 100 and the last 100 snapshots and their
#            ratio (bar: last/first <= 1.5);
#   list:    `zfs list -t snapshot -H` of all of them (bar: < 1 s);
#   snapdir: `ls -l` of the mount's .zfs/snapshot holding all of them (each
#            snapshot's tree opened for its root's attributes), then a file
#            read from the oldest;
#   destroy: a snapshot holding 1 MiB of its own, in a file system of
#            100 MiB and of 4 GiB, the median of five (bar: within 1.5x
#            of each other);
#   write:   1 GiB written sequentially into a file system with no snapshot
#            and into one with 100 (bar: within 10%);
#   diff:    `zfs diff` of a snapshot of 10,000 files in 100 directories
#            against the file system after 100 of them changed.
# PARTS (default "take list snapdir destroy write diff") picks some.
#
#   tests/perf/snapshot-bench.sh   (needs root and /dev/fuse; UZFS_BIN: one
#                                   directory holding zpool and zfs, default the build tree's)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /var/tmp/uzfs-snapbench.XXXXXX)
export UZFS_RUNDIR=$work/run UZFS_AUTOMOUNT=1
mnt=$work/mnt
mkdir -p "$mnt" "$work/devs"
truncate -s 8G "$work/devs/d0"
zp=${UZFS_BIN:-$here/build/cmd/zpool}/zpool
zfsb=${UZFS_BIN:-$here/build/cmd/zfs}/zfs
cleanup() {
  "$zp" destroy -f snapbench 2>/dev/null || true
  [ -f "$UZFS_RUNDIR/uzfsd.pid" ] && kill "$(cat "$UZFS_RUNDIR/uzfsd.pid")" 2>/dev/null || true
  sleep 1
  rm -rf "$work"
}
trap cleanup EXIT
parts=${PARTS:-take list snapdir destroy write diff}
has() { [[ " $parts " == *" $1 "* ]]; }
count=${COUNT:-1000}
"$zp" create -f -o version="${VERSION:-5000}" -m "$mnt" snapbench "$work/devs/d0"
for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
# shellcheck source=tests/perf/bench-lib.sh
source "$here/tests/perf/bench-lib.sh"  # now, secs, fill, $work/chunk

if has take || has list || has snapdir; then
  "$zfsb" create snapbench/many
  head -c 4096 /dev/urandom > "$work/small"
  first=0 last=0
  for i in $(seq 1 "$count"); do
    cp "$work/small" "$mnt/many/f$i"
    rm -f "$mnt/many/f$((i - 1))"
    t0=$(now)
    "$zfsb" snapshot "snapbench/many@s$i"
    t1=$(now)
    if [ "$i" -le 100 ]; then first=$((first + t1 - t0)); fi
    if [ "$i" -gt $((count - 100)) ]; then last=$((last + t1 - t0)); fi
  done
  if has take; then
    awk -v f="$first" -v l="$last" -v v="${VERSION:-5000}" -v c="$count" 'BEGIN {
      printf "take:    first 100 %.2f s, last 100 %.2f s, ratio %.2f (version %s, %d snapshots)\n", f / 1e9, l / 1e9, l / f, v, c }'
  fi
  if has list; then
    t0=$(now)
    n=$("$zfsb" list -t snapshot -H -o name | wc -l)
    t1=$(now)
    [ "$n" -eq "$count" ] || { echo "listed $n snapshots, not $count" >&2; exit 1; }
    echo "list:    $n snapshots in $(secs $((t1 - t0))) s"
  fi
  if has snapdir; then
    t0=$(now)
    n=$(ls -l "$mnt/many/.zfs/snapshot" | grep -c '^d')
    t1=$(now)
    [ "$n" -eq "$count" ] || { echo ".zfs/snapshot shows $n snapshots, not $count" >&2; exit 1; }
    cmp -s "$work/small" "$mnt/many/.zfs/snapshot/s1/f1" || { echo "s1/f1 differs" >&2; exit 1; }
    echo "snapdir: ls -l of $n snapshots in $(secs $((t1 - t0))) s"
  fi
  "$zfsb" destroy -r snapbench/many
fi

if has destroy; then
  # Five destroys per size, the median reported: one takes tens of
  # milliseconds, where a single sample is mostly noise.
  for size in 100 4096; do
    "$zfsb" create "snapbench/d$size"
    fill "$mnt/d$size" "$size"
    times=()
    for r in 1 2 3 4 5; do
      head -c 1M /dev/urandom > "$mnt/d$size/mine"
      "$zfsb" snapshot "snapbench/d$size@a$r"
      head -c 1M /dev/urandom > "$mnt/d$size/mine"  # @a$r alone holds the old MiB
      "$zfsb" snapshot "snapbench/d$size@b$r"
      "$zp" sync snapbench
      t0=$(now)
      "$zfsb" destroy "snapbench/d$size@a$r"
      t1=$(now)
      times+=($((t1 - t0)))
    done
    median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 3p)
    echo "destroy: 1 MiB unique in a ${size} MiB file system: $(secs "$median") s (median of 5)"
    "$zfsb" destroy -r "snapbench/d$size"
  done
fi

if has write; then
  for snaps in 0 100; do
    "$zfsb" create "snapbench/w$snaps"
    for i in $(seq 1 "$snaps"); do
      printf '%s' "$i" > "$mnt/w$snaps/tick"
      "$zfsb" snapshot "snapbench/w$snaps@s$i"
    done
    "$zp" sync snapbench
    t0=$(now)
    for i in $(seq 0 15); do cp "$work/chunk" "$mnt/w$snaps/big$i"; done
    "$zp" sync snapbench
    t1=$(now)
    awk -v n=$((t1 - t0)) -v s="$snaps" 'BEGIN { printf "write:   1 GiB with %d snapshots: %.0f MiB/s\n", s, 1024 / (n / 1e9) }'
    "$zfsb" destroy -r "snapbench/w$snaps"
  done
fi

if has diff; then
  "$zfsb" create snapbench/tree
  for d in $(seq 1 100); do
    mkdir "$mnt/tree/d$d"
    for f in $(seq 1 100); do printf '%s %s\n' "$d" "$f" > "$mnt/tree/d$d/f$f"; done
  done
  "$zfsb" snapshot snapbench/tree@before
  for d in $(seq 1 100); do printf 'changed\n' >> "$mnt/tree/d$d/f1"; done
  t0=$(now)
  n=$("$zfsb" diff snapbench/tree@before | wc -l)
  t1=$(now)
  [ "$n" -eq 100 ] || { echo "diff listed $n changes, not 100" >&2; exit 1; }  # the files (their directories did not change)
  echo "diff:    10,000 files, 100 changed: $(secs $((t1 - t0))) s"
  "$zfsb" destroy -r snapbench/tree
fi
