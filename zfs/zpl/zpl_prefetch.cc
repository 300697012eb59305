// ZplPrefetch (see zpl_prefetch.h).
#include "zfs/zpl/zpl_prefetch.h"

#include <algorithm>
#include <vector>

namespace uzfs {

uint64_t ZplPrefetch::Get(std::string_view name, uint64_t def) const {
  if (!tunables_) return def;
  auto v = tunables_->Get(name);
  return v.ok() ? *v : def;
}

void ZplPrefetch::OnRead(uint64_t obj, uint64_t block_size, uint64_t offset, uint64_t len,
                         uint64_t file_size) {
  if (len == 0 || block_size == 0 || !os_.Caches() || Get("zfetch_disable", 0) != 0) return;
  const uint64_t first = offset / block_size;
  const uint64_t last = (offset + len - 1) / block_size;
  const uint64_t end = (file_size + block_size - 1) / block_size;
  std::vector<uint64_t> ahead;
  {
    MutexLock l(&mu_);
    auto it = files_.find(obj);
    if (it == files_.end() || it->second.block_size != block_size) {
      if (files_.size() >= kMaxFiles) {
        // Drop the least recently read half.
        std::vector<uint64_t> used;
        for (const auto& e : files_) used.push_back(e.second.used);
        std::nth_element(used.begin(), used.begin() + used.size() / 2, used.end());
        const uint64_t cut = used[used.size() / 2];
        std::erase_if(files_, [&](const auto& e) { return e.second.used <= cut; });
      }
      File f;
      f.block_size = block_size;
      f.pf = std::make_unique<StreamPrefetcher>(PrefetchOptionsForBlockSize(
          block_size, Get("zfetch_min_distance", 4ull << 20), Get("zfetch_max_distance", 64ull << 20),
          static_cast<unsigned>(Get("zfetch_max_streams", 8)), Get("zfetch_max_stride", 64)));
      it = files_.insert_or_assign(obj, std::move(f)).first;
    }
    it->second.used = ++tick_;
    StreamPrefetcher& pf = *it->second.pf;
    stats_.reads++;
    const uint64_t hits_before = pf.stats().hits;
    ahead = pf.OnRead(first, last - first + 1, end);
    if (pf.stats().hits != hits_before) stats_.stream_hits++;
    stats_.blocks_issued += ahead.size();
  }
  if (!ahead.empty()) os_.Prefetch(obj, ahead);
}

void ZplPrefetch::Forget(uint64_t obj) {
  MutexLock l(&mu_);
  files_.erase(obj);
}

ZplPrefetchStats ZplPrefetch::stats() const {
  MutexLock l(&mu_);
  return stats_;
}

}  // namespace uzfs
