// BlockTree: a working copy of one object's block tree, used to read it and
// to rebuild it copy-on-write when a txg syncs.
//
// What it does: starts from a committed dnode (its top pointers, nlevels,
// indblkshift), loads indirect blocks on demand through the ZIO pipeline
// (each pointer's level and size checked first, as ObjectReader does) and
// keeps them decoded in memory for the tree's lifetime. For a sync it then
//   - GrowTo(maxblkid): adds levels on top; the old top pointers become
//     slots 0..nblkptr-1 of the new level's block 0 (level-L block ids do
//     not change when levels are added, only where their pointer lives);
//   - FreeRange(a, b): makes level-0 blocks [a, b) holes, visiting only
//     pointers that exist (a hole at any level skips its subtree);
//   - SetL0(blkid, bp): puts a freshly written data block in its slot;
//   - WriteIndirect(): writes every indirect block whose children changed,
//     bottom-up, level by level (the blocks of one level in parallel), with
//     fill = sum of the children's fills; an indirect block whose children
//     are all holes becomes a hole itself (and is not written).
// Every pointer a rebuild replaces is collected in frees(), every block it
// writes in written(): the caller frees the former only once the whole
// sync has succeeded, and unallocates the latter if it fails, so a failed
// sync leaves the committed tree intact and leaks nothing.
// Rewrites in place (sync passes >= 2, see zio.h): WriteIndirect offers
// each replaced indirect pointer as the rewrite candidate, and a new
// pointer (indirect, or an L0 given to SetL0) that reuses the DVAs of the
// pointer it replaces is neither a free nor a new block: it goes to
// rewritten() only (its asize is unchanged, so dn_used is too). A failed
// sync must not unallocate those.
//
// Holes are kept as all-zero pointers (BlockPtr{} encodes as 128 zero
// bytes here), the legacy form every pool version reads.
//
// Threading: a BlockTree is used by one thread at a time. The blocks it
// reads must stay allocated while it is in use (the committed tree's
// blocks are freed only by the sync that replaces them).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "zfs/dmu/dnode.h"
#include "zfs/spa/block_ptr.h"
#include "zfs/util/status.h"
#include "zfs/zio/block_reader.h"
#include "zfs/zio/zio.h"

namespace uzfs {

// Bytes a block occupies on the vdevs, all copies (what dn_used counts).
uint64_t BlockAsize(const BlockPtr& bp);
// What a block adds to a dataset's uncompressed bytes (BP_GET_UCSIZE: the
// psize of metadata, else the lsize).
uint64_t UncompressedCharge(const BlockPtr& bp);

// One block for WriteBlocks: `data` must stay valid until it returns.
struct BlockWrite {
  std::span<const uint8_t> data;
  WriteProps props;
  BlockPtr result;  // filled in; BlockPtr{} when the data was all zeros
};
// Writes every block on the Zio's workers and waits: consecutive jobs in
// batches of about Zio::WriteBatchBytes() bytes, each batch one
// Zio::WriteMany (allocated back to back, written with merged leaf I/O). On any
// failure the blocks that were newly allocated are unallocated (never a
// rewrite in place of props.rewrite) and the first error is returned.
Status WriteBlocks(Zio& zio, std::span<BlockWrite> jobs, uint64_t txg);

class BlockTree {
 public:
  // REQUIRES: ValidateDnode(dn).ok() and !dn.IsFree(). Blocks are read
  // through `reader` when given (the ARC), else from zio; written to zio.
  BlockTree(Zio& zio, const Dnode& dn, BlockReader* reader = nullptr,
            const BlockReadOptions& read_opts = {});
  BlockTree(const BlockTree&) = delete;
  BlockTree& operator=(const BlockTree&) = delete;

  int levels() const { return levels_; }
  uint32_t epbs() const { return epbs_; }

  // The pointer to block `blkid` at `level` (a hole past the tree).
  Result<BlockPtr> Lookup(int level, uint64_t blkid);
  // The logical bytes of level-0 block `blkid` into out (DataBlockSize()
  // bytes): zeros for a hole.
  Status ReadL0(uint64_t blkid, std::span<uint8_t> out);

  // --- rebuilding ---
  // Adds levels until `maxblkid` is addressable (never removes any).
  void GrowTo(uint64_t maxblkid);
  // Level-0 blocks [a, b) become holes.
  Status FreeRange(uint64_t a, uint64_t b);
  // REQUIRES: blkid addressable (GrowTo first). bp: a block just written
  // (or BlockPtr{} for a hole).
  Status SetL0(uint64_t blkid, const BlockPtr& bp);
  // Writes the changed indirect blocks. `props`: compress/checksum/copies
  // and the object's type; level and fill are set per block. Each new one
  // is offered to the reader's cache (BlockReader::Written).
  Status WriteIndirect(const WriteProps& props, uint64_t txg);

  const std::vector<BlockPtr>& top() const { return top_; }
  const std::vector<BlockPtr>& frees() const { return frees_; }
  const std::vector<BlockPtr>& written() const { return written_; }     // newly allocated
  const std::vector<BlockPtr>& rewritten() const { return rewritten_; }  // same DVAs as before

 private:
  struct Ind {
    std::vector<BlockPtr> ptrs;
    bool dirty = false;
  };
  // The indirect block (level, id), loading it (and its ancestors).
  // REQUIRES: 1 <= level < levels_.
  Result<Ind*> Get(int level, uint64_t id);
  // Where the pointer to (level, id) lives; nullptr when past the tree.
  Result<BlockPtr*> Slot(int level, uint64_t id);
  // Marks the block holding the pointer to (level, id) changed.
  Status TouchParent(int level, uint64_t id);
  Status FreeUnder(int level, uint64_t id, uint64_t a, uint64_t b);
  // Puts bp in *slot; the old pointer goes to frees_, or, when bp reuses
  // its DVAs, bp to rewritten_ (returns true then).
  bool Replace(BlockPtr* slot, const BlockPtr& bp);

  Zio& zio_;
  BlockReader* const reader_;  // may be null: zio_
  const BlockReadOptions read_opts_;
  const uint64_t ind_size_;
  const uint32_t epbs_;
  int levels_;
  std::vector<BlockPtr> top_;
  std::map<std::pair<int, uint64_t>, Ind> ind_;  // std::map: pointers stay valid
  std::vector<BlockPtr> frees_, written_, rewritten_;
  const Dnode shape_;  // indblkshift, datablkszsec, nblkptr, type
};

}  // namespace uzfs
