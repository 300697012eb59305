// Rolling a file system back while keeping what the rollback discards
// (zfs rollback -k; contract in pool.h).
//
// File system F rolls back to its snapshot S; instead of destroying S's
// later snapshots and F's changes since, they become file system K, a
// clone of S. No block is copied or freed: F's directory keeps its name,
// properties and children and gets a new head dataset H (S's tree, as a
// clone's head is made); the later snapshots and F's old head move to K's
// new directory under their names, with their deadlists and unique bytes
// as they were (their predecessors are unchanged). S's successor becomes
// H, and K's oldest dataset joins S's next_clones (version 17 on), K's
// head F's directory's dd_clones (26 on), with the clones of the moved
// snapshots' entries there moving to K's directory.
//
// Space: what moves from F's directory to K's is everything born after S
// that the later datasets hold: the old head's referenced bytes less S's,
// plus every later dataset's deadlist (a block of S that the head no
// longer holds is in exactly one of those deadlists). K charges the part
// born after S in those deadlists as snapshot usage and the rest as its
// head's. F's head usage gains the deadlists' blocks born in F up to S
// (H holds them again), which F's snapshot usage gives up; S's unique
// bytes become 0 (H shares all of S) and a refreservation is charged in
// full again, as after a plain rollback.
//
// It runs after the datasets' sync of its txg, so the old head keeps
// everything written before the call; F's intent log is closed first. A
// snapshot that names an intent log (another ZFS's, taken while its log
// ran) is refused: H cannot start from its tree without a log that is
// not its own. A pool's root file system cannot keep its state (K would
// be below it).
// Everything is checked before anything changes; one sync task.
#include <algorithm>
#include <map>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"

namespace uzfs {

struct Pool::KeepPlan {
  std::string fs, keep;
  uint64_t dir = 0, head = 0, snap = 0;      // F's directory and head, S
  uint64_t keep_parent = 0;                  // K's parent directory
  std::string keep_leaf;
  std::vector<uint64_t> later;               // S's later snapshots, oldest first
  std::map<uint64_t, std::string> names;     // their names
  Space3 moved, dead_after;                  // to K; of it, K's snapshot usage
  uint64_t back = 0;                         // F's snapshot usage that is its head's again
};

Result<Pool::KeepPlan> Pool::CheckRollbackKeep(const std::string& name, const std::string& keep, bool in_task) {
  const size_t at = name.find('@');
  if (at == std::string::npos) return Status::InvalidArgument("'" + name + "' is not a snapshot");
  const std::string q = "cannot rollback to '" + name + "': ";
  KeepPlan p;
  p.fs = name.substr(0, at);
  p.keep = keep;
  const std::string snap = name.substr(at + 1);
  auto dir = LookupDir(p.fs);
  if (!dir.ok()) return Status::NotFound("cannot open '" + p.fs + "': dataset does not exist");
  p.dir = *dir;
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(p.dir));
  p.head = d.head_dataset_obj;
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(p.head));
  auto obj = snap.empty() || snap[0] == '$' ? Result<uint64_t>(Status::NotFound(""))
                                            : MosZapLookup(h.snapnames_zapobj, snap);
  if (!obj.ok()) return Status::NotFound("cannot open '" + name + "': dataset does not exist");
  p.snap = *obj;
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(p.snap));
  if (d.parent_obj == 0) {
    return Status::InvalidArgument(q + "-k cannot keep the later state of a pool's root file system (every other " +
                                   "file system is below it)");
  }
  UZFS_RETURN_IF_ERROR(CheckNoSnapshotLog(s, q));
  if (ident_.version >= kVersionDeadlists) {
    UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(h.deadlist_obj));
    if (dn.type != dmu_ot::kDeadlist) {
      return Status::NotSupported(q + "its deadlist is in the format of an older pool version, which uzfs does " +
                                  "not convert yet");
    }
  }
  if (keep.find('@') != std::string::npos || keep.find('#') != std::string::npos) {
    return Status::InvalidArgument("cannot create '" + keep + "': the file system kept must be a file system name");
  }
  if (!keep.starts_with(ident_.name + "/")) {
    return Status::InvalidArgument("cannot create '" + keep + "': it must be in pool '" + ident_.name + "'");
  }
  UZFS_RETURN_IF_ERROR(CheckNewDatasetLocked(keep, {}));
  {
    const size_t slash = keep.rfind('/');
    auto parent = LookupDir(keep.substr(0, slash));
    if (!parent.ok()) return parent.status();
    p.keep_parent = *parent;
    p.keep_leaf = keep.substr(slash + 1);
  }
  // K may not sit below F: F keeps its children, and K's space would be
  // charged to F twice.
  for (uint64_t dd = p.keep_parent; dd != 0;) {
    if (dd == p.dir) return Status::InvalidArgument("cannot create '" + keep + "': it would be inside '" + p.fs + "'");
    UZFS_ASSIGN_OR_RETURN(DslDirPhys x, ReadDirPhys(dd));
    dd = x.parent_obj;
  }

  // The later snapshots, from the head back to S.
  std::vector<uint64_t> chain;  // head first
  for (uint64_t o = p.head; o != p.snap;) {
    if (o == 0 || chain.size() > (1u << 24)) {
      return Status::Corruption(q + "the snapshot chain of '" + p.fs + "' is broken");
    }
    chain.push_back(o);
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys x, ReadDsPhys(o));
    o = x.prev_snap_obj;
  }
  p.later.assign(chain.rbegin(), chain.rend());
  p.later.pop_back();  // the head
  UZFS_ASSIGN_OR_RETURN(auto snaps, MosZapList(h.snapnames_zapobj));
  for (const auto& [n, v] : snaps) {
    if (!v.empty()) p.names[v[0]] = n;
  }
  for (uint64_t o : p.later) {
    auto n = p.names.find(o);
    if (n == p.names.end()) return Status::Corruption(q + "snapshot " + std::to_string(o) + " has no name");
    if (keep.size() + 1 + n->second.size() > 255) {
      return Status::InvalidArgument(q + "snapshot '" + keep + "@" + n->second + "' would have a name that is too long");
    }
  }

  // The space that moves (header comment).
  uint64_t origin_txg = 0;
  if (d.origin_obj != 0) {
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys origin, ReadDsPhys(d.origin_obj));
    origin_txg = origin.creation_txg;
  }
  p.moved = Space3{h.referenced_bytes, h.compressed_bytes, h.uncompressed_bytes};
  const auto add = [](Space3* to, const Space3& v) {
    to->used += v.used;
    to->comp += v.comp;
    to->uncomp += v.uncomp;
  };
  for (uint64_t o : chain) {
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys x, ReadDsPhys(o));
    UZFS_ASSIGN_OR_RETURN(Space3 all, DeadBornAfter(x.deadlist_obj, 0));
    UZFS_ASSIGN_OR_RETURN(Space3 after, DeadBornAfter(x.deadlist_obj, s.creation_txg));
    UZFS_ASSIGN_OR_RETURN(Space3 in_dir, DeadBornAfter(x.deadlist_obj, origin_txg));
    add(&p.moved, all);
    add(&p.dead_after, after);
    p.back += in_dir.used - after.used;
  }
  const auto sub = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
  p.moved.used = sub(p.moved.used, s.referenced_bytes);
  p.moved.comp = sub(p.moved.comp, s.compressed_bytes);
  p.moved.uncomp = sub(p.moved.uncomp, s.uncompressed_bytes);
  if (p.moved.used < p.dead_after.used) {
    return Status::Corruption(q + "the space accounting of '" + p.fs + "' does not add up");
  }
  // K's quotas up to the directory it shares with F.
  UZFS_RETURN_IF_ERROR(CheckQuotasForMove(p.keep_parent, p.dir, p.moved.used, q + "out of space"));
  // A refreservation is charged in full again while nothing is freed: the
  // pool (and F's ancestors) must have room for it, as for a snapshot.
  UZFS_ASSIGN_OR_RETURN(const uint64_t refres, RefReservationOf(d));
  if (const uint64_t charge = std::min(h.unique_bytes, refres); charge > 0) {
    UZFS_ASSIGN_OR_RETURN(const uint64_t avail, DirSpaceAvailableLocked(p.dir));
    if (charge > avail) return Status::NoSpace(q + "out of space");
  }
  if (in_task) {
    // Its log was closed before the task; a new one started since would
    // name blocks the head's tree does not hold yet.
    UZFS_ASSIGN_OR_RETURN(Dataset * ds, HoldDataset(p.fs));
    if (!ds->os->zil_header().log.IsHole()) {
      return Status::Busy(q + "its intent log has records to replay; mount '" + p.fs + "' first");
    }
  }
  return p;
}

Result<std::string> Pool::PlanRollbackKeep(const std::string& snapshot, const std::string& keep) {
  MutexLock l(&mu_);
  return PlanRollbackKeepLocked(snapshot, keep);
}

Result<std::string> Pool::PlanRollbackKeepLocked(const std::string& snapshot, const std::string& keep) {
  if (readonly_) return Status::NotSupported("pool is read-only");
  std::string name = keep;
  if (name.empty()) {
    name = snapshot.substr(0, snapshot.find('@')) + "-rollback-" + std::to_string(txg_ ? txg_->open_txg().number() : 0);
  }
  UZFS_RETURN_IF_ERROR(CheckRollbackKeep(snapshot, name, false).status());
  return name;
}

Result<std::string> Pool::RollbackKeep(const std::string& snapshot, const std::string& keep) {
  const std::string fs = snapshot.substr(0, snapshot.find('@'));
  std::string name;
  {
    MutexLock l(&mu_);
    UZFS_ASSIGN_OR_RETURN(name, PlanRollbackKeepLocked(snapshot, keep));
    zil_suspended_[fs]++;
  }
  Status s = ZilClose(fs);
  if (s.ok()) {
    s = RunTask(
        [this, snapshot, name](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
          UZFS_ASSIGN_OR_RETURN(KeepPlan p, CheckRollbackKeep(snapshot, name, true));
          return RollbackKeepSync(p, txg);
        },
        /*after_datasets=*/true);
  }
  MutexLock l(&mu_);
  if (--zil_suspended_[fs] == 0) zil_suspended_.erase(fs);
  if (!s.ok()) return s;
  return name;
}

Status Pool::RollbackKeepSync(const KeepPlan& p, Txg txg) {
  const bool dir_clones = ident_.version >= kVersionDeadlists;
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(p.dir));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(p.head));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(p.snap));
  const uint64_t oldest = p.later.empty() ? p.head : p.later.front();

  // K: a directory whose origin is S, with F's old head as its head.
  UZFS_ASSIGN_OR_RETURN(const uint64_t kdir, CreateDir(p.keep_parent, p.keep_leaf, txg, p.snap));
  UZFS_ASSIGN_OR_RETURN(DslDirPhys kd, ReadDirPhys(kdir));
  kd.head_dataset_obj = p.head;
  UZFS_RETURN_IF_ERROR(WriteDirPhys(kdir, kd, txg));

  // F's new head: S's tree, its deadlist keyed as the old head's below S
  // (as a head whose newest snapshot is S has it), made as a clone's head
  // is but not linked as one: S's successor.
  UZFS_ASSIGN_OR_RETURN(const uint64_t nh, CreateHeadOver(p.dir, p.snap, txg));
  UZFS_ASSIGN_OR_RETURN(const DslDatasetPhys n, ReadDsPhys(nh));
  const uint64_t old_unique = h.unique_bytes;
  d.head_dataset_obj = nh;
  UZFS_RETURN_IF_ERROR(WriteDirPhys(p.dir, d, txg));

  // The names: F keeps S and the older ones, K takes the later ones in the
  // old head's map.
  for (const auto& [obj, snap] : p.names) {
    const bool moves = std::find(p.later.begin(), p.later.end(), obj) != p.later.end();
    if (moves) continue;
    UZFS_RETURN_IF_ERROR(MosZapRemove(h.snapnames_zapobj, snap, txg));
    UZFS_RETURN_IF_ERROR(MosZapAdd(n.snapnames_zapobj, snap, obj, txg));
  }
  // The later datasets move, with their clones' dd_clones entries.
  for (uint64_t obj : p.later) {
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys x, ReadDsPhys(obj));
    x.dir_obj = kdir;
    UZFS_RETURN_IF_ERROR(WriteDsPhys(obj, x, txg));
    if (!dir_clones || x.next_clones_obj == 0 || d.clones == 0) continue;
    UZFS_ASSIGN_OR_RETURN(auto clones, MosZapList(x.next_clones_obj));
    for (const auto& [k, v] : clones) {
      if (v.empty()) continue;
      UZFS_ASSIGN_OR_RETURN(DslDatasetPhys c, ReadDsPhys(v[0]));
      UZFS_ASSIGN_OR_RETURN(DslDirPhys cd, ReadDirPhys(c.dir_obj));
      const std::string entry = NextClonesEntryName(cd.head_dataset_obj);
      Status rm = MosZapRemove(d.clones, entry, txg);
      if (rm.IsNotFound()) continue;  // a pool an earlier uzfs made
      UZFS_RETURN_IF_ERROR(rm);
      if (kd.clones == 0) {
        UZFS_ASSIGN_OR_RETURN(kd.clones, MosCreateZap(dmu_ot::kDslClones, txg));
        UZFS_RETURN_IF_ERROR(WriteDirPhys(kdir, kd, txg));
      }
      UZFS_RETURN_IF_ERROR(MosZapAdd(kd.clones, entry, cd.head_dataset_obj, txg));
    }
  }
  h.dir_obj = kdir;
  UZFS_RETURN_IF_ERROR(WriteDsPhys(p.head, h, txg));

  // S: H is its successor, K its new clone.
  UZFS_ASSIGN_OR_RETURN(s, ReadDsPhys(p.snap));
  s.next_snap_obj = nh;
  s.unique_bytes = 0;
  s.num_children++;
  if (ident_.version >= kVersionNextClones && s.next_clones_obj == 0) {
    UZFS_ASSIGN_OR_RETURN(s.next_clones_obj, MosCreateZap(dmu_ot::kNextClones, txg));
  }
  UZFS_RETURN_IF_ERROR(WriteDsPhys(p.snap, s, txg));
  if (s.next_clones_obj != 0) {
    UZFS_RETURN_IF_ERROR(MosZapAdd(s.next_clones_obj, NextClonesEntryName(oldest), oldest, txg));
  }
  // F's own origin's directory lists F's head among its clones (every
  // file system is a clone of $ORIGIN from version 26): H now, not the
  // old head. The pool's bootfs follows F too.
  if (dir_clones && d.origin_obj != 0) {
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys origin, ReadDsPhys(d.origin_obj));
    UZFS_ASSIGN_OR_RETURN(DslDirPhys od, ReadDirPhys(origin.dir_obj));
    if (od.clones != 0) {
      Status rm = MosZapRemove(od.clones, NextClonesEntryName(p.head), txg);
      if (!rm.ok() && !rm.IsNotFound()) return rm;  // (missing: a pool an earlier uzfs made)
      UZFS_RETURN_IF_ERROR(MosZapAdd(od.clones, NextClonesEntryName(nh), nh, txg));
    }
  }
  if (auto props = MosZapLookup(1, "pool_props"); props.ok()) {
    if (auto b = MosZapLookup(*props, "bootfs"); b.ok() && *b == p.head) {
      UZFS_RETURN_IF_ERROR(MosZapAdd(*props, "bootfs", nh, txg));
    }
  }
  if (dir_clones) {
    UZFS_ASSIGN_OR_RETURN(d, ReadDirPhys(p.dir));
    if (d.clones == 0) {
      UZFS_ASSIGN_OR_RETURN(d.clones, MosCreateZap(dmu_ot::kDslClones, txg));
      UZFS_RETURN_IF_ERROR(WriteDirPhys(p.dir, d, txg));
    }
    UZFS_RETURN_IF_ERROR(MosZapAdd(d.clones, NextClonesEntryName(p.head), p.head, txg));
  }

  // The space (header comment).
  UZFS_ASSIGN_OR_RETURN(const uint64_t refres, RefReservationOf(d));
  const int64_t moved = static_cast<int64_t>(p.moved.used);
  const int64_t dead_after = static_cast<int64_t>(p.dead_after.used);
  const int64_t back = static_cast<int64_t>(p.back);
  std::array<int64_t, kDdUsedCount> from_f{}, to_k{};
  from_f[static_cast<int>(DdUsed::kHead)] = back - (moved - dead_after);
  from_f[static_cast<int>(DdUsed::kSnap)] = -back - dead_after;
  from_f[static_cast<int>(DdUsed::kRefReserve)] = static_cast<int64_t>(std::min(old_unique, refres));
  to_k[static_cast<int>(DdUsed::kHead)] = moved - dead_after;
  to_k[static_cast<int>(DdUsed::kSnap)] = dead_after;
  UZFS_RETURN_IF_ERROR(DirUse(kdir, to_k, static_cast<int64_t>(p.moved.comp), static_cast<int64_t>(p.moved.uncomp),
                              txg));
  UZFS_RETURN_IF_ERROR(DirUse(p.dir, from_f, -static_cast<int64_t>(p.moved.comp),
                              -static_cast<int64_t>(p.moved.uncomp), txg));
  // F's open writer was the old head's (synced, it is K's now).
  datasets_.erase(p.fs);
  return Status::Ok();
}

}  // namespace uzfs
