// The ZIO pipeline; see zio.h for the stages and promises.
#include "zfs/zio/zio.h"

#include <algorithm>
#include <array>
#include <optional>
#include <cstring>
#include <map>
#include <vector>

#include "zfs/util/probes.h"
#include "zfs/util/zassert.h"
#include "zfs/vdev/vdev.h"
#include "zfs/zio/gang.h"

namespace uzfs {
namespace {

constexpr uint8_t kCompressOff = static_cast<uint8_t>(CompressType::kOff);

bool IsUncompressed(uint8_t comp) {
  return comp == kCompressOff || comp == static_cast<uint8_t>(CompressType::kInherit);
}

}  // namespace

bool IsRewriteOf(const BlockPtr& bp, const BlockPtr& candidate) {
  if (bp.IsHole() || bp.embedded || candidate.IsHole() || candidate.embedded) return false;
  return bp.dva[0].vdev == candidate.dva[0].vdev && bp.dva[0].offset == candidate.dva[0].offset &&
         !bp.dva[0].gang && !candidate.dva[0].gang;
}

bool Zio::CanRewrite(const BlockPtr& c, uint64_t psize, int copies, uint64_t txg) {
  if (c.IsHole() || c.embedded || c.birth != txg || c.psize != psize) return false;
  if (c.NumDvas() != copies) return false;
  for (const Dva& d : c.dva) {
    if (d.gang) return false;
  }
  return true;
}

Zio::Zio(BlockTarget& target, BlockAllocator& allocator, const ZioOptions& opts)
    : target_(target),
      alloc_(allocator),
      opts_(opts),
      pool_(opts.threads ? opts.threads : 4 * std::max(1u, std::thread::hardware_concurrency())) {}

Zio::~Zio() { pool_.Shutdown(); }

BlockPtrLimits Zio::Limits() const {
  BlockPtrLimits l;
  for (uint32_t v = 0; v < target_.TopLevelCount(); v++) l.vdev_asize.push_back(target_.TopLevelAsize(v));
  l.allocated_size = [this](uint32_t v, uint64_t psize) {
    return target_.TopLevelAllocatedSize(v, psize);
  };
  return l;
}

bool Zio::Verifies(const BlockPtr& bp, std::span<const uint8_t> phys) const {
  if (bp.checksum == static_cast<uint8_t>(ChecksumType::kOff)) return true;
  auto ck = BlockChecksum(static_cast<ChecksumType>(bp.checksum), phys, !bp.little_endian);
  return ck.ok() && *ck == bp.cksum;
}

// ---------------------------------------------------------------- write

Status Zio::Prepare(std::span<const uint8_t> data, const WriteProps& props, uint64_t txg,
                    Prepared* p) {
  if (data.empty() || data.size() % 512 != 0 || data.size() > kMaxBlockSize)
    return Status::InvalidArgument("a block is 512 bytes to 16 MiB, in multiples of 512");
  if (props.copies < 1 || props.copies > 3)
    return Status::InvalidArgument("copies must be 1, 2 or 3");
  BlockPtr& bp = p->bp;
  bp = BlockPtr{};
  bp.lsize = data.size();
  bp.type = props.type;
  bp.level = props.level;
  bp.birth = txg;

  // Aligned: compressed output goes to the disks from here (direct I/O).
  p->cbuf = AlignedBytes(data.size());
  UZFS_ASSIGN_OR_RETURN(CompressedBlock cb, CompressBlock(props.compress, props.zstd_level, data,
                                                          p->cbuf, opts_.psize_round));
  p->hole = false;
  switch (cb.kind) {
    case CompressedBlock::Kind::kAllZero:
      // A hole: no space, no checksum; reads return zeros.
      bp.psize = 512;
      stats_.holes_written++;
      p->hole = true;
      return Status::Ok();
    case CompressedBlock::Kind::kNotWorthIt:
      bp.compression = kCompressOff;
      p->phys = data;
      break;
    case CompressedBlock::Kind::kCompressed:
      bp.compression = static_cast<uint8_t>(props.compress);
      p->phys = std::span<const uint8_t>(p->cbuf).first(cb.psize);
      break;
  }
  bp.checksum = static_cast<uint8_t>(props.checksum);
  bp.fill = props.fill;
  UZFS_ASSIGN_OR_RETURN(bp.cksum, BlockChecksum(props.checksum, p->phys, false));
  return Status::Ok();
}

Status Zio::Place(Prepared* p, const WriteProps& props, uint64_t txg) {
  BlockPtr& bp = p->bp;
  const std::span<const uint8_t> phys = p->phys;
  if (CanRewrite(props.rewrite, phys.size(), props.copies, txg)) {
    // Over the candidate's copies: same DVAs, so the same asize each.
    for (int i = 0; i < 3; i++) {
      const Dva& d = props.rewrite.dva[i];
      if (d.asize == 0) continue;
      if (Status s = target_.Write(d.vdev, d.offset, phys); !s.ok())
        return s.WithContext("rewriting DVA " + std::to_string(i) + " in place");
    }
    for (int i = 0; i < 3; i++) bp.dva[i] = props.rewrite.dva[i];
    bp.psize = phys.size();
    stats_.blocks_rewritten++;
  } else {
    UZFS_RETURN_IF_ERROR(WritePhysical(phys, props.copies, txg, &bp));
  }
  stats_.blocks_written++;
  stats_.logical_written += bp.lsize;
  stats_.physical_written += bp.psize;
  return Status::Ok();
}

Result<BlockPtr> Zio::Write(std::span<const uint8_t> data, const WriteProps& props, uint64_t txg) {
  Prepared p;
  UZFS_RETURN_IF_ERROR(Prepare(data, props, txg, &p));
  if (!p.hole) UZFS_RETURN_IF_ERROR(Place(&p, props, txg));
  return p.bp;
}

uint64_t Zio::WriteBatchBytes() { return 4 * VdevAggregationLimit(); }

void Zio::WriteMany(std::span<BatchWrite> writes, uint64_t txg) {
  std::vector<Prepared> prep(writes.size());
  std::vector<size_t> batched;  // every block that is not a hole
  std::vector<bool> rewrite(writes.size(), false);
  std::vector<std::vector<Dva>> dvas(writes.size());
  for (size_t i = 0; i < writes.size(); i++) {
    BatchWrite& w = writes[i];
    w.status = Prepare(w.data, w.props, txg, &prep[i]);
    if (!w.status.ok() || prep[i].hole) {
      w.bp = prep[i].bp;
      continue;
    }
    batched.push_back(i);
    if (CanRewrite(w.props.rewrite, prep[i].phys.size(), w.props.copies, txg)) {
      // Over the candidate's copies: same DVAs, so the same asize each.
      rewrite[i] = true;
      for (const Dva& d : w.props.rewrite.dva) {
        if (d.asize != 0) dvas[i].push_back(d);
      }
    }
  }
  // New space back to back: one allocation after the other, under
  // batch_alloc_mu_.
  std::vector<size_t> alone;  // no contiguous run: Write's way (it gangs)
  struct Copy {
    size_t block;
    int d;
  };
  std::map<uint32_t, std::vector<Copy>> by_vdev;
  {
    MutexLock l(&batch_alloc_mu_);
    for (size_t i : batched) {
      if (!rewrite[i]) {
        auto d = alloc_.Allocate(prep[i].phys.size(), writes[i].props.copies, txg);
        if (!d.ok()) {
          alone.push_back(i);
          continue;
        }
        dvas[i] = std::move(d).value();
      }
      for (size_t k = 0; k < dvas[i].size(); k++) by_vdev[dvas[i][k].vdev].push_back(Copy{i, static_cast<int>(k)});
    }
  }
  // Every copy in one batch, so the top-level vdevs write at the same time
  // (BlockTarget::Submit); each vdev's copies in allocation order.
  std::vector<Status> failed(writes.size());
  std::vector<BlockIo> ios;
  std::vector<Copy> of;  // the copy each request writes
  for (auto& [vdev, copies] : by_vdev) {
    for (const Copy& c : copies) {
      ios.push_back(BlockIo::Write(vdev, dvas[c.block][c.d].offset, prep[c.block].phys));
      of.push_back(c);
    }
  }
  const uint64_t t0 = UZFS_PROBE_ENABLED(zio_done) ? probes::NowNs() : 0;
  target_.Submit(ios);
  for (size_t k = 0; k < ios.size(); k++) {
    if (of[k].d == 0) {
      const Dva& d = dvas[of[k].block][0];
      UZFS_PROBE(zio_done, "write", static_cast<uint64_t>(d.vdev), d.offset, static_cast<uint64_t>(ios[k].buf.size()),
                 probes::Since(t0), ErrnoOf(ios[k].status));
    }
    Status& f = failed[of[k].block];
    if (!ios[k].status.ok() && f.ok()) {
      f = ios[k].status.WithContext((rewrite[of[k].block] ? "rewriting DVA " : "writing DVA ") +
                                    std::to_string(of[k].d) + (rewrite[of[k].block] ? " in place" : ""));
    }
  }
  for (size_t i : batched) {
    if (dvas[i].empty()) continue;  // in `alone`
    BatchWrite& w = writes[i];
    BlockPtr& bp = prep[i].bp;
    if (!failed[i].ok()) {
      if (!rewrite[i]) {
        for (const Dva& undo : dvas[i]) alloc_.Unallocate(undo, txg).IgnoreError();
      }
      w.status = failed[i];
      continue;
    }
    if (rewrite[i]) {
      for (int k = 0; k < 3; k++) bp.dva[k] = w.props.rewrite.dva[k];
      stats_.blocks_rewritten++;
    } else {
      for (size_t k = 0; k < 3; k++) bp.dva[k] = k < dvas[i].size() ? dvas[i][k] : Dva{};
    }
    bp.psize = prep[i].phys.size();
    stats_.blocks_written++;
    stats_.logical_written += bp.lsize;
    stats_.physical_written += bp.psize;
    w.bp = bp;
    w.status = Status::Ok();
  }
  for (size_t i : alone) {
    writes[i].status = Place(&prep[i], writes[i].props, txg);
    writes[i].bp = prep[i].bp;
  }
}

Status Zio::WritePhysical(std::span<const uint8_t> phys, int copies, uint64_t txg, BlockPtr* bp) {
  auto dvas = alloc_.Allocate(phys.size(), copies, txg);
  if (!dvas.ok()) {
    if (dvas.status().IsNoSpace() && phys.size() > 512) return WriteGang(phys, copies, txg, bp);
    return dvas.status();
  }
  for (size_t i = 0; i < dvas->size(); i++) {
    const Dva& d = (*dvas)[i];
    const uint64_t t0 = UZFS_PROBE_ENABLED(zio_done) ? probes::NowNs() : 0;
    Status s = target_.Write(d.vdev, d.offset, phys);
    if (i == 0) {
      UZFS_PROBE(zio_done, "write", static_cast<uint64_t>(d.vdev), d.offset, static_cast<uint64_t>(phys.size()),
                 probes::Since(t0), ErrnoOf(s));
    }
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
  ZVERIFY(off == phys.size());  // three pieces always cover the block
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

namespace {
// Gang trees are at most ~10 levels deep for real data (each level divides
// by three, pieces are at least 512 bytes); a deeper one is hostile.
constexpr int kMaxGangDepth = 16;
}  // namespace

Status Zio::ReadCopy(const BlockPtr& bp, int d, std::span<uint8_t> phys, int depth, bool scrub,
                     std::array<uint8_t, kGangHeaderSize>* header) {
  const Dva& dva = bp.dva[d];
  if (dva.gang) return ReadGangCopy(bp, d, phys, depth, scrub, header);
  return target_.Read(
      dva.vdev, dva.offset, phys, [&](std::span<const uint8_t> b) { return Verifies(bp, b); },
      scrub);
}

Result<GangHeader> Zio::ReadGangHeader(const BlockPtr& bp, int d, bool scrub,
                                       std::array<uint8_t, kGangHeaderSize>* raw) {
  const Dva& dva = bp.dva[d];
  UZFS_RETURN_IF_ERROR(target_.Read(
      dva.vdev, dva.offset, *raw,
      [&](std::span<const uint8_t> b) {
        return DecodeGangHeader(
                   std::span<const uint8_t, kGangHeaderSize>(b.data(), kGangHeaderSize), bp)
            .ok();
      },
      scrub));
  UZFS_ASSIGN_OR_RETURN(GangHeader h,
                        DecodeGangHeader(std::span<const uint8_t, kGangHeaderSize>(*raw), bp));
  // Members must be real, smaller pieces of this block (no cycles).
  const BlockPtrLimits limits = Limits();
  for (const BlockPtr& m : h.members) {
    if (m.IsHole()) continue;
    UZFS_RETURN_IF_ERROR(ValidateBlockPtr(m, limits).WithContext("gang member"));
    if (m.embedded || m.psize >= bp.psize)
      return Status::Corruption("gang member is not a smaller piece of its gang block");
  }
  return h;
}

Status Zio::ReadGangCopy(const BlockPtr& bp, int d, std::span<uint8_t> phys, int depth,
                         bool scrub, std::array<uint8_t, kGangHeaderSize>* header) {
  if (depth >= kMaxGangDepth) return Status::Corruption("gang blocks nested too deep");
  std::array<uint8_t, kGangHeaderSize> raw;
  UZFS_ASSIGN_OR_RETURN(GangHeader h, ReadGangHeader(bp, d, scrub, &raw));
  uint64_t off = 0;
  for (const BlockPtr& m : h.members) {
    if (m.IsHole()) continue;
    if (off + m.psize > phys.size())
      return Status::Corruption("gang members overrun their gang block");
    UZFS_RETURN_IF_ERROR(ReadCopies(m, d, phys.subspan(off, m.psize), depth + 1));
    off += m.psize;
  }
  if (off != phys.size() || !Verifies(bp, phys))
    return Status::Corruption("gang block fails its checksum");
  if (header) *header = raw;
  return Status::Ok();
}

Status Zio::ReadCopies(const BlockPtr& bp, int first, std::span<uint8_t> phys, int depth) {
  const uint64_t t0 = depth == 0 && UZFS_PROBE_ENABLED(zio_done) ? probes::NowNs() : 0;
  std::vector<int> failed;
  Status last = Status::Corruption("block pointer has no copies");
  std::array<uint8_t, kGangHeaderSize> header;
  bool good = false, have_header = false;
  for (int k = 0; k < 3 && !good; k++) {
    const int d = (first + k) % 3;
    if (bp.dva[d].asize == 0) continue;
    last = ReadCopy(bp, d, phys, depth, false, &header);
    if (last.ok()) {
      good = true;
      have_header = bp.dva[d].gang;
      if (depth == 0) {
        UZFS_PROBE(zio_done, "read", static_cast<uint64_t>(bp.dva[d].vdev), bp.dva[d].offset, bp.psize,
                   probes::Since(t0), 0);
        if (!failed.empty()) {
          UZFS_PROBE(zio_retry, static_cast<uint64_t>(bp.dva[d].vdev), bp.dva[d].offset, bp.psize,
                     static_cast<uint32_t>(failed.size()));
        }
      }
    } else {
      failed.push_back(d);
      stats_.copies_failed++;
    }
  }
  if (!good) {
    if (depth == 0) {
      UZFS_PROBE(zio_done, "read", static_cast<uint64_t>(bp.dva[first % 3].vdev), bp.dva[first % 3].offset, bp.psize,
                 probes::Since(t0), ErrnoOf(last));
      if (failed.size() > 1) {
        UZFS_PROBE(zio_retry, uint64_t{0}, uint64_t{0}, bp.psize, static_cast<uint32_t>(failed.size()));
      }
    }
    return last;
  }
  // Self-healing: every copy that failed while another verified gets the
  // good bytes back — the block itself, or for a gang copy its header (the
  // members heal themselves as they are read).
  if (opts_.writable) {
    for (int d : failed) {
      const Dva& dva = bp.dva[d];
      const std::span<const uint8_t> bytes =
          dva.gang ? std::span<const uint8_t>(header) : std::span<const uint8_t>(phys);
      if (dva.gang != have_header) continue;  // bytes of the other kind: nothing to copy
      if (target_.Write(dva.vdev, dva.offset, bytes).ok()) stats_.self_heals++;
    }
  }
  return Status::Ok();
}

Status Zio::Read(const BlockPtr& bp, std::span<uint8_t> out) {
  if (out.size() != bp.lsize) return Status::InvalidArgument("read buffer is not lsize bytes");
  if (bp.embedded) {
    UZFS_RETURN_IF_ERROR(ValidateBlockPtr(bp, Limits()));
    stats_.blocks_read++;
    stats_.logical_read += bp.lsize;
    auto payload = std::span<const uint8_t>(bp.payload).first(bp.psize);
    if (IsUncompressed(bp.compression)) {
      if (bp.psize != bp.lsize) return Status::Corruption("embedded block size mismatch");
      std::memcpy(out.data(), payload.data(), bp.psize);
      return Status::Ok();
    }
    return Decompress(static_cast<CompressType>(bp.compression), payload, out);
  }
  if (bp.IsHole()) {
    UZFS_RETURN_IF_ERROR(ValidateBlockPtr(bp, Limits()));
    stats_.blocks_read++;
    stats_.logical_read += bp.lsize;
    std::fill(out.begin(), out.end(), 0);
    return Status::Ok();
  }
  UZFS_ASSIGN_OR_RETURN(AlignedBytes phys, ReadPhysical(bp));
  return DecodePhysical(bp, phys, out);
}

Result<AlignedBytes> Zio::ReadPhysical(const BlockPtr& bp) {
  if (bp.embedded || bp.IsHole())
    return Status::NotSupported("holes and embedded blocks have no physical bytes");
  UZFS_RETURN_IF_ERROR(ValidateBlockPtr(bp, Limits()));
  stats_.blocks_read++;
  stats_.logical_read += bp.lsize;
  AlignedBytes phys(bp.psize);
  UZFS_RETURN_IF_ERROR(
      ReadCopies(bp, 0, phys, 0).WithContext("no copy of the block could be read"));
  return phys;
}

std::vector<Result<AlignedBytes>> Zio::ReadPhysicalMany(std::span<const BlockPtr> bps) {
  std::vector<Result<AlignedBytes>> out;
  out.reserve(bps.size());
  std::vector<size_t> batched;  // plain blocks, read in one batch
  for (size_t i = 0; i < bps.size(); i++) {
    const BlockPtr& bp = bps[i];
    const Dva& d0 = bp.dva[0];
    if (bp.embedded || bp.IsHole() || d0.asize == 0 || d0.gang || !ValidateBlockPtr(bp, Limits()).ok()) {
      out.push_back(ReadPhysical(bp));  // its own path (and its own error)
      continue;
    }
    out.push_back(AlignedBytes(bp.psize));
    batched.push_back(i);
  }
  // The first copies of every plain block, across every top-level vdev,
  // in one batch (BlockTarget::Submit).
  std::vector<BlockVerifier> verify(batched.size());
  std::vector<BlockIo> ios;
  ios.reserve(batched.size());
  for (size_t k = 0; k < batched.size(); k++) {
    const BlockPtr* bp = &bps[batched[k]];
    verify[k] = [this, bp](std::span<const uint8_t> b) { return Verifies(*bp, b); };
    ios.push_back(BlockIo::Read(bp->dva[0].vdev, bp->dva[0].offset, std::span<uint8_t>(*out[batched[k]]),
                                &verify[k]));
  }
  const uint64_t t0 = UZFS_PROBE_ENABLED(zio_done) ? probes::NowNs() : 0;
  target_.Submit(ios);
  for (size_t k = 0; k < batched.size(); k++) {
    const BlockPtr& bp = bps[batched[k]];
    if (ios[k].status.ok()) {
      UZFS_PROBE(zio_done, "read", static_cast<uint64_t>(bp.dva[0].vdev), bp.dva[0].offset, bp.psize,
                 probes::Since(t0), 0);
      stats_.blocks_read++;
      stats_.logical_read += bp.lsize;
    } else {
      out[batched[k]] = ReadPhysical(bp);  // again, then the other copies (counted there)
    }
  }
  return out;
}

Status Zio::DecodePhysical(const BlockPtr& bp, std::span<const uint8_t> phys,
                           std::span<uint8_t> out) {
  if (out.size() != bp.lsize) return Status::InvalidArgument("read buffer is not lsize bytes");
  if (IsUncompressed(bp.compression)) {
    if (phys.size() != bp.lsize) return Status::Corruption("uncompressed block with psize != lsize");
    std::memcpy(out.data(), phys.data(), bp.lsize);
    return Status::Ok();
  }
  return Decompress(static_cast<CompressType>(bp.compression), phys, out);
}

// ---------------------------------------------------------------- scrub

Status Zio::ScrubBlock(const BlockPtr& bp, int depth, ScrubResult* r) {
  if (bp.embedded || bp.IsHole()) return Status::Ok();
  if (depth >= kMaxGangDepth) return Status::Corruption("gang blocks nested too deep");
  stats_.blocks_scrubbed++;
  int unrepaired = 0;
  auto repair = [&](const Dva& dva, std::span<const uint8_t> bytes) {
    if (!opts_.writable) {
      unrepaired++;
      r->copies_unrepaired++;
      return;
    }
    if (target_.Write(dva.vdev, dva.offset, bytes).ok()) {
      stats_.self_heals++;
      r->copies_repaired++;
    } else {
      unrepaired++;
      r->copies_unrepaired++;
    }
  };
  std::vector<int> bad;
  if (bp.dva[0].gang) {
    // Every header copy is checked (and rewritten from a good one), then
    // every member is scrubbed the same way, then the whole block verified.
    std::array<uint8_t, kGangHeaderSize> raw, good_raw;
    std::optional<GangHeader> h;
    Status last;
    for (int d = 0; d < 3; d++) {
      if (bp.dva[d].asize == 0) continue;
      r->copies_checked++;
      auto hd = ReadGangHeader(bp, d, /*scrub=*/true, &raw);
      if (hd.ok()) {
        if (!h) {
          h = *hd;
          good_raw = raw;
        }
      } else {
        bad.push_back(d);
        last = hd.status();
      }
    }
    if (!h) return last.WithContext("scrub: no copy of the gang header verifies");
    for (int d : bad) repair(bp.dva[d], good_raw);
    for (const BlockPtr& m : h->members) {
      if (m.IsHole()) continue;
      UZFS_RETURN_IF_ERROR(ScrubBlock(m, depth + 1, r));
    }
    std::vector<uint8_t> phys(bp.psize);
    UZFS_RETURN_IF_ERROR(ReadCopies(bp, 0, phys, depth));
  } else {
    std::vector<uint8_t> phys(bp.psize), good;
    Status last;
    for (int d = 0; d < 3; d++) {
      if (bp.dva[d].asize == 0) continue;
      r->copies_checked++;
      last = ReadCopy(bp, d, phys, depth, /*scrub=*/true, nullptr);
      if (last.ok()) {
        if (good.empty()) good = phys;
      } else {
        bad.push_back(d);
        stats_.copies_failed++;
      }
    }
    if (good.empty()) return last.WithContext("scrub: no copy of the block verifies");
    for (int d : bad) repair(bp.dva[d], good);
  }
  if (unrepaired)
    return opts_.writable
               ? Status::IoError("scrub: " + std::to_string(unrepaired) +
                                 " damaged copies could not be rewritten")
               : Status::Corruption("scrub: " + std::to_string(unrepaired) +
                                    " damaged copies left as they are (read-only)");
  return Status::Ok();
}

Status Zio::Scrub(const BlockPtr& bp, ScrubResult* result) {
  ScrubResult local;
  UZFS_RETURN_IF_ERROR(ValidateBlockPtr(bp, Limits()));
  return ScrubBlock(bp, 0, result ? result : &local);
}

void Zio::ScrubMany(std::span<const BlockPtr> bps, std::span<Status> status, std::span<ScrubResult> results,
                    ReadMode mode) {
  struct Copy {
    size_t block;
    int d;
  };
  std::vector<BlockVerifier> verify(bps.size());
  std::vector<AlignedBytes> bufs;
  std::vector<BlockIo> ios;
  std::vector<Copy> copies;
  bufs.reserve(bps.size());
  ios.reserve(bps.size());
  for (size_t i = 0; i < bps.size(); i++) {
    const BlockPtr& bp = bps[i];
    results[i] = ScrubResult{};
    status[i] = Status::Ok();
    if (bp.embedded || bp.IsHole()) continue;
    if (Status v = ValidateBlockPtr(bp, Limits()); !v.ok()) {
      status[i] = std::move(v);
      continue;
    }
    if (bp.dva[0].gang || bp.dva[1].gang || bp.dva[2].gang) {
      status[i] = ScrubBlock(bp, 0, &results[i]);
      continue;
    }
    verify[i] = [this, &bp](std::span<const uint8_t> b) { return Verifies(bp, b); };
    for (int d = 0; d < 3; d++) {
      if (bp.dva[d].asize == 0) continue;
      bufs.emplace_back(bp.psize);
      ios.push_back(BlockIo::Read(bp.dva[d].vdev, bp.dva[d].offset, std::span<uint8_t>(bufs.back()), &verify[i],
                                  mode));
      copies.push_back(Copy{i, d});
    }
  }
  if (ios.empty()) return;
  target_.Submit(ios);
  // Each block's copies are consecutive in `copies`.
  for (size_t k = 0; k < copies.size();) {
    const size_t i = copies[k].block;
    const BlockPtr& bp = bps[i];
    ScrubResult& r = results[i];
    size_t end = k;
    int good = -1;
    Status last;
    std::vector<int> bad;
    for (; end < copies.size() && copies[end].block == i; end++) {
      if (ios[end].status.ok()) {
        if (good < 0) good = static_cast<int>(end);
      } else {
        bad.push_back(copies[end].d);
        last = ios[end].status;
      }
    }
    const size_t first = k;
    k = end;
    if (good >= 0 && !bad.empty() && ios[static_cast<size_t>(good)].outcome.untouched) {
      // The good copy was not read (nothing of it is stale): the block is
      // scrubbed whole, which reads it and rewrites the bad copies.
      status[i] = ScrubBlock(bp, 0, &r);
      continue;
    }
    stats_.blocks_scrubbed++;
    r.copies_checked += static_cast<int>(end - first);
    stats_.copies_failed += bad.size();
    if (good < 0) {
      status[i] = last.WithContext("scrub: no copy of the block verifies");
      continue;
    }
    int unrepaired = 0;
    for (int d : bad) {
      if (opts_.writable && target_.Write(bp.dva[d].vdev, bp.dva[d].offset, bufs[static_cast<size_t>(good)]).ok()) {
        stats_.self_heals++;
        r.copies_repaired++;
      } else {
        unrepaired++;
        r.copies_unrepaired++;
      }
    }
    if (unrepaired) {
      status[i] = opts_.writable ? Status::IoError("scrub: " + std::to_string(unrepaired) +
                                                   " damaged copies could not be rewritten")
                                 : Status::Corruption("scrub: " + std::to_string(unrepaired) +
                                                      " damaged copies left as they are (read-only)");
    }
  }
}

// ----------------------------------------------------------------- free

Status Zio::CollectFrees(const BlockPtr& bp, int depth, std::vector<Dva>* out) {
  if (bp.embedded || bp.IsHole()) return Status::Ok();
  if (depth >= kMaxGangDepth) return Status::Corruption("gang blocks nested too deep");
  std::optional<GangHeader> h;
  Status last = Status::Corruption("no gang header copy verifies");
  std::array<uint8_t, kGangHeaderSize> raw;
  for (int d = 0; d < 3 && !h; d++) {
    if (bp.dva[d].asize == 0 || !bp.dva[d].gang) continue;
    auto hd = ReadGangHeader(bp, d, false, &raw);
    if (hd.ok()) h = *hd; else last = hd.status();
  }
  const bool any_gang = bp.dva[0].gang || bp.dva[1].gang || bp.dva[2].gang;
  if (any_gang && !h) return last.WithContext("freeing a gang block");
  if (h) {
    for (const BlockPtr& m : h->members) UZFS_RETURN_IF_ERROR(CollectFrees(m, depth + 1, out));
  }
  for (int d = 0; d < 3; d++) {
    Dva dva = bp.dva[d];
    if (dva.asize == 0) continue;
    if (dva.gang) {  // the members were collected above; what is left is the header
      for (const BlockPtr& m : h->members) dva.asize -= std::min(dva.asize, m.dva[d].asize);
      dva.gang = false;
    }
    out->push_back(dva);
  }
  return Status::Ok();
}

Status Zio::FreeBlock(const BlockPtr& bp, uint64_t txg, bool now) {
  if (bp.embedded || bp.IsHole()) return Status::Ok();
  UZFS_RETURN_IF_ERROR(ValidateBlockPtr(bp, Limits()));
  // Everything to free is found (every gang header read) before anything
  // is freed, so a free either happens whole or not at all.
  std::vector<Dva> dvas;
  UZFS_RETURN_IF_ERROR(CollectFrees(bp, 0, &dvas));
  Status first;
  for (const Dva& d : dvas) {
    Status s = now ? alloc_.Unallocate(d, txg) : alloc_.Free(d, txg);
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
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
