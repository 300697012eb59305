#!/usr/bin/env bash
# Builds the test tree of tests/zpl/zpl_tree_compat_test.cc (zfs-fuse ->
# uzfs) in directory $1 with ordinary tools only (mkdir, cp, ln, truncate,
# dd, setfattr, mknod, chmod, chown, touch), the way a user of zfs-fuse's
# mount would; the same kinds of objects as the uzfs-made tree: many small
# and medium files (a directory big enough for a fat ZAP), a directory
# chain of depth 24, hard links across directories, short and long
# symlinks, sparse files with holes, a 64 MiB random file, odd sizes,
# xattrs (user.* and trusted.*, empty to 4 KiB), device nodes and fifos,
# odd names (spaces, tabs, newlines, UTF-8, leading dashes, 255 bytes),
# set-id and sticky modes, uids/gids, and mtimes set last (with
# nanoseconds, which zfs-fuse may drop: the manifests are compared after).
# Deterministic except for the random file's content.
#   tests/zpl/zpl-make-tree.sh DIR [NFILES]
set -euo pipefail
t=${1:?dir}; nfiles=${2:-1000}
cd "$t"
seed=$(mktemp)
trap 'rm -f "$seed"' EXIT
seq 1 300000 | tr '\n' ' ' > "$seed"   # text-like content, about 2 MB

# Many small and medium files: NFILES split over d00..d09, and "wide"
# with 1200 long names (forces a fat ZAP directory).
for d in 0 1 2 3 4 5 6 7 8 9; do mkdir "d0$d"; done
for i in $(seq 1 "$nfiles"); do
  d=$(printf 'd%02d' $((i % 10)))
  size=$(( (i * 7919) % 9000 ))
  if (( i % 40 == 0 )); then size=$(( 131072 + (i * 104729) % 400000 )); fi
  head -c $((i * 13 + size)) "$seed" | tail -c "$size" > "$d/f$i"
  if (( i % 3 == 0 )); then printf 'file %d\n' "$i" | dd of="$d/f$i" bs=1 seek=$((size / 2)) conv=notrunc status=none; fi
done
mkdir wide
for i in $(seq 1 1200); do
  printf 'entry %d\n' "$i" > "wide/a-rather-long-file-name-so-the-directory-needs-a-fat-zap-$i"
done

# Depth 24.
p=deep
for i in $(seq -w 1 24); do p="$p/level$i"; done
mkdir -p "$p"
echo "at the bottom" > "$p/leaf.txt"

# Hard links (across directories) and symlinks.
mkdir links links/sub
echo "linked content" > links/orig
ln links/orig links/hard1
ln links/orig links/sub/hard2
ln d01/f1 links/hard-to-many
ln -s orig links/short
ln -s "$(printf 'x%.0s' $(seq 1 57))" links/long57
ln -s "$(printf 'abcdefghij/%.0s' $(seq 1 20))target" links/long226
ln -s "$(printf 'y%.0s' $(seq 1 1023))" links/long1023
ln -s /nonexistent/absolute/path links/dangling

# Sparse files.
mkdir sparse
truncate -s 10M sparse/holes
printf 'start' | dd of=sparse/holes conv=notrunc status=none
head -c 100000 /dev/urandom | dd of=sparse/holes bs=1M seek=5 conv=notrunc status=none
printf 'end' | dd of=sparse/holes bs=1 seek=$((10 * 1024 * 1024 - 3)) conv=notrunc status=none
truncate -s 1G sparse/empty1g
printf 'late' | dd of=sparse/late bs=1M seek=3 status=none

# A large file and odd sizes.
dd if=/dev/urandom of=large bs=1M count=64 status=none
mkdir odd
for s in 0 1 511 512 513 4095 4097 131071 131072 131073 262145 1000000; do
  head -c "$s" /dev/urandom > "odd/size-$s"
done

# Extended attributes.
mkdir xattrs
echo data > xattrs/file
setfattr -n user.small -v hello xattrs/file
setfattr -n user.empty xattrs/file
setfattr -n user.big -v "0x$(head -c 4000 /dev/urandom | od -An -tx1 -v | tr -d ' \n')" xattrs/file
setfattr -n trusted.t -v secret xattrs/file
for i in $(seq 1 20); do setfattr -n "user.many$i" -v "value $i" xattrs/file; done
setfattr -n user.ondir -v dir xattrs

# Device nodes and fifos.
mkdir dev
mknod dev/null c 1 3
mknod dev/sda1 b 8 1
mknod dev/big c 259 65537
mkfifo dev/fifo

# Odd names.
mkdir names
for n in "with space" "tab	here" $'new\nline' "ünïcødé-日本語" "-leading-dash" "--" ".hidden" \
         "..." 'back\slash' '*?[glob]' '100%' "$(printf 'n%.0s' $(seq 1 255))" \
         "$(printf 'é%.0s' $(seq 1 127))x"; do
  printf '%s\n' "$n" > "names/$n"
done

# Modes and owners.
mkdir modes
for m in 0000 0444 0600 0777 4755 2755 6711; do
  echo "$m" > "modes/m$m"; chmod "$m" "modes/m$m"
done
mkdir modes/sticky; chmod 1777 modes/sticky
mkdir modes/setgid-dir; chmod 2775 modes/setgid-dir
echo u > modes/owned; chown 1000:1000 modes/owned
echo u > modes/nobody; chown 65534:65534 modes/nobody
echo u > modes/big-ids; chown 123456789:987654321 modes/big-ids
chown -h 4242:4343 links/short

# Times last, directories after their contents (deepest first).
i=0
while IFS= read -r -d '' f; do
  i=$((i + 1))
  touch -h -m -d "@$((1500000000 + i * 7777)).$(printf '%09d' $(( (i * 123456789) % 1000000000 )))" "$f"
done < <(find . -mindepth 1 \! -type d -print0 | sort -z)
while IFS= read -r -d '' f; do
  touch -m -d "@1600000000.5" "$f"
done < <(find . -mindepth 1 -type d -print0 | sort -rz)
touch -m -d "@1600000000.25" .
chmod 0555 deep/level01
