// What changed between two trees of one file system (zfs diff): an older
// snapshot `from` and a later snapshot (or the file system itself) `to`,
// both mounted (ZplFs::MountSnapshot).
//
// Objects are compared by number, as ZFS does: one in `to` only was
// created ('+'), one in `from` only removed ('-'); one in both with a
// different generation was removed and another created under its number
// ('-' then '+'); one in both with the same generation was renamed ('R')
// when its path differs (its first name: the directory it was created in
// or last moved to), else modified ('M') when its ctime differs (any
// change to its data, attributes or, for a directory, entries). An xattr
// directory and its files are not listed (a change there changes its
// file's ctime); files unlinked but still open have no path and are
// skipped. Entries come in object number order.
//
// Reads only, as root (no permission checks, no atime).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "zfs/zpl/zpl_fs.h"

namespace uzfs {

struct ZplDiffEntry {
  char change = 'M';       // '+', '-', 'M' or 'R'
  uint64_t ino = 0;
  uint32_t mode = 0;       // the file's S_IFMT bits and permissions
  std::string path;        // relative to the root ("/" the root); in `from` for '-'
  std::string new_path;    // 'R': where it is in `to`
  struct timespec ctime {};  // in `to` (in `from` for '-')
};

ZplResult<std::vector<ZplDiffEntry>> ZplDiff(ZplFs& from, ZplFs& to);

// The character `zfs diff -F` prints for a file of mode `mode`: F regular
// file, / directory, @ symbolic link, B block device, C character device,
// | FIFO, = socket.
char ZplDiffTypeChar(uint32_t mode);

// `path` as zfs diff prints it: bytes that are not printable ASCII, the
// space and the backslash as \0ooo (four octal digits, as OpenZFS does).
std::string ZplDiffEscape(const std::string& path);

}  // namespace uzfs
