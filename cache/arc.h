// The ARC: the adaptive replacement cache of blocks in DRAM, shared by every
// pool of the daemon (DESIGN.md sections 5 and 7).
//
// Where it sits: between the DMU and the ZIO pipeline. The DMU asks the ARC
// for a block by its block pointer; a hit returns the cached bytes, a miss
// runs the caller's fill (a ZIO read, see arc_zio.h) once, however many
// threads asked at the same time, and caches the result.
//
// Key: (pool guid, DVA[0] vdev, DVA[0] offset, physical birth txg), as
// ZFS's arc hash (spa, dva, birth): a block's bytes never change while its
// pointer is live, and a freed-then-reallocated address has a new birth.
// Holes and embedded pointers carry their data in the pointer and are never
// cached (ArcKey::FromBlockPtr refuses them).
//
// Policy (ZFS's ARC): four lists, MRU (seen once recently), MFU (seen at
// least twice), and their ghosts (keys and sizes of buffers evicted from
// them, no data). A miss goes to the MRU head; a hit in the MRU promotes to
// the MFU (a first demand hit on a prefetched buffer only clears its
// prefetch flag); an MFU hit moves it to the MFU head. A miss that finds a
// ghost is a ghost hit: it adapts the target MRU size p — an MRU-ghost hit
// grows p by the block's size times max(1, mfu_ghost/mru_ghost) (at most
// 10x), an MFU-ghost hit shrinks it by the mirror rule — and the block
// comes back into the MFU. Eviction keeps size <= c: metadata above
// arc_meta_limit first, then the MRU down to p, then the MFU, oldest first;
// then the ghosts are trimmed (mru + mru_ghost <= c, all four <= 2c).
// Evicted MRU/MFU buffers become ghosts; evicted ghosts are forgotten.
//
// One addition to ZFS's rules (ArcOptions::mfu_admission, on by default):
// TinyLFU-style admission. Every shard keeps a small frequency sketch of
// the keys asked for (hits and misses, halved every 10x its size, so old
// popularity fades). When the cache is full, a demand miss (to the MRU) or
// ghost hit (to the MFU) enters at its list's head only if its key was
// asked for more often than the oldest admitted buffer of that list in its
// shard; otherwise it enters at the tail as a refused buffer, and refused
// buffers are evicted before anything else. Prefetches are always admitted.
// Why: ZFS's ARC, like LRU, gets no hits on a loop slightly larger than the
// cache (every buffer is evicted just before its next use, and the ghost
// lists stay empty because the MRU alone fills c); with admission most of
// the loop stays resident. docs/PERFORMANCE.md "ARC policy (hit ratios)" has
// the numbers with and without it.
//
// Buffers are kept as stored on disk (psize bytes, compressed, with their
// compression type and lsize). ArcRef::Plain() decompresses; decompressed
// copies of MFU buffers are kept in a small bounded cache (arc_dbuf_max,
// counted in `size` as overhead) so hot blocks are decompressed once.
//
// Memory: c (the target) is between c_min and c_max; the reaper
// (arc_reaper.h) lowers c under memory pressure and the ARC evicts down to
// it; c grows back by the size of each insert while the cache is full and
// the reaper reports no pressure.
//
// References: Lookup/Insert/Read return an ArcRef, a move-only handle. A
// referenced buffer is never evicted (eviction skips it, counted in
// evict_skip); the cache may then exceed c until it is released. Every
// ArcRef must be destroyed before the Arc.
//
// primarycache: each read says what may be cached (all, metadata, none).
// A block that may not be cached is still read and returned (counted as a
// miss), held only by its ArcRef.
//
// Concurrency: the hash table is split into shards (a power of two), each
// with its own mutex guarding its part of the table, its part of every
// list and its counters. A hit takes one shard mutex, nothing else. Sizes
// are atomics updated when buffers change lists (not on MFU hits).
// Eviction is done by the thread whose insert pushed size over c, one
// evictor at a time (evict_mu_); it picks the oldest buffer across shards
// by per-list tail stamps (atomics), so the order is exact LRU per list
// without a global list lock. Lock order: evict_mu_, then one shard mu.
//
// Where it is used: the DMU reads blocks through a BlockReader
// (zfs/zio/block_reader.h); the pool gives its datasets an ArcBlockReader
// (arc_block_reader.h), which calls ArcReadBlock (arc_zio.h) with the pool
// guid, the kind from the block pointer (level > 0 or a metadata object
// type -> kMetadata) and the dataset's primarycache; a miss reads the
// physical bytes (Zio::ReadPhysical), so buffers are as on disk. Blocks an
// object set's sync frees are forgotten (Arc::Forget) — the birth in the
// key alone already keeps a reused address from hitting; the reader's
// destructor (pool export) calls Arc::ForgetPool. The MOS is not cached (its sync passes
// rewrite blocks in place under the same DVA and birth). The L2ARC takes
// buffers from the eviction path (the feed thread reads the MRU/MFU tails
// through ScanEvictionEnd; a miss in Read with flags.bp asks the L2 hook).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "zfs/spa/block_ptr.h"
#include "zfs/util/aligned_bytes.h"
#include "zfs/util/compress/compress.h"
#include "zfs/util/status.h"

namespace uzfs {

struct ArcKey {
  uint64_t pool_guid = 0;
  uint64_t vdev = 0;
  uint64_t offset = 0;
  uint64_t birth = 0;

  // The key of the block `bp` names in pool `pool_guid`; NotSupported for
  // holes and embedded pointers (nothing to cache).
  static Result<ArcKey> FromBlockPtr(uint64_t pool_guid, const BlockPtr& bp);
  uint64_t Hash() const;
  friend bool operator==(const ArcKey&, const ArcKey&) = default;
};

enum class ArcBufKind : uint8_t { kData = 0, kMetadata = 1 };

// The primarycache property: what the ARC may keep.
enum class CachePolicy : uint8_t { kAll, kMetadata, kNone };

struct ArcReadFlags {
  ArcBufKind kind = ArcBufKind::kData;
  CachePolicy policy = CachePolicy::kAll;
  bool prefetch = false;  // a read-ahead, not a demand read
  // The secondarycache property: what the L2ARC may copy to cache devices.
  CachePolicy secondary = CachePolicy::kAll;
  // The block's pointer, when the caller has it: lets a miss in Read try
  // the L2ARC, which verifies the cache device's bytes against its checksum.
  const BlockPtr* bp = nullptr;
};

// A block as stored: what a fill returns and Insert takes.
struct ArcBlock {
  AlignedBytes phys;                           // psize bytes (aligned: disks read into it)
  CompressType compression = CompressType::kOff;
  uint64_t lsize = 0;                          // logical size (phys.size() when kOff)
};

struct ArcOptions {
  uint64_t c_max = 0;             // 0: half of physical RAM
  uint64_t c_min = 0;             // 0: max(c_max / 32, 16 MiB), at most c_max
  uint64_t meta_limit = 0;        // 0: 75% of c_max (arc_meta_limit_percent)
  uint64_t dbuf_max = 0;          // decompressed copies; 0: c_max / 16
  unsigned shards = 64;           // rounded up to a power of two
  bool mfu_admission = true;      // see the top of this file
  uint64_t min_promote_ns = 0;    // MRU hits sooner than this after the last
                                  // access stay in the MRU (ZFS: 62 ms)
  unsigned p_min_shift = 4;       // p stays within [c >> shift, c - (c >> shift)]
};

// arcstats: the counters and sizes ZFS users know.
struct ArcStats {
  uint64_t hits = 0, misses = 0;
  uint64_t demand_data_hits = 0, demand_data_misses = 0;
  uint64_t demand_metadata_hits = 0, demand_metadata_misses = 0;
  uint64_t prefetch_data_hits = 0, prefetch_data_misses = 0;
  uint64_t prefetch_metadata_hits = 0, prefetch_metadata_misses = 0;
  uint64_t demand_hit_predictive_prefetch = 0;
  uint64_t mru_hits = 0, mfu_hits = 0, mru_ghost_hits = 0, mfu_ghost_hits = 0;
  uint64_t deleted = 0;          // headers forgotten (ghosts evicted, Forget)
  uint64_t evict_skip = 0;       // referenced buffers passed over by eviction
  uint64_t evicted_mru = 0, evicted_mfu = 0;  // bytes evicted (evict_l2_ineligible-style split)
  uint64_t hash_elements = 0;    // headers (cached + ghosts)
  uint64_t hdr_size = 0;         // their memory (not part of `size` yet)
  uint64_t size = 0, c = 0, p = 0, c_min = 0, c_max = 0;
  uint64_t data_size = 0, metadata_size = 0, overhead_size = 0;  // overhead: decompressed copies
  uint64_t compressed_size = 0, uncompressed_size = 0;           // of cached buffers
  uint64_t mru_size = 0, mfu_size = 0, mru_ghost_size = 0, mfu_ghost_size = 0;
  uint64_t mru_data = 0, mru_metadata = 0, mfu_data = 0, mfu_metadata = 0;
  uint64_t arc_meta_used = 0, arc_meta_limit = 0;
  uint64_t memory_throttle_count = 0;  // reaper shrinks
  uint64_t arc_no_grow = 0;
  uint64_t l2_hits = 0, l2_misses = 0, l2_size = 0, l2_asize = 0;  // L2ARC (cache/l2arc.h)
  uint64_t l2_feeds = 0, l2_read_bytes = 0, l2_write_bytes = 0;
  uint64_t l2_writes_sent = 0, l2_writes_done = 0, l2_writes_error = 0;
  uint64_t l2_evict_reading = 0, l2_evicted = 0;  // l2_evicted: headers dropped by the hand
  uint64_t l2_cksum_bad = 0, l2_io_error = 0, l2_hdr_size = 0;
  uint64_t l2_log_blk_writes = 0, l2_log_blk_asize = 0, l2_log_blk_count = 0;
  uint64_t l2_rebuild_success = 0, l2_rebuild_io_errors = 0, l2_rebuild_dh_errors = 0;
  uint64_t l2_rebuild_cksum_lb_errors = 0, l2_rebuild_size = 0, l2_rebuild_asize = 0;
  uint64_t l2_rebuild_bufs = 0, l2_rebuild_log_blks = 0;
  uint64_t uncached = 0;         // reads returned without caching (primarycache)

  double HitRatio() const { return hits + misses ? static_cast<double>(hits) / (hits + misses) : 0; }
};

// The text of /proc/spl/kstat/zfs/arcstats: a kstat header line, then
// "name type data" and one "name  4  value" line per counter (type 4 =
// uint64), in ZFS's order.
std::string RenderArcStats(const ArcStats& s);

class Arc;
struct ArcHeader;

// A cached buffer as the L2ARC feed sees it (Arc::ScanEvictionEnd).
struct ArcL2View {
  const ArcKey& key;
  ArcBufKind kind;
  bool prefetch;          // read ahead and not yet used
  bool l2_allowed;        // secondarycache allows it
  CompressType compression;
  uint64_t lsize;
  std::span<const uint8_t> data;  // as stored
};

// The L2ARC as the ARC sees it (cache/l2arc.h implements it; Arc::SetL2).
class ArcL2Hook {
 public:
  virtual ~ArcL2Hook() = default;
  // A miss in Arc::Read of a block whose pointer the caller gave: the block
  // from a cache device, its bytes verified. NotFound when no cache device
  // holds it; any other error when one failed (the hook counts it). Either
  // way the ARC then runs the caller's fill. Called without ARC locks.
  virtual Result<ArcBlock> ReadL2(const ArcKey& key, const BlockPtr& bp) = 0;
  // Adds the l2_* fields.
  virtual void FillStats(ArcStats* s) const = 0;
  // A buffer the ARC is evicting (to a ghost), under its shard lock: the
  // hook may take its bytes (swap `data` out) to write them to a cache
  // device; it must be quick and must not call into the Arc. Without it a
  // buffer refused by the admission rule, evicted by the next insert,
  // would never be seen by the feed's list walk.
  virtual void Evicted(const ArcL2View& v, AlignedBytes& data) {}
};


// A reference to a cached (or uncached, private) buffer. Move-only; the
// buffer stays valid and unevictable until the ArcRef is destroyed.
class ArcRef {
 public:
  ArcRef() = default;
  ArcRef(ArcRef&& o) noexcept : arc_(o.arc_), hdr_(o.hdr_) { o.arc_ = nullptr; o.hdr_ = nullptr; }
  ArcRef& operator=(ArcRef&& o) noexcept;
  ArcRef(const ArcRef&) = delete;
  ArcRef& operator=(const ArcRef&) = delete;
  ~ArcRef() { Release(); }

  explicit operator bool() const { return hdr_ != nullptr; }
  // REQUIRES for the accessors: *this holds a buffer.
  std::span<const uint8_t> phys() const;   // the stored (compressed) bytes
  CompressType compression() const;
  uint64_t lsize() const;
  ArcBufKind kind() const;
  const ArcKey& key() const;
  // The logical bytes (lsize). For an uncompressed buffer, a view of phys()
  // (valid while this ArcRef lives); otherwise a decompressed copy, shared
  // and kept for hot (MFU) buffers. Corruption if the stored bytes do not
  // decompress (they were verified when read, so only a bug does this).
  struct Plain {
    std::shared_ptr<const std::vector<uint8_t>> owned;  // null when viewing phys()
    std::span<const uint8_t> bytes;
  };
  Result<Plain> GetPlain() const;
  void Release();

 private:
  friend class Arc;
  ArcRef(Arc* arc, ArcHeader* hdr) : arc_(arc), hdr_(hdr) {}
  Arc* arc_ = nullptr;
  ArcHeader* hdr_ = nullptr;
};

class Arc {
 public:
  explicit Arc(const ArcOptions& opts = {});
  // REQUIRES: no ArcRef alive.
  ~Arc();
  Arc(const Arc&) = delete;
  Arc& operator=(const Arc&) = delete;

  // A hit returns a reference (and counts a hit); a miss returns an empty
  // ArcRef (and counts a miss, also when only a ghost was found).
  ArcRef Lookup(const ArcKey& key, const ArcReadFlags& flags);
  // Caches `block` under `key` after a miss and returns a reference. If the
  // key is already cached (another thread won a race) the cached buffer is
  // returned and `block` dropped. A key found as a ghost is a ghost hit
  // (p adapts). With flags.policy refusing the kind, the block is returned
  // uncached.
  ArcRef Insert(const ArcKey& key, ArcBlock block, const ArcReadFlags& flags);
  // Lookup, and on a miss run `fill` and Insert its block. Concurrent Reads
  // of one missing key run `fill` once; the others wait for its result (an
  // error is returned to all of them and nothing is cached).
  using Fill = std::function<Result<ArcBlock>()>;
  Result<ArcRef> Read(const ArcKey& key, const ArcReadFlags& flags, const Fill& fill);
  // Read for several keys at once, keeping nothing referenced (the
  // read-ahead's form): a cached key counts a hit as Read's would; a key
  // another thread is reading is left to it (a miss, not waited for); every
  // other key is led by this call — the L2ARC is tried first when its
  // flags.bp is set, then one fill_many(indices) reads all the rest together,
  // and each block is inserted (or its error given to the Reads that waited
  // for it, nothing cached). fill_many returns one result per index given.
  // REQUIRES: keys.size() == flags.size().
  using FillMany = std::function<std::vector<Result<ArcBlock>>(std::span<const size_t> which)>;
  void ReadMany(std::span<const ArcKey> keys, std::span<const ArcReadFlags> flags, const FillMany& fill_many);

  // Whether a Read or ReadMany is filling `key` now (a reader of it would
  // wait for that fill rather than read the disks).
  bool Filling(const ArcKey& key) const;

  // A private, uncached buffer in an ArcRef (holes and embedded blocks,
  // which have no key worth caching); counted nowhere.
  ArcRef Uncached(ArcBlock block, ArcBufKind kind);

  // Drops the key's buffer (e.g. its block was freed). A referenced buffer
  // is dropped from the table now and freed when its last ArcRef goes.
  void Forget(const ArcKey& key);
  // Forget for every key of a pool (export).
  void ForgetPool(uint64_t pool_guid);

  // Limits at run time (tunables). c is clamped into the new range and the
  // cache evicts down at once. c_min > c_max is clamped to c_max.
  void SetLimits(uint64_t c_min, uint64_t c_max);
  void SetMetaLimit(uint64_t bytes);
  void SetDbufMax(uint64_t bytes);
  // Memory pressure: lowers c by `bytes` (not below c_min), evicts to it,
  // and stops c from growing until AllowGrowth(). Returns the new c.
  uint64_t ReduceTarget(uint64_t bytes);
  void SetNoGrow(bool no_grow);
  void CountMemoryThrottle();

  ArcStats Stats() const;
  uint64_t Size() const;        // bytes held (buffers + decompressed copies)
  uint64_t Target() const { return c_.load(std::memory_order_relaxed); }
  uint64_t TargetMru() const { return p_.load(std::memory_order_relaxed); }
  uint64_t MinSize() const { return c_min_.load(std::memory_order_relaxed); }
  uint64_t MaxSize() const { return c_max_.load(std::memory_order_relaxed); }

  // The L2ARC: misses of Read with flags.bp try it before the fill, and
  // Stats() includes its counters. nullptr detaches. REQUIRES: no Read in
  // progress while it changes (set it before use, clear it after).
  void SetL2(ArcL2Hook* l2) { l2_.store(l2, std::memory_order_release); }
  ArcL2Hook* l2() const { return l2_.load(std::memory_order_acquire); }
  // The L2ARC feed: walks the cached buffers of the MFU (mfu) or MRU list
  // of `kind` from the eviction end, in every shard up to `bytes_per_shard`
  // bytes, calling visit under that shard's lock (visit must not call into
  // the Arc; it may take its own leaf locks). visit returns false to stop.
  void ScanEvictionEnd(bool mfu, ArcBufKind kind, uint64_t bytes_per_shard,
                       const std::function<bool(const ArcL2View&)>& visit) const;
  unsigned ShardCount() const;

  // For tests: the state a key is in, "mru", "mfu", "mru_ghost",
  // "mfu_ghost" or "" when unknown.
  std::string StateOf(const ArcKey& key) const;
  // Evicts until size <= c (Insert does this itself; for tests and the reaper).
  void EvictToTarget();

 private:
  friend class ArcRef;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<uint64_t> c_{0}, p_{0}, c_min_{0}, c_max_{0};
  std::atomic<ArcL2Hook*> l2_{nullptr};
};

}  // namespace uzfs
