// Pool: user holds on snapshots (contract in pool.h; zfs hold, release,
// holds). A hold is an entry of the snapshot's userrefs ZAP (ZFS's
// ds_userrefs_obj, made at the first hold): the tag, and the time it was
// placed in seconds. A snapshot with holds refuses destroy
// (pool_snapshot_destroy.cc). Holds came with pool version 18.
//
// Each call checks every snapshot and tag first and then changes them all
// in one sync task, so a hold or release of several snapshots is all or
// nothing.
#include <set>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_identity.h"

namespace uzfs {

namespace {

inline constexpr uint64_t kVersionUserRefs = 18;
inline constexpr size_t kMaxTagLength = 255;

}  // namespace

Result<uint64_t> Pool::LookupSnapshot(const std::string& name) {
  const size_t at = name.find('@');
  if (at == std::string::npos) return Status::InvalidArgument("'" + name + "' is not a snapshot");
  const std::string missing = "cannot open '" + name + "': dataset does not exist";
  auto dir = LookupDir(name.substr(0, at));
  if (!dir.ok()) return Status::NotFound(missing);
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(d.head_dataset_obj));
  const std::string snap = name.substr(at + 1);
  if (h.snapnames_zapobj == 0 || snap.empty()) return Status::NotFound(missing);
  auto obj = MosZapLookup(h.snapnames_zapobj, snap);
  if (!obj.ok()) return Status::NotFound(missing);
  return *obj;
}

Status Pool::CheckHoldChange(const std::vector<std::string>& snapshots, const std::string& tag, bool hold) {
  const std::string verb = hold ? "cannot hold snapshot '" : "cannot release hold from snapshot '";
  for (const std::string& n : snapshots) {
    UZFS_ASSIGN_OR_RETURN(const uint64_t obj, LookupSnapshot(n));
    if (ident_.version < kVersionUserRefs) return Status::NotSupported(verb + n + "': pool must be upgraded");
    if (tag.empty()) return Status::InvalidArgument(verb + n + "': tag is empty");
    if (tag.size() > kMaxTagLength) return Status::InvalidArgument(verb + n + "': tag too long");
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(obj));
    const bool has = s.userrefs_obj != 0 && MosZapLookup(s.userrefs_obj, tag).ok();
    if (hold && has) return Status::Exists(verb + n + "': tag already exists on this dataset");
    if (!hold && !has) return Status::NotFound(verb + n + "': no such tag on this dataset");
  }
  return Status::Ok();
}

Status Pool::ChangeHolds(const std::vector<std::string>& snapshots, const std::string& tag, bool hold) {
  // The same snapshot named twice is held (or released) once.
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const std::string& n : snapshots) {
    if (seen.insert(n).second) names.push_back(n);
  }
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::NotSupported("pool is read-only");
    UZFS_RETURN_IF_ERROR(CheckHoldChange(names, tag, hold));
  }
  // A release may destroy a snapshot marked by zfs destroy -d: what
  // .zfs/snapshot has open of it idly is let go first.
  if (!hold) ReleaseOpenSnapshots(names);
  return RunTask([this, names, tag, hold](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    UZFS_RETURN_IF_ERROR(CheckHoldChange(names, tag, hold));
    for (const std::string& n : names) {
      UZFS_ASSIGN_OR_RETURN(const uint64_t obj, LookupSnapshot(n));
      UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(obj));
      if (!hold) {
        UZFS_RETURN_IF_ERROR(MosZapRemove(s.userrefs_obj, tag, txg));
        // The last hold of a snapshot marked by zfs destroy -d: it goes.
        UZFS_RETURN_IF_ERROR(DestroyIfDeferred(obj, txg));
        continue;
      }
      if (s.userrefs_obj == 0) {
        UZFS_ASSIGN_OR_RETURN(s.userrefs_obj, MosCreateZap(dmu_ot::kUserRefs, txg));
        UZFS_RETURN_IF_ERROR(WriteDsPhys(obj, s, txg));
      }
      UZFS_RETURN_IF_ERROR(MosZapAdd(s.userrefs_obj, tag, PoolClockSeconds(), txg));
    }
    return Status::Ok();
  });
}

Status Pool::Hold(const std::vector<std::string>& snapshots, const std::string& tag) {
  return ChangeHolds(snapshots, tag, true);
}

Status Pool::Release(const std::vector<std::string>& snapshots, const std::string& tag) {
  return ChangeHolds(snapshots, tag, false);
}

Result<std::map<std::string, uint64_t>> Pool::Holds(const std::string& snapshot) {
  MutexLock l(&mu_);
  UZFS_ASSIGN_OR_RETURN(const uint64_t obj, LookupSnapshot(snapshot));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(obj));
  std::map<std::string, uint64_t> out;
  if (s.userrefs_obj == 0) return out;
  UZFS_ASSIGN_OR_RETURN(auto entries, MosZapList(s.userrefs_obj));
  for (const auto& [tag, v] : entries) out[tag] = v.empty() ? 0 : v[0];
  return out;
}

}  // namespace uzfs
