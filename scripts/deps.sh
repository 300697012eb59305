#!/usr/bin/env bash
# Installs every Debian package listed in scripts/debian-packages.txt that is
# not installed yet. Runs `apt-get update` only when something is missing.
# Then fetches OpenZFS's zdb, the second compatibility judge, into its own
# cache directory (scripts/openzfs-zdb.sh --install; never installed
# system-wide: it conflicts with zfs-fuse).
# With --check it only reports (exit 1 when something is missing); with
# --packages it installs the packages and skips OpenZFS's zdb (the demo
# does not need it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mapfile -t pkgs < <(grep -v -E '^\s*(#|$)' "$here/debian-packages.txt")
missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ "${1:-}" = "--check" ]; then
  rc=0
  [ ${#missing[@]} -eq 0 ] || { echo "missing packages: ${missing[*]}"; rc=1; }
  bash "$here/openzfs-zdb.sh" --check || rc=1
  exit $rc
fi
packages_only=0
[ "${1:-}" = "--packages" ] && packages_only=1
openzfs_zdb() {
  [ "$packages_only" -eq 0 ] || return 0
  # The default cache directory is root's; elsewhere the caller's own.
  if [ "$(id -u)" -ne 0 ] && [ -z "${UZFS_OPENZFS_DIR:-}" ]; then
    sudo bash "$here/openzfs-zdb.sh" --install
  else
    bash "$here/openzfs-zdb.sh" --install
  fi
}
if [ ${#missing[@]} -eq 0 ]; then
  openzfs_zdb
  exit 0
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
# zfs-fuse's package starts its daemon on install where services run; uzfs
# tests run their own copy in a private mount namespace, so stop that one.
if [ -x /etc/init.d/zfs-fuse ]; then "${sudo_cmd[@]}" /etc/init.d/zfs-fuse stop >/dev/null 2>&1 || true; fi
openzfs_zdb
