// SyncedBlockCache: the level-0 buffers recent syncs wrote, kept as the
// bytes now on disk, by (object, block id), up to a byte limit, least
// recently used first out (OpenZFS keeps a synced dbuf cached the same
// way). ObjsetWriter owns one; when and what it keeps is the writer's
// policy (objset_writer.h, "Synced-block cache"), this class is only the
// bookkeeping: entries, LRU order, byte and hit counts.
//
// Not thread-safe: its owner serializes every call (the writer's mu_).
// A buffer is shared with whoever else holds it (a reader copying from it
// holds nothing; Take hands a buffer over only when the cache holds the
// last reference).
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "zfs/spa/block_ptr.h"
#include "zfs/util/aligned_bytes.h"

namespace uzfs {

// What the synced-block cache holds and how it served partial writes.
struct SyncedCacheStats {
  uint64_t bytes = 0, blocks = 0;
  uint64_t hits = 0;    // partial writes / block reads served from it
  uint64_t misses = 0;  // ... that had to read the committed block
};

class SyncedBlockCache {
 public:
  // Entries pushed out by the limit: where each block was written and its
  // bytes (still the committed block: the owner may hand them on).
  using Evicted = std::vector<std::pair<BlockPtr, std::shared_ptr<AlignedBytes>>>;

  explicit SyncedBlockCache(uint64_t limit = 0) : limit_(limit) {}
  SyncedBlockCache(const SyncedBlockCache&) = delete;
  SyncedBlockCache& operator=(const SyncedBlockCache&) = delete;

  uint64_t limit() const { return limit_; }
  // The limit from now on (0: keep nothing); entries over it go to
  // *evicted, least recently used first.
  void SetLimit(uint64_t bytes, Evicted* evicted);

  // Whether (object, blkid) has an entry.
  bool Contains(uint64_t object, uint64_t blkid) const;
  // Copies the entry of (object, blkid) into `out` when it has out.size()
  // bytes: a hit, and the entry becomes the most recent. Otherwise false
  // and a miss.
  bool CopyOut(uint64_t object, uint64_t blkid, std::span<uint8_t> out);
  // The entry's buffer, taken out of the cache, when it has `size` bytes
  // and nothing but the cache holds it: a hit. Otherwise null, and
  // nothing is counted or changed.
  std::shared_ptr<AlignedBytes> Take(uint64_t object, uint64_t blkid, uint64_t size);
  // Adds or replaces the entry of (object, blkid): `buf` as written at
  // `bp`, the most recent entry. The limit is not applied: Trim does.
  void Put(uint64_t object, uint64_t blkid, std::shared_ptr<AlignedBytes> buf, const BlockPtr& bp);
  // Removes the entries of `object` with block ids in [a, b).
  void Drop(uint64_t object, uint64_t a, uint64_t b);
  // While over the limit, the least recently used entries leave, into
  // *evicted.
  void Trim(Evicted* evicted);

  const SyncedCacheStats& stats() const { return stats_; }

 private:
  using Key = std::pair<uint64_t, uint64_t>;  // (object, blkid)
  struct Entry {
    std::shared_ptr<AlignedBytes> buf;
    std::list<Key>::iterator lru;
    BlockPtr bp;  // where the sync wrote it
  };
  void Erase(std::map<Key, Entry>::iterator it);

  uint64_t limit_;
  std::map<Key, Entry> entries_;
  std::list<Key> lru_;  // least recently used first
  SyncedCacheStats stats_;
};

}  // namespace uzfs
