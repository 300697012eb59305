// BlockReader: how the DMU reads the logical bytes of a block, so that a
// cache can sit between it and the ZIO pipeline without the DMU knowing
// about it (the DMU takes a BlockReader; the pool hands it the ARC-backed
// one from cache/arc_block_reader.h, or nothing: ZioBlockReader, uncached).
//
// Promises of every implementation: ReadRange returns bytes only of a
// block whose checksum verified (on this read or when it was cached);
// holes read as zeros and embedded pointers decode their payload. Prefetch
// never fails (errors are dropped: a later demand read reports them).
// Threading: every method is safe from many threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "zfs/spa/block_ptr.h"
#include "zfs/util/aligned_bytes.h"
#include "zfs/util/status.h"
#include "zfs/zio/zio.h"

namespace uzfs {

// The primarycache property: what a cache may keep of a dataset's blocks
// (values as stored in the DSL ZAP: none 0, metadata 1, all 2).
enum class BlockCachePolicy : uint8_t { kNone = 0, kMetadata = 1, kAll = 2 };

struct BlockReadOptions {
  BlockCachePolicy policy = BlockCachePolicy::kAll;
  // The secondarycache property: what may go to L2ARC cache devices.
  BlockCachePolicy secondary = BlockCachePolicy::kAll;
};

class BlockReader {
 public:
  virtual ~BlockReader() = default;
  // Bytes [offset, offset + out.size()) of the logical block bp.
  // InvalidArgument when the range is not inside [0, bp.lsize).
  virtual Status ReadRange(const BlockPtr& bp, uint64_t offset, std::span<uint8_t> out,
                           const BlockReadOptions& opts) = 0;
  // The same, on a worker thread (or inline when the bytes are at hand):
  // `out` must stay valid until `done` runs.
  virtual void ReadRangeAsync(const BlockPtr& bp, uint64_t offset, std::span<uint8_t> out,
                              const BlockReadOptions& opts, std::function<void(Status)> done) = 0;
  // Starts reading bp into the cache (counted as a prefetch); nothing for an
  // uncached reader.
  virtual void Prefetch(const BlockPtr& bp, const BlockReadOptions& opts) = 0;
  // Prefetch of several blocks; a cache may read them together (one
  // hand-off and one wait per group instead of one per block). Default:
  // Prefetch each.
  virtual void PrefetchMany(std::span<const BlockPtr> bps, const BlockReadOptions& opts) {
    for (const BlockPtr& bp : bps) Prefetch(bp, opts);
  }
  // Runs `task` on a worker thread (background work around prefetch).
  virtual void Submit(std::function<void()> task) = 0;
  // Whether reads are cached (prefetching is pointless otherwise).
  virtual bool Caches() const = 0;
  // bp was freed: a cache may drop its buffer at once (it would never be
  // hit again: a reused address comes with a new birth). Nothing otherwise.
  virtual void Forget(const BlockPtr& bp) {}
  // bp was just written with these logical bytes (the DMU hands over the
  // blocks its synced-block cache lets go): a cache may keep them under bp,
  // as OpenZFS's ARC keeps what arc_write wrote, so that a later read or
  // partial write of the block reads nothing from the disks. It may take
  // `data` over when nothing else holds it. Nothing for an uncached reader
  // or a policy (opts.policy) that does not keep the block's kind.
  virtual void Written(const BlockPtr& bp, std::shared_ptr<AlignedBytes> data, const BlockReadOptions& opts) {}

  Status Read(const BlockPtr& bp, std::span<uint8_t> out, const BlockReadOptions& opts = {}) {
    return ReadRange(bp, 0, out, opts);
  }
};

// Straight to the ZIO pipeline, no cache (what the DMU did before the ARC).
class ZioBlockReader final : public BlockReader {
 public:
  explicit ZioBlockReader(Zio& zio) : zio_(zio) {}
  Status ReadRange(const BlockPtr& bp, uint64_t offset, std::span<uint8_t> out,
                   const BlockReadOptions& opts) override;
  void ReadRangeAsync(const BlockPtr& bp, uint64_t offset, std::span<uint8_t> out,
                      const BlockReadOptions& opts, std::function<void(Status)> done) override;
  void Prefetch(const BlockPtr&, const BlockReadOptions&) override {}
  void Submit(std::function<void()> task) override { zio_.Submit(std::move(task)); }
  bool Caches() const override { return false; }

 private:
  Zio& zio_;
};

// InvalidArgument unless [offset, offset + n) lies inside the block.
Status CheckBlockRange(const BlockPtr& bp, uint64_t offset, uint64_t n);

}  // namespace uzfs
