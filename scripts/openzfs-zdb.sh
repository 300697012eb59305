#!/usr/bin/env bash
# Runs OpenZFS 2.1's zdb, the second compatibility judge (pool versions up to
# 28 and 5000 with feature flags; zfs-fuse, the first, stops at 23).
#
#   scripts/openzfs-zdb.sh [zdb args...]   e.g. -U /dev/null -e -p DIR -bcc POOL
#   scripts/openzfs-zdb.sh --zstream [zstream args...]   e.g. dump -v < STREAM
#                                          (zstream, from the same packages)
#   scripts/openzfs-zdb.sh --token TOKEN   decode a resume token with OpenZFS's
#                                          libzfs (zfs_send_resume_token_to_nvlist,
#                                          called through python3's ctypes: its
#                                          `zstream token` needs /dev/zfs) and
#                                          print the list, or why it is refused
#   scripts/openzfs-zdb.sh --install       only fetch (scripts/deps.sh calls it)
#   scripts/openzfs-zdb.sh --check         exit 1 unless already fetched
#
# Exit code: the tool's, or 125 when it cannot be fetched, unpacked or loaded.
#
# zdb runs entirely in userland (libzpool), so it examines exported pools on
# plain files without the kernel module. Debian ships it in bookworm's contrib
# component (zfsutils-linux), which conflicts with zfs-fuse's /usr/sbin/zdb,
# so it is never installed: on first use the .debs are fetched with
# `apt-get download` through a private apt state (its own sources list,
# package lists and cache; the system's apt configuration is left alone),
# unpacked with `dpkg-deb -x` into a cache directory, and zdb runs from there
# with LD_LIBRARY_PATH on the unpacked libraries. Idempotent, and safe to run
# concurrently (flock). The runtime libraries it needs from main (libtirpc3,
# libblkid1, ...) are listed in scripts/debian-packages.txt.
#
# Environment:
#   UZFS_OPENZFS_DIR     cache directory (default /var/cache/uzfs/openzfs-2.1)
#   UZFS_DEBIAN_MIRROR   Debian archive (default: the one this machine's apt
#                        sources use for the suite, read from
#                        /etc/apt/sources.list and sources.list.d/)
#   UZFS_DEBIAN_SUITE    suite (default: the machine's, from /etc/os-release)
#
# zdb with -e on an exported pool needs no /etc/hostid and no kernel module;
# -U /dev/null keeps it from reading /etc/zfs/zpool.cache (otherwise -C ends
# with "cannot open '/etc/zfs/zpool.cache'").
set -euo pipefail

dir=${UZFS_OPENZFS_DIR:-/var/cache/uzfs/openzfs-2.1}
suite=${UZFS_DEBIAN_SUITE:-$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")}
suite=${suite:-bookworm}

# The archive this machine's apt sources name for "$suite" itself (not
# -updates or -security): deb822 .sources files and one-line .list files.
machine_archive() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk -v suite="$suite" '
      function flush() { if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " suite " ") && uri != "") { print uri; found = 1; exit } }
      /^[[:space:]]*$/ { flush(); types = suites = uri = ""; next }
      /^Types:/ { sub(/^Types:[[:space:]]*/, ""); types = $0 }
      /^URIs:/ { uri = $2 }
      /^Suites:/ { sub(/^Suites:[[:space:]]*/, ""); suites = $0 }
      END { if (!found) flush() }' "$f"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    # deb [options] URI SUITE COMPONENTS...
    sed -e 's/\[[^]]*\]//' "$f" | awk -v suite="$suite" '$1 == "deb" && $3 == suite { print $2 }'
  done
}
mirror=${UZFS_DEBIAN_MIRROR:-}
pkgs=(zfsutils-linux libzpool5linux libzfs4linux libnvpair3linux libuutil3linux)
root="$dir/root"
stamp="$dir/installed"

die() { echo "openzfs-zdb: $*" >&2; exit 125; }

installed() { [ -f "$stamp" ] && [ -x "$root/sbin/zdb" ]; }

# The unpacked library directories (lib/<multiarch>, usr/lib/<multiarch>).
libpath() {
  local d out=""
  for d in "$1"/lib/*-linux-gnu* "$1"/usr/lib/*-linux-gnu*; do
    [ -d "$d" ] && out="$out${out:+:}$d"
  done
  echo "$out"
}

# Runs in a subshell: the lock is released when it returns.
fetch() (
  command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null ||
    die "needs apt-get and dpkg-deb (a Debian system) to fetch OpenZFS's zdb"
  mkdir -p "$dir" 2>/dev/null && [ -w "$dir" ] ||
    die "cannot write $dir (run as root, or set UZFS_OPENZFS_DIR to a writable directory)"
  exec 9>"$dir/.lock"
  flock 9
  installed && return 0
  [ -n "$mirror" ] || mirror=$(machine_archive | head -n 1)
  [ -n "$mirror" ] ||
    die "no apt source for $suite on this machine (set UZFS_DEBIAN_MIRROR to a Debian archive)"
  echo "openzfs-zdb: fetching ${pkgs[*]} from $mirror $suite contrib into $dir" >&2
  local apt="$dir/apt" keyring=/usr/share/keyrings/debian-archive-keyring.gpg signed=""
  rm -rf "$apt" "$dir/debs" "$dir/root.new"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$dir/debs" "$dir/root.new"
  [ -f "$keyring" ] && signed="[signed-by=$keyring] "
  echo "deb ${signed}$mirror $suite contrib" >"$apt/sources.list"
  local opts=(-o "Dir::Etc::sourcelist=$apt/sources.list" -o Dir::Etc::sourceparts=-
              -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
              -o APT::Sandbox::User=root -q)
  apt-get "${opts[@]}" update >"$apt/update.log" 2>&1 ||
    { cat "$apt/update.log" >&2; die "apt-get update of $mirror $suite contrib failed"; }
  (cd "$dir/debs" && apt-get "${opts[@]}" download "${pkgs[@]}") >"$apt/download.log" 2>&1 ||
    { cat "$apt/download.log" >&2; die "apt-get download ${pkgs[*]} failed"; }
  local f
  for f in "$dir"/debs/*.deb; do dpkg-deb -x "$f" "$dir/root.new" || die "cannot unpack $f"; done
  [ -x "$dir/root.new/sbin/zdb" ] || die "zfsutils-linux has no sbin/zdb"
  rm -rf "$root"
  mv "$dir/root.new" "$root"
  local missing
  missing=$(LD_LIBRARY_PATH=$(libpath "$root") ldd "$root/sbin/zdb" | grep 'not found' || true)
  [ -z "$missing" ] || die "zdb needs libraries that are not installed (make deps): $missing"
  dpkg-deb -f "$dir/debs/zfsutils-linux_"*.deb Version >"$stamp"
  rm -rf "$apt"
  echo "openzfs-zdb: OpenZFS zdb $(cat "$stamp") ready in $root" >&2
)

case "${1:-}" in
  --install) fetch; exit 0 ;;
  --check) installed || { echo "OpenZFS zdb is not fetched into $dir"; exit 1; }; exit 0 ;;
esac
installed || fetch
export LD_LIBRARY_PATH="$(libpath "$root")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "${1:-}" = "--token" ]; then
  [ $# -eq 2 ] || die "usage: $0 --token TOKEN"
  exec python3 - "$2" "$root" <<'PY'
import ctypes, glob, sys
token, root = sys.argv[1], sys.argv[2]
lib = lambda n: ctypes.CDLL(glob.glob(root + "/lib/*-linux-gnu*/" + n)[0], mode=ctypes.RTLD_GLOBAL)
nvpair, zfs = lib("libnvpair.so.3"), lib("libzfs.so.4")
zfs.zfs_send_resume_token_to_nvlist.restype = ctypes.c_void_p
# The handle only receives the error text: a zeroed buffer stands in for
# libzfs_init's (which needs /dev/zfs).
hdl = ctypes.create_string_buffer(1 << 20)
nv = zfs.zfs_send_resume_token_to_nvlist(hdl, token.encode())
if not nv:
    why = [s.decode() for s in hdl.raw.split(b"\0") if len(s) > 3][:1]
    print("refused: " + (why[0] if why else "(no reason given)"))
    sys.exit(1)
sys.stdout.flush()
nvpair.dump_nvlist(ctypes.c_void_p(nv), 0)
PY
fi
tool=zdb
if [ "${1:-}" = "--zstream" ]; then
  tool=zstream
  shift
fi
"$root/sbin/$tool" "$@" && exit 0
rc=$?
# 127: the loader could not find a library (ld.so's own exit code).
[ $rc -ne 127 ] || die "cannot run $root/sbin/$tool (make deps)"
exit $rc
