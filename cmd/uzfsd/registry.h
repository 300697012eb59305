// The daemon's state: the imported pools and the cache file that lists
// them (RUNDIR/zpool.cache), plus its log.
//
// Cache file: JSON, {"version":1,"pools":[{"name","guid","devices":[paths],
// "readonly","altroot","props":{name:value}}]}. A pool is in it from its
// create/import until `zpool export`/`zpool destroy`; a daemon shutdown
// (SIGTERM/SIGINT) exports every pool but KEEPS them listed, and a daemon
// start imports every listed pool (ZFS's cachefile import at boot), as does
// `zpool import -a`, which also searches the listed devices' directories.
// `props` holds this host's pool properties (cachefile) and the `-o` values
// of a read-only import; every other pool property lives in the pool's
// pool_props ZAP (Pool::SetPoolProps), where MakeEntry moves any it finds.
//
// Locking: lifecycle_mu serializes the requests that add or remove pools
// (create, import, export, destroy, shutdown); each PoolEntry's mu
// serializes the requests on that pool (dataset changes, reads). Order:
// lifecycle_mu, then an entry's mu, then the registry's own mu_ (held only
// inside Registry methods). The log has its own lock, taken last.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cmd/uzfsd/mounts.h"
#include "zfs/dsl/pool.h"
#include "zfs/util/mutex.h"
#include "zfs/util/status.h"

namespace uzfs::cmd {

class Logger {
 public:
  Logger() = default;
  // Appends to `path`; with `also_stderr` every line goes to stderr too.
  bool Open(const std::string& path, bool also_stderr);
  ~Logger();
  void Log(const std::string& line) UZFS_EXCLUDES(mu_);

 private:
  Mutex mu_;
  FILE* f_ UZFS_GUARDED_BY(mu_) = nullptr;
  bool also_stderr_ = false;
};

// What the config says beyond the live vdev tree.
struct PoolShape {
  std::vector<bool> top_is_log;     // by top-level vdev id
  std::vector<std::string> spares;  // device paths
  std::vector<std::string> cache;
};

// One cache-file record.
struct CacheRecord {
  std::string name;
  uint64_t guid = 0;
  std::vector<std::string> devices;
  bool readonly = false;
  std::string altroot;
  std::map<std::string, std::string> props;
};

// Shared flock()s on the devices of a pool imported read-only. Pool opens
// such devices shared and unlocked, so without these another daemon could
// import the same pool read-write under us; with them its exclusive open
// fails (Busy), and ours fails when someone holds the pool read-write.
class DeviceLocks {
 public:
  DeviceLocks() = default;
  ~DeviceLocks() { Release(); }
  DeviceLocks(const DeviceLocks&) = delete;
  DeviceLocks& operator=(const DeviceLocks&) = delete;
  // Busy naming the first device some other open holds exclusively.
  Status Take(const std::vector<std::string>& paths);
  void Release();

 private:
  std::vector<int> fds_;
};

struct PoolEntry {
  Mutex mu;  // one request on this pool at a time
  std::unique_ptr<Pool> pool UZFS_GUARDED_BY(mu);
  DeviceLocks ro_locks UZFS_GUARDED_BY(mu);  // read-only imports only
  CacheRecord rec UZFS_GUARDED_BY(mu);
  PoolShape shape UZFS_GUARDED_BY(mu);
  // Mounted datasets (declared after `pool`, so destroyed before it).
  PoolMounts mounts UZFS_GUARDED_BY(mu);
  // What the last automatic mount (create/import) could not mount.
  std::vector<std::string> mount_errors UZFS_GUARDED_BY(mu);
  std::chrono::steady_clock::time_point since;  // import/create time (iostat's first report)
  // OpenZFS's load_guid: a random guid chosen each time the pool is
  // loaded (created or imported), the same until it is exported.
  uint64_t load_guid = 0;
  // Sends streaming from the pool now (zfs_send.cc): export and destroy
  // wait for none, they refuse ("pool is busy").
  int streams UZFS_GUARDED_BY(mu) = 0;
};

class Registry {
 public:
  Registry(std::string rundir, Logger* log) : rundir_(std::move(rundir)), log_(log) {}

  // Held by create, import, export, destroy and shutdown.
  Mutex lifecycle_mu;
  const std::string& rundir() const { return rundir_; }
  Logger& log() { return *log_; }

  // nullptr when no pool of that name is imported.
  std::shared_ptr<PoolEntry> Find(const std::string& name) UZFS_EXCLUDES(mu_);
  // Every imported pool, by name.
  std::vector<std::shared_ptr<PoolEntry>> All() UZFS_EXCLUDES(mu_);
  // REQUIRES: lifecycle_mu held, no pool of that name imported.
  void Add(const std::string& name, std::shared_ptr<PoolEntry> e, const CacheRecord& rec)
      UZFS_EXCLUDES(mu_);
  // Forgets the pool; keep_in_cache: still listed (daemon shutdown).
  void Remove(const std::string& name, bool keep_in_cache) UZFS_EXCLUDES(mu_);
  // Replaces the pool's cache record (props changed).
  void UpdateCache(const CacheRecord& rec) UZFS_EXCLUDES(mu_);
  // The records of the cache file (empty when it is missing or unreadable).
  std::vector<CacheRecord> ReadCacheFile() UZFS_EXCLUDES(mu_);
  // Takes over the cache file's records (daemon start, before importing).
  void LoadCache() UZFS_EXCLUDES(mu_);
  // Drops a cache record that no longer imports (not there anymore).
  void DropFromCache(const std::string& name) UZFS_EXCLUDES(mu_);

 private:
  void WriteCacheFile() UZFS_REQUIRES(mu_);

  const std::string rundir_;
  Logger* log_;
  Mutex mu_;
  std::map<std::string, std::shared_ptr<PoolEntry>> pools_ UZFS_GUARDED_BY(mu_);
  std::map<std::string, CacheRecord> cache_ UZFS_GUARDED_BY(mu_);
};

}  // namespace uzfs::cmd
