// Pool: deferred destroy of snapshots (zfs destroy -d; contract in
// pool.h). A snapshot that user holds or clones keep cannot be destroyed
// now; -d marks it instead (DS_FLAG_DEFER_DESTROY in its dataset's flags,
// version 18 on, as ZFS does), and it is destroyed in the same sync task
// that releases its last hold or destroys its last clone. One with neither
// is destroyed at once, as without -d. A snapshot open under
// .zfs/snapshot is let go first; one still in use then stays marked (a
// later zfs destroy finishes it). A marked snapshot shows
// defer_destroy=on; zfs-fuse and OpenZFS honour the mark the same way, so
// a pool may move between them with marks pending.
#include <set>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"

namespace uzfs {

namespace {
constexpr uint64_t kVersionDeferDestroy = 18;  // SPA_VERSION_USERREFS
}  // namespace

Result<bool> Pool::SnapshotPinned(uint64_t obj) {
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(obj));
  if (s.num_children > 1) return true;
  if (s.userrefs_obj == 0) return false;
  UZFS_ASSIGN_OR_RETURN(auto holds, MosZapList(s.userrefs_obj));
  return !holds.empty();
}

Status Pool::CheckDeferDestroy(const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    UZFS_ASSIGN_OR_RETURN(const uint64_t obj, LookupSnapshot(n));
    if (ident_.version < kVersionDeferDestroy) {
      return Status::NotSupported("cannot destroy snapshot " + n + ": pool must be upgraded");
    }
    UZFS_ASSIGN_OR_RETURN(const bool pinned, SnapshotPinned(obj));
    if (!pinned) {
      UZFS_RETURN_IF_ERROR(CheckSnapshotDestroy(n).status());
      continue;
    }
    // One that could never be destroyed is not marked.
    UZFS_RETURN_IF_ERROR(CheckDestroyableDeadlists(n, obj));
  }
  return Status::Ok();
}

Status Pool::CheckDestroyableDeadlists(const std::string& name, uint64_t obj) {
  if (ident_.version < kVersionDeadlists) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(obj));
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(s.dir_obj));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(d.head_dataset_obj));
  for (uint64_t dl : {s.deadlist_obj, h.deadlist_obj}) {
    UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(dl));
    if (dn.type != dmu_ot::kDeadlist) {
      return Status::NotSupported("cannot destroy snapshot " + name +
                                  ": its deadlists are in the format of an older pool version, which uzfs does "
                                  "not convert yet");
    }
  }
  return Status::Ok();
}

Status Pool::DeferDestroySnapshots(const std::vector<std::string>& names, bool dry_run) {
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (const std::string& n : names) {
    if (seen.insert(n).second) unique.push_back(n);
  }
  if (unique.empty()) return Status::Ok();
  if (!dry_run) ReleaseOpenSnapshots(unique);
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::NotSupported("pool is read-only");
    UZFS_RETURN_IF_ERROR(CheckDeferDestroy(unique));
    if (dry_run) return Status::Ok();
  }
  return RunTask([this, unique](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    UZFS_RETURN_IF_ERROR(CheckDeferDestroy(unique));
    // Marked first, destroyed after: a destroy changes no other
    // snapshot's holds or clones.
    std::vector<SnapshotToDestroy> now;
    for (const std::string& n : unique) {
      UZFS_ASSIGN_OR_RETURN(const uint64_t obj, LookupSnapshot(n));
      UZFS_ASSIGN_OR_RETURN(const bool pinned, SnapshotPinned(obj));
      if (!pinned) {
        UZFS_ASSIGN_OR_RETURN(SnapshotToDestroy t, CheckSnapshotDestroy(n));
        now.push_back(std::move(t));
        continue;
      }
      UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(obj));
      if (s.flags & kDsFlagDeferDestroy) continue;
      s.flags |= kDsFlagDeferDestroy;
      UZFS_RETURN_IF_ERROR(WriteDsPhys(obj, s, txg));
    }
    for (const SnapshotToDestroy& t : now) UZFS_RETURN_IF_ERROR(DestroySnapshotSync(t, txg));
    return Status::Ok();
  });
}

std::string Pool::MarkedOriginOf(const std::string& name) {
  auto dir = LookupDir(name);
  if (!dir.ok()) return "";
  auto d = ReadDirPhys(*dir);
  if (!d.ok() || d->origin_obj == 0) return "";
  auto s = ReadDsPhys(d->origin_obj);
  if (!s.ok() || (s->flags & kDsFlagDeferDestroy) == 0) return "";
  auto n = SnapshotName(d->origin_obj);
  return n.ok() ? *n : "";
}

Status Pool::DestroyIfDeferred(uint64_t obj, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(obj));
  if ((s.flags & kDsFlagDeferDestroy) == 0) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(const bool pinned, SnapshotPinned(obj));
  if (pinned) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(const std::string name, SnapshotName(obj));
  // The caller has changed the MOS already: a snapshot that cannot go now
  // (one still open under .zfs/snapshot after the releasers were asked)
  // stays marked instead of failing the task; zfs destroy -d or a plain
  // destroy of it finishes it later.
  Result<SnapshotToDestroy> t = CheckSnapshotDestroy(name);
  if (!t.ok()) return Status::Ok();
  return DestroySnapshotSync(*t, txg);
}

}  // namespace uzfs
