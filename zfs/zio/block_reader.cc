// ZioBlockReader (see block_reader.h).
#include "zfs/zio/block_reader.h"

#include <cstring>
#include <string>
#include <vector>

namespace uzfs {

Status CheckBlockRange(const BlockPtr& bp, uint64_t offset, uint64_t n) {
  if (offset > bp.lsize || n > bp.lsize - offset)
    return Status::InvalidArgument("range " + std::to_string(offset) + "+" + std::to_string(n) +
                                   " outside a block of " + std::to_string(bp.lsize) + " bytes");
  return Status::Ok();
}

Status ZioBlockReader::ReadRange(const BlockPtr& bp, uint64_t offset, std::span<uint8_t> out,
                                 const BlockReadOptions&) {
  UZFS_RETURN_IF_ERROR(CheckBlockRange(bp, offset, out.size()));
  if (offset == 0 && out.size() == bp.lsize) return zio_.Read(bp, out);
  std::vector<uint8_t> blk(bp.lsize);
  UZFS_RETURN_IF_ERROR(zio_.Read(bp, blk));
  std::memcpy(out.data(), blk.data() + offset, out.size());
  return Status::Ok();
}

void ZioBlockReader::ReadRangeAsync(const BlockPtr& bp, uint64_t offset, std::span<uint8_t> out,
                                    const BlockReadOptions& opts, std::function<void(Status)> done) {
  zio_.Submit([this, bp, offset, out, opts, done = std::move(done)] {
    done(ReadRange(bp, offset, out, opts));
  });
}

}  // namespace uzfs
