// A plain LRU of byte capacity, the baseline the ARC's policy tests and
// benchmarks compare against (same traces, same size). Single-threaded,
// no data: it only says hit or miss.
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>

namespace uzfs {

class LruSim {
 public:
  explicit LruSim(uint64_t capacity_bytes) : cap_(capacity_bytes) {}
  // One access of `key` (of `size` bytes); true on a hit. A miss inserts the
  // key at the head and evicts from the tail until the bytes fit.
  bool Access(uint64_t key, uint64_t size) {
    auto it = map_.find(key);
    if (it != map_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      hits_++;
      return true;
    }
    misses_++;
    order_.push_front({key, size});
    map_[key] = order_.begin();
    used_ += size;
    while (used_ > cap_ && !order_.empty()) {
      used_ -= order_.back().size;
      map_.erase(order_.back().key);
      order_.pop_back();
    }
    return false;
  }
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }
  double HitRatio() const { return hits_ + misses_ ? double(hits_) / double(hits_ + misses_) : 0; }

 private:
  struct Entry {
    uint64_t key;
    uint64_t size;
  };
  uint64_t cap_;
  uint64_t used_ = 0;
  uint64_t hits_ = 0, misses_ = 0;
  std::list<Entry> order_;
  std::unordered_map<uint64_t, std::list<Entry>::iterator> map_;
};

}  // namespace uzfs
