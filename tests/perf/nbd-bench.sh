#!/usr/bin/env bash
# uzfs over NBD against uzfs over files, same machine, same run: a raidz2
# pool of six sparse files, then a raidz2 pool of six NBD exports of such
# files (nbdkit's file plugin, one server per export on a Unix socket), each
# put through fio's sequential write, cold sequential read, 4 KiB random
# reads, and one reader's 128 KiB random record reads for their latency
# (tests/perf/fio/). Prints each row's figure on both sides and the ratio
# nbd / files, and the latency the NBD leaf adds per read: what the NBD
# leaf costs when the network is no limit.
#
#   tests/perf/nbd-bench.sh
#
# Environment: FIO_SIZE (default 1G), FIO_RUNTIME (seconds of random reads,
# default 20), FIO_JOBS (random readers, default 4), DEV_SIZE (per file,
# default 2G), UZFS_BIN (directory holding zpool, default build/cmd/zpool),
# NBD_SERVER (nbdkit, the default, or qemu-nbd: O_DIRECT reads and writes
# of its file through io_uring, --cache=none --aio=io_uring, so the server
# copies nothing through the page cache).
# Root (FUSE, drop_caches). Everything lives in a new directory under
# /var/tmp, removed at the end; the daemon and the servers it starts are
# stopped by their PIDs.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
jobs=$here/tests/perf/fio
zpool_bin=${UZFS_BIN:-$here/build/cmd/zpool}/zpool
[ -x "$zpool_bin" ] || zpool_bin=$here/build/cmd/zpool/zpool
export FIO_SIZE=${FIO_SIZE:-1G} FIO_RUNTIME=${FIO_RUNTIME:-20} FIO_JOBS=${FIO_JOBS:-4}
dev_size=${DEV_SIZE:-2G}
server=${NBD_SERVER:-nbdkit}
case $server in
  nbdkit) ;;
  qemu-nbd) command -v qemu-nbd >/dev/null || { echo "NBD_SERVER=qemu-nbd needs qemu-nbd (Debian's qemu-utils)" >&2; exit 1; } ;;
  *) echo "NBD_SERVER must be nbdkit or qemu-nbd, not '$server'" >&2; exit 2 ;;
esac
work=$(mktemp -d /var/tmp/uzfs-nbd-bench.XXXXXX)
export UZFS_RUNDIR=$work/run UZFS_AUTOMOUNT=1
servers=()
cleanup() {
  "$zpool_bin" destroy nbdbench >/dev/null 2>&1 || true
  for p in "${servers[@]}"; do { kill -9 "$p" && wait "$p"; } 2>/dev/null || true; done
  if [ -f "$UZFS_RUNDIR/uzfsd.pid" ]; then kill "$(cat "$UZFS_RUNDIR/uzfsd.pid")" 2>/dev/null || true; fi
  sleep 1
  case $work in /var/tmp/uzfs-nbd-bench.*) rm -rf "$work" ;; esac
}
trap cleanup EXIT

# fio's figure for one job: MiB/s (bw) or IOPS, summed over its jobs, or
# the mean completion latency in microseconds (lat).
run_fio() {  # job-file bw|iops|lat
  FIO_DIR=$work/mnt fio --output-format=json "$jobs/$1" > "$work/out.json"
  python3 -c "
import json,sys
j=json.load(open('$work/out.json'))
side='write' if '$1'.startswith('seq-write') else 'read'
if '$2'=='lat':
    print(round(j['jobs'][0][side]['clat_ns']['mean']/1000))
else:
    v=sum(x[side]['$2'] for x in j['jobs'])
    print(round(v/1024) if '$2'=='bw' else round(v))"
}

cold() {  # export, drop the page cache, import: reads start from the leaves
  "$zpool_bin" export nbdbench
  sync; echo 3 > /proc/sys/vm/drop_caches
  local d=()
  for dev in "$@"; do d+=(-d "$dev"); done
  "$zpool_bin" import "${d[@]}" nbdbench
}

side() {  # files|nbd -> "seqwrite seqread randread latency"
  local kind=$1 devs=()
  mkdir -p "$work/$kind"
  for i in 0 1 2 3 4 5; do
    truncate -s "$dev_size" "$work/$kind/d$i"
    if [ "$kind" = nbd ]; then
      if [ "$server" = qemu-nbd ]; then
        qemu-nbd --persistent --shared=16 --cache=none --aio=io_uring --discard=unmap -f raw \
          -k "$work/$kind/s$i" "$work/$kind/d$i" > "$work/$kind/server$i.log" 2>&1 &
      else
        nbdkit --foreground -U "$work/$kind/s$i" file "$work/$kind/d$i" > "$work/$kind/server$i.log" 2>&1 &
      fi
      servers+=($!)
      devs+=("nbd+unix:///?socket=$work/$kind/s$i")
    else
      devs+=("$work/$kind/d$i")
    fi
  done
  [ "$kind" = nbd ] && for i in 0 1 2 3 4 5; do
    for _ in $(seq 100); do [ -S "$work/$kind/s$i" ] && break; sleep 0.05; done
  done
  mkdir -p "$work/mnt"
  "$zpool_bin" create -f -m "$work/mnt" nbdbench raidz2 "${devs[@]}"
  local w r rr
  w=$(run_fio seq-write.fio bw)
  cold "${devs[@]}"
  r=$(run_fio seq-read.fio bw)
  FIO_RUNTIME=1 run_fio rand-read.fio iops > /dev/null  # lays the file out
  cold "${devs[@]}"
  rr=$(run_fio rand-read.fio iops)
  # One reader, one read at a time, each a record no read asked for
  # before: the time of a read that misses every cache (FUSE, the daemon,
  # a 128 KiB record from four leaves at once); nbd minus files is what
  # the NBD leaf adds to each.
  cold "${devs[@]}"
  lat=$(run_fio rand-read-record.fio lat)
  "$zpool_bin" destroy nbdbench
  echo "$w $r $rr $lat"
}

# Both sides in this shell (not a subshell), so the servers side() starts
# are in `servers` for cleanup to stop.
side files > "$work/row"; read -r fw fr frr fl < "$work/row"
side nbd > "$work/row"; read -r nw nr nrr nl < "$work/row"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? a / b : 0 }'; }
printf '| row | files | nbd | nbd / files |\n|---|---:|---:|---:|\n'
printf '| seq write 1M, MiB/s | %s | %s | %s |\n' "$fw" "$nw" "$(ratio "$nw" "$fw")"
printf '| seq read 1M cold, MiB/s | %s | %s | %s |\n' "$fr" "$nr" "$(ratio "$nr" "$fr")"
printf '| rand read 4K, %s jobs cold, IOPS | %s | %s | %s |\n' "$FIO_JOBS" "$frr" "$nrr" "$(ratio "$nrr" "$frr")"
printf '| rand read 128K records, 1 job cold, mean latency us | %s | %s | %s |\n' "$fl" "$nl" "$(ratio "$nl" "$fl")"
printf 'latency the NBD leaf adds to a read from the leaves: %s us\n' "$((nl - fl))"
