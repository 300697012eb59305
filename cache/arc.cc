// The ARC: lookup, insert, single-flight reads, eviction, adaptation (see
// arc.h for the policy and arc_impl.h for the structures and locking).
#include "cache/arc.h"

#include <algorithm>
#include <chrono>

#include "cache/arc_impl.h"
#include "zfs/util/probes.h"
#include "zfs/util/tunables.h"

namespace uzfs {

namespace {

uint64_t Mix(uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

uint64_t NowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

int K(ArcBufKind k) { return static_cast<int>(k); }
int S(ArcState s) { return static_cast<int>(s); }

}  // namespace

Result<ArcKey> ArcKey::FromBlockPtr(uint64_t pool_guid, const BlockPtr& bp) {
  if (bp.embedded) return Status::NotSupported("embedded block pointers are not cached");
  if (bp.IsHole()) return Status::NotSupported("holes are not cached");
  ArcKey k;
  k.pool_guid = pool_guid;
  k.vdev = bp.dva[0].vdev;
  k.offset = bp.dva[0].offset;
  k.birth = bp.PhysBirth();
  return k;
}

uint64_t ArcKey::Hash() const {
  return Mix(pool_guid ^ Mix(vdev * 0x9e3779b97f4a7c15ull ^ Mix(offset ^ Mix(birth))));
}

// ---------------------------------------------------------------------------

struct Arc::Impl {
  explicit Impl(Arc* a, const ArcOptions& o) : arc(a), opts(o) {
    unsigned n = 1;
    while (n < std::max(1u, o.shards)) n <<= 1;
    nshards = n;
    shard_bits = 0;
    while ((1u << shard_bits) < n) shard_bits++;
    shards = std::make_unique<ArcShard[]>(n);
  }
  // At most one sketch word per 4 KiB of c_max per shard (16 counters per
  // word); each starts small and grows with use (freq_sketch.h).
  void SizeSketches(uint64_t c_max) {
    const uint64_t words = std::min<uint64_t>(uint64_t{1} << 20, std::max<uint64_t>(64, c_max / 4096 / nshards));
    for (unsigned i = 0; i < nshards; i++) {
      MutexLock l(&shards[i].mu);
      shards[i].sketch.Resize(words);
    }
  }

  Arc* arc;
  ArcOptions opts;
  unsigned nshards = 1;
  unsigned shard_bits = 0;
  std::unique_ptr<ArcShard[]> shards;

  // Bytes of cached buffers / ghosts by [state][kind].
  std::atomic<uint64_t> bytes[kArcStates][kArcKinds] = {};
  std::atomic<uint64_t> cached_lsize{0};
  std::atomic<uint64_t> dbuf_bytes{0};
  std::atomic<uint64_t> headers{0};
  std::atomic<uint64_t> meta_limit{0};
  std::atomic<uint64_t> dbuf_max{0};
  std::atomic<bool> no_grow{false};
  std::atomic<uint64_t> throttles{0};

  Mutex adapt_mu;  // serializes changes of c and p (leaf lock)
  Mutex evict_mu;  // one evictor at a time; taken before any shard mu

  ArcShard& ShardOf(uint64_t hash) { return shards[shard_bits ? hash >> (64 - shard_bits) : 0]; }
  uint32_t ShardIndex(uint64_t hash) const {
    return static_cast<uint32_t>(shard_bits ? hash >> (64 - shard_bits) : 0);
  }

  uint64_t Bytes(ArcState s) const {
    return bytes[S(s)][0].load(std::memory_order_relaxed) + bytes[S(s)][1].load(std::memory_order_relaxed);
  }
  uint64_t MetaUsed() const {
    return bytes[S(ArcState::kMru)][1].load(std::memory_order_relaxed) +
           bytes[S(ArcState::kMfu)][1].load(std::memory_order_relaxed);
  }
  uint64_t Size() const {
    return Bytes(ArcState::kMru) + Bytes(ArcState::kMfu) + dbuf_bytes.load(std::memory_order_relaxed);
  }
  void AddBytes(ArcState s, ArcBufKind k, uint64_t n) {
    bytes[S(s)][K(k)].fetch_add(n, std::memory_order_relaxed);
  }
  void SubBytes(ArcState s, ArcBufKind k, uint64_t n) {
    bytes[S(s)][K(k)].fetch_sub(n, std::memory_order_relaxed);
  }

  // --- hit/miss accounting (REQUIRES sh.mu) -------------------------------
  static void CountMiss(ArcShard& sh, uint64_t hash, const ArcReadFlags& f) UZFS_REQUIRES(sh.mu) {
    sh.ctr.misses++;
    UZFS_PROBE(arc_miss, f.bp != nullptr ? f.bp->psize : uint64_t{0});
    sh.sketch.Increment(hash);
    const bool meta = f.kind == ArcBufKind::kMetadata;
    if (f.prefetch) {
      (meta ? sh.ctr.prefetch_metadata_misses : sh.ctr.prefetch_data_misses)++;
    } else {
      (meta ? sh.ctr.demand_metadata_misses : sh.ctr.demand_data_misses)++;
    }
  }

  // A hit on cached header h (REQUIRES sh.mu): counters, use count, list move.
  void Access(ArcShard& sh, ArcHeader* h, const ArcReadFlags& f, uint64_t now) UZFS_REQUIRES(sh.mu) {
    sh.ctr.hits++;
    UZFS_PROBE(arc_hit, h->size);
    sh.sketch.Increment(h->hash);
    const bool meta = h->kind == ArcBufKind::kMetadata;
    bool promote = false;
    if (f.prefetch) {
      (meta ? sh.ctr.prefetch_metadata_hits : sh.ctr.prefetch_data_hits)++;
    } else if (h->prefetch) {
      // The first demand use of a read-ahead block: the prefetch paid off.
      (meta ? sh.ctr.prefetch_metadata_hits : sh.ctr.prefetch_data_hits)++;
      sh.ctr.demand_hit_predictive_prefetch++;
      h->prefetch = false;
    } else {
      (meta ? sh.ctr.demand_metadata_hits : sh.ctr.demand_data_hits)++;
      promote = true;
    }
    ArcList& cur = sh.lists[S(h->state)][K(h->kind)];
    if (h->state == ArcState::kMru) {
      sh.ctr.mru_hits++;
      if (promote && now - h->stamp >= opts.min_promote_ns) {
        cur.Remove(h);
        SubBytes(ArcState::kMru, h->kind, h->size);
        h->state = ArcState::kMfu;
        h->stamp = now;
        sh.lists[S(ArcState::kMfu)][K(h->kind)].PushHead(h);
        AddBytes(ArcState::kMfu, h->kind, h->size);
        return;
      }
    } else {
      sh.ctr.mfu_hits++;
    }
    cur.Remove(h);
    h->stamp = now;
    cur.PushHead(h);
  }

  // Admission into a full cache (see arc.h): the newcomer h must have been
  // asked for more often than the oldest admitted buffer of its list in
  // this shard (else of the other state's list); with no such buffer it is
  // admitted.
  static bool Admit(ArcShard& sh, const ArcHeader* h) UZFS_REQUIRES(sh.mu) {
    const ArcState other = h->state == ArcState::kMru ? ArcState::kMfu : ArcState::kMru;
    for (ArcState st : {h->state, other}) {
      const ArcHeader* v = sh.lists[S(st)][K(h->kind)].tail;
      for (int i = 0; v && (v->stamp == kNotAdmitted || v == h) && i < 16; i++) v = v->prev;
      if (!v || v->stamp == kNotAdmitted) continue;
      return sh.sketch.Estimate(h->hash) > sh.sketch.Estimate(v->hash);
    }
    return true;
  }

  // --- decompressed copies (REQUIRES sh.mu) --------------------------------
  void DropPlain(ArcShard& sh, ArcHeader* h) UZFS_REQUIRES(sh.mu) {
    if (!h->in_dlist) return;
    if (h->dprev) h->dprev->dnext = h->dnext; else sh.dhead = h->dnext;
    if (h->dnext) h->dnext->dprev = h->dprev; else sh.dtail = h->dprev;
    h->dprev = h->dnext = nullptr;
    h->in_dlist = false;
    sh.dbytes -= h->lsize;
    dbuf_bytes.fetch_sub(h->lsize, std::memory_order_relaxed);
    h->plain.reset();
  }
  void KeepPlain(ArcShard& sh, ArcHeader* h, std::shared_ptr<const std::vector<uint8_t>> p) UZFS_REQUIRES(sh.mu) {
    const uint64_t bound = dbuf_max.load(std::memory_order_relaxed) / nshards;
    if (h->lsize > bound) return;
    while (sh.dtail && sh.dbytes + h->lsize > bound) DropPlain(sh, sh.dtail);
    h->plain = std::move(p);
    h->in_dlist = true;
    h->dprev = nullptr;
    h->dnext = sh.dhead;
    if (sh.dhead) sh.dhead->dprev = h;
    sh.dhead = h;
    if (!sh.dtail) sh.dtail = h;
    sh.dbytes += h->lsize;
    dbuf_bytes.fetch_add(h->lsize, std::memory_order_relaxed);
  }

  // --- p adaptation (ZFS's arc_adapt) -------------------------------------
  void Adapt(ArcState ghost, uint64_t n) UZFS_EXCLUDES(adapt_mu) {
    MutexLock l(&adapt_mu);
    const uint64_t c = arc->c_.load(std::memory_order_relaxed);
    uint64_t p = arc->p_.load(std::memory_order_relaxed);
    const uint64_t p_min = c >> opts.p_min_shift;
    const uint64_t mrug = Bytes(ArcState::kMruGhost), mfug = Bytes(ArcState::kMfuGhost);
    if (ghost == ArcState::kMruGhost) {
      uint64_t mult = (mrug >= mfug || mrug == 0) ? 1 : mfug / mrug;
      mult = std::min<uint64_t>(mult, 10);
      p = std::min(c - p_min, p + n * mult);
    } else {
      uint64_t mult = (mfug >= mrug || mfug == 0) ? 1 : mrug / mfug;
      mult = std::min<uint64_t>(mult, 10);
      p = std::max(p_min, p - std::min(n * mult, p));
    }
    arc->p_.store(p, std::memory_order_relaxed);
  }

  // c grows by an insert's size while the cache is full (ZFS: arc_adapt).
  void Grow(uint64_t n) UZFS_EXCLUDES(adapt_mu) {
    if (no_grow.load(std::memory_order_relaxed)) return;
    const uint64_t c = arc->c_.load(std::memory_order_relaxed);
    if (c >= arc->c_max_.load(std::memory_order_relaxed) || Size() + n < c) return;
    MutexLock l(&adapt_mu);
    const uint64_t cmax = arc->c_max_.load(std::memory_order_relaxed);
    const uint64_t nc = std::min(cmax, arc->c_.load(std::memory_order_relaxed) + n);
    arc->c_.store(nc, std::memory_order_relaxed);
  }

  // --- eviction -------------------------------------------------------------
  // Evicts one unreferenced header from the tail of sh.lists[st][k];
  // returns its size, 0 if every header walked was referenced.
  uint64_t EvictOne(ArcShard& sh, ArcState st, int k, bool refused_only, std::vector<ArcHeader*>* dead)
      UZFS_REQUIRES(sh.mu) {
    ArcList& list = sh.lists[S(st)][k];
    int walked = 0;
    for (ArcHeader* h = list.tail; h && walked < 256; h = h->prev, walked++) {
      if (refused_only && h->stamp != kNotAdmitted) break;
      if (h->refs.load(std::memory_order_acquire) != 0) {
        sh.ctr.evict_skip++;
        continue;
      }
      const uint64_t n = h->size;
      list.Remove(h);
      SubBytes(st, h->kind, n);
      if (IsGhost(st)) {
        sh.table.erase(h->key);
        headers.fetch_sub(1, std::memory_order_relaxed);
        sh.ctr.deleted++;
        dead->push_back(h);
        return n;
      }
      (st == ArcState::kMru ? sh.ctr.evicted_mru : sh.ctr.evicted_mfu) += n;
      UZFS_PROBE(arc_evict, n);
      DropPlain(sh, h);
      cached_lsize.fetch_sub(h->lsize, std::memory_order_relaxed);
      if (ArcL2Hook* l2 = arc->l2()) {
        const ArcL2View v{h->key, h->kind, h->prefetch, h->l2_allowed, h->compression, h->lsize, h->data};
        l2->Evicted(v, h->data);
      }
      AlignedBytes().swap(h->data);
      h->state = st == ArcState::kMru ? ArcState::kMruGhost : ArcState::kMfuGhost;
      h->prefetch = false;
      h->stamp = NowNs();
      sh.lists[S(h->state)][k].PushHead(h);
      AddBytes(h->state, h->kind, n);
      return n;
    }
    return 0;
  }

  // Evicts up to `want` bytes from the given states (kinds: mask bit 0 data,
  // bit 1 metadata), always the oldest tail across shards first.
  // refused_only: only buffers the admission rule refused (kNotAdmitted).
  uint64_t Evict(std::initializer_list<ArcState> states, unsigned kinds, uint64_t want, bool refused_only = false)
      UZFS_REQUIRES(evict_mu) {
    uint64_t done = 0;
    std::vector<uint8_t> stuck(static_cast<size_t>(nshards) * kArcStates * kArcKinds, 0);
    std::vector<ArcHeader*> dead;
    while (done < want) {
      // The list with the oldest tail, and the next oldest tail elsewhere:
      // the chosen list may give up headers until its tail is newer than
      // that (same order as one global list, fewer scans).
      uint64_t best = kEmptyStamp, second = kEmptyStamp;
      unsigned bs = 0;
      ArcState bst = ArcState::kMru;
      int bk = 0;
      for (unsigned i = 0; i < nshards; i++) {
        for (ArcState st : states) {
          for (int k = 0; k < kArcKinds; k++) {
            if (!(kinds & (1u << k))) continue;
            if (stuck[(i * kArcStates + S(st)) * kArcKinds + k]) continue;
            const uint64_t t = shards[i].lists[S(st)][k].tail_stamp.load(std::memory_order_relaxed);
            if (refused_only && t != kNotAdmitted) continue;
            if (t < best) {
              second = best;
              best = t;
              bs = i;
              bst = st;
              bk = k;
            } else if (t < second) {
              second = t;
            }
          }
        }
      }
      if (best == kEmptyStamp) break;
      ArcShard& sh = shards[bs];
      bool progress = false;
      {
        MutexLock l(&sh.mu);
        ArcList& list = sh.lists[S(bst)][bk];
        do {
          const uint64_t n = EvictOne(sh, bst, bk, refused_only, &dead);
          if (n == 0) break;
          progress = true;
          done += n;
        } while (done < want && list.tail && list.tail->stamp <= second);
      }
      if (!progress) stuck[(bs * kArcStates + S(bst)) * kArcKinds + bk] = 1;
    }
    for (ArcHeader* h : dead) delete h;
    return done;
  }

  void EvictLocked() UZFS_REQUIRES(evict_mu) {
    const uint64_t c = arc->c_.load(std::memory_order_relaxed);
    const uint64_t ml = meta_limit.load(std::memory_order_relaxed);
    uint64_t meta = MetaUsed();
    if (meta > ml) Evict({ArcState::kMru, ArcState::kMfu}, 2u, meta - ml);
    uint64_t size = Size();
    // Buffers the admission rule refused go first: they are the victims.
    if (size > c) Evict({ArcState::kMru, ArcState::kMfu}, 3u, size - c, true);
    size = Size();
    if (size > c) {
      const uint64_t mru = Bytes(ArcState::kMru);
      const uint64_t p = arc->p_.load(std::memory_order_relaxed);
      const uint64_t target = std::min(size - c, mru > p ? mru - p : 0);
      if (target) Evict({ArcState::kMru}, 3u, target);
      size = Size();
      if (size > c) Evict({ArcState::kMfu}, 3u, size - c);
      size = Size();
      if (size > c) Evict({ArcState::kMru}, 3u, size - c);
      size = Size();
      if (size > c) DropAllPlain(size - c);
    }
    // Ghosts: mru + mru_ghost <= c, and everything <= 2c.
    const uint64_t mru = Bytes(ArcState::kMru), mrug = Bytes(ArcState::kMruGhost);
    if (mru + mrug > c) Evict({ArcState::kMruGhost}, 3u, mru + mrug - c);
    const uint64_t all = Bytes(ArcState::kMru) + Bytes(ArcState::kMruGhost) + Bytes(ArcState::kMfu) +
                         Bytes(ArcState::kMfuGhost);
    if (all > 2 * c) Evict({ArcState::kMfuGhost}, 3u, all - 2 * c);
  }

  void DropAllPlain(uint64_t want) {
    uint64_t done = 0;
    for (unsigned i = 0; i < nshards && done < want; i++) {
      ArcShard& sh = shards[i];
      MutexLock l(&sh.mu);
      while (sh.dtail && done < want) {
        done += sh.dtail->lsize;
        DropPlain(sh, sh.dtail);
      }
    }
  }

  // Removes h from the table and its list (REQUIRES sh.mu); returns true
  // when the caller must delete it (no references left).
  bool Unlink(ArcShard& sh, ArcHeader* h) UZFS_REQUIRES(sh.mu) {
    sh.lists[S(h->state)][K(h->kind)].Remove(h);
    SubBytes(h->state, h->kind, h->size);
    if (!IsGhost(h->state)) cached_lsize.fetch_sub(h->lsize, std::memory_order_relaxed);
    DropPlain(sh, h);
    sh.table.erase(h->key);
    headers.fetch_sub(1, std::memory_order_relaxed);
    sh.ctr.deleted++;
    h->state = ArcState::kNone;
    const uint32_t old = h->refs.fetch_or(kOrphan, std::memory_order_acq_rel);
    return (old & ~kOrphan) == 0;
  }
};

// ---------------------------------------------------------------------------

ArcRef& ArcRef::operator=(ArcRef&& o) noexcept {
  if (this != &o) {
    Release();
    arc_ = o.arc_;
    hdr_ = o.hdr_;
    o.arc_ = nullptr;
    o.hdr_ = nullptr;
  }
  return *this;
}

void ArcRef::Release() {
  if (!hdr_) return;
  const uint32_t old = hdr_->refs.fetch_sub(1, std::memory_order_acq_rel);
  if (old == (kOrphan | 1)) delete hdr_;
  hdr_ = nullptr;
  arc_ = nullptr;
}

std::span<const uint8_t> ArcRef::phys() const { return hdr_->data; }
CompressType ArcRef::compression() const { return hdr_->compression; }
uint64_t ArcRef::lsize() const { return hdr_->lsize; }
ArcBufKind ArcRef::kind() const { return hdr_->kind; }
const ArcKey& ArcRef::key() const { return hdr_->key; }

Result<ArcRef::Plain> ArcRef::GetPlain() const {
  ArcHeader* h = hdr_;
  if (h->compression == CompressType::kOff && h->lsize == h->data.size()) {
    return Plain{nullptr, std::span<const uint8_t>(h->data)};
  }
  Arc::Impl& im = *arc_->impl_;
  ArcShard& sh = im.shards[h->shard];
  {
    MutexLock l(&sh.mu);
    if (h->plain) {
      std::shared_ptr<const std::vector<uint8_t>> p = h->plain;
      return Plain{p, std::span<const uint8_t>(*p)};
    }
  }
  auto buf = std::make_shared<std::vector<uint8_t>>(h->lsize);
  UZFS_RETURN_IF_ERROR(Decompress(h->compression, h->data, *buf));
  std::shared_ptr<const std::vector<uint8_t>> p = std::move(buf);
  {
    MutexLock l(&sh.mu);
    if (h->plain) {
      p = h->plain;
    } else if (h->state == ArcState::kMfu) {
      im.KeepPlain(sh, h, p);
    }
  }
  return Plain{p, std::span<const uint8_t>(*p)};
}

// ---------------------------------------------------------------------------

Arc::Arc(const ArcOptions& opts) : impl_(std::make_unique<Impl>(this, opts)) {
  const uint64_t cmax = opts.c_max ? opts.c_max : PhysicalMemoryBytes() / 2;
  uint64_t cmin = opts.c_min ? opts.c_min : std::max<uint64_t>(cmax / 32, 16ull << 20);
  cmin = std::min(cmin, cmax);
  c_max_.store(cmax);
  c_min_.store(cmin);
  c_.store(cmax);
  p_.store(cmax / 2);
  impl_->meta_limit.store(opts.meta_limit ? opts.meta_limit : cmax / 4 * 3);
  impl_->dbuf_max.store(opts.dbuf_max ? opts.dbuf_max : cmax / 16);
  impl_->SizeSketches(cmax);
}

Arc::~Arc() {
  for (unsigned i = 0; i < impl_->nshards; i++) {
    ArcShard& sh = impl_->shards[i];
    MutexLock l(&sh.mu);
    for (auto& kv : sh.table) delete kv.second;
    sh.table.clear();
  }
}

ArcRef Arc::Lookup(const ArcKey& key, const ArcReadFlags& flags) {
  const uint64_t hash = key.Hash();
  ArcShard& sh = impl_->ShardOf(hash);
  MutexLock l(&sh.mu);
  auto it = sh.table.find(key);
  if (it == sh.table.end() || IsGhost(it->second->state)) {
    Impl::CountMiss(sh, hash, flags);
    return {};
  }
  ArcHeader* h = it->second;
  h->refs.fetch_add(1, std::memory_order_acq_rel);
  impl_->Access(sh, h, flags, NowNs());
  return ArcRef(this, h);
}

ArcRef Arc::Insert(const ArcKey& key, ArcBlock block, const ArcReadFlags& flags) {
  Impl& im = *impl_;
  const uint64_t hash = key.Hash();
  const uint64_t n = block.phys.size();
  const uint64_t lsize = block.lsize ? block.lsize : n;
  const bool allowed = flags.policy == CachePolicy::kAll ||
                       (flags.policy == CachePolicy::kMetadata && flags.kind == ArcBufKind::kMetadata);
  ArcShard& sh = im.ShardOf(hash);
  if (!allowed) {
    ArcRef r = Uncached(std::move(block), flags.kind);
    r.hdr_->key = key;
    MutexLock l(&sh.mu);
    sh.ctr.uncached++;
    return r;
  }
  ArcHeader* h;
  ArcState ghost = ArcState::kNone;
  {
    MutexLock l(&sh.mu);
    const uint64_t now = NowNs();
    auto it = sh.table.find(key);
    if (it != sh.table.end() && !IsGhost(it->second->state)) {
      h = it->second;  // another reader cached it first
      h->refs.fetch_add(1, std::memory_order_acq_rel);
      return ArcRef(this, h);
    }
    if (it != sh.table.end()) {
      h = it->second;
      ghost = h->state;
      sh.lists[S(ghost)][K(h->kind)].Remove(h);
      im.SubBytes(ghost, h->kind, h->size);
      (ghost == ArcState::kMruGhost ? sh.ctr.mru_ghost_hits : sh.ctr.mfu_ghost_hits)++;
    } else {
      h = new ArcHeader;
      h->key = key;
      h->hash = hash;
      h->shard = im.ShardIndex(hash);
      sh.table.emplace(key, h);
      im.headers.fetch_add(1, std::memory_order_relaxed);
    }
    h->kind = flags.kind;
    h->compression = block.compression;
    h->size = n;
    h->lsize = lsize;
    h->data = std::move(block.phys);
    h->prefetch = flags.prefetch;
    h->l2_allowed = flags.secondary == CachePolicy::kAll ||
                    (flags.secondary == CachePolicy::kMetadata && flags.kind == ArcBufKind::kMetadata);
    h->refs.fetch_add(1, std::memory_order_acq_rel);
    // A miss goes to the MRU, a ghost hit to the MFU (a prefetch to the MRU).
    h->state = (ghost == ArcState::kNone || flags.prefetch) ? ArcState::kMru : ArcState::kMfu;
    ArcList& list = sh.lists[S(h->state)][K(h->kind)];
    if (!flags.prefetch && im.opts.mfu_admission && im.Size() + n > c_.load(std::memory_order_relaxed) &&
        !im.Admit(sh, h)) {
      h->stamp = kNotAdmitted;
      list.PushTail(h);
    } else {
      h->stamp = now;
      list.PushHead(h);
    }
    im.AddBytes(h->state, h->kind, n);
    im.cached_lsize.fetch_add(lsize, std::memory_order_relaxed);
  }
  if (ghost != ArcState::kNone) im.Adapt(ghost, n);
  im.Grow(n);
  if (im.Size() > c_.load(std::memory_order_relaxed) ||
      im.MetaUsed() > im.meta_limit.load(std::memory_order_relaxed)) {
    EvictToTarget();
  }
  return ArcRef(this, h);
}

Result<ArcRef> Arc::Read(const ArcKey& key, const ArcReadFlags& flags, const Fill& fill) {
  Impl& im = *impl_;
  const uint64_t hash = key.Hash();
  ArcShard& sh = im.ShardOf(hash);
  std::shared_ptr<ArcInFlight> fl;
  bool leader = false;
  {
    MutexLock l(&sh.mu);
    auto it = sh.table.find(key);
    if (it != sh.table.end() && !IsGhost(it->second->state)) {
      ArcHeader* h = it->second;
      h->refs.fetch_add(1, std::memory_order_acq_rel);
      im.Access(sh, h, flags, NowNs());
      return ArcRef(this, h);
    }
    Impl::CountMiss(sh, hash, flags);
    auto fit = sh.inflight.find(key);
    if (fit != sh.inflight.end()) {
      fl = fit->second;
    } else {
      fl = std::make_shared<ArcInFlight>();
      sh.inflight.emplace(key, fl);
      leader = true;
    }
  }
  if (!leader) {
    {
      MutexLock l(&fl->mu);
      while (!fl->done) fl->cv.Wait(&fl->mu);
      if (!fl->status.ok()) return fl->status;
    }
    {
      MutexLock l(&sh.mu);
      auto it = sh.table.find(key);
      if (it != sh.table.end() && !IsGhost(it->second->state)) {
        ArcHeader* h = it->second;
        h->refs.fetch_add(1, std::memory_order_acq_rel);
        return ArcRef(this, h);
      }
    }
    // Not cached after all (primarycache, or evicted already): read it ourselves.
    UZFS_ASSIGN_OR_RETURN(ArcBlock b, fill());
    return Insert(key, std::move(b), flags);
  }
  // A miss may be an L2ARC hit; anything else (not there, failed) reads the pool.
  Result<ArcBlock> b = [&]() -> Result<ArcBlock> {
    if (ArcL2Hook* l2 = this->l2(); l2 != nullptr && flags.bp != nullptr) {
      Result<ArcBlock> r = l2->ReadL2(key, *flags.bp);
      if (r.ok()) return r;
    }
    return fill();
  }();
  Status st = b.status();
  ArcRef ref;
  if (b.ok()) ref = Insert(key, std::move(b).value(), flags);
  {
    MutexLock l(&sh.mu);
    sh.inflight.erase(key);
  }
  {
    MutexLock l(&fl->mu);
    fl->done = true;
    fl->status = st;
  }
  fl->cv.SignalAll();
  if (!st.ok()) return st;
  return ref;
}

void Arc::ReadMany(std::span<const ArcKey> keys, std::span<const ArcReadFlags> flags,
                   const FillMany& fill_many) {
  Impl& im = *impl_;
  std::vector<size_t> lead;                       // indices this call reads
  std::vector<std::shared_ptr<ArcInFlight>> fls;  // their in-flight records
  for (size_t i = 0; i < keys.size(); i++) {
    const uint64_t hash = keys[i].Hash();
    ArcShard& sh = im.ShardOf(hash);
    ArcRef hit;
    {
      MutexLock l(&sh.mu);
      auto it = sh.table.find(keys[i]);
      if (it != sh.table.end() && !IsGhost(it->second->state)) {
        ArcHeader* h = it->second;
        h->refs.fetch_add(1, std::memory_order_acq_rel);
        im.Access(sh, h, flags[i], NowNs());
        hit = ArcRef(this, h);  // released below, outside the shard lock
      } else {
        Impl::CountMiss(sh, hash, flags[i]);
        if (sh.inflight.find(keys[i]) == sh.inflight.end()) {
          auto fl = std::make_shared<ArcInFlight>();
          sh.inflight.emplace(keys[i], fl);
          lead.push_back(i);
          fls.push_back(std::move(fl));
        }
      }
    }
  }
  if (lead.empty()) return;
  std::vector<Result<ArcBlock>> got(lead.size(), Status::IoError("not read"));
  std::vector<size_t> rest, rest_pos;  // not served by the L2ARC: indices, positions in lead
  ArcL2Hook* l2 = this->l2();
  for (size_t k = 0; k < lead.size(); k++) {
    const size_t i = lead[k];
    if (l2 != nullptr && flags[i].bp != nullptr) {
      Result<ArcBlock> r = l2->ReadL2(keys[i], *flags[i].bp);
      if (r.ok()) {
        got[k] = std::move(r);
        continue;
      }
    }
    rest.push_back(i);
    rest_pos.push_back(k);
  }
  if (!rest.empty()) {
    std::vector<Result<ArcBlock>> filled = fill_many(rest);
    for (size_t j = 0; j < rest.size(); j++) {
      got[rest_pos[j]] = j < filled.size() ? std::move(filled[j]) : Status::IoError("fill_many returned too few blocks");
    }
  }
  for (size_t k = 0; k < lead.size(); k++) {
    const size_t i = lead[k];
    Status st = got[k].status();
    if (got[k].ok()) {
      ArcRef ref = Insert(keys[i], std::move(got[k]).value(), flags[i]);
    }
    ArcShard& sh = im.ShardOf(keys[i].Hash());
    {
      MutexLock l(&sh.mu);
      sh.inflight.erase(keys[i]);
    }
    ArcInFlight& fl = *fls[k];
    {
      MutexLock l(&fl.mu);
      fl.done = true;
      fl.status = st;
    }
    fl.cv.SignalAll();
  }
}

bool Arc::Filling(const ArcKey& key) const {
  ArcShard& sh = impl_->ShardOf(key.Hash());
  MutexLock l(&sh.mu);
  return sh.inflight.find(key) != sh.inflight.end();
}

ArcRef Arc::Uncached(ArcBlock block, ArcBufKind kind) {
  auto* h = new ArcHeader;
  h->kind = kind;
  h->compression = block.compression;
  h->size = block.phys.size();
  h->lsize = block.lsize ? block.lsize : block.phys.size();
  h->data = std::move(block.phys);
  h->refs.store(kOrphan | 1);
  return ArcRef(this, h);
}

void Arc::Forget(const ArcKey& key) {
  ArcShard& sh = impl_->ShardOf(key.Hash());
  ArcHeader* dead = nullptr;
  {
    MutexLock l(&sh.mu);
    auto it = sh.table.find(key);
    if (it == sh.table.end()) return;
    ArcHeader* h = it->second;
    if (impl_->Unlink(sh, h)) dead = h;
  }
  delete dead;
}

void Arc::ForgetPool(uint64_t pool_guid) {
  for (unsigned i = 0; i < impl_->nshards; i++) {
    ArcShard& sh = impl_->shards[i];
    std::vector<ArcHeader*> dead;
    {
      MutexLock l(&sh.mu);
      std::vector<ArcHeader*> victims;
      for (auto& kv : sh.table) {
        if (kv.first.pool_guid == pool_guid) victims.push_back(kv.second);
      }
      for (ArcHeader* h : victims) {
        if (impl_->Unlink(sh, h)) dead.push_back(h);
      }
    }
    for (ArcHeader* h : dead) delete h;
  }
}

void Arc::SetLimits(uint64_t c_min, uint64_t c_max) {
  {
    MutexLock l(&impl_->adapt_mu);
    c_min = std::min(c_min, c_max);
    c_max_.store(c_max);
    c_min_.store(c_min);
    const uint64_t c = std::clamp(c_.load(), c_min, c_max);
    c_.store(c);
    p_.store(std::min(p_.load(), c - (c >> impl_->opts.p_min_shift)));
  }
  EvictToTarget();
}

void Arc::SetMetaLimit(uint64_t bytes) {
  impl_->meta_limit.store(bytes);
  EvictToTarget();
}

void Arc::SetDbufMax(uint64_t bytes) {
  impl_->dbuf_max.store(bytes);
  const uint64_t bound = bytes / impl_->nshards;
  for (unsigned i = 0; i < impl_->nshards; i++) {
    ArcShard& sh = impl_->shards[i];
    MutexLock l(&sh.mu);
    while (sh.dtail && sh.dbytes > bound) impl_->DropPlain(sh, sh.dtail);
  }
}

uint64_t Arc::ReduceTarget(uint64_t bytes) {
  uint64_t c;
  {
    MutexLock l(&impl_->adapt_mu);
    const uint64_t cmin = c_min_.load();
    c = c_.load();
    c = c > cmin + bytes ? c - bytes : cmin;
    c_.store(c);
    p_.store(std::min(p_.load(), c - (c >> impl_->opts.p_min_shift)));
  }
  impl_->no_grow.store(true);
  EvictToTarget();
  return c;
}

void Arc::SetNoGrow(bool no_grow) { impl_->no_grow.store(no_grow); }
void Arc::CountMemoryThrottle() { impl_->throttles.fetch_add(1, std::memory_order_relaxed); }

uint64_t Arc::Size() const { return impl_->Size(); }

void Arc::EvictToTarget() {
  MutexLock l(&impl_->evict_mu);
  impl_->EvictLocked();
}

std::string Arc::StateOf(const ArcKey& key) const {
  ArcShard& sh = impl_->ShardOf(key.Hash());
  MutexLock l(&sh.mu);
  auto it = sh.table.find(key);
  if (it == sh.table.end()) return "";
  switch (it->second->state) {
    case ArcState::kMru: return "mru";
    case ArcState::kMfu: return "mfu";
    case ArcState::kMruGhost: return "mru_ghost";
    case ArcState::kMfuGhost: return "mfu_ghost";
    case ArcState::kNone: break;
  }
  return "";
}

ArcStats Arc::Stats() const {
  const Impl& im = *impl_;
  ArcStats s;
  for (unsigned i = 0; i < im.nshards; i++) {
    ArcShard& sh = im.shards[i];
    MutexLock l(&sh.mu);
    const ArcCounters c = sh.ctr;
    s.hits += c.hits;
    s.misses += c.misses;
    s.demand_data_hits += c.demand_data_hits;
    s.demand_data_misses += c.demand_data_misses;
    s.demand_metadata_hits += c.demand_metadata_hits;
    s.demand_metadata_misses += c.demand_metadata_misses;
    s.prefetch_data_hits += c.prefetch_data_hits;
    s.prefetch_data_misses += c.prefetch_data_misses;
    s.prefetch_metadata_hits += c.prefetch_metadata_hits;
    s.prefetch_metadata_misses += c.prefetch_metadata_misses;
    s.demand_hit_predictive_prefetch += c.demand_hit_predictive_prefetch;
    s.mru_hits += c.mru_hits;
    s.mfu_hits += c.mfu_hits;
    s.mru_ghost_hits += c.mru_ghost_hits;
    s.mfu_ghost_hits += c.mfu_ghost_hits;
    s.deleted += c.deleted;
    s.evict_skip += c.evict_skip;
    s.evicted_mru += c.evicted_mru;
    s.evicted_mfu += c.evicted_mfu;
    s.uncached += c.uncached;
  }
  auto b = [&](ArcState st, int k) { return im.bytes[S(st)][k].load(std::memory_order_relaxed); };
  s.mru_data = b(ArcState::kMru, 0);
  s.mru_metadata = b(ArcState::kMru, 1);
  s.mfu_data = b(ArcState::kMfu, 0);
  s.mfu_metadata = b(ArcState::kMfu, 1);
  s.mru_size = s.mru_data + s.mru_metadata;
  s.mfu_size = s.mfu_data + s.mfu_metadata;
  s.mru_ghost_size = im.Bytes(ArcState::kMruGhost);
  s.mfu_ghost_size = im.Bytes(ArcState::kMfuGhost);
  s.data_size = s.mru_data + s.mfu_data;
  s.metadata_size = s.mru_metadata + s.mfu_metadata;
  s.overhead_size = im.dbuf_bytes.load(std::memory_order_relaxed);
  s.compressed_size = s.mru_size + s.mfu_size;
  s.uncompressed_size = im.cached_lsize.load(std::memory_order_relaxed);
  s.size = s.compressed_size + s.overhead_size;
  s.c = c_.load();
  s.p = p_.load();
  s.c_min = c_min_.load();
  s.c_max = c_max_.load();
  s.arc_meta_used = s.metadata_size;
  s.arc_meta_limit = im.meta_limit.load();
  s.hash_elements = im.headers.load();
  // A header plus its hash-table node (key, pointer, cached hash, next).
  s.hdr_size = s.hash_elements * (sizeof(ArcHeader) + sizeof(ArcKey) + 3 * sizeof(void*));
  s.memory_throttle_count = im.throttles.load();
  s.arc_no_grow = im.no_grow.load() ? 1 : 0;
  if (const ArcL2Hook* l2 = this->l2()) l2->FillStats(&s);
  return s;
}

unsigned Arc::ShardCount() const { return impl_->nshards; }

void Arc::ScanEvictionEnd(bool mfu, ArcBufKind kind, uint64_t bytes_per_shard,
                          const std::function<bool(const ArcL2View&)>& visit) const {
  const ArcState st = mfu ? ArcState::kMfu : ArcState::kMru;
  for (unsigned i = 0; i < impl_->nshards; i++) {
    ArcShard& sh = impl_->shards[i];
    MutexLock l(&sh.mu);
    uint64_t seen = 0;
    for (ArcHeader* h = sh.lists[S(st)][K(kind)].tail; h && seen < bytes_per_shard; h = h->prev) {
      seen += h->size;
      const ArcL2View v{h->key, h->kind, h->prefetch, h->l2_allowed, h->compression, h->lsize, h->data};
      if (!visit(v)) return;
    }
  }
}

}  // namespace uzfs
