#!/usr/bin/env bash
# Sourced by scripts that run inside scripts/zfs-fuse-sandbox.sh (the ZPL
# compatibility tests): restarts the sandbox's zfs-fuse daemon with
# --enable-xattr (-x), which the sandbox does not pass and without which
# zfs-fuse answers every xattr call with EOPNOTSUPP.
#
# The daemon to replace is found exactly: the zfs-fuse processes whose
# mount namespace is this one (the sandbox's private namespace); daemons of
# other sandboxes and any system zfs-fuse are in other namespaces and are
# never touched. The new daemon is stopped by its PID when the sourcing
# script exits (an EXIT trap; a script that sets its own EXIT trap must
# call zpl_xattr_daemon_stop itself).
#
#   source scripts/zpl-zfs-fuse-xattr.sh   # must be the first zfs-fuse use
zpl_xattr_daemon_pid=
zpl_xattr_daemon_stop() {
  local p=$zpl_xattr_daemon_pid
  [ -n "$p" ] || return 0
  zpl_xattr_daemon_pid=
  kill "$p" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$p" 2>/dev/null || true
}
zpl_xattr_daemon_start() {
  local me p old= pidfile
  me=$(readlink /proc/self/ns/mnt)
  for p in $(pgrep -x zfs-fuse || true); do
    [ "$(readlink "/proc/$p/ns/mnt" 2>/dev/null)" = "$me" ] && old="$old $p"
  done
  [ -n "$old" ] || { echo "zpl-zfs-fuse-xattr: no zfs-fuse in this mount namespace" >&2; return 1; }
  for p in $old; do kill "$p" 2>/dev/null || true; done
  for p in $old; do
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
  done
  rm -f /run/zfs/zfs_socket
  pidfile=$(dirname "$(mktemp -u)")/zpl-zfs-fuse.$$.pid
  zfs-fuse -x --pidfile "$pidfile" >/dev/null 2>&1 &
  for _ in $(seq 1 100); do
    [ -S /run/zfs/zfs_socket ] && [ -s "$pidfile" ] && break
    sleep 0.1
  done
  zpl_xattr_daemon_pid=$(cat "$pidfile" 2>/dev/null || true)
  rm -f "$pidfile"
  [ -S /run/zfs/zfs_socket ] && [ -n "$zpl_xattr_daemon_pid" ] ||
    { echo "zpl-zfs-fuse-xattr: zfs-fuse -x did not start" >&2; return 1; }
  trap zpl_xattr_daemon_stop EXIT
}
zpl_xattr_daemon_start
