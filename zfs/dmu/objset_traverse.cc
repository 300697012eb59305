// The resumable object set walk (objset_traverse.h).
#include "zfs/dmu/objset_traverse.h"

#include <algorithm>
#include <vector>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dmu/objset.h"

namespace uzfs {
namespace {

// Level-0 block ids a block at `level` covers: 2^(epbs * level), saturated.
uint64_t Span(int epbs, int level) {
  const int shift = epbs * level;
  return shift >= 64 ? UINT64_MAX : uint64_t{1} << shift;
}

uint64_t MulSat(uint64_t a, uint64_t b) { return (b != 0 && a > UINT64_MAX / b) ? UINT64_MAX : a * b; }

class TraverseWalker {
 public:
  // Positions up to `from` are where the walk starts: the first stop check
  // comes once it has gone past, so every call makes progress.
  TraverseWalker(Zio& zio, const ObjsetTraverseOptions& o) : zio_(zio), o_(o), last_(o.from) {}

  // False when should_stop said so; out_.next then holds where.
  bool Enter(TraversePosition p) {
    if (p > last_) {
      last_ = p;
      if (o_.should_stop && o_.should_stop()) {
        out_.next = p;
        return false;
      }
    }
    return true;
  }

  // Visits the block if it is at or after `from`.
  bool Visit(uint64_t object, int level, uint64_t blkid, const BlockPtr& bp, TraversePosition pos) {
    if (pos < o_.from) return true;
    if (!Enter(pos)) return false;
    if (o_.visit) o_.visit(TraversedBlock{object, level, blkid, bp});
    return true;
  }

  bool Read(uint64_t object, int level, uint64_t blkid, const BlockPtr& bp, std::vector<uint8_t>* out) {
    out->resize(bp.lsize);
    Status s = zio_.Read(bp, *out);
    if (s.ok()) return true;
    if (o_.unreadable) o_.unreadable(TraversedBlock{object, level, blkid, bp}, s);
    return false;
  }

  // The tree of object `object` (not the meta-dnode) from its dnode.
  bool WalkObject(uint64_t object, const Dnode& dn) {
    if (TraversePosition{object, UINT64_MAX} < o_.from) return true;
    if (o_.on_dnode) o_.on_dnode(object, dn);
    if (dn.spill && !dn.spill->IsHole() && !dn.spill->embedded) {
      if (!Visit(object, 0, 0, *dn.spill, {object, 0})) return false;
    }
    return WalkTop(object, dn, nullptr);
  }

  // dn's top-level pointers and everything under them. `meta`: set for
  // the meta-dnode, whose level-0 blocks hold the objects to walk next.
  bool WalkTop(uint64_t object, const Dnode& dn, const Dnode* meta) {
    const int epbs = dn.indblkshift - 7;
    const int top = dn.nlevels - 1;
    for (size_t i = 0; i < dn.blkptr.size(); i++) {
      if (!WalkBlock(object, dn, meta != nullptr, epbs, top, i, dn.blkptr[i])) return false;
    }
    return true;
  }

  bool WalkBlock(uint64_t object, const Dnode& dn, bool is_meta, int epbs, int level, uint64_t id,
                 const BlockPtr& bp) {
    if (bp.IsHole() || bp.embedded) return true;
    const uint64_t span = Span(epbs, level);
    const uint64_t first = MulSat(id, span);
    const uint64_t last = (span == UINT64_MAX || first > UINT64_MAX - (span - 1)) ? UINT64_MAX : first + (span - 1);
    // Where this block and its subtree sit in the walk.
    TraversePosition pos{object, first};
    TraversePosition end{object, last};
    if (is_meta) {
      const uint64_t last_block_start = MulSat(last, per_block_);
      pos = {MulSat(first, per_block_), 0};
      end = {last_block_start > UINT64_MAX - per_block_ ? UINT64_MAX : last_block_start + per_block_ - 1, UINT64_MAX};
    }
    if (end < o_.from) return true;  // all of it before the cursor
    if (bp.birth < o_.min_birth) return true;  // nothing under it is newer
    if (!Visit(object, level, id, bp, pos)) return false;
    if (level == 0 && !is_meta) return true;
    std::vector<uint8_t> buf;
    if (!Read(object, level, id, bp, &buf)) return true;
    if (level == 0) return WalkDnodes(first, buf, bp);
    const size_t n = buf.size() / kBlockPtrSize;
    for (size_t i = 0; i < n; i++) {
      const BlockPtr child =
          DecodeBlockPtr(std::span<const uint8_t, kBlockPtrSize>(buf.data() + i * kBlockPtrSize, kBlockPtrSize));
      if (!WalkBlock(object, dn, is_meta, epbs, level - 1, MulSat(id, n) + i, child)) return false;
    }
    return true;
  }

  // The objects of meta-dnode block `blkid`.
  bool WalkDnodes(uint64_t blkid, const std::vector<uint8_t>& buf, const BlockPtr& bp) {
    const uint64_t base = MulSat(blkid, per_block_);
    for (uint64_t slot = 0; slot < per_block_; slot++) {
      const uint64_t object = base + slot;
      if (object == 0) continue;  // the meta-dnode's own slot
      auto dn = DecodeDnode(std::span<const uint8_t>(buf).subspan(slot * kDnodeSlotSize), !bp.little_endian);
      const Status valid = dn.ok() ? ValidateDnode(*dn) : dn.status();
      if (!valid.ok()) {
        if (o_.unreadable) o_.unreadable(TraversedBlock{0, 0, blkid, bp}, valid.WithContext("object " + std::to_string(object)));
        continue;
      }
      if (dn->IsFree()) continue;
      if (!WalkObject(object, *dn)) return false;
      slot += dn->extra_slots;
    }
    return true;
  }

  Result<TraverseOutcome> Run(const BlockPtr& root) {
    std::vector<uint8_t> buf;
    const TraversePosition origin{0, 0};
    if (root.IsHole()) return Status::Corruption("object set pointer is a hole");
    if (!Visit(0, -1, 0, root, origin)) return out_;
    buf.resize(root.lsize);
    UZFS_RETURN_IF_ERROR(zio_.Read(root, buf).WithContext("reading the object set block"));
    UZFS_ASSIGN_OR_RETURN(Objset os, DecodeObjset(buf, !root.little_endian));
    if (os.meta_dnode.type != dmu_ot::kDnode) return Status::Corruption("object set without a meta-dnode");
    UZFS_RETURN_IF_ERROR(ValidateDnode(os.meta_dnode).WithContext("meta-dnode"));
    const uint64_t bsize = os.meta_dnode.DataBlockSize();
    if (bsize < kDnodeSlotSize || bsize % kDnodeSlotSize != 0) {
      return Status::Corruption("meta-dnode block size " + std::to_string(bsize));
    }
    per_block_ = bsize / kDnodeSlotSize;
    if (o_.from <= origin) {
      // The accounting objects belong to position (0, 0), with the root.
      for (const auto* extra : {&os.userused, &os.groupused, &os.projectused}) {
        if (!extra->has_value() || (*extra)->IsFree()) continue;
        const Dnode& dn = **extra;
        for (const BlockPtr& bp : dn.blkptr) {
          if (bp.IsHole() || bp.embedded) continue;
          if (o_.visit) o_.visit(TraversedBlock{0, dn.nlevels - 1, 0, bp});
          if (dn.nlevels > 1) {
            // Small trees: walk them through the generic path at (0, 0).
            std::vector<uint8_t> ib;
            if (!Read(0, dn.nlevels - 1, 0, bp, &ib)) continue;
            WalkAccounting(dn.nlevels - 1, ib);
          }
        }
      }
    }
    if (!WalkTop(0, os.meta_dnode, &os.meta_dnode)) return out_;
    out_.done = true;
    return out_;
  }

  // Everything under an accounting object's indirect block (visited at (0, 0)).
  void WalkAccounting(int level, const std::vector<uint8_t>& buf) {
    for (size_t off = 0; off + kBlockPtrSize <= buf.size(); off += kBlockPtrSize) {
      const BlockPtr child = DecodeBlockPtr(std::span<const uint8_t, kBlockPtrSize>(buf.data() + off, kBlockPtrSize));
      if (child.IsHole() || child.embedded) continue;
      if (o_.visit) o_.visit(TraversedBlock{0, level - 1, 0, child});
      if (level - 1 == 0) continue;
      std::vector<uint8_t> ib;
      if (Read(0, level - 1, 0, child, &ib)) WalkAccounting(level - 1, ib);
    }
  }

 private:
  Zio& zio_;
  const ObjsetTraverseOptions& o_;
  TraverseOutcome out_;
  TraversePosition last_;
  uint64_t per_block_ = 32;
};

}  // namespace

Result<TraverseOutcome> TraverseObjset(Zio& zio, const BlockPtr& root, const ObjsetTraverseOptions& opts) {
  TraverseWalker w(zio, opts);
  return w.Run(root);
}

}  // namespace uzfs
