// Stream prefetch (see prefetch.h).
#include "cache/prefetch.h"

#include <algorithm>

namespace uzfs {

PrefetchOptions PrefetchOptionsForBlockSize(uint64_t block_size, uint64_t min_distance_bytes,
                                            uint64_t max_distance_bytes, unsigned max_streams,
                                            uint64_t max_stride) {
  PrefetchOptions o;
  const uint64_t bs = std::max<uint64_t>(block_size, 1);
  o.max_distance = std::max<uint64_t>(1, max_distance_bytes / bs);
  o.min_distance = std::clamp<uint64_t>(min_distance_bytes / bs, 1, o.max_distance);
  o.max_streams = std::max(1u, max_streams);
  o.max_stride = std::max<uint64_t>(1, max_stride);
  return o;
}

StreamPrefetcher::StreamPrefetcher(const PrefetchOptions& opts) : opts_(opts) {}

void StreamPrefetcher::Issue(Stream& s, int64_t end, std::vector<uint64_t>* out) {
  const int64_t limit = s.last + s.stride * static_cast<int64_t>(s.distance);
  // Never return what the reader already has: start after its lead block.
  if ((s.stride > 0 && s.frontier <= s.last) || (s.stride < 0 && s.frontier >= s.last)) {
    s.frontier = s.last + s.stride;
  }
  while ((s.stride > 0 ? s.frontier <= limit : s.frontier >= limit) && s.frontier >= 0 && s.frontier < end) {
    out->push_back(static_cast<uint64_t>(s.frontier));
    stats_.blocks_issued++;
    s.frontier += s.stride;
  }
}

std::vector<uint64_t> StreamPrefetcher::OnRead(uint64_t blkid, uint64_t nblks, uint64_t end_blocks) {
  std::vector<uint64_t> out;
  if (nblks == 0) return out;
  const int64_t first = static_cast<int64_t>(blkid);
  const int64_t lastblk = static_cast<int64_t>(blkid + nblks - 1);
  const int64_t end = end_blocks > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(end_blocks);
  MutexLock l(&mu_);
  tick_++;
  // 1. Continue a stream?
  for (Stream& s : streams_) {
    const int64_t entry = s.stride > 0 ? first : lastblk;  // the block a continuing read starts at
    const int64_t diff = entry - s.last;
    if (diff % s.stride != 0) continue;
    const int64_t k = diff / s.stride;
    const int64_t window = std::min(static_cast<int64_t>(s.distance) + 1,
                                    static_cast<int64_t>(std::max<uint64_t>(opts_.max_skip, 1)));
    if (k < 1 || k > window) continue;
    stats_.hits++;
    s.last = s.stride > 0 ? lastblk : first;
    s.used = tick_;
    if (k == 1) s.distance = std::min(opts_.max_distance, s.distance * 2);
    Issue(s, end, &out);
    return out;
  }
  stats_.misses++;
  // 2. Start one from the recent unmatched reads?
  int64_t stride = 0;
  const int64_t maxs = static_cast<int64_t>(opts_.max_stride);
  for (size_t i = 0; i < history_.size() && stride == 0; i++) {
    const Seen& h = history_[i];
    if (first - h.last == 1) {
      stride = 1;
    } else if (lastblk - h.first == -1) {
      stride = -1;
    } else {
      const int64_t d = first - h.first;
      if (d == 0 || d > maxs || d < -maxs || d == 1 || d == -1) continue;
      // A stride needs a third point: an older read d before h.
      for (const Seen& g : history_) {
        if (h.first - g.first == d) {
          stride = d;
          break;
        }
      }
    }
  }
  if (stride != 0) {
    Stream s;
    s.stride = stride;
    s.last = stride > 0 ? lastblk : first;
    s.frontier = s.last + stride;
    // A new stream starts small and doubles per step (2, 4, ... up to
    // max_distance): two reads that happen to be adjacent among random ones
    // would otherwise read min_distance (4 MiB) ahead each time.
    s.distance = std::max<uint64_t>(1, std::min(opts_.min_distance, opts_.start_distance));
    s.used = tick_;
    stats_.streams_created++;
    if (streams_.size() < opts_.max_streams) {
      streams_.push_back(s);
      Issue(streams_.back(), end, &out);
    } else {
      auto lru = std::min_element(streams_.begin(), streams_.end(),
                                  [](const Stream& a, const Stream& b) { return a.used < b.used; });
      *lru = s;
      stats_.streams_replaced++;
      Issue(*lru, end, &out);
    }
    return out;
  }
  // 3. Remember it.
  const Seen seen{first, lastblk};
  if (history_.size() < std::max(1u, opts_.history)) {
    history_.push_back(seen);
  } else {
    history_[history_next_] = seen;
    history_next_ = (history_next_ + 1) % history_.size();
  }
  return out;
}

PrefetchStats StreamPrefetcher::stats() const {
  MutexLock l(&mu_);
  return stats_;
}

size_t StreamPrefetcher::stream_count() const {
  MutexLock l(&mu_);
  return streams_.size();
}

}  // namespace uzfs
