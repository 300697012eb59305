// Taking snapshots (contract in pool.h), as ZFS records them.
//
// A snapshot is a new DSL dataset object in its file system's directory
// that takes over what the head referenced at the end of the txg it is
// taken in: the head's block pointer, byte counts and flags, and the
// head's deadlist (the blocks the head killed since its previous snapshot,
// which that snapshot still holds). The head gets a fresh deadlist (a new
// bplist before version 26; from 26 a keyed deadlist with the old one's
// keys and one for the previous snapshot's txg, each over an empty bpobj:
// the pool's shared one when empty_bpobj is enabled),
// its prev_snap_obj/txg name the new snapshot, its unique bytes drop to 0
// (everything it references is shared now), and the snapshot's name goes
// into the head's snapnames ZAP. The previous snapshot's next_snap_obj
// names the new one (or, when the head is a clone, the new snapshot takes
// the head's place in its origin's next_clones).
//
// The txg. The snapshot runs as a sync task after the datasets' sync of its
// txg, which is the txg open when it was queued or a later one (RunTask), so
// it holds everything written before the call. Its objset must not name a
// live intent log (pools before version 27 cannot have one in a snapshot at
// all), so each file system's log is suspended first: the running log is
// closed (ZilClose ends it in a txg taken once no log write runs, so every
// acknowledged record's change is in that txg or older, and the task's txg
// is at least as new), and no new log starts until the snapshot is on disk;
// an fsync meanwhile waits for a txg sync. A log that still has records to
// replay (claimed at import, not replayed because the file system was not
// mounted) makes the snapshot refuse.
//
// Several snapshots given together are taken in one txg, all or none:
// every name is checked before any is taken; one file system may be named
// only once (two snapshots of it in one txg would have no blocks between
// them to tell them apart), and a snapshot whose file system got another
// in the same txg (two callers at once) is refused, to be tried again.
#include <algorithm>
#include <cctype>
#include <set>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_config.h"
#include "zfs/dsl/pool_identity.h"

namespace uzfs {

namespace {

constexpr uint64_t kMaxDatasetName = 255;  // ZFS_MAX_DATASET_NAME_LEN - 1

// The snapshot part of a name: ZFS's component characters.
Status CheckSnapName(const std::string& full, const std::string& snap, const std::string& action) {
  const std::string q = "cannot " + action + " '" + full + "': ";
  if (snap.empty()) return Status::InvalidArgument(q + "empty component in name");
  if (full.size() > kMaxDatasetName) return Status::InvalidArgument(q + "name is too long");
  for (char ch : snap) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-' && ch != '.' && ch != ':' &&
        ch != ' ') {
      const std::string what = ch == '@' ? "multiple '@' delimiters in name"
                                         : "invalid character '" + std::string(1, ch) + "' in name";
      return Status::InvalidArgument(q + what);
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::pair<std::string, std::string>> SplitSnapshotName(const std::string& name, const std::string& action) {
  const size_t at = name.find('@');
  if (at == std::string::npos) {
    return Status::InvalidArgument("cannot " + action + " '" + name + "': missing '@' delimiter in snapshot name");
  }
  std::pair<std::string, std::string> out{name.substr(0, at), name.substr(at + 1)};
  UZFS_RETURN_IF_ERROR(CheckSnapName(name, out.second, action));
  if (out.first.empty()) return Status::InvalidArgument("cannot " + action + " '" + name + "': missing dataset name");
  return out;
}

Status Pool::CheckNewSnapshot(const std::string& fs, const std::string& snap, std::optional<Txg> in_txg) {
  const std::string full = fs + "@" + snap;
  auto dir = LookupDir(fs);
  if (!dir.ok()) return Status::NotFound("cannot open '" + fs + "': dataset does not exist");
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(d.head_dataset_obj));
  if (h.snapnames_zapobj == 0) return Status::Corruption("dataset '" + fs + "' has no snapshot name map");
  if (h.flags & kDsFlagInconsistent) {
    return Status::Busy("cannot create snapshot '" + full + "': dataset is busy (it is being received)");
  }
  if (MosZapLookup(h.snapnames_zapobj, snap).ok()) {
    return Status::Exists("cannot create snapshot '" + full + "': dataset already exists");
  }
  // One snapshot of a file system per txg (another caller's may have taken
  // this one's txg): its predecessor must be older than it.
  if (in_txg && h.prev_snap_txg >= in_txg->number()) {
    return Status::Busy("cannot create snapshot '" + full + "': another snapshot of '" + fs +
                        "' is being taken; try again");
  }
  if (ident_.version >= kVersionDeadlists) {
    UZFS_ASSIGN_OR_RETURN(Dnode dl, mos_->GetDnode(h.deadlist_obj));
    if (dl.type != dmu_ot::kDeadlist) {
      return Status::NotSupported("cannot create snapshot '" + full +
                                  "': its deadlist is in the format of an older pool version, which uzfs does not "
                                  "convert yet");
    }
  }
  // Under a refreservation the head's unique bytes become reserved space
  // again (ZFS's dsl_dataset_snapshot_reserve_space).
  UZFS_ASSIGN_OR_RETURN(const uint64_t refres, RefReservationOf(d));
  if (refres != 0) {
    UZFS_ASSIGN_OR_RETURN(const uint64_t avail, DirSpaceAvailableLocked(*dir));
    if (std::min(h.unique_bytes, refres) > avail) {
      return Status::NoSpace("cannot create snapshot '" + full + "': out of space");
    }
  }
  if (in_txg) {
    // The header in the objset block the snapshot takes (this txg's, the
    // datasets synced): a log started since for a later txg is not in it.
    UZFS_ASSIGN_OR_RETURN(Dataset * ds, HoldDataset(fs));
    if (!ds->os->objset().zil.log.IsHole()) {
      return Status::Busy("cannot create snapshot '" + full + "': its intent log has records to replay; mount '" +
                          fs + "' first");
    }
  }
  return Status::Ok();
}

Status Pool::Snapshot(const std::vector<std::string>& names,
                      const std::vector<std::pair<std::string, std::string>>& props) {
  if (names.empty()) return Status::InvalidArgument("no snapshot named");
  std::vector<std::pair<std::string, std::string>> parts;
  std::set<std::string> seen, each_fs;
  for (const std::string& n : names) {
    UZFS_ASSIGN_OR_RETURN(auto p, SplitSnapshotName(n));
    if (!seen.insert(n).second) continue;  // named twice: taken once
    if (!each_fs.insert(p.first).second) {
      return Status::InvalidArgument("cannot create snapshot '" + n +
                                     "': multiple snapshots of the same file system are not allowed in one command");
    }
    parts.push_back(std::move(p));
  }
  std::set<std::string> file_systems;
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::NotSupported("pool is read-only");
    for (const auto& [fs, snap] : parts) {
      if (fs != ident_.name && !fs.starts_with(ident_.name + "/")) {
        return Status::NotFound("cannot open '" + fs + "': dataset does not exist");
      }
      UZFS_RETURN_IF_ERROR(CheckNewSnapshot(fs, snap, std::nullopt));
      UZFS_RETURN_IF_ERROR(CheckSnapshotProps(fs + "@" + snap, props, "cannot create snapshot"));
      file_systems.insert(fs);
    }
    for (const std::string& fs : file_systems) zil_suspended_[fs]++;
  }
  // Each log closed (its records' changes are in the txg the close holds
  // or older); no new one starts until the snapshots are on disk.
  Status s = Status::Ok();
  for (const std::string& fs : file_systems) {
    if (s.ok()) s = ZilClose(fs);
  }
  if (s.ok()) {
    s = RunTask(
        [this, parts, props](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
          for (const auto& [fs, snap] : parts) UZFS_RETURN_IF_ERROR(CheckNewSnapshot(fs, snap, txg));
          for (const auto& [fs, snap] : parts) {
            UZFS_RETURN_IF_ERROR(TakeSnapshot(fs, snap, txg));
            if (props.empty()) continue;
            UZFS_ASSIGN_OR_RETURN(const uint64_t obj, LookupSnapshot(fs + "@" + snap));
            UZFS_RETURN_IF_ERROR(SetSnapshotPropsSync(obj, props, txg));
          }
          return Status::Ok();
        },
        /*after_datasets=*/true);
  }
  {
    MutexLock l(&mu_);
    for (const std::string& fs : file_systems) {
      if (--zil_suspended_[fs] == 0) zil_suspended_.erase(fs);
    }
  }
  return s;
}

Status Pool::TakeSnapshot(const std::string& fs, const std::string& snap, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(uint64_t dir, LookupDir(fs));
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir));
  const uint64_t head_obj = d.head_dataset_obj;
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(head_obj));

  UZFS_ASSIGN_OR_RETURN(const uint64_t snap_obj, AllocateDatasetObject(txg));
  DslDatasetPhys s;
  s.dir_obj = dir;
  s.prev_snap_obj = h.prev_snap_obj;
  s.prev_snap_txg = h.prev_snap_txg;
  s.next_snap_obj = head_obj;
  s.num_children = 1;
  s.creation_time = PoolClockSeconds();
  s.creation_txg = txg.number();
  s.deadlist_obj = h.deadlist_obj;
  s.referenced_bytes = h.referenced_bytes;
  s.compressed_bytes = h.compressed_bytes;
  s.uncompressed_bytes = h.uncompressed_bytes;
  s.flags = h.flags;
  s.bp = h.bp;
  s.fsid_guid = NewGuid() & ((uint64_t{1} << 56) - 1);
  s.guid = NewGuid();
  UZFS_RETURN_IF_ERROR(WriteDsPhys(snap_obj, s, txg));
  // Per-dataset features the head has active (its blocks may need them).
  UZFS_RETURN_IF_ERROR(CopyDatasetFeatures(head_obj, snap_obj, txg));

  if (h.prev_snap_obj != 0) {
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys prev, ReadDsPhys(h.prev_snap_obj));
    if (prev.next_snap_obj == head_obj) {
      prev.next_snap_obj = snap_obj;
      UZFS_RETURN_IF_ERROR(WriteDsPhys(h.prev_snap_obj, prev, txg));
    } else if (prev.next_clones_obj != 0) {
      // A clone's first snapshot takes its place among its origin's clones.
      Status rm = MosZapRemove(prev.next_clones_obj, NextClonesEntryName(head_obj), txg);
      if (!rm.ok() && !rm.IsNotFound()) return rm;
      UZFS_RETURN_IF_ERROR(MosZapAdd(prev.next_clones_obj, NextClonesEntryName(snap_obj), snap_obj, txg));
    }
  }

  UZFS_ASSIGN_OR_RETURN(const uint64_t refres, RefReservationOf(d));
  if (refres != 0 && h.unique_bytes != 0) {
    std::array<int64_t, kDdUsedCount> use{};
    use[static_cast<int>(DdUsed::kRefReserve)] = static_cast<int64_t>(std::min(h.unique_bytes, refres));
    UZFS_RETURN_IF_ERROR(DirUse(dir, use, 0, 0, txg));
  }

  UZFS_ASSIGN_OR_RETURN(h.deadlist_obj, NewHeadDeadlist(h, txg));
  h.prev_snap_obj = snap_obj;
  h.prev_snap_txg = txg.number();
  h.unique_bytes = 0;
  h.flags |= kDsFlagUniqueAccurate;
  UZFS_RETURN_IF_ERROR(WriteDsPhys(head_obj, h, txg));
  UZFS_RETURN_IF_ERROR(MosZapAdd(h.snapnames_zapobj, snap, snap_obj, txg));
  // The open head: from the next txg on, a block it kills that was born up
  // to now is the snapshot's too.
  if (auto it = datasets_.find(fs); it != datasets_.end()) it->second->prev_snap_txg = txg.number();
  return Status::Ok();
}

}  // namespace uzfs
