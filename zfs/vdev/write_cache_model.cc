// VolatileCacheModel (see write_cache_model.h).
#include "zfs/vdev/write_cache_model.h"

#include <algorithm>

namespace uzfs {

Status VolatileCacheModel::BeforeWrite(uint64_t offset, uint64_t len, const ReadFn& read) {
  if (len == 0) return Status::Ok();
  const uint64_t first = offset / kGranule * kGranule;
  const uint64_t end = std::min(offset + len, size_);
  for (uint64_t g = first; g < end; g += kGranule) {
    if (preimages_.count(g)) continue;
    const uint64_t glen = std::min(kGranule, size_ - g);
    Preimage p{std::make_unique<uint8_t[]>(glen), glen};
    UZFS_RETURN_IF_ERROR(read(g, std::span<uint8_t>(p.data.get(), glen)));
    preimages_.emplace(g, std::move(p));
  }
  return Status::Ok();
}

void VolatileCacheModel::WroteThrough(uint64_t offset, std::span<const uint8_t> data) {
  if (data.empty()) return;
  const uint64_t end = offset + data.size();
  auto it = preimages_.lower_bound(offset / kGranule * kGranule);
  for (; it != preimages_.end() && it->first < end; ++it) {
    Preimage& p = it->second;
    const uint64_t from = std::max(offset, it->first), to = std::min(end, it->first + p.len);
    if (from < to) std::copy(data.begin() + (from - offset), data.begin() + (to - offset), p.data.get() + (from - it->first));
  }
}

Status VolatileCacheModel::Drop(const WriteFn& write) {
  Status first_error;
  for (auto& [off, p] : preimages_) {
    Status s = write(off, std::span<const uint8_t>(p.data.get(), p.len));
    if (!s.ok() && first_error.ok()) first_error = std::move(s);
  }
  preimages_.clear();
  return first_error;
}

Status VolatileCacheModel::DropSome(uint64_t seed, const WriteFn& write) {
  Status first_error;
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  for (auto& [off, p] : preimages_) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    if ((x >> 32) & 1) continue;  // this granule reached the platter
    Status s = write(off, std::span<const uint8_t>(p.data.get(), p.len));
    if (!s.ok() && first_error.ok()) first_error = std::move(s);
  }
  preimages_.clear();
  return first_error;
}

}  // namespace uzfs
