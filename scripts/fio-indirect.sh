#!/usr/bin/env bash
# Writes logged by reference: fio sequential writes of
# FIO_BS bytes (default 1M), each followed by fsync
# (tests/perf/fio/sync-write-large.fio), on a pool over one loop device
# (no log device): uzfs with zfs_immediate_write_sz at its default 32K
# (large writes logged by reference: written once, in place) and at 1T
# (every write copied into the log, then written again by the txg sync:
# the way a log without indirect writes works), then zfs-fuse. Prints, per row, the
# bytes the leaf took (sectors written in /sys/block/loopN/stat, from
# before fio to after the export that syncs everything) per byte fio wrote,
# IOPS and the fsync latency median.
#
#   scripts/fio-indirect.sh [--no-zfs-fuse]
# Environment: FIO_BS (default 1M), FIO_SIZE (default 256M), DEV_SIZE
# (default 2G), WORKDIR, UZFS_BIN (directory of zpool; default build/cmd).
# Needs root and loop devices.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
job=$here/tests/perf/fio/sync-write-large.fio
export FIO_BS=${FIO_BS:-1M} FIO_SIZE=${FIO_SIZE:-256M}
DEV_SIZE=${DEV_SIZE:-2G}
# One row: <label> <fio json> <sectors before> <sectors after>.
row() {
  python3 - "$@" <<'PY'
import json, sys
label, path, s0, s1 = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
j = json.load(open(path))["jobs"][0]
w = j["write"]
s = (j.get("sync", {}).get("lat_ns") or {}).get("percentile") or {}
leaf = (s1 - s0) * 512
print(f"| {label} | {w['io_bytes'] / 2**20:.0f} | {leaf / 2**20:.0f} | {leaf / w['io_bytes']:.2f} | "
      f"{w['iops']:.0f} | {s.get('50.000000', 0) / 1000:.0f} |")
PY
}
sectors() { awk '{print $7}' "/sys/block/$(basename "$1")/stat"; }

# Internal: the zfs-fuse side, inside its sandbox. $2 = loop device, $3 = work.
if [ "${1:-}" = "--zfs-fuse-side" ]; then
  loop=$2 work=$3 mnt=$3/zf-mnt
  export PATH=/usr/sbin:/sbin:$PATH
  mkdir -p "$mnt"
  zpool create -f -m "$mnt" ibench "$loop"
  for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
  s0=$(sectors "$loop")
  FIO_DIR=$mnt fio --output-format=json --output="$work/zf.json" "$job" >/dev/null
  zpool export ibench
  row "zfs-fuse 0.7" "$work/zf.json" "$s0" "$(sectors "$loop")"
  exit 0
fi
zf=1
[ "${1:-}" = "--no-zfs-fuse" ] && zf=0
[ "$(id -u)" -eq 0 ] || { echo "fio-indirect: needs root" >&2; exit 1; }
bin=${UZFS_BIN:-$here/build/cmd}
zpool_bin=$bin/zpool/zpool
[ -f "$bin/zpool" ] && zpool_bin=$bin/zpool
work=${WORKDIR:-$(mktemp -d /var/tmp/uzfs-indirect.XXXXXX)}
mkdir -p "$work"
export UZFS_RUNDIR=$work/run UZFS_AUTOMOUNT=1
loop=
cleanup() {
  "$zpool_bin" destroy ibench 2>/dev/null || true
  if [ -f "$UZFS_RUNDIR/uzfsd.pid" ]; then kill "$(cat "$UZFS_RUNDIR/uzfsd.pid")" 2>/dev/null || true; fi
  [ -z "$loop" ] || losetup -d "$loop" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
newloop() {
  [ -z "$loop" ] || losetup -d "$loop"
  rm -f "$work/dev.img"
  truncate -s "$DEV_SIZE" "$work/dev.img"
  loop=$(losetup -f --show "$work/dev.img")
}

echo "| run (bs $FIO_BS, fsync each) | MiB written | MiB to the leaf | leaf / written | IOPS | fsync median (us) |"
echo "|---|---|---|---|---|---|"
for mode in ref copy; do
  newloop
  mnt=$work/mnt-$mode
  mkdir -p "$mnt"
  if [ $mode = ref ]; then v=32K; else v=1T; fi
  "$zpool_bin" tunable "zfs_immediate_write_sz=$v" >/dev/null
  "$zpool_bin" create -f -m "$mnt" ibench "$loop"
  for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
  s0=$(sectors "$loop")
  FIO_DIR=$mnt fio --output-format=json --output="$work/$mode.json" "$job" >/dev/null
  "$zpool_bin" export ibench
  if [ $mode = ref ]; then label="uzfs, by reference (zfs_immediate_write_sz=32K)"
  else label="uzfs, copied (zfs_immediate_write_sz=1T: as before)"; fi
  row "$label" "$work/$mode.json" "$s0" "$(sectors "$loop")"
done
"$zpool_bin" tunable zfs_immediate_write_sz=32K >/dev/null
if [ $zf = 1 ]; then
  newloop
  chmod 755 "$work"
  "$here/scripts/zfs-fuse-sandbox.sh" "$0" --zfs-fuse-side "$loop" "$work"
fi
