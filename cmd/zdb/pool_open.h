// How zdb finds the pool it is asked about, and opens it read-only.
//
//   - with -e (an exported pool): every device in the -p directory (/dev by
//     default) whose labels name the pool, matched by guid
//     (zfs/inspect/pool_reader.h);
//   - without -e (an imported pool): the devices the daemon's cache file
//     (RUNDIR/zpool.cache, man/uzfsd.8) lists for the pool, as OpenZFS's
//     zdb finds imported pools through /etc/zfs/zpool.cache. The pool stays
//     imported and in use: zdb only reads (devices opened read-only and
//     shared) and sees the last synced txg, so a pool being written may
//     show a state that is already gone, as with OpenZFS's zdb.
// Errors are one line on stderr: "cannot import 'POOL': no such pool
// available" (with -e, zpool import's words) or "zdb: can't open 'POOL':
// REASON" (without -e; REASON names the cache file when the pool is not
// listed there and says an exported pool needs -e).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "zfs/inspect/pool_reader.h"
#include "zfs/util/status.h"

namespace uzfs::zdb {

struct PoolSource {
  bool exported = false;    // -e
  std::string dir = "/dev";  // -p
};

// The pool, or nullptr after printing why not.
std::unique_ptr<PoolReader> OpenPoolOrReport(const PoolSource& source, const std::string& pool);

// One pool the cache file lists.
struct CachedPool {
  std::string name;
  std::vector<std::string> devices;
};

// The cache file's path (UZFS_RUNDIR, or /run/uzfs, + /zpool.cache).
std::string CacheFilePath();
// Its pools in file order. NotFound when it does not exist, Corruption when
// it is not a uzfs cache file.
Result<std::vector<CachedPool>> ReadCacheFile();
// Opens a cached pool from its listed devices.
Result<std::unique_ptr<PoolReader>> OpenCachedPool(const CachedPool& pool);

}  // namespace uzfs::zdb
