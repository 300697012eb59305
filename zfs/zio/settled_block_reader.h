// SettledBlockReader: a caching BlockReader made safe for an object set
// whose sync passes rewrite blocks in place (the MOS: a pass >= 2 of txg T
// writes a block born in T again under the same DVA and birth, with new
// bytes). A cache keyed by (address, birth) would keep the earlier pass's
// bytes under the final block's key.
//
// The rule: a block born in a txg that has finished syncing never changes
// again (only blocks born in the txg being synced are rewritten), so
// blocks born at or before the settled txg go through the cache, and
// younger ones straight to the ZIO pipeline, uncached. The owner raises
// the settled txg when a txg's passes are done (Settle), before the next
// txg's sync begins; a txg that fails part way is never settled, so none
// of its blocks was cached when it is synced again.
//
// Forget always reaches the cache (a freed block's buffer may go).
// Written and Prefetch of unsettled blocks are dropped.
// Threading: every method is safe from many threads at once.
#pragma once

#include <atomic>
#include <cstdint>

#include "zfs/zio/block_reader.h"

namespace uzfs {

class SettledBlockReader final : public BlockReader {
 public:
  // `cached` and `zio` must outlive this reader; `settled`: the newest txg
  // whose blocks are final (the pool's last synced txg when it opens).
  SettledBlockReader(BlockReader& cached, Zio& zio, uint64_t settled)
      : cached_(cached), direct_(zio), settled_(settled) {}

  // Blocks born in txgs <= txg are final from now on.
  void Settle(uint64_t txg) { settled_.store(txg, std::memory_order_release); }
  uint64_t settled() const { return settled_.load(std::memory_order_acquire); }

  Status ReadRange(const BlockPtr& bp, uint64_t offset, std::span<uint8_t> out,
                   const BlockReadOptions& opts) override {
    return For(bp).ReadRange(bp, offset, out, opts);
  }
  void ReadRangeAsync(const BlockPtr& bp, uint64_t offset, std::span<uint8_t> out, const BlockReadOptions& opts,
                      std::function<void(Status)> done) override {
    For(bp).ReadRangeAsync(bp, offset, out, opts, std::move(done));
  }
  void Prefetch(const BlockPtr& bp, const BlockReadOptions& opts) override {
    if (Settled(bp)) cached_.Prefetch(bp, opts);
  }
  void Submit(std::function<void()> task) override { direct_.Submit(std::move(task)); }
  bool Caches() const override { return cached_.Caches(); }
  void Forget(const BlockPtr& bp) override { cached_.Forget(bp); }
  void Written(const BlockPtr& bp, std::shared_ptr<AlignedBytes> data, const BlockReadOptions& opts) override {
    if (Settled(bp)) cached_.Written(bp, std::move(data), opts);
  }

 private:
  bool Settled(const BlockPtr& bp) const { return bp.PhysBirth() <= settled(); }
  BlockReader& For(const BlockPtr& bp) { return Settled(bp) ? cached_ : static_cast<BlockReader&>(direct_); }

  BlockReader& cached_;
  ZioBlockReader direct_;
  std::atomic<uint64_t> settled_;
};

}  // namespace uzfs
