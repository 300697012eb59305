// Allocator: hands out DVAs across the pool's top-level vdevs.
//
// Shape (the ZIO pipeline's view): Allocate(psize, copies, txg) returns
// `copies` DVAs or NoSpace, never a partial set; Free defers; Claim marks
// existing blocks allocated; SyncTxg writes every dirty metaslab's space
// map for the txg; SyncDone(txg), once the txg's uberblock is durable,
// lets deferred frees become allocatable (metaslab.h says when).
//
// Policy:
//  - Spreading: a rotor stays on one top-level vdev for `aliquot` bytes
//    (so a large write is contiguous on it), then moves to the next vdev
//    chosen by smooth weighted round robin with each vdev's free space as
//    its weight: over time each vdev receives writes in proportion to its
//    free space, so vdevs of different sizes fill at the same rate.
//  - Within a vdev (MetaslabGroup): keep allocating from the active
//    metaslab (first fit from its cursor); when it cannot satisfy a
//    request, switch to the metaslab whose longest free segment is largest
//    (ties: lowest offset, i.e. the fast outer tracks of a disk).
//  - Copies (ditto blocks): copy 0 goes where the rotor says; each further
//    copy goes to a top-level vdev not used yet (next in vdev order, with
//    space). With fewer vdevs than copies, copies share a vdev but not a
//    metaslab, and must be at least asize >> ditto_distance_shift bytes
//    from the other copies there (ZFS's "far apart" rule, 1/8 of the vdev);
//    that is relaxed to "another metaslab", then "anywhere", only when the
//    vdev has no such space. If any copy fails, the copies already made
//    are taken back (Unallocate) and NoSpace is returned.
//  - Sizes: each vdev's allocated_size(psize) gives the asize (raidz
//    rounding is the caller's); without one, psize rounded up to the sector.
//
// Threading: every method may be called from any thread. Locks, in the
// order they may be taken: rotor_mu_ (alone, never held across others);
// MetaslabGroup::mu_ (choice of active metaslab) -> Metaslab::mu_.
// Allocations on the active metaslab take only that metaslab's lock;
// frees and claims only their metaslab's. SyncTxg/SyncDone take each
// metaslab's lock in turn while writing its map.
//
// Memory: every metaslab is loaded (its free tree in memory) at Load; ZFS
// loads lazily and unloads idle ones, which is left for later.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "zfs/spa/block_ptr.h"
#include "zfs/spa/metaslab.h"
#include "zfs/spa/space_map.h"
#include "zfs/util/mutex.h"
#include "zfs/util/status.h"

namespace uzfs {

struct TopVdevSpace {
  uint32_t vdev_id = 0;   // the DVA vdev field
  uint64_t asize = 0;     // allocatable bytes (from 4 MiB in)
  uint32_t ashift = 9;
  // asize of a block of psize bytes (raidz parity and padding included).
  // Empty: psize rounded up to 1 << ashift.
  std::function<uint64_t(uint64_t)> allocated_size;
  // From the pool config on import; 0 = choose with options.shift_rule.
  uint32_t metaslab_shift = 0;
};

struct AllocatorOptions {
  bool spacemap_v2 = false;
  bool spacemap_histogram = false;
  bool debug_entries = true;
  uint32_t defer_txgs = 2;
  uint32_t condense_pct = 200;
  uint64_t condense_min_bytes = 16 * 1024;
  uint64_t aliquot = 512 * 1024;
  uint32_t ditto_distance_shift = 3;
  MetaslabShiftRule shift_rule = MetaslabShiftRule::kOpenZfs;
};

// Finds (and on demand creates) the space map object of a metaslab. The
// DMU-backed provider comes with the DMU; MemSpaceMapProvider is for tests.
class SpaceMapProvider {
 public:
  virtual ~SpaceMapProvider() = default;
  // The storage of metaslab `ms` of top-level vdev `vdev`. With
  // create=false, nullptr means the metaslab never had a map (all free).
  virtual Result<SpaceMapStorage*> Open(uint32_t vdev, uint64_t ms, bool create) = 0;
};

class MemSpaceMapProvider final : public SpaceMapProvider {
 public:
  Result<SpaceMapStorage*> Open(uint32_t vdev, uint64_t ms, bool create) override;
  size_t size() const;

 private:
  mutable Mutex mu_;
  std::map<std::pair<uint32_t, uint64_t>, std::unique_ptr<MemSpaceMapStorage>> maps_
      UZFS_GUARDED_BY(mu_);
  uint64_t next_object_ UZFS_GUARDED_BY(mu_) = 1;
};

struct VdevSpaceStats {
  uint32_t vdev_id = 0;
  uint64_t asize = 0;
  uint64_t space = 0;      // metaslab_count << metaslab_shift
  uint64_t allocated = 0;  // space - free - deferred
  uint64_t free = 0;       // allocatable now
  uint64_t deferred = 0;   // freed, not yet allocatable
  uint64_t max_free_segment = 0;
  uint32_t metaslab_shift = 0;
  uint64_t metaslab_count = 0;
};

class MetaslabGroup;

class Allocator {
 public:
  // InvalidArgument for duplicate vdev ids, an ashift outside 9..16, or a
  // vdev too small for one metaslab.
  static Result<std::unique_ptr<Allocator>> Create(std::vector<TopVdevSpace> vdevs,
                                                   const AllocatorOptions& options);
  ~Allocator();
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  // Import: every metaslab from its space map. REQUIRES: nothing in flight.
  Status Load(SpaceMapProvider& maps);

  // `copies` (1..3) DVAs for a block of psize bytes, on distinct vdevs
  // where possible. NoSpace (with nothing allocated) when impossible.
  Result<std::vector<Dva>> Allocate(uint64_t psize, int copies, uint64_t txg);
  // Deferred free of a DVA's space. InvalidArgument for an unknown vdev,
  // a range crossing metaslabs, or a double free.
  Status Free(const Dva& dva, uint64_t txg);
  // Immediate undo of an allocation of the still-unsynced txg (a failed write).
  Status Unallocate(const Dva& dva, uint64_t txg);
  // `zpool add`: a new top-level vdev, all free (its space maps are
  // created as its metaslabs are first synced). Safe while other threads
  // allocate and free; one AddVdev at a time. InvalidArgument as Create.
  Status AddVdev(const TopVdevSpace& vdev);
  // Marks a DVA's space allocated (log replay / blocks found on import).
  Status Claim(const Dva& dva, uint64_t txg);

  // Writes the space maps of every metaslab changed in txg.
  // allow_condense=false (a pool's sync passes after the first) never
  // rewrites a map from scratch: a condense frees and allocates map blocks,
  // which would keep the passes from converging.
  Status SyncTxg(uint64_t txg, SpaceMapProvider& maps, bool allow_condense = true);
  // Txg's uberblock is durable: deferred frees old enough become free.
  void SyncDone(uint64_t txg);

  uint64_t space() const;
  uint64_t allocated() const;
  uint64_t free_space() const;
  uint64_t deferred() const;
  std::vector<VdevSpaceStats> VdevStats() const;
  // The metaslab_shift in use for a vdev (0 if unknown): goes into the config.
  uint32_t metaslab_shift(uint32_t vdev_id) const;
  // How many metaslabs a vdev has (0 if unknown).
  uint64_t metaslab_count(uint32_t vdev_id) const;
  // Trim (`zpool trim`): Metaslab::LendForTrim and ReturnTrimmed on
  // metaslab `ms` of a vdev. An unknown vdev or metaslab lends nothing and
  // says it is done (*next = UINT64_MAX).
  RangeTree LendForTrim(uint32_t vdev_id, uint64_t ms, uint64_t from, uint64_t max_bytes,
                        uint64_t min_extent, uint64_t* next);
  void ReturnTrimmed(uint32_t vdev_id, uint64_t ms, const RangeTree& lent);
  // Autotrim: Metaslab::SetAutotrim on every metaslab, now and of vdevs
  // added later; LendAutotrim on metaslab `ms` of a vdev (nothing for an
  // unknown one); the candidates' bytes over all metaslabs.
  void SetAutotrim(bool on);
  RangeTree LendAutotrim(uint32_t vdev_id, uint64_t ms, uint64_t max_bytes, uint64_t min_extent);
  uint64_t autotrim_pending() const;

 private:
  Allocator(std::vector<std::unique_ptr<MetaslabGroup>> groups, const AllocatorOptions& options);
  static Result<std::unique_ptr<MetaslabGroup>> MakeGroup(const TopVdevSpace& v,
                                                          const AllocatorOptions& options);
  MetaslabGroup* Group(uint32_t vdev_id) const;
  // The published groups (AddVdev appends within the reserved capacity).
  std::span<const std::unique_ptr<MetaslabGroup>> Groups() const {
    return {groups_.data(), ngroups_.load(std::memory_order_acquire)};
  }
  // Index (< n) of the group copy 0 should try first.
  size_t PickRotor(uint64_t asize_hint, size_t n);

  const AllocatorOptions opts_;
  static constexpr size_t kMaxGroups = 256;
  // Capacity kMaxGroups reserved; entries [0, ngroups_) are published and
  // never change (AddVdev appends one, then publishes).
  std::vector<std::unique_ptr<MetaslabGroup>> groups_;
  std::atomic<size_t> ngroups_{0};
  std::atomic<bool> autotrim_{false};

  Mutex rotor_mu_;
  size_t rotor_ UZFS_GUARDED_BY(rotor_mu_) = 0;
  uint64_t rotor_bytes_ UZFS_GUARDED_BY(rotor_mu_) = 0;
  std::vector<int64_t> rotor_credit_ UZFS_GUARDED_BY(rotor_mu_);
};

}  // namespace uzfs
