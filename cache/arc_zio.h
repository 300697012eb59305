// Reading a block through the ARC: the read path the DMU will use (a hit
// returns cached bytes; a miss issues one ZIO read however many threads
// ask at once, and caches the result).
//
// Today Zio::Read returns the logical (decompressed) bytes only, so the
// adapter caches lsize bytes with compression off; when the ZIO grows a
// physical read, ArcReadBlock will keep psize bytes as stored and
// decompress through ArcRef::GetPlain (the Arc already supports both).
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

}  // namespace uzfs
