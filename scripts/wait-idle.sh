#!/usr/bin/env bash
# Waits until process PID has been idle for a second (under 20 ms of user +
# system CPU), at most MAX seconds (default 60); returns at once when PID is
# gone. fio-compare.sh and fuse-roundtrips.sh run it before a timed phase so
# that a daemon still syncing the files of the phase before does not share
# the CPUs with it (both sides alike).
#
#   scripts/wait-idle.sh PID [MAX]
set -uo pipefail
pid=${1:?usage: wait-idle.sh PID [MAX]} max=${2:-60}
idle=$(( $(getconf CLK_TCK) / 50 ))
cpu() { awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null; }
a=$(cpu) || exit 0
[ -n "$a" ] || exit 0
for _ in $(seq 1 "$max"); do
  sleep 1
  b=$(cpu) || exit 0
  [ -n "$b" ] || exit 0
  [ $((b - a)) -le "$idle" ] && exit 0
  a=$b
done
exit 0
