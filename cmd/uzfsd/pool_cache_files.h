// The `cachefile` pool property as the daemon keeps it (man/zpool.8):
//   - unset or "": the pool is in the daemon's own cache file (registry.h)
//     and imported again when the daemon starts;
//   - "none": in no cache file;
//   - an absolute path: listed in the OpenZFS cache file there
//     (zfs/dsl/pool_cache_file.h), written when the pool is created or
//     imported, rewritten after every txg that changes its config, taken
//     out at export and destroy. A daemon shutdown, like a host going down,
//     leaves it listed, so another daemon or host can `zpool import -c`.
// Pools with "none" or a path are not imported at daemon start: OpenZFS's
// boot import reads only its default cache file.
#pragma once

#include <string>

#include "cmd/uzfsd/registry.h"

namespace uzfs::cmd {

// The OpenZFS cache file the record names, or "" (default or none).
std::string CacheFilePath(const CacheRecord& rec);
// Whether the daemon imports the pool again at its start.
bool ImportedAtDaemonStart(const CacheRecord& rec);

// Lists the pool in the cache file its record names (nothing for default
// or none) and keeps it current from then on. A write that fails is
// logged: the pool stays imported.
void FollowCacheFile(PoolEntry& e, Logger& log) UZFS_REQUIRES(e.mu);
// Stops keeping the file current (before export, destroy, shutdown or a
// change of the property); the file is left as it is.
void UnfollowCacheFile(PoolEntry& e) UZFS_REQUIRES(e.mu);
// Takes pool `name` out of the cache file at `path` ("" : nothing to do).
void LeaveCacheFile(const std::string& path, const std::string& name, Logger& log);

}  // namespace uzfs::cmd
