#!/usr/bin/env bash
# Benchmark report: one run of the fio suite (tests/perf/fio/) on uzfs, on
# zfs-fuse and on libfuse's low-level passthrough example, then a Markdown
# report with the table and PNG charts (tools/bench-report/render.py).
#
#   scripts/bench-report.sh [--quick] [--out DIR] [--rows LIST] [--keep]
#                           [--layout raidz2|mirror|2mirror]
#
#   --quick   the short CI run: small sizes, 2 s per timed job, the rows
#             seq-write, rand-read-1, sync-write-1 and small-files; the
#             report goes to a new directory under /var/tmp unless --out
#   --out     where report.md, throughput.png and sync-write-latency.png go
#             (default docs/bench/ in the checkout)
#   --rows    the fio-compare.sh rows to run, comma-separated (default all)
#   --keep    keep the work directory (its path is printed)
#   --layout  the pools' vdevs, as in fio-compare.sh (default raidz2)
# Environment: FIO_SIZE, FIO_RUNTIME, FIO_NRFILES, FIO_STAT_LOOPS,
# FIO_SETTLE, DEV_SIZE, DEV_FILL, FIO_RECORDSIZE, FIO_WARM_RAM as in scripts/fio-compare.sh (same
# defaults; --quick makes them small), UZFS_BIN (directory holding zpool,
# default build/cmd/zpool, uzfsd found next to it), WORKDIR (a new or empty
# directory to work in; default a new one under /var/tmp). Needs root
# (FUSE mounts, zfs-fuse's sandbox, drop_caches).
#
# What runs, in this order:
#   1. scripts/fio-compare.sh --keep, with WORKDIR=<work>/compare: uzfs and
#      zfs-fuse on pools of the same shape; its fio JSON stays in
#      <work>/compare/{uzfs,zfs-fuse}-results/.
#   2. The same job files, rows, environment and cold-read steps on
#      passthrough_ll (/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c,
#      compiled here into the work directory), mounted over a directory in
#      the work directory, i.e. on the host file system that holds the
#      pools' device files: what any FUSE file system on this machine could
#      reach. Results in <work>/compare/passthrough_ll-results/.
#      Its options: -o writeback (uzfs mounts with the kernel's writeback
#      cache too, so both sides' small writes are merged in the page cache
#      alike), cache=always (keep_cache on open, as uzfs does for files
#      only it changes) with timeout=60 (uzfs's entry and attribute
#      timeout), -f (stays in the foreground: its PID is the daemon's), and
#      the mount's read-ahead window set to 4 MiB as uzfs sets its own.
#      Everything else is libfuse's default (multi-threaded loop). Its
#      "cold" step is an unmount, a cache drop and a new mount, like the
#      others' export and import. Its inode table is a linked list searched
#      on every lookup, so its small-file rows slow down as files pile up:
#      there it is a FUSE file system, not a ceiling. It also holds an open
#      descriptor per inode the kernel knows: where the open-file limit
#      cannot be raised above FIO_NRFILES, FIO_NRFILES is lowered for all
#      three sides (the report says so).
#   3. sync-write-1 on a uzfs pool without a log device and on one with a
#      1 GiB file as its log (both on the same host disk, no injected
#      delay; scripts/fio-slog.sh makes the same pools), with fio's json+
#      output so that the JSON holds the latency histograms.
#   4. tools/bench-report/render.py writes the report and charts, and this
#      script checks them.
# Everything it makes lives in the work directory (removed at exit unless
# --keep) and the output directory; every daemon it starts is stopped by
# its PID at exit, whichever way the script ends.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
jobs_dir=$here/tests/perf/fio
# shellcheck source=scripts/dev-file.sh
source "$here/scripts/dev-file.sh"  # make_dev_file, DEV_FILL
all_rows=seq-write,seq-read,rand-write-1,rand-read-1,rand-read-4,rand-write-4,rand-write-4-files,sync-write-1,sync-write-4,small-files
quick_rows=seq-write,rand-read-1,sync-write-1,small-files
pt_src_c=/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c
usage() {
  echo "usage: $0 [--quick] [--out DIR] [--rows LIST] [--keep] [--layout raidz2|mirror|2mirror]" >&2
  exit 2
}
phase="start" failed=""
die() { echo "bench-report: $*" >&2; failed=1; exit 1; }

# The command as typed, with the settings that change the figures, for
# the report.
cmd_env=()
for v in FIO_SIZE FIO_RUNTIME FIO_NRFILES FIO_STAT_LOOPS FIO_SETTLE DEV_SIZE DEV_FILL FIO_RECORDSIZE FIO_WARM_RAM; do
  if [ -n "${!v+set}" ]; then cmd_env+=("$v=${!v}"); fi
done
cmdline="${cmd_env[*]:+${cmd_env[*]} }bash scripts/bench-report.sh${*:+ $*}"

quick=0 keep=0 out="" rows="" layout=raidz2
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --keep) keep=1 ;;
    --out) [ -n "${2:-}" ] || usage; out=$2; shift ;;
    --rows) [ -n "${2:-}" ] || usage; rows=$2; shift ;;
    --layout) [ -n "${2:-}" ] || usage; layout=$2; shift ;;
    *) usage ;;
  esac
  shift
done
case $layout in raidz2|mirror|2mirror) ;; *) usage ;; esac
if [ -z "$rows" ]; then
  if [ $quick = 1 ]; then rows=$quick_rows; else rows=$all_rows; fi
fi
IFS=, read -ra row_list <<<"$rows"
[ ${#row_list[@]} -gt 0 ] || usage
for r in "${row_list[@]}"; do
  [[ ",$all_rows," == *",$r,"* ]] || { echo "bench-report: unknown row '$r'" >&2; usage; }
done

[ "$(id -u)" -eq 0 ] || die "needs root (FUSE mounts, zfs-fuse's sandbox, drop_caches)"
command -v fio >/dev/null || die "fio is not installed (make deps)"
command -v fusermount3 >/dev/null || die "fusermount3 is not installed (make deps)"
[ -f "$pt_src_c" ] || die "no $pt_src_c (libfuse3-dev; make deps)"
# Debian's python3 (python3-matplotlib lives in its dist-packages).
py=/usr/bin/python3
[ -x "$py" ] || py=python3
"$py" -c 'import matplotlib' 2>/dev/null || die "$py cannot import matplotlib (python3-matplotlib; make deps)"

if [ $quick = 1 ]; then
  : "${FIO_SIZE:=32M}" "${FIO_RUNTIME:=2}" "${FIO_NRFILES:=1000}" "${FIO_STAT_LOOPS:=3}"
  : "${FIO_SETTLE:=0}" "${DEV_SIZE:=512M}" "${FIO_WARM_RAM:=0}"
fi
export FIO_SIZE=${FIO_SIZE:-1G} FIO_RUNTIME=${FIO_RUNTIME:-30} FIO_NRFILES=${FIO_NRFILES:-50000}
export FIO_STAT_LOOPS=${FIO_STAT_LOOPS:-20} FIO_SETTLE=${FIO_SETTLE:-6}
export DEV_SIZE=${DEV_SIZE:-4G} FIO_WARM_RAM=${FIO_WARM_RAM:-1} FIO_JOBS=1
slog_size=1G
[ $quick = 1 ] && slog_size=256M
# passthrough_ll keeps an open descriptor for every inode the kernel holds,
# i.e. every small file: it runs with the highest open-file limit it can
# get, and where even that is under FIO_NRFILES (a container without
# CAP_SYS_RESOURCE keeps the hard limit), every side runs fewer files,
# so that all three still run the same jobs.
pt_nofile=$(ulimit -n 1048576 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null; ulimit -n)
nrfiles_note=""
if [ "$pt_nofile" != unlimited ] && [ "$FIO_NRFILES" -gt $((pt_nofile - 1024)) ]; then
  capped=$(( (pt_nofile - 1024) / 1000 * 1000 ))
  [ "$capped" -gt 0 ] || die "open-file limit $pt_nofile is too low for passthrough_ll's small files"
  nrfiles_note="FIO_NRFILES lowered from $FIO_NRFILES to $capped on every side: passthrough_ll holds a descriptor per file and the open-file limit here is $pt_nofile"
  echo "bench-report: $nrfiles_note" >&2
  export FIO_NRFILES=$capped
fi
bin_note=""
[ -n "${UZFS_BIN:-}" ] && bin_note="; binaries from UZFS_BIN=$UZFS_BIN"
export UZFS_BIN=${UZFS_BIN:-$here/build/cmd/zpool}
[ -x "$UZFS_BIN/zpool" ] || die "no zpool in $UZFS_BIN (make build, or UZFS_BIN=dir)"

# The output directory: made now, so that a bad path fails before the run.
if [ -z "$out" ]; then
  if [ $quick = 1 ]; then out=$(mktemp -d /var/tmp/uzfs-bench-report.XXXXXX); else out=$here/docs/bench; fi
fi
mkdir -p "$out" || die "cannot make the output directory $out"
out=$(cd "$out" && pwd)

# The work directory: new (mktemp) or a new/empty WORKDIR, so that removing
# it at exit removes only what this script made.
if [ -n "${WORKDIR:-}" ]; then
  work=$WORKDIR
  mkdir -p "$work"
  [ -z "$(ls -A "$work")" ] || die "WORKDIR $work is not empty"
  work=$(cd "$work" && pwd)
else
  work=$(mktemp -d /var/tmp/uzfs-bench.XXXXXX)
fi
case $work in /?*) ;; *) die "no work directory" ;; esac
results=$work/compare
slog_rundir=$work/slog-run
pt_bin=$work/passthrough_ll pt_mnt=$work/pt-mnt pt_src=$work/pt-src
pt_pid=""

# Stops passthrough_ll: SIGTERM to its PID (it unmounts on the way out),
# then SIGKILL after 5 s, then fusermount3 -u if the mount is still there.
pt_stop() {
  [ -n "$pt_pid" ] || return 0
  kill "$pt_pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pt_pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pt_pid" 2>/dev/null || true
  wait "$pt_pid" 2>/dev/null || true
  pt_pid=""
  if mountpoint -q "$pt_mnt"; then fusermount3 -u "$pt_mnt" 2>/dev/null || fusermount3 -u -z "$pt_mnt" || true; fi
}
# Stops the uzfsd whose run directory is $1, by the PID in its pid file
# (only if that PID is still a uzfsd).
uzfsd_stop() {
  local pid
  pid=$(cat "$1/uzfsd.pid" 2>/dev/null) || return 0
  [ -n "$pid" ] || return 0
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = uzfsd ] || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}
cleanup() {
  local rc=$? m left=0
  trap - EXIT INT TERM
  if [ "$rc" -ne 0 ] && [ -z "$failed" ]; then
    echo "bench-report: failed (exit status $rc) during: $phase" >&2
  fi
  pt_stop
  uzfsd_stop "$slog_rundir"
  # fio-compare.sh stops its daemon itself, except when a row failed.
  uzfsd_stop "$results/uzfs-run"
  # Whatever FUSE mount is still below the work directory (a daemon that
  # died with its mount) is detached before the directory goes.
  while read -r m; do
    fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done < <(awk -v w="$work/" 'index($2, w) == 1 { print $2 }' /proc/mounts)
  if awk -v w="$work/" 'index($2, w) == 1 { f = 1 } END { exit !f }' /proc/mounts; then
    echo "bench-report: something is still mounted below $work; left in place" >&2
    left=1
  fi
  if [ $keep = 1 ] || [ $left = 1 ]; then
    echo "bench-report: work directory kept: $work" >&2
  else
    rm -rf -- "${work:?}"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "bench-report: work $work, output $out, rows $rows (load $load)"
SECONDS=0

# passthrough_ll first: a compiler error fails the run before minutes of fio.
read -ra fuse_flags <<<"$(pkg-config --cflags --libs fuse3)"
cc -O2 -Wall -o "$pt_bin" "$pt_src_c" "${fuse_flags[@]}" >"$work/passthrough_ll.build.log" 2>&1 ||
  { cat "$work/passthrough_ll.build.log" >&2; die "passthrough_ll.c did not compile"; }

# --- 1. uzfs and zfs-fuse through fio-compare.sh ---
phase="uzfs and zfs-fuse (scripts/fio-compare.sh)"
fc_args=(--keep --rows "$rows" --layout "$layout")
[ $quick = 1 ] && fc_args+=(--quick)
# Its own "work directory kept" line is dropped: this script removes it.
{ WORKDIR=$results "$here/scripts/fio-compare.sh" "${fc_args[@]}" 2>&1 1>&3 3>&- |
    sed -u '/^work directory kept: /d' >&2; } 3>&1 ||
  die "scripts/fio-compare.sh failed"
echo "bench-report: uzfs and zfs-fuse done (${SECONDS}s)"

# --- 2. passthrough_ll: fio-compare.sh's row sequence on the FUSE limit ---
phase="passthrough_ll"
pt_out=$results/passthrough_ll-results
mkdir -p "$pt_src" "$pt_mnt" "$pt_out"
pt_start() {
  # Its inode table holds an O_PATH descriptor per file the kernel knows
  # (FIO_NRFILES of them in small-files): the limit found above.
  ( ulimit -n "$pt_nofile"
    exec "$pt_bin" -f -o "writeback,cache=always,timeout=60,source=$pt_src" "$pt_mnt" ) \
    >>"$work/passthrough_ll.log" 2>&1 &
  pt_pid=$!
  for _ in $(seq 1 100); do mountpoint -q "$pt_mnt" && break; sleep 0.1; done
  mountpoint -q "$pt_mnt" || { tail -n 5 "$work/passthrough_ll.log" >&2; die "passthrough_ll did not mount at $pt_mnt"; }
  # The read-ahead window uzfs gives its mounts (fuse/fuse_mount.h).
  echo 4096 >"/sys/class/bdi/$(mountpoint -d "$pt_mnt")/read_ahead_kb" 2>/dev/null || true
}
pt_cold() {
  sync
  pt_stop
  echo 3 >/proc/sys/vm/drop_caches
  pt_start
}
want() { [[ ",$rows," == *",$1,"* ]]; }
pt_run() {  # pt_run <result name> <job file> [VAR=value ...]
  local name=$1 job=$2
  shift 2
  want "$name" || return 0
  env FIO_DIR="$pt_mnt" "$@" fio --output-format=json --output="$pt_out/$name.json" "$jobs_dir/$job" >/dev/null ||
    pt_failed "$name"
}
pt_failed() {
  tail -n 5 "$work/passthrough_ll.log" >&2
  die "fio failed on passthrough_ll in row $1 (its daemon's last lines above)"
}
pt_settle() {
  sync
  sleep "$FIO_SETTLE"
  "$here/scripts/wait-idle.sh" "$pt_pid"
}
pt_section() {
  env FIO_DIR="$pt_mnt" fio --output-format=json --output="$pt_out/small-files-$1.json" \
    --section="$1" "$jobs_dir/small-files.fio" >/dev/null || pt_failed "small-files:$1"
}
pt_start
pt_run seq-write seq-write.fio
if want seq-read; then pt_cold; fi
pt_run seq-read seq-read.fio
rm -f "$pt_mnt/seq.dat"
pt_run rand-write-1 rand-write.fio FIO_JOBS=1
if want rand-read-1; then pt_cold; fi
pt_run rand-read-1 rand-read.fio FIO_JOBS=1
if want rand-read-4; then pt_cold; fi
pt_run rand-read-4 rand-read.fio FIO_JOBS=4
pt_run rand-write-4 rand-write.fio FIO_JOBS=4
rm -f "$pt_mnt/rand.dat"
pt_run rand-write-4-files rand-write-files.fio FIO_JOBS=4
rm -f "$pt_mnt"/rand-write-files.*
pt_run sync-write-1 sync-write.fio FIO_JOBS=1
pt_run sync-write-4 sync-write.fio FIO_JOBS=4
rm -f "$pt_mnt"/sync-write.*
if want small-files; then
  pt_settle
  pt_section create
  pt_section stat
  pt_settle
  pt_section stat
  pt_section delete
fi
pt_stop
echo "bench-report: passthrough_ll done (${SECONDS}s)"

# --- 3. sync-write-1 on uzfs without and with a log device ---
phase="sync-write-1 with and without a log device"
slog_out=$work/slog-results
mkdir -p "$slog_out"
uzpool() { UZFS_RUNDIR=$slog_rundir UZFS_AUTOMOUNT=1 "$UZFS_BIN/zpool" "$@"; }
for slog in no yes; do
  devdir=$work/slog-devs-$slog mnt=$work/slog-mnt-$slog
  mkdir -p "$devdir" "$mnt"
  devs=()
  case $layout in raidz2) ndev=6 ;; mirror) ndev=2 ;; 2mirror) ndev=4 ;; esac
  for i in $(seq 0 $((ndev - 1))); do make_dev_file "$devdir/d$i" "$DEV_SIZE"; devs+=("$devdir/d$i"); done
  case $layout in
    raidz2) vdevs=(raidz2 "${devs[@]}") ;;
    mirror) vdevs=(mirror "${devs[@]}") ;;
    2mirror) vdevs=(mirror "${devs[0]}" "${devs[1]}" mirror "${devs[2]}" "${devs[3]}") ;;
  esac
  if [ $slog = yes ]; then make_dev_file "$devdir/slog" "$slog_size"; vdevs+=(log "$devdir/slog"); fi
  props=()
  if [ -n "${FIO_RECORDSIZE:-}" ]; then props=(-O "recordsize=$FIO_RECORDSIZE"); fi
  uzpool create -f "${props[@]}" -m "$mnt" uzfsslog "${vdevs[@]}" || die "zpool create failed for the slog=$slog pool"
  for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
  mountpoint -q "$mnt" || die "the slog=$slog pool did not mount at $mnt"
  FIO_DIR=$mnt FIO_JOBS=1 fio --output-format=json+ --output="$slog_out/sync-write-1-slog-$slog.json" \
    "$jobs_dir/sync-write.fio" >/dev/null || die "fio failed on the uzfs pool with slog=$slog"
  uzpool destroy uzfsslog || uzpool destroy -f uzfsslog
  rm -f "$devdir"/d* "$devdir/slog"
done
uzfsd_stop "$slog_rundir"
echo "bench-report: slog runs done (${SECONDS}s)"

# --- 4. the report ---
phase="the report"
hostfs=$(df --output=fstype "$work" | tail -1 | tr -d ' ')
rev=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ "$rev" != unknown ] && [ -n "$(git -C "$here" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  rev="$rev + uncommitted changes"
fi
rev="checkout at $rev$bin_note"
settings="layout $layout; FIO_SIZE=$FIO_SIZE FIO_RUNTIME=$FIO_RUNTIME FIO_NRFILES=$FIO_NRFILES"
settings+=" FIO_STAT_LOOPS=$FIO_STAT_LOOPS FIO_SETTLE=$FIO_SETTLE DEV_SIZE=$DEV_SIZE DEV_FILL=${DEV_FILL:-0} FIO_RECORDSIZE=${FIO_RECORDSIZE:-128K} FIO_WARM_RAM=$FIO_WARM_RAM"
"$py" "$here/tools/bench-report/render.py" --results "$results" --slog "$slog_out" --out "$out" \
  --rows "$rows" --command "$cmdline" --settings "$settings" --revision "$rev" --note "$nrfiles_note" \
  --load "$load at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end" --hostfs "$hostfs" --slog-size "$slog_size" ||
  die "tools/bench-report/render.py failed"

# --- the outputs, checked ---
for png in throughput.png sync-write-latency.png; do
  f=$out/$png
  [ -f "$f" ] || die "check failed: $f was not written"
  [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || die "check failed: $f is not a PNG"
  [ "$(stat -c %s "$f")" -gt 8192 ] || die "check failed: $f is under 8 KiB"
done
[ -f "$out/report.md" ] || die "check failed: $out/report.md was not written"
for r in "${row_list[@]}"; do
  keys=("$r")
  [ "$r" = small-files ] && keys=(small-files:create small-files:stat small-files:delete)
  for k in "${keys[@]}"; do
    grep -q "^| \`$k\` |" "$out/report.md" || die "check failed: $out/report.md has no row $k"
  done
done
for slog in no yes; do
  grep -q "^| \`sync-write-1, slog $slog\` |" "$out/report.md" ||
    die "check failed: $out/report.md has no sync-write-1 row for slog $slog"
done
echo "bench-report: $out/report.md, throughput.png, sync-write-latency.png (${SECONDS}s)"
