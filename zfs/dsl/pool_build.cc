// Pieces of pool building shared by create, import and zpool add/remove
// (see pool_build.h): opening a new leaf with the checks `zpool create`
// makes, turning a VdevSpec into a vdev and its config node, and the
// allocator's view of a top-level vdev.
#include "zfs/dsl/pool.h"  // kInitialTxg
#include "zfs/dsl/pool_build.h"
#include "zfs/spa/label_io.h"
#include "zfs/vdev/device_claims.h"
#include "zfs/vdev/fault_device.h"
#include "zfs/vdev/leaf_open.h"

namespace uzfs {

// Opens a leaf for a new pool: exclusive, big enough, not part of another
// pool and holding no other file system or partition table unless forced.
Result<std::unique_ptr<BlockDevice>> OpenNewLeaf(const std::string& pool, const std::string& path,
                                                 bool force) {
  auto dev = OpenLeafDevice(path, FileDeviceOptions{.read_only = false, .exclusive = true});
  if (!dev.ok()) {
    return dev.status().WithContext("cannot open '" + path + "'");
  }
  if ((*dev)->Size() < kMinDeviceSize) {
    return Status::InvalidArgument("cannot create '" + pool +
                                   "': one or more devices is less than the minimum size (64M)");
  }
  auto labels = ReadDeviceLabels(**dev, 9);
  if (labels.ok() && !force) {
    const uint64_t state = labels->config.GetUint64("state").ok() ? *labels->config.GetUint64("state") : 0;
    auto other = labels->config.GetString("name");
    if (state != kPoolStateDestroyed && state != kPoolStateSpare && state != kPoolStateL2cache &&
        other.ok()) {
      return Status::InvalidArgument(
          "invalid vdev specification\nuse '-f' to override the following errors:\n" + path +
          " is part of " + (state == kPoolStateExported ? "exported " : "active ") + "pool '" +
          std::string(*other) + "'");
    }
  }
  if (!force) {
    if (const std::string other = ForeignContent(path); !other.empty()) {
      return Status::InvalidArgument("invalid vdev specification\nuse '-f' to override the following errors:\n" +
                                     path + " contains " + other);
    }
  }
  return dev;
}

Result<BuiltVdev> BuildFromSpec(const std::string& pool, const VdevSpec& spec, IoEngine& io,
                                uint32_t ashift, bool force, uint64_t id, bool injectable) {
  BuiltVdev out;
  out.node.id = id;
  out.node.guid = NewGuid();
  out.node.create_txg = kInitialTxg;
  if (spec.type == VdevSpec::Type::kFile || spec.type == VdevSpec::Type::kDisk) {
    UZFS_ASSIGN_OR_RETURN(auto dev, OpenNewLeaf(pool, spec.path, force));
    out.node.type = spec.type == VdevSpec::Type::kDisk ? "disk" : "file";
    out.node.path = spec.path;
    std::unique_ptr<BlockDevice> leaf = std::move(dev);
    if (injectable) leaf = std::make_unique<FaultDevice>(std::move(leaf), FaultDeviceOptions{.volatile_cache = false});
    out.vdev = MakeLeafVdev(std::move(leaf), io, out.node.guid, ashift);
    return out;
  }
  std::vector<std::unique_ptr<Vdev>> kids;
  for (size_t i = 0; i < spec.children.size(); i++) {
    UZFS_ASSIGN_OR_RETURN(BuiltVdev c, BuildFromSpec(pool, spec.children[i], io, ashift, force, i, injectable));
    kids.push_back(std::move(c.vdev));
    out.node.children.push_back(std::move(c.node));
  }
  if (spec.type == VdevSpec::Type::kMirror) {
    out.node.type = "mirror";
    UZFS_ASSIGN_OR_RETURN(out.vdev, MakeMirrorVdev(std::move(kids), out.node.guid, ashift));
  } else {
    out.node.type = "raidz";
    out.node.nparity = spec.nparity;
    UZFS_ASSIGN_OR_RETURN(out.vdev, MakeRaidzVdev(std::move(kids), spec.nparity, out.node.guid, ashift));
  }
  return out;
}

uint32_t LargestHint(const VdevSpec& spec) {
  if (spec.children.empty()) {
    auto dev = OpenLeafDevice(spec.path, FileDeviceOptions{.read_only = true, .exclusive = false});
    return dev.ok() ? (*dev)->AshiftHint() : 9;
  }
  uint32_t a = 9;
  for (const VdevSpec& c : spec.children) a = std::max(a, LargestHint(c));
  return a;
}

TopVdevSpace SpaceOf(Vdev* v, uint32_t id, const VdevNode& n) {
  TopVdevSpace s;
  s.vdev_id = id;
  s.asize = n.asize;
  s.ashift = static_cast<uint32_t>(n.ashift);
  s.allocated_size = [v](uint64_t psize) { return v->AllocatedSize(psize); };
  s.metaslab_shift = static_cast<uint32_t>(n.metaslab_shift);
  return s;
}

void CollectLeafNodes(const VdevNode& n, std::vector<const VdevNode*>* out) {
  if (n.IsLeaf()) {
    out->push_back(&n);
    return;
  }
  for (const VdevNode& c : n.children) CollectLeafNodes(c, out);
}

}  // namespace uzfs
