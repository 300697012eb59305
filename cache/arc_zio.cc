// ArcReadBlock (see arc_zio.h).
#include "cache/arc_zio.h"

namespace uzfs {

ArcBufKind ArcKindOf(const BlockPtr& bp) {
  if (bp.level > 0) return ArcBufKind::kMetadata;
  return (bp.type == 19 || bp.type == 23) ? ArcBufKind::kData : ArcBufKind::kMetadata;
}

Result<ArcRef> ArcReadBlock(Arc& arc, uint64_t pool_guid, Zio& zio, const BlockPtr& bp,
                            ArcReadFlags flags) {
  flags.kind = ArcKindOf(bp);
  flags.bp = &bp;  // a miss may be served by the L2ARC (verified against bp)
  Result<ArcKey> key = ArcKey::FromBlockPtr(pool_guid, bp);
  if (!key.ok()) {
    // A hole or an embedded pointer: the data is in the pointer.
    ArcBlock b;
    b.phys.assign(bp.lsize, 0);
    UZFS_RETURN_IF_ERROR(zio.Read(bp, b.phys));
    b.lsize = bp.lsize;
    return arc.Uncached(std::move(b), flags.kind);
  }
  // A miss keeps the bytes as stored: verified, still compressed.
  auto fill = [&zio, &bp]() -> Result<ArcBlock> {
    UZFS_ASSIGN_OR_RETURN(AlignedBytes phys, zio.ReadPhysical(bp));
    return ArcBlockFromPhysical(bp, std::move(phys));
  };
  return arc.Read(*key, flags, fill);
}

Result<ArcBlock> ArcBlockFromPhysical(const BlockPtr& bp, AlignedBytes phys) {
  ArcBlock b;
  b.phys = std::move(phys);
  const auto c = static_cast<CompressType>(bp.compression);
  // As Zio::DecodePhysical: inherit (0) in a pointer means uncompressed.
  b.compression = c == CompressType::kInherit ? CompressType::kOff : c;
  b.lsize = bp.lsize;
  if (b.compression == CompressType::kOff && b.phys.size() != bp.lsize)
    return Status::Corruption("uncompressed block with psize != lsize");
  return b;
}

}  // namespace uzfs
