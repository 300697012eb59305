// zdb on a pool or dataset: the sections printed after the pool is open
// (pool_open.h), in OpenZFS's order:
//   -C   the MOS configuration (config_dump.h)
//   -u   "Uberblock:" and the active uberblock (uberblock_text.h; the
//        layout follows its version, output_layout.h)
//   -ddd the metaslab table, before the datasets
//   -d   the MOS and every dataset, children before parents, then from
//        -ddd the deferred-free list and dirty time logs
//        (zfs/inspect/object_dump.h, zfs-fuse's layout)
//   -b   every block traversed and checked against the space maps
//        (zfs/inspect/block_traverse.h), zfs-fuse's summary layout
// For POOL/DATASET only that dataset's listing (at -d or more, else -d's).
// Everything is gathered first and written to stdout at the end; errors go
// to stderr. -q changes nothing here (OpenZFS 2.1's -q applies only to -l).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zfs/inspect/pool_reader.h"

namespace uzfs::zdb {

struct PoolDumpOptions {
  int config = 0;      // number of -C
  int uberblock = 0;   // number of -u
  int datasets = 0;    // number of -d
  int blocks = 0;      // number of -b
  std::vector<uint64_t> objects;  // with POOL/DATASET: only these objects
};

// Returns zdb's exit status: 0, or 1 when something could not be read or
// -b found damage (both reported on stderr).
int DumpPool(PoolReader& pool, const std::string& target, const PoolDumpOptions& opts);

}  // namespace uzfs::zdb
