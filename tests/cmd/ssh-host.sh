#!/usr/bin/env bash
# A second "host" on this machine for the replication tests: its own
# network namespace behind a veth pair with loopback addresses 127.77.x.y
# (scripts/netns-link.sh), and an OpenSSH server there
# with keys made here. sshd runs in a private mount namespace too (a
# tmpfs on its /run for its privilege separation directory), so whatever
# runs through it (a uzfsd, its FUSE mounts) is that host's alone.
#
#   ssh-host.sh up DIR     DIR (an empty scratch directory) gets the keys,
#                          sshd_config, ssh_config and `ssh`, a wrapper:
#                          DIR/ssh COMMAND runs COMMAND on the host as root.
#   ssh-host.sh down DIR   stops sshd by its PID and removes the namespace
#                          and the veth pair.
set -euo pipefail
cmd=${1:?usage: ssh-host.sh up|down DIR}
dir=${2:?usage: ssh-host.sh up|down DIR}
[ -d "$dir" ] || { echo "ssh-host.sh: $dir is not a directory" >&2; exit 1; }
dir=$(cd "$dir" && pwd)
# shellcheck source=scripts/netns-link.sh
source "$(dirname "$0")/../../scripts/netns-link.sh"

if [ "$cmd" = down ]; then
  if [ -f "$dir/sshd.pid" ]; then kill "$(cat "$dir/sshd.pid")" 2>/dev/null || true; fi
  netns_link_down "$dir"
  exit 0
fi
[ "$cmd" = up ] || { echo "ssh-host.sh: unknown command '$cmd'" >&2; exit 2; }
for tool in ip sshd ssh ssh-keygen unshare; do
  command -v "$tool" > /dev/null || [ -x "/usr/sbin/$tool" ] ||
    { echo "ssh-host.sh: $tool is missing (make deps installs it)" >&2; exit 1; }
done

netns_link_up "$dir" 77 ssh

ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key" -C uzfs-test-host
ssh-keygen -q -t ed25519 -N '' -f "$dir/id" -C uzfs-test-client
cp "$dir/id.pub" "$dir/authorized_keys"
echo "$there_ip $(cat "$dir/host_key.pub")" > "$dir/known_hosts"
cat > "$dir/sshd_config" <<EOF
ListenAddress $there_ip
Port 22
HostKey $dir/host_key
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
EOF
cat > "$dir/ssh_config" <<EOF
Host backup
  HostName $there_ip
  User root
  IdentityFile $dir/id
  IdentitiesOnly yes
  UserKnownHostsFile $dir/known_hosts
  StrictHostKeyChecking yes
  BatchMode yes
  ConnectTimeout 10
EOF
cat > "$dir/ssh" <<EOF
#!/bin/sh
exec ssh -F "$dir/ssh_config" backup "\$@"
EOF
chmod +x "$dir/ssh"

# sshd detaches (no -D) once it listens and writes its PID file.
ip netns exec "$ns" unshare --mount --propagation private sh -c \
  "mount -t tmpfs -o mode=755 uzfs-ssh-run /run && mkdir -m 755 /run/sshd && exec /usr/sbin/sshd -f $dir/sshd_config -E $dir/sshd.log"
for _ in $(seq 1 100); do
  [ -s "$dir/sshd.pid" ] && "$dir/ssh" true 2>/dev/null && exit 0
  sleep 0.1
done
echo "ssh-host.sh: sshd in $ns did not answer (see $dir/sshd.log)" >&2
exit 1
