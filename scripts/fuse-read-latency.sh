#!/usr/bin/env bash
# The FUSE round trip alone, as a reader sees it: 4 KiB random O_DIRECT
# reads (one job, RUNTIME seconds, default 8) of a 256 MiB file that the
# daemon's ARC already holds (written, then read once whole), on a fresh
# raidz2 pool of six sparse 1 GiB files. O_DIRECT keeps the kernel's page
# cache out, so every read is a READ request answered from memory. Prints
# fio's IOPS and the completion latency's p50, p99 and mean.
#
#   [UZFS_FUSE_URING=1] scripts/fuse-read-latency.sh
#
# Needs root and fio. UZFS_BIN: directory of zpool (default build/cmd/zpool);
# other UZFS_* variables reach the daemon it starts (man/uzfsd.8).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /var/tmp/uzfs-readlat.XXXXXX)
export UZFS_RUNDIR=$work/run UZFS_AUTOMOUNT=1
mnt=$work/mnt
mkdir -p "$mnt" "$work/devs"
devs=()
for i in 0 1 2 3 4 5; do truncate -s 1G "$work/devs/d$i"; devs+=("$work/devs/d$i"); done
zp=${UZFS_BIN:-$here/build/cmd/zpool}/zpool
stop() {  # destroy the pool, stop the daemon and wait for it
  "$zp" destroy -f readlat 2>/dev/null || true
  if [ -f "$UZFS_RUNDIR/uzfsd.pid" ]; then
    local pid
    pid=$(cat "$UZFS_RUNDIR/uzfsd.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
}
cleanup() {
  stop
  if mountpoint -q "$mnt"; then umount -l "$mnt"; fi
  rm -rf --one-file-system -- "${work:?}"
}
trap cleanup EXIT
"$zp" create -f -m "$mnt" readlat raidz2 "${devs[@]}"
for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
fio --name=lay --filename="$mnt/f" --rw=write --bs=1M --size=256M --output=/dev/null
fio --name=warm --filename="$mnt/f" --rw=read --bs=1M --size=256M --direct=1 --output=/dev/null
fio --name=rr --filename="$mnt/f" --rw=randread --bs=4k --direct=1 --size=256M --time_based \
  --runtime="${RUNTIME:-8}" --output-format=json --output="$work/rr.json"
python3 - "$work/rr.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["jobs"][0]["read"]
c = r["clat_ns"]
p = c["percentile"]
print("4K O_DIRECT reads from the ARC: %.0f IOPS, p50 %.1f us, p99 %.1f us, mean %.1f us"
      % (r["iops"], p["50.000000"] / 1e3, p["99.000000"] / 1e3, c["mean"] / 1e3))
PY
stop  # the unmount's log line tells the requests and the transport
grep -h "unmounted" "$UZFS_RUNDIR/uzfsd.log" 2>/dev/null | sed 's/^.*: unmounted/uzfsd: unmounted/' || true
