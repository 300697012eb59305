// Pieces of pool building shared by pool_create.cc, pool_import.cc and
// pool_vdev_change.cc (zpool add / remove): opening a new leaf with the
// checks `zpool create` makes, and turning a VdevSpec into a vdev and its
// config node. Internal to the DSL layer.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "zfs/dsl/pool_config.h"
#include "zfs/spa/allocator.h"
#include "zfs/util/status.h"
#include "zfs/vdev/file_device.h"
#include "zfs/vdev/io_engine.h"
#include "zfs/vdev/vdev.h"

namespace uzfs {

// Opens `path` exclusively for a new vdev: at least 64 MiB, and not part of
// another pool (exported or active) unless `force`. Errors name `pool`.
Result<std::unique_ptr<BlockDevice>> OpenNewLeaf(const std::string& pool, const std::string& path,
                                                bool force);

// Whether `path` names a block device now (false: a file, or missing).
inline bool IsBlockDevicePath(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISBLK(st.st_mode);
}

struct BuiltVdev {
  std::unique_ptr<Vdev> vdev;
  VdevNode node;
};

// The vdev (and config node, fresh guids, create_txg 4) for `spec`; leaves
// opened with OpenNewLeaf, wrapped in a FaultDevice when `injectable`.
Result<BuiltVdev> BuildFromSpec(const std::string& pool, const VdevSpec& spec, IoEngine& io,
                                uint32_t ashift, bool force, uint64_t id, bool injectable);

// The largest ashift hint of the spec's devices (9 at least).
uint32_t LargestHint(const VdevSpec& spec);

// The allocator's view of top-level vdev `v` (id, asize, ashift, raidz
// allocation size, metaslab_shift from its config node n).
TopVdevSpace SpaceOf(Vdev* v, uint32_t id, const VdevNode& n);

// Every leaf node under n, in tree order.
void CollectLeafNodes(const VdevNode& n, std::vector<const VdevNode*>* out);

}  // namespace uzfs
