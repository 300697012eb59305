# shellcheck shell=bash
# What the demos share (scripts/demo.sh, scripts/demo-nbd.sh). Sourced.
#
#   demo_prepare NAME BUILD PROGRAM...  installs the Debian packages that
#       are missing and builds PROGRAMs in BUILD (Release), one line per
#       step here and each step's output in BUILD/demo-prepare.log; a step
#       that fails shows its last lines and ends the demo.
#   demo_stop WORK    stops the private daemon of $UZFS_RUNDIR by its PID
#       and unmounts whatever is still mounted under WORK.
#   step TEXT         a heading; run CMD...: shows the command, runs it.

demo_prepare() {
  local name=$1 build=$2; shift 2
  local here log
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  mkdir -p "$build"
  log=$build/demo-prepare.log
  : >"$log"
  prep() {
    local what=$1; shift
    printf '%-62s' "$what"
    local t0=$SECONDS
    if "$@" >>"$log" 2>&1; then
      echo "done ($((SECONDS - t0)) s)"
    else
      echo "FAILED"
      tail -n 30 "$log" >&2
      echo "$name: '$what' failed; the whole output is in $log" >&2
      exit 1
    fi
  }
  echo "preparing the demo (output in $log)"
  prep "  installing the Debian packages that are missing" bash "$here/scripts/deps.sh" --packages
  # shellcheck disable=SC2086  # CMAKE_FLAGS holds several flags
  prep "  configuring the build (CMake, Ninja, Release)" \
    cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${CMAKE_FLAGS:-}
  prep "  building $*" cmake --build "$build" -j "${JOBS:-$(nproc)}" --target "$@"
}

demo_stop() {
  local work=$1 pid m
  if [ -f "$UZFS_RUNDIR/uzfsd.pid" ]; then
    pid=$(cat "$UZFS_RUNDIR/uzfsd.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  for m in $(awk -v w="$work" 'index($2, w) == 1 { print $2 }' /proc/self/mounts | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
}

step() { printf '\n== %s\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }
