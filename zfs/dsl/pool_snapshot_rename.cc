// Pool: renaming snapshots (contract in pool.h; zfs rename fs@a fs@b).
// A snapshot's name is only its entry in its file system's snapshot-name
// ZAP: the entry moves, the dataset record stays (ZFS's
// dsl_dataset_rename_snapshot). A recursive rename renames the snapshot of
// that name in every file system below too, those that have one; every
// one is checked before any changes, and all change in one sync task.
#include <functional>

#include "zfs/dsl/pool.h"

namespace uzfs {

Result<std::vector<std::string>> Pool::CheckSnapshotRename(const std::string& from, const std::string& to,
                                                           bool recursive) {
  UZFS_ASSIGN_OR_RETURN(auto src, SplitSnapshotName(from, "rename"));
  const std::string q = "cannot rename to '" + to + "': ";
  const size_t at = to.find('@');
  if (at == std::string::npos || to.substr(0, at) != src.first) {
    return Status::InvalidArgument(q + "snapshots must be part of same dataset");
  }
  UZFS_ASSIGN_OR_RETURN(auto dst, SplitSnapshotName(to, "rename to"));
  UZFS_RETURN_IF_ERROR(LookupSnapshot(from).status());
  // The file systems whose snapshot `from` is renamed.
  std::vector<std::string> file_systems{src.first};
  if (recursive) {
    std::function<Status(const std::string&, uint64_t)> below =
        [&](const std::string& name, uint64_t dir) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
      UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir));
      UZFS_ASSIGN_OR_RETURN(auto kids, MosZapList(d.child_dir_zapobj));
      for (const auto& [k, v] : kids) {
        if (k.empty() || k[0] == '$' || v.empty()) continue;
        const std::string child = name + "/" + k;
        if (LookupSnapshot(child + "@" + src.second).ok()) file_systems.push_back(child);
        UZFS_RETURN_IF_ERROR(below(child, v[0]));
      }
      return Status::Ok();
    };
    UZFS_ASSIGN_OR_RETURN(const uint64_t top, LookupDir(src.first));
    UZFS_RETURN_IF_ERROR(below(src.first, top));
  }
  for (const std::string& fs : file_systems) {
    // ZFS_MAX_DATASET_NAME_LEN, with its NUL.
    if (fs.size() + 1 + dst.second.size() > 255) {
      return Status::InvalidArgument("cannot rename to '" + fs + "@" + dst.second + "': name is too long");
    }
    if (LookupSnapshot(fs + "@" + dst.second).ok()) {
      return Status::Exists("cannot rename to '" + fs + "@" + dst.second + "': dataset already exists");
    }
  }
  return file_systems;
}

Status Pool::RenameSnapshot(const std::string& from, const std::string& to, bool recursive) {
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::NotSupported("pool is read-only");
    UZFS_RETURN_IF_ERROR(CheckSnapshotRename(from, to, recursive).status());
  }
  return RunTask([this, from, to, recursive](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    UZFS_ASSIGN_OR_RETURN(const std::vector<std::string> file_systems, CheckSnapshotRename(from, to, recursive));
    const std::string old_snap = from.substr(from.find('@') + 1), new_snap = to.substr(to.find('@') + 1);
    for (const std::string& fs : file_systems) {
      UZFS_ASSIGN_OR_RETURN(const uint64_t obj, LookupSnapshot(fs + "@" + old_snap));
      UZFS_ASSIGN_OR_RETURN(const uint64_t dir, LookupDir(fs));
      UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir));
      UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(d.head_dataset_obj));
      UZFS_RETURN_IF_ERROR(MosZapRemove(h.snapnames_zapobj, old_snap, txg));
      UZFS_RETURN_IF_ERROR(MosZapAdd(h.snapnames_zapobj, new_snap, obj, txg));
    }
    return Status::Ok();
  });
}

}  // namespace uzfs
