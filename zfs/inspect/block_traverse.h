// Whole-pool block traversal for `zdb -b`: every block pointer reachable
// from the active uberblock — the MOS, every dataset and snapshot objset
// (each DSL dataset object's bp), every dnode's indirect and data blocks —
// plus the blocks on the deferred-free list (freed, but still allocated in
// the space maps until the next sync) and what is left of the destroyed
// file systems' trees queued for async destroy (from each one's
// bookmark). Each block is read through the Zio, so its checksum is
// verified (and, for a mirror or raidz, any copy that
// verifies is enough; nothing is repaired: the pool is read-only).
// Blocks are counted once, by their first DVA, so a block shared by a
// snapshot and its dataset is not counted twice.
//
// Space accounting: the space maps of every metaslab are replayed into
// "allocated" ranges per top-level vdev and compared with the ranges the
// traversal referenced (each DVA's [offset, offset + asize)). Allocated but
// unreferenced = leaked; referenced but not allocated = unreachable space
// the allocator could hand out again (corruption); a range referenced twice
// = double allocation.
//
// Intent logs: each objset's first log block is counted (it is allocated
// ahead of the next log write) but neither read nor followed: the rest of
// a chain left by a pool that was not exported cleanly is not counted yet.
// Not yet either: gang block members (the gang header is counted), dedup.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "zfs/inspect/pool_reader.h"

namespace uzfs {

struct BlockTypeStats {
  uint64_t count = 0, lsize = 0, psize = 0, asize = 0;
};

// Index 255 of by_type is "deferred free" (blocks on the sync bplist).
inline constexpr int kDeferredFreeStat = 255;

struct TraverseReport {
  BlockTypeStats total;
  std::array<BlockTypeStats, 256> by_type{};
  uint64_t checksum_errors = 0;       // blocks no copy of which verified
  std::vector<std::string> errors;    // first few, "<what>: <status>"
  uint64_t spa_allocated = 0;         // sum of the space map headers' alloc
  uint64_t spa_size = 0;              // sum of the metaslabs' sizes
  uint64_t leaked = 0;                // allocated, never referenced
  uint64_t unreachable = 0;           // referenced, not allocated
  uint64_t double_allocated = 0;      // referenced more than once
  struct Range { uint32_t vdev; uint64_t offset, size; };
  std::vector<Range> leaks;           // first few leaked ranges
};

// Runs the traversal. Errors are only for what stops it (the MOS or config
// cannot be read); a bad block is counted in the report and skipped.
Result<TraverseReport> TraversePool(PoolReader& pool);

}  // namespace uzfs
