// Rolling a file system back to its newest snapshot (contract in pool.h).
//
// The head takes the snapshot's tree again: its block pointer and byte
// counts become the snapshot's; the blocks it wrote since (born after the
// snapshot's txg, its prev_snap_txg) are freed, and those it killed since
// (its deadlist: born by then, held by the snapshot) are its own again, so
// the deadlist is replaced by an empty one with the same keys. Accounting,
// as ZFS ends up after its clone swap: the head's unique bytes and the
// snapshot's are 0 (they share everything); the directory's HEAD usage
// loses what was freed and regains the deadlist's blocks born in this
// directory, which its SNAP usage gives up; a refreservation is charged in
// full again (min(old unique, refreservation) more REFRSRV).
//
// The head's open writer is dropped with anything it had not synced (the
// caller unmounts first), and its intent log is closed beforehand; a
// snapshot whose tree names a log (another ZFS's, taken while its log ran)
// is refused, since the head would start with a log that is not its own.
// One sync task, all or nothing.
#include <algorithm>
#include <set>

#include "zfs/dmu/block_tree.h"
#include "zfs/dmu/dmu_types.h"
#include "zfs/dmu/objset.h"
#include "zfs/dsl/pool.h"

namespace uzfs {

Status Pool::CheckNoSnapshotLog(const DslDatasetPhys& s, const std::string& refusal) {
  if (s.bp.IsHole()) return Status::Ok();
  std::vector<uint8_t> buf(s.bp.lsize);
  UZFS_RETURN_IF_ERROR(zio_->Read(s.bp, buf));
  UZFS_ASSIGN_OR_RETURN(uzfs::Objset os, DecodeObjset(buf));
  if (!os.zil.log.IsHole()) {
    return Status::NotSupported(refusal + "the snapshot names an intent log (another ZFS took it while its log " +
                                "ran), which uzfs cannot roll back to yet");
  }
  return Status::Ok();
}

Result<Pool::SnapshotToDestroy> Pool::CheckRollback(const std::string& name, bool in_task) {
  const size_t at = name.find('@');
  if (at == std::string::npos) return Status::InvalidArgument("'" + name + "' is not a snapshot");
  const std::string fs = name.substr(0, at), snap = name.substr(at + 1);
  auto dir = LookupDir(fs);
  if (!dir.ok()) return Status::NotFound("cannot open '" + fs + "': dataset does not exist");
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(d.head_dataset_obj));
  auto obj = MosZapLookup(h.snapnames_zapobj, snap);
  if (!obj.ok()) return Status::NotFound("cannot open '" + name + "': dataset does not exist");
  {
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys target, ReadDsPhys(*obj));
    UZFS_RETURN_IF_ERROR(CheckNoSnapshotLog(target, "cannot rollback to '" + name + "': "));
  }
  if (h.prev_snap_obj != *obj) {
    // Newer ones, oldest first, as zfs rollback names them.
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys target, ReadDsPhys(*obj));
    UZFS_ASSIGN_OR_RETURN(auto snaps, MosZapList(h.snapnames_zapobj));
    std::vector<std::pair<uint64_t, std::string>> newer;
    for (const auto& [n, v] : snaps) {
      if (v.empty()) continue;
      UZFS_ASSIGN_OR_RETURN(DslDatasetPhys sp, ReadDsPhys(v[0]));
      if (sp.creation_txg > target.creation_txg) newer.emplace_back(sp.creation_txg, fs + "@" + n);
    }
    std::sort(newer.begin(), newer.end());
    std::string m = "cannot rollback to '" + name +
                    "': more recent snapshots or bookmarks exist\nuse '-r' to force deletion of the following "
                    "snapshots and bookmarks:";
    for (const auto& [txg, n] : newer) m += "\n" + n;
    return Status::Exists(m);
  }
  if (ident_.version >= kVersionDeadlists) {
    UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(h.deadlist_obj));
    if (dn.type != dmu_ot::kDeadlist) {
      return Status::NotSupported("cannot rollback to '" + name +
                                  "': its deadlist is in the format of an older pool version, which uzfs does not "
                                  "convert yet");
    }
  }
  // (Before the task the log may still run: it is closed next.)
  UZFS_ASSIGN_OR_RETURN(Dataset * ds, HoldDataset(fs));
  if (in_task && !ds->os->zil_header().log.IsHole()) {
    return Status::Busy("cannot rollback to '" + name + "': its intent log has records to replay; mount '" + fs +
                        "' first");
  }
  SnapshotToDestroy t;
  t.fs = fs;
  t.snap = snap;
  t.dir_obj = *dir;
  t.obj = *obj;
  return t;
}

Status Pool::Rollback(const std::string& snapshot) {
  std::string fs = snapshot.substr(0, snapshot.find('@'));
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::NotSupported("pool is read-only");
    UZFS_RETURN_IF_ERROR(CheckRollback(snapshot, false).status());
    zil_suspended_[fs]++;
  }
  Status s = ZilClose(fs);
  if (s.ok()) {
    s = RunTask([this, snapshot](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
      UZFS_ASSIGN_OR_RETURN(SnapshotToDestroy t, CheckRollback(snapshot, true));
      return RollbackSync(t, txg);
    });
  }
  MutexLock l(&mu_);
  if (--zil_suspended_[fs] == 0) zil_suspended_.erase(fs);
  return s;
}

Status Pool::RollbackSync(const SnapshotToDestroy& t, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(t.dir_obj));
  const uint64_t head_obj = d.head_dataset_obj;
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(head_obj));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(t.obj));
  uint64_t origin_txg = 0;
  if (d.origin_obj != 0) {
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys origin, ReadDsPhys(d.origin_obj));
    origin_txg = origin.creation_txg;
  }
  // What the head killed since the snapshot is its own again.
  std::vector<BlockPtr> dead;
  std::set<uint64_t> keys;
  if (ident_.version >= kVersionDeadlists) {
    UZFS_ASSIGN_OR_RETURN(auto entries, DeadlistEntries(h.deadlist_obj));
    for (const auto& [key, bpobj] : entries) {
      keys.insert(key);
      UZFS_ASSIGN_OR_RETURN(std::vector<BlockPtr> bps, ReadBpobj(bpobj));
      dead.insert(dead.end(), bps.begin(), bps.end());
    }
  } else {
    UZFS_ASSIGN_OR_RETURN(dead, ReadBpobj(h.deadlist_obj));
  }
  uint64_t back_in_head = 0;
  for (const BlockPtr& bp : dead) {
    if (bp.birth > origin_txg) back_in_head += Deflate(BlockAsize(bp));
  }
  // The blocks it wrote since the snapshot: found first, freed last (a
  // failure before the MOS changes leaves everything as it was; after, it
  // fails the txg).
  Space3 freed;
  std::vector<BlockPtr> doomed;
  UZFS_RETURN_IF_ERROR(VisitObjsetTree(*zio_, h.bp, h.prev_snap_txg, [&](const BlockPtr& bp) {
    freed.used += Deflate(BlockAsize(bp));
    freed.comp += bp.psize;
    freed.uncomp += UncompressedCharge(bp);
    doomed.push_back(bp);
    return Status::Ok();
  }));
  if (ident_.version >= kVersionDeadlists) {
    UZFS_RETURN_IF_ERROR(FreeDeadlistObjects(h.deadlist_obj, txg));
    UZFS_ASSIGN_OR_RETURN(h.deadlist_obj, DeadlistWithKeys(keys, txg));
  } else {
    UZFS_RETURN_IF_ERROR(mos_->FreeObject(h.deadlist_obj, txg));
    UZFS_ASSIGN_OR_RETURN(h.deadlist_obj, MosCreateDeadlist(txg));
  }
  UZFS_ASSIGN_OR_RETURN(const uint64_t refres, RefReservationOf(d));
  std::array<int64_t, kDdUsedCount> use{};
  use[static_cast<int>(DdUsed::kHead)] = static_cast<int64_t>(back_in_head) - static_cast<int64_t>(freed.used);
  use[static_cast<int>(DdUsed::kSnap)] = -static_cast<int64_t>(back_in_head);
  use[static_cast<int>(DdUsed::kRefReserve)] = static_cast<int64_t>(std::min(h.unique_bytes, refres));
  UZFS_RETURN_IF_ERROR(
      DirUse(t.dir_obj, use, -static_cast<int64_t>(freed.comp), -static_cast<int64_t>(freed.uncomp), txg));
  h.bp = s.bp;
  h.referenced_bytes = s.referenced_bytes;
  h.compressed_bytes = s.compressed_bytes;
  h.uncompressed_bytes = s.uncompressed_bytes;
  h.unique_bytes = 0;
  UZFS_RETURN_IF_ERROR(WriteDsPhys(head_obj, h, txg));
  s.unique_bytes = 0;
  UZFS_RETURN_IF_ERROR(WriteDsPhys(t.obj, s, txg));
  // The head's writer goes (with anything it had not synced); then its
  // blocks since the snapshot.
  datasets_.erase(t.fs);
  for (const BlockPtr& bp : doomed) UZFS_RETURN_IF_ERROR(zio_->Free(bp, txg.number()));
  return Status::Ok();
}

}  // namespace uzfs
