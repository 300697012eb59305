// Pool: the written@SNAP property (contract in pool.h). What a dataset
// references that an earlier snapshot does not, as ZFS's
// dsl_dataset_space_written computes it: the difference of their
// referenced bytes, plus what was freed between them that the snapshot
// held, which is on the deadlists from the newer dataset back to the
// snapshot: whole when a deadlist starts at the snapshot, else the part
// born by the snapshot's txg. The snapshot may be in the dataset's own
// file system or in its origin's (and so on).
#include <algorithm>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"

namespace uzfs {

Result<uint64_t> Pool::SpaceWritten(const std::string& snapshot, const std::string& name) {
  MutexLock l(&mu_);
  UZFS_ASSIGN_OR_RETURN(const uint64_t old_obj, LookupSnapshot(snapshot));
  uint64_t new_obj = 0;
  if (name.find('@') != std::string::npos) {
    UZFS_ASSIGN_OR_RETURN(new_obj, LookupSnapshot(name));
  } else {
    auto dir = LookupDir(name);
    if (!dir.ok()) return Status::NotFound("cannot open '" + name + "': dataset does not exist");
    UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
    new_obj = d.head_dataset_obj;
  }
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys old, ReadDsPhys(old_obj));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys nw, ReadDsPhys(new_obj));
  const Status not_before =
      Status::InvalidArgument("'" + snapshot + "' is not an earlier snapshot of '" + name + "'");
  if (nw.next_snap_obj != 0 && old.creation_txg >= nw.creation_txg) return not_before;
  int64_t written = static_cast<int64_t>(nw.referenced_bytes) - static_cast<int64_t>(old.referenced_bytes);
  for (uint64_t obj = new_obj; obj != old_obj;) {
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys ds, ReadDsPhys(obj));
    Space3 freed;
    if (ds.prev_snap_txg == old.creation_txg) {
      UZFS_ASSIGN_OR_RETURN(freed, DeadBornAfter(ds.deadlist_obj, 0));
    } else if (ident_.version >= kVersionDeadlists) {
      UZFS_ASSIGN_OR_RETURN(freed, DeadlistRange(ds.deadlist_obj, 0, old.creation_txg));
    } else {
      UZFS_ASSIGN_OR_RETURN(freed, BplistBornIn(ds.deadlist_obj, 0, old.creation_txg));
    }
    written += static_cast<int64_t>(freed.used);
    obj = ds.prev_snap_obj;
    if (obj == 0) return not_before;
  }
  return static_cast<uint64_t>(std::max<int64_t>(written, 0));
}

}  // namespace uzfs
