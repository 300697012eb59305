// Pool: deferred destroy of snapshots (zfs destroy -d; contract in
// pool.h). A snapshot that user holds or clones keep cannot be destroyed
// now; -d marks it instead (DS_FLAG_DEFER_DESTROY in its dataset's flags,
// version 18 on, as ZFS does), and it is destroyed in the same sync task
// that releases its last hold or destroys its last clone. One with neither
// is destroyed at once, as without -d. A marked snapshot shows
// defer_destroy=on; zfs-fuse and OpenZFS honour the mark the same way, so
// a pool may move between them with marks pending.
#include <set>

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
    if (!pinned) UZFS_RETURN_IF_ERROR(CheckSnapshotDestroy(n).status());
  }
  return Status::Ok();
}

Status Pool::DeferDestroySnapshots(const std::vector<std::string>& names) {
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (const std::string& n : names) {
    if (seen.insert(n).second) unique.push_back(n);
  }
  if (unique.empty()) return Status::Ok();
  ReleaseOpenSnapshots(unique);
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::NotSupported("pool is read-only");
    UZFS_RETURN_IF_ERROR(CheckDeferDestroy(unique));
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

Status Pool::DestroyIfDeferred(uint64_t obj, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(obj));
  if ((s.flags & kDsFlagDeferDestroy) == 0) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(const bool pinned, SnapshotPinned(obj));
  if (pinned) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(const std::string name, SnapshotName(obj));
  // A snapshot someone is reading under .zfs/snapshot stays marked; the
  // release or clone destroy that found it goes on.
  Result<SnapshotToDestroy> t = CheckSnapshotDestroy(name);
  if (!t.ok()) return t.status().code() == Code::kBusy ? Status::Ok() : t.status();
  return DestroySnapshotSync(*t, txg);
}

}  // namespace uzfs
