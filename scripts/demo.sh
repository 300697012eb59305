#!/usr/bin/env bash
# `make demo`: what uzfs can do today, on plain files.
#
# First a real pool (uzfs-pooldemo: create, datasets, data, export, import,
# verify, zdb); the zpool/zfs commands and the FUSE mount come with the
# daemon. Then the block layer on its own: leaf vdevs on
# six sparse files, raidz, the metaslab allocator and the ZIO pipeline. It
# stores a real tree (/usr/share/doc) as ZFS blocks (OpenZFS's layout,
# compression framings, checksums), rots a disk silently, scrubs it back,
# pulls nparity whole disks and reads every byte back, compared with the
# source; then shows the labels it wrote with uzfs's zdb. It cleans up after
# itself and can be run again.
set -euo pipefail
build=${1:-build}
work=$(mktemp -d /tmp/uzfs-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
demo=$build/cmd/uzfs-blockdemo/uzfs-blockdemo

echo "== a real pool: raidz2 over 6 files + mirrored log + cache, datasets with lz4 and gzip-9"
"$build/cmd/uzfs-pooldemo/uzfs-pooldemo" "$work/pool" /usr/share/doc 48
echo
echo "== zdb -e -p $work/pool -d demo"
"$build/cmd/zdb/zdb" -e -p "$work/pool" -d demo
echo

echo "== raidz2 over 6 files, lz4"
"$demo" -d "$work/lz4" -s /usr/share/doc -w 6 -p 2 -c lz4 -m 96
echo
echo "== raidz3 over 7 files, gzip-6"
"$demo" -d "$work/gzip" -s /usr/share/doc -w 7 -p 3 -c gzip-6 -m 32
echo
echo "== zdb -l $work/lz4/disk0 (first label)"
"$build/cmd/zdb/zdb" -l "$work/lz4/disk0" | sed -n '1,20p'
