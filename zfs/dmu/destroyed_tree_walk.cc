// The walk of a destroyed object set (destroyed_tree_walk.h).
#include "zfs/dmu/destroyed_tree_walk.h"

#include <vector>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dmu/dnode.h"
#include "zfs/dmu/objset.h"

namespace uzfs {
namespace {

constexpr int kBlkptrShift = 7;                 // 128-byte block pointers
constexpr uint64_t kMetaLevel = 0x80000000ull;  // meta-dnode blocks: above any object level
constexpr uint64_t kMetaDnodeSectors = 32;      // a 16 KiB dnode block, in sectors
constexpr uint64_t kSpillBlkid = UINT64_MAX - 1;
constexpr uint64_t kUserUsedObject = UINT64_MAX;
constexpr uint64_t kGroupUsedObject = UINT64_MAX - 1;
constexpr uint64_t kProjectUsedObject = UINT64_MAX - 2;

// Level-0 blocks under a block of `level` (at least 1; saturated).
uint64_t FirstL0(uint64_t blkid, int ibs, int64_t level) {
  if (level <= 0) return blkid;
  const int64_t shift = level * (ibs - kBlkptrShift);
  if (shift >= 64) return blkid == 0 ? 0 : UINT64_MAX;
  return blkid << shift;
}

struct Canonical {
  uint64_t object, l0, level;
};

Canonical Canon(uint64_t dbss, int ibs, const TreeBookmark& z) {
  const uint64_t l0 = FirstL0(z.blkid, ibs, z.level);
  if (z.object == 0) {
    // A meta-dnode block stands at the first object it holds.
    return {l0 * dbss, 0, static_cast<uint64_t>(z.level) + kMetaLevel};
  }
  return {z.object, l0, static_cast<uint64_t>(z.level)};
}

class DestroyedTreeWalker {
 public:
  DestroyedTreeWalker(Zio& zio, const DestroyedTreeWalkOptions& o) : zio_(zio), o_(o), resume_(o.resume), last_point_(o.resume) {}

  Result<DestroyedTreeWalkResult> Run(const BlockPtr& root) {
    if (!resume_.IsZero() && (resume_.objset != kDestroyedObjset || resume_.level != 0)) {
      return Status::Corruption("bookmark " + std::to_string(resume_.objset) + "/" + std::to_string(resume_.object) +
                                "/" + std::to_string(resume_.level) + "/" + std::to_string(resume_.blkid) +
                                " names no level-0 block of a destroyed object set");
    }
    if (root.IsHole() || root.birth <= o_.min_birth) {
      out_.done = true;
      return out_;
    }
    if (!root.embedded) {
      std::vector<uint8_t> buf(root.lsize);
      if (Status s = zio_.Read(root, buf); !s.ok()) return Stop(s.WithContext("the object set block"));
      auto os = DecodeObjset(buf, !root.little_endian);
      if (!os.ok()) return Stop(os.status().WithContext("the object set block"));
      per_block_ = os->meta_dnode.DataBlockSize() / kDnodeSlotSize;
      if (!WalkDnode(os->meta_dnode, 0)) return Finish();
      const std::pair<const std::optional<Dnode>*, uint64_t> accounting[] = {
          {&os->projectused, kProjectUsedObject}, {&os->groupused, kGroupUsedObject}, {&os->userused, kUserUsedObject}};
      for (const auto& [dn, object] : accounting) {
        if (*dn && !(*dn)->IsFree() && !WalkDnode(**dn, object)) return Finish();
      }
    }
    pending_.push_back(root);
    if (!Flush()) return Finish();
    out_.done = true;
    return out_;
  }

 private:
  Result<DestroyedTreeWalkResult> Finish() {
    if (!err_.ok()) return err_;
    return out_;
  }

  // A read error: what was seen since the last pause point is dropped
  // (not visited), and the walk stops there.
  void Stopped(const Status& s) {
    pending_.clear();
    out_.resume = last_point_;
    out_.read_error = s;
  }
  Result<DestroyedTreeWalkResult> Stop(const Status& s) {
    Stopped(s);
    return out_;
  }
  bool StopFalse(const Status& s) {
    Stopped(s);
    return false;
  }

  bool Flush() {
    for (const BlockPtr& bp : pending_) {
      if (Status s = o_.visit(bp); !s.ok()) {
        err_ = s;
        return false;
      }
    }
    pending_.clear();
    return true;
  }

  // A pause point at zb: what came before is visited; false when the walk
  // stops here (paused, or a visit failed).
  bool PausePoint(const TreeBookmark& zb) {
    if (!Flush()) return false;
    last_point_ = zb;
    if (o_.should_pause && o_.should_pause()) {
      out_.resume = zb;
      return false;
    }
    return true;
  }

  // The subtree at zb (in the object whose dnode is dn) lies wholly
  // before the resume bookmark: the position just after it is not later.
  bool Completed(const Dnode& dn, TreeBookmark zb) const {
    if (resume_.IsZero()) return false;
    zb.blkid++;
    return CompareTreeBookmarks(dn.datablkszsec, dn.indblkshift, zb, kMetaDnodeSectors, 0, resume_) <= 0;
  }

  // False: stopped (paused, a read error, or a failed visit in err_).
  bool WalkDnode(const Dnode& dn, uint64_t object) {
    for (size_t j = 0; j < dn.blkptr.size(); j++) {
      if (!VisitBp(dn, object, {kDestroyedObjset, object, dn.nlevels - 1, j}, dn.blkptr[j])) return false;
    }
    if (dn.spill && !VisitBp(dn, object, {kDestroyedObjset, object, 0, kSpillBlkid}, *dn.spill)) return false;
    return true;
  }

  bool VisitBp(const Dnode& dn, uint64_t object, const TreeBookmark& zb, const BlockPtr& bp) {
    if (bp.IsHole() || bp.birth <= o_.min_birth) return true;
    bool skip_children = false;
    if (!resume_.IsZero()) {
      if (Completed(dn, zb)) return true;
      if (zb == resume_) {
        // Where the last walk stopped: this block (its children, for a
        // meta-dnode block, are done) and all after it.
        resume_ = TreeBookmark{};
        skip_children = true;
      }
    }
    const bool ordinary = object != 0 && object < kProjectUsedObject;
    if (zb.level == 0 && ordinary && zb.blkid != kSpillBlkid && !PausePoint(zb)) return false;
    if (!skip_children && !bp.embedded && (zb.level > 0 || object == 0)) {
      std::vector<uint8_t> buf(bp.lsize);
      if (Status s = zio_.Read(bp, buf); !s.ok()) {
        return StopFalse(s.WithContext("object " + std::to_string(object) + " level " + std::to_string(zb.level) +
                                       " block " + std::to_string(zb.blkid)));
      }
      if (zb.level > 0) {
        const uint64_t n = buf.size() / kBlockPtrSize;
        for (uint64_t i = 0; i < n; i++) {
          const BlockPtr child = DecodeBlockPtr(
              std::span<const uint8_t, kBlockPtrSize>(buf.data() + i * kBlockPtrSize, kBlockPtrSize), !bp.little_endian);
          if (!VisitBp(dn, object, {kDestroyedObjset, object, zb.level - 1, zb.blkid * n + i}, child)) return false;
        }
      } else if (!WalkDnodeBlock(zb.blkid, buf, bp)) {
        return false;
      }
    }
    // A meta-dnode block whose objects are done: a pause point too.
    if (zb.level == 0 && object == 0 && !PausePoint(zb)) return false;
    pending_.push_back(bp);
    return true;
  }

  // The objects of meta-dnode block `blkid`.
  bool WalkDnodeBlock(uint64_t blkid, const std::vector<uint8_t>& buf, const BlockPtr& bp) {
    for (uint64_t slot = 0; slot < per_block_ && (slot + 1) * kDnodeSlotSize <= buf.size(); slot++) {
      const uint64_t object = blkid * per_block_ + slot;
      if (object == 0 || buf[slot * kDnodeSlotSize] == 0) continue;  // the meta-dnode's slot, free slots
      auto dn = DecodeDnode(std::span<const uint8_t>(buf).subspan(slot * kDnodeSlotSize), !bp.little_endian);
      const Status valid = dn.ok() ? ValidateDnode(*dn) : dn.status();
      if (!valid.ok()) return StopFalse(valid.WithContext("object " + std::to_string(object)));
      if (!WalkDnode(*dn, object)) return false;
      slot += dn->extra_slots;
    }
    return true;
  }

  Zio& zio_;
  const DestroyedTreeWalkOptions& o_;
  TreeBookmark resume_;
  TreeBookmark last_point_;
  uint64_t per_block_ = 32;
  std::vector<BlockPtr> pending_;  // seen since the last pause point
  DestroyedTreeWalkResult out_;
  Status err_;
};

}  // namespace

int CompareTreeBookmarks(uint64_t dbss1, int ibs1, const TreeBookmark& a, uint64_t dbss2, int ibs2,
                         const TreeBookmark& b) {
  if (a.object == b.object && a.level == b.level && a.blkid == b.blkid) return 0;
  const Canonical x = Canon(dbss1, ibs1, a), y = Canon(dbss2, ibs2, b);
  if (x.object != y.object) return x.object < y.object ? -1 : 1;
  if (x.l0 != y.l0) return x.l0 < y.l0 ? -1 : 1;
  if (x.level != y.level) return x.level > y.level ? -1 : 1;  // at one position, the higher level first
  return 0;
}

Result<DestroyedTreeWalkResult> WalkDestroyedTree(Zio& zio, const BlockPtr& root,
                                                  const DestroyedTreeWalkOptions& opts) {
  return DestroyedTreeWalker(zio, opts).Run(root);
}

}  // namespace uzfs
