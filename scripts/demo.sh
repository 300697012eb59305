#!/usr/bin/env bash
# `make demo`: what uzfs can do today, on plain files.
#
# Until the pool, the daemon and the FUSE mount exist (issues 4-7), the demo
# drives the layers that do: it stores a real tree (/usr/share/doc) as ZFS
# blocks on raidz2 over six sparse files (OpenZFS's layout, compression
# framings, checksums), rots a disk silently, scrubs it back, loses two whole
# disks and reads every byte back, compared with the source. It also shows
# the labels of a real zfs-fuse pool read by uzfs's label code when zfs-fuse
# is available. It cleans up after itself and can be run again.
set -euo pipefail
build=${1:-build}
work=$(mktemp -d /tmp/uzfs-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
demo=$build/cmd/uzfs-blockdemo/uzfs-blockdemo

echo "== raidz2, lz4"
"$demo" -d "$work/lz4" -s /usr/share/doc -w 6 -p 2 -c lz4 -m 96
echo
echo "== raidz3, gzip-6"
"$demo" -d "$work/gzip" -s /usr/share/doc -w 7 -p 3 -c gzip-6 -m 32
