// Allocator and MetaslabGroup: see allocator.h for policy and lock order.
#include "zfs/spa/allocator.h"

#include <algorithm>
#include <numeric>

#include "zfs/util/zassert.h"

namespace uzfs {

// The metaslabs of one top-level vdev and which of them is active.
class MetaslabGroup {
 public:
  MetaslabGroup(const TopVdevSpace& v, uint32_t ms_shift, const MetaslabOptions& mo)
      : vdev_(v), ms_shift_(ms_shift) {
    const uint64_t n = MetaslabCount(v.asize, ms_shift);
    metaslabs_.reserve(n);
    for (uint64_t i = 0; i < n; i++) {
      metaslabs_.push_back(std::make_unique<Metaslab>(v.vdev_id, i, i << ms_shift,
                                                      uint64_t{1} << ms_shift, mo));
    }
  }

  uint32_t id() const { return vdev_.vdev_id; }
  uint32_t ms_shift() const { return ms_shift_; }
  uint64_t space() const { return static_cast<uint64_t>(metaslabs_.size()) << ms_shift_; }
  const TopVdevSpace& vdev() const { return vdev_; }
  const std::vector<std::unique_ptr<Metaslab>>& metaslabs() const { return metaslabs_; }

  uint64_t AllocatedSize(uint64_t psize) const {
    if (vdev_.allocated_size) return vdev_.allocated_size(psize);
    const uint64_t unit = uint64_t{1} << vdev_.ashift;
    return (psize + unit - 1) & ~(unit - 1);
  }

  uint64_t free_space() const {
    uint64_t f = 0;
    for (const auto& m : metaslabs_) f += m->free_space();
    return f;
  }

  // The metaslab holding all of [offset, offset+size), or nullptr.
  Metaslab* MetaslabFor(uint64_t offset, uint64_t size) const {
    if (size == 0) return nullptr;
    const uint64_t i = offset >> ms_shift_;
    if (i >= metaslabs_.size() || ((offset + size - 1) >> ms_shift_) != i) return nullptr;
    return metaslabs_[i].get();
  }

  // Offset of asize bytes allocated in txg. `avoid`: other copies of the
  // same block already on this vdev; the new one keeps `distance` bytes
  // from them if the vdev allows, else a different metaslab, else any.
  Result<uint64_t> Allocate(uint64_t asize, uint64_t txg, const std::vector<Dva>& avoid,
                            uint64_t distance) UZFS_EXCLUDES(mu_) {
    if (avoid.empty()) {
      Metaslab* a;
      {
        MutexLock l(&mu_);
        a = active_;
      }
      if (a != nullptr && a->weight() >= asize) {
        auto r = a->Allocate(asize, txg);
        if (r.ok()) return r;
      }
    }
    MutexLock l(&mu_);
    for (int level = avoid.empty() ? 2 : 0; level <= 2; level++) {
      std::vector<Metaslab*> cand;
      for (const auto& m : metaslabs_) {
        if (m->weight() >= asize && Acceptable(*m, avoid, level, distance)) cand.push_back(m.get());
      }
      // A further copy (avoid non-empty) goes to a metaslab already in use
      // where one is far enough, as ZFS keeps its open metaslabs: opening
      // a fresh metaslab for every ditto copy would give each its own
      // space map (and a new pool megabytes of maps). A first copy that
      // outgrew the active metaslab takes the one with the most room.
      const bool ditto = !avoid.empty();
      std::stable_sort(cand.begin(), cand.end(), [ditto](const Metaslab* x, const Metaslab* y) {
        if (ditto) {
          const bool ux = x->allocated() > 0, uy = y->allocated() > 0;
          if (ux != uy) return ux;
        }
        return x->weight() > y->weight();
      });
      for (Metaslab* m : cand) {
        auto r = m->Allocate(asize, txg);
        if (!r.ok()) continue;  // another thread got there first
        if (avoid.empty()) active_ = m;
        return r;
      }
    }
    return Status::NoSpace("top-level vdev " + std::to_string(id()) + " has no room for " +
                           std::to_string(asize) + " bytes");
  }

 private:
  static bool Acceptable(const Metaslab& m, const std::vector<Dva>& avoid, int level,
                         uint64_t distance) {
    if (level == 2) return true;
    for (const Dva& d : avoid) {
      const uint64_t ms_end = m.start() + m.size(), d_end = d.offset + d.asize;
      if (level == 1) {
        if (d.offset < ms_end && d_end > m.start()) return false;  // same metaslab
        continue;
      }
      const uint64_t gap = d_end <= m.start() ? m.start() - d_end
                           : ms_end <= d.offset ? d.offset - ms_end
                                                : 0;
      if (gap < distance) return false;
    }
    return true;
  }

  const TopVdevSpace vdev_;
  const uint32_t ms_shift_;
  std::vector<std::unique_ptr<Metaslab>> metaslabs_;  // immutable after construction
  Mutex mu_;
  Metaslab* active_ UZFS_GUARDED_BY(mu_) = nullptr;
};

Result<SpaceMapStorage*> MemSpaceMapProvider::Open(uint32_t vdev, uint64_t ms, bool create) {
  MutexLock l(&mu_);
  auto it = maps_.find({vdev, ms});
  if (it != maps_.end()) return static_cast<SpaceMapStorage*>(it->second.get());
  if (!create) return static_cast<SpaceMapStorage*>(nullptr);
  auto& p = maps_[{vdev, ms}];
  p = std::make_unique<MemSpaceMapStorage>(next_object_++);
  return static_cast<SpaceMapStorage*>(p.get());
}

size_t MemSpaceMapProvider::size() const {
  MutexLock l(&mu_);
  return maps_.size();
}

Result<std::unique_ptr<Allocator>> Allocator::Create(std::vector<TopVdevSpace> vdevs,
                                                     const AllocatorOptions& options) {
  if (vdevs.empty()) return Status::InvalidArgument("allocator needs at least one top-level vdev");
  std::vector<std::unique_ptr<MetaslabGroup>> groups;
  std::map<uint32_t, size_t> seen;
  for (const auto& v : vdevs) {
    if (!seen.emplace(v.vdev_id, groups.size()).second) {
      return Status::InvalidArgument("duplicate top-level vdev id");
    }
    UZFS_ASSIGN_OR_RETURN(auto g, MakeGroup(v, options));
    groups.push_back(std::move(g));
  }
  if (groups.size() > kMaxGroups) return Status::InvalidArgument("too many top-level vdevs");
  return std::unique_ptr<Allocator>(new Allocator(std::move(groups), options));
}

Result<std::unique_ptr<MetaslabGroup>> Allocator::MakeGroup(const TopVdevSpace& v,
                                                            const AllocatorOptions& options) {
  if (v.ashift < 9 || v.ashift > 16) return Status::InvalidArgument("ashift outside 9..16");
  if (v.vdev_id >= kSpaceMapNoVdev) return Status::InvalidArgument("vdev id past 24 bits");
  const uint32_t shift = v.metaslab_shift ? v.metaslab_shift : MetaslabShift(v.asize, options.shift_rule);
  if (shift < v.ashift || shift > 40 || MetaslabCount(v.asize, shift) == 0) {
    return Status::InvalidArgument("top-level vdev " + std::to_string(v.vdev_id) +
                                   " is too small for one metaslab");
  }
  MetaslabOptions mo{.ashift = v.ashift,
                     .spacemap_v2 = options.spacemap_v2,
                     .spacemap_histogram = options.spacemap_histogram,
                     .debug_entries = options.debug_entries,
                     .defer_txgs = options.defer_txgs,
                     .condense_pct = options.condense_pct,
                     .condense_min_bytes = options.condense_min_bytes};
  return std::make_unique<MetaslabGroup>(v, shift, mo);
}

Allocator::Allocator(std::vector<std::unique_ptr<MetaslabGroup>> groups,
                     const AllocatorOptions& options)
    : opts_(options), groups_(std::move(groups)) {
  const size_t n = groups_.size();
  groups_.reserve(kMaxGroups);  // never reallocated: AddVdev runs beside readers
  ngroups_.store(n, std::memory_order_release);
  MutexLock l(&rotor_mu_);
  rotor_credit_.assign(n, 0);
  rotor_bytes_ = opts_.aliquot;  // the first allocation picks by weight
}

Allocator::~Allocator() = default;

Status Allocator::AddVdev(const TopVdevSpace& v) {
  for (const auto& g : Groups()) {
    if (g->id() == v.vdev_id) return Status::InvalidArgument("duplicate top-level vdev id");
  }
  if (groups_.size() >= kMaxGroups) return Status::InvalidArgument("too many top-level vdevs");
  UZFS_ASSIGN_OR_RETURN(auto g, MakeGroup(v, opts_));
  {
    MutexLock l(&rotor_mu_);
    rotor_credit_.push_back(0);
  }
  groups_.push_back(std::move(g));  // within the reserve
  ngroups_.store(groups_.size(), std::memory_order_release);
  if (autotrim_.load(std::memory_order_acquire)) {
    for (const auto& m : groups_.back()->metaslabs()) m->SetAutotrim(true);
  }
  return Status::Ok();
}

MetaslabGroup* Allocator::Group(uint32_t vdev_id) const {
  for (const auto& g : Groups()) {
    if (g->id() == vdev_id) return g.get();
  }
  return nullptr;
}

size_t Allocator::PickRotor(uint64_t asize_hint, size_t n) {
  std::vector<uint64_t> free(n);
  for (size_t i = 0; i < n; i++) free[i] = groups_[i]->free_space();
  MutexLock l(&rotor_mu_);
  if (rotor_ < n && rotor_bytes_ < opts_.aliquot && free[rotor_] >= asize_hint) {
    rotor_bytes_ += asize_hint;
    return rotor_;
  }
  // Smooth weighted round robin on free space.
  int64_t total = 0;
  size_t best = rotor_ < n ? rotor_ : 0;
  bool found = false;
  for (size_t i = 0; i < n; i++) {
    const int64_t w = static_cast<int64_t>(free[i] >> 12);  // 4K units keep sums small
    total += w;
    rotor_credit_[i] += w;
    if (w > 0 && (!found || rotor_credit_[i] > rotor_credit_[best])) {
      best = i;
      found = true;
    }
  }
  rotor_credit_[best] -= total;
  rotor_ = best;
  rotor_bytes_ = asize_hint;
  return best;
}

Result<std::vector<Dva>> Allocator::Allocate(uint64_t psize, int copies, uint64_t txg) {
  if (copies < 1 || copies > 3) return Status::InvalidArgument("copies must be 1..3");
  if (psize == 0) return Status::InvalidArgument("allocation of 0 bytes");
  const size_t n = Groups().size();
  std::vector<Dva> out;
  std::vector<bool> used(n, false);
  size_t last = 0;
  for (int c = 0; c < copies; c++) {
    std::vector<size_t> order;
    if (c == 0) {
      const size_t first = PickRotor(psize, n);
      order.push_back(first);
      std::vector<size_t> rest;
      for (size_t i = 0; i < n; i++) if (i != first) rest.push_back(i);
      std::vector<uint64_t> free(n);
      for (size_t i : rest) free[i] = groups_[i]->free_space();
      std::stable_sort(rest.begin(), rest.end(), [&](size_t a, size_t b) { return free[a] > free[b]; });
      order.insert(order.end(), rest.begin(), rest.end());
    } else {
      for (size_t k = 1; k <= n; k++) if (!used[(last + k) % n]) order.push_back((last + k) % n);
      for (size_t k = 1; k <= n; k++) if (used[(last + k) % n]) order.push_back((last + k) % n);
    }
    bool placed = false;
    for (size_t gi : order) {
      MetaslabGroup& g = *groups_[gi];
      const uint64_t asize = g.AllocatedSize(psize);
      std::vector<Dva> avoid;
      for (const Dva& d : out) if (d.vdev == g.id()) avoid.push_back(d);
      auto r = g.Allocate(asize, txg, avoid, g.space() >> opts_.ditto_distance_shift);
      if (!r.ok()) {
        if (!r.status().IsNoSpace()) {
          // All or nothing: give back the copies already placed.
          for (const Dva& d : out) Unallocate(d, txg).IgnoreError();
          return r.status();
        }
        if (c == 0 && gi == order[0]) {
          MutexLock l(&rotor_mu_);
          rotor_bytes_ = opts_.aliquot;  // move on next time
        }
        continue;
      }
      Dva d;
      d.vdev = g.id();
      d.asize = asize;
      d.offset = *r;
      out.push_back(d);
      used[gi] = true;
      last = gi;
      placed = true;
      break;
    }
    if (!placed) {
      for (const Dva& d : out) Unallocate(d, txg).IgnoreError();  // ours, just made: cannot fail
      return Status::NoSpace("pool has no room for " + std::to_string(copies) + " copies of " +
                             std::to_string(psize) + " bytes");
    }
  }
  return out;
}

Status Allocator::Free(const Dva& dva, uint64_t txg) {
  MetaslabGroup* g = Group(dva.vdev);
  if (g == nullptr) return Status::InvalidArgument("free on unknown vdev " + std::to_string(dva.vdev));
  Metaslab* m = g->MetaslabFor(dva.offset, dva.asize);
  if (m == nullptr) return Status::InvalidArgument("free of a DVA outside one metaslab");
  return m->Free(dva.offset, dva.asize, txg);
}

Status Allocator::Unallocate(const Dva& dva, uint64_t txg) {
  MetaslabGroup* g = Group(dva.vdev);
  if (g == nullptr) return Status::InvalidArgument("unallocate on unknown vdev");
  Metaslab* m = g->MetaslabFor(dva.offset, dva.asize);
  if (m == nullptr) return Status::InvalidArgument("unallocate of a DVA outside one metaslab");
  return m->Unallocate(dva.offset, dva.asize, txg);
}

Status Allocator::Claim(const Dva& dva, uint64_t txg) {
  MetaslabGroup* g = Group(dva.vdev);
  if (g == nullptr) return Status::InvalidArgument("claim on unknown vdev " + std::to_string(dva.vdev));
  Metaslab* m = g->MetaslabFor(dva.offset, dva.asize);
  if (m == nullptr) return Status::InvalidArgument("claim of a DVA outside one metaslab");
  return m->Claim(dva.offset, dva.asize, txg);
}

Status Allocator::Load(SpaceMapProvider& maps) {
  for (const auto& g : Groups()) {
    for (const auto& m : g->metaslabs()) {
      UZFS_ASSIGN_OR_RETURN(SpaceMapStorage * sm, maps.Open(g->id(), m->id(), false));
      UZFS_RETURN_IF_ERROR(m->Load(sm));
    }
  }
  return Status::Ok();
}

Status Allocator::SyncTxg(uint64_t txg, SpaceMapProvider& maps, bool allow_condense) {
  for (const auto& g : Groups()) {
    for (const auto& m : g->metaslabs()) {
      if (!m->Dirty(txg)) continue;
      UZFS_ASSIGN_OR_RETURN(SpaceMapStorage * sm, maps.Open(g->id(), m->id(), true));
      if (sm == nullptr) return Status::InvalidArgument("space map provider returned no storage");
      UZFS_RETURN_IF_ERROR(m->Sync(txg, sm, allow_condense));
    }
  }
  return Status::Ok();
}

void Allocator::SyncDone(uint64_t txg) {
  for (const auto& g : Groups()) {
    for (const auto& m : g->metaslabs()) m->SyncDone(txg);
  }
}

std::vector<VdevSpaceStats> Allocator::VdevStats() const {
  std::vector<VdevSpaceStats> out;
  for (const auto& g : Groups()) {
    VdevSpaceStats s;
    s.vdev_id = g->id();
    s.asize = g->vdev().asize;
    s.space = g->space();
    s.metaslab_shift = g->ms_shift();
    s.metaslab_count = g->metaslabs().size();
    for (const auto& m : g->metaslabs()) {
      s.free += m->free_space();
      s.deferred += m->deferred();
      s.max_free_segment = std::max(s.max_free_segment, m->weight());
    }
    s.allocated = s.space - std::min(s.space, s.free + s.deferred);
    out.push_back(s);
  }
  return out;
}

uint64_t Allocator::space() const {
  uint64_t t = 0;
  for (const auto& g : Groups()) t += g->space();
  return t;
}
uint64_t Allocator::free_space() const {
  uint64_t t = 0;
  for (const auto& s : VdevStats()) t += s.free;
  return t;
}
uint64_t Allocator::deferred() const {
  uint64_t t = 0;
  for (const auto& s : VdevStats()) t += s.deferred;
  return t;
}
uint64_t Allocator::allocated() const {
  uint64_t t = 0;
  for (const auto& s : VdevStats()) t += s.allocated;
  return t;
}

uint32_t Allocator::metaslab_shift(uint32_t vdev_id) const {
  MetaslabGroup* g = Group(vdev_id);
  return g ? g->ms_shift() : 0;
}

uint64_t Allocator::metaslab_count(uint32_t vdev_id) const {
  MetaslabGroup* g = Group(vdev_id);
  return g ? g->metaslabs().size() : 0;
}

RangeTree Allocator::LendForTrim(uint32_t vdev_id, uint64_t ms, uint64_t from, uint64_t max_bytes,
                                 uint64_t min_extent, uint64_t* next) {
  MetaslabGroup* g = Group(vdev_id);
  if (g == nullptr || ms >= g->metaslabs().size()) {
    *next = UINT64_MAX;
    return {};
  }
  return g->metaslabs()[ms]->LendForTrim(from, max_bytes, min_extent, next);
}

void Allocator::SetAutotrim(bool on) {
  autotrim_.store(on, std::memory_order_release);
  for (const auto& g : Groups()) {
    for (const auto& m : g->metaslabs()) m->SetAutotrim(on);
  }
}

RangeTree Allocator::LendAutotrim(uint32_t vdev_id, uint64_t ms, uint64_t max_bytes, uint64_t min_extent) {
  MetaslabGroup* g = Group(vdev_id);
  if (g == nullptr || ms >= g->metaslabs().size()) return {};
  Metaslab& m = *g->metaslabs()[ms];
  if (m.autotrim_pending() == 0) return {};
  return m.LendAutotrim(max_bytes, min_extent);
}

uint64_t Allocator::autotrim_pending() const {
  uint64_t sum = 0;
  for (const auto& g : Groups()) {
    for (const auto& m : g->metaslabs()) sum += m->autotrim_pending();
  }
  return sum;
}

void Allocator::ReturnTrimmed(uint32_t vdev_id, uint64_t ms, const RangeTree& lent) {
  MetaslabGroup* g = Group(vdev_id);
  ZVERIFY(g != nullptr && ms < g->metaslabs().size());
  g->metaslabs()[ms]->ReturnTrimmed(lent);
}

}  // namespace uzfs
