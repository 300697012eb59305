// Stream prefetch's rows of the tunables table (zfs/util/tunables.h):
// zfetch_disable, zfetch_max_streams, zfetch_min_distance,
// zfetch_max_distance, zfetch_max_stride, the settings of the
// StreamPrefetcher (prefetch.h) that file reads drive
// (zfs/zpl/zpl_prefetch.h reads them when it makes a file's prefetcher).
// Settable as UZFS_<NAME>, `uzfsd -o name=value` or at run time.
#pragma once

#include <cstdint>
#include <span>

#include "cache/prefetch.h"
#include "zfs/util/tunables.h"

namespace uzfs {

std::span<const TunableDef> PrefetchTunableDefs();
// For a file of `block_size`-byte blocks (zfetch_disable is the caller's
// to check: no prefetcher at all).
// REQUIRES: t was built with PrefetchTunableDefs() among its tables.
PrefetchOptions PrefetchOptionsFromTunables(const Tunables& t, uint64_t block_size);

}  // namespace uzfs
