#!/usr/bin/env bash
# What one fsync costs the daemon, in counts rather than wall time (which
# a shared machine makes unreliable): N single-threaded 4 KiB pwrite+fsync
# on one file of a uzfs raidz2 (six files) with a log device (a file), with
# `perf stat` attached to uzfsd; prints context switches, syscalls and CPU
# milliseconds per fsync, and the wall time.
#
#   scripts/fsync-cost.sh [N]          (default 2000; needs root and perf)
# Environment: UZFS_BIN (directory holding zpool and uzfsd, or the build's
# cmd/ directory; default build/cmd), WORKDIR; OP=xattr: each step is a
# setxattr of a 64-byte value (a system attribute) + fsync instead of the
# pwrite; POOL_VERSION=N: zpool create -o version=N (28: SA xattrs
# without org.openzfs:zilsaxattr, so the fsync waits for a txg); the txgs
# synced during the run are printed too.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-2000}
[ "$(id -u)" -eq 0 ] || { echo "fsync-cost: needs root" >&2; exit 1; }
bin=${UZFS_BIN:-$here/build/cmd}
zpool_bin=$bin/zpool/zpool
[ -f "$bin/zpool" ] && zpool_bin=$bin/zpool
work=${WORKDIR:-$(mktemp -d /var/tmp/uzfs-fsync.XXXXXX)}
export UZFS_RUNDIR=$work/run UZFS_AUTOMOUNT=1
pid=
cleanup() {
  "$zpool_bin" destroy fsyncbench 2>/dev/null || true
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/devs" "$work/mnt"
devs=()
for i in 0 1 2 3 4 5; do truncate -s 512M "$work/devs/d$i"; devs+=("$work/devs/d$i"); done
truncate -s 1G "$work/devs/slog"
vopt=()
[ -n "${POOL_VERSION:-}" ] && vopt=(-o "version=$POOL_VERSION")
"$zpool_bin" create -f "${vopt[@]}" -m "$work/mnt" fsyncbench raidz2 "${devs[@]}" log "$work/devs/slog"
for _ in $(seq 1 100); do mountpoint -q "$work/mnt" && break; sleep 0.1; done
pid=$(cat "$UZFS_RUNDIR/uzfsd.pid")
# The first fsync starts the log (a txg sync): not counted.
python3 -c 'import os,sys; fd=os.open(sys.argv[1],os.O_CREAT|os.O_WRONLY,0o644); os.write(fd,b"x"*4096); os.fsync(fd)' "$work/mnt/f"
perf stat -e context-switches,task-clock,raw_syscalls:sys_enter -x, -o "$work/stat.csv" -p "$pid" &
sp=$!
sleep 0.5
# The pool's uberblock txg (zpool get -j prints it).
txgs() { "$zpool_bin" get -j health fsyncbench | python3 -c 'import json,sys; print(json.load(sys.stdin)["pools"]["fsyncbench"]["txg"])'; }
txg0=$(txgs)
t0=$(date +%s.%N)
python3 - "$work/mnt/f" "$n" "${OP:-write}" <<'PY'
import os, random, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
b = os.urandom(4096)
for i in range(int(sys.argv[2])):
    if sys.argv[3] == "xattr":
        os.setxattr(fd, "user.k%d" % (i % 8), b[:64])
    else:
        os.pwrite(fd, b, random.randrange(0, 8192) * 4096)
    os.fsync(fd)
PY
t1=$(date +%s.%N)
txg1=$(txgs)
kill -INT "$sp"; wait "$sp" || true
python3 - "$work/stat.csv" "$n" "$t0" "$t1" "$txg0" "$txg1" <<'PY'
import sys
v = {}
for line in open(sys.argv[1]):
    f = line.strip().split(",")
    if len(f) > 2 and f[0] and not line.startswith("#"):
        try: v[f[2]] = float(f[0])
        except ValueError: pass
n = int(sys.argv[2])
print(f"{n} fsyncs in {float(sys.argv[4]) - float(sys.argv[3]):.2f} s: per fsync "
      f"{v.get('context-switches', 0) / n:.1f} context switches, "
      f"{v.get('raw_syscalls:sys_enter', 0) / n:.1f} syscalls, "
      f"{v.get('task-clock', 0) / n * 1000:.0f} us of uzfsd CPU; "
      f"{int(sys.argv[6]) - int(sys.argv[5])} txgs synced")
PY
