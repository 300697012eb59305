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
  auto fill = [&zio, &bp]() -> Result<ArcBlock> {
    ArcBlock b;
    b.phys.resize(bp.lsize);
    UZFS_RETURN_IF_ERROR(zio.Read(bp, b.phys));
    b.compression = CompressType::kOff;
    b.lsize = bp.lsize;
    return b;
  };
  Result<ArcKey> key = ArcKey::FromBlockPtr(pool_guid, bp);
  if (!key.ok()) {
    UZFS_ASSIGN_OR_RETURN(ArcBlock b, fill());
    return arc.Uncached(std::move(b), flags.kind);
  }
  return arc.Read(*key, flags, fill);
}

}  // namespace uzfs
