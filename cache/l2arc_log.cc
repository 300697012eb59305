// The persistent L2ARC index codecs (see l2arc_log.h).
#include "cache/l2arc_log.h"

#include <algorithm>

#include "zfs/util/endian.h"

namespace uzfs {

namespace {

void PutCksum(uint8_t* p, const Checksum256& c) {
  for (int i = 0; i < 4; i++) StoreLE64(p + 8 * i, c.word[i]);
}
Checksum256 GetCksum(const uint8_t* p) {
  Checksum256 c;
  for (int i = 0; i < 4; i++) c.word[i] = LoadLE64(p + 8 * i);
  return c;
}
void PutPtr(uint8_t* p, const L2LogPtr& ptr) {
  StoreLE64(p, ptr.daddr);
  StoreLE64(p + 8, ptr.asize);
  PutCksum(p + 16, ptr.cksum);
}
L2LogPtr GetPtr(const uint8_t* p) {
  L2LogPtr ptr;
  ptr.daddr = LoadLE64(p);
  ptr.asize = LoadLE64(p + 8);
  ptr.cksum = GetCksum(p + 16);
  return ptr;
}

constexpr uint64_t kHdrCksumOff = kL2DevHdrSize - 32;

}  // namespace

Checksum256 L2Fletcher4(std::span<const uint8_t> b) {
  Checksum256 c;
  Fletcher4Native(b.data(), b.size(), &c);
  return c;
}

std::vector<uint8_t> EncodeL2DevHeader(const L2DevHeader& h) {
  std::vector<uint8_t> b(kL2DevHdrSize, 0);
  uint8_t* p = b.data();
  StoreLE64(p + 0, kL2DevHdrMagic);
  StoreLE64(p + 8, kL2FormatVersion);
  StoreLE64(p + 16, h.pool_guid);
  StoreLE64(p + 24, h.dev_guid);
  StoreLE64(p + 32, h.start);
  StoreLE64(p + 40, h.end);
  StoreLE64(p + 48, h.hand);
  StoreLE64(p + 56, h.wrapped ? 1 : 0);
  PutPtr(p + 64, h.newest);  // 48 bytes
  StoreLE64(p + 112, h.log_blk_count);
  StoreLE64(p + 120, h.log_blk_asize);
  PutCksum(p + kHdrCksumOff, L2Fletcher4(std::span<const uint8_t>(b).first(kHdrCksumOff)));
  return b;
}

Result<L2DevHeader> DecodeL2DevHeader(std::span<const uint8_t> b) {
  if (b.size() < kL2DevHdrSize) return Status::InvalidArgument("short L2ARC device header");
  const uint8_t* p = b.data();
  if (LoadLE64(p) != kL2DevHdrMagic) return Status::NotFound("no L2ARC device header");
  if (!(L2Fletcher4(b.first(kHdrCksumOff)) == GetCksum(p + kHdrCksumOff))) {
    return Status::Corruption("L2ARC device header checksum mismatch");
  }
  if (LoadLE64(p + 8) != kL2FormatVersion) return Status::Corruption("unknown L2ARC device header version");
  L2DevHeader h;
  h.pool_guid = LoadLE64(p + 16);
  h.dev_guid = LoadLE64(p + 24);
  h.start = LoadLE64(p + 32);
  h.end = LoadLE64(p + 40);
  h.hand = LoadLE64(p + 48);
  h.wrapped = (LoadLE64(p + 56) & 1) != 0;
  h.newest = GetPtr(p + 64);
  h.log_blk_count = LoadLE64(p + 112);
  h.log_blk_asize = LoadLE64(p + 120);
  if (h.start > h.end || h.hand < h.start || h.hand > h.end) {
    return Status::Corruption("L2ARC device header ring out of range");
  }
  return h;
}

std::vector<uint8_t> EncodeL2LogBlock(const L2LogBlock& lb) {
  std::vector<uint8_t> b(L2LogBlockAsize(lb.entries.size()), 0);
  uint8_t* p = b.data();
  StoreLE64(p + 0, kL2LogBlkMagic);
  StoreLE64(p + 8, kL2FormatVersion);
  PutPtr(p + 16, lb.prev);  // 48 bytes
  StoreLE64(p + 64, lb.batch_start);
  StoreLE64(p + 72, lb.batch_end);
  StoreLE64(p + 80, lb.entries.size());
  StoreLE64(p + 88, lb.pool_guid);
  uint8_t* e = p + kL2LogHeaderBytes;
  for (const L2LogEntry& le : lb.entries) {
    StoreLE64(e + 0, le.vdev);
    StoreLE64(e + 8, le.offset);
    StoreLE64(e + 16, le.birth);
    StoreLE64(e + 24, le.daddr);
    StoreLE64(e + 32, le.size);
    StoreLE64(e + 40, le.lsize);
    const uint64_t prop = static_cast<uint64_t>(le.compression) |
                          (le.kind == ArcBufKind::kMetadata ? 1ull << 8 : 0) | (le.prefetch ? 1ull << 9 : 0);
    StoreLE64(e + 48, prop);
    PutCksum(e + 64, le.cksum);
    e += kL2LogEntryBytes;
  }
  return b;
}

Result<L2LogBlock> DecodeL2LogBlock(std::span<const uint8_t> b, const L2LogPtr& ptr) {
  if (b.size() != ptr.asize || b.size() < kL2LogHeaderBytes) return Status::Corruption("L2ARC log block size");
  if (!(L2Fletcher4(b) == ptr.cksum)) return Status::Corruption("L2ARC log block checksum mismatch");
  const uint8_t* p = b.data();
  if (LoadLE64(p) != kL2LogBlkMagic || LoadLE64(p + 8) != kL2FormatVersion) {
    return Status::Corruption("not an L2ARC log block");
  }
  L2LogBlock lb;
  lb.prev = GetPtr(p + 16);
  lb.batch_start = LoadLE64(p + 64);
  lb.batch_end = LoadLE64(p + 72);
  const uint64_t n = LoadLE64(p + 80);
  lb.pool_guid = LoadLE64(p + 88);
  if (n > kL2LogMaxEntries || L2LogBlockAsize(n) != b.size()) return Status::Corruption("L2ARC log block entry count");
  lb.entries.resize(n);
  const uint8_t* e = p + kL2LogHeaderBytes;
  for (L2LogEntry& le : lb.entries) {
    le.vdev = LoadLE64(e + 0);
    le.offset = LoadLE64(e + 8);
    le.birth = LoadLE64(e + 16);
    le.daddr = LoadLE64(e + 24);
    le.size = LoadLE64(e + 32);
    le.lsize = LoadLE64(e + 40);
    const uint64_t prop = LoadLE64(e + 48);
    le.compression = static_cast<CompressType>(prop & 0xff);
    le.kind = (prop >> 8) & 1 ? ArcBufKind::kMetadata : ArcBufKind::kData;
    le.prefetch = ((prop >> 9) & 1) != 0;
    le.cksum = GetCksum(e + 64);
    e += kL2LogEntryBytes;
  }
  return lb;
}

void L2Coverage::Add(uint64_t begin, uint64_t end) {
  if (begin >= end) return;
  auto it = iv_.upper_bound(begin);
  if (it != iv_.begin()) {
    auto prev = std::prev(it);
    if (prev->second >= begin) {
      begin = prev->first;
      end = std::max(end, prev->second);
      total_ -= prev->second - prev->first;
      it = iv_.erase(prev);
    }
  }
  while (it != iv_.end() && it->first <= end) {
    end = std::max(end, it->second);
    total_ -= it->second - it->first;
    it = iv_.erase(it);
  }
  iv_.emplace(begin, end);
  total_ += end - begin;
}

bool L2Coverage::Overlaps(uint64_t begin, uint64_t end) const {
  if (begin >= end) return false;
  auto it = iv_.upper_bound(begin);
  if (it != iv_.begin() && std::prev(it)->second > begin) return true;
  return it != iv_.end() && it->first < end;
}

}  // namespace uzfs
