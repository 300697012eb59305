// Pool configuration: the vdev grammar of `zpool create`, the vdev tree as
// the config nvlists describe it, and those nvlists themselves.
//
// A pool's config exists in two shapes (both checked against zfs-fuse's
// `zdb -l` and the MOS "config" object of version-23 pools):
//   - the MOS config (packed nvlist object named by the object directory's
//     "config" entry): version, name, state, txg, pool_guid, hostid,
//     hostname, vdev_children, vdev_tree = the whole tree under a "root"
//     vdev, plus "spares"/"l2cache" arrays when the pool has them;
//   - each leaf's label config: the same header, then top_guid and guid
//     (the leaf's own), is_log for a log device, vdev_children, and
//     vdev_tree = only the top-level vdev holding that leaf.
// Spare and cache devices carry a three-entry label (version, state 3 or
// 4, guid) and are listed in the MOS config only.
//
// Pair order follows what zfs-fuse writes, so labels re-encode to the same
// bytes and `zdb -l` listings compare equal:
//   top-level: type id guid [nparity] metaslab_array metaslab_shift ashift
//              asize is_log create_txg [children]
//   leaf:      type id guid path [whole_disk] create_txg [offline]
//   replacing / spare (a replace or hot spare in progress, in a child
//   slot): type id guid create_txg children (original first)
// (a top-level leaf has both: type id guid path metaslab_array ...).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "zfs/util/nvlist/nvlist.h"
#include "zfs/util/status.h"
#include "zfs/util/txg_number.h"

namespace uzfs {

// Pool states as labels record them.
inline constexpr uint64_t kPoolStateActive = 0;
inline constexpr uint64_t kPoolStateExported = 1;
inline constexpr uint64_t kPoolStateDestroyed = 2;
inline constexpr uint64_t kPoolStateSpare = 3;
inline constexpr uint64_t kPoolStateL2cache = 4;

// One vdev of `zpool create`'s grammar.
struct VdevSpec {
  enum class Type : uint8_t { kFile, kDisk, kMirror, kRaidz };
  Type type = Type::kFile;
  uint32_t nparity = 0;        // raidz: 1..3
  std::string path;            // leaves
  std::vector<VdevSpec> children;
};

// Everything after the pool name in `zpool create NAME ...`.
struct PoolLayout {
  std::vector<VdevSpec> data;    // top-level vdevs
  std::vector<VdevSpec> logs;    // top-level log vdevs (leaf or mirror)
  std::vector<VdevSpec> cache;   // leaves
  std::vector<VdevSpec> spares;  // leaves
};

// Parses "[mirror|raidz|raidz1|raidz2|raidz3] dev... [log ...] [cache ...]
// [spare ...]" as zpool create does. A device is an absolute path (a file,
// or a block device: type "disk"). InvalidArgument with zpool's wording
// ("invalid vdev specification: raidz2 requires at least 3 devices", ...).
// With require_data false (zpool add), a layout of only log, cache or spare
// devices is fine.
Result<PoolLayout> ParseVdevGrammar(std::span<const std::string> args, bool require_data = true);

// The config view of one vdev.
struct VdevNode {
  // "root", "mirror", "raidz", "replacing", "spare", "file", "disk", "hole"
  std::string type;
  uint64_t id = 0;
  uint64_t guid = 0;
  uint64_t nparity = 0;
  std::string path;            // leaves
  // Top-level vdevs only:
  uint64_t metaslab_array = 0;
  uint64_t metaslab_shift = 0;
  uint64_t ashift = 0;
  uint64_t asize = 0;
  bool is_log = false;
  uint64_t create_txg = 0;
  // Leaves: taken out of service by `zpool offline` (kept across import).
  bool offline = false;
  // Leaves: faulted by `zpool offline -f` (kept across import), "faulted" 1.
  bool faulted = false;
  // Leaves: a hot spare standing in (in a spare vdev), "is_spare" 1.
  bool is_spare = false;
  // Leaves: the MOS object of its DTL (dtl_map.h), "DTL"; 0 = none yet.
  uint64_t dtl = 0;
  // The vdev's own ZAPs in the MOS (its properties, `zpool set PROP pool
  // vdev`): "com.delphix:vdev_zap_leaf" for a leaf, "com.delphix:
  // vdev_zap_top" for a top-level vdev (a top-level leaf has both); 0 =
  // none (pool_vdev_props.cc). The root's, "com.klarasystems:
  // vdev_zap_root", which OpenZFS 2.2 makes, is kept as found.
  uint64_t leaf_zap = 0;
  uint64_t top_zap = 0;
  uint64_t root_zap = 0;
  std::vector<VdevNode> children;

  bool IsLeaf() const { return type == "file" || type == "disk"; }
  // The place of a removed top-level (log) vdev: type "hole", guid 0,
  // is_hole 1; its id stays taken (listed in the config's hole_array).
  bool IsHole() const { return type == "hole"; }
};

// A hole at top-level id `id`, as ZFS writes it.
VdevNode HoleNode(uint64_t id);
// The ids of the holes among root's children (the config's hole_array).
std::vector<uint64_t> HoleIds(const VdevNode& root);

struct PoolIdentity {
  uint64_t version = 0;
  std::string name;
  // A pool known by a temporary name (`zpool create -t`, `zpool import
  // -t`): the name its configs and labels keep, while `name` is the one
  // it goes by here until it is exported. Empty: `name` is both.
  std::string disk_name;
  uint64_t pool_guid = 0;
  uint64_t hostid = 0;
  std::string hostname;
  // OpenZFS's pool properties that live in the config nvlist ("comment",
  // "compatibility", after pool_guid as OpenZFS writes them); empty: not
  // written (zfs-fuse's pools never have them).
  std::string comment;
  std::string compatibility;
};

// The object-directory "spares" / "l2cache" object's contents (a packed
// nvlist object, as ZFS keeps them; zfs-fuse and OpenZFS read the pool's
// spares and cache devices only from there): {key: [{type, guid, path,
// is_spare (spares only)}...]}.
NvList AuxDevicesObject(const std::string& key, std::span<const VdevNode> devs, bool spare);

// vdev_tree of one vdev (top_level: with the metaslab/asize fields).
NvList VdevNodeConfig(const VdevNode& v, bool top_level);
// The MOS config. `root` is the "root" node whose children are the
// top-level vdevs; spares/cache are leaf nodes (only type/guid/path used).
NvList MosPoolConfig(const PoolIdentity& id, uint64_t state, Txg txg, const VdevNode& root,
                     std::span<const VdevNode> spares, std::span<const VdevNode> cache);
// The label config of leaf `leaf_guid` under top-level vdev `top`.
// `holes`: the pool's hole_array (written when not empty).
NvList LeafLabelConfig(const PoolIdentity& id, uint64_t state, Txg txg, const VdevNode& top,
                       uint64_t leaf_guid, uint64_t vdev_children, std::span<const uint64_t> holes = {});
// The label of a spare (state 3) or cache (state 4) device.
NvList AuxLabelConfig(uint64_t version, uint64_t state, uint64_t guid);

// The config's OpenZFS string properties ("comment", "compatibility") into
// id: an import must take them over, or its first config write drops them.
void ReadIdentityStrings(const NvList& config, PoolIdentity* id);

// Parses a vdev_tree nvlist back (the inverse of VdevNodeConfig).
Result<VdevNode> ParseVdevNode(const NvList& tree);

// A random non-zero 64-bit guid.
uint64_t NewGuid();
// Sum of every guid in the tree (the uberblock's guid_sum).
uint64_t GuidSum(const VdevNode& root);

}  // namespace uzfs
