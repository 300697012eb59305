// The ZIO pipeline; see zio.h for the stages and promises.
#include "zfs/zio/zio.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "zfs/zio/gang.h"

namespace uzfs {
namespace {

constexpr uint8_t kCompressOff = static_cast<uint8_t>(CompressType::kOff);

bool IsUncompressed(uint8_t comp) {
  return comp == kCompressOff || comp == static_cast<uint8_t>(CompressType::kInherit);
}

}  // namespace

Zio::Zio(BlockTarget& target, BlockAllocator& allocator, const ZioOptions& opts)
    : target_(target),
      alloc_(allocator),
      opts_(opts),
      pool_(opts.threads ? opts.threads : 4 * std::max(1u, std::thread::hardware_concurrency())) {}

Zio::~Zio() { pool_.Shutdown(); }

BlockPtrLimits Zio::Limits() const {
  BlockPtrLimits l;
  for (uint32_t v = 0; v < target_.TopLevelCount(); v++) l.vdev_asize.push_back(target_.TopLevelAsize(v));
  return l;
}

bool Zio::Verifies(const BlockPtr& bp, std::span<const uint8_t> phys) const {
  if (bp.checksum == static_cast<uint8_t>(ChecksumType::kOff)) return true;
  auto ck = BlockChecksum(static_cast<ChecksumType>(bp.checksum), phys, !bp.little_endian);
  return ck.ok() && *ck == bp.cksum;
}

// ---------------------------------------------------------------- write

Result<BlockPtr> Zio::Write(std::span<const uint8_t> data, const WriteProps& props, uint64_t txg) {
  if (data.empty() || data.size() % 512 != 0 || data.size() > kMaxBlockSize)
    return Status::InvalidArgument("a block is 512 bytes to 16 MiB, in multiples of 512");
  if (props.copies < 1 || props.copies > 3)
    return Status::InvalidArgument("copies must be 1, 2 or 3");
  BlockPtr bp;
  bp.lsize = data.size();
  bp.type = props.type;
  bp.level = props.level;
  bp.birth = txg;

  std::vector<uint8_t> cbuf(data.size());
  UZFS_ASSIGN_OR_RETURN(CompressedBlock cb, CompressBlock(props.compress, props.zstd_level, data,
                                                          cbuf, opts_.psize_round));
  std::span<const uint8_t> phys;
  switch (cb.kind) {
    case CompressedBlock::Kind::kAllZero:
      // A hole: no space, no checksum; reads return zeros.
      bp.psize = 512;
      stats_.holes_written++;
      return bp;
    case CompressedBlock::Kind::kNotWorthIt:
      bp.compression = kCompressOff;
      phys = data;
      break;
    case CompressedBlock::Kind::kCompressed:
      bp.compression = static_cast<uint8_t>(props.compress);
      phys = std::span<const uint8_t>(cbuf).first(cb.psize);
      break;
  }
  bp.checksum = static_cast<uint8_t>(props.checksum);
  bp.fill = props.fill;
  UZFS_ASSIGN_OR_RETURN(bp.cksum, BlockChecksum(props.checksum, phys, false));
  UZFS_RETURN_IF_ERROR(WritePhysical(phys, props.copies, txg, &bp));
  stats_.blocks_written++;
  stats_.logical_written += bp.lsize;
  stats_.physical_written += bp.psize;
  return bp;
}

Status Zio::WritePhysical(std::span<const uint8_t> phys, int copies, uint64_t txg, BlockPtr* bp) {
  auto dvas = alloc_.Allocate(phys.size(), copies, txg);
  if (!dvas.ok()) {
    if (dvas.status().IsNoSpace() && phys.size() > 512) return WriteGang(phys, copies, txg, bp);
    return dvas.status();
  }
  for (size_t i = 0; i < dvas->size(); i++) {
    const Dva& d = (*dvas)[i];
    Status s = target_.Write(d.vdev, d.offset, phys);
    if (!s.ok()) {
      for (const Dva& undo : *dvas) alloc_.Unallocate(undo, txg).IgnoreError();
      return s.WithContext("writing DVA " + std::to_string(i));
    }
  }
  for (size_t i = 0; i < 3; i++) bp->dva[i] = i < dvas->size() ? (*dvas)[i] : Dva{};
  bp->psize = phys.size();
  return Status::Ok();
}

Status Zio::WriteGang(std::span<const uint8_t> phys, int copies, uint64_t txg, BlockPtr* bp) {
  UZFS_ASSIGN_OR_RETURN(std::vector<Dva> hdr, alloc_.Allocate(kGangHeaderSize, copies, txg));
  GangHeader h;
  std::vector<BlockPtr> written;
  auto undo = [&] {
    for (const BlockPtr& m : written) Unallocate(m, txg).IgnoreError();
    for (const Dva& d : hdr) alloc_.Unallocate(d, txg).IgnoreError();
  };
  uint64_t off = 0;
  for (int m = 0; m < kGangMembers && off < phys.size(); m++) {
    const uint64_t piece = GangPieceSize(phys.size() - off, kGangMembers - m);
    BlockPtr mbp;
    mbp.lsize = piece;
    mbp.compression = kCompressOff;
    mbp.checksum = bp->checksum;
    mbp.type = bp->type;
    mbp.level = bp->level;
    mbp.birth = bp->birth;
    mbp.fill = bp->fill;
    auto part = phys.subspan(off, piece);
    auto ck = BlockChecksum(static_cast<ChecksumType>(bp->checksum), part, false);
    if (!ck.ok()) {
      undo();
      return ck.status();
    }
    mbp.cksum = *ck;
    if (Status s = WritePhysical(part, copies, txg, &mbp); !s.ok()) {
      undo();
      return s.WithContext("gang member");
    }
    written.push_back(mbp);
    h.members[m] = mbp;
    off += piece;
  }
  if (off != phys.size()) {  // cannot happen: three pieces always cover the block
    undo();
    return Status::InvalidArgument("gang split did not cover the block");
  }
  for (size_t i = 0; i < 3; i++) {
    if (i >= hdr.size()) {
      bp->dva[i] = Dva{};
      continue;
    }
    Dva d = hdr[i];
    d.gang = true;
    for (const BlockPtr& m : written) d.asize += m.dva[i].asize;
    bp->dva[i] = d;
  }
  bp->psize = phys.size();
  uint8_t raw[kGangHeaderSize];
  EncodeGangHeader(h, *bp, std::span<uint8_t, kGangHeaderSize>(raw));
  for (const Dva& d : hdr) {
    if (Status s = target_.Write(d.vdev, d.offset, raw); !s.ok()) {
      undo();
      return s.WithContext("gang header");
    }
  }
  stats_.gang_blocks++;
  return Status::Ok();
}

// ----------------------------------------------------------------- read

Status Zio::ReadCopy(const BlockPtr& bp, int d, std::span<uint8_t> phys, bool scrub) {
  const Dva& dva = bp.dva[d];
  if (dva.gang) return ReadGangCopy(bp, d, phys, scrub);
  return target_.Read(
      dva.vdev, dva.offset, phys, [&](std::span<const uint8_t> b) { return Verifies(bp, b); },
      scrub);
}

Status Zio::ReadGangCopy(const BlockPtr& bp, int d, std::span<uint8_t> phys, bool scrub) {
  const Dva& dva = bp.dva[d];
  uint8_t raw[kGangHeaderSize];
  UZFS_RETURN_IF_ERROR(target_.Read(
      dva.vdev, dva.offset, raw,
      [&](std::span<const uint8_t> b) {
        return DecodeGangHeader(
                   std::span<const uint8_t, kGangHeaderSize>(b.data(), kGangHeaderSize), bp)
            .ok();
      },
      scrub));
  UZFS_ASSIGN_OR_RETURN(GangHeader h,
                        DecodeGangHeader(std::span<const uint8_t, kGangHeaderSize>(raw), bp));
  const BlockPtrLimits limits = Limits();
  uint64_t off = 0;
  for (const BlockPtr& m : h.members) {
    if (m.IsHole()) continue;
    UZFS_RETURN_IF_ERROR(ValidateBlockPtr(m, limits).WithContext("gang member"));
    if (m.embedded || off + m.psize > phys.size())
      return Status::Corruption("gang member does not fit its gang block");
    auto part = phys.subspan(off, m.psize);
    Status last = Status::Corruption("gang member has no copies");
    bool ok = false;
    for (int md = 0; md < 3 && !ok; md++) {
      const int which = (d + md) % 3;  // this copy's member first
      if (m.dva[which].asize == 0) continue;
      last = ReadCopy(m, which, part, scrub);
      ok = last.ok();
    }
    if (!ok) return last;
    off += m.psize;
  }
  if (off != phys.size() || !Verifies(bp, phys))
    return Status::Corruption("gang block fails its checksum");
  return Status::Ok();
}

Status Zio::Read(const BlockPtr& bp, std::span<uint8_t> out) {
  if (out.size() != bp.lsize) return Status::InvalidArgument("read buffer is not lsize bytes");
  UZFS_RETURN_IF_ERROR(ValidateBlockPtr(bp, Limits()));
  stats_.blocks_read++;
  stats_.logical_read += bp.lsize;
  if (bp.embedded) {
    auto payload = std::span<const uint8_t>(bp.payload).first(bp.psize);
    if (IsUncompressed(bp.compression)) {
      if (bp.psize != bp.lsize) return Status::Corruption("embedded block size mismatch");
      std::memcpy(out.data(), payload.data(), bp.psize);
      return Status::Ok();
    }
    return Decompress(static_cast<CompressType>(bp.compression), payload, out);
  }
  if (bp.IsHole()) {
    std::fill(out.begin(), out.end(), 0);
    return Status::Ok();
  }
  std::vector<uint8_t> phys(bp.psize);
  std::vector<int> failed;
  Status last;
  bool good = false;
  for (int d = 0; d < 3 && !good; d++) {
    if (bp.dva[d].asize == 0) continue;
    last = ReadCopy(bp, d, phys);
    if (last.ok()) {
      good = true;
    } else {
      failed.push_back(d);
      stats_.copies_failed++;
    }
  }
  if (!good) return last.WithContext("no copy of the block could be read");
  // Self-healing: a copy that failed while another verified gets the good
  // bytes back (gang copies heal through their members' own reads).
  if (opts_.writable) {
    for (int d : failed) {
      if (bp.dva[d].gang) continue;
      if (target_.Write(bp.dva[d].vdev, bp.dva[d].offset, phys).ok()) stats_.self_heals++;
    }
  }
  if (IsUncompressed(bp.compression)) {
    if (bp.psize != bp.lsize) return Status::Corruption("uncompressed block with psize != lsize");
    std::memcpy(out.data(), phys.data(), bp.lsize);
    return Status::Ok();
  }
  return Decompress(static_cast<CompressType>(bp.compression), phys, out);
}

Status Zio::Scrub(const BlockPtr& bp, ScrubResult* result) {
  ScrubResult local;
  ScrubResult& r = result ? *result : local;
  UZFS_RETURN_IF_ERROR(ValidateBlockPtr(bp, Limits()));
  if (bp.embedded || bp.IsHole()) return Status::Ok();
  stats_.blocks_scrubbed++;
  std::vector<uint8_t> phys(bp.psize), good;
  std::vector<int> bad;
  Status last;
  for (int d = 0; d < 3; d++) {
    if (bp.dva[d].asize == 0) continue;
    r.copies_checked++;
    last = ReadCopy(bp, d, phys, /*scrub=*/true);
    if (last.ok()) {
      if (good.empty()) good = phys;
    } else {
      bad.push_back(d);
      stats_.copies_failed++;
    }
  }
  if (good.empty()) return last.WithContext("scrub: no copy of the block verifies");
  if (opts_.writable) {
    for (int d : bad) {
      if (bp.dva[d].gang) continue;
      if (target_.Write(bp.dva[d].vdev, bp.dva[d].offset, good).ok()) {
        stats_.self_heals++;
        r.copies_repaired++;
      }
    }
  }
  return Status::Ok();
}

// ----------------------------------------------------------------- free

Status Zio::FreeCopy(const BlockPtr& bp, int d, uint64_t txg, bool now) {
  Dva dva = bp.dva[d];
  auto give_back = [&](const Dva& x) { return now ? alloc_.Unallocate(x, txg) : alloc_.Free(x, txg); };
  if (!dva.gang) return give_back(dva);
  uint8_t raw[kGangHeaderSize];
  // Any copy of the header will do: they are identical.
  Status s = Status::Corruption("no gang header copy verifies");
  for (int hd = 0; hd < 3 && !s.ok(); hd++) {
    const Dva& h = bp.dva[(d + hd) % 3];
    if (h.asize == 0) continue;
    s = target_.Read(h.vdev, h.offset, raw, [&](std::span<const uint8_t> b) {
      return DecodeGangHeader(std::span<const uint8_t, kGangHeaderSize>(b.data(), kGangHeaderSize),
                              bp)
          .ok();
    });
  }
  UZFS_RETURN_IF_ERROR(s.WithContext("freeing a gang block"));
  UZFS_ASSIGN_OR_RETURN(GangHeader h,
                        DecodeGangHeader(std::span<const uint8_t, kGangHeaderSize>(raw), bp));
  for (const BlockPtr& m : h.members) {
    if (m.IsHole() || m.dva[d].asize == 0) continue;
    UZFS_RETURN_IF_ERROR(FreeCopy(m, d, txg, now));
    dva.asize -= std::min(dva.asize, m.dva[d].asize);
  }
  dva.gang = false;
  return give_back(dva);  // what is left is the header itself
}

Status Zio::FreeBlock(const BlockPtr& bp, uint64_t txg, bool now) {
  if (bp.embedded || bp.IsHole()) return Status::Ok();
  UZFS_RETURN_IF_ERROR(ValidateBlockPtr(bp, Limits()));
  for (int d = 0; d < 3; d++) {
    if (bp.dva[d].asize == 0) continue;
    UZFS_RETURN_IF_ERROR(FreeCopy(bp, d, txg, now));
  }
  return Status::Ok();
}

Status Zio::Free(const BlockPtr& bp, uint64_t txg) { return FreeBlock(bp, txg, false); }
Status Zio::Unallocate(const BlockPtr& bp, uint64_t txg) { return FreeBlock(bp, txg, true); }

// ---------------------------------------------------------------- async

void Zio::WriteAsync(std::span<const uint8_t> data, const WriteProps& props, uint64_t txg,
                     std::function<void(Result<BlockPtr>)> done) {
  pool_.Submit([this, data, props, txg, done = std::move(done)] { done(Write(data, props, txg)); });
}

void Zio::ReadAsync(const BlockPtr& bp, std::span<uint8_t> out, std::function<void(Status)> done) {
  pool_.Submit([this, bp, out, done = std::move(done)] { done(Read(bp, out)); });
}

}  // namespace uzfs
