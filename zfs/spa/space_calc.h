// Space accounting of a pool from its shape: what `zpool list` calls SIZE
// and what `zfs list` shows as AVAIL of the empty root dataset.
//
// One pipeline, used by `sizecalc` and (when the pool exists) by the
// pool's own `zpool list` / `zfs list`, so the two can never disagree:
//
//   device bytes
//     -> leaf asize        LeafAsize(): whole 256 KiB units, minus the two
//                          front labels + 3.5 MiB boot area and the two back
//                          labels (4.5 MiB in all)
//     -> top-level asize   disk: its leaf; mirror: the smallest side;
//                          raidz: N x the smallest child
//     -> metaslabs         MetaslabShift(asize, rule); the tail past the last
//                          whole metaslab is never used
//     -> SIZE              sum of (count << shift) over data (normal-class)
//                          top-level vdevs; log, cache and spare devices are
//                          not counted (rule-independent)
//     -> dspace            each vdev's metaslab space deflated by its ratio
//                          r = floor(2^17 / (asize(128 KiB) / 512)):
//                          deflated(x) = (x >> 9) * r (r = 512 unless raidz)
//     -> slop              kLegacy (zfs-fuse, pool v<=28): max(D/64, 32 MiB)
//                          kOpenZfs: S = min(D/32, 128 GiB);
//                          S -= min(E, S/2); S = max(S, min(D/2, 128 MiB))
//                          where E is the embedded-log space (below)
//     -> AVAIL             D - slop - used, used = what a fresh pool has
//                          already written (an estimate: see InitialUsed)
//
// Embedded log (kOpenZfs only): a normal-class top-level vdev with at
// least kEmbeddedLogMinMetaslabs metaslabs lends one metaslab to the ZIL.
// It stays in SIZE but leaves D; its deflated size is E.
//
// Checked: kLegacy against zfs-fuse 0.7 pools on files (SIZE exact via zdb
// metaslab counts; AVAIL + USED = D - slop exact; see
// tests/cmd/sizecalc_compat_test.cc). kOpenZfs against hand-computed
// examples of the documented rules (tests/cmd/sizecalc_test.cc), and the
// sizecalc command (with its model of what a new uzfs pool writes,
// cmd/sizecalc/fresh_pool.h) against real uzfs pools
// (tests/cmd/sizecalc_pool_compat_test.cc).
//
// Everything here is a pure function of its arguments; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "zfs/spa/metaslab.h"
#include "zfs/util/status.h"

namespace uzfs::space {

// Which ZFS's reservation and metaslab rules apply.
enum class Rules : uint8_t { kOpenZfs, kLegacy };
std::string_view RulesName(Rules r);  // "openzfs", "legacy"
MetaslabShiftRule ShiftRule(Rules r);

enum class VdevClass : uint8_t { kNormal, kLog, kCache, kSpare };
std::string_view VdevClassName(VdevClass c);  // "normal", "log", "cache", "spare"

enum class VdevType : uint8_t { kDisk, kMirror, kRaidz };

// One top-level vdev (or one cache/spare device) as `zpool create` takes it.
struct VdevSpec {
  VdevClass cls = VdevClass::kNormal;
  VdevType type = VdevType::kDisk;
  uint32_t nparity = 0;               // raidz only: 1..3
  std::vector<uint64_t> devices;      // device sizes in bytes
};

struct LayoutSpec {
  std::vector<VdevSpec> vdevs;
  uint32_t ashift = 12;               // 9..16
  // Allow different device sizes inside one mirror/raidz (zpool create -f).
  bool allow_mixed_sizes = false;
};

inline constexpr uint64_t kMinDeviceSize = 64ull << 20;       // SPA_MINDEVSIZE
inline constexpr uint64_t kDeflateBlock = 128 * 1024;         // ratio block
inline constexpr uint32_t kEmbeddedLogMinMetaslabs = 64;      // zfs_embedded_slog_min_ms
inline constexpr uint64_t kLegacyMinSlop = 32ull << 20;       // SPA_MINDEVSIZE / 2
inline constexpr uint64_t kOpenZfsMinSlop = 128ull << 20;     // spa_min_slop
inline constexpr uint64_t kOpenZfsMaxSlop = 128ull << 30;     // spa_max_slop
inline constexpr uint32_t kOpenZfsSlopShift = 5;              // spa_slop_shift
inline constexpr uint32_t kLegacySlopShift = 6;

// "raidz2-0", "mirror-1", "disk-2" style name for vdev `index` of the spec.
std::string VdevName(const VdevSpec& v, size_t index);

// Checks what `zpool create` would refuse: empty groups, raidz with fewer
// than nparity + 1 devices (or nparity outside 1..3), mirrors of one
// device, raidz logs, grouped cache/spare devices, devices under 64 MiB,
// mixed sizes in a group (unless allowed), no data vdev, bad ashift.
// InvalidArgument with a message that says what to change.
Status Validate(const LayoutSpec& layout);

// Allocatable bytes of a top-level vdev (see the pipeline above).
uint64_t TopLevelAsize(const VdevSpec& v);

// Bytes allocated for a block of psize bytes on a top-level vdev
// (raidz parity and padding included; a mirror side or disk: psize
// rounded up to the sector).
uint64_t BlockAsize(const VdevSpec& v, uint32_t ashift, uint64_t psize);

// floor(2^17 / (BlockAsize(128K) >> 9)); 512 for disks and mirrors.
uint64_t DeflateRatio(const VdevSpec& v, uint32_t ashift);
inline uint64_t Deflate(uint64_t bytes, uint64_t ratio) { return (bytes >> 9) * ratio; }

// The reservation `zfs` keeps back from D (deflated normal-class space)
// given E (deflated embedded-log space; 0 under kLegacy).
uint64_t SlopSpace(uint64_t dspace, uint64_t embedded_log, Rules rules);

// Bytes (deflated) a freshly created pool has already written: the MOS,
// the root dataset and their space maps. Measured on zfs-fuse pools: 91
// blocks of which 60 take one 512 B sector, 25 two, 4 six and 2 five
// (144 sectors at ashift 9; 91 sectors at ashift 12), each allocated on
// the first data vdev. Exact for a raidz2 at ashift 12, within a few KiB
// otherwise; uzfs pools will be measured when `zpool create` lands.
uint64_t InitialUsed(const LayoutSpec& layout, Rules rules);

struct VdevSpace {
  std::string name;                 // "raidz2-0"
  VdevClass cls = VdevClass::kNormal;
  uint64_t raw = 0;                 // sum of device sizes
  uint64_t asize = 0;               // allocatable bytes (0 for cache/spare)
  uint32_t metaslab_shift = 0;
  uint64_t metaslab_count = 0;
  uint64_t size = 0;                // count << shift
  uint64_t deflate_ratio = 512;
  uint64_t dspace = 0;              // deflated size minus the embedded log
  uint64_t embedded_log = 0;        // deflated size of the metaslab lent to the ZIL
  uint64_t record_asize = 0;        // BlockAsize(recordsize)
};

struct PoolSpace {
  Rules rules = Rules::kOpenZfs;
  uint32_t ashift = 12;
  uint64_t recordsize = 128 * 1024;
  std::vector<VdevSpace> vdevs;     // in spec order, all classes
  // Data (normal-class) vdevs only, the chain of the pipeline:
  uint64_t raw = 0;                 // device bytes
  uint64_t label_reserve = 0;       // raw - sum of leaf asizes (labels, boot area, 256K rounding)
  // Mirror copies beyond the first side, and whatever larger devices of a
  // group have beyond the smallest one.
  uint64_t redundancy = 0;
  uint64_t asize = 0;               // sum of top-level asizes
  uint64_t metaslab_tail = 0;       // asize beyond the last whole metaslab
  uint64_t size = 0;                // `zpool list` SIZE
  uint64_t parity = 0;              // size - (dspace + embedded_log): raidz parity and padding
  uint64_t embedded_log = 0;        // E
  uint64_t dspace = 0;              // D
  uint64_t slop = 0;
  uint64_t used = 0;                // InitialUsed()
  uint64_t avail = 0;               // `zfs list` AVAIL of the empty root dataset
  // Share of a recordsize block's allocation that is data, over data vdevs
  // weighted by size: sum(size * recordsize / record_asize) / size.
  double efficiency = 1.0;
  // Log devices' allocatable bytes (not in SIZE).
  uint64_t log_size = 0;
  uint64_t cache_raw = 0, spare_raw = 0;
};

// The whole pipeline. InvalidArgument from Validate(), or for a
// recordsize that is not a power of two in [512, 16 MiB].
Result<PoolSpace> ComputePoolSpace(const LayoutSpec& layout, Rules rules,
                                   uint64_t recordsize = 128 * 1024);

}  // namespace uzfs::space
