// OpenZFS's pool cache file (its /etc/zfs/zpool.cache; uzfs writes one
// where a pool's `cachefile` property names a path, and `zpool import -c`
// reads one): which pools a host had imported and where their devices
// were, so another host or a later boot can import them without searching.
//
// Format (man/uzfs-format.5, CACHE FILE): one XDR-encoded nvlist (the
// 4-byte header included) with a pair per pool, named by the pool, whose
// value is that pool's config in the MOS config's shape (pool_config.h:
// version, name, state, txg, pool_guid, hostid, hostname, vdev_children,
// vdev_tree, spares, l2cache). zfs-fuse and OpenZFS write and read the same
// file.
//
// Promises: an update replaces the file atomically (a temporary file in the
// same directory, fsync, rename, fsync of the directory), so a crash leaves
// the old list or the new one; the last pool removed removes the file, as
// ZFS does; a file at the path that is not a cache file is never
// overwritten (InvalidArgument). Updates from several threads of one
// process are serialized.
#pragma once

#include <string>
#include <vector>

#include "zfs/util/nvlist/nvlist.h"
#include "zfs/util/status.h"

namespace uzfs {

struct CachedPoolConfig {
  std::string name;
  NvList config;
};

// The pools listed in the cache file at `path`, in file order. NotFound
// when there is no file, InvalidArgument naming the path when what is
// there is not a cache file.
Result<std::vector<CachedPoolConfig>> ReadPoolCacheFile(const std::string& path);

// Whether `path` may become a pool's cache file: an absolute path that is
// free, an empty file, or a cache file. InvalidArgument with the reason
// otherwise. (A directory that does not exist yet is fine, as in ZFS: the
// writes fail until it does.)
Status CheckPoolCacheFilePath(const std::string& path);

// Lists pool `name` in the file at `path` with `config` (replacing an entry
// of that name, otherwise appending it), or, with config null, takes it out
// (removing the file once no pool is left; nothing to do when the file or
// the entry is missing).
Status UpdatePoolCacheFile(const std::string& path, const std::string& name, const NvList* config);

// Every device path a cached config names: the leaves of its vdev_tree,
// then its spares and cache devices, without repeats.
std::vector<std::string> CachedConfigPaths(const NvList& config);

}  // namespace uzfs
