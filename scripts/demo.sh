#!/usr/bin/env bash
# `make demo`: uzfs used the way ZFS is used, on plain files.
#
# A private daemon (its own run directory, so a system uzfsd is never
# touched) gets a raidz2 pool over six sparse files with a mirrored log and
# a cache device; two datasets, lz4 and gzip-9, mounted through FUSE; a real
# tree (/usr/share/doc) copied into both with cp; zpool status, zpool list,
# zfs list and zfs get compressratio; every file checked against its source
# with sha256sum; a snapshot, the lz4 copy deleted, seen whole under
# .zfs/snapshot and brought back by zfs rollback; an export and an import
# (the copy is checked again, now read back from the disks); a disk rotting silently (garbage written into
# one of the six files) found and repaired by zpool scrub, and the copy
# checked once more; a disk that died replaced by a new one with zpool
# replace (the resilver rebuilds it), checked again; the tree replicated
# to a second pool with zfs send -R | zfs receive, then an incremental
# with what changed since, cut half way and resumed (zfs receive -s), the
# backup compared with the source; uzfs's zdb
# over the exported pool. It cleans up after
# itself (also when interrupted) and can be run again.
#
#   scripts/demo.sh [--prepare] [BUILD_DIR]
#
# --prepare (what `make demo` passes) first installs the Debian packages
# that are missing and builds the four programs the demo runs, writing
# their output to BUILD_DIR/demo-prepare.log and one line per step here.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
prepare=0
if [ "${1:-}" = "--prepare" ]; then prepare=1; shift; fi
build=${1:-build}
cmd=$build/cmd
programs=(uzfsd zpool zfs zdb)

# shellcheck source=scripts/demo-lib.sh
source "$here/scripts/demo-lib.sh"
if [ "$prepare" -eq 1 ]; then demo_prepare demo "$build" "${programs[@]}"; fi
work=$(mktemp -d /tmp/uzfs-demo.XXXXXX)
export UZFS_RUNDIR=$work/run UZFS_AUTOMOUNT=1
zpool() { "$cmd/zpool/zpool" "$@"; }
zfs() { "$cmd/zfs/zfs" "$@"; }
cleanup() {
  zpool destroy -f backup >/dev/null 2>&1 || true
  zpool destroy -f demo >/dev/null 2>&1 || true
  demo_stop "$work"
  rm -rf "$work"
}
trap cleanup EXIT

src=/usr/share/doc
mkdir -p "$work/disks"
for d in d0 d1 d2 d3 d4 d5; do truncate -s 1G "$work/disks/$d"; done
truncate -s 256M "$work/disks/log0" "$work/disks/log1" "$work/disks/cache0"
D=$work/disks

step "a raidz2 pool over six 1 GiB sparse files, a mirrored log and a cache device"
run zpool create -m "$work/mnt" demo raidz2 "$D/d0" "$D/d1" "$D/d2" "$D/d3" "$D/d4" "$D/d5" \
  log mirror "$D/log0" "$D/log1" cache "$D/cache0"
run zfs create -o compression=lz4 demo/lz4
run zfs create -o compression=gzip-9 demo/gzip
run zfs mount

step "copy $src ($(du -sh "$src" | cut -f1), $(find "$src" | wc -l) entries) into both datasets with cp -a"
time (cp -a "$src" "$work/mnt/lz4/doc" && cp -a "$src" "$work/mnt/gzip/doc")
# Until the next transaction group the copy is still in memory (the
# kernel's cache and the open txg): write it out so the figures count it.
run zpool sync demo
df -h "$work/mnt/lz4" "$work/mnt/gzip"

step "what ZFS users look at"
run zpool status demo
run zpool list demo
run zfs list -r demo
run zfs get compressratio,compression demo/lz4 demo/gzip

verify() {
  (cd "$src" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum) >"$work/want.sha"
  for ds in lz4 gzip; do
    (cd "$work/mnt/$ds/doc" && sha256sum --quiet -c "$work/want.sha") ||
      { echo "demo: $ds copy differs from $src" >&2; exit 1; }
    echo "demo/$ds: $(wc -l <"$work/want.sha") files identical to $src (sha256)"
  done
}
step "every file checked against its source"
verify

step "a snapshot, then an accident: the lz4 copy deleted; .zfs/snapshot still has it, rollback brings it back"
run zfs snapshot -r demo@safe
run rm -rf "$work/mnt/lz4/doc"
echo "$work/mnt/lz4/doc: $(find "$work/mnt/lz4" -path '*/doc/*' -type f | wc -l) files left;" \
  "$work/mnt/lz4/.zfs/snapshot/safe/doc: $(find "$work/mnt/lz4/.zfs/snapshot/safe/doc" -type f | wc -l) files"
zpool sync demo  # so USED counts what only the snapshot holds now
run zfs list -t snapshot -o name,used,referenced -r demo
run zfs rollback demo/lz4@safe
verify

step "export, import (everything read back from the disks), check again"
run zpool export demo
echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
run zpool import -d "$D" demo
verify

step "a disk rots silently: 64 MiB in the middle of d2 overwritten with garbage"
run dd if=/dev/urandom of="$D/d2" bs=1M seek=64 count=64 conv=notrunc status=none
step "zpool scrub reads every block, every copy and the parity, and repairs what does not match"
run zpool scrub -w demo
run zpool status demo
verify

step "a disk dies: d4 is gone when the pool comes back; it imports DEGRADED and keeps serving"
run zpool export demo
rm -f "$D/d4"
run zpool import -d "$D" demo
run zpool status demo
step "a new disk (d6) replaces it: zpool replace rebuilds its share from parity (the resilver)"
truncate -s 1G "$D/d6"
run zpool replace -w demo "$D/d4" "$D/d6"
run zpool status demo
verify

step "a backup: the whole tree replicated to a second pool with zfs send -R | zfs receive, then only what changed, resumed after a break"
truncate -s 1G "$D/b0"
run zpool create -m "$work/backup" backup "$D/b0"
# demo's root has a local mountpoint (zpool create -m), which a -R stream
# carries as OpenZFS's does: -x mountpoint lets the copies mount under
# the backup pool's.
echo "\$ zfs send -R demo@safe | zfs receive -x mountpoint -e backup"
zfs send -R demo@safe | zfs receive -x mountpoint -e backup
run cp -a /usr/share/common-licenses "$work/mnt/gzip/licenses"
run zfs snapshot -r demo@later
# The increment travels as a file that breaks off half way: zfs receive
# -s keeps what arrived and says so; the same file again goes on from
# there (what arrived whole is passed over).
echo "\$ zfs send -R -i @safe demo@later > later.zs"
zfs send -R -i @safe demo@later >"$work/later.zs"
head -c $(($(stat -c %s "$work/later.zs") / 2)) "$work/later.zs" >"$work/cut.zs"
echo "\$ zfs receive -s -F -x mountpoint -e backup < (the first half of later.zs)"
zfs receive -s -F -x mountpoint -e backup <"$work/cut.zs" 2>&1 | cut -c1-160 || true
echo "\$ zfs receive -s -v -F -x mountpoint -e backup < later.zs"
zfs receive -s -v -F -x mountpoint -e backup <"$work/later.zs"
run zfs list -t all -o name,used,referenced,compression -r backup
for ds in lz4 gzip; do
  diff -r --no-dereference "$work/mnt/$ds" "$work/backup/demo/$ds" >/dev/null ||
    { echo "demo: the backup of demo/$ds differs from it" >&2; exit 1; }
  echo "backup/demo/$ds: identical to demo/$ds ($(find "$work/backup/demo/$ds" -type f | wc -l) files)"
done
run zpool export backup
run zpool export demo

step "uzfs's zdb over the exported pool: every block pointer traversed"
run "$cmd/zdb/zdb" -e -p "$D" -b demo | tail -n 12
echo
echo "demo finished: everything above ran in $work (now removed)"
