#!/usr/bin/env bash
# The L2ARC benchmark: fio 4 KiB random reads (O_DIRECT) over a
# file four times the ARC, on raidz2 over six sparse files each slowed by
# `zinject -D 5:1` (5 ms per I/O, one at a time: a 7200 rpm disk), with
#   1. no cache device,
#   2. a cold cache device (just added; the run itself feeds it),
#   3. a warm one (after one sequential pass that pushes every block
#      through the ARC into the L2ARC),
#   4. the warm one after export/import (persistent L2ARC: rebuilt index).
# Prints IOPS per phase and the ratio to phase 1, plus the arcstats l2_*
# counters after each phase when the daemon can show them.
#
#   scripts/l2arc-bench.sh [--quick] [--keep]
# Environment: ARC_MAX (UZFS_ARC_MAX, default 64M), FIO_RUNTIME (seconds
# per phase, default 30), DEV_SIZE (per data device, default 2G),
# CACHE_SIZE (default 2G), RECORDSIZE (default 4k), FIO_JOBS (default 4),
# LATENCY (zinject -D argument, default 5:1), WORKDIR, UZFS_BIN (directory
# holding zpool/zfs/zinject, default build/cmd/*). Needs root (FUSE).
# The daemon is private: UZFS_RUNDIR points into the work directory and the
# commands start it there with UZFS_ARC_MAX and the l2arc tunables set.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
jobs_dir=$here/tests/perf/fio

quick=0 keep=0
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --keep) keep=1 ;;
    *) echo "usage: $0 [--quick] [--keep]" >&2; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" -eq 0 ] || { echo "l2arc-bench: needs root" >&2; exit 1; }
command -v fio >/dev/null || { echo "l2arc-bench: fio is not installed (make deps)" >&2; exit 1; }
if [ $quick = 1 ]; then
  : "${ARC_MAX:=32M}" "${FIO_RUNTIME:=5}" "${DEV_SIZE:=512M}" "${CACHE_SIZE:=512M}"
fi
ARC_MAX=${ARC_MAX:-64M} FIO_RUNTIME=${FIO_RUNTIME:-30} DEV_SIZE=${DEV_SIZE:-2G}
CACHE_SIZE=${CACHE_SIZE:-2G} RECORDSIZE=${RECORDSIZE:-4k} FIO_JOBS=${FIO_JOBS:-4} LATENCY=${LATENCY:-5:1}
arc_bytes=$(numfmt --from=iec "$ARC_MAX")
export FIO_SIZE=$((arc_bytes * 4)) FIO_RUNTIME FIO_JOBS
if [ -z "${UZFS_BIN:-}" ]; then
  UZFS_BIN=$(dirname "$(ls "$here"/build/cmd/zpool/zpool 2>/dev/null || echo "$here/build/cmd/zpool/zpool")")
fi
bin_of() {  # the zpool/zfs/zinject binaries may live in sibling directories
  local b
  for b in "$UZFS_BIN/$1" "$UZFS_BIN/../$1/$1" "$here/build/cmd/$1/$1"; do
    [ -x "$b" ] && { echo "$b"; return; }
  done
  echo "l2arc-bench: no $1 (make build)" >&2
  exit 1
}
ZPOOL=$(bin_of zpool) ZINJECT=$(bin_of zinject) ZFS=$(bin_of zfs)
zpool() { "$ZPOOL" "$@"; }

work=${WORKDIR:-$(mktemp -d /var/tmp/uzfs-l2arc.XXXXXX)}
mkdir -p "$work"
export UZFS_RUNDIR=$work/run UZFS_AUTOMOUNT=1 UZFS_ARC_MAX=$ARC_MAX
# Let a warming cache device take a full working set quickly.
export UZFS_L2ARC_WRITE_MAX=${UZFS_L2ARC_WRITE_MAX:-64M} UZFS_L2ARC_WRITE_BOOST=${UZFS_L2ARC_WRITE_BOOST:-256M}
stop_daemon() {
  if [ -f "$UZFS_RUNDIR/uzfsd.pid" ]; then
    local pid
    pid=$(cat "$UZFS_RUNDIR/uzfsd.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
}
cleanup() {
  zpool destroy -f l2bench >/dev/null 2>&1 || true
  stop_daemon
  [ $keep = 1 ] && echo "work directory kept: $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT

pool=l2bench devdir=$work/devs mnt=$work/mnt out=$work/results
mkdir -p "$devdir" "$mnt" "$out"
devs=()
for i in 0 1 2 3 4 5; do
  truncate -s "$DEV_SIZE" "$devdir/d$i"
  devs+=("$devdir/d$i")
done
truncate -s "$CACHE_SIZE" "$work/cache0"

wait_mount() {
  for _ in $(seq 1 100); do mountpoint -q "$mnt" && return; sleep 0.1; done
  echo "l2arc-bench: pool did not mount at $mnt" >&2
  exit 1
}
reimport() {  # export + import: a cold ARC (the pool's buffers are dropped)
  zpool export "$pool"
  zpool import -d "$devdir" "$pool"
  wait_mount
}
slow() { for d in "${devs[@]}"; do "$ZINJECT" -d "$d" -D "$LATENCY" "$pool" >/dev/null; done; }
fast() { "$ZINJECT" -c all >/dev/null 2>&1 || true; }
stats() {  # arcstats l2_* lines, when the daemon has a command for them
  { "$ZPOOL" arcstats 2>/dev/null || cat "$UZFS_RUNDIR/arcstats" 2>/dev/null || true; } |
    grep -E '^(hits|misses|(demand|prefetch)_(data|metadata)_misses|l2_(hits|misses|size|asize|cksum_bad|io_error|rebuild_bufs|writes_sent))\b' |
    awk '{printf "%s=%s ", $1, $3} END {print ""}'
}
randread() {  # randread <phase>
  env FIO_DIR="$mnt" fio --output-format=json --output="$out/$1.json" "$jobs_dir/l2arc-rand-read.fio" >/dev/null
  echo "$1: $(stats)" >>"$out/stats.txt"
}

zpool create -f -m "$mnt" -O recordsize="$RECORDSIZE" -O compression=off "$pool" raidz2 "${devs[@]}"
wait_mount
env FIO_DIR="$mnt" FIO_RW=write fio "$jobs_dir/l2arc-layout.fio" >/dev/null

# 1. No cache device.
reimport
slow
randread nocache
fast

# 2. A cold cache device: zpool add if the daemon has it, else re-create
#    the pool with one (and lay the file out again).
if ! zpool add -f "$pool" cache "$work/cache0" 2>/dev/null; then
  zpool destroy -f "$pool"
  zpool create -f -m "$mnt" -O recordsize="$RECORDSIZE" -O compression=off "$pool" raidz2 "${devs[@]}" \
    cache "$work/cache0"
  wait_mount
  env FIO_DIR="$mnt" FIO_RW=write fio "$jobs_dir/l2arc-layout.fio" >/dev/null
fi
reimport
slow
randread cold

# 3. Warm: one sequential pass through the ARC feeds the cache device.
fast
env FIO_DIR="$mnt" FIO_RW=read fio "$jobs_dir/l2arc-layout.fio" >/dev/null
sleep 5  # a few feed intervals
slow
randread warm
fast

# 4. Warm after export/import: the index is rebuilt from the device.
reimport
slow
randread warm-reimport
fast
zpool status "$pool" >"$out/status.txt" 2>&1 || true
zpool iostat -v "$pool" >>"$out/status.txt" 2>&1 || true

python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
def iops(name):
    p = os.path.join(out, name + ".json")
    if not os.path.exists(p):
        return None
    t = open(p).read()
    r = json.loads(t[t.index("{"):])
    return sum(j["read"]["iops"] for j in r["jobs"])
base = iops("nocache")
print(f"{'phase':28} {'IOPS':>10} {'vs no cache':>12}")
for name, label in [("nocache", "no cache device"), ("cold", "cold cache device"),
                    ("warm", "warm cache device"), ("warm-reimport", "warm, after export/import")]:
    v = iops(name)
    ratio = f"{v / base:.1f}x" if v is not None and base else "-"
    print(f"{label:28} {'-' if v is None else f'{v:.0f}':>10} {ratio:>12}")
PY
echo
cat "$out/stats.txt"
echo
cat "$out/status.txt"
