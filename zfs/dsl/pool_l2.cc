// Pool: its cache (l2cache) devices. They are opened with the pool (create
// labels them; import opens the ones its config names), kept open while it
// is imported and handed to the daemon's L2ARC (PoolCreateOptions::l2arc),
// which rebuilds its index from them (persistent L2ARC). A cache device is
// never needed for correctness: one that cannot be opened is UNAVAIL, one
// whose label is not this pool's l2cache device is FAULTED, and neither
// fails the import. Export (and the destructor) take them out of the L2ARC
// before closing them.
#include <algorithm>

#include "cache/l2arc.h"
#include "zfs/dsl/pool.h"
#include "zfs/spa/label_io.h"
#include "zfs/vdev/device_claims.h"
#include "zfs/vdev/file_device.h"
#include "zfs/vdev/leaf_open.h"

namespace uzfs {

namespace {

std::unique_ptr<BlockDevice> Wrap(std::unique_ptr<BlockDevice> d, bool injectable) {
  if (!injectable) return d;
  return std::make_unique<FaultDevice>(std::move(d), FaultDeviceOptions{.volatile_cache = false});
}

}  // namespace

void Pool::HandToL2(CacheDev& c) {
  if (!l2arc_ || !c.dev || c.in_l2 || readonly_) return;
  Status st = l2arc_->AttachDevice(c.dev.get(), ident_.pool_guid, c.node.guid);
  if (st.ok()) {
    c.in_l2 = true;
  } else {
    c.state = "FAULTED";
  }
}

void Pool::AdoptCacheDevices(std::vector<std::unique_ptr<BlockDevice>> devs, L2Arc* l2arc, bool injectable) {
  MutexLock l(&cache_mu_);
  l2arc_ = l2arc;
  cache_injectable_ = injectable;
  for (size_t i = 0; i < devs.size() && i < cache_.size(); i++) {
    CacheDev c;
    c.node = cache_[i];
    c.dev = Wrap(std::move(devs[i]), injectable);
    c.state = "ONLINE";
    cache_devs_.push_back(std::move(c));
    HandToL2(cache_devs_.back());
  }
}

void Pool::OpenCacheDevices(L2Arc* l2arc, bool injectable) {
  std::vector<VdevNode> nodes;
  {
    MutexLock l(&mu_);
    nodes = cache_;
  }
  MutexLock l(&cache_mu_);
  l2arc_ = l2arc;
  cache_injectable_ = injectable;
  for (const VdevNode& n : nodes) {
    CacheDev c;
    c.node = n;
    c.state = "UNAVAIL";
    auto dev = OpenLeafDevice(n.path, FileDeviceOptions{.read_only = readonly_, .exclusive = true});
    if (dev.ok()) {
      auto labels = ReadDeviceLabels(**dev, 9);
      const bool ours = labels.ok() && labels->config.GetUint64("guid").ok() &&
                        *labels->config.GetUint64("guid") == n.guid &&
                        labels->config.GetUint64("state").ok() &&
                        *labels->config.GetUint64("state") == kPoolStateL2cache;
      if (ours) {
        c.dev = Wrap(std::move(*dev), injectable);
        c.state = "ONLINE";
      } else {
        c.state = "FAULTED";
      }
    }
    cache_devs_.push_back(std::move(c));
    HandToL2(cache_devs_.back());
  }
}

void Pool::CloseCacheDevices() {
  MutexLock l(&cache_mu_);
  for (CacheDev& c : cache_devs_) {
    if (c.in_l2 && l2arc_) l2arc_->DetachDevice(c.dev.get());
    c.in_l2 = false;
  }
  cache_devs_.clear();
}

FaultDevice* Pool::CacheFaults(const std::string& path_or_guid) {
  MutexLock l(&cache_mu_);
  for (CacheDev& c : cache_devs_) {
    if (c.dev && (c.node.path == path_or_guid || std::to_string(c.node.guid) == path_or_guid)) {
      return dynamic_cast<FaultDevice*>(c.dev.get());
    }
  }
  return nullptr;
}

std::vector<CacheDeviceInfo> Pool::CacheDevices() const {
  MutexLock l(&cache_mu_);
  std::vector<L2DeviceInfo> l2;
  if (l2arc_) l2 = l2arc_->Devices();
  std::vector<CacheDeviceInfo> out;
  for (const CacheDev& c : cache_devs_) {
    CacheDeviceInfo i;
    i.path = c.node.path;
    i.guid = c.node.guid;
    i.state = c.state;
    if (c.dev) i.errors = c.dev->errors().Snapshot();
    for (const L2DeviceInfo& d : l2) {
      if (d.dev == c.dev.get()) {
        i.alloc = d.asize;
        i.size = d.capacity;
      }
    }
    out.push_back(i);
  }
  return out;
}

Status Pool::AttachCacheDevice(const std::string& path, bool force) {
  const std::string quoted = "cannot add to '" + ident_.name + "': ";
  if (readonly_) return Status::NotSupported(quoted + "pool is read-only");
  {
    MutexLock l(&mu_);
    for (const VdevNode& n : cache_) {
      if (n.path == path) return Status::InvalidArgument(quoted + path + " is already a cache device of the pool");
    }
  }
  auto dev = OpenLeafDevice(path, FileDeviceOptions{.read_only = false, .exclusive = true});
  if (!dev.ok()) return dev.status().WithContext("cannot open '" + path + "'");
  if ((*dev)->Size() < kMinDeviceSize) {
    return Status::InvalidArgument(quoted + "device is less than the minimum size (64M)");
  }
  if (auto labels = ReadDeviceLabels(**dev, 9); labels.ok() && !force) {
    const uint64_t state = labels->config.GetUint64("state").ok() ? *labels->config.GetUint64("state") : 0;
    auto other = labels->config.GetString("name");
    if (state != kPoolStateDestroyed && state != kPoolStateL2cache && state != kPoolStateSpare && other.ok()) {
      return Status::InvalidArgument(quoted + path + " is part of pool '" + std::string(*other) + "'");
    }
  }
  if (!force) {
    if (const std::string other = ForeignContent(path); !other.empty()) {
      return Status::InvalidArgument(quoted + path + " contains " + other + " (use '-f' to override)");
    }
  }
  VdevNode n;
  n.type = "file";
  n.path = path;
  n.guid = NewGuid();
  UZFS_RETURN_IF_ERROR(InitDeviceLabels(**dev));
  UZFS_RETURN_IF_ERROR(WriteDeviceConfig(**dev, AuxLabelConfig(ident_.version, kPoolStateL2cache, n.guid)));
  {
    MutexLock l(&mu_);
    cache_.push_back(n);
    config_dirty_ = true;
  }
  {
    MutexLock l(&cache_mu_);
    CacheDev c;
    c.node = n;
    c.dev = Wrap(std::move(*dev), cache_injectable_);
    c.state = "ONLINE";
    cache_devs_.push_back(std::move(c));
    HandToL2(cache_devs_.back());
  }
  return Sync();
}

Status Pool::DetachCacheDevice(const std::string& path_or_guid) {
  std::unique_ptr<BlockDevice> dev;
  uint64_t guid = 0;
  {
    MutexLock l(&cache_mu_);
    auto it = std::find_if(cache_devs_.begin(), cache_devs_.end(), [&](const CacheDev& c) {
      return c.node.path == path_or_guid || std::to_string(c.node.guid) == path_or_guid;
    });
    if (it == cache_devs_.end()) {
      return Status::NotFound("cannot remove " + path_or_guid + ": no such cache device in pool '" + ident_.name + "'");
    }
    if (it->in_l2 && l2arc_) l2arc_->DetachDevice(it->dev.get());
    guid = it->node.guid;
    dev = std::move(it->dev);
    cache_devs_.erase(it);
  }
  {
    MutexLock l(&mu_);
    cache_.erase(std::remove_if(cache_.begin(), cache_.end(), [&](const VdevNode& n) { return n.guid == guid; }),
                 cache_.end());
    config_dirty_ = true;
  }
  if (dev && !readonly_) InitDeviceLabels(*dev).IgnoreError();  // no longer this pool's
  return Sync();
}

}  // namespace uzfs
