#!/usr/bin/env bash
# The prefetch benchmark: a cold sequential read of a file
# (default 2 GiB) through the FUSE mount, on raidz2 over six sparse files
# each slowed by `zinject -D 5:4` (5 ms per I/O, four at a time: a disk with
# a short queue), with the stream prefetcher on (the default) and off
# (`zpool tunable zfetch_disable=1`), read with `dd bs=$BS iflag=direct` so
# the kernel adds no read-ahead of its own. Cold = after export/import (empty
# ARC) and with the kernel's page cache dropped. Prints MiB/s per run and
# the ratio, plus the arcstats prefetch counters.
#
#   scripts/prefetch-bench.sh [--quick] [--keep]
# Environment: FILE_SIZE (default 2G; --quick 256M), DEV_SIZE (per device,
# default 2G), LATENCY (zinject -D argument, default 5:4), WORKDIR, UZFS_BIN
# (directory holding zpool/zfs/zinject, default build/cmd/*). Needs root.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
quick=0 keep=0
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --keep) keep=1 ;;
    *) echo "usage: $0 [--quick] [--keep]" >&2; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" -eq 0 ] || { echo "prefetch-bench: needs root" >&2; exit 1; }
[ $quick = 1 ] && : "${FILE_SIZE:=256M}" "${DEV_SIZE:=1G}"
FILE_SIZE=${FILE_SIZE:-2G} DEV_SIZE=${DEV_SIZE:-2G} LATENCY=${LATENCY:-5:4} BS=${BS:-128k}
if [ -z "${UZFS_BIN:-}" ]; then UZFS_BIN=$here/build/cmd/zpool; fi
bin_of() {
  local b
  for b in "$UZFS_BIN/$1" "$UZFS_BIN/../$1/$1" "$here/build/cmd/$1/$1"; do
    [ -x "$b" ] && { echo "$b"; return; }
  done
  echo "prefetch-bench: no $1 (make build)" >&2
  exit 1
}
ZPOOL=$(bin_of zpool) ZINJECT=$(bin_of zinject)
zpool() { "$ZPOOL" "$@"; }
work=${WORKDIR:-$(mktemp -d /var/tmp/uzfs-prefetch.XXXXXX)}
mkdir -p "$work"
export UZFS_RUNDIR=$work/run UZFS_AUTOMOUNT=1
pool=pfbench devdir=$work/devs mnt=$work/mnt
cleanup() {
  zpool destroy -f $pool >/dev/null 2>&1 || true
  [ -f "$UZFS_RUNDIR/uzfsd.pid" ] && kill "$(cat "$UZFS_RUNDIR/uzfsd.pid")" 2>/dev/null || true
  [ $keep = 1 ] && echo "work directory kept: $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$devdir" "$mnt"
devs=()
for i in 0 1 2 3 4 5; do truncate -s "$DEV_SIZE" "$devdir/d$i"; devs+=("$devdir/d$i"); done
wait_mount() {
  for _ in $(seq 1 100); do mountpoint -q "$mnt" && return; sleep 0.1; done
  echo "prefetch-bench: pool did not mount at $mnt" >&2; exit 1
}
zpool create -f -m "$mnt" -O compression=off $pool raidz2 "${devs[@]}"
wait_mount
bytes=$(numfmt --from=iec "$FILE_SIZE")
head -c "$bytes" /dev/urandom >"$mnt/big"
sync
cold_read() {  # cold_read <label>: MiB/s of one sequential pass
  zpool export $pool
  sync; echo 3 >/proc/sys/vm/drop_caches
  zpool import -d "$devdir" $pool
  wait_mount
  for d in "${devs[@]}"; do "$ZINJECT" -d "$d" -D "$LATENCY" $pool >/dev/null; done
  local t0 t1
  t0=$(date +%s.%N)
  dd if="$mnt/big" of=/dev/null bs=$BS iflag=direct status=none
  t1=$(date +%s.%N)
  "$ZINJECT" -c all >/dev/null 2>&1 || true
  local rate
  rate=$(python3 -c "print(f'{$bytes / 1048576 / ($t1 - $t0):.1f}')")
  local pf
  pf=$(zpool arcstats 2>/dev/null | awk '$1 ~ /^(prefetch_data_misses|demand_hit_predictive_prefetch)$/ {printf "%s=%s ", $1, $3}')
  echo "$1 $rate $pf"
}
on=$(cold_read prefetch-on)
zpool tunable zfetch_disable=1 >/dev/null
off=$(cold_read prefetch-off)
zpool tunable zfetch_disable=0 >/dev/null
python3 - "$on" "$off" "$FILE_SIZE" "$LATENCY" <<'PY'
import sys
on, off, size, lat = sys.argv[1].split(), sys.argv[2].split(), sys.argv[3], sys.argv[4]
print(f"cold sequential read of {size}, raidz2 6 x zinject -D {lat}")
print(f"{'prefetch':10} {'MiB/s':>8}")
print(f"{'on':10} {on[1]:>8}   {' '.join(on[2:])}")
print(f"{'off':10} {off[1]:>8}   {' '.join(off[2:])}")
print(f"ratio on/off: {float(on[1]) / float(off[1]):.2f}x")
PY
