// Pool: receiving a stream (contract in pool.h: BeginReceive, EndReceive,
// AbortReceive, DestroyStaleReceives).
//
// Where the records go. A full stream makes a new file system FS at once,
// but with an empty object set and the inconsistent flag (OpenZFS's
// DS_FLAG_INCONSISTENT), which keeps it out of every listing and so of the
// mounts; the end clears the flag. An incremental stream from snapshot S of
// FS goes into "FS/%recv", a clone of S that no listing shows (OpenZFS
// uses the same name); FS stays readable, and mounted, meanwhile.
//
// A clone stream (its origin named by the caller, with the stream's from
// guid) makes FS at once as a clone of the origin, inconsistent, as a full
// stream does, and ends the same way.
//
// A full stream onto an existing FS with force (no snapshots, not a clone)
// goes into "FS/%recv" too, a new file system, and ends the same way; FS
// keeps its properties and children, its old tree is freed with the clone.
//
// The end of an incremental receive, in one sync task after the datasets'
// sync of its txg (so every record applied is in the trees it moves):
//   1. FS's head is made S's tree again if it is not (a rollback: with
//      force, or when only its intent log header changed; a real change
//      without force refuses the receive);
//   2. the trees swap (OpenZFS's clone swap): FS's head record takes the
//      clone's block pointer, byte counts, unique bytes and deadlist, the
//      clone's record takes FS's (S's tree, nothing of its own). Both were
//      S's successors, so the deadlists' keys agree. Space: the clone's
//      directory usage moves to FS's, as HEAD usage except the deadlist's
//      blocks born in FS (now held by S alone: SNAP usage); S's unique
//      bytes grow by the deadlist's blocks born after S's predecessor; a
//      refreservation is charged for the head's new unique bytes;
//   3. the clone, now holding nothing of its own, is destroyed;
//   4. snapshot FS@SNAP is taken and given the stream's guid and creation
//      time (an incremental stream after it names that guid as its source).
// Nothing is copied and nothing the stream wrote is freed. A task that
// fails changes nothing (sync tasks are all or nothing), and the receive
// is aborted by the caller.
#include <memory>
#include <functional>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dmu/objset.h"
#include "zfs/dsl/pool.h"

namespace uzfs {

namespace {

// "cannot create 'X': why" -> "cannot receive new filesystem stream: why".
Status AsReceiveError(const Status& s, const std::string& prefix) {
  std::string m(s.message());
  if (m.starts_with("cannot ")) {
    if (const size_t colon = m.find("': "); colon != std::string::npos) m = m.substr(colon + 3);
  }
  return Status(s.code(), prefix + m);
}

}  // namespace

Result<bool> Pool::HeadModified(const DslDatasetPhys& head, const DslDatasetPhys& snap) {
  if (head.bp == snap.bp) return false;
  if (head.bp.IsHole() || snap.bp.IsHole()) return true;
  std::vector<uint8_t> a(head.bp.lsize), b(snap.bp.lsize);
  UZFS_RETURN_IF_ERROR(zio_->Read(head.bp, a));
  UZFS_RETURN_IF_ERROR(zio_->Read(snap.bp, b));
  UZFS_ASSIGN_OR_RETURN(uzfs::Objset ha, DecodeObjset(a));
  UZFS_ASSIGN_OR_RETURN(uzfs::Objset sb, DecodeObjset(b));
  return ha.meta_dnode.blkptr != sb.meta_dnode.blkptr || ha.meta_dnode.nlevels != sb.meta_dnode.nlevels;
}

Status Pool::RefuseIfReceiving(const std::string& name, const std::string& q) {
  const bool hidden = name.find('%') != std::string::npos;
  auto dir = LookupDir(name);
  if (!dir.ok()) return hidden ? Status::NotFound(q + "dataset does not exist") : Status::Ok();
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
  if (d.head_dataset_obj == 0) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(d.head_dataset_obj));
  if (hidden || (h.flags & kDsFlagInconsistent)) {
    // A kept receive no one is resuming may go (zfs destroy, as OpenZFS).
    UZFS_ASSIGN_OR_RETURN(auto saved, ReadSavedReceive(d.head_dataset_obj));
    if (saved && receiving_.count(name) == 0) return Status::Ok();
    return Status::Busy(q + "dataset is busy (a receive is writing it)");
  }
  return Status::Ok();
}

Result<Pool::ReceiveState> Pool::CheckReceive(const ReceiveTarget& t, bool in_task) {
  const std::string full = t.fs + "@" + t.snap;
  ReceiveState st;
  if (t.from_guid == 0) {
    const std::string q = "cannot receive new filesystem stream: ";
    UZFS_RETURN_IF_ERROR(SplitSnapshotName(full, "receive").status());
    if (auto dir = LookupDir(t.fs); dir.ok()) {
      UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
      UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(d.head_dataset_obj));
      if (h.flags & kDsFlagInconsistent) {
        return Status::Busy(q + "destination '" + t.fs + "' is being received");
      }
      if (!t.force) return Status::Exists(q + "destination '" + t.fs + "' exists\nmust specify -F to overwrite it");
      // -F: FS's tree is replaced, which it may only be while no snapshot
      // holds it and it is nobody's clone (its origin is $ORIGIN).
      if (h.snapnames_zapobj != 0) {
        UZFS_ASSIGN_OR_RETURN(auto snaps, MosZapList(h.snapnames_zapobj));
        if (!snaps.empty()) {
          return Status::Exists(q + "destination has snapshots (eg. " + t.fs + "@" + snaps.front().first +
                                ")\nmust destroy them to overwrite it");
        }
      }
      if (origin_snap_obj_ == 0 || d.origin_obj != origin_snap_obj_ || h.prev_snap_obj != origin_snap_obj_) {
        return Status::NotSupported(q + "destination '" + t.fs + "' is a clone (or its pool predates version " +
                                    "11): uzfs cannot overwrite it with a full stream");
      }
      if (!in_task && LookupDir(t.fs + "/" + kRecvLeaf).ok()) {
        return Status::Busy(q + "another receive into '" + t.fs + "' is in progress");
      }
      st.into = t.fs + "/" + kRecvLeaf;
      st.overwrite = true;
      st.from_obj = origin_snap_obj_;
      return st;
    }
    Status v = CheckNewDatasetLocked(t.fs, t.props);
    if (!v.ok()) return AsReceiveError(v, q);
    st.into = t.fs;
    st.new_fs = true;
    return st;
  }
  if (!t.origin.empty()) {
    // A clone stream: FS is new, a clone of the origin.
    const std::string q = "cannot receive new filesystem stream: ";
    UZFS_RETURN_IF_ERROR(SplitSnapshotName(full, "receive").status());
    if (LookupDir(t.fs).ok()) return Status::Exists(q + "destination '" + t.fs + "' exists");
    auto origin = LookupSnapshot(t.origin);
    if (!origin.ok()) return Status::NotFound(q + "local origin for clone " + full + " does not exist");
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys o, ReadDsPhys(*origin));
    if (o.guid != t.from_guid) {
      return Status::NotFound(q + "local origin for clone " + full + " does not exist ('" + t.origin +
                              "' is another snapshot by that name)");
    }
    if (o.flags & kDsFlagInconsistent) return Status::Busy(q + "its origin is being received");
    Status v = CheckNewDatasetLocked(t.fs, t.props);
    if (!v.ok()) return AsReceiveError(v, q);
    st.into = t.fs;
    st.new_fs = true;
    st.from_obj = *origin;
    return st;
  }
  const std::string q = "cannot receive incremental stream: ";
  UZFS_RETURN_IF_ERROR(SplitSnapshotName(full, "receive").status());
  auto dir = LookupDir(t.fs);
  if (!dir.ok()) return Status::NotFound(q + "destination '" + t.fs + "' does not exist");
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(d.head_dataset_obj));
  if (h.flags & kDsFlagInconsistent) return Status::Busy(q + "destination '" + t.fs + "' is being received");
  if (!in_task && LookupDir(t.fs + "/" + kRecvLeaf).ok()) {
    return Status::Busy(q + "another receive into '" + t.fs + "' is in progress");
  }
  // The source: the snapshot of FS with the stream's from guid.
  uint64_t from = 0;
  if (h.snapnames_zapobj != 0) {
    UZFS_ASSIGN_OR_RETURN(auto snaps, MosZapList(h.snapnames_zapobj));
    for (const auto& [n, v] : snaps) {
      if (v.empty()) continue;
      if (n == t.snap) return Status::Exists(q + "destination snapshot '" + full + "' exists");
      UZFS_ASSIGN_OR_RETURN(DslDatasetPhys sp, ReadDsPhys(v[0]));
      if (sp.guid == t.from_guid) from = v[0];
    }
  }
  if (from == 0 || from != h.prev_snap_obj) {
    return Status::InvalidArgument(q + "most recent snapshot of " + t.fs + " does not\nmatch incremental source");
  }
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(from));
  if (s.flags & kDsFlagInconsistent) return Status::Busy(q + "its source is being received");
  if (!t.force) {
    UZFS_ASSIGN_OR_RETURN(const bool modified, HeadModified(h, s));
    if (modified) {
      return Status::Busy(q + "destination " + t.fs + " has been modified\nsince most recent snapshot");
    }
  }
  if (ident_.version >= kVersionDeadlists) {
    UZFS_ASSIGN_OR_RETURN(Dnode dl, mos_->GetDnode(h.deadlist_obj));
    if (dl.type != dmu_ot::kDeadlist) {
      return Status::NotSupported(q + "the deadlist of '" + t.fs +
                                  "' is in the format of an older pool version, which uzfs does not convert yet");
    }
  }
  st.into = t.fs + "/" + kRecvLeaf;
  st.from_obj = from;
  return st;
}

Result<Pool::ReceiveState> Pool::BeginReceive(const ReceiveTarget& t) {
  auto check = [this, &t](bool in_task) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Result<ReceiveState> {
    if (t.resume) return CheckResume(t);
    if (t.resumable) {
      UZFS_ASSIGN_OR_RETURN(bool ext, FeatureEnabled("com.delphix:extensible_dataset"));
      if (!ext) {
        return Status::NotSupported("cannot receive resumably (-s): pool '" + ident_.name +
                                    "' lacks feature extensible_dataset (it is version " +
                                    std::to_string(ident_.version) + "; zpool upgrade gives it)");
      }
    }
    return CheckReceive(t, in_task);
  };
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::NotSupported("cannot receive: pool is read-only");
    UZFS_ASSIGN_OR_RETURN(ReceiveState st, check(false));
    // Going on with a saved receive changes nothing on disk to begin.
    if (t.resume) {
      if (!receiving_.insert(st.into).second) {
        return Status::Busy("cannot resume receive: another receive into '" + t.fs + "' is in progress");
      }
      return st;
    }
  }
  auto out = std::make_shared<ReceiveState>();
  UZFS_RETURN_IF_ERROR(RunTask([this, t, out, check](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    UZFS_ASSIGN_OR_RETURN(ReceiveState st, check(true));
    if (!st.new_fs && LookupDir(st.into).ok()) {
      return Status::Busy("cannot receive: another receive into '" + t.fs + "' is in progress");
    }
    // (A file system to overwrite gets a new one, not a clone of $ORIGIN's
    // snapshot by that name: CreateDatasetSync makes every new one so.)
    UZFS_RETURN_IF_ERROR(CreateDatasetSync(st.into, st.new_fs ? t.props : decltype(t.props){}, txg,
                                           st.overwrite ? 0 : st.from_obj, /*receiving=*/true));
    if (t.large_blocks) {
      // (The end's swap carries it to FS's head with the tree.)
      UZFS_ASSIGN_OR_RETURN(const uint64_t dir, LookupDir(st.into));
      UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir));
      UZFS_RETURN_IF_ERROR(ActivateLargeBlocks(d.head_dataset_obj, txg));
    }
    if (t.resumable) {
      UZFS_ASSIGN_OR_RETURN(const uint64_t dir, LookupDir(st.into));
      UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir));
      UZFS_RETURN_IF_ERROR(SaveReceiveFields(d.head_dataset_obj, t, txg));
      st.resumable = true;
    }
    *out = st;
    return Status::Ok();
  }));
  MutexLock l(&mu_);
  receiving_.insert(out->into);
  return *out;
}

void Pool::KeepReceive(const ReceiveState& st) {
  MutexLock l(&mu_);
  receiving_.erase(st.into);
}

Status Pool::CheckReceiveEnd(const ReceiveTarget& t, const ReceiveState& st) {
  const std::string q = st.new_fs || st.overwrite ? "cannot receive new filesystem stream: "
                                                   : "cannot receive incremental stream: ";
  auto dir = LookupDir(t.fs);
  if (!dir.ok()) return Status::NotFound(q + "destination '" + t.fs + "' does not exist");
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(d.head_dataset_obj));
  if (h.snapnames_zapobj != 0 && MosZapLookup(h.snapnames_zapobj, t.snap).ok()) {
    return Status::Exists(q + "destination snapshot '" + t.fs + "@" + t.snap + "' exists");
  }
  if (st.new_fs) {
    if (!(h.flags & kDsFlagInconsistent)) return Status::Exists(q + "destination '" + t.fs + "' exists");
    return Status::Ok();
  }
  if (!LookupDir(st.into).ok()) return Status::NotFound(q + "the received data is gone");
  if (st.overwrite) {
    if (h.prev_snap_obj != st.from_obj) return Status::Exists(q + "destination has snapshots now");
    return Status::Ok();
  }
  if (h.prev_snap_obj != st.from_obj) {
    return Status::InvalidArgument(q + "most recent snapshot of " + t.fs + " does not\nmatch incremental source");
  }
  if (!t.force) {
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(st.from_obj));
    UZFS_ASSIGN_OR_RETURN(const bool modified, HeadModified(h, s));
    if (modified) {
      return Status::Busy(q + "destination " + t.fs + " has been modified\nsince most recent snapshot");
    }
  }
  return Status::Ok();
}

Status Pool::ReceiveSwapSync(const ReceiveTarget& t, const ReceiveState& st, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(const uint64_t dir, LookupDir(t.fs));
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(d.head_dataset_obj));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(st.from_obj));
  // 1. FS's head back to S's tree (a tree to overwrite stays: it goes
  // with the clone, whose origin is empty).
  if (!st.overwrite && h.bp != s.bp) {
    UZFS_ASSIGN_OR_RETURN(const std::string from_name, SnapshotName(st.from_obj));
    UZFS_ASSIGN_OR_RETURN(SnapshotToDestroy r, CheckRollback(from_name, /*in_task=*/true));
    UZFS_RETURN_IF_ERROR(RollbackSync(r, txg));
    UZFS_ASSIGN_OR_RETURN(d, ReadDirPhys(dir));
    UZFS_ASSIGN_OR_RETURN(h, ReadDsPhys(d.head_dataset_obj));
    UZFS_ASSIGN_OR_RETURN(s, ReadDsPhys(st.from_obj));
  }
  const uint64_t head_obj = d.head_dataset_obj;
  UZFS_ASSIGN_OR_RETURN(const uint64_t cdir, LookupDir(st.into));
  UZFS_ASSIGN_OR_RETURN(DslDirPhys cd, ReadDirPhys(cdir));
  const uint64_t clone_obj = cd.head_dataset_obj;
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys c, ReadDsPhys(clone_obj));
  if (c.prev_snap_obj != st.from_obj) return Status::Corruption("the received clone's origin changed");

  // 2. The space (header comment).
  uint64_t origin_txg = 0;
  if (d.origin_obj != 0) {
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys origin, ReadDsPhys(d.origin_obj));
    origin_txg = origin.creation_txg;
  }
  UZFS_ASSIGN_OR_RETURN(const Space3 dead_in_fs, DeadBornAfter(c.deadlist_obj, origin_txg));
  UZFS_ASSIGN_OR_RETURN(const Space3 dead_only_s, DeadBornAfter(c.deadlist_obj, s.prev_snap_txg));
  std::array<int64_t, kDdUsedCount> out{}, in{};
  int64_t moved = 0;
  for (int i = 0; i < kDdUsedCount; ++i) {
    out[i] = -static_cast<int64_t>(cd.used_breakdown[i]);
    moved += static_cast<int64_t>(cd.used_breakdown[i]);
  }
  // What FS's head holds of its own goes the other way, to be freed with
  // the clone: nothing after a rollback; a tree being overwritten (its
  // origin empty: all of it).
  const int64_t own = static_cast<int64_t>(h.unique_bytes);
  const int64_t own_comp = st.overwrite ? static_cast<int64_t>(h.compressed_bytes) : 0;
  const int64_t own_uncomp = st.overwrite ? static_cast<int64_t>(h.uncompressed_bytes) : 0;
  out[static_cast<int>(DdUsed::kHead)] += own;
  const int64_t comp = static_cast<int64_t>(cd.compressed_bytes), uncomp = static_cast<int64_t>(cd.uncompressed_bytes);
  UZFS_RETURN_IF_ERROR(DirUse(cdir, out, own_comp - comp, own_uncomp - uncomp, txg));
  UZFS_ASSIGN_OR_RETURN(const uint64_t refres, RefReservationOf(d));
  in[static_cast<int>(DdUsed::kHead)] = moved - static_cast<int64_t>(dead_in_fs.used) - own;
  in[static_cast<int>(DdUsed::kSnap)] = static_cast<int64_t>(dead_in_fs.used);
  in[static_cast<int>(DdUsed::kRefReserve)] = static_cast<int64_t>(std::min(h.unique_bytes, refres)) -
                                              static_cast<int64_t>(std::min(c.unique_bytes, refres));
  UZFS_RETURN_IF_ERROR(DirUse(dir, in, comp - own_comp, uncomp - own_uncomp, txg));

  // The trees swap.
  std::swap(h.bp, c.bp);
  std::swap(h.referenced_bytes, c.referenced_bytes);
  std::swap(h.compressed_bytes, c.compressed_bytes);
  std::swap(h.uncompressed_bytes, c.uncompressed_bytes);
  std::swap(h.unique_bytes, c.unique_bytes);
  std::swap(h.deadlist_obj, c.deadlist_obj);
  UZFS_RETURN_IF_ERROR(WriteDsPhys(head_obj, h, txg));
  UZFS_RETURN_IF_ERROR(WriteDsPhys(clone_obj, c, txg));
  if (!st.overwrite) {
    s.unique_bytes += dead_only_s.used;
    UZFS_RETURN_IF_ERROR(WriteDsPhys(st.from_obj, s, txg));
  }
  // The stream's blocks may need what the clone activated (large blocks).
  UZFS_RETURN_IF_ERROR(CopyDatasetFeatures(clone_obj, head_obj, txg));
  // FS's open writer held the old tree; the next use opens the new one.
  datasets_.erase(t.fs);
  // 3. The clone, with S's tree and nothing of its own.
  return DestroyDatasetSync(st.into, txg);
}

Status Pool::EndReceive(const ReceiveTarget& t, const ReceiveState& st, uint64_t to_guid, uint64_t creation_time) {
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::NotSupported("cannot receive: pool is read-only");
    UZFS_RETURN_IF_ERROR(CheckReceiveEnd(t, st));
    zil_suspended_[t.fs]++;
  }
  // FS's intent log closes (its head changes); a new file system has none.
  Status s = st.new_fs ? Status::Ok() : ZilClose(t.fs);
  if (s.ok()) {
    s = RunTask(
        [this, t, st, to_guid, creation_time](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
          UZFS_RETURN_IF_ERROR(CheckReceiveEnd(t, st));
          UZFS_ASSIGN_OR_RETURN(const uint64_t dir, LookupDir(t.fs));
          UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir));
          if (st.new_fs) {
            UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(d.head_dataset_obj));
            h.flags &= ~kDsFlagInconsistent;
            UZFS_RETURN_IF_ERROR(WriteDsPhys(d.head_dataset_obj, h, txg));
            UZFS_RETURN_IF_ERROR(ClearReceiveFields(d.head_dataset_obj, txg));
          } else {
            UZFS_RETURN_IF_ERROR(ReceiveSwapSync(t, st, txg));
          }
          UZFS_RETURN_IF_ERROR(CheckNewSnapshot(t.fs, t.snap, txg));
          UZFS_RETURN_IF_ERROR(TakeSnapshot(t.fs, t.snap, txg));
          UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(d.head_dataset_obj));
          UZFS_ASSIGN_OR_RETURN(const uint64_t snap_obj, MosZapLookup(h.snapnames_zapobj, t.snap));
          UZFS_ASSIGN_OR_RETURN(DslDatasetPhys sp, ReadDsPhys(snap_obj));
          sp.guid = to_guid;
          if (creation_time != 0) sp.creation_time = creation_time;
          return WriteDsPhys(snap_obj, sp, txg);
        },
        /*after_datasets=*/true);
  }
  MutexLock l(&mu_);
  if (--zil_suspended_[t.fs] == 0) zil_suspended_.erase(t.fs);
  if (s.ok()) receiving_.erase(st.into);
  return s;
}

Status Pool::AbortReceive(const ReceiveState& st) {
  {
    MutexLock l(&mu_);
    receiving_.erase(st.into);
  }
  return RunTask([this, st](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    auto dir = LookupDir(st.into);
    if (!dir.ok()) return Status::Ok();
    UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(d.head_dataset_obj));
    // Only what a receive made: a file system that finished is kept.
    if (st.new_fs && !(h.flags & kDsFlagInconsistent)) return Status::Ok();
    return DestroyDatasetSync(st.into, txg);
  });
}

Result<size_t> Pool::DestroyStaleReceives() {
  std::vector<std::string> stale;
  {
    MutexLock l(&mu_);
    if (readonly_) return size_t{0};
    std::function<Status(const std::string&, uint64_t)> walk =
        [&](const std::string& name, uint64_t dir) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
      UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir));
      // (A receive kept for resuming stays: zfs receive -s.)
      if (name.ends_with(std::string("/") + kRecvLeaf)) {
        UZFS_ASSIGN_OR_RETURN(auto saved, ReadSavedReceive(d.head_dataset_obj));
        if (!saved) stale.push_back(name);
        return Status::Ok();
      }
      if (d.head_dataset_obj != 0) {
        UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(d.head_dataset_obj));
        if (h.flags & kDsFlagInconsistent) {
          UZFS_ASSIGN_OR_RETURN(auto saved, ReadSavedReceive(d.head_dataset_obj));
          if (!saved) stale.push_back(name);
          return Status::Ok();
        }
      }
      UZFS_ASSIGN_OR_RETURN(auto kids, MosZapList(d.child_dir_zapobj));
      for (const auto& [k, v] : kids) {
        if (k.empty() || k[0] == '$' || v.empty()) continue;
        UZFS_RETURN_IF_ERROR(walk(name + "/" + k, v[0]));
      }
      return Status::Ok();
    };
    UZFS_RETURN_IF_ERROR(walk(ident_.name, root_dir_obj_));
  }
  if (stale.empty()) return size_t{0};
  UZFS_RETURN_IF_ERROR(RunTask([this, stale](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    for (const std::string& n : stale) UZFS_RETURN_IF_ERROR(DestroyDatasetSync(n, txg));
    return Status::Ok();
  }));
  return stale.size();
}

}  // namespace uzfs
