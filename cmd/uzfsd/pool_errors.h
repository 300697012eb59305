// What `zpool status` says when something went wrong beyond a missing
// device: damaged data (the pool's persistent error log, error_log.h) and
// devices that returned errors the pool repaired.
//
//   - status:/action:/see: paragraphs: unrecoverable data (ZFS-8000-8A)
//     before repaired device errors (ZFS-8000-9P);
//   - the errors: line: "No known data errors", or "N data errors, use
//     '-v' for a list", or with -v the damaged files: full paths for
//     mounted file systems, "dataset:<0xOBJ>" where the name cannot be
//     found (not mounted, file gone), "<metadata>:<0xOBJ>" for the MOS;
//     one line per file however many of its blocks are damaged.
#pragma once

#include <string>
#include <vector>

#include "cmd/uzfsd/registry.h"
#include "zfs/dsl/error_log.h"

namespace uzfs::cmd {

struct PoolTrouble {
  std::vector<DataErrorBookmark> data_errors;  // the pool's error log
  bool device_errors = false;                  // a device counted read, write or checksum errors
  bool any() const { return !data_errors.empty() || device_errors; }
};

// The pool's error log and device counters now. An unreadable error log is
// itself reported as one damaged MOS block (never as "no errors").
PoolTrouble TroubleOf(PoolEntry& e) UZFS_REQUIRES(e.mu);
// The status:/action:/see: lines for it ("" when nothing is wrong).
std::string TroubleParagraph(const PoolTrouble& t);
// The "errors:" section, with the file list when verbose.
std::string ErrorsSection(PoolEntry& e, const PoolTrouble& t, bool verbose) UZFS_REQUIRES(e.mu);

}  // namespace uzfs::cmd
