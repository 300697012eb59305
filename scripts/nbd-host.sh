#!/usr/bin/env bash
# A disk server on "another machine", on this one: a network namespace
# behind a veth pair with loopback addresses 127.78.x.y (scripts/netns-link.sh),
# and an nbdkit there serving every file of DIR/exports as an NBD export
# of that name on port 10809. Taking the host's end of the link down is
# the machine dropping off the network: its connections go silent (no
# reset, no refusal, no "no route to host"), as when a cable or a switch
# fails.
#
#   nbd-host.sh up DIR     starts the host; DIR (a scratch directory whose
#                          exports/ holds the files) gets `names` (the
#                          namespace, the interfaces, the address) and
#                          `uri`, the server's URI (nbd://ADDR/).
#   nbd-host.sh cut DIR    takes the link down (the host drops off the network).
#   nbd-host.sh mend DIR   brings it back.
#   nbd-host.sh down DIR   stops nbdkit by its PID and removes the
#                          namespace and the veth pair.
set -euo pipefail
cmd=${1:?usage: nbd-host.sh up|cut|mend|down DIR}
dir=${2:?usage: nbd-host.sh up|cut|mend|down DIR}
[ -d "$dir" ] || { echo "nbd-host.sh: $dir is not a directory" >&2; exit 1; }
dir=$(cd "$dir" && pwd)

# shellcheck source=scripts/netns-link.sh
source "$(dirname "$0")/netns-link.sh"

case "$cmd" in
  down)
    if [ -f "$dir/nbdkit.pid" ]; then
      pid=$(cat "$dir/nbdkit.pid")
      kill "$pid" 2>/dev/null || true
      # A server still holding a connection whose peer went silent (a cut
      # link) does not finish on SIGTERM: give it two seconds, then SIGKILL.
      for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    netns_link_down "$dir"
    exit 0 ;;
  cut)
    netns_link_load "$dir"
    netns_link_cut
    exit 0 ;;
  mend)
    netns_link_load "$dir"
    netns_link_mend
    # Back when the server takes a connection again.
    for _ in $(seq 1 50); do
      (exec 3<> "/dev/tcp/$there_ip/10809") 2> /dev/null && exit 0
      sleep 0.1
    done
    echo "nbd-host.sh: $there_ip does not answer after the link came up" >&2
    exit 1 ;;
  up) ;;
  *) echo "nbd-host.sh: unknown command '$cmd'" >&2; exit 2 ;;
esac

for tool in ip nbdkit; do
  command -v "$tool" > /dev/null || [ -x "/usr/sbin/$tool" ] ||
    { echo "nbd-host.sh: $tool is missing (make deps installs it)" >&2; exit 1; }
done
[ -d "$dir/exports" ] || { echo "nbd-host.sh: $dir/exports holds no files to serve" >&2; exit 1; }

netns_link_up "$dir" 78 nbd

# nbdkit forks into the background once it listens and writes its PID.
ip netns exec "$ns" nbdkit --pidfile "$dir/nbdkit.pid" -i "$there_ip" -p 10809 \
  file dir="$dir/exports" 2> "$dir/nbdkit.log"
for _ in $(seq 1 100); do
  if [ -s "$dir/nbdkit.pid" ] && (exec 3<> "/dev/tcp/$there_ip/10809") 2>/dev/null; then
    echo "nbd://$there_ip/" > "$dir/uri"
    exit 0
  fi
  sleep 0.1
done
echo "nbd-host.sh: nbdkit in $ns did not answer (see $dir/nbdkit.log)" >&2
exit 1
