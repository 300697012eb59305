#!/usr/bin/env bash
# Same-run A/B of one fio row on uzfs for two builds: alternates the two
# builds' runs (A B A B ...) of scripts/fio-compare.sh --only uzfs on the
# same layout, so both see the same machine load, and prints each run's
# rate, fio's median completion latency, and after the row (seq-write
# only) uzfsd's CPU seconds since it started and each leaf's mean write
# size from `zpool iostat -vp`.
#
#   scripts/fio-ab.sh A_BIN B_BIN [--layout raidz2|mirror|2mirror] [--row NAME] [--rounds N]
#
# A_BIN / B_BIN: directories holding zpool (uzfsd next to it or in
# ../uzfsd/), e.g. an older build's build/cmd/zpool. Environment as for
# fio-compare.sh (FIO_SIZE, DEV_SIZE, ...). Needs root.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { echo "usage: $0 A_BIN B_BIN [--layout L] [--row NAME] [--rounds N]" >&2; exit 2; }
a=$1 b=$2
shift 2
layout=mirror row=seq-write rounds=3
while [ $# -gt 0 ]; do
  case $1 in
    --layout) layout=$2; shift ;;
    --row) row=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    *) echo "usage: $0 A_BIN B_BIN [--layout L] [--row NAME] [--rounds N]" >&2; exit 2 ;;
  esac
  shift
done
echo "layout $layout, row $row, $rounds rounds; $(uptime)"
for r in $(seq 1 "$rounds"); do
  for side in A B; do
    bin=$a
    [ $side = B ] && bin=$b
    work=$(mktemp -d /var/tmp/uzfs-fio-ab.XXXXXX)
    WORKDIR=$work UZFS_BIN=$bin "$here/scripts/fio-compare.sh" --only uzfs --rows "$row" \
      --layout "$layout" --keep >/dev/null 2>"$work.log" || { cat "$work.log" >&2; exit 1; }
    python3 - "$work" "$row" "$side" "$r" <<'PY'
import json, os, sys
work, row, side, rnd = sys.argv[1:]
res = os.path.join(work, "uzfs-results")
with open(os.path.join(res, row + ".json")) as f:
    text = f.read()
j = json.loads(text[text.index("{"):])["jobs"][0]
d = j["write"] if j["write"]["iops"] >= j["read"]["iops"] else j["read"]
mib = (j["read"]["bw"] + j["write"]["bw"]) / 1024.0
p50 = d.get("clat_ns", {}).get("percentile", {}).get("50.000000", 0) / 1000.0
leaves = ""
ios = os.path.join(res, row + ".iostat")
if os.path.exists(ios):
    # Leaf lines of `zpool iostat -vp`: name alloc free rops wops rbw wbw,
    # rates since import; wbw / wops is the leaf's mean write size.
    for line in open(ios):
        f = line.split()
        if len(f) >= 7 and f[0].startswith("/") and f[4].isdigit() and int(f[4]) > 0:
            leaves += f" {os.path.basename(f[0])}:{int(f[6]) / int(f[4]) / 1024:.0f}KiB/write"
cpu = ""
cp = os.path.join(res, row + ".cpu")
if os.path.exists(cp):
    cpu = f"  uzfsd cpu {float(open(cp).read()):6.2f} s"
print(f"round {rnd} {side}: {mib:8.1f} MiB/s  p50 {p50:8.0f} us{cpu} {leaves}")
PY
    rm -rf "$work" "$work.log"
  done
done
echo "$(uptime)"
