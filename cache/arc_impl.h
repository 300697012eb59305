// The ARC's private structures: headers, the per-shard lists and counters.
// Only cache/arc*.cc include this file (see arc.h for the policy).
//
// A header (ArcHeader) is one key's entry: in a shard's hash table, on one
// of the shard's eight lists (state x kind), with its stored bytes unless it
// is a ghost. Every field but `refs` is guarded by the mutex of the shard
// the key hashes to. `refs` counts ArcRefs; it is raised only under the
// shard mutex (so eviction, which needs refs == 0 under that mutex, cannot
// race with a new reference) and dropped without it. kOrphan in `refs`
// marks a header no longer in the table (forgotten while referenced, or
// never cached): whoever brings it to kOrphan|0 deletes it.
//
// Each list keeps the stamp of its tail (oldest) header in an atomic, so
// the evictor can find the globally oldest header of a state by reading
// the shards' stamps without locking them. Stamps are steady-clock
// nanoseconds taken under the shard mutex (monotone along every list);
// kNotAdmitted marks an MFU entry refused by the admission rule (the next
// victim).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "cache/arc.h"
#include "cache/freq_sketch.h"
#include "zfs/util/mutex.h"

namespace uzfs {

enum class ArcState : uint8_t { kMru = 0, kMfu = 1, kMruGhost = 2, kMfuGhost = 3, kNone = 4 };
inline constexpr int kArcStates = 4;
inline constexpr int kArcKinds = 2;
inline constexpr uint64_t kEmptyStamp = UINT64_MAX;
inline constexpr uint64_t kNotAdmitted = 1;
inline constexpr uint32_t kOrphan = 1u << 31;

inline bool IsGhost(ArcState s) { return s == ArcState::kMruGhost || s == ArcState::kMfuGhost; }

struct ArcHeader {
  ArcKey key;
  uint64_t hash = 0;
  ArcHeader* prev = nullptr;  // toward the head (newer)
  ArcHeader* next = nullptr;  // toward the tail (older)
  ArcHeader* dprev = nullptr;  // the shard's decompressed-copy LRU
  ArcHeader* dnext = nullptr;
  ArcState state = ArcState::kNone;
  ArcBufKind kind = ArcBufKind::kData;
  CompressType compression = CompressType::kOff;
  bool prefetch = false;
  bool in_dlist = false;
  bool l2_allowed = true;     // secondarycache (ArcReadFlags::secondary)
  uint32_t shard = 0;
  uint64_t size = 0;          // stored bytes (also remembered by ghosts)
  uint64_t lsize = 0;
  uint64_t stamp = 0;         // last access, ns (ghosts: when evicted)
  AlignedBytes data;          // empty in ghosts
  std::shared_ptr<const std::vector<uint8_t>> plain;  // decompressed copy
  std::atomic<uint32_t> refs{0};
};

// An intrusive doubly linked list, head = newest.
struct ArcList {
  ArcHeader* head = nullptr;
  ArcHeader* tail = nullptr;
  std::atomic<uint64_t> tail_stamp{kEmptyStamp};

  void SyncTail() { tail_stamp.store(tail ? tail->stamp : kEmptyStamp, std::memory_order_relaxed); }
  void PushHead(ArcHeader* h) {
    h->prev = nullptr;
    h->next = head;
    if (head) head->prev = h;
    head = h;
    if (!tail) tail = h;
    SyncTail();
  }
  void PushTail(ArcHeader* h) {
    h->next = nullptr;
    h->prev = tail;
    if (tail) tail->next = h;
    tail = h;
    if (!head) head = h;
    SyncTail();
  }
  void Remove(ArcHeader* h) {
    if (h->prev) h->prev->next = h->next; else head = h->next;
    if (h->next) h->next->prev = h->prev; else tail = h->prev;
    h->prev = h->next = nullptr;
    SyncTail();
  }
};

// Per-shard counters (summed by Arc::Stats).
struct ArcCounters {
  uint64_t hits = 0, misses = 0;
  uint64_t demand_data_hits = 0, demand_data_misses = 0;
  uint64_t demand_metadata_hits = 0, demand_metadata_misses = 0;
  uint64_t prefetch_data_hits = 0, prefetch_data_misses = 0;
  uint64_t prefetch_metadata_hits = 0, prefetch_metadata_misses = 0;
  uint64_t demand_hit_predictive_prefetch = 0;
  uint64_t mru_hits = 0, mfu_hits = 0, mru_ghost_hits = 0, mfu_ghost_hits = 0;
  uint64_t deleted = 0, evict_skip = 0, evicted_mru = 0, evicted_mfu = 0, uncached = 0;
};

// One read of a missing key in progress (Arc::Read's single flight).
struct ArcInFlight {
  Mutex mu;
  CondVar cv;
  bool done UZFS_GUARDED_BY(mu) = false;
  Status status UZFS_GUARDED_BY(mu);
};

struct ArcKeyHasher {
  size_t operator()(const ArcKey& k) const { return static_cast<size_t>(k.Hash()); }
};

struct alignas(64) ArcShard {
  Mutex mu;
  std::unordered_map<ArcKey, ArcHeader*, ArcKeyHasher> table UZFS_GUARDED_BY(mu);
  // Lists by [state][kind]; their tail_stamp atomics may be read unlocked.
  ArcList lists[kArcStates][kArcKinds];
  ArcHeader* dhead UZFS_GUARDED_BY(mu) = nullptr;  // decompressed copies, newest first
  ArcHeader* dtail UZFS_GUARDED_BY(mu) = nullptr;
  uint64_t dbytes UZFS_GUARDED_BY(mu) = 0;
  FreqSketch sketch UZFS_GUARDED_BY(mu);  // recent popularity of this shard's keys
  ArcCounters ctr UZFS_GUARDED_BY(mu);
  std::unordered_map<ArcKey, std::shared_ptr<ArcInFlight>, ArcKeyHasher> inflight UZFS_GUARDED_BY(mu);
};

}  // namespace uzfs
