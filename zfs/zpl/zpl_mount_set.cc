// ZplMountSet: the mounts sharing a cache budget (see zpl_mount_set.h).
#include "zfs/zpl/zpl_mount_set.h"

#include "zfs/dmu/objset_writer.h"
#include "zfs/zpl/zpl_dir.h"

namespace uzfs {

ZplMountSet& ZplMountSet::Default() {
  // Leaked on purpose: file systems may be unmounted by static destructors.
  static ZplMountSet* set = new ZplMountSet();
  return *set;
}

bool ZplMountSet::Claim(ObjsetWriter* os, uint64_t synced_limit, uint64_t dir_limit) {
  MutexLock g(&mu_);
  return mounted_.emplace(os, Caches{synced_limit, dir_limit}).second;
}

void ZplMountSet::Attach(ObjsetWriter* os, ZplDirs* dirs) {
  MutexLock g(&mu_);
  mounted_.at(os).dirs = dirs;
  ShareLocked();
}

void ZplMountSet::Release(ObjsetWriter* os) {
  MutexLock g(&mu_);
  if (mounted_.erase(os) != 0) ShareLocked();
}

void ZplMountSet::ShareLocked() {
  const uint64_t n = mounted_.size();
  for (const auto& [os, c] : mounted_) {
    os->SetSyncedCacheLimit(c.synced_limit / n);
    if (c.dirs != nullptr) c.dirs->set_cache_bytes(c.dir_limit / n);
  }
}

}  // namespace uzfs
