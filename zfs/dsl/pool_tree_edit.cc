// Shared pieces of the pool's vdev-tree changes (pool_tree_edit.h).
#include "zfs/dsl/pool_tree_edit.h"

#include <chrono>

#include "zfs/dsl/pool_build.h"
#include "zfs/spa/label_io.h"
#include "zfs/vdev/fault_device.h"

namespace uzfs {

VdevNode* FindVdevNode(VdevNode& n, uint64_t guid) {
  if (n.guid == guid) return &n;
  for (VdevNode& c : n.children) {
    if (VdevNode* f = FindVdevNode(c, guid)) return f;
  }
  return nullptr;
}

VdevNode* FindParentVdevNode(VdevNode& n, uint64_t guid) {
  for (VdevNode& c : n.children) {
    if (c.guid == guid) return &n;
    if (VdevNode* f = FindParentVdevNode(c, guid)) return f;
  }
  return nullptr;
}

void MoveTopFields(const VdevNode& from, VdevNode& to) {
  to.metaslab_array = from.metaslab_array;
  to.metaslab_shift = from.metaslab_shift;
  to.ashift = from.ashift;
  to.asize = from.asize;
  to.is_log = from.is_log;
  to.top_zap = from.top_zap;
}

Result<std::unique_ptr<Vdev>> OpenJoiningLeaf(const std::string& pool, const std::string& quoted,
                                              const std::string& path, uint64_t min_asize, uint32_t ashift,
                                              bool injectable, bool force, IoEngine& io, uint64_t guid) {
  auto opened = OpenNewLeaf(pool, path, force);
  if (!opened.ok()) {
    // OpenNewLeaf speaks for zpool create; say what this command does.
    std::string m(opened.status().message());
    const std::string create = "cannot create '" + pool + "': ";
    if (m.compare(0, create.size(), create) == 0) m = m.substr(create.size());
    return Status(opened.status().code(), quoted + m);
  }
  if (LeafAsize((*opened)->Size()) < min_asize) return Status::InvalidArgument(quoted + "device is too small");
  UZFS_RETURN_IF_ERROR(InitDeviceLabels(**opened));
  std::unique_ptr<BlockDevice> dev = std::move(*opened);
  if (injectable) dev = std::make_unique<FaultDevice>(std::move(dev), FaultDeviceOptions{.volatile_cache = false});
  std::unique_ptr<Vdev> leaf = MakeLeafVdev(std::move(dev), io, guid, ashift);
  leaf->SetStale(true);
  return leaf;
}

uint64_t EpochSeconds() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

}  // namespace uzfs
