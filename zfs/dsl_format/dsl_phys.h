// The DSL's on-disk records, kept in the bonus buffers of MOS objects:
// dsl_dir_phys_t (a DSL directory: one per dataset name, bonus type "DSL
// directory", 256 bytes) and dsl_dataset_phys_t (a dataset or snapshot:
// bonus type "DSL dataset", 320 bytes). Layouts from the ZFS On-Disk
// Specification (pool version 23), all fields little-endian u64 unless
// noted; tests/dsl checks them against zdb's listing of a zfs-fuse pool.
//
//   dsl_dir_phys_t                     dsl_dataset_phys_t
//     0 creation_time                    0 dir_obj
//     8 head_dataset_obj                 8 prev_snap_obj
//    16 parent_obj                      16 prev_snap_txg
//    24 origin_obj                      24 next_snap_obj
//    32 child_dir_zapobj                32 snapnames_zapobj
//    40 used_bytes                      40 num_children
//    48 compressed_bytes                48 creation_time
//    56 uncompressed_bytes              56 creation_txg
//    64 quota                           64 deadlist_obj
//    72 reserved                        72 referenced_bytes ("used_bytes")
//    80 props_zapobj                    80 compressed_bytes
//    88 deleg_zapobj                    88 uncompressed_bytes
//    96 flags                           96 unique_bytes
//   104 used_breakdown[5]              104 fsid_guid
//       (HEAD SNAP CHILD CHILD_RSRV    112 guid
//        REFRSRV)                      120 flags
//   144 clones (ZAP of clone heads,    128 bp (blkptr_t, 128 bytes)
//       version 26 on)
//   152 .. 256 padding
//                                      256 next_clones_obj
//                                      264 props_obj
//                                      272 userrefs_obj
//                                      280 .. 320 padding
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "zfs/spa/block_ptr.h"
#include "zfs/util/status.h"

namespace uzfs {

inline constexpr size_t kDslDirPhysSize = 256;
inline constexpr size_t kDslDatasetPhysSize = 320;
inline constexpr size_t kDslDirMinSize = 144;      // through used_breakdown
inline constexpr size_t kDslDatasetMinSize = 256;  // through bp

enum class DdUsed : uint8_t { kHead, kSnap, kChild, kChildReserve, kRefReserve };
inline constexpr int kDdUsedCount = 5;
inline constexpr uint64_t kDdFlagUsedBreakdown = 1;

struct DslDirPhys {
  uint64_t creation_time = 0;
  uint64_t head_dataset_obj = 0;
  uint64_t parent_obj = 0;
  uint64_t origin_obj = 0;
  uint64_t child_dir_zapobj = 0;
  uint64_t used_bytes = 0;
  uint64_t compressed_bytes = 0;
  uint64_t uncompressed_bytes = 0;
  uint64_t quota = 0;
  uint64_t reserved = 0;
  uint64_t props_zapobj = 0;
  uint64_t deleg_zapobj = 0;
  uint64_t flags = 0;
  std::array<uint64_t, kDdUsedCount> used_breakdown{};
  uint64_t clones = 0;  // dd_clones: the heads cloned from this dir's snapshots (0: none kept)
};

// ds_flags bits.
inline constexpr uint64_t kDsFlagInconsistent = 1;    // being received: not a whole tree yet
inline constexpr uint64_t kDsFlagUniqueAccurate = 4;  // unique_bytes is exact
inline constexpr uint64_t kDsFlagDeferDestroy = 8;    // destroy once released (zfs destroy -d)
inline constexpr uint64_t kDsFlagCiDataset = 1 << 16;  // names are compared case-insensitively

struct DslDatasetPhys {
  uint64_t dir_obj = 0;
  uint64_t prev_snap_obj = 0;
  uint64_t prev_snap_txg = 0;
  uint64_t next_snap_obj = 0;
  uint64_t snapnames_zapobj = 0;
  uint64_t num_children = 0;
  uint64_t creation_time = 0;
  uint64_t creation_txg = 0;
  uint64_t deadlist_obj = 0;
  uint64_t referenced_bytes = 0;
  uint64_t compressed_bytes = 0;
  uint64_t uncompressed_bytes = 0;
  uint64_t unique_bytes = 0;
  uint64_t fsid_guid = 0;
  uint64_t guid = 0;
  uint64_t flags = 0;
  BlockPtr bp;
  uint64_t next_clones_obj = 0;  // 0 when the bonus is shorter (old pools)
  uint64_t props_obj = 0;
  uint64_t userrefs_obj = 0;
};

// Corruption when the bonus is shorter than the fields it must hold.
Result<DslDirPhys> DecodeDslDir(std::span<const uint8_t> bonus);
Result<DslDatasetPhys> DecodeDslDataset(std::span<const uint8_t> bonus);
// The inverse (for tests and, later, the DSL writer); fills kDsl*PhysSize bytes.
void EncodeDslDir(const DslDirPhys& d, std::span<uint8_t, kDslDirPhysSize> out);
void EncodeDslDataset(const DslDatasetPhys& d, std::span<uint8_t, kDslDatasetPhysSize> out);

// The name under which a clone (head dataset object `ds_obj`) is listed in
// its origin snapshot's next_clones ZAP: the object number in lower-case
// hex, as ZFS names it.
std::string NextClonesEntryName(uint64_t ds_obj);

}  // namespace uzfs
