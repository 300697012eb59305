# shellcheck shell=bash
# "Another machine" on this one, for the scripts and tests that need a
# host to talk to over a real network stack: a network namespace of its
# own, reached over a veth pair that carries loopback addresses only
# (127.PREFIX.N.M+1 here, .M+2 there, a /30 picked at random so parallel
# runs and the several hosts of one run stay apart; route_localnet is set
# on the pair's two interfaces, nothing else). Sourced, not run.
#
# Each end knows the other's link-layer address for good (a permanent
# neighbour entry), as a host knows its router's: when the far end goes
# down, packets to it are lost without an answer, and when it comes back
# no address resolution has to fail or succeed first: with resolution,
# the retransmissions into a silent link end in "no route to host" for
# the connections under way instead of a timeout.
#
#   netns_link_up DIR PREFIX NAME   creates the namespace ("uzfs-NAME-TAG")
#                                   and the pair, writes DIR/names (ns,
#                                   veth_here, veth_there, here_ip,
#                                   there_ip) and sets those variables.
#   netns_link_load DIR             sets them from DIR/names (exit 1 when
#                                   no host was started there).
#   netns_link_cut / netns_link_mend  take the far end's link down / up.
#   netns_link_down DIR             removes the pair and the namespace
#                                   (nothing when DIR has no names).

netns_link_up() {
  local dir=$1 prefix=$2 name=$3 tag n m mac_there
  tag=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
  n=$(( 0x${tag:0:2} % 250 + 1 )) m=$(( 0x${tag:2:2} % 64 * 4 ))
  ns="uzfs-$name-$tag"
  veth_here="u${name:0:2}${tag}a" veth_there="u${name:0:2}${tag}b"
  here_ip="127.$prefix.$n.$((m + 1))" there_ip="127.$prefix.$n.$((m + 2))"
  printf 'ns=%s\nveth_here=%s\nveth_there=%s\nhere_ip=%s\nthere_ip=%s\n' \
    "$ns" "$veth_here" "$veth_there" "$here_ip" "$there_ip" > "$dir/names"

  ip netns add "$ns"
  ip link add "$veth_here" type veth peer name "$veth_there"
  ip link set "$veth_there" netns "$ns"
  ip addr add "$here_ip/30" dev "$veth_here"
  sysctl -qw "net.ipv4.conf.$veth_here.route_localnet=1"
  ip link set "$veth_here" up
  ip netns exec "$ns" sh -c "ip link set lo up && ip addr add $there_ip/30 dev $veth_there &&
    sysctl -qw net.ipv4.conf.$veth_there.route_localnet=1 && ip link set $veth_there up"
  mac_there=$(ip netns exec "$ns" cat "/sys/class/net/$veth_there/address")
  ip neigh replace "$there_ip" lladdr "$mac_there" dev "$veth_here" nud permanent
  netns_link_far_neigh
}

# The far end's entry for this end (an interface going down drops its
# entries, so mending the link sets it again).
netns_link_far_neigh() {
  ip netns exec "$ns" ip neigh replace "$here_ip" lladdr "$(cat "/sys/class/net/$veth_here/address")" \
    dev "$veth_there" nud permanent
}

netns_link_load() {
  local dir=$1
  [ -f "$dir/names" ] || { echo "$(basename "$0"): no host was started in $dir" >&2; exit 1; }
  # shellcheck disable=SC1091
  source "$dir/names"
}

# The far end's link goes down, as when its cable is pulled: packets to it
# are lost without an answer (no reset, no refusal). Not the near end:
# with it down, packets to the host would take the loopback route and be
# refused at once.
netns_link_cut() { ip netns exec "$ns" ip link set "$veth_there" down; }
netns_link_mend() {
  ip netns exec "$ns" ip link set "$veth_there" up
  netns_link_far_neigh
}

netns_link_down() {
  local dir=$1
  [ -f "$dir/names" ] || return 0
  # shellcheck disable=SC1091
  source "$dir/names"
  ip link del "$veth_here" 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
}
