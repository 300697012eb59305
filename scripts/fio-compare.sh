#!/usr/bin/env bash
# Runs the fio suite (tests/perf/fio/) on a uzfs pool and on a zfs-fuse pool
# of the same shape — raidz2 over six sparse files in the same directory
# (or another --layout), default settings as a user would create them —
# and prints a side-by-side
# table with the ratio uzfs / zfs-fuse for every row, and each side's
# median completion latency (fio's clat p50, microseconds).
#
#   scripts/fio-compare.sh [--quick] [--only uzfs|zfs-fuse] [--rows LIST] [--keep]
#                          [--layout raidz2|mirror|2mirror]
#
#   --quick   small sizes (seconds, for a smoke check), not for figures
#   --only    run one side (the table shows '-' for the other)
#   --rows    run only these jobs, comma-separated: seq-write, seq-read,
#             rand-write-1, rand-read-1, rand-read-4, rand-write-4 (4 jobs,
#             one shared file), rand-write-4-files (4 jobs, a file each),
#             sync-write-1, sync-write-4, small-files (default: all)
#   --keep    keep the work directory (its path is printed)
#   --layout  the pool's vdevs: raidz2 (six files, the default), mirror (one
#             2-way mirror), 2mirror (two 2-way mirrors, four files)
# Environment: FIO_SIZE (file size per job, default 1G), FIO_RUNTIME
# (seconds per time-based job, default 30), FIO_NRFILES (small files,
# default 50000: the delete phase must last seconds, not the half second
# 5000 unlinks take, to be compared at all; a row whose phase ran under
# 2 s is marked "short"; FIO_SETTLE: seconds of idle before the timed
# small-file phases, default 6, after a sync; FIO_STAT_LOOPS: passes of the
# stat phase over the files, default 20), DEV_SIZE (per device file, default 4G), DEV_FILL (1:
# device files written full of zeros first, as disks are; default 0: sparse;
# scripts/dev-file.sh says why it matters to fsync'd writes), FIO_RECORDSIZE
# (the pools' recordsize, e.g. 16K; default the file systems' 128K), WORKDIR (default a
# new directory under /var/tmp), UZFS_BIN (directory holding zpool/zfs,
# default build/cmd/*), FIO_WARM_RAM (1: touch most free RAM once first, a
# new VM's first-touch cost; 0: skip). Needs root (FUSE, zfs-fuse's sandbox,
# drop_caches).
#
# Cold reads: before seq-read and rand-read each side exports and imports
# its pool and drops the kernel's page cache, so both start from the disks.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
jobs_dir=$here/tests/perf/fio
# shellcheck source=scripts/dev-file.sh
source "$here/scripts/dev-file.sh"  # make_dev_file, DEV_FILL

if [ "${1:-}" = "--side" ]; then
  # Internal: run the suite for one side. $2 = uzfs|zfs-fuse, $3 = work dir.
  side=$2 work=$3
  if [ "$side" = uzfs ]; then
    zpool() { "$UZFS_BIN/zpool" "$@"; }
    pool=uzfsbench
  else
    export PATH=/usr/sbin:/sbin:$PATH
    zpool() { /usr/sbin/zpool "$@"; }
    pool=zfbench
  fi
  devdir=$work/$side-devs mnt=$work/$side-mnt out=$work/$side-results
  mkdir -p "$devdir" "$mnt" "$out"
  devs=()
  case ${FIO_LAYOUT:-raidz2} in
    raidz2) ndev=6 ;; mirror) ndev=2 ;; 2mirror) ndev=4 ;;
    *) echo "fio-compare: unknown layout $FIO_LAYOUT" >&2; exit 2 ;;
  esac
  for i in $(seq 0 $((ndev - 1))); do
    make_dev_file "$devdir/d$i" "$DEV_SIZE"
    devs+=("$devdir/d$i")
  done
  case ${FIO_LAYOUT:-raidz2} in
    raidz2) vdevs=(raidz2 "${devs[@]}") ;;
    mirror) vdevs=(mirror "${devs[@]}") ;;
    2mirror) vdevs=(mirror "${devs[0]}" "${devs[1]}" mirror "${devs[2]}" "${devs[3]}") ;;
  esac
  props=()
  if [ -n "${FIO_RECORDSIZE:-}" ]; then props=(-O "recordsize=$FIO_RECORDSIZE"); fi
  zpool create -f "${props[@]}" -m "$mnt" "$pool" "${vdevs[@]}"
  for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
  mountpoint -q "$mnt" || { echo "fio-compare: $side pool did not mount at $mnt" >&2; exit 1; }
  cold() {
    zpool export "$pool"
    sync
    echo 3 >/proc/sys/vm/drop_caches
    zpool import -d "$devdir" "$pool"
    for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
  }
  want() { [ -z "${FIO_ROWS:-}" ] || [[ ",$FIO_ROWS," == *",$1,"* ]]; }
  run() {  # run <result name> <job file> [VAR=value ...]
    local name=$1 job=$2
    shift 2
    want "$name" || return 0
    env FIO_DIR="$mnt" "$@" fio --output-format=json --output="$out/$name.json" "$jobs_dir/$job"
  }
  run seq-write seq-write.fio
  # The leaves' write counts and sizes after the sequential write.
  if want seq-write; then zpool iostat -vp "$pool" >"$out/seq-write.iostat" 2>&1 || true; fi
  # uzfsd's CPU seconds (user + system, since it started) after the row.
  if want seq-write && [ "$side" = uzfs ] && [ -f "$UZFS_RUNDIR/uzfsd.pid" ]; then
    awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$(cat "$UZFS_RUNDIR/uzfsd.pid")/stat" \
      >"$out/seq-write.cpu" 2>/dev/null || true
  fi
  if want seq-read; then cold; fi
  run seq-read seq-read.fio
  rm -f "$mnt/seq.dat"
  # Lay the random file out, then read it cold.
  run rand-write-1 rand-write.fio FIO_JOBS=1
  if want rand-read-1; then cold; fi
  run rand-read-1 rand-read.fio FIO_JOBS=1
  if want rand-read-4; then cold; fi
  run rand-read-4 rand-read.fio FIO_JOBS=4
  run rand-write-4 rand-write.fio FIO_JOBS=4
  rm -f "$mnt/rand.dat"
  run rand-write-4-files rand-write-files.fio FIO_JOBS=4
  rm -f "$mnt"/rand-write-files.*
  run sync-write-1 sync-write.fio FIO_JOBS=1
  run sync-write-4 sync-write.fio FIO_JOBS=4
  rm -f "$mnt"/sync-write.*
  # Small files, each phase in its own fio run so that every timed phase
  # starts with the daemon idle: the stat job's layout (4 KiB into each
  # file, untimed) leaves uzfs's writeback cache with 200 MB of dirty pages
  # and a txg to sync — work a delete started right after pays for (the
  # kernel writes the pages back and the daemon syncs them under it), which
  # zfs-fuse (no writeback cache) did inside the untimed layout. settle:
  # `sync` (the page cache to the daemon), then more than a txg timeout,
  # then until the daemon has been idle for a second (under 20 ms of CPU;
  # at most a minute): the txg that writes the layout's 50000 files can
  # outlast the timeout, and a stat phase sharing the two CPUs with it
  # measured 20 % fewer stats (kernel-only work: no request reaches either
  # daemon). Both sides get the same wait.
  daemon_pid() {
    if [ "$side" = uzfs ]; then cat "$UZFS_RUNDIR/uzfsd.pid" 2>/dev/null; else pgrep -n -x zfs-fuse; fi
  }
  settle() {
    sync
    sleep "${FIO_SETTLE:-6}"
    local pid
    pid=$(daemon_pid) || return 0
    [ -n "$pid" ] && "$here/scripts/wait-idle.sh" "$pid"
    return 0
  }
  section() {  # section <phase>: one job of small-files.fio, its own result
    env FIO_DIR="$mnt" fio --output-format=json --output="$out/small-files-$1.json" \
      --section="$1" "$jobs_dir/small-files.fio"
  }
  if want small-files; then
    settle
    section create
    section stat  # lays the files out (and stats them: the next run's figure is the one shown)
    settle
    section stat
    section delete
  fi
  sleep 1
  zpool destroy "$pool" || zpool destroy -f "$pool" || echo "fio-compare: could not destroy $pool (ignored)" >&2
  exit 0
fi

quick=0 only="" keep=0
export FIO_ROWS="" FIO_LAYOUT=raidz2
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --only) only=$2; shift ;;
    --rows) FIO_ROWS=$2; shift ;;
    --keep) keep=1 ;;
    --layout) FIO_LAYOUT=$2; shift ;;
    *) echo "usage: $0 [--quick] [--only uzfs|zfs-fuse] [--rows LIST] [--keep] [--layout raidz2|mirror|2mirror]" >&2; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" -eq 0 ] || { echo "fio-compare: needs root" >&2; exit 1; }
command -v fio >/dev/null || { echo "fio-compare: fio is not installed (make deps)" >&2; exit 1; }
if [ $quick = 1 ]; then
  : "${FIO_SIZE:=64M}" "${FIO_RUNTIME:=3}" "${FIO_NRFILES:=2000}" "${DEV_SIZE:=1G}"
fi
export FIO_SIZE=${FIO_SIZE:-1G} FIO_RUNTIME=${FIO_RUNTIME:-30} FIO_NRFILES=${FIO_NRFILES:-50000}
export FIO_STAT_LOOPS=${FIO_STAT_LOOPS:-20}
export DEV_SIZE=${DEV_SIZE:-4G} FIO_JOBS=1
if [ -z "${UZFS_BIN:-}" ]; then
  UZFS_BIN=$(dirname "$(ls "$here"/build/cmd/zpool/zpool 2>/dev/null || echo "$here/build/cmd/zpool/zpool")")
fi
export UZFS_BIN
work=${WORKDIR:-$(mktemp -d /var/tmp/uzfs-fio.XXXXXX)}
mkdir -p "$work"
export UZFS_RUNDIR=$work/uzfs-run UZFS_AUTOMOUNT=1
cleanup() { [ $keep = 1 ] && echo "work directory kept: $work" >&2 || rm -rf "$work"; }
trap cleanup EXIT

# A new VM's memory costs the host a page allocation the first time the
# guest touches each page, and that cost lands on whichever process first
# touches it: on a freshly booted machine, a daemon that keeps what it wrote
# in RAM (uzfs's dirty records and ARC) paid it inside the timed rows (seq
# write 253-327 MiB/s, ~35% of uzfsd's CPU zeroing new pages; 403-419 once
# RAM had been touched, docs/PERFORMANCE.md "Sequential writes"). Touch most of the
# free RAM once (a tmpfs file, removed) so both sides run on a machine in
# its steady state. FIO_WARM_RAM=0 skips it.
warm_ram() {
  [ "${FIO_WARM_RAM:-1}" = 1 ] || return 0
  local avail shm mb
  avail=$(awk '/MemAvailable/ {print int($2 / 1024)}' /proc/meminfo)
  shm=$(df -m --output=avail /dev/shm 2>/dev/null | tail -1 | tr -d ' ')
  mb=$(( avail * 6 / 10 ))
  [ -n "$shm" ] && [ "$shm" -lt "$mb" ] && mb=$(( shm - 64 ))
  [ "$mb" -gt 0 ] || return 0
  dd if=/dev/zero of=/dev/shm/uzfs-fio-warm.$$ bs=1M count="$mb" status=none 2>/dev/null || true
  rm -f /dev/shm/uzfs-fio-warm.$$
}
warm_ram

if [ "$only" != zfs-fuse ]; then
  [ -x "$UZFS_BIN/zpool" ] || { echo "fio-compare: no zpool in $UZFS_BIN (make build)" >&2; exit 1; }
  "$0" --side uzfs "$work"
  # Stop the private daemon the commands started.
  if [ -f "$UZFS_RUNDIR/uzfsd.pid" ]; then
    pid=$(cat "$UZFS_RUNDIR/uzfsd.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
fi
if [ "$only" != uzfs ]; then
  "$here/scripts/zfs-fuse-sandbox.sh" "$0" --side zfs-fuse "$work"
fi

python3 - "$work" <<'EOF'
import json, os, sys
work = sys.argv[1]
rows = [("seq-write", "seq write 1M", "MiB/s"), ("seq-read", "seq read 1M (cold)", "MiB/s"),
        ("rand-read-1", "rand read 4K, 1 job", "IOPS"), ("rand-read-4", "rand read 4K, 4 jobs", "IOPS"),
        ("rand-write-1", "rand write 4K, 1 job", "IOPS"), ("rand-write-4", "rand write 4K, 4 jobs", "IOPS"),
        ("rand-write-4-files", "rand write 4K, 4 jobs, 4 files", "IOPS"),
        ("sync-write-1", "sync write 4K+fsync, 1 job", "IOPS"),
        ("sync-write-4", "sync write 4K+fsync, 4 jobs", "IOPS"),
        ("small-files:create", "small files: create", "files/s"),
        ("small-files:stat", "small files: stat", "files/s"),
        ("small-files:delete", "small files: delete", "files/s")]
def job(side, key):
    name, _, jobname = key.partition(":")
    p = os.path.join(work, side + "-results", name + ".json")
    if jobname and os.path.exists(os.path.join(work, side + "-results", name + "-" + jobname + ".json")):
        p = os.path.join(work, side + "-results", name + "-" + jobname + ".json")
    if not os.path.exists(p):
        return None
    with open(p) as f:
        text = f.read()
    r = json.loads(text[text.index("{"):])
    for j in r["jobs"]:
        if not jobname or j["jobname"] == jobname:
            return j
    return None
def value(side, key, unit):
    j = job(side, key)
    if j is None:
        return None
    if unit == "MiB/s":
        return (j["read"]["bw"] + j["write"]["bw"]) / 1024.0
    return j["read"]["iops"] + j["write"]["iops"]
# Median completion latency (us) of the direction that did the work: less
# swayed than the mean rate by a busy machine's stalls.
def median(side, key):
    j = job(side, key)
    if j is None:
        return None
    d = j["read"] if j["read"]["iops"] >= j["write"]["iops"] else j["write"]
    p = d.get("clat_ns", {}).get("percentile", {}).get("50.000000")
    return None if p is None else p / 1000.0
# A row measured over less than 2 s (e.g. 5000 small files) swings with the
# machine's load more than uzfs and zfs-fuse differ: marked, not trusted.
def short(side, key):
    j = job(side, key)
    if j is None or not key.startswith("small-files"):
        return False
    d = j["read"] if j["read"]["iops"] >= j["write"]["iops"] else j["write"]
    return d.get("runtime", 0) < 2000
print(f"{'row':30} {'unit':8} {'uzfs':>10} {'zfs-fuse':>10} {'ratio':>7}   {'p50 us':>8} {'p50 us':>8}")
for key, label, unit in rows:
    u, z = value("uzfs", key, unit), value("zfs-fuse", key, unit)
    if u is None and z is None:
        continue
    fmt = lambda v: "-" if v is None else f"{v:.1f}" if v < 100 else f"{v:.0f}"
    ratio = f"{u / z:.2f}x" if u is not None and z else "-"
    mu, mz = median("uzfs", key), median("zfs-fuse", key)
    note = "  short (< 2 s)" if short("uzfs", key) or short("zfs-fuse", key) else ""
    print(f"{label:30} {unit:8} {fmt(u):>10} {fmt(z):>10} {ratio:>7}   {fmt(mu):>8} {fmt(mz):>8}{note}")
EOF
