# shellcheck shell=bash
# Sourced by the fio benchmark scripts: `make_dev_file PATH SIZE` makes one
# pool device file of SIZE (truncate(1) sizes: 4G, 512M). Sparse by
# default; with DEV_FILL=1 it is written full of zeros first, as a disk is.
# Why that matters: the first write into a hole of a sparse file also
# allocates in the host file system, and an fdatasync after it writes that
# allocation's metadata too. The intent log moves through free space, so on
# sparse devices every 4 KiB write + fsync pays it (about 1.45x the fsync
# time on ext4), while the file that passthrough_ll or a benchmark writes
# into was laid out once.
make_dev_file() {
  truncate -s "$2" "$1"
  if [ "${DEV_FILL:-0}" = 1 ]; then
    local mib=$(( $(stat -c %s "$1") / 1048576 ))
    # fsync: its writeback must not run into the first timed rows.
    dd if=/dev/zero of="$1" bs=1M count="$mib" conv=notrunc,fsync status=none
  fi
}
