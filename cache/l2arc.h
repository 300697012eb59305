// The L2ARC: the ARC extended onto flash cache devices (DESIGN.md section 7).
//
// What it does: a feed thread, every feed interval (l2arc_feed_secs), picks
// the next cache device (round-robin), walks the ARC's lists from their
// eviction ends (MFU metadata, MRU metadata, MFU data, MRU data; at most
// write budget x l2arc_headroom bytes deep in each) and copies the eligible
// buffers — cached, secondarycache allows them, not read-ahead-only unless
// l2arc_noprefetch=0, of the device's pool, not already on a cache device
// — to the device in one large sequential write at the device's write
// hand, followed by the log blocks that index them (l2arc_log.h). The
// write budget per interval is l2arc_write_max, plus l2arc_write_boost
// while the device has not yet been filled once (warming). The hand goes
// round the device's data area (between the front and back vdev labels,
// after the 4 KiB device header); before writing it evicts the in-memory
// headers of everything in the range it is about to overwrite.
//
// Buffers the ARC evicts before a feed saw them (e.g. refused by its
// admission rule) are handed over at eviction (ArcL2Hook::Evicted: their
// bytes are moved, not copied) and staged, bounded by one write budget;
// the feed writes the staged buffers of the device's pool first, oldest
// first, then walks the lists.
//
// In memory, one L2 header per cached block (key -> device, address, sizes,
// compression, fletcher4 of the stored bytes). An ARC miss with a block
// pointer (Arc::Read with ArcReadFlags::bp) asks ReadL2: a header found is
// read from the cache device and verified — against the block pointer's own
// checksum when the buffer is in the block's stored form (same compression
// and psize), else against the fletcher4 taken when it was written — and
// only verified bytes are returned. Any failure (I/O error, short or
// missing device, checksum mismatch) is counted (l2_io_error,
// l2_cksum_bad, the device's READ/CKSUM counters) and the ARC falls back
// to the pool; a header whose bytes failed their checksum is dropped.
//
// Persistence: each batch's log blocks are chained backwards and the device
// header points at the newest, so AttachDevice on a device that holds this
// pool's index rebuilds the headers (no data is read; an entry whose block
// pointer no longer matches is never returned, as reads verify).
//
// Threading: mu_ guards the headers, the devices and the counters; it is a
// leaf lock except that the feed's ARC walk takes it under an ARC shard
// lock (ARC shard mu -> mu_; nothing under mu_ calls into the Arc). I/O is
// done without mu_, the device pinned by a user count that DetachDevice
// waits for. feed_mu_ serializes feeds (the thread's and FeedOnce's).
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cache/arc.h"
#include "cache/l2arc_log.h"
#include "zfs/util/mutex.h"
#include "zfs/vdev/block_device.h"

namespace uzfs {

struct L2ArcOptions {
  uint64_t write_max = 8ull << 20;    // l2arc_write_max: bytes per feed
  uint64_t write_boost = 8ull << 20;  // l2arc_write_boost: extra while warming
  uint64_t headroom = 2;              // l2arc_headroom: scan depth / budget
  std::chrono::milliseconds feed_interval{1000};  // l2arc_feed_secs
  bool noprefetch = true;             // l2arc_noprefetch
  bool rebuild = true;                // l2arc_rebuild_enabled
  bool feed_thread = true;            // false: only FeedOnce() feeds (tests)
};

// One attached cache device, for `zpool status` / `zpool iostat -v`.
struct L2DeviceInfo {
  BlockDevice* dev = nullptr;
  uint64_t pool_guid = 0, dev_guid = 0;
  uint64_t capacity = 0;  // ring bytes
  uint64_t size = 0;      // bytes of cached blocks (stored sizes)
  uint64_t asize = 0;     // bytes they take on the device
  uint64_t hand = 0;
  bool wrapped = false;
  uint64_t headers = 0;
};

struct L2KeyHasher {
  size_t operator()(const ArcKey& k) const { return static_cast<size_t>(k.Hash()); }
};

class L2Arc final : public ArcL2Hook {
 public:
  // Registers itself with arc (Arc::SetL2) and starts the feed thread.
  L2Arc(Arc& arc, const L2ArcOptions& opts = {});
  // Stops the feed, detaches every device, unregisters. REQUIRES: no Arc
  // read in progress.
  ~L2Arc() override;
  L2Arc(const L2Arc&) = delete;
  L2Arc& operator=(const L2Arc&) = delete;

  // Takes `dev` (labeled as an l2cache device of pool `pool_guid` with guid
  // `dev_guid`) into use. If it holds this pool's index, rebuilds the
  // headers (l2arc_rebuild_enabled); otherwise starts it cold and writes a
  // fresh device header. InvalidArgument if the device is too small or
  // already attached; IoError if the header cannot be written. `dev` must
  // stay valid until DetachDevice returns.
  Status AttachDevice(BlockDevice* dev, uint64_t pool_guid, uint64_t dev_guid);
  // Waits for the device's in-flight I/O, drops its headers, flushes it.
  // No-op for a device not attached.
  void DetachDevice(BlockDevice* dev);
  // DetachDevice for every device of the pool (export).
  void DetachPool(uint64_t pool_guid);

  // One feed pass (what the thread does every interval): the bytes written
  // to the device it chose (0 when nothing was eligible or no device).
  Result<uint64_t> FeedOnce();
  // Run-time tunables (write_max, write_boost, headroom, feed_interval,
  // noprefetch, rebuild; feed_thread is fixed at construction).
  void SetOptions(const L2ArcOptions& opts);
  L2ArcOptions options() const;

  std::vector<L2DeviceInfo> Devices() const;
  // For tests: whether a header for key exists (and where).
  bool Contains(const ArcKey& key) const;
  uint64_t DeviceAddressOf(const ArcKey& key) const;  // UINT64_MAX if none

  // ArcL2Hook.
  Result<ArcBlock> ReadL2(const ArcKey& key, const BlockPtr& bp) override;
  void FillStats(ArcStats* s) const override;
  // Keeps an evicted eligible buffer's bytes (moved, not copied) for the
  // next feed, up to write_max + write_boost bytes staged.
  void Evicted(const ArcL2View& v, AlignedBytes& data) override;

 private:
  struct Dev;
  struct Entry {
    Dev* dev = nullptr;
    uint64_t daddr = 0, asize = 0, size = 0, lsize = 0;
    CompressType compression = CompressType::kOff;
    ArcBufKind kind = ArcBufKind::kData;
    bool prefetch = false;
    Checksum256 cksum;
  };
  struct Dev {
    BlockDevice* bdev = nullptr;
    uint64_t pool_guid = 0, dev_guid = 0;
    uint64_t start = 0, end = 0;  // the ring (after the device header)
    uint64_t hand = 0;
    bool wrapped = false;
    L2LogPtr newest;
    std::map<uint64_t, ArcKey> by_addr;       // buffers, for eviction
    std::map<uint64_t, uint64_t> logs;        // log blocks: daddr -> asize
    uint64_t size = 0, asize = 0;
    int users = 0;                            // I/O in flight
    bool gone = false;
  };
  struct Counters {
    uint64_t hits = 0, misses = 0, feeds = 0, read_bytes = 0, write_bytes = 0;
    uint64_t writes_sent = 0, writes_done = 0, writes_error = 0;
    uint64_t evict_reading = 0, evicted = 0, cksum_bad = 0, io_error = 0;
    uint64_t log_blk_writes = 0, log_blk_asize_written = 0;
    uint64_t rebuild_success = 0, rebuild_io_errors = 0, rebuild_dh_errors = 0, rebuild_cksum_lb_errors = 0;
    uint64_t rebuild_size = 0, rebuild_asize = 0, rebuild_bufs = 0, rebuild_log_blks = 0;
  };
  struct Candidate {
    ArcKey key;
    ArcBufKind kind;
    bool prefetch;
    CompressType compression;
    uint64_t lsize;
    AlignedBytes data;
  };

  void FeedLoop();
  // FeedOnce's steps, run under feed_mu_. What one feed writes: the
  // buffers chosen, their keys, their allocated bytes.
  struct FeedBatch {
    std::vector<Candidate> items;
    std::unordered_set<ArcKey, L2KeyHasher> chosen;
    uint64_t bytes = 0;
  };
  // The batch as laid out on the device: its buffers' headers and the
  // log blocks that index them.
  struct FeedWrite {
    std::vector<std::pair<ArcKey, Entry>> entries;
    std::vector<L2LogPtr> logs;
  };
  // The next device in turn that is not gone, pinned (users), with the
  // options and its wrapped flag as they are now; nullptr for none.
  Dev* NextFeedDevice(L2ArcOptions* o, bool* wrapped) UZFS_EXCLUDES(mu_);
  // Staged evicted buffers of `pool`, oldest first, up to `budget` bytes.
  void TakeStaged(uint64_t pool, uint64_t budget, FeedBatch* b) UZFS_EXCLUDES(mu_);
  // Eligible buffers of `pool` from the eviction ends of the ARC's lists
  // (MFU first, metadata first), `depth` deep, until `budget` bytes.
  void ScanArcForFeed(uint64_t pool, uint64_t budget, uint64_t depth, bool noprefetch, FeedBatch* b)
      UZFS_EXCLUDES(mu_);
  // Moves d's write hand past `total` bytes (back to the start when they
  // do not fit), dropping what was there; false (and d released) when d
  // is gone.
  bool ReserveRange(Dev* d, uint64_t total, uint64_t* pos, L2LogPtr* prev) UZFS_EXCLUDES(mu_);
  // Copies the batch into `buf` (total bytes, written at `pos`), each
  // group of buffers followed by its log block chained to `prev`.
  static void LayOutFeed(Dev* d, uint64_t pos, uint64_t total, L2LogPtr prev, const std::vector<Candidate>& batch,
                         uint8_t* buf, FeedWrite* w);
  // After the write: the counters, and on success the headers and log
  // blocks become visible (unless d went away meanwhile).
  void CommitFeed(Dev* d, const Status& st, uint64_t total, const FeedWrite& w) UZFS_EXCLUDES(mu_);
  // Drops headers and log blocks in [begin, end) of d.
  void EvictRange(Dev& d, uint64_t begin, uint64_t end) UZFS_REQUIRES(mu_);
  void DropEntry(const ArcKey& key) UZFS_REQUIRES(mu_);
  void Release(Dev* d) UZFS_EXCLUDES(mu_);
  L2DevHeader HeaderOf(const Dev& d) const UZFS_REQUIRES(mu_);
  // Restores the headers of d's log chain (attach; d is pinned, not yet
  // visible to the feed).
  void Rebuild(Dev* d, const L2DevHeader& h) UZFS_EXCLUDES(mu_);
  Status WriteHeader(Dev* d) UZFS_EXCLUDES(mu_);

  Arc& arc_;
  mutable Mutex mu_;
  CondVar users_cv_;  // a device's users dropped to 0
  CondVar stop_cv_;   // stop_ set
  L2ArcOptions opts_ UZFS_GUARDED_BY(mu_);
  std::unordered_map<ArcKey, Entry, L2KeyHasher> map_ UZFS_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Dev>> devs_ UZFS_GUARDED_BY(mu_);
  // devs_.size(), readable without mu_: with no cache device the ARC's
  // misses and evictions do not take mu_ at all.
  std::atomic<size_t> ndevs_{0};
  std::deque<Candidate> staged_ UZFS_GUARDED_BY(mu_);  // evicted, oldest first
  std::unordered_set<ArcKey, L2KeyHasher> staged_keys_ UZFS_GUARDED_BY(mu_);
  uint64_t staged_bytes_ UZFS_GUARDED_BY(mu_) = 0;
  size_t next_dev_ UZFS_GUARDED_BY(mu_) = 0;
  Counters ctr_ UZFS_GUARDED_BY(mu_);
  bool stop_ UZFS_GUARDED_BY(mu_) = false;
  Mutex feed_mu_;
  std::thread feeder_;
};

}  // namespace uzfs
