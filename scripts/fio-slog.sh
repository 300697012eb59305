#!/usr/bin/env bash
# Sync-write benchmark of the intent log: fio 4 KiB random writes,
# each followed by fsync (tests/perf/fio/sync-write.fio), at 1 and 4 jobs,
# on a uzfs raidz2 over six files whose I/O is slowed to 5 ms with one lane
# each (zinject -D 5:1: a 7200 rpm disk), without and with a log device on
# a fast file (no delay); and the floor: 4 KiB write + fdatasync straight to
# a file in the same directory (sync-write-raw.fio). Prints IOPS and the
# fsync latency median/p99 per row.
#
# Then the same pool without delays (zinject -D needs uzfs's fault layer;
# zfs-fuse has none and this kernel has no dm-delay), with a slog, on uzfs
# and on zfs-fuse (scripts/zfs-fuse-sandbox.sh): the head-to-head row.
#
#   scripts/fio-slog.sh [--quick] [--keep] [--no-zfs-fuse]
# Environment: FIO_RUNTIME (seconds per run, default 20; --quick 4),
# FIO_SIZE (per job file, default 256M), DEV_SIZE (default 2G), WORKDIR,
# UZFS_BIN (directory of zpool/zinject; default build/cmd/*). Needs root.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
jobs_dir=$here/tests/perf/fio
summary() {  # summary <label> <json>
  python3 - "$1" "$2" <<'PY'
import json, sys
label, path = sys.argv[1], sys.argv[2]
j = json.load(open(path))["jobs"][0]
w = j["write"]
s = j.get("sync", {})
iops = w["iops"]
pct = (s.get("lat_ns") or {}).get("percentile") or {}
p50 = pct.get("50.000000", 0) / 1000
p99 = pct.get("99.000000", 0) / 1000
wl = (w.get("clat_ns") or {}).get("percentile") or {}
w50 = wl.get("50.000000", 0) / 1000
print(f"| {label} | {iops:.0f} | {w50 + p50:.0f} | {p99:.0f} |")
PY
}

# Internal: the zfs-fuse side, inside its sandbox. $2 = work directory.
if [ "${1:-}" = "--zfs-fuse-side" ]; then
  work=$2
  export PATH=/usr/sbin:/sbin:$PATH
  devdir=$work/zf-devs mnt=$work/zf-mnt
  mkdir -p "$devdir" "$mnt"
  devs=()
  for i in 0 1 2 3 4 5; do truncate -s "$DEV_SIZE" "$devdir/d$i"; devs+=("$devdir/d$i"); done
  truncate -s 1G "$devdir/slog"
  zpool create -f -m "$mnt" zfslog raidz2 "${devs[@]}" log "$devdir/slog"
  for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
  for jobs in 1 4; do
    FIO_DIR=$mnt FIO_JOBS=$jobs fio --output-format=json --output="$work/zf-$jobs.json" \
      "$here/tests/perf/fio/sync-write.fio" >/dev/null
    summary "zfs-fuse: raidz2 6x(no delay), slog yes, $jobs job(s)" "$work/zf-$jobs.json"
  done
  zpool destroy zfslog
  exit 0
fi

quick=0 keep=0 zf=1
for a in "$@"; do
  case $a in
    --quick) quick=1 ;;
    --keep) keep=1 ;;
    --no-zfs-fuse) zf=0 ;;
    *) echo "usage: $0 [--quick] [--keep] [--no-zfs-fuse]" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "fio-slog: needs root" >&2; exit 1; }
if [ $quick = 1 ]; then : "${FIO_RUNTIME:=4}" "${FIO_SIZE:=32M}" "${DEV_SIZE:=512M}"; fi
export FIO_RUNTIME=${FIO_RUNTIME:-20} FIO_SIZE=${FIO_SIZE:-256M}
export DEV_SIZE=${DEV_SIZE:-2G}
bin=${UZFS_BIN:-$here/build/cmd}
zpool_bin=$bin/zpool/zpool zinject_bin=$bin/zinject/zinject
[ -f "$bin/zpool" ] && zpool_bin=$bin/zpool zinject_bin=$bin/zinject
work=${WORKDIR:-$(mktemp -d /var/tmp/uzfs-slog.XXXXXX)}
mkdir -p "$work"
export UZFS_RUNDIR=$work/run UZFS_AUTOMOUNT=1
cleanup() {
  "$zpool_bin" destroy slogbench 2>/dev/null || true
  if [ -f "$UZFS_RUNDIR/uzfsd.pid" ]; then kill "$(cat "$UZFS_RUNDIR/uzfsd.pid")" 2>/dev/null || true; fi
  [ $keep = 1 ] && echo "work directory kept: $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT


echo "| run | IOPS | median write+fsync (us) | fsync p99 (us) |"
echo "|---|---|---|---|"
mkdir -p "$work/raw"
FIO_DIR=$work/raw fio --output-format=json --output="$work/raw.json" "$jobs_dir/sync-write-raw.fio" >/dev/null
summary "4K write+fdatasync on the slog's file alone" "$work/raw.json"
rm -rf "$work/raw"
for slog in no yes; do
  devdir=$work/devs-$slog mnt=$work/mnt-$slog
  mkdir -p "$devdir" "$mnt"
  devs=()
  for i in 0 1 2 3 4 5; do truncate -s "$DEV_SIZE" "$devdir/d$i"; devs+=("$devdir/d$i"); done
  logargs=()
  if [ $slog = yes ]; then truncate -s 1G "$devdir/slog"; logargs=(log "$devdir/slog"); fi
  "$zpool_bin" create -f -m "$mnt" slogbench raidz2 "${devs[@]}" "${logargs[@]}"
  for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
  for dv in "${devs[@]}"; do "$zinject_bin" -d "$dv" -D 5:1 slogbench >/dev/null; done
  for jobs in 1 4; do
    FIO_DIR=$mnt FIO_JOBS=$jobs fio --output-format=json --output="$work/$slog-$jobs.json" \
      "$jobs_dir/sync-write.fio" >/dev/null
    summary "raidz2 6x(5ms:1), slog $slog, $jobs job(s)" "$work/$slog-$jobs.json"
  done
  "$zinject_bin" -c all >/dev/null || true
  "$zpool_bin" destroy slogbench
done
# Head to head without delays, with a slog: uzfs, then zfs-fuse.
devdir=$work/devs-nodelay mnt=$work/mnt-nodelay
mkdir -p "$devdir" "$mnt"
devs=()
for i in 0 1 2 3 4 5; do truncate -s "$DEV_SIZE" "$devdir/d$i"; devs+=("$devdir/d$i"); done
truncate -s 1G "$devdir/slog"
"$zpool_bin" create -f -m "$mnt" slogbench raidz2 "${devs[@]}" log "$devdir/slog"
for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
for jobs in 1 4; do
  FIO_DIR=$mnt FIO_JOBS=$jobs fio --output-format=json --output="$work/nd-$jobs.json" \
    "$jobs_dir/sync-write.fio" >/dev/null
  summary "uzfs: raidz2 6x(no delay), slog yes, $jobs job(s)" "$work/nd-$jobs.json"
done
"$zpool_bin" destroy slogbench
rm -rf "$devdir"
if [ $zf = 1 ]; then
  chmod 755 "$work"
  "$here/scripts/zfs-fuse-sandbox.sh" "$0" --zfs-fuse-side "$work"
fi
