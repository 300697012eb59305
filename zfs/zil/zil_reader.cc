// The log chain walk and replay; see zil_reader.h.
#include "zfs/zil/zil_reader.h"

#include <algorithm>
#include <limits>

#include "zfs/dmu/dmu_types.h"

namespace uzfs {

ZilBlockError ZilReader::ReadBlock(const BlockPtr& bp, std::vector<uint8_t>* raw, ZilBlock* blk,
                                   ZilEnd* end, std::string* detail) {
  const uint8_t ck = bp.checksum;
  if (bp.embedded || bp.type != dmu_ot::kIntentLog || bp.lsize != bp.psize ||
      (ck != static_cast<uint8_t>(ChecksumType::kZilog) &&
       ck != static_cast<uint8_t>(ChecksumType::kZilog2)) ||
      bp.lsize < kZilChainSize) {
    *end = ZilEnd::kBadPointer;
    *detail = "not a log block pointer: " + FormatBlockPtr(bp);
    return ZilBlockError::kBadSize;
  }
  BlockPtrLimits limits;
  for (uint32_t v = 0; v < target_.TopLevelCount(); v++) limits.vdev_asize.push_back(target_.TopLevelAsize(v));
  limits.allocated_size = [this](uint32_t v, uint64_t psize) {
    return target_.TopLevelAllocatedSize(v, psize);
  };
  if (Status s = ValidateBlockPtr(bp, limits); !s.ok()) {
    *end = ZilEnd::kBadPointer;
    *detail = std::string(s.message());
    return ZilBlockError::kBadSize;
  }
  raw->assign(bp.psize, 0);
  ZilBlockError why = ZilBlockError::kChecksum;
  Status last = Status::Ok();
  for (int d = 0; d < bp.NumDvas(); d++) {
    const Dva& dva = bp.dva[d];
    if (dva.gang) continue;  // log blocks are never ganged
    ZilBlockError e = ZilBlockError::kChecksum;
    Status s = target_.Read(dva.vdev, dva.offset, *raw, [&](std::span<const uint8_t> b) {
      ZilBlock tmp;
      e = DecodeLogBlock(bp, b, &tmp);
      return e == ZilBlockError::kNone || e == ZilBlockError::kUnchained;
    });
    if (s.ok()) {
      why = DecodeLogBlock(bp, *raw, blk);
      if (why == ZilBlockError::kNone) return why;
      break;  // verified but unchained: every copy says the same
    }
    last = s;
    if (e == ZilBlockError::kBadSize) why = e;
  }
  switch (why) {
    case ZilBlockError::kUnchained:
      *end = ZilEnd::kUnchained;
      *detail = "next block pointer is a hole or breaks the chain";
      break;
    case ZilBlockError::kBadSize:
      *end = ZilEnd::kBadSize;
      *detail = "used size larger than the block";
      break;
    default:
      if (last.IsIoError()) {
        *end = ZilEnd::kReadError;
        *detail = std::string(last.message());
      } else {
        *end = ZilEnd::kChecksum;
        *detail = "embedded checksum does not verify for chain value seq " +
                  std::to_string(bp.cksum.word[kZilChainSeq]);
      }
      why = ZilBlockError::kChecksum;
      break;
  }
  return why;
}

Result<ZilWalkResult> ZilReader::Walk(const ZilHeader& zh, const ZilWalkOptions& opts,
                                      const ZilBlockFn& on_block, const ZilRecordFn& on_record) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  const bool claimed = zh.claim_txg != 0;
  const uint64_t claim_blk_seq = claimed ? zh.claim_blk_seq : kMax;
  const uint64_t claim_lr_seq = claimed && (zh.flags & kZilClaimLrSeqValid) ? zh.claim_lr_seq : kMax;
  ZilWalkResult r;
  std::vector<uint8_t> raw;
  BlockPtr bp = zh.log;
  if (bp.IsHole()) {
    r.end = ZilEnd::kEmpty;
    r.detail = "the header names no log block";
    return r;
  }
  for (;;) {
    const uint64_t blk_seq = bp.cksum.word[kZilChainSeq];
    if (blk_seq > claim_blk_seq || (r.max_lr_seq == claim_lr_seq && r.max_blk_seq == claim_blk_seq)) {
      r.end = ZilEnd::kClaimLimit;
      r.detail = "block seq " + std::to_string(blk_seq) + " is past the claimed log";
      return r;
    }
    ZilBlock blk;
    ZilEnd end = ZilEnd::kChecksum;
    std::string detail;
    if (ReadBlock(bp, &raw, &blk, &end, &detail) != ZilBlockError::kNone) {
      r.end = end;
      r.detail = "block seq " + std::to_string(blk_seq) + ": " + detail;
      r.end_bp = bp;
      return r;
    }
    // Parse every record first: a block with a bad record ends the log
    // before any of its records is used.
    std::vector<LogRecord> recs;
    uint64_t prev = r.max_lr_seq;
    for (size_t off = 0; off < blk.records.size();) {
      size_t reclen = 0;
      auto rec = DecodeRecord(blk.records.subspan(off), blk.byteswapped, &reclen);
      if (!rec.ok() || rec->seq <= prev) {
        r.end = ZilEnd::kBadRecord;
        r.detail = "block seq " + std::to_string(blk_seq) + " offset " + std::to_string(off) + ": " +
                   (rec.ok() ? "record seq does not increase" : std::string(rec.status().message()));
        r.end_bp = bp;
        return r;
      }
      prev = rec->seq;
      off += reclen;
      recs.push_back(std::move(*rec));
    }
    if (on_block) {
      ZilBlockInfo info{bp, blk_seq, blk.nused, blk.slim};
      UZFS_RETURN_IF_ERROR(on_block(info));
    }
    r.blocks++;
    r.max_blk_seq = blk_seq;
    for (const LogRecord& rec : recs) {
      if (rec.seq > claim_lr_seq) {
        r.end = ZilEnd::kClaimLimit;
        r.detail = "record seq " + std::to_string(rec.seq) + " is past the claimed log";
        return r;
      }
      r.max_lr_seq = rec.seq;
      if (opts.skip_replayed && (rec.seq <= zh.replay_seq || (claimed && rec.txg < zh.claim_txg))) {
        r.skipped++;
        continue;
      }
      r.records++;
      UZFS_RETURN_IF_ERROR(on_record(rec));
    }
    bp = blk.next;
  }
}

Status ZilReader::ReadWriteData(const LrWrite& w, std::span<uint8_t> out) {
  if (w.blkptr.IsHole()) {
    std::fill(out.begin(), out.end(), 0);
    return Status::Ok();
  }
  if (zio_ == nullptr) return Status::InvalidArgument("no Zio to read logged-by-reference data");
  // The block holds the file's whole block: the write is at offset %
  // lsize in it (lr_blkoff is "no longer used" in OpenZFS and 0 in what
  // zfs-fuse writes, whatever the write's place in its block).
  const uint64_t in = w.offset % w.blkptr.lsize;
  if (in + out.size() > w.blkptr.lsize) return Status::Corruption("logged write reaches past its block");
  std::vector<uint8_t> block(w.blkptr.lsize);
  UZFS_RETURN_IF_ERROR(zio_->Read(w.blkptr, block));
  std::copy(block.begin() + in, block.begin() + in + out.size(), out.begin());
  return Status::Ok();
}

Result<ZilWalkResult> ZilReplay(ZilReader& reader, const ZilHeader& zh, ZilReplayTarget& target) {
  return reader.Walk(zh, ZilWalkOptions{}, nullptr,
                     [&](const LogRecord& rec) { return target.Replay(rec, reader); });
}

}  // namespace uzfs
