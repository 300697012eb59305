#!/usr/bin/env bash
# uzfsd's CPU for one sequential write: a raidz2 pool over six sparse 4 GiB
# files in a private run directory, tests/perf/fio/seq-write.fio with
# FIO_SIZE (default 1G), then fio's rate and uzfsd's user and sys CPU
# seconds (from /proc) for it. PERF=FILE records `perf record -g` of
# uzfsd over the write into FILE (perf report -i FILE --no-children).
#
#   scripts/seq-write-cpu.sh            (needs root and fio; UZFS_BIN as in fio-compare.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /var/tmp/uzfs-seqcpu.XXXXXX)
export UZFS_RUNDIR=$work/run UZFS_AUTOMOUNT=1
mnt=$work/mnt
mkdir -p "$mnt" "$work/devs"
devs=()
for i in 0 1 2 3 4 5; do truncate -s 4G "$work/devs/d$i"; devs+=("$work/devs/d$i"); done
zp=${UZFS_BIN:-$here/build/cmd/zpool}/zpool
cleanup() {
  "$zp" destroy -f seqcpu 2>/dev/null || true
  [ -f "$UZFS_RUNDIR/uzfsd.pid" ] && kill "$(cat "$UZFS_RUNDIR/uzfsd.pid")" 2>/dev/null || true
  sleep 1
  rm -rf "$work"
}
trap cleanup EXIT
"$zp" create -f -m "$mnt" seqcpu raidz2 "${devs[@]}"
for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
dpid=$(cat "$UZFS_RUNDIR/uzfsd.pid")
hz=$(getconf CLK_TCK)
read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$dpid/stat")
run=(env FIO_DIR="$mnt" FIO_SIZE="${FIO_SIZE:-1G}" fio --output-format=terse "$here/tests/perf/fio/seq-write.fio")
if [ -n "${PERF:-}" ]; then run=(perf record -q -g -o "$PERF" -p "$dpid" -- "${run[@]}"); fi
"${run[@]}" | awk -F';' '{printf "seq write: %.0f MiB/s\n", $48 / 1024}'
read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$dpid/stat")
awk -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v hz="$hz" 'BEGIN { printf "uzfsd CPU: user %.2f s, sys %.2f s\n", u / hz, s / hz }'
