#!/usr/bin/env bash
# Runs a command next to a private zfs-fuse daemon, the compatibility judge.
#
#   scripts/zfs-fuse-sandbox.sh <command> [args...]
#
# zfs-fuse's socket, cache and lock paths are fixed (/run/zfs, /var/lib/zfs,
# /var/lock/zfs), so the daemon runs inside a private mount namespace
# (unshare --mount) where all three are bind-mounted to a fresh temporary
# directory: runs never collide with
# each other or with a system zfs-fuse. The command runs inside the same
# namespace with the daemon up (zpool/zfs/zdb from /usr/sbin work); the
# daemon is stopped by its PID afterwards and the command's exit code is
# returned (a command that failed while the daemon died says so on stderr).
# Needs root. ZFS_FUSE_SANDBOX_KEEP=1 keeps the temporary directory.
set -euo pipefail
if [ "${1:-}" != "--inside" ]; then
  [ $# -ge 1 ] || { echo "usage: $0 <command> [args...]" >&2; exit 2; }
  [ "$(id -u)" -eq 0 ] || { echo "zfs-fuse-sandbox: needs root" >&2; exit 1; }
  command -v zfs-fuse >/dev/null || [ -x /usr/sbin/zfs-fuse ] ||
    { echo "zfs-fuse-sandbox: zfs-fuse is not installed (make deps)" >&2; exit 1; }
  exec unshare --mount --propagation private "$0" --inside "$@"
fi
shift
export PATH=/usr/sbin:/sbin:$PATH
box=$(mktemp -d /tmp/zfs-fuse-sandbox.XXXXXX)
mkdir -p "$box/run" "$box/lib" "$box/lock" /run/zfs /var/lib/zfs /var/lock/zfs
mount --bind "$box/run" /run/zfs
mount --bind "$box/lib" /var/lib/zfs
mount --bind "$box/lock" /var/lock/zfs
zfs-fuse --pidfile "$box/zfs-fuse.pid" >"$box/zfs-fuse.log" 2>&1 &
# Wait for the daemon's socket before handing over.
for _ in $(seq 1 100); do
  [ -S /run/zfs/zfs_socket ] && break
  sleep 0.1
done
pid=$(cat "$box/zfs-fuse.pid" 2>/dev/null || true)
stop() {
  # zfs-fuse may open its socket before it writes its pid file: read the
  # file again, or a daemon is left running (it was, now and then, in CI).
  [ -n "$pid" ] || pid=$(cat "$box/zfs-fuse.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  [ -n "${ZFS_FUSE_SANDBOX_KEEP:-}" ] || rm -rf "$box"
}
trap stop EXIT
[ -S /run/zfs/zfs_socket ] || { echo "zfs-fuse-sandbox: daemon did not start:" >&2; cat "$box/zfs-fuse.log" >&2; exit 1; }
set +e
"$@"
rc=$?
set -e
# A command that failed because the judge itself died says so: that run is
# no verdict (the tests run it once more).
[ -n "$pid" ] || pid=$(cat "$box/zfs-fuse.pid" 2>/dev/null || true)
gone() {  # (a dead daemon is this script's unreaped child: a zombie)
  ! kill -0 "$1" 2>/dev/null || [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" = Z ]
}
if [ "$rc" -ne 0 ] && [ -n "$pid" ] && gone "$pid"; then
  echo "zfs-fuse-sandbox: zfs-fuse's daemon died during the command" >&2
  tail -n 20 "$box/zfs-fuse.log" >&2 || true
fi
exit $rc
