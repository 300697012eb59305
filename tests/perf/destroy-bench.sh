#!/usr/bin/env bash
# What `zfs destroy` of a big file system costs, with the blocks freed in
# the background (feature async_destroy, the default on new pools) and
# with them freed before the command returns (the feature disabled), on
# two sparse 8 GiB files, the file systems mounted:
#   each file system holds SIZE MiB (default 1024) of incompressible data
#   at recordsize=16K (65,536 blocks a GiB);
#   printed: seconds for `zfs destroy` to return, and for `zpool wait -t
#   free` to return after it (the space back); bar: the async destroy
#   returns in under a second whatever the size.
#
#   tests/perf/destroy-bench.sh   (needs root and /dev/fuse; UZFS_BIN: one
#                                  directory holding zpool and zfs, default the build tree's)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /var/tmp/uzfs-destroybench.XXXXXX)
export UZFS_RUNDIR=$work/run UZFS_AUTOMOUNT=1
mkdir -p "$work/devs" "$work/mnt-a" "$work/mnt-s"
truncate -s 8G "$work/devs/a" "$work/devs/s"
zp=${UZFS_BIN:-$here/build/cmd/zpool}/zpool
zfsb=${UZFS_BIN:-$here/build/cmd/zfs}/zfs
cleanup() {
  "$zp" destroy -f dba 2>/dev/null || true
  "$zp" destroy -f dbs 2>/dev/null || true
  [ -f "$UZFS_RUNDIR/uzfsd.pid" ] && kill "$(cat "$UZFS_RUNDIR/uzfsd.pid")" 2>/dev/null || true
  sleep 1
  rm -rf "$work"
}
trap cleanup EXIT
size=${SIZE:-1024}
# shellcheck source=tests/perf/bench-lib.sh
source "$here/tests/perf/bench-lib.sh"  # now, secs, fill, $work/chunk
"$zp" create -f -m "$work/mnt-a" dba "$work/devs/a"
"$zp" create -f -o feature@async_destroy=disabled -m "$work/mnt-s" dbs "$work/devs/s"
for pool in dba dbs; do
  "$zfsb" create -o recordsize=16K "$pool/big"
  mnt=$work/mnt-${pool#db}/big
  for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
  fill "$mnt" "$size"
  sync -f "$mnt/fill0"
done
for pool in dba dbs; do
  t0=$(now)
  "$zfsb" destroy "$pool/big"
  t1=$(now)
  "$zp" wait -t free "$pool"
  t2=$(now)
  what=$([ "$pool" = dba ] && echo "async destroy (default)" || echo "async_destroy disabled ")
  echo "$what of $size MiB at 16K: destroy returned in $(secs $((t1 - t0))) s, space back after $(secs $((t2 - t0))) s"
done
