// Pool: zfs promote (contract in pool.h). Promoting clone C of snapshot S
// (of file system F) turns the relation round, as ZFS's
// dsl_dataset_promote does: S and every older snapshot of F (back to F's
// own origin) move into C's directory under the same names; F becomes a
// clone of S; C takes F's origin. Nothing is copied: the blocks stay where
// they are, and what moves is the accounting.
//
// The space of the blocks born in F from its origin up to S (S's
// referenced bytes, plus every moved snapshot's deadlist, less F's
// origin's referenced bytes) moves from F's directory to C's. Of it, C's
// SNAP usage becomes what the deadlists of the moved snapshots and of C's
// own snapshots and head hold born after F's old origin, and F's SNAP
// usage what the deadlists of F's later snapshots and head hold born after
// S; the rest is HEAD. S's unique bytes become what its new successor
// (C's oldest snapshot or head) killed that S alone holds. The origins'
// lists follow: S's successor becomes C's oldest dataset (F's oldest
// after S goes into S's next_clones), and from version 26 the dd_clones of
// F's and C's directories (and of F's old origin's) trade their entries.
//
// Everything is checked before anything changes (a snapshot name of F's
// that C has too, a name that would grow too long, or a quota between C
// and the directory it shares with F that the space would exceed refuses
// it) and all of it runs in one sync task.
#include <limits>
#include <map>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"

namespace uzfs {

struct Pool::PromotePlan {
  uint64_t dir = 0, head = 0;                // C
  uint64_t origin = 0;                       // S
  uint64_t origin_dir = 0, origin_head = 0;  // F
  uint64_t origin_origin = 0;                // F's origin (0: none)
  std::vector<uint64_t> shared;              // S and F's older snapshots, newest first
  std::vector<uint64_t> clone_snaps;         // C's head and snapshots, newest first
  std::vector<uint64_t> origin_snaps;        // F's head and snapshots after S, newest first
  std::map<uint64_t, std::string> names;     // the shared snapshots' names
  Space3 moved;
  uint64_t unique = 0, clone_snap_used = 0, origin_snap_used = 0;
};

// The bytes of a deadlist (keyed, or a bplist before version 26) born
// after txg `after`.
Result<Pool::Space3> Pool::DeadBornAfter(uint64_t dl_obj, uint64_t after) {
  if (ident_.version >= kVersionDeadlists) {
    UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(dl_obj));
    if (dn.type != dmu_ot::kDeadlist) {
      return Status::NotSupported("a deadlist is in the format of an older pool version, which uzfs does not convert yet");
    }
    return DeadlistRange(dl_obj, after, std::numeric_limits<uint64_t>::max());
  }
  return BplistBornIn(dl_obj, after, std::numeric_limits<uint64_t>::max());
}

Result<Pool::PromotePlan> Pool::CheckPromote(const std::string& name) {
  const std::string q = "cannot promote '" + name + "': ";
  auto dir = LookupDir(name);
  if (!dir.ok()) return Status::NotFound("cannot open '" + name + "': dataset does not exist");
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
  if (d.origin_obj == 0 || d.origin_obj == origin_snap_obj_) {
    return Status::InvalidArgument(q + "not a cloned filesystem");
  }
  PromotePlan p;
  p.dir = *dir;
  p.head = d.head_dataset_obj;
  p.origin = d.origin_obj;
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(p.origin));
  p.origin_dir = s.dir_obj;
  UZFS_ASSIGN_OR_RETURN(DslDirPhys od, ReadDirPhys(p.origin_dir));
  p.origin_head = od.head_dataset_obj;
  p.origin_origin = od.origin_obj;
  // A dataset chain from `last` back to (not including) `first`.
  auto chain = [&](uint64_t last, uint64_t first, std::vector<uint64_t>* out) UZFS_NO_THREAD_SAFETY_ANALYSIS {
    for (uint64_t obj = last; obj != first;) {
      if (obj == 0 || out->size() > (1u << 24)) {
        return Status::Corruption(q + "the snapshot chain of dataset " + std::to_string(last) + " is broken");
      }
      out->push_back(obj);
      UZFS_ASSIGN_OR_RETURN(DslDatasetPhys ds, ReadDsPhys(obj));
      obj = ds.prev_snap_obj;
    }
    return Status::Ok();
  };
  UZFS_RETURN_IF_ERROR(chain(p.origin, p.origin_origin, &p.shared));
  UZFS_RETURN_IF_ERROR(chain(p.head, p.origin, &p.clone_snaps));
  UZFS_RETURN_IF_ERROR(chain(p.origin_head, p.origin, &p.origin_snaps));

  // Names: each moving snapshot's must be free in C.
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys oh, ReadDsPhys(p.origin_head));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys ch, ReadDsPhys(p.head));
  UZFS_ASSIGN_OR_RETURN(auto f_snaps, MosZapList(oh.snapnames_zapobj));
  for (const auto& [snap, v] : f_snaps) {
    if (!v.empty()) p.names[v[0]] = snap;
  }
  UZFS_ASSIGN_OR_RETURN(const std::string parent, DirName(p.origin_dir));
  for (uint64_t obj : p.shared) {
    auto n = p.names.find(obj);
    if (n == p.names.end()) return Status::Corruption(q + "snapshot " + std::to_string(obj) + " has no name");
    // ZFS_MAX_DATASET_NAME_LEN, with its NUL.
    if (name.size() + 1 + n->second.size() > 255) {
      return Status::InvalidArgument(q + "snapshot '" + n->second + "' would have a name that is too long");
    }
    if (MosZapLookup(ch.snapnames_zapobj, n->second).ok()) {
      return Status::Exists(q + "conflicting snapshot '" + n->second + "' from parent '" + parent + "'");
    }
  }

  // The space that moves: what was born in F from its origin up to S.
  p.moved = Space3{s.referenced_bytes, s.compressed_bytes, s.uncompressed_bytes};
  for (uint64_t obj : p.shared) {
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys ds, ReadDsPhys(obj));
    if (ds.prev_snap_obj == 0) continue;
    UZFS_ASSIGN_OR_RETURN(Space3 dead, DeadBornAfter(ds.deadlist_obj, 0));
    p.moved.used += dead.used;
    p.moved.comp += dead.comp;
    p.moved.uncomp += dead.uncomp;
  }
  uint64_t oo_txg = 0;
  if (p.origin_origin != 0) {
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys oo, ReadDsPhys(p.origin_origin));
    oo_txg = oo.creation_txg;
    p.moved.used -= std::min(p.moved.used, oo.referenced_bytes);
    p.moved.comp -= std::min(p.moved.comp, oo.compressed_bytes);
    p.moved.uncomp -= std::min(p.moved.uncomp, oo.uncompressed_bytes);
  }
  // The space must fit under the quotas between C's directory and the
  // ancestor it shares with F's.
  UZFS_RETURN_IF_ERROR(CheckQuotasForMove(p.dir, p.origin_dir, p.moved.used, q + "out of space"));
  // The snapshot usage each directory has after: what its datasets'
  // deadlists hold born after its (new) origin.
  for (const auto* list : {&p.shared, &p.clone_snaps}) {
    for (uint64_t obj : *list) {
      UZFS_ASSIGN_OR_RETURN(DslDatasetPhys ds, ReadDsPhys(obj));
      UZFS_ASSIGN_OR_RETURN(Space3 dead, DeadBornAfter(ds.deadlist_obj, oo_txg));
      p.clone_snap_used += dead.used;
    }
  }
  for (uint64_t obj : p.origin_snaps) {
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys ds, ReadDsPhys(obj));
    UZFS_ASSIGN_OR_RETURN(Space3 dead, DeadBornAfter(ds.deadlist_obj, s.creation_txg));
    p.origin_snap_used += dead.used;
  }
  // S's unique bytes: what its new successor killed born after S's
  // predecessor.
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys newnext, ReadDsPhys(p.clone_snaps.back()));
  UZFS_ASSIGN_OR_RETURN(Space3 unique, DeadBornAfter(newnext.deadlist_obj, s.prev_snap_txg));
  p.unique = unique.used;
  return p;
}

Status Pool::Promote(const std::string& name) {
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::NotSupported("cannot promote '" + name + "': pool is read-only");
    UZFS_RETURN_IF_ERROR(CheckPromote(name).status());
  }
  return RunTask([this, name](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    UZFS_ASSIGN_OR_RETURN(PromotePlan p, CheckPromote(name));
    return PromoteSync(p, txg);
  });
}

Status Pool::PromoteSync(const PromotePlan& p, Txg txg) {
  const bool dir_clones = ident_.version >= kVersionDeadlists;
  const uint64_t newnext = p.clone_snaps.back(), oldnext = p.origin_snaps.back();
  // S's successor is C's oldest dataset now; F's goes among its clones.
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(p.origin));
  s.next_snap_obj = newnext;
  s.unique_bytes = p.unique;
  UZFS_RETURN_IF_ERROR(WriteDsPhys(p.origin, s, txg));
  if (s.next_clones_obj != 0) {
    Status rm = MosZapRemove(s.next_clones_obj, NextClonesEntryName(newnext), txg);
    if (!rm.ok() && !rm.IsNotFound()) return rm;
    UZFS_RETURN_IF_ERROR(MosZapAdd(s.next_clones_obj, NextClonesEntryName(oldnext), oldnext, txg));
  }

  // The origins: C takes F's, F's is S.
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(p.dir));
  d.origin_obj = p.origin_origin;
  if (dir_clones && d.clones == 0) {
    UZFS_ASSIGN_OR_RETURN(d.clones, MosCreateZap(dmu_ot::kDslClones, txg));
  }
  UZFS_RETURN_IF_ERROR(WriteDirPhys(p.dir, d, txg));
  UZFS_ASSIGN_OR_RETURN(DslDirPhys od, ReadDirPhys(p.origin_dir));
  od.origin_obj = p.origin;
  UZFS_RETURN_IF_ERROR(WriteDirPhys(p.origin_dir, od, txg));
  // A missing entry (a pool an earlier uzfs made) is no error.
  auto remove = [&](uint64_t zap, uint64_t obj) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    if (zap == 0) return Status::Ok();
    Status rm = MosZapRemove(zap, NextClonesEntryName(obj), txg);
    return rm.IsNotFound() ? Status::Ok() : rm;
  };
  if (dir_clones) {
    UZFS_RETURN_IF_ERROR(remove(od.clones, p.head));
    if (p.origin_origin != 0) {
      UZFS_ASSIGN_OR_RETURN(DslDatasetPhys oo, ReadDsPhys(p.origin_origin));
      UZFS_ASSIGN_OR_RETURN(DslDirPhys ood, ReadDirPhys(oo.dir_obj));
      if (ood.clones != 0) {
        UZFS_RETURN_IF_ERROR(remove(ood.clones, p.origin_head));
        UZFS_RETURN_IF_ERROR(MosZapAdd(ood.clones, NextClonesEntryName(p.head), p.head, txg));
      }
    }
    UZFS_RETURN_IF_ERROR(MosZapAdd(d.clones, NextClonesEntryName(p.origin_head), p.origin_head, txg));
  }

  // The snapshots move, with the clones made of them.
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys oh, ReadDsPhys(p.origin_head));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys ch, ReadDsPhys(p.head));
  for (uint64_t obj : p.shared) {
    const std::string& snap = p.names.at(obj);
    UZFS_RETURN_IF_ERROR(MosZapRemove(oh.snapnames_zapobj, snap, txg));
    UZFS_RETURN_IF_ERROR(MosZapAdd(ch.snapnames_zapobj, snap, obj, txg));
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys ds, ReadDsPhys(obj));
    ds.dir_obj = p.dir;
    UZFS_RETURN_IF_ERROR(WriteDsPhys(obj, ds, txg));
    if (!dir_clones || ds.next_clones_obj == 0) continue;
    UZFS_ASSIGN_OR_RETURN(auto clones, MosZapList(ds.next_clones_obj));
    for (const auto& [k, v] : clones) {
      if (v.empty() || v[0] == oldnext) continue;  // F's, moved above
      UZFS_ASSIGN_OR_RETURN(DslDatasetPhys c, ReadDsPhys(v[0]));
      UZFS_ASSIGN_OR_RETURN(DslDirPhys cd, ReadDirPhys(c.dir_obj));
      UZFS_RETURN_IF_ERROR(remove(od.clones, cd.head_dataset_obj));
      UZFS_RETURN_IF_ERROR(MosZapAdd(d.clones, NextClonesEntryName(cd.head_dataset_obj), cd.head_dataset_obj, txg));
    }
  }

  // The space: F's births up to S become C's.
  // (Each directory's breakdown only where it keeps one.)
  const int64_t moved = static_cast<int64_t>(p.moved.used);
  const int64_t clone_delta = (d.flags & kDdFlagUsedBreakdown) != 0
                                  ? static_cast<int64_t>(p.clone_snap_used) - static_cast<int64_t>(d.used_breakdown[1])
                                  : 0;
  const int64_t origin_delta =
      (od.flags & kDdFlagUsedBreakdown) != 0
          ? static_cast<int64_t>(p.origin_snap_used) - static_cast<int64_t>(od.used_breakdown[1])
          : 0;
  std::array<int64_t, kDdUsedCount> to_clone{}, from_origin{};
  to_clone[static_cast<int>(DdUsed::kSnap)] = clone_delta;
  to_clone[static_cast<int>(DdUsed::kHead)] = moved - clone_delta;
  from_origin[static_cast<int>(DdUsed::kSnap)] = origin_delta;
  from_origin[static_cast<int>(DdUsed::kHead)] = -moved - origin_delta;
  UZFS_RETURN_IF_ERROR(DirUse(p.dir, to_clone, static_cast<int64_t>(p.moved.comp),
                              static_cast<int64_t>(p.moved.uncomp), txg));
  UZFS_RETURN_IF_ERROR(DirUse(p.origin_dir, from_origin, -static_cast<int64_t>(p.moved.comp),
                              -static_cast<int64_t>(p.moved.uncomp), txg));
  return Status::Ok();
}

}  // namespace uzfs
