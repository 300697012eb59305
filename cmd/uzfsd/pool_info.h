// Facts about an imported pool that Pool's API does not hand out, read the
// way zdb reads them: the pool's devices are scanned and a read-only
// PoolReader (zfs/inspect/pool_reader.h: shared, never writes) opens the
// newest synced state next to the live Pool. Callers Sync() the pool first
// so what is read is current. Used for the config's log/spare/cache
// sections (MOS config) and for `zpool history` (the history object).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cmd/uzfsd/registry.h"
#include "zfs/dsl/pool_config.h"
#include "zfs/spa/vdev_config.h"
#include "zfs/util/status.h"

namespace uzfs::cmd {

// The distinct directories holding `paths`, in first-seen order.
std::vector<std::string> DeviceDirs(const std::vector<std::string>& paths);
// Every labelled device in the directories (unreadable ones skipped; the
// first error when none could be read).
Result<std::vector<FoundDevice>> ScanDirs(const std::vector<std::string>& dirs);

// The shape a create layout gives (top-level ids: data vdevs, then logs).
PoolShape ShapeFromLayout(const PoolLayout& layout);
// The shape of an open pool's live config (after zpool add / remove).
PoolShape ShapeFromPool(Pool& pool);
// The shape of the imported pool `guid` whose devices are `devices`.
Result<PoolShape> ReadShape(const std::vector<std::string>& devices, uint64_t guid);

// Leaf device paths of the live tree, then spares and cache devices.
std::vector<std::string> PoolDevicePaths(Pool& pool, const PoolShape& shape);

struct HistoryRecord {
  uint64_t time = 0;
  std::string command;
  uint64_t who = 0;
  std::string hostname;
};
// The pool's history records, oldest first.
Result<std::vector<HistoryRecord>> ReadHistory(const std::vector<std::string>& devices, uint64_t guid);

}  // namespace uzfs::cmd
