// Metaslabs: the unit of space management inside a top-level vdev.
//
// A top-level vdev's allocatable space (asize bytes, counted from the 4 MiB
// front reserve; DVA offsets use the same origin) is cut into
// floor(asize >> metaslab_shift) metaslabs of 2^metaslab_shift bytes; the
// tail past the last whole metaslab is never used (zdb shows the same
// count). Each metaslab owns one space map object whose units are the
// vdev's sectors (1 << ashift).
//
// In memory a metaslab holds, under its own lock:
//   free_       allocatable space (a RangeTree), loaded from the space map;
//   allocs_[t]  space allocated in txg t and not yet written to the map;
//   frees_[t]   space freed in txg t and not yet written to the map;
//   defer_[t]   space freed in txg t, already FREE in the map, waiting;
//   trimming_   free space lent to a trim (`zpool trim`): FREE in the map,
//               not allocatable until the trim gives it back.
// Life of a byte range: Allocate/Claim move it free_ -> allocs_[t];
// Sync(t) appends allocs_[t] as ALLOC and frees_[t] as FREE entries to
// the map and moves frees_[t] into defer_[t]; SyncDone(t), called once
// txg t's uberblock is on disk, returns defer_[t - defer_txgs] to free_.
//
// Why defer at all, and why 2 txgs (like ZFS's TXG_DEFER_SIZE): a block
// freed in txg t is still referenced by the uberblocks of txgs before t.
// Reusing it before t's uberblock is durable would let a crash leave the
// live tree pointing at overwritten data; keeping it two txgs longer means
// the last few uberblocks in the ring (what `zpool import -F` rewinds to)
// still find their blocks intact. defer_txgs = 0 makes freed space
// reusable right after SyncDone(t), which tests use.
//
// Allocation policy: first fit from a cursor, one cursor per power-of-two
// size class, so equal-sized writes land next to each other (and a stream
// of 128K blocks stays sequential) without tiny blocks filling the holes
// between big ones. The forward scan is bounded (kFirstFitScan segments);
// if it finds nothing, the smallest segment that fits is used (best fit
// from the size index), which is what keeps a fragmented metaslab fast.
//
// Condensing: when the map's length passes condense_pct percent of what
// the current state needs (one word per allocated segment, roughly) and at
// least condense_min_bytes, Sync(t) truncates it and writes the state at
// txg t as the minimal set of ALLOC entries (everything not free, with
// frees already in the map and allocations of later txgs counted as free).
//
// Threading: every public method takes the metaslab's mutex; callers need
// no locking. weight() and free_space() read atomics and never block.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <map>

#include "zfs/spa/range_tree.h"
#include "zfs/spa/space_map.h"
#include "zfs/util/mutex.h"
#include "zfs/util/status.h"

namespace uzfs {

// How metaslab_shift is chosen for a new top-level vdev.
//  kLegacy  (zfs-fuse, pool versions <= 28): highbit(asize / 200), at
//           least 17; about 100-200 metaslabs whatever the size. Checked
//           against zdb -l of zfs-fuse pools of 64 MiB to 10 GiB.
//  kOpenZfs (current OpenZFS): 2^29 (512 MiB) unless that gives fewer
//           than 16 metaslabs (then highbit(asize / 16)) or more than 200
//           (then highbit(asize / 200)); clamped to [24, 34], and past 34
//           only as far as keeps the count <= 131072.
// highbit(x) is the 1-based index of the top set bit (bit_width).
enum class MetaslabShiftRule : uint8_t { kLegacy, kOpenZfs };
uint32_t MetaslabShift(uint64_t asize, MetaslabShiftRule rule);
inline uint64_t MetaslabCount(uint64_t asize, uint32_t shift) { return asize >> shift; }

struct MetaslabOptions {
  uint32_t ashift = 9;            // space map unit; allocations are multiples of it
  bool spacemap_v2 = false;       // feature spacemap_v2: two-word entries allowed
  bool spacemap_histogram = false;  // write the 320-byte header with histogram
  bool debug_entries = true;      // a debug word before each txg's ALLOC / FREE batch
  uint32_t defer_txgs = 2;
  uint32_t condense_pct = 200;
  uint64_t condense_min_bytes = 16 * 1024;
};

class Metaslab {
 public:
  static constexpr size_t kFirstFitScan = 64;

  Metaslab(uint32_t vdev_id, uint64_t id, uint64_t start, uint64_t size,
           const MetaslabOptions& options);
  Metaslab(const Metaslab&) = delete;
  Metaslab& operator=(const Metaslab&) = delete;

  // Replaces the in-memory state with what `sm` says (nullptr: a metaslab
  // never written, all free). Corruption if the map contradicts itself or
  // its header's alloc. REQUIRES: no txg in flight.
  Status Load(SpaceMapStorage* sm);

  // Offset (vdev-relative, like a DVA) of `asize` newly allocated bytes, or
  // NoSpace. REQUIRES: asize a multiple of 1 << ashift.
  Result<uint64_t> Allocate(uint64_t asize, uint64_t txg);
  // Space allocated earlier becomes free after txg syncs (plus the defer
  // period). InvalidArgument if any of it is free, pending free or
  // deferred (a double free).
  Status Free(uint64_t offset, uint64_t size, uint64_t txg);
  // Takes back an allocation made in `txg` that was never written (a
  // failed write); the space is free again at once. InvalidArgument unless
  // the range was allocated in txg and not yet synced.
  Status Unallocate(uint64_t offset, uint64_t size, uint64_t txg);
  // Marks free space allocated in txg (log replay, blocks found on
  // import). InvalidArgument unless all of it is free.
  Status Claim(uint64_t offset, uint64_t size, uint64_t txg);

  // Trim (`zpool trim`): lends out up to `max_bytes` of free space, whole
  // free segments of at least `min_extent` bytes (cut at max_bytes) from
  // the first at or after `from`, and sets *next to where the next call
  // should look (start_ + size_ when the metaslab is done). Lent space is
  // neither allocatable nor counted free (deferred() counts it), so no
  // write can land where a discard is in flight; the space map still
  // calls it free. Every lent range must come back through ReturnTrimmed.
  RangeTree LendForTrim(uint64_t from, uint64_t max_bytes, uint64_t min_extent, uint64_t* next);
  // Makes space lent by LendForTrim or LendAutotrim allocatable again.
  void ReturnTrimmed(const RangeTree& lent);
  // Autotrim (pool property autotrim=on): while on, the space SyncDone
  // makes allocatable again is also kept as a candidate for a discard.
  // Off drops the candidates.
  void SetAutotrim(bool on);
  // Lends (as LendForTrim) the candidates' runs of at least `min_extent`
  // bytes that are still free, up to `max_bytes`, and forgets the
  // candidates it looked at (what was allocated meanwhile is not trimmed).
  RangeTree LendAutotrim(uint64_t max_bytes, uint64_t min_extent);
  // Bytes of autotrim candidates (a cheap look, without the lock).
  uint64_t autotrim_pending() const { return autotrim_bytes_.load(std::memory_order_relaxed); }

  // True if txg has allocations or frees not yet written.
  bool Dirty(uint64_t txg) const;
  // Writes txg's changes to `sm` (appending, or condensing) and its header.
  // allow_condense=false: append even when the map is due for condensing.
  Status Sync(uint64_t txg, SpaceMapStorage* sm, bool allow_condense = true);
  // Txg is durable: releases frees deferred long enough.
  void SyncDone(uint64_t txg);

  uint32_t vdev_id() const { return vdev_id_; }
  uint64_t id() const { return id_; }
  uint64_t start() const { return start_; }
  uint64_t size() const { return size_; }
  // Allocatable bytes now.
  uint64_t free_space() const { return free_bytes_.load(std::memory_order_relaxed); }
  // Freed bytes not yet allocatable (pending or deferred).
  uint64_t deferred() const { return deferred_bytes_.load(std::memory_order_relaxed); }
  // Read without the lock, so clamp: the two counters are stored apart.
  uint64_t allocated() const { return size_ - std::min(size_, free_space() + deferred()); }
  // The longest free segment: an allocation of more than this fails.
  uint64_t weight() const { return max_segment_.load(std::memory_order_relaxed); }
  // Alloc field of the header last written or loaded.
  int64_t map_alloc() const;
  // Copy of the free tree (tests).
  RangeTree FreeTree() const;

 private:
  void UpdateStatsLocked() UZFS_REQUIRES(mu_);
  // Everything the map should call free after txg is written.
  RangeTree MapFreeLocked(uint64_t txg) const UZFS_REQUIRES(mu_);

  const uint32_t vdev_id_;
  const uint64_t id_;
  const uint64_t start_;
  const uint64_t size_;
  const MetaslabOptions opts_;

  mutable Mutex mu_;
  RangeTree free_ UZFS_GUARDED_BY(mu_);
  std::map<uint64_t, RangeTree> allocs_ UZFS_GUARDED_BY(mu_);
  std::map<uint64_t, RangeTree> frees_ UZFS_GUARDED_BY(mu_);
  std::map<uint64_t, RangeTree> defer_ UZFS_GUARDED_BY(mu_);
  RangeTree trimming_ UZFS_GUARDED_BY(mu_);
  bool autotrim_ UZFS_GUARDED_BY(mu_) = false;
  RangeTree autotrim_candidates_ UZFS_GUARDED_BY(mu_);
  std::atomic<uint64_t> autotrim_bytes_{0};
  std::array<uint64_t, 64> cursor_ UZFS_GUARDED_BY(mu_){};
  int64_t map_alloc_ UZFS_GUARDED_BY(mu_) = 0;
  bool sync_broken_ UZFS_GUARDED_BY(mu_) = false;  // a Sync failed part way

  std::atomic<uint64_t> free_bytes_{0};
  std::atomic<uint64_t> deferred_bytes_{0};
  std::atomic<uint64_t> max_segment_{0};
};

}  // namespace uzfs
