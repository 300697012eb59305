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
