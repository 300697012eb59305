#!/usr/bin/env bash
# `make demo`: what uzfs can do today, on plain files.
#
# Until the pool, the daemon and the FUSE mount exist (the pool, ZPL and
# daemon issues), the demo drives the engine that does exist: leaf vdevs on
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

echo "== raidz2 over 6 files, lz4"
"$demo" -d "$work/lz4" -s /usr/share/doc -w 6 -p 2 -c lz4 -m 96
echo
echo "== raidz3 over 7 files, gzip-6"
"$demo" -d "$work/gzip" -s /usr/share/doc -w 7 -p 3 -c gzip-6 -m 32
echo
echo "== zdb -l $work/lz4/disk0 (first label)"
"$build/cmd/zdb/zdb" -l "$work/lz4/disk0" | sed -n '1,20p'
