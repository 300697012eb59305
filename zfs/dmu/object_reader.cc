// Walking an object's block tree (see object_reader.h for the addressing).
#include "zfs/dmu/object_reader.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "zfs/dmu/dmu_types.h"
#include "zfs/util/mutex.h"

namespace uzfs {

Status ObjectReader::ReadChecked(const BlockPtr& bp, int level, uint64_t lsize,
                                 std::vector<uint8_t>* out) {
  if (bp.level != level)
    return Status::Corruption("block pointer says level " + std::to_string(bp.level) +
                              ", expected " + std::to_string(level));
  if (bp.lsize != lsize)
    return Status::Corruption("block pointer lsize " + std::to_string(bp.lsize) +
                              ", expected " + std::to_string(lsize));
  out->resize(lsize);
  return reader_->Read(bp, *out, opts_);
}

Result<BlockPtr> LookupBlockPtr(BlockReader& reader, const BlockReadOptions& opts, const Dnode& dn,
                                int level, uint64_t blkid) {
  const uint32_t epbs = dn.indblkshift - kBlkPtrShift;
  const int top = dn.nlevels - 1;
  const uint32_t top_shift = epbs * static_cast<uint32_t>(top - level);
  const uint64_t top_idx = top_shift >= 64 ? 0 : blkid >> top_shift;
  if (top_shift < 64 && top_idx >= dn.nblkptr) return BlockPtr{};
  BlockPtr bp = dn.blkptr[top_idx];
  const uint64_t ind_size = dn.IndirectBlockSize();
  uint8_t raw[kBlockPtrSize];
  for (int l = top; l > level; l--) {
    if (bp.IsHole()) return BlockPtr{};
    if (bp.embedded) return Status::Corruption("embedded block pointer above level 0");
    if (bp.level != l || bp.lsize != ind_size)
      return Status::Corruption("indirect pointer level " + std::to_string(bp.level) + " size " +
                                std::to_string(bp.lsize) + ", expected level " + std::to_string(l) +
                                " size " + std::to_string(ind_size));
    const uint32_t shift = epbs * static_cast<uint32_t>(l - 1 - level);
    const uint64_t idx = (shift >= 64 ? 0 : blkid >> shift) & ((1ull << epbs) - 1);
    UZFS_RETURN_IF_ERROR(reader.ReadRange(bp, idx * kBlockPtrSize, raw, opts));
    bp = DecodeBlockPtr(std::span<const uint8_t, kBlockPtrSize>(raw), !bp.little_endian);
    if (bp.IsHole()) bp = BlockPtr{};
  }
  return bp;
}

Status ReadBlockRanges(BlockReader& reader, const BlockReadOptions& opts, uint64_t lsize,
                       std::span<const BlockRangeRead> reads) {
  Mutex mu;
  CondVar cv;
  size_t left = 0;
  Status first = Status::Ok();
  // The first block is read on the calling thread: a read of one block (the
  // common case) never waits in the worker queue (behind prefetches) and
  // costs no hand-off; the others go to the workers meanwhile.
  const BlockRangeRead* inline_read = nullptr;
  for (const BlockRangeRead& r : reads) {
    if (r.bp.IsHole()) {
      std::memset(r.out.data(), 0, r.out.size());
      continue;
    }
    if (r.bp.level != 0 || r.bp.lsize != lsize) {
      MutexLock l(&mu);
      first = Status::Corruption("data pointer level " + std::to_string(r.bp.level) + " size " +
                                 std::to_string(r.bp.lsize) + ", expected level 0 size " +
                                 std::to_string(lsize));
      break;
    }
    if (inline_read == nullptr) {
      inline_read = &r;
      continue;
    }
    {
      MutexLock l(&mu);
      left++;
    }
    reader.ReadRangeAsync(r.bp, r.offset, r.out, opts, [&](Status s) {
      MutexLock l(&mu);
      if (!s.ok() && first.ok()) first = s;
      if (--left == 0) cv.SignalAll();
    });
  }
  Status own = Status::Ok();
  if (inline_read != nullptr) own = reader.ReadRange(inline_read->bp, inline_read->offset, inline_read->out, opts);
  MutexLock l(&mu);
  while (left > 0) cv.Wait(&mu);
  return first.ok() ? own : first;
}

Result<Objset> ObjectReader::ReadObjset(const BlockPtr& bp) {
  if (bp.IsHole()) return Status::Corruption("objset block pointer is a hole");
  if (bp.type != dmu_ot::kObjset)
    return Status::Corruption("objset block pointer has type " + DmuTypeName(bp.type));
  if (bp.lsize != kObjsetPhysSizeV1 && bp.lsize != kObjsetPhysSizeV2 && bp.lsize != kObjsetPhysSizeV3)
    return Status::Corruption("objset block of " + std::to_string(bp.lsize) + " bytes");
  std::vector<uint8_t> raw;
  UZFS_RETURN_IF_ERROR(ReadChecked(bp, 0, bp.lsize, &raw));
  return DecodeObjset(raw, !bp.little_endian);
}

Result<std::vector<uint8_t>> ObjectReader::ReadSpill(const Dnode& dn) {
  std::vector<uint8_t> out;
  if (dn.IsFree() || !dn.spill || dn.spill->IsHole()) return out;
  const uint64_t lsize = dn.spill->lsize;
  if (lsize < kSpillMinSize || lsize > kSpillMaxSize || lsize % kSpillMinSize != 0)
    return Status::Corruption("spill block of " + std::to_string(lsize) + " bytes");
  UZFS_RETURN_IF_ERROR(ReadChecked(*dn.spill, 0, lsize, &out));
  return out;
}

Result<BlockPtr> ObjectReader::BlockPointerAt(const Dnode& dn, int level, uint64_t blkid) {
  UZFS_RETURN_IF_ERROR(ValidateDnode(dn));
  if (dn.IsFree()) return Status::InvalidArgument("reading a free dnode");
  if (level < 0 || level >= dn.nlevels) return Status::InvalidArgument("level outside the tree");
  return LookupBlockPtr(*reader_, opts_, dn, level, blkid);
}

Result<std::vector<uint8_t>> ObjectReader::ReadBlock(const Dnode& dn, int level, uint64_t blkid) {
  UZFS_ASSIGN_OR_RETURN(BlockPtr bp, BlockPointerAt(dn, level, blkid));
  const uint64_t size = level == 0 ? dn.DataBlockSize() : dn.IndirectBlockSize();
  std::vector<uint8_t> out;
  if (bp.IsHole()) {
    out.assign(size, 0);
    return out;
  }
  UZFS_RETURN_IF_ERROR(ReadChecked(bp, level, size, &out));
  return out;
}

Status ObjectReader::Read(const Dnode& dn, uint64_t offset, std::span<uint8_t> out) {
  if (out.empty()) return Status::Ok();
  if (offset + out.size() < offset) return Status::InvalidArgument("read range overflows");
  UZFS_RETURN_IF_ERROR(ValidateDnode(dn));
  if (dn.IsFree()) return Status::InvalidArgument("reading a free dnode");
  const uint64_t bsize = dn.DataBlockSize();
  size_t done = 0;
  while (done < out.size()) {
    const uint64_t pos = offset + done;
    const uint64_t blkid = pos / bsize;
    const uint64_t in_blk = pos % bsize;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(bsize - in_blk, out.size() - done));
    if (blkid > dn.maxblkid) {
      std::memset(out.data() + done, 0, out.size() - done);
      break;
    }
    UZFS_ASSIGN_OR_RETURN(BlockPtr bp, LookupBlockPtr(*reader_, opts_, dn, 0, blkid));
    const std::span<uint8_t> dst = out.subspan(done, n);
    if (bp.IsHole()) {
      std::memset(dst.data(), 0, n);
    } else {
      if (bp.level != 0 || bp.lsize != bsize)
        return Status::Corruption("data pointer level " + std::to_string(bp.level) + " size " +
                                  std::to_string(bp.lsize) + ", expected level 0 size " +
                                  std::to_string(bsize));
      UZFS_RETURN_IF_ERROR(reader_->ReadRange(bp, in_blk, dst, opts_));
    }
    done += n;
  }
  return Status::Ok();
}

Result<Dnode> ObjectReader::ReadDnode(const Dnode& meta, uint64_t object) {
  if (meta.type != dmu_ot::kDnode) return Status::InvalidArgument("not a meta-dnode");
  UZFS_RETURN_IF_ERROR(ValidateDnode(meta));
  const uint64_t bsize = meta.DataBlockSize();
  if (bsize % kDnodeSlotSize != 0) return Status::Corruption("meta-dnode block size not a multiple of 512");
  const uint64_t per_block = bsize / kDnodeSlotSize;
  const uint64_t blkid = object / per_block;
  if (object > (UINT64_MAX >> kDnodeShift) || blkid > meta.maxblkid)
    return Status::NotFound("object " + std::to_string(object) + " past the end of the object set");
  UZFS_ASSIGN_OR_RETURN(BlockPtr bp, BlockPointerAt(meta, 0, blkid));
  if (bp.IsHole()) return Status::NotFound("object " + std::to_string(object) + " lies in a hole");
  std::vector<uint8_t> blk;
  UZFS_RETURN_IF_ERROR(ReadChecked(bp, 0, bsize, &blk));
  const size_t off = static_cast<size_t>((object % per_block) * kDnodeSlotSize);
  auto dn = DecodeDnode(std::span<const uint8_t>(blk).subspan(off), !bp.little_endian);
  if (!dn.ok()) return dn.status().WithContext("object " + std::to_string(object));
  Status s = ValidateDnode(*dn);
  if (!s.ok()) return s.WithContext("object " + std::to_string(object));
  return dn;
}

}  // namespace uzfs
