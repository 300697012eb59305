// SyncedBlockCache: entries in a map by (object, blkid), each with its
// place in one LRU list (contract in synced_block_cache.h).
#include "zfs/dmu/synced_block_cache.h"

#include <cstring>

namespace uzfs {

void SyncedBlockCache::SetLimit(uint64_t bytes, Evicted* evicted) {
  limit_ = bytes;
  Trim(evicted);
}

bool SyncedBlockCache::Contains(uint64_t object, uint64_t blkid) const {
  return entries_.count(Key{object, blkid}) > 0;
}

bool SyncedBlockCache::CopyOut(uint64_t object, uint64_t blkid, std::span<uint8_t> out) {
  auto it = entries_.find(Key{object, blkid});
  if (it == entries_.end() || it->second.buf->size() != out.size()) {
    stats_.misses++;
    return false;
  }
  std::memcpy(out.data(), it->second.buf->data(), out.size());
  lru_.splice(lru_.end(), lru_, it->second.lru);
  stats_.hits++;
  return true;
}

std::shared_ptr<AlignedBytes> SyncedBlockCache::Take(uint64_t object, uint64_t blkid, uint64_t size) {
  auto it = entries_.find(Key{object, blkid});
  if (it == entries_.end() || it->second.buf->size() != size || it->second.buf.use_count() != 1) return nullptr;
  std::shared_ptr<AlignedBytes> buf = std::move(it->second.buf);
  stats_.bytes -= buf->size();
  stats_.blocks--;
  stats_.hits++;
  lru_.erase(it->second.lru);
  entries_.erase(it);
  return buf;
}

void SyncedBlockCache::Put(uint64_t object, uint64_t blkid, std::shared_ptr<AlignedBytes> buf,
                           const BlockPtr& bp) {
  auto it = entries_.find(Key{object, blkid});
  if (it == entries_.end()) {
    lru_.emplace_back(object, blkid);
    it = entries_.emplace(Key{object, blkid}, Entry{nullptr, std::prev(lru_.end()), BlockPtr{}}).first;
    stats_.blocks++;
  } else {
    stats_.bytes -= it->second.buf->size();
    lru_.splice(lru_.end(), lru_, it->second.lru);
  }
  stats_.bytes += buf->size();
  it->second.buf = std::move(buf);
  it->second.bp = bp;
}

void SyncedBlockCache::Erase(std::map<Key, Entry>::iterator it) {
  stats_.bytes -= it->second.buf->size();
  stats_.blocks--;
  lru_.erase(it->second.lru);
  entries_.erase(it);
}

void SyncedBlockCache::Drop(uint64_t object, uint64_t a, uint64_t b) {
  for (auto it = entries_.lower_bound(Key{object, a});
       it != entries_.end() && it->first.first == object && it->first.second < b;) {
    auto next = std::next(it);
    Erase(it);
    it = next;
  }
}

void SyncedBlockCache::Trim(Evicted* evicted) {
  while (stats_.bytes > limit_ && !lru_.empty()) {
    auto it = entries_.find(lru_.front());
    evicted->emplace_back(it->second.bp, std::move(it->second.buf));
    stats_.bytes -= evicted->back().second->size();
    stats_.blocks--;
    lru_.pop_front();
    entries_.erase(it);
  }
}

}  // namespace uzfs
