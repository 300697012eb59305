#!/usr/bin/env bash
# `make demo-nbd`: a pool whose disks are on other machines, reached over
# the Network Block Device protocol, and the loss of one of those machines.
#
# Three "machines" on this one (scripts/nbd-host.sh: each a network
# namespace behind a veth pair, with nbdkit serving two 1 GiB sparse files
# as exports d0 and d1) give six disks to a raidz2 pool: any two disks may
# be lost, so any one machine. /usr/share/doc is copied in through the
# FUSE mount and checked; the pool is exported and found again from the
# three servers alone (`zpool import -d nbd://ADDR/` searches every export
# a server lists). Machine B drops off the network (its end of the link
# goes down) while a second copy is being written: the copy completes, the
# pool is DEGRADED, and both copies read back right from parity. B comes
# back; `zpool online` returns its two disks and the resilver writes what
# they missed; a scrub and a last check end it. A private daemon (its own
# run directory) does it all; everything is removed afterwards.
#
#   scripts/demo-nbd.sh [--prepare] [BUILD_DIR]
#
# --prepare (what `make demo-nbd` passes) first installs the Debian packages
# that are missing and builds the three programs the demo runs, writing
# their output to BUILD_DIR/demo-prepare.log and one line per step here.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
prepare=0
if [ "${1:-}" = "--prepare" ]; then prepare=1; shift; fi
build=${1:-build}
cmd=$build/cmd
programs=(uzfsd zpool zfs)

# shellcheck source=scripts/demo-lib.sh
source "$here/scripts/demo-lib.sh"
if [ "$prepare" -eq 1 ]; then demo_prepare demo-nbd "$build" "${programs[@]}"; fi
[ "$(id -u)" -eq 0 ] || { echo "demo-nbd: needs root (network namespaces, FUSE mounts)" >&2; exit 1; }

work=$(mktemp -d /tmp/uzfs-demo-nbd.XXXXXX)
# A machine that stops answering fails its requests after 5 s here (the
# daemon's default is 30 s), so the demo does not wait long on it.
export UZFS_RUNDIR=$work/run UZFS_AUTOMOUNT=1 UZFS_NBD_TIMEOUT_S=5
zpool() { "$cmd/zpool/zpool" "$@"; }
zfs() { "$cmd/zfs/zfs" "$@"; }
hosts=(A B C)
cleanup() {
  zpool destroy -f tank >/dev/null 2>&1 || true
  demo_stop "$work"
  for h in "${hosts[@]}"; do
    [ -d "$work/$h" ] && bash "$here/scripts/nbd-host.sh" down "$work/$h"
  done
  rm -rf "$work"
}
trap cleanup EXIT

step "three machines, each serving two 1 GiB disks over NBD (nbdkit)"
declare -A uri
for h in "${hosts[@]}"; do
  mkdir -p "$work/$h/exports"
  truncate -s 1G "$work/$h/exports/d0" "$work/$h/exports/d1"
  bash "$here/scripts/nbd-host.sh" up "$work/$h"
  uri[$h]=$(cat "$work/$h/uri")
  echo "machine $h: ${uri[$h]}d0 and ${uri[$h]}d1 (network namespace $(sed -n 's/^ns=//p' "$work/$h/names"))"
done

step "a raidz2 pool over the six exports: any two disks, so any one machine, may go"
run zpool create -m "$work/mnt" tank raidz2 \
  "${uri[A]}d0" "${uri[A]}d1" "${uri[B]}d0" "${uri[B]}d1" "${uri[C]}d0" "${uri[C]}d1"
run zfs create -o compression=lz4 tank/data
run zfs mount

src=/usr/share/doc
step "copy $src ($(du -sh "$src" | cut -f1), $(find "$src" | wc -l) entries) in with cp -a"
time cp -a "$src" "$work/mnt/data/doc"
run zpool sync tank
run zpool status tank

verify() {
  (cd "$src" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum) >"$work/want.sha"
  for copy in "$@"; do
    (cd "$work/mnt/data/$copy" && sha256sum --quiet -c "$work/want.sha") ||
      { echo "demo-nbd: $copy differs from $src" >&2; exit 1; }
    echo "tank/data/$copy: $(wc -l <"$work/want.sha") files identical to $src (sha256)"
  done
}
verify doc

step "export, then find the pool from the three servers alone (each lists its exports)"
run zpool export tank
run zpool import -d "${uri[A]}" -d "${uri[B]}" -d "${uri[C]}"
run zpool import -d "${uri[A]}" -d "${uri[B]}" -d "${uri[C]}" tank
verify doc

step "machine B drops off the network while a second copy is being written"
cp -a "$src" "$work/mnt/data/doc2" &
copier=$!
sleep 1
echo "\$ nbd-host.sh cut B    # B's end of its link goes down: its connections go silent"
bash "$here/scripts/nbd-host.sh" cut "$work/B"
wait "$copier"
echo "the second copy finished"
run zpool sync tank
run zpool status tank
step "both copies read back whole: B's share comes from parity"
verify doc doc2

step "machine B is back: zpool online returns its disks, the resilver writes what they missed"
bash "$here/scripts/nbd-host.sh" mend "$work/B"
run zpool online tank "${uri[B]}d0" "${uri[B]}d1"
run zpool wait -t resilver tank
run zpool status tank
step "a scrub reads every block, every copy and the parity"
run zpool scrub -w tank
run zpool status tank
verify doc doc2
run zpool export tank
echo
echo "demo-nbd finished: everything above ran in $work (now removed)"
