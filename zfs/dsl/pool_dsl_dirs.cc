// Pool: DSL directories and head datasets (contract in pool.h): creating
// them, finding a directory by name, and the space accounting up the
// directory tree: DirUse charges a parent max(used, reserved) with
// CHILD_RSRV, refreservations as REFRSRV, and the reservation checks of
// zfs set.
#include <algorithm>
#include <set>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_identity.h"
#include "zfs/dsl/pool_space.h"

namespace uzfs {

Result<uint64_t> Pool::CreateDir(uint64_t parent_dir, const std::string& leaf, Txg txg,
                                 uint64_t origin_obj) {
  ObjectProps op;
  op.type = dmu_ot::kDslDir;
  op.bonustype = dmu_ot::kDslDir;
  op.bonuslen = kDslDirPhysSize;
  op.block_size = 512;
  op.indblkshift = 14;
  UZFS_ASSIGN_OR_RETURN(uint64_t dir, mos_->AllocateObject(op, txg));
  UZFS_ASSIGN_OR_RETURN(uint64_t props, MosCreateZap(dmu_ot::kDslProps, txg));
  UZFS_ASSIGN_OR_RETURN(uint64_t child, MosCreateZap(dmu_ot::kDslDirChildMap, txg));
  DslDirPhys d;
  d.creation_time = PoolClockSeconds();
  d.parent_obj = parent_dir;
  d.origin_obj = origin_obj;
  d.child_dir_zapobj = child;
  d.props_zapobj = props;
  d.flags = kDdFlagUsedBreakdown;
  UZFS_RETURN_IF_ERROR(WriteDirPhys(dir, d, txg));
  if (parent_dir != 0) {
    UZFS_ASSIGN_OR_RETURN(DslDirPhys p, ReadDirPhys(parent_dir));
    UZFS_RETURN_IF_ERROR(MosZapAdd(p.child_dir_zapobj, leaf, dir, txg));
  }
  return dir;
}

Result<uint64_t> Pool::AllocateDatasetObject(Txg txg) {
  ObjectProps op;
  op.type = dmu_ot::kDslDataset;
  op.bonustype = dmu_ot::kDslDataset;
  op.bonuslen = kDslDatasetPhysSize;
  op.block_size = 512;
  op.indblkshift = 14;
  return mos_->AllocateObject(op, txg);
}

Result<uint64_t> Pool::CreateHeadDataset(uint64_t dir_obj, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(const uint64_t ds, AllocateDatasetObject(txg));
  UZFS_ASSIGN_OR_RETURN(uint64_t snapnames, MosCreateZap(dmu_ot::kDslDsSnapMap, txg));
  UZFS_ASSIGN_OR_RETURN(uint64_t deadlist, MosCreateDeadlist(txg));
  DslDatasetPhys p;
  p.dir_obj = dir_obj;
  p.prev_snap_obj = origin_snap_obj_;
  p.prev_snap_txg = kOriginSnapTxg;
  p.snapnames_zapobj = snapnames;
  p.creation_time = PoolClockSeconds();
  p.creation_txg = txg.number();
  p.deadlist_obj = deadlist;
  p.fsid_guid = NewGuid() & ((uint64_t{1} << 56) - 1);
  p.guid = NewGuid();
  p.flags = 4;  // DS_FLAG_UNIQUE_ACCURATE
  UZFS_RETURN_IF_ERROR(WriteDsPhys(ds, p, txg));
  // A clone of $ORIGIN@$ORIGIN.
  UZFS_RETURN_IF_ERROR(LinkCloneToOrigin(dir_obj, ds, origin_snap_obj_, txg));
  return ds;
}

Status Pool::LinkCloneToOrigin(uint64_t dir_obj, uint64_t ds_obj, uint64_t origin_obj, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys origin, ReadDsPhys(origin_obj));
  origin.num_children++;
  // next_clones from version 17; $ORIGIN has its map from the start.
  if (ident_.version >= kVersionNextClones && origin.next_clones_obj == 0) {
    UZFS_ASSIGN_OR_RETURN(origin.next_clones_obj, MosCreateZap(dmu_ot::kNextClones, txg));
  }
  UZFS_RETURN_IF_ERROR(WriteDsPhys(origin_obj, origin, txg));
  if (origin.next_clones_obj != 0) {
    UZFS_RETURN_IF_ERROR(MosZapAdd(origin.next_clones_obj, NextClonesEntryName(ds_obj), ds_obj, txg));
  }
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir_obj));
  d.head_dataset_obj = ds_obj;
  d.origin_obj = origin_obj;
  UZFS_RETURN_IF_ERROR(WriteDirPhys(dir_obj, d, txg));
  // From version 26 the origin's dir lists every clone of its snapshots
  // (dd_clones; every file system is a clone of $ORIGIN): OpenZFS removes
  // a head from it when it destroys the head, and insists it is there.
  if (ident_.version >= kVersionDeadlists) {
    UZFS_ASSIGN_OR_RETURN(DslDirPhys od, ReadDirPhys(origin.dir_obj));
    if (od.clones == 0) {
      UZFS_ASSIGN_OR_RETURN(od.clones, MosCreateZap(dmu_ot::kDslClones, txg));
      UZFS_RETURN_IF_ERROR(WriteDirPhys(origin.dir_obj, od, txg));
    }
    UZFS_RETURN_IF_ERROR(MosZapAdd(od.clones, NextClonesEntryName(ds_obj), ds_obj, txg));
  }
  return Status::Ok();
}

Status Pool::UnlinkCloneFromOrigin(uint64_t ds_obj, uint64_t origin_obj, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys origin, ReadDsPhys(origin_obj));
  if (origin.num_children > 0) origin.num_children--;
  UZFS_RETURN_IF_ERROR(WriteDsPhys(origin_obj, origin, txg));
  // (Pools uzfs made before it kept dd_clones have no entry to remove.)
  auto drop = [&](uint64_t zap) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    if (zap == 0) return Status::Ok();
    Status s = MosZapRemove(zap, NextClonesEntryName(ds_obj), txg);
    return s.IsNotFound() ? Status::Ok() : s;
  };
  UZFS_RETURN_IF_ERROR(drop(origin.next_clones_obj));
  if (ident_.version >= kVersionDeadlists) {
    UZFS_ASSIGN_OR_RETURN(DslDirPhys od, ReadDirPhys(origin.dir_obj));
    UZFS_RETURN_IF_ERROR(drop(od.clones));
  }
  return Status::Ok();
}

Status Pool::DirUse(uint64_t dir_obj, std::array<int64_t, kDdUsedCount> parts, int64_t comp, int64_t uncomp,
                    Txg txg) {
  int64_t used = 0;
  for (int64_t v : parts) used += v;
  for (uint64_t d = dir_obj; d != 0;) {
    UZFS_ASSIGN_OR_RETURN(DslDirPhys p, ReadDirPhys(d));
    // What the parent counts for this dir: its use or its reservation,
    // whichever is larger.
    const uint64_t before = std::max(p.used_bytes, p.reserved);
    p.used_bytes += static_cast<uint64_t>(used);
    p.compressed_bytes += static_cast<uint64_t>(comp);
    p.uncompressed_bytes += static_cast<uint64_t>(uncomp);
    // Pools older than version 13 have no breakdown (the flag is off).
    if (p.flags & kDdFlagUsedBreakdown) {
      for (int i = 0; i < kDdUsedCount; i++) p.used_breakdown[i] += static_cast<uint64_t>(parts[i]);
    }
    const uint64_t after = std::max(p.used_bytes, p.reserved);
    UZFS_RETURN_IF_ERROR(WriteDirPhys(d, p, txg));
    const int64_t accounted = static_cast<int64_t>(after - before);
    parts = {};
    parts[static_cast<int>(DdUsed::kChild)] = used;
    parts[static_cast<int>(DdUsed::kChildReserve)] = accounted - used;
    used = accounted;
    d = p.parent_obj;
  }
  return Status::Ok();
}

Status Pool::ChargeDirs(uint64_t dir_obj, int64_t used, int64_t comp, int64_t uncomp, int which,
                        Txg txg) {
  std::array<int64_t, kDdUsedCount> parts{};
  parts[which] = used;
  return DirUse(dir_obj, parts, comp, uncomp, txg);
}

Result<uint64_t> Pool::DirSpaceAvailableLocked(uint64_t dir_obj) {
  std::vector<DslDirPhys> chain;
  for (uint64_t d = dir_obj; d != 0;) {
    UZFS_ASSIGN_OR_RETURN(DslDirPhys p, ReadDirPhys(d));
    chain.push_back(p);
    d = p.parent_obj;
  }
  std::vector<const DslDirPhys*> ptrs;
  for (const DslDirPhys& p : chain) ptrs.push_back(&p);
  UZFS_ASSIGN_OR_RETURN(const uint64_t usable, PoolUsableSpace(*this));
  return DirSpaceAvailable(ptrs, usable);
}

Status Pool::CheckQuotasForMove(uint64_t to_dir, uint64_t from_dir, uint64_t bytes, const std::string& refusal) {
  std::set<uint64_t> from_chain;
  for (uint64_t dd = from_dir; dd != 0;) {
    from_chain.insert(dd);
    UZFS_ASSIGN_OR_RETURN(DslDirPhys x, ReadDirPhys(dd));
    dd = x.parent_obj;
  }
  // Above the directory both share the space only moves.
  for (uint64_t dd = to_dir; dd != 0 && !from_chain.count(dd);) {
    UZFS_ASSIGN_OR_RETURN(DslDirPhys x, ReadDirPhys(dd));
    if (x.quota != 0 && x.used_bytes + bytes > x.quota) return Status::NoSpace(refusal);
    dd = x.parent_obj;
  }
  return Status::Ok();
}

Result<uint64_t> Pool::RefReservationOf(const DslDirPhys& d) {
  auto v = MosZapLookup(d.props_zapobj, "refreservation");
  if (v.ok()) return *v;
  if (v.status().IsNotFound()) return uint64_t{0};
  return v.status();
}

// ZFS's reservation check: the growth of max(used, reservation) must fit
// in what the parent may still grow by (the root: the pool's usable space
// minus its use), and a quota caps the reservation.
Status Pool::CheckReservation(uint64_t dir_obj, uint64_t value, const std::string& refusal) {
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir_obj));
  if (d.quota != 0 && value > d.quota) return Status::NoSpace(refusal);
  const uint64_t now = std::max(d.used_bytes, d.reserved);
  const uint64_t want = std::max(d.used_bytes, value);
  if (want <= now) return Status::Ok();
  uint64_t avail = 0;
  if (d.parent_obj != 0) {
    UZFS_ASSIGN_OR_RETURN(avail, DirSpaceAvailableLocked(d.parent_obj));
  } else {
    UZFS_ASSIGN_OR_RETURN(const uint64_t usable, PoolUsableSpace(*this));
    avail = usable > d.used_bytes ? usable - d.used_bytes : 0;
  }
  return want - now > avail ? Status::NoSpace(refusal) : Status::Ok();
}

// ZFS's refreservation check: a larger max(unique, refreservation) must
// fit in what the dataset's own directory may still grow by, and a
// refquota caps it.
Status Pool::CheckRefReservation(uint64_t dir_obj, uint64_t value, const std::string& refusal) {
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir_obj));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys ds, ReadDsPhys(d.head_dataset_obj));
  UZFS_ASSIGN_OR_RETURN(const uint64_t old, RefReservationOf(d));
  const uint64_t now = std::max(ds.unique_bytes, old);
  const uint64_t want = std::max(ds.unique_bytes, value);
  if (want <= now) return Status::Ok();
  auto refquota = MosZapLookup(d.props_zapobj, "refquota");
  if (!refquota.ok() && !refquota.status().IsNotFound()) return refquota.status();
  if (refquota.ok() && *refquota != 0 && value > *refquota) return Status::NoSpace(refusal);
  UZFS_ASSIGN_OR_RETURN(const uint64_t avail, DirSpaceAvailableLocked(dir_obj));
  return want - now > avail ? Status::NoSpace(refusal) : Status::Ok();
}

// dd_reserved := value; the parent is charged the change of
// max(used, reserved) as CHILD_RSRV (and passes it on by its own rule).
Status Pool::SetReservation(uint64_t dir_obj, uint64_t value, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir_obj));
  const int64_t delta = static_cast<int64_t>(std::max(d.used_bytes, value)) -
                        static_cast<int64_t>(std::max(d.used_bytes, d.reserved));
  d.reserved = value;
  UZFS_RETURN_IF_ERROR(WriteDirPhys(dir_obj, d, txg));
  if (d.parent_obj == 0 || delta == 0) return Status::Ok();
  std::array<int64_t, kDdUsedCount> parts{};
  parts[static_cast<int>(DdUsed::kChildReserve)] = delta;
  return DirUse(d.parent_obj, parts, 0, 0, txg);
}

// The unused part of a refreservation, max(0, refreservation - unique), is
// in the dataset's own directory as REFRSRV; this moves it from the old
// value's to the new one's.
Status Pool::SetRefReservation(uint64_t dir_obj, uint64_t old_value, uint64_t value, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir_obj));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys ds, ReadDsPhys(d.head_dataset_obj));
  const uint64_t u = ds.unique_bytes;
  const int64_t delta = static_cast<int64_t>(std::max(u, value)) - static_cast<int64_t>(std::max(u, old_value));
  if (delta == 0) return Status::Ok();
  std::array<int64_t, kDdUsedCount> parts{};
  parts[static_cast<int>(DdUsed::kRefReserve)] = delta;
  return DirUse(dir_obj, parts, 0, 0, txg);
}

Result<uint64_t> Pool::LookupDir(const std::string& name) {
  if (name == ident_.name) return root_dir_obj_;
  if (!name.starts_with(ident_.name + "/")) return Status::NotFound("dataset does not exist");
  uint64_t dir = root_dir_obj_;
  size_t pos = ident_.name.size() + 1;
  while (pos <= name.size()) {
    size_t slash = name.find('/', pos);
    if (slash == std::string::npos) slash = name.size();
    const std::string comp = name.substr(pos, slash - pos);
    if (comp.empty() || comp[0] == '$') return Status::NotFound("dataset does not exist");
    UZFS_ASSIGN_OR_RETURN(DslDirPhys p, ReadDirPhys(dir));
    auto child = MosZapLookup(p.child_dir_zapobj, comp);
    if (!child.ok()) return Status::NotFound("dataset does not exist");
    dir = *child;
    pos = slash + 1;
  }
  return dir;
}

}  // namespace uzfs
