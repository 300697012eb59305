#!/usr/bin/env bash
# Installs every Debian package listed in scripts/debian-packages.txt that is
# not installed yet. Runs `apt-get update` only when something is missing.
# With --check it only reports (exit 1 when something is missing).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mapfile -t pkgs < <(grep -v -E '^\s*(#|$)' "$here/debian-packages.txt")
missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "${1:-}" = "--check" ]; then
  echo "missing packages: ${missing[*]}"
  exit 1
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
