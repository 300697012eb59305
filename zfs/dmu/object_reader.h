// ObjectReader: reads DMU objects (dnodes, byte ranges) by walking their
// block trees through the ZIO pipeline.
//
// Addressing: an object's level-0 block b holds bytes [b*dblk, (b+1)*dblk).
// With epbs = indblkshift - 7 (pointers per indirect block = 2^epbs), the
// pointer to the level-L block with id B lives in the level-(L+1) block
// B >> epbs at slot B & (2^epbs - 1); the top level (nlevels-1) is the
// dnode's own blkptr[] (B < nblkptr there). A hole at any level means every
// block below it is a hole and reads as zeros; so do blocks past maxblkid.
//
// Every pointer is checked before it is followed: its level must be the one
// expected and its logical size the tree's block size for that level (the
// ZIO pipeline then validates DVAs and sizes and verifies the checksum).
// Indirect blocks are decoded in the byte order their pointer declares, and
// dnode blocks likewise. Any mismatch is Corruption, never a crash.
//
// Dnode N of an object set is at byte N*512 of the meta-dnode's data; a
// large dnode (extra_slots) may use the following slots of the same block.
//
// Blocks are read through a BlockReader (zfs/zio/block_reader.h): straight
// from the Zio (the Zio& constructor), or through the ARC the pool hands
// down. Pointers are looked up reading only the 128-byte slot of each
// indirect block (a cached indirect block costs one lookup and a copy).
// Thread-safe: the reader holds no mutable state.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "zfs/dmu/dnode.h"
#include "zfs/dmu/objset.h"
#include "zfs/spa/block_ptr.h"
#include "zfs/util/status.h"
#include "zfs/zio/block_reader.h"
#include "zfs/zio/zio.h"

namespace uzfs {

class ObjectReader {
 public:
  // Uncached: every read goes to the Zio.
  explicit ObjectReader(Zio& zio) : direct_(std::in_place, zio), reader_(&*direct_) {}
  // Through `reader` (which must outlive this) with `opts` on every read.
  explicit ObjectReader(BlockReader& reader, const BlockReadOptions& opts = {})
      : reader_(&reader), opts_(opts) {}
  ObjectReader(const ObjectReader&) = delete;
  ObjectReader& operator=(const ObjectReader&) = delete;

  // The object set rooted at `bp` (uberblock rootbp, a dataset's bp).
  // Corruption when bp is a hole or not of type "DMU objset".
  Result<Objset> ReadObjset(const BlockPtr& bp);

  // Dnode `object` of the set whose meta-dnode is `meta`, decoded and
  // validated. NotFound when the object is past the meta-dnode's end or its
  // slot lies in a hole; a free slot is returned as a free dnode (type 0).
  Result<Dnode> ReadDnode(const Dnode& meta, uint64_t object);

  // The block pointer of block `blkid` at `level` (0 = data) of `dn`: walks
  // the indirect blocks above it. A hole pointer (IsHole) when the block or
  // any ancestor is a hole or blkid is past the tree.
  Result<BlockPtr> BlockPointerAt(const Dnode& dn, int level, uint64_t blkid);

  // The logical bytes of that block (zeros for a hole). Its size is
  // DataBlockSize() at level 0, IndirectBlockSize() above.
  Result<std::vector<uint8_t>> ReadBlock(const Dnode& dn, int level, uint64_t blkid);

  // Bytes [offset, offset + out.size()) of the object: holes and bytes past
  // the last block read as zeros. InvalidArgument when the range overflows.
  Status Read(const Dnode& dn, uint64_t offset, std::span<uint8_t> out);

  // The logical bytes of dn's spill block (its whole lsize, zero padding
  // included); empty when dn has no spill or it is a hole. Corruption for
  // a spill pointer above level 0 or not a multiple of 512 in 512..128 KiB.
  Result<std::vector<uint8_t>> ReadSpill(const Dnode& dn);

 private:
  // Reads block bp (expected at `level`, `lsize` bytes) into out.
  Status ReadChecked(const BlockPtr& bp, int level, uint64_t lsize, std::vector<uint8_t>* out);

  std::optional<ZioBlockReader> direct_;
  BlockReader* reader_;
  BlockReadOptions opts_;
};

// The pointer to block `blkid` at `level` of `dn` (a hole when it or an
// ancestor is, or blkid is past the tree), reading only the pointer's slot
// of each indirect block on the way, with BlockPointerAt's checks (each
// pointer's level and size). REQUIRES: ValidateDnode(dn), !dn.IsFree(),
// 0 <= level < dn.nlevels.
Result<BlockPtr> LookupBlockPtr(BlockReader& reader, const BlockReadOptions& opts, const Dnode& dn,
                                int level, uint64_t blkid);

// Part of a level-0 block to read: bytes [offset, offset + out.size()).
struct BlockRangeRead {
  BlockPtr bp;
  uint64_t offset = 0;
  std::span<uint8_t> out;
};
// Reads every range at once (ReadRangeAsync) and waits; holes read as
// zeros. Each bp must be a level-0 block of `lsize` logical bytes
// (Corruption otherwise). The first error is returned.
Status ReadBlockRanges(BlockReader& reader, const BlockReadOptions& opts, uint64_t lsize,
                       std::span<const BlockRangeRead> reads);

}  // namespace uzfs
