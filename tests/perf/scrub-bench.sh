#!/usr/bin/env bash
# Scrub speed against the devices' own read speed, in one run: a raidz2
# pool over six sparse 2 GiB files, FILL (default 2G) of incompressible
# data written through the mount in 1 MiB writes (128 KiB records), the
# pool exported and imported with the page cache dropped, then
#   scrub:  zpool scrub -w, bytes examined (all copies and parity) / time;
#   raw:    the same number of bytes read straight from the six files, one
#           sequential reader per file, page cache dropped first.
# Prints both rates and their ratio. FRAGMENTED=1 writes 16 KiB records
# instead, by four writers at once (their blocks interleave on the disks).
#
# SLOW=MS:LANES makes every device a slow disk (zinject -D: each I/O
# takes MS milliseconds more, LANES at a time) and compares, in the same
# run, the sorted scan with the unsorted one (the scan_legacy tunable)
# instead of the raw read.
#
#   tests/perf/scrub-bench.sh    (needs root and /dev/fuse; UZFS_BIN: one
#                                 directory holding zpool and zfs, default the build tree's)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /var/tmp/uzfs-scrubbench.XXXXXX)
export UZFS_RUNDIR=$work/run UZFS_AUTOMOUNT=1
mnt=$work/mnt
mkdir -p "$mnt" "$work/devs"
devs=()
for i in 0 1 2 3 4 5; do truncate -s 2G "$work/devs/d$i"; devs+=("$work/devs/d$i"); done
zp=${UZFS_BIN:-$here/build/cmd/zpool}/zpool
zfsb=${UZFS_BIN:-$here/build/cmd/zfs}/zfs
cleanup() {
  "$zp" destroy -f scrubbench 2>/dev/null || true
  [ -f "$UZFS_RUNDIR/uzfsd.pid" ] && kill "$(cat "$UZFS_RUNDIR/uzfsd.pid")" 2>/dev/null || true
  sleep 1
  rm -rf "$work"
}
trap cleanup EXIT
fill=${FILL:-2G}
"$zp" create -f -m "$mnt" scrubbench raidz2 "${devs[@]}"
for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
head -c 64M /dev/urandom > "$work/chunk"
count=$(( $(numfmt --from=iec "$fill") / (64 << 20) ))
if [ "${FRAGMENTED:-0}" = 1 ]; then
  "$zfsb" set recordsize=16K scrubbench
  for j in 1 2 3 4; do
    (for i in $(seq "$j" 4 "$count"); do
       dd if="$work/chunk" of="$mnt/f$i" bs=16K status=none
       printf '%s' "$i" | dd of="$mnt/f$i" conv=notrunc status=none
     done) &
  done
  wait
else
  for i in $(seq 1 "$count"); do cp "$work/chunk" "$mnt/f$i"; printf '%s' "$i" | dd of="$mnt/f$i" conv=notrunc status=none; done
fi
"$zp" export scrubbench
sync
echo 3 > /proc/sys/vm/drop_caches
"$zp" import -d "$work/devs" scrubbench
if [ -n "${SLOW:-}" ]; then
  zinj=${UZFS_BIN:-$here/build/cmd/zinject}/zinject
  for d in "${devs[@]}"; do "$zinj" -d "$d" -D "$SLOW" scrubbench >/dev/null; done
  timed_scrub() {
    sync
    echo 3 > /proc/sys/vm/drop_caches
    local a b
    a=$(date +%s.%N)
    "$zp" scrub -w scrubbench
    b=$(date +%s.%N)
    echo "$b - $a" | bc
  }
  sorted=$(timed_scrub)
  "$zp" tunable scan_legacy=1 >/dev/null
  legacy=$(timed_scrub)
  "$zp" tunable scan_legacy=0 >/dev/null
  examined=$("$zp" status -j scrubbench | python3 -c 'import json,sys; j=json.load(sys.stdin); print(next(iter(j["pools"].values()))["scan_stats"]["examined"])')
  awk -v e="$examined" -v s="$sorted" -v l="$legacy" -v slow="$SLOW" 'BEGIN {
    printf "slow disks (zinject -D %s), %.0f MiB examined each time\n", slow, e / 1048576;
    printf "sorted scan:   %.2f s = %.0f MiB/s\n", s, e / s / 1048576;
    printf "unsorted scan: %.2f s = %.0f MiB/s\n", l, e / l / 1048576;
    printf "sorted / unsorted: %.2f\n", l / s }'
  exit 0
fi
t0=$(date +%s.%N)
"$zp" scrub -w scrubbench
t1=$(date +%s.%N)
examined=$("$zp" status -j scrubbench | python3 -c 'import json,sys; j=json.load(sys.stdin); print(next(iter(j["pools"].values()))["scan_stats"]["examined"])')
"$zp" export scrubbench
sync
echo 3 > /proc/sys/vm/drop_caches
per=$(( examined / 6 / (1 << 20) + 1 ))
r0=$(date +%s.%N)
for d in "${devs[@]}"; do dd if="$d" of=/dev/null bs=1M skip=4 count="$per" status=none & done
wait
r1=$(date +%s.%N)
awk -v e="$examined" -v s="$(echo "$t1 - $t0" | bc)" -v r="$(echo "$r1 - $r0" | bc)" -v per="$per" 'BEGIN {
  scrub = e / s / 1048576; raw = per * 6 / r;
  printf "scrub: %.0f MiB examined in %.2f s = %.0f MiB/s\n", e / 1048576, s, scrub;
  printf "raw:   %.0f MiB read in %.2f s = %.0f MiB/s\n", per * 6, r, raw;
  printf "scrub / raw: %.2f\n", scrub / raw }'
