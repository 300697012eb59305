// Snapshots opened for reading: the object sets behind .zfs/snapshot.
//
// OpenSnapshot opens a snapshot's object set from its dataset record's
// block pointer, with the options of its file system (the ARC, the cache
// policies) and read errors charged to the snapshot's own dataset, read
// only (ObjsetWriterOptions::read_only: every change refused, and no scan
// of the dnode blocks at open). No sync ever writes it. The pool counts the
// pointers alive per snapshot: a destroy of one that is open (a tree being
// browsed, a file open in it) is refused with Busy, because its blocks
// could be freed and reused under a reader (CheckSnapshotDestroy). Nothing
// else about the snapshot is pinned: it may be renamed, held, released,
// or moved by a promotion while open, since none of those change its
// blocks.
#include <algorithm>
#include <set>

#include "zfs/dsl/pool.h"

namespace uzfs {

Result<std::shared_ptr<ObjsetWriter>> Pool::OpenSnapshot(const std::string& name) {
  std::unique_ptr<ObjsetWriter> os;
  uint64_t obj = 0;
  {
    MutexLock l(&mu_);
    UZFS_ASSIGN_OR_RETURN(obj, LookupSnapshot(name));
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(obj));
    ObjsetWriterOptions o = DatasetOptions(s.dir_obj);
    o.on_read_error = ReadErrorHook(obj);
    o.read_only = true;  // opening costs the objset block, not a read of every dnode block
    UZFS_ASSIGN_OR_RETURN(os, ObjsetWriter::Open(*zio_, s.bp, o));
    open_snapshots_[obj]++;
  }
  // The count goes down when the last copy goes (the pool outlives it).
  // Made without mu_: should the shared_ptr's allocation fail, the
  // deleter runs at once and takes mu_ itself.
  return std::shared_ptr<ObjsetWriter>(os.release(), [this, obj](ObjsetWriter* w) {
    delete w;
    MutexLock l(&mu_);
    if (auto it = open_snapshots_.find(obj); it != open_snapshots_.end() && --it->second <= 0) {
      open_snapshots_.erase(it);
    }
  });
}

Result<Pool::SnapshotEntry> Pool::FindSnapshot(const std::string& name) {
  MutexLock l(&mu_);
  UZFS_ASSIGN_OR_RETURN(const uint64_t obj, LookupSnapshot(name));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(obj));
  return SnapshotEntry{name.substr(name.find('@') + 1), obj, s.creation_txg, s.creation_time};
}

Result<std::vector<Pool::SnapshotEntry>> Pool::Snapshots(const std::string& fs) {
  MutexLock l(&mu_);
  UZFS_ASSIGN_OR_RETURN(uint64_t dir, LookupDir(fs));
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(d.head_dataset_obj));
  std::vector<std::pair<uint64_t, SnapshotEntry>> found;  // by creation txg
  if (h.snapnames_zapobj != 0) {
    UZFS_ASSIGN_OR_RETURN(auto names, MosZapList(h.snapnames_zapobj));
    for (const auto& [snap, v] : names) {
      if (v.empty()) continue;
      UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(v[0]));
      found.push_back({s.creation_txg, SnapshotEntry{snap, v[0], s.creation_txg, s.creation_time}});
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<SnapshotEntry> out;
  out.reserve(found.size());
  for (auto& [txg, e] : found) out.push_back(std::move(e));
  return out;
}

uint64_t Pool::AddSnapshotReleaser(SnapshotReleaser r) {
  MutexLock l(&releasers_mu_);
  const uint64_t id = next_releaser_++;
  releasers_[id] = std::move(r);
  return id;
}

void Pool::RemoveSnapshotReleaser(uint64_t id) {
  MutexLock l(&releasers_mu_);
  releasers_.erase(id);
}

void Pool::ReleaseOpenSnapshots(const std::vector<std::string>& names) {
  std::set<uint64_t> open;
  {
    MutexLock l(&mu_);
    if (open_snapshots_.empty()) return;
    for (const std::string& n : names) {
      auto obj = LookupSnapshot(n);
      if (obj.ok() && open_snapshots_.count(*obj)) open.insert(*obj);
    }
  }
  if (open.empty()) return;
  MutexLock l(&releasers_mu_);
  for (const auto& [id, r] : releasers_) r(open);
}

}  // namespace uzfs
