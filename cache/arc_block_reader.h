// ArcBlockReader: the DMU's BlockReader (zfs/zio/block_reader.h) backed by
// the ARC — what the pool hands its object sets when the daemon gave it an
// Arc. A hit copies from the cached buffer; a miss reads the block's
// physical bytes once (Zio::ReadPhysical, verified against the checksum,
// however many threads ask at once), caches them as stored (compressed),
// and decompresses (ArcRef::GetPlain). Holes and embedded pointers are
// decoded from the pointer, never cached.
//
// Written blocks: the DMU hands over the blocks its synced-block cache
// lets go (zfs/dmu/objset_writer.h), and they are inserted like a miss's
// read, so a 4 KiB write into a record written a while ago finds it here
// instead of reading 128 KiB from the disks first.
//
// Key: (pool guid, DVA[0], physical birth) — ArcKey::FromBlockPtr. A freed
// and reallocated address has a new birth, so a stale buffer is never hit;
// object sets call Forget for the blocks a sync frees, so their buffers go
// at once instead of ageing out. (Blocks rewritten in place by sync passes
// keep DVA and birth: only the MOS does that, and the pool's MOS reads come
// here through SettledBlockReader, which passes only blocks of txgs whose
// passes are over.)
//
// primarycache: BlockReadOptions::policy says what may be cached; a block
// that may not is still read and returned, counted as a miss (`uncached`).
// Prefetch: an asynchronous read into the ARC on the Zio's workers with
// ArcReadFlags::prefetch (arcstats prefetch_*); at most `max_prefetch`
// in flight, more are dropped (counted). The default (1024) is above what
// one grown stream asks for (zfetch_max_distance 64 MiB = 512 blocks of
// 128 KiB): at 256, drops left holes in the read-ahead and a cold
// sequential read stalled at a third of its speed (docs/PERFORMANCE.md).
//
// PrefetchMany: the blocks go to the workers in groups of up to
// `prefetch_batch` (default 8: 1 MiB of 128 KiB records), each group one
// task that reads all its misses at once (Arc::ReadMany over
// Zio::ReadPhysicalMany: one batch of column reads, one wait), where
// Prefetch costs a task, a hand-off to the I/O engine and a wake-up per
// block — most of a cold sequential read's CPU on a small machine
// (docs/PERFORMANCE.md, "Sequential reads").
//
// Lifetime: the destructor waits for its prefetches and drops the pool's
// buffers from the ARC (Arc::ForgetPool): destroy it before the Zio, after
// every object set that reads through it.
// Threading: every method is safe from many threads at once.
#pragma once

#include <atomic>
#include <cstdint>

#include "cache/arc.h"
#include "zfs/util/mutex.h"
#include "zfs/zio/block_reader.h"
#include "zfs/zio/zio.h"

namespace uzfs {

struct ArcBlockReaderStats {
  uint64_t prefetch_issued = 0;   // prefetch reads started (blocks)
  uint64_t prefetch_batches = 0;  // PrefetchMany groups (tasks) started
  uint64_t prefetch_dropped = 0;  // refused: too many in flight
  uint64_t prefetch_errors = 0;   // failed (dropped silently)
  uint64_t written = 0;           // written blocks handed over (Written) and kept
};

class ArcBlockReader final : public BlockReader {
 public:
  ArcBlockReader(Arc& arc, uint64_t pool_guid, Zio& zio, unsigned max_prefetch = 1024,
                 unsigned prefetch_batch = 8);
  ~ArcBlockReader() override;
  ArcBlockReader(const ArcBlockReader&) = delete;
  ArcBlockReader& operator=(const ArcBlockReader&) = delete;

  Status ReadRange(const BlockPtr& bp, uint64_t offset, std::span<uint8_t> out,
                   const BlockReadOptions& opts) override;
  void ReadRangeAsync(const BlockPtr& bp, uint64_t offset, std::span<uint8_t> out,
                      const BlockReadOptions& opts, std::function<void(Status)> done) override;
  void Prefetch(const BlockPtr& bp, const BlockReadOptions& opts) override UZFS_EXCLUDES(mu_);
  void PrefetchMany(std::span<const BlockPtr> bps, const BlockReadOptions& opts) override UZFS_EXCLUDES(mu_);
  void Submit(std::function<void()> task) override UZFS_EXCLUDES(mu_);
  bool Caches() const override { return true; }
  void Forget(const BlockPtr& bp) override;
  // Data is kept as stored uncompressed (the logical bytes, compression
  // off: no CPU spent compressing again; a hit needs no decompression; the
  // L2ARC verifies such a buffer with its own checksum, cache/l2arc.h).
  // Compressed metadata is compressed again and kept as on disk when that
  // reproduces the pointer's checksum (else as data). A buffer not in its
  // on-disk form (a compressed pointer kept uncompressed) never goes to
  // the L2ARC: only the pointer's checksum can tell it from another block
  // born at the same address in a txg lost to a crash. Holes and embedded
  // pointers: nothing.
  void Written(const BlockPtr& bp, std::shared_ptr<AlignedBytes> data, const BlockReadOptions& opts) override;

  ArcBlockReaderStats stats() const;
  Arc& arc() { return arc_; }

 private:
  // The block through the ARC (a reference to the cached or private buffer).
  Result<ArcRef> Get(const BlockPtr& bp, const BlockReadOptions& opts, bool prefetch);
  void TaskDone() UZFS_EXCLUDES(mu_);

  Arc& arc_;
  const uint64_t pool_guid_;
  Zio& zio_;
  const unsigned max_prefetch_;
  const unsigned prefetch_batch_;
  Mutex mu_;
  CondVar cv_;
  uint64_t tasks_ UZFS_GUARDED_BY(mu_) = 0;  // submitted, not finished
  unsigned prefetching_ UZFS_GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> issued_{0}, dropped_{0}, errors_{0}, batches_{0}, written_{0};
};

// The ArcReadFlags of a read with this policy (kind from ArcKindOf(bp)).
ArcReadFlags ArcFlagsFor(const BlockPtr& bp, BlockCachePolicy policy, bool prefetch);

}  // namespace uzfs
