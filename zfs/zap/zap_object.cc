// MemZapObject and ZapObjectSource (contracts in zap_object.h).
#include "zfs/zap/zap_object.h"

#include <algorithm>
#include <string>

namespace uzfs {

MemZapObject::MemZapObject(std::span<const uint8_t> bytes, uint64_t block_size)
    : bsize_(block_size), zeros_(block_size, 0) {
  for (size_t off = 0; off + bsize_ <= bytes.size(); off += bsize_)
    blocks_.emplace_back(bytes.begin() + static_cast<ptrdiff_t>(off),
                         bytes.begin() + static_cast<ptrdiff_t>(off + bsize_));
}

Result<std::span<const uint8_t>> MemZapObject::Block(uint64_t blkid) {
  requests_++;
  if (blkid >= blocks_.size())
    return Status::Corruption("ZAP block " + std::to_string(blkid) + " past the end");
  const std::vector<uint8_t>& b = blocks_[blkid];
  return std::span<const uint8_t>(b.empty() ? zeros_ : b);
}

Result<std::span<uint8_t>> MemZapObject::MutableBlock(uint64_t blkid) {
  requests_++;
  if (blkid >= (uint64_t{1} << 40)) return Status::InvalidArgument("ZAP block id too large");
  if (blkid >= blocks_.size()) blocks_.resize(blkid + 1);
  std::vector<uint8_t>& b = blocks_[blkid];
  if (b.empty()) b.assign(bsize_, 0);
  return std::span<uint8_t>(b);
}

Status MemZapObject::SetBlockSize(uint64_t bytes) {
  if (blocks_.size() > 1) return Status::InvalidArgument("block size change of a multi-block object");
  if (bytes < 512 || bytes % 512 != 0 || bytes > (uint64_t{16} << 20))
    return Status::InvalidArgument("block size " + std::to_string(bytes));
  bsize_ = bytes;
  zeros_.assign(bytes, 0);
  if (!blocks_.empty() && !blocks_[0].empty()) blocks_[0].resize(bytes, 0);
  return Status::Ok();
}

Status MemZapObject::FreeBlocks(uint64_t first, uint64_t n) {
  for (uint64_t b = first; b < first + n && b < blocks_.size(); b++) std::vector<uint8_t>().swap(blocks_[b]);
  return Status::Ok();
}

std::vector<uint8_t> MemZapObject::Bytes() const {
  std::vector<uint8_t> out;
  out.reserve(blocks_.size() * bsize_);
  for (const auto& b : blocks_) out.insert(out.end(), (b.empty() ? zeros_ : b).begin(), (b.empty() ? zeros_ : b).end());
  return out;
}

uint64_t MemZapObject::AllocatedBlocks() const {
  return static_cast<uint64_t>(std::count_if(blocks_.begin(), blocks_.end(), [](const auto& b) { return !b.empty(); }));
}

Status ZapObjectSource::ReadBlock(uint64_t blkid, std::vector<uint8_t>* out) {
  UZFS_ASSIGN_OR_RETURN(std::span<const uint8_t> b, obj_.Block(blkid));
  out->assign(b.begin(), b.end());
  obj_.EndOperation();
  return Status::Ok();
}

}  // namespace uzfs
