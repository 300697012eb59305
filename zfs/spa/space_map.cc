// Space map codec and the in-memory storage; layouts in space_map.h.
#include "zfs/spa/space_map.h"

#include <bit>

#include "zfs/util/bitfield.h"
#include "zfs/util/endian.h"

namespace uzfs {

Status DecodeSpaceMap(std::span<const uint64_t> words,
                      const std::function<Status(const SpaceMapRecord&)>& fn) {
  uint64_t txg = 0;
  uint32_t pass = 0;
  for (size_t i = 0; i < words.size(); i++) {
    const uint64_t w = words[i];
    SpaceMapRecord r;
    const uint64_t prefix = GetBits(w, 62, 2);
    if (prefix == 2) {  // debug
      r.debug = true;
      r.type = static_cast<SpaceMapType>(GetBits(w, 60, 2) & 1);
      if (GetBits(w, 60, 2) > 1) return Status::Corruption("space map: debug word with unknown action");
      r.sync_pass = static_cast<uint32_t>(GetBits(w, 50, 10));
      r.txg = GetBits(w, 0, 50);
      if (w != kSpaceMapPadWord) {
        txg = r.txg;
        pass = r.sync_pass;
      }
    } else if (prefix == 3) {  // two-word
      if (i + 1 >= words.size()) return Status::Corruption("space map: two-word entry cut off");
      const uint64_t w2 = words[++i];
      r.two_word = true;
      r.run = GetBits(w, 24, 36) + 1;
      r.vdev = static_cast<uint32_t>(GetBits(w, 0, 24));
      r.type = static_cast<SpaceMapType>(GetBits(w2, 63, 1));
      r.offset = GetBits(w2, 0, 63);
      r.txg = txg;
      r.sync_pass = pass;
    } else {  // one-word
      r.offset = GetBits(w, 16, 47);
      r.type = static_cast<SpaceMapType>(GetBits(w, 15, 1));
      r.run = GetBits(w, 0, 15) + 1;
      r.txg = txg;
      r.sync_pass = pass;
    }
    UZFS_RETURN_IF_ERROR(fn(r));
  }
  return Status::Ok();
}

Result<std::vector<SpaceMapRecord>> DecodeSpaceMapRecords(std::span<const uint64_t> words) {
  std::vector<SpaceMapRecord> out;
  UZFS_RETURN_IF_ERROR(DecodeSpaceMap(words, [&](const SpaceMapRecord& r) {
    out.push_back(r);
    return Status::Ok();
  }));
  return out;
}

std::vector<uint64_t> SpaceMapWordsFromBytes(std::span<const uint8_t> bytes, bool swap) {
  std::vector<uint64_t> w(bytes.size() / 8);
  for (size_t i = 0; i < w.size(); i++) {
    w[i] = swap ? LoadBE64(bytes.data() + 8 * i) : LoadLE64(bytes.data() + 8 * i);
  }
  return w;
}

std::vector<uint8_t> SpaceMapWordsToBytes(std::span<const uint64_t> words) {
  std::vector<uint8_t> b(words.size() * 8);
  for (size_t i = 0; i < words.size(); i++) StoreLE64(b.data() + 8 * i, words[i]);
  return b;
}

SpaceMapEncoder::SpaceMapEncoder(uint32_t shift, bool v2, uint64_t start_word,
                                 uint64_t block_words)
    : shift_(shift), v2_(v2), start_word_(start_word),
      block_words_(block_words ? block_words : 1) {}

void SpaceMapEncoder::Debug(SpaceMapType action, uint32_t sync_pass, uint64_t txg) {
  Push(PutBits(2, 62, 2) | PutBits(static_cast<uint64_t>(action), 60, 2) |
       PutBits(sync_pass, 50, 10) | PutBits(txg, 0, 50));
}

Status SpaceMapEncoder::Entry(SpaceMapType type, uint64_t offset, uint64_t size,
                              uint32_t vdev) {
  const uint64_t unit_mask = (uint64_t{1} << shift_) - 1;
  if ((offset | size) & unit_mask) {
    return Status::InvalidArgument("space map entry not a multiple of the unit");
  }
  uint64_t off = offset >> shift_;
  uint64_t run = size >> shift_;
  const uint64_t t = static_cast<uint64_t>(type);
  if (vdev != kSpaceMapNoVdev && !v2_) {
    return Status::InvalidArgument("space map: a vdev id needs two-word entries (spacemap_v2)");
  }
  if (vdev > kSpaceMapNoVdev) return Status::InvalidArgument("space map: vdev id past 24 bits");
  const uint64_t off_limit = v2_ ? kSpaceMapOffsetLimitV2 : kSpaceMapOffsetLimitV1;
  if (run && off + run > off_limit) {
    return Status::InvalidArgument("space map: offset past what an entry can say");
  }
  while (run) {
    const bool one_word_fits = vdev == kSpaceMapNoVdev && off + std::min(run, kSpaceMapRunMaxV1) <=
                                                              kSpaceMapOffsetLimitV1;
    if (!v2_ || (one_word_fits && run <= kSpaceMapRunMaxV1)) {
      // One word (v1 always; v2 whenever one word can say it all).
      const uint64_t n = std::min(run, kSpaceMapRunMaxV1);
      Push(PutBits(off, 16, 47) | PutBits(t, 15, 1) | PutBits(n - 1, 0, 15));
      off += n;
      run -= n;
      continue;
    }
    const uint64_t n = std::min(run, kSpaceMapRunMaxV2);
    if (Position() % block_words_ == block_words_ - 1) Push(kSpaceMapPadWord);
    Push(PutBits(3, 62, 2) | PutBits(n - 1, 24, 36) | PutBits(vdev, 0, 24));
    Push(PutBits(t, 63, 1) | PutBits(off, 0, 63));
    off += n;
    run -= n;
  }
  return Status::Ok();
}

Status SpaceMapEncoder::Tree(SpaceMapType type, const RangeTree& tree, uint64_t base,
                             uint32_t sync_pass, uint64_t txg, bool debug) {
  if (tree.empty()) return Status::Ok();
  if (debug) Debug(type, sync_pass, txg);
  for (const auto& [s, e] : tree.segments()) {
    if (s < base) return Status::InvalidArgument("space map: segment before the map's start");
    UZFS_RETURN_IF_ERROR(Entry(type, s - base, e - s));
  }
  return Status::Ok();
}

std::vector<uint8_t> EncodeSpaceMapHeader(const SpaceMapHeader& h) {
  std::vector<uint8_t> b(h.histogram ? kSpaceMapHeaderSize : kSpaceMapHeaderSizeV0, 0);
  StoreLE64(b.data(), h.object);
  StoreLE64(b.data() + 8, h.length);
  StoreLE64(b.data() + 16, static_cast<uint64_t>(h.alloc));
  if (h.histogram) {
    for (int i = 0; i < kSpaceMapHistogramSize; i++) StoreLE64(b.data() + 64 + 8 * i, (*h.histogram)[i]);
  }
  return b;
}

Result<SpaceMapHeader> DecodeSpaceMapHeader(std::span<const uint8_t> bonus, bool swap) {
  if (bonus.size() < kSpaceMapHeaderSizeV0) {
    return Status::Corruption("space map header shorter than 24 bytes");
  }
  auto load = [&](size_t off) { return swap ? LoadBE64(bonus.data() + off) : LoadLE64(bonus.data() + off); };
  SpaceMapHeader h;
  h.object = load(0);
  h.length = load(8);
  h.alloc = static_cast<int64_t>(load(16));
  if (bonus.size() >= kSpaceMapHeaderSize) {
    h.histogram.emplace();
    for (int i = 0; i < kSpaceMapHistogramSize; i++) (*h.histogram)[i] = load(64 + 8 * i);
  }
  if (h.length % 8) return Status::Corruption("space map length not a multiple of 8");
  return h;
}

std::array<uint64_t, kSpaceMapHistogramSize> SpaceMapHistogram(const RangeTree& free,
                                                               uint32_t shift) {
  std::array<uint64_t, kSpaceMapHistogramSize> h{};
  for (const auto& [s, e] : free.segments()) {
    const uint64_t units = (e - s) >> shift;
    if (units == 0) continue;
    const int b = std::min<int>(std::bit_width(units) - 1, kSpaceMapHistogramSize - 1);
    h[b]++;
  }
  return h;
}

Status MemSpaceMapStorage::Append(std::span<const uint64_t> words) {
  MutexLock l(&mu_);
  words_.insert(words_.end(), words.begin(), words.end());
  return Status::Ok();
}

Result<std::vector<uint64_t>> MemSpaceMapStorage::ReadAll() {
  MutexLock l(&mu_);
  return words_;
}

Status MemSpaceMapStorage::Truncate() {
  MutexLock l(&mu_);
  words_.clear();
  truncations_++;
  return Status::Ok();
}

uint64_t MemSpaceMapStorage::Length() const {
  MutexLock l(&mu_);
  return words_.size() * 8;
}

Status MemSpaceMapStorage::WriteHeader(const SpaceMapHeader& h) {
  MutexLock l(&mu_);
  header_ = h;
  return Status::Ok();
}

Result<SpaceMapHeader> MemSpaceMapStorage::ReadHeader() {
  MutexLock l(&mu_);
  if (!header_) return Status::NotFound("space map has no header");
  return *header_;
}

uint64_t MemSpaceMapStorage::truncations() const {
  MutexLock l(&mu_);
  return truncations_;
}

Status ReplaySpaceMap(std::span<const uint64_t> words, uint32_t shift, uint64_t base,
                      uint64_t size, RangeTree* free, int64_t* alloc_delta) {
  int64_t delta = 0;
  UZFS_RETURN_IF_ERROR(DecodeSpaceMap(words, [&](const SpaceMapRecord& r) -> Status {
    if (r.debug) return Status::Ok();
    if (r.offset > (size >> shift) || r.run > (size >> shift) - r.offset) {
      return Status::Corruption("space map entry past the end of its metaslab");
    }
    const uint64_t start = base + (r.offset << shift), len = r.run << shift;
    if (r.type == SpaceMapType::kAlloc) {
      if (!free->Remove(start, len).ok()) {
        return Status::Corruption("space map allocates space that is not free");
      }
      delta += static_cast<int64_t>(len);
    } else {
      if (!free->Add(start, len).ok()) {
        return Status::Corruption("space map frees space that is already free");
      }
      delta -= static_cast<int64_t>(len);
    }
    return Status::Ok();
  }));
  if (alloc_delta) *alloc_delta = delta;
  return Status::Ok();
}

}  // namespace uzfs
