// The DMU's rows of the tunables table (zfs/util/tunables.h):
// dbuf_cache_max, the bytes of file blocks the synced-block cache of each
// mounted file system's object set keeps after their txg synced
// (zfs/dmu/synced_block_cache.h), so a partial overwrite needs no read.
// Settable as UZFS_<NAME>, `uzfsd -o name=value` or at run time; a file
// system reads it when it is mounted.
#pragma once

#include <cstdint>
#include <span>

#include "zfs/util/tunables.h"

namespace uzfs {

std::span<const TunableDef> DmuTunableDefs();

// dbuf_cache_max's default: 1/32 of RAM (the cgroup's limit when smaller).
uint64_t DefaultSyncedCacheBytes();

}  // namespace uzfs
