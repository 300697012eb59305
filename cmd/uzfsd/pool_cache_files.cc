// The `cachefile` pool property's files (pool_cache_files.h).
#include "cmd/uzfsd/pool_cache_files.h"

#include "zfs/dsl/pool_cache_file.h"

namespace uzfs::cmd {

std::string CacheFilePath(const CacheRecord& rec) {
  auto it = rec.props.find("cachefile");
  if (it == rec.props.end() || it->second.empty() || it->second[0] != '/') return "";
  return it->second;
}

bool ImportedAtDaemonStart(const CacheRecord& rec) {
  auto it = rec.props.find("cachefile");
  return it == rec.props.end() || it->second.empty();
}

void FollowCacheFile(PoolEntry& e, Logger& log) {
  const std::string path = CacheFilePath(e.rec);
  if (path.empty() || e.pool == nullptr) {
    if (e.pool != nullptr) e.pool->SetConfigListener(nullptr);
    return;
  }
  const std::string name = e.rec.name;
  const NvList now = e.pool->CacheConfig();
  if (Status s = UpdatePoolCacheFile(path, name, &now); !s.ok()) {
    log.Log("pool '" + name + "': cannot update cache file: " + std::string(s.message()));
  }
  e.pool->SetConfigListener([path, name, &log](const NvList& config) {
    if (Status s = UpdatePoolCacheFile(path, name, &config); !s.ok()) {
      log.Log("pool '" + name + "': cannot update cache file: " + std::string(s.message()));
    }
  });
}

void UnfollowCacheFile(PoolEntry& e) {
  if (e.pool != nullptr) e.pool->SetConfigListener(nullptr);
}

void LeaveCacheFile(const std::string& path, const std::string& name, Logger& log) {
  if (path.empty()) return;
  if (Status s = UpdatePoolCacheFile(path, name, nullptr); !s.ok()) {
    log.Log("pool '" + name + "': cannot update cache file: " + std::string(s.message()));
  }
}

}  // namespace uzfs::cmd
