// The cache layer's rows of the tunables table (tunables.h), and how an
// Arc, its reaper and the prefetcher take their settings from them.
//
// Every row is settable as UZFS_<NAME> in the environment, `uzfsd -o
// name=value`, or at run time; ApplyArcTunables is what the daemon calls at
// start and registers as a watcher so run-time changes reach the Arc.
#pragma once

#include <span>

#include "cache/arc.h"
#include "cache/arc_reaper.h"
#include "cache/prefetch.h"
#include "cache/tunables.h"

namespace uzfs {

std::span<const TunableDef> CacheTunableDefs();

// dbuf_cache_max's default (1/32 of RAM): the synced-block cache of each
// mounted file system's object set (zfs/dmu/objset_writer.h).
uint64_t DefaultSyncedCacheBytes();

// ArcOptions from the current values (for constructing the daemon's Arc).
ArcOptions ArcOptionsFromTunables(const Tunables& t);
ReaperOptions ReaperOptionsFromTunables(const Tunables& t);
// For a file of `block_size`-byte blocks (zfetch_disable is the caller's
// to check: no prefetcher at all).
PrefetchOptions PrefetchOptionsFromTunables(const Tunables& t, uint64_t block_size);
// Pushes arc_max/arc_min/arc_meta_limit_percent/arc_decompressed_max into a
// running Arc (what a run-time change does).
void ApplyArcTunables(const Tunables& t, Arc& arc);

}  // namespace uzfs
