#!/usr/bin/env bash
# Round trips and daemon CPU of one FUSE-bound phase, per operation: on a
# fresh raidz2 pool (six sparse files), the phase (PHASE, default delete)
# runs under the kernel's FUSE tracepoints (fuse:fuse_request_send /
# fuse_request_end, Linux >= 6.x) on the mount's connection. Prints fio's
# rate and percentiles, the daemon's user/sys CPU per operation, the
# wake-ups of fio and of the daemon's threads and fio's CPU per operation
# (sched:sched_wakeup) and, per request type, count and send-to-reply
# latency.
#
# Phases:
#   create, stat, delete  fio's small-files phases (NRFILES files); the
#                         ones before PHASE run first, then a pause of
#                         PAUSE seconds (default 1; syncfs(2) does not
#                         reach a FUSE daemon, so this is the only way to
#                         let a txg go by) and until the daemon has been
#                         idle for a second.
#   read                  4 KiB random O_DIRECT reads, one job, RUNTIME
#                         seconds (default 8), of a 256 MiB file the
#                         daemon's cache already holds (written, then read
#                         once whole): each read is a READ request answered
#                         from memory, the bare round trip.
#
#   [PHASE=...] scripts/fuse-roundtrips.sh [uzfs|zfs-fuse] [NRFILES]   (default uzfs 50000)
#
# Needs root and perf. zfs-fuse runs in its sandbox (zfs-fuse-sandbox.sh).
# UZFS_BIN: directory of zpool (default build/cmd/zpool); other UZFS_*
# variables reach the daemon (UZFS_FUSE_URING=1 compares the transports).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
side=${1:-uzfs} n=${2:-50000}
if [ "$side" = zfs-fuse ] && [ "${3:-}" != --inside ]; then
  exec "$here/scripts/zfs-fuse-sandbox.sh" "$0" zfs-fuse "$n" --inside
fi
work=$(mktemp -d /var/tmp/uzfs-rt.XXXXXX)
export UZFS_RUNDIR=$work/run UZFS_AUTOMOUNT=1
mnt=$work/mnt
mkdir -p "$mnt" "$work/devs"
devs=()
for i in 0 1 2 3 4 5; do truncate -s 2G "$work/devs/d$i"; devs+=("$work/devs/d$i"); done
if [ "$side" = uzfs ]; then
  zp=${UZFS_BIN:-$here/build/cmd/zpool}/zpool pool=rtbench
else
  zp=/usr/sbin/zpool pool=rtzf
fi
cleanup() {
  "$zp" destroy "$pool" 2>/dev/null || "$zp" destroy -f "$pool" 2>/dev/null || true
  if [ "$side" = uzfs ] && [ -f "$UZFS_RUNDIR/uzfsd.pid" ]; then kill "$(cat "$UZFS_RUNDIR/uzfsd.pid")" 2>/dev/null || true; fi
  # The FUSE loop's counters over the whole run (uzfsd logs them at unmount).
  if [ "$side" = uzfs ]; then grep -h "unmounted" "$UZFS_RUNDIR/uzfsd.log" 2>/dev/null | sed 's/^/uzfsd: /' || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
"$zp" create -f -m "$mnt" "$pool" raidz2 "${devs[@]}" 2>/dev/null
for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
job=$here/tests/perf/fio/small-files.fio
export FIO_DIR=$mnt FIO_NRFILES=$n FIO_STAT_LOOPS=${FIO_STAT_LOOPS:-1}
phase=${PHASE:-delete}
before=()
run=(fio --section="$phase" --output-format=json --output="$work/phase.json" "$job")
case $phase in
  create) ;;
  stat | delete) before=(--section=create --section=stat) ;;
  read)
    fio --name=lay --filename="$mnt/read.dat" --rw=write --bs=1M --size=256M --output=/dev/null
    fio --name=warm --filename="$mnt/read.dat" --rw=read --bs=1M --size=256M --direct=1 --output=/dev/null
    run=(fio --name=read --filename="$mnt/read.dat" --rw=randread --bs=4k --direct=1 --size=256M
         --time_based --runtime="${RUNTIME:-8}" --output-format=json --output="$work/phase.json")
    ;;
  *) echo "fuse-roundtrips: PHASE is create, stat, delete or read" >&2; exit 2 ;;
esac
if [ ${#before[@]} -gt 0 ]; then
  fio "${before[@]}" --output-format=terse "$job" | awk -F';' '{print $3": "$8+$49" files/s"}'
fi
if [ "$side" = uzfs ]; then dpid=$(cat "$UZFS_RUNDIR/uzfsd.pid"); else dpid=$(pgrep -n zfs-fuse); fi
sleep "${PAUSE:-1}"
# Then until the daemon has been idle for a second (as fio-compare.sh's
# settle): the txg writing the earlier phases' files must not share the CPUs
# with the traced phase.
"$here/scripts/wait-idle.sh" "$dpid"
read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$dpid/stat")
perf record -q -o "$work/perf.data" -e fuse:fuse_request_send -e fuse:fuse_request_end -e sched:sched_wakeup -a -- \
  "${run[@]}" >/dev/null
read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$dpid/stat")
dev=$(stat -c %d "$mnt")
perf script -i "$work/perf.data" 2>/dev/null >"$work/trace.txt"
python3 - "$work/phase.json" "$work/trace.txt" $(( (dev & 0xff) | ((dev >> 12) & 0xfff00) )) \
  $((u1 - u0)) $((s1 - s0)) "$(getconf CLK_TCK)" "$phase" <<'PY'
import collections, json, re, sys
text = open(sys.argv[1]).read()
job = json.loads(text[text.index("{"):])["jobs"][0]
phase = sys.argv[7]
j = job["write" if phase == "create" else "read"]
conn, du, ds, hz = sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
n = j["total_ios"]
p = j["clat_ns"]["percentile"]
unit = "read" if phase == "read" else "file"
print(f"{phase}: {j['iops']:.0f} {unit}s/s ({n} {unit}s), clat p50 {p['50.000000']/1e3:.1f} us, "
      f"p99 {p['99.000000']/1e3:.1f} us, mean {j['clat_ns']['mean']/1e3:.1f} us; "
      f"daemon CPU per {unit}: user {du*1e6/hz/n:.1f} us, sys {ds*1e6/hz/n:.1f} us")
wake = collections.Counter()
wpat = re.compile(r"sched:sched_wakeup: (?:comm=)?(\S+?)[:\s]")
sent, lat = {}, collections.defaultdict(list)
pat = re.compile(r"(\d+\.\d+):\s+fuse:fuse_request_(send|end): connection (\d+) req (\d+)(?: opcode \d+ \((\w+)\))?")
for line in open(sys.argv[2]):
    if "sched_wakeup" in line:
        w = wpat.search(line)
        if w:
            wake[w.group(1)] += 1
        continue
    m = pat.search(line)
    if not m or m.group(3) != conn:
        continue
    t, kind, req, op = float(m.group(1)), m.group(2), m.group(4), m.group(5)
    if kind == "send":
        sent[req] = (t, op)
    elif req in sent:
        t0, op = sent.pop(req)
        lat[op].append((t - t0) * 1e6)
print(f"wake-ups per {unit}: fio {wake['fio']/n:.2f}, daemon threads {(wake['uzfsd']+wake['zfs-fuse'])/n:.2f}; "
      f"fio CPU per {unit} {(job['usr_cpu']+job['sys_cpu'])/100*job['job_runtime']*1e3/n:.1f} us")
for req, (_, op) in sent.items():  # no reply (FORGET)
    lat[op].append(None)
for req_op, v in sorted(lat.items(), key=lambda x: -len(x[1])):
    w = sorted(x for x in v if x is not None)
    s = f"  p50 {w[len(w)//2]:.0f} us, mean {sum(w)/len(w):.0f} us" if w else "  (no reply)"
    print(f"{req_op:18} {len(v)/n:5.2f} per {unit}{s}")
PY
