# Helpers the benchmark scripts source (after setting `work`, their
# scratch directory): a clock in nanoseconds, nanoseconds as seconds, and
# `fill DIR MiB`, which writes that much incompressible data into DIR as
# 64 MiB files, each one different, from one random chunk made here.
now() { date +%s%N; }
secs() { awk -v n="$1" 'BEGIN { printf "%.3f", n / 1e9 }'; }
head -c 64M /dev/urandom > "$work/chunk"
fill() {
  local left=$2 i=0
  while [ "$left" -gt 0 ]; do
    local n=$((left < 64 ? left : 64))
    head -c "${n}M" "$work/chunk" > "$1/fill$i"
    printf '%s' "$i" | dd of="$1/fill$i" conv=notrunc status=none
    left=$((left - n)); i=$((i + 1))
  done
}

# `threads_start PID` ... `threads_stop`: the CPU time each of PID's
# threads used in between, threads that ended meanwhile included (a
# sampler reads /proc every 20 ms and keeps each thread's last figure),
# printed as "name: N ms" for the threads that used more than 20 ms,
# busiest first.
threads_start() {
  local pid=$1
  threads_pid=$pid
  threads_snap() {
    for t in /proc/"$threads_pid"/task/*; do
      { read -r s < "$t/stat"; } 2>/dev/null || continue
      # comm may hold spaces: the fields after its closing parenthesis.
      local rest=${s##*) } name
      name=$(cat "$t/comm" 2>/dev/null) || continue
      # shellcheck disable=SC2086  # split on purpose: the fields
      set -- $rest
      echo "${t##*/} ${name// /_} $((${12} + ${13}))"
    done
  }
  threads_snap > "$work/threads.0"
  ( while :; do threads_snap >> "$work/threads.log"; sleep 0.02; done ) &
  threads_sampler=$!
}
threads_stop() {
  kill "$threads_sampler" 2>/dev/null; wait "$threads_sampler" 2>/dev/null || true
  local hz; hz=$(getconf CLK_TCK)
  awk -v hz="$hz" 'NR == FNR { base[$1] = $3; next }
    { last[$1] = $3; name[$1] = $2 }
    END { for (t in last) { ms = (last[t] - base[t]) * 1000 / hz; if (ms > 20) printf "%d %s\n", ms, name[t] } }' \
    "$work/threads.0" "$work/threads.log" | sort -rn | awk '{ printf "  %s: %d ms\n", $2, $1 }'
  rm -f "$work/threads.0" "$work/threads.log"
}
