// Pool: clones (contract in pool.h). A clone is a new file system whose
// first state is a snapshot: its head dataset takes the snapshot's block
// pointer, referenced bytes and per-dataset features, its dir names the
// snapshot as origin, and the snapshot counts it as a child (ZFS's
// dsl_dataset_create_sync_dd with an origin). Nothing is copied: the
// blocks born up to the origin's txg are the origin's, so a clone's
// directory is charged only for what it writes, and what it overwrites of
// the origin's goes to its deadlist (pool_deadlist.cc), not back to the
// allocator. Its deadlist starts with its file system's keys below the
// origin's txg (version 26 on), so a later snapshot of the clone sorts the
// blocks it kills as a snapshot of that file system would.
//
// A clone keeps its origin's create-time ZPL properties (normalization,
// utf8only, casesensitivity): the tree is the origin's. A snapshot with
// clones cannot be destroyed (pool_snapshot_destroy.cc); destroying the
// clone unlinks it (UnlinkCloneFromOrigin).
//
// From version 26 the origin's directory lists its clones (dd_clones), and
// OpenZFS insists on finding a head there when it destroys it. Pools uzfs
// made before it kept that list lack the entries of their file systems
// (all clones of $ORIGIN): an import that finds $ORIGIN's list shorter
// than its children (DirClonesMissing) adds what is missing
// (AddMissingDirClones, as OpenZFS's upgrade to version 26 does).
#include <functional>
#include <set>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_identity.h"

namespace uzfs {

Status Pool::Clone(const std::string& origin, const std::string& target,
                   const std::vector<std::pair<std::string, std::string>>& props) {
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::NotSupported("cannot create '" + target + "': pool is read-only");
    UZFS_RETURN_IF_ERROR(CheckClone(origin, target, props).status());
  }
  return RunTask([this, origin, target, props](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    UZFS_ASSIGN_OR_RETURN(const uint64_t origin_obj, CheckClone(origin, target, props));
    return CreateDatasetSync(target, props, txg, origin_obj);
  });
}

Result<uint64_t> Pool::CheckClone(const std::string& origin, const std::string& target,
                                  const std::vector<std::pair<std::string, std::string>>& props) {
  const std::string q = "cannot create '" + target + "': ";
  const size_t at = origin.find('@');
  if (at == std::string::npos) {
    return Status::InvalidArgument("cannot open '" + origin + "': missing '@' delimiter in snapshot name");
  }
  if (target.find('@') != std::string::npos) {
    return Status::InvalidArgument(q + "snapshot delimiter '@' is not expected here");
  }
  if (!target.starts_with(ident_.name + "/")) {
    return Status::InvalidArgument(q + "source and target pools differ");
  }
  const std::string fs = origin.substr(0, at), snap = origin.substr(at + 1);
  const std::string missing = "cannot open '" + origin + "': dataset does not exist";
  auto dir = LookupDir(fs);
  if (!dir.ok()) return Status::NotFound(missing);
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(d.head_dataset_obj));
  if (snap.empty() || snap[0] == '$' || h.snapnames_zapobj == 0) return Status::NotFound(missing);
  auto obj = MosZapLookup(h.snapnames_zapobj, snap);
  if (!obj.ok()) return Status::NotFound(missing);
  for (const auto& [k, v] : props) {
    if (k == "normalization" || k == "utf8only" || k == "casesensitivity") {
      return Status::InvalidArgument(q + "property '" + k + "' is set when a file system is created; a clone has " +
                                     "its origin's");
    }
  }
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(*obj));
  if (s.flags & kDsFlagInconsistent) return Status::Busy(q + "the origin is being received");
  if (ident_.version >= kVersionDeadlists) {
    UZFS_ASSIGN_OR_RETURN(Dnode dl, mos_->GetDnode(h.deadlist_obj));
    if (dl.type != dmu_ot::kDeadlist) {
      return Status::NotSupported(q + "the deadlist of '" + fs +
                                  "' is in the format of an older pool version, which uzfs does not convert yet");
    }
  }
  UZFS_RETURN_IF_ERROR(CheckNewDatasetLocked(target, props));
  return *obj;
}

Result<uint64_t> Pool::CreateCloneHead(uint64_t dir_obj, uint64_t origin_obj, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(const uint64_t ds, CreateHeadOver(dir_obj, origin_obj, txg));
  UZFS_RETURN_IF_ERROR(LinkCloneToOrigin(dir_obj, ds, origin_obj, txg));
  return ds;
}

Result<uint64_t> Pool::CreateHeadOver(uint64_t dir_obj, uint64_t origin_obj, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys origin, ReadDsPhys(origin_obj));
  UZFS_ASSIGN_OR_RETURN(DslDirPhys od, ReadDirPhys(origin.dir_obj));
  UZFS_ASSIGN_OR_RETURN(const uint64_t ds, AllocateDatasetObject(txg));
  DslDatasetPhys p;
  p.dir_obj = dir_obj;
  p.prev_snap_obj = origin_obj;
  p.prev_snap_txg = origin.creation_txg;
  UZFS_ASSIGN_OR_RETURN(p.snapnames_zapobj, MosCreateZap(dmu_ot::kDslDsSnapMap, txg));
  p.creation_time = PoolClockSeconds();
  p.creation_txg = txg.number();
  // The keys of the origin's file system's deadlist below the origin: a
  // block the clone kills lands in the entry of the snapshot range it was
  // born in (ZFS's dsl_deadlist_clone; one bplist before version 26).
  if (ident_.version >= kVersionDeadlists) {
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys oh, ReadDsPhys(od.head_dataset_obj));
    UZFS_ASSIGN_OR_RETURN(auto entries, DeadlistEntries(oh.deadlist_obj));
    std::set<uint64_t> keys;
    for (const auto& [key, bpobj] : entries) {
      if (key < origin.creation_txg) keys.insert(key);
    }
    UZFS_ASSIGN_OR_RETURN(p.deadlist_obj, DeadlistWithKeys(keys, txg));
  } else {
    UZFS_ASSIGN_OR_RETURN(p.deadlist_obj, MosCreateDeadlist(txg));
  }
  p.referenced_bytes = origin.referenced_bytes;
  p.compressed_bytes = origin.compressed_bytes;
  p.uncompressed_bytes = origin.uncompressed_bytes;
  p.bp = origin.bp;
  p.fsid_guid = NewGuid() & ((uint64_t{1} << 56) - 1);
  p.guid = NewGuid();
  // What describes the tree (case-insensitive names, a receive not done)
  // comes with it; unique_bytes starts exact (nothing is the clone's yet).
  p.flags = (origin.flags & (kDsFlagInconsistent | kDsFlagCiDataset)) | kDsFlagUniqueAccurate;
  UZFS_RETURN_IF_ERROR(WriteDsPhys(ds, p, txg));
  UZFS_RETURN_IF_ERROR(CopyDatasetFeatures(origin_obj, ds, txg));
  return ds;
}

Result<bool> Pool::DirClonesMissing() {
  if (ident_.version < kVersionDeadlists || origin_snap_obj_ == 0) return false;
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys origin, ReadDsPhys(origin_snap_obj_));
  UZFS_ASSIGN_OR_RETURN(DslDirPhys od, ReadDirPhys(origin.dir_obj));
  uint64_t listed = 0;
  if (od.clones != 0) {
    UZFS_ASSIGN_OR_RETURN(auto entries, MosZapList(od.clones));
    listed = entries.size();
  }
  // $ORIGIN@$ORIGIN's children: its own head and every file system.
  return listed + 1 < origin.num_children;
}

Status Pool::AddMissingDirClones(Txg txg) {
  if (ident_.version < kVersionDeadlists) return Status::Ok();
  std::function<Status(uint64_t)> walk = [&](uint64_t dir) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir));
    if (d.origin_obj != 0 && d.head_dataset_obj != 0) {
      UZFS_ASSIGN_OR_RETURN(DslDatasetPhys origin, ReadDsPhys(d.origin_obj));
      UZFS_ASSIGN_OR_RETURN(DslDirPhys od, ReadDirPhys(origin.dir_obj));
      const std::string entry = NextClonesEntryName(d.head_dataset_obj);
      if (od.clones == 0) {
        UZFS_ASSIGN_OR_RETURN(od.clones, MosCreateZap(dmu_ot::kDslClones, txg));
        UZFS_RETURN_IF_ERROR(WriteDirPhys(origin.dir_obj, od, txg));
      }
      if (Result<uint64_t> v = MosZapLookup(od.clones, entry); !v.ok()) {
        if (!v.status().IsNotFound()) return v.status();
        UZFS_RETURN_IF_ERROR(MosZapAdd(od.clones, entry, d.head_dataset_obj, txg));
      }
    }
    UZFS_ASSIGN_OR_RETURN(auto kids, MosZapList(d.child_dir_zapobj));
    for (const auto& [name, v] : kids) {
      if (!v.empty()) UZFS_RETURN_IF_ERROR(walk(v[0]));
    }
    return Status::Ok();
  };
  return walk(root_dir_obj_);
}

}  // namespace uzfs
