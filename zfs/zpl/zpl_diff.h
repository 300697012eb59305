// What changed between two trees of one file system (zfs diff): an older
// snapshot `from` and a later snapshot (or the file system itself) `to`,
// both mounted (ZplFs::MountSnapshot).
//
// Objects are compared by number, as ZFS does: one named in `to` only was
// created ('+'), one named in `from` only removed ('-'; a file unlinked
// but still open counts as removed); one in both with a different
// generation or type was removed and another created under its number
// ('-' then '+'). One in both with the same generation and the same ctime
// did not change and is not listed, whatever happened around it (the
// files below a renamed directory); otherwise a file whose link count
// changed is modified with that change ('M', `links` +N or -N, named by
// its path in `from` when links were added, else in `to`), one whose
// path differs was renamed ('R'), and anything else was modified ('M':
// its data, attributes, extended attributes, or a directory's entries).
// A path is the object's name in its parent (the directory it was
// created in or last linked or moved to). Xattr directories and their
// files are not listed (a change there changes its file's ctime).
// Entries come in object number order. Each directory a path needs is
// read once per side.
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
  int64_t links = 0;       // 'M' of a file whose link count changed: by how much
  struct timespec ctime {};  // in `to` (in `from` for '-')
};

ZplResult<std::vector<ZplDiffEntry>> ZplDiff(ZplFs& from, ZplFs& to);

// The character `zfs diff -F` prints for a file of mode `mode`: F regular
// file, / directory, @ symbolic link, B block device, C character device,
// | FIFO, = socket, ? anything else.
char ZplDiffTypeChar(uint32_t mode);

// `path` as zfs diff prints it: bytes that are not printable ASCII, the
// space and the backslash as \0ooo (four octal digits, as OpenZFS does).
std::string ZplDiffEscape(const std::string& path);

}  // namespace uzfs
