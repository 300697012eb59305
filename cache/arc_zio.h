// Reading a block through the ARC: the read path the DMU will use (a hit
// returns cached bytes; a miss issues one ZIO read however many threads
// ask at once, and caches the result).
//
// A miss reads the physical bytes (Zio::ReadPhysical: verified against the
// checksum, still compressed), so the ARC keeps psize bytes as stored and
// ArcRef::GetPlain decompresses. A block that fails its checksum on every
// copy is an error for every waiting reader and is not cached.
// Holes and embedded pointers carry their data in the pointer: they are
// decoded through Zio::Read into a private, uncached ArcRef.
#pragma once

#include "cache/arc.h"
#include "zfs/spa/block_ptr.h"
#include "zfs/zio/zio.h"

namespace uzfs {

// Metadata or data, as ZFS's DMU_OT_IS_METADATA: indirect blocks and every
// object type but plain file contents (19) and zvol data (23) are metadata.
ArcBufKind ArcKindOf(const BlockPtr& bp);

// The block's logical bytes are ref->GetPlain(). flags.kind is overridden by
// ArcKindOf(bp).
Result<ArcRef> ArcReadBlock(Arc& arc, uint64_t pool_guid, Zio& zio, const BlockPtr& bp,
                            ArcReadFlags flags);

// The ARC block of a miss from its physical bytes (ReadPhysical's): as
// stored, with the pointer's compression (inherit = off) and lsize.
// Corruption when an uncompressed block's psize is not its lsize.
Result<ArcBlock> ArcBlockFromPhysical(const BlockPtr& bp, AlignedBytes phys);

}  // namespace uzfs
