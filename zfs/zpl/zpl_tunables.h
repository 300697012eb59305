// The ZPL's rows of the tunables table (zfs/util/tunables.h):
// zfs_immediate_write_sz (logged writes this large or larger go to the
// intent log by reference), zpl_dir_cache_max (bytes of directory ZAP
// blocks a mounted file system keeps between operations) and
// zpl_parallel_writes (writes of different files at the same time). Settable as
// UZFS_<NAME>, `uzfsd -o name=value` or at run time; a file system reads
// them when it is mounted (zpl_fs.cc, which keeps the same defaults when
// it is given no tunables).
#pragma once

#include <span>

#include "zfs/util/tunables.h"

namespace uzfs {

std::span<const TunableDef> ZplTunableDefs();
// zpl_parallel_writes' default: 1 with 4 or more CPUs, else 0.
uint64_t ParallelWritesDefault();

}  // namespace uzfs
