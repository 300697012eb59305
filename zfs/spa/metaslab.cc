// Metaslab: see metaslab.h for the state machine, policy and locking.
#include "zfs/spa/metaslab.h"

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <iterator>

namespace uzfs {
namespace {

// An invariant of our own trees broke: continuing would hand out space
// twice, so stop (like ZFS's VERIFY).
void VerifyOk(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "metaslab invariant broken (%s): %s\n", what, s.ToString(true).c_str());
    std::abort();
  }
}

uint64_t HighBit(uint64_t x) { return static_cast<uint64_t>(std::bit_width(x)); }

}  // namespace

uint32_t MetaslabShift(uint64_t asize, MetaslabShiftRule rule) {
  if (rule == MetaslabShiftRule::kLegacy) {
    return static_cast<uint32_t>(std::max<uint64_t>(HighBit(asize / 200), 17));
  }
  constexpr uint64_t kDefaultShift = 29, kMinCount = 16, kDefaultCount = 200;
  constexpr uint64_t kMinShift = 24, kMaxShift = 34, kCountLimit = 131072;
  const uint64_t count = asize >> kDefaultShift;
  uint64_t shift = kDefaultShift;
  if (count < kMinCount) {
    shift = HighBit(asize / kMinCount);
  } else if (count > kDefaultCount) {
    shift = HighBit(asize / kDefaultCount);
  }
  if (shift < kMinShift) {
    shift = kMinShift;
  } else if (shift > kMaxShift) {
    shift = kMaxShift;
    if ((asize >> shift) > kCountLimit) shift = HighBit(asize / kCountLimit);
  }
  return static_cast<uint32_t>(shift);
}

Metaslab::Metaslab(uint32_t vdev_id, uint64_t id, uint64_t start, uint64_t size,
                   const MetaslabOptions& options)
    : vdev_id_(vdev_id), id_(id), start_(start), size_(size), opts_(options) {
  MutexLock l(&mu_);
  VerifyOk(free_.Add(start_, size_), "initial free space");
  cursor_.fill(start_);
  UpdateStatsLocked();
}

void Metaslab::UpdateStatsLocked() {
  uint64_t deferred = 0;
  for (const auto& [t, tree] : frees_) deferred += tree.space();
  for (const auto& [t, tree] : defer_) deferred += tree.space();
  deferred += trimming_.space();
  free_bytes_.store(free_.space(), std::memory_order_relaxed);
  deferred_bytes_.store(deferred, std::memory_order_relaxed);
  max_segment_.store(free_.largest_size(), std::memory_order_relaxed);
}

int64_t Metaslab::map_alloc() const {
  MutexLock l(&mu_);
  return map_alloc_;
}

RangeTree Metaslab::FreeTree() const {
  MutexLock l(&mu_);
  return free_;
}

Status Metaslab::Load(SpaceMapStorage* sm) {
  MutexLock l(&mu_);
  if (!allocs_.empty() || !frees_.empty() || !trimming_.empty()) {
    return Status::InvalidArgument("metaslab load with unsynced changes or a trim under way");
  }
  RangeTree free;
  VerifyOk(free.Add(start_, size_), "load");
  int64_t alloc = 0;
  if (sm != nullptr) {
    UZFS_ASSIGN_OR_RETURN(auto words, sm->ReadAll());
    Status s = ReplaySpaceMap(words, opts_.ashift, start_, size_, &free, &alloc);
    if (!s.ok()) return s.WithContext("metaslab " + std::to_string(id_));
    auto header = sm->ReadHeader();
    if (header.ok() && header->alloc != alloc) {
      return Status::Corruption("metaslab " + std::to_string(id_) +
                                ": space map header alloc disagrees with its entries");
    }
    if (!header.ok() && !header.status().IsNotFound()) return header.status();
  }
  free_ = std::move(free);
  defer_.clear();
  autotrim_candidates_.Clear();
  autotrim_bytes_.store(0, std::memory_order_relaxed);
  map_alloc_ = alloc;
  cursor_.fill(start_);
  UpdateStatsLocked();
  return Status::Ok();
}

Result<uint64_t> Metaslab::Allocate(uint64_t asize, uint64_t txg) {
  const uint64_t unit = uint64_t{1} << opts_.ashift;
  if (asize == 0 || asize % unit) {
    return Status::InvalidArgument("allocation size not a multiple of the sector size");
  }
  MutexLock l(&mu_);
  if (free_.largest_size() < asize) return Status::NoSpace("metaslab has no segment that long");
  const int cls = std::bit_width(asize) - 1;
  std::optional<uint64_t> off = free_.FirstFit(cursor_[cls], asize, kFirstFitScan);
  if (!off) off = free_.BestFit(asize);
  if (!off) return Status::NoSpace("metaslab has no segment that long");
  VerifyOk(free_.Remove(*off, asize), "allocate");
  VerifyOk(allocs_[txg].Add(*off, asize), "allocate txg tree");
  cursor_[cls] = *off + asize;
  UpdateStatsLocked();
  return *off;
}

Status Metaslab::Free(uint64_t offset, uint64_t size, uint64_t txg) {
  if (offset < start_ || size > size_ || offset - start_ > size_ - size) {
    return Status::InvalidArgument("free outside its metaslab");
  }
  MutexLock l(&mu_);
  if (free_.Intersects(offset, size) || trimming_.Intersects(offset, size)) {
    return Status::InvalidArgument("double free: space is free");
  }
  for (const auto& [t, tree] : frees_) {
    if (tree.Intersects(offset, size)) return Status::InvalidArgument("double free: already being freed");
  }
  for (const auto& [t, tree] : defer_) {
    if (tree.Intersects(offset, size)) return Status::InvalidArgument("double free: freed and deferred");
  }
  for (auto it = allocs_.upper_bound(txg); it != allocs_.end(); ++it) {
    if (it->second.Intersects(offset, size)) {
      return Status::InvalidArgument("free in a txg before the space's allocation");
    }
  }
  VerifyOk(frees_[txg].Add(offset, size), "free txg tree");
  UpdateStatsLocked();
  return Status::Ok();
}

Status Metaslab::Unallocate(uint64_t offset, uint64_t size, uint64_t txg) {
  MutexLock l(&mu_);
  auto it = allocs_.find(txg);
  if (it == allocs_.end() || !it->second.Contains(offset, size)) {
    return Status::InvalidArgument("unallocate of space not allocated in this unsynced txg");
  }
  VerifyOk(it->second.Remove(offset, size), "unallocate");
  if (it->second.empty()) allocs_.erase(it);
  VerifyOk(free_.Add(offset, size), "unallocate free");
  UpdateStatsLocked();
  return Status::Ok();
}

Status Metaslab::Claim(uint64_t offset, uint64_t size, uint64_t txg) {
  MutexLock l(&mu_);
  if (!free_.Contains(offset, size)) return Status::InvalidArgument("claim of space that is not free");
  VerifyOk(free_.Remove(offset, size), "claim");
  VerifyOk(allocs_[txg].Add(offset, size), "claim txg tree");
  UpdateStatsLocked();
  return Status::Ok();
}

RangeTree Metaslab::LendForTrim(uint64_t from, uint64_t max_bytes, uint64_t min_extent,
                                uint64_t* next) {
  MutexLock l(&mu_);
  RangeTree lent;
  uint64_t pos = std::max(from, start_);
  const uint64_t end = start_ + size_;
  const auto& segs = free_.segments();
  // The segment holding `pos`, if any, then the ones after it.
  auto it = segs.upper_bound(pos);
  if (it != segs.begin() && std::prev(it)->second > pos) --it;
  while (it != segs.end() && lent.space() < max_bytes) {
    const uint64_t s = std::max(it->first, pos);
    const uint64_t e = it->second;
    ++it;
    pos = e;
    if (e - s < std::max<uint64_t>(min_extent, 1)) continue;
    const uint64_t take = std::min(e - s, max_bytes - lent.space());
    VerifyOk(lent.Add(s, take), "lend for trim");
    pos = s + take;
  }
  if (it == segs.end() && lent.space() < max_bytes) pos = end;
  for (const auto& [s, e] : lent.segments()) {
    VerifyOk(free_.Remove(s, e - s), "lend for trim: free");
    VerifyOk(trimming_.Add(s, e - s), "lend for trim: trimming");
  }
  if (!lent.empty()) UpdateStatsLocked();
  *next = std::min(pos, end);
  return lent;
}

void Metaslab::ReturnTrimmed(const RangeTree& lent) {
  MutexLock l(&mu_);
  for (const auto& [s, e] : lent.segments()) {
    VerifyOk(trimming_.Remove(s, e - s), "return trimmed");
    VerifyOk(free_.Add(s, e - s), "return trimmed: free");
  }
  if (!lent.empty()) UpdateStatsLocked();
}

void Metaslab::SetAutotrim(bool on) {
  MutexLock l(&mu_);
  autotrim_ = on;
  if (!on) autotrim_candidates_.Clear();
  autotrim_bytes_.store(autotrim_candidates_.space(), std::memory_order_relaxed);
}

RangeTree Metaslab::LendAutotrim(uint64_t max_bytes, uint64_t min_extent) {
  MutexLock l(&mu_);
  RangeTree lent;
  const auto& free_segs = free_.segments();
  while (!autotrim_candidates_.empty() && lent.space() < max_bytes) {
    const auto [cs, ce] = *autotrim_candidates_.segments().begin();
    uint64_t stop = ce;  // the candidates up to here are looked at
    auto it = free_segs.upper_bound(cs);
    if (it != free_segs.begin() && std::prev(it)->second > cs) --it;
    for (; it != free_segs.end() && it->first < ce; ++it) {
      const uint64_t s = std::max(it->first, cs);
      const uint64_t e = std::min(it->second, ce);
      if (e - s < std::max<uint64_t>(min_extent, 1)) continue;
      const uint64_t take = std::min(e - s, max_bytes - lent.space());
      VerifyOk(lent.Add(s, take), "lend for autotrim");
      if (lent.space() >= max_bytes) {
        stop = s + take;
        break;
      }
    }
    VerifyOk(autotrim_candidates_.Remove(cs, stop - cs), "autotrim candidates");
  }
  for (const auto& [s, e] : lent.segments()) {
    VerifyOk(free_.Remove(s, e - s), "lend for autotrim: free");
    VerifyOk(trimming_.Add(s, e - s), "lend for autotrim: trimming");
  }
  autotrim_bytes_.store(autotrim_candidates_.space(), std::memory_order_relaxed);
  if (!lent.empty()) UpdateStatsLocked();
  return lent;
}

bool Metaslab::Dirty(uint64_t txg) const {
  MutexLock l(&mu_);
  return allocs_.count(txg) || frees_.count(txg);
}

RangeTree Metaslab::MapFreeLocked(uint64_t txg) const {
  RangeTree out = free_;
  for (const auto& [s, e] : trimming_.segments()) VerifyOk(out.Add(s, e - s), "map view: trimming");
  for (const auto& [t, tree] : defer_) {
    for (const auto& [s, e] : tree.segments()) VerifyOk(out.Add(s, e - s), "map view: defer");
  }
  for (const auto& [t, tree] : allocs_) {
    if (t == txg) continue;  // written now: allocated in the map
    for (const auto& [s, e] : tree.segments()) VerifyOk(out.Add(s, e - s), "map view: later allocs");
  }
  if (auto it = frees_.find(txg); it != frees_.end()) {
    for (const auto& [s, e] : it->second.segments()) VerifyOk(out.Add(s, e - s), "map view: frees");
  }
  return out;
}

Status Metaslab::Sync(uint64_t txg, SpaceMapStorage* sm, bool allow_condense) {
  MutexLock l(&mu_);
  if (sync_broken_)
    return Status::IoError("metaslab " + std::to_string(id_) +
                           ": its space map was left half-written by a failed sync; "
                           "export and import the pool");
  // A storage call that fails part way leaves the map in an unknown state:
  // retrying would append entries twice. The on-disk map is only committed
  // with its txg's uberblock, so the pool recovers by re-importing.
  struct Guard {
    bool* broken;
    bool done = false;
    ~Guard() {
      if (!done) *broken = true;
    }
  } guard{&sync_broken_};
  auto ait = allocs_.find(txg);
  auto fit = frees_.find(txg);
  if (ait == allocs_.end() && fit == frees_.end()) {
    guard.done = true;
    return Status::Ok();
  }
  static const RangeTree kEmpty;
  const RangeTree& a = ait == allocs_.end() ? kEmpty : ait->second;
  const RangeTree& f = fit == frees_.end() ? kEmpty : fit->second;

  const uint64_t have_words = sm->Length() / 8;
  const uint64_t add_words = a.num_segments() + f.num_segments() + 2;
  uint64_t optimal = free_.num_segments() + trimming_.num_segments() + 2;
  for (const auto& [t, tree] : defer_) optimal += tree.num_segments();
  const uint64_t after = have_words + add_words;
  const bool condense = allow_condense && after * 8 >= opts_.condense_min_bytes &&
                        after * 100 > static_cast<uint64_t>(opts_.condense_pct) * optimal;

  int64_t new_alloc = map_alloc_;
  std::optional<RangeTree> map_free;
  if (condense || opts_.spacemap_histogram) map_free = MapFreeLocked(txg);
  if (condense) {
    // The state at txg as the allocated complement of map_free.
    RangeTree allocated;
    uint64_t pos = start_;
    for (const auto& [s, e] : map_free->segments()) {
      if (s > pos) VerifyOk(allocated.Add(pos, s - pos), "condense");
      pos = e;
    }
    if (pos < start_ + size_) VerifyOk(allocated.Add(pos, start_ + size_ - pos), "condense");
    SpaceMapEncoder enc(opts_.ashift, opts_.spacemap_v2, 0, sm->BlockSize() / 8);
    UZFS_RETURN_IF_ERROR(enc.Tree(SpaceMapType::kAlloc, allocated, start_, 1, txg, opts_.debug_entries));
    UZFS_RETURN_IF_ERROR(sm->Truncate());
    UZFS_RETURN_IF_ERROR(sm->Append(enc.words()));
    new_alloc = static_cast<int64_t>(allocated.space());
  } else {
    SpaceMapEncoder enc(opts_.ashift, opts_.spacemap_v2, have_words, sm->BlockSize() / 8);
    UZFS_RETURN_IF_ERROR(enc.Tree(SpaceMapType::kAlloc, a, start_, 1, txg, opts_.debug_entries));
    UZFS_RETURN_IF_ERROR(enc.Tree(SpaceMapType::kFree, f, start_, 1, txg, opts_.debug_entries));
    UZFS_RETURN_IF_ERROR(sm->Append(enc.words()));
    new_alloc += static_cast<int64_t>(a.space()) - static_cast<int64_t>(f.space());
  }
  SpaceMapHeader h{.object = sm->Object(), .length = sm->Length(), .alloc = new_alloc,
                   .histogram = std::nullopt};
  if (opts_.spacemap_histogram) h.histogram = SpaceMapHistogram(*map_free, opts_.ashift);
  UZFS_RETURN_IF_ERROR(sm->WriteHeader(h));
  guard.done = true;

  // Written: the txg's allocations are now just "not free"; its frees wait.
  map_alloc_ = new_alloc;
  if (ait != allocs_.end()) allocs_.erase(ait);
  if (fit != frees_.end()) {
    RangeTree& d = defer_[txg];
    VerifyOk(fit->second.MoveTo(&d), "defer");
    frees_.erase(fit);
  }
  UpdateStatsLocked();
  return Status::Ok();
}

void Metaslab::SyncDone(uint64_t txg) {
  MutexLock l(&mu_);
  bool changed = false;
  while (!defer_.empty() && defer_.begin()->first + opts_.defer_txgs <= txg) {
    if (autotrim_) {
      for (const auto& [a, b] : defer_.begin()->second.segments()) autotrim_candidates_.AddOverlapping(a, b - a);
      autotrim_bytes_.store(autotrim_candidates_.space(), std::memory_order_relaxed);
    }
    VerifyOk(defer_.begin()->second.MoveTo(&free_), "release deferred frees");
    defer_.erase(defer_.begin());
    changed = true;
  }
  if (changed) UpdateStatsLocked();
}

}  // namespace uzfs
