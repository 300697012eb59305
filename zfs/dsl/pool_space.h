// What `zpool list -p` and `zfs list -p` print for an open Pool, computed
// from the pool's live state: the allocator's metaslabs and the DSL
// directory/dataset records. This is the measurement that sizecalc's
// prediction (zfs/spa/space_calc.h) is judged against, so nothing here
// comes from that prediction; only the rule helpers that are pure
// definitions (space::Deflate, space::SlopSpace) are shared.
//
// zpool list (normal-class top-level vdevs only: log devices are their own
// class and cache/spare devices are not in the allocator at all):
//   SIZE  = sum of metaslab_count << metaslab_shift (the tail of a vdev
//           past its last whole metaslab is never counted)
//   ALLOC = SIZE - FREE, FREE = what the metaslabs can hand out now.
//           Frees still in their defer period count as allocated, as in
//           ZFS. Unlike ZFS (which updates vs_alloc when a txg's sync is
//           done), allocations of a txg being written already count; after
//           Pool::Sync() the two agree.
//
// zfs list, for dataset X in directory dir(X):
//   USED  = dir(X).used_bytes (X, its children, snapshots; the root's also
//           holds $MOS and $ORIGIN, as in ZFS). The DSL keeps reservations
//           in it (pool_dsl_dirs.cc, Pool::DirUse): a directory charges its
//           parent max(used_bytes, reserved), the part not yet used as
//           CHILD_RSRV, and a dataset's unused refreservation,
//           refreservation - unique when larger, is in its own USED as
//           REFRSRV (usedbyrefreservation).
//   REFER = head dataset's referenced_bytes
//   AVAIL = DirSpaceAvailable(dir(X) .. root), plus refreservation/refquota
//           of X:
//     root  = min(quota, D - slop) - used(root), 0 if negative
//     d     = min(avail(parent) + max(0, reserved - used),
//                 quota - used), 0 if over quota
//     (quota 0 = none), then AVAIL += refreservation - unique when larger,
//     and AVAIL = min(AVAIL, refquota - refer) when refquota is set. Since
//     the root's used holds every reservation below it, what one dataset
//     reserves is gone from its siblings' AVAIL and stays in its own.
//   D     = sum over normal-class top-level vdevs of
//           space::Deflate(count << shift, ratio), ratio = 2^17 /
//           sectors(AllocatedSize(128 KiB)) of the live vdev
//   slop  = space::SlopSpace(D, 0, rules): pool versions <= 28 (zfs-fuse
//           and every pre-feature-flag ZFS) keep max(D/64, 32 MiB); version
//           5000 pools get OpenZFS's rule. (uzfs has no embedded-log class
//           yet, so E = 0 for OpenZFS pools; that changes when it does.)
//
// Threading: as Pool's readers (each Pool call takes the pool's lock; the
// values of one report may straddle a txg sync unless the caller syncs).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "zfs/dsl_format/dsl_phys.h"
#include "zfs/spa/space_calc.h"
#include "zfs/util/status.h"

namespace uzfs {

class Pool;

// The reservation rule of a pool version: kLegacy through v28, else OpenZFS.
space::Rules RulesForPoolVersion(uint64_t version);

struct PoolSpaceVdev {
  uint32_t vdev_id = 0;          // top-level vdev index (normal class only)
  uint64_t asize = 0;
  uint32_t metaslab_shift = 0;
  uint64_t metaslab_count = 0;
  uint64_t size = 0;             // count << shift
  uint64_t alloc = 0;            // size - free
  uint64_t free = 0;
  uint64_t deflate_ratio = 512;
  uint64_t dspace = 0;           // space::Deflate(size, ratio)
};

// `zpool list -p NAME`: SIZE, ALLOC, FREE, plus the inputs of AVAIL.
struct PoolSpaceReport {
  uint64_t size = 0;
  uint64_t alloc = 0;
  uint64_t free = 0;
  uint64_t dspace = 0;           // D: deflated SIZE
  uint64_t slop = 0;
  space::Rules rules = space::Rules::kLegacy;
  std::vector<PoolSpaceVdev> vdevs;
};

// One row of `zfs list -p`.
struct DatasetSpace {
  std::string name;
  uint64_t used = 0;
  uint64_t avail = 0;
  uint64_t refer = 0;
};

// ZFS's dsl_dir_space_available with on-disk numbers only: how much the
// directory chain[0] may still grow by; chain[1] is its parent and so on,
// chain.back() the pool's root directory, which pool_usable (D - slop)
// caps. 0 for an empty chain.
uint64_t DirSpaceAvailable(std::span<const DslDirPhys* const> chain, uint64_t pool_usable);
// D - slop: what the root directory's USED + AVAIL add up to. Reads only
// the allocator and the vdev tree, so the pool's own sync tasks may call
// it (they hold the pool's lock).
Result<uint64_t> PoolUsableSpace(Pool& pool);

// Errors: those of Pool::ListDatasets (e.g. a suspended pool's read errors).
Result<PoolSpaceReport> PoolListSpace(Pool& pool);
// NotFound "cannot open 'X': dataset does not exist" (zfs's wording).
Result<DatasetSpace> DatasetListSpace(Pool& pool, const std::string& dataset);
// Every dataset, in `zfs list` order (the pool's root first, children sorted).
Result<std::vector<DatasetSpace>> ListDatasetSpace(Pool& pool);

}  // namespace uzfs
