// Finding an exported pool's devices and rebuilding its vdev tree from the
// labels, as `zpool import -d DIR` and `zdb -e -p DIR` do.
//
// A directory is scanned for regular files and block devices whose labels
// verify (ReadDeviceLabels); each is a FoundDevice carrying its label config
// (pool name and guid, its own leaf guid, top_guid, the top-level vdev's
// subtree). Devices are matched to the tree BY GUID, never by the label's
// "path" (paths go stale when disks move). AssemblePool groups the devices
// of one pool, takes each top-level vdev's subtree from the newest config
// (highest "txg") that names it, and builds root -> top-level (by "id") ->
// mirror/raidz -> leaves with the vdev builders. A leaf whose device was not
// found, or is now too small for its vdev's config asize (a truncated file:
// blocks past its end are gone, and its back labels would be rewritten over
// live data), becomes an absent leaf (every I/O fails, state REMOVED), so a
// mirror or raidz reads around it and nothing is ever written to it; a
// whole top-level vdev that is missing (unless asked to go on without it),
// or a pool that cannot be told apart from another of the same name, is an
// error worded like zpool import's.
// The tree is read-only (SetReadOnly) unless assembled for writing.
//
// Nothing here writes to a device. Threading: plain functions; the returned
// tree follows vdev.h's contract.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zfs/spa/uberblock.h"
#include "zfs/util/nvlist/nvlist.h"
#include "zfs/util/status.h"
#include "zfs/vdev/io_engine.h"
#include "zfs/vdev/vdev.h"

namespace uzfs {

struct FoundDevice {
  std::string path;      // where it was found (not the label's path)
  NvList config;         // the first label config that verified
  std::string pool_name;
  uint64_t pool_guid = 0;
  uint64_t guid = 0;     // this leaf's guid
  uint64_t txg = 0;      // the config's txg
  uint64_t state = 0;    // pool state in the label (0 active, 1 exported, 2 destroyed)
  uint64_t ub_txg = 0;   // txg of its newest valid uberblock (0: none)
};

// The label state of a destroyed pool (pool_config.h's kPoolStateDestroyed,
// which sits above this layer).
inline constexpr uint64_t kLabelStateDestroyed = 2;

// Every device in `dir` (regular files and block devices, not recursing)
// whose labels verify; others are skipped silently. NotFound when `dir`
// cannot be read. Sorted by path. `dir` may also name one file or block
// device (zpool import -d FILE): that one, when its labels verify.
Result<std::vector<FoundDevice>> ScanDeviceDir(const std::string& dir);

struct FoundPool {
  std::string name;
  uint64_t guid = 0;
  uint64_t state = 0;    // from the newest label
  uint64_t txg = 0;      // newest config txg seen
  std::vector<std::string> paths;
};
// The pools the devices belong to, one entry per pool guid, by name.
std::vector<FoundPool> ListFoundPools(std::span<const FoundDevice> devices);

struct AssembledPool {
  std::string name;
  uint64_t guid = 0;
  NvList config;                      // newest label config of the pool
  std::unique_ptr<Vdev> root;         // read-only; leaves share the IoEngine
  std::vector<std::string> paths;     // device paths in use
  std::vector<uint64_t> missing;      // guids of absent leaves
  // Each opened leaf's newest uberblock txg: a leaf behind the pool's
  // missed the txgs after its own (it was offline, unplugged, or failing).
  std::map<uint64_t, uint64_t> leaf_ub_txg;
  std::vector<std::string> too_small;  // found, but smaller than their vdev's
                                       // config asize needs: left closed and
                                       // absent (also in `missing`)
  // With allow_missing_tops: ids of the top-level vdevs that cannot be
  // used (too few devices), in id order. One that no label describes at
  // all is a hole placeholder in `root` until the MOS config says what it
  // was (BuildAbsentTopLevel).
  std::vector<uint32_t> missing_tops;
};

// Which pools a name or guid may match. A pool is destroyed when its newest
// label (highest config txg) says so; zpool import skips those unless -D,
// and with -D considers only them.
enum class DestroyedPools : uint8_t { kSkip, kOnly, kInclude };

// Builds the tree of the pool named `name_or_guid` (a name, or a decimal
// pool guid) from `devices`. When two devices carry one leaf guid (a copied
// disk image), the one with the newer label txg, then uberblock txg, is used
// and the other left closed. Errors (message = what zpool import says after
// "cannot import 'NAME': "):
//   NotFound "no such pool available"                 no device names it
//       (+ " ('NAME' was destroyed; import it with -D)" when only a
//       destroyed pool does and `destroyed` is kSkip)
//   InvalidArgument "more than one matching pool"     two pool guids share it
//       (destroyed pools do not count unless `destroyed` allows them)
//   IoError "one or more devices is currently unavailable"  a top-level vdev
//       has no device, or too few for its redundancy
//   Corruption "invalid vdev configuration"            a config we cannot parse
// writable: open the devices read-write and exclusively (an import), else
// read-only and shared (zdb) with the tree marked read-only.
// fault_injectable: each present leaf's device is wrapped in a FaultDevice
// (Pool::LeafFaults). allow_missing_tops: a top-level vdev that cannot be
// used is no error but listed in missing_tops (an import that may go on
// without a log device decides once it has read the MOS config).
// REQUIRES: io outlives the tree.
Result<AssembledPool> AssemblePool(std::span<const FoundDevice> devices,
                                   const std::string& name_or_guid, IoEngine& io,
                                   bool writable = false,
                                   DestroyedPools destroyed = DestroyedPools::kSkip,
                                   bool fault_injectable = false, bool allow_missing_tops = false);

// The top-level vdev `top_tree` (a vdev_tree child of the MOS config) with
// every leaf absent (UNAVAIL, all I/O fails): a log device that is gone
// from the system, kept in the tree so that the pool's config still names
// it. REQUIRES: io outlives the vdev.
Result<std::unique_ptr<Vdev>> BuildAbsentTopLevel(const NvList& top_tree, IoEngine& io);

}  // namespace uzfs
