// The path of an object inside its file system, found from the object
// upwards: each znode names the directory it was created in (or last
// renamed into), and that directory's entries give its name. What
// `zpool status -v` prints for a damaged file.
//
// Reads only: no atime changes, no permission checks (root's view).
#pragma once

#include <cstdint>
#include <string>

#include "zfs/zpl/zpl_fs.h"

namespace uzfs {

// "/dir/file" relative to the file system's root ("/" for the root);
// ENOENT when the object is gone or no longer named in its parent (an
// unlinked file still open), ELOOP for a parent chain that never reaches
// the root.
ZplResult<std::string> ZplPathOf(ZplFs& fs, uint64_t ino);
// The name under which directory `dir` lists `ino`; ENOENT when it does not.
ZplResult<std::string> ZplNameIn(ZplFs& fs, uint64_t dir, uint64_t ino);

}  // namespace uzfs
