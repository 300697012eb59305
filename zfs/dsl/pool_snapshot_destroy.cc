// Destroying snapshots (contract in pool.h), as ZFS does it.
//
// A snapshot S sits between its predecessor P (prev_snap_obj: an older
// snapshot, a clone's origin, or $ORIGIN@$ORIGIN) and its successor N (a
// newer snapshot or the head). The blocks only S holds are those born after
// P (S.prev_snap_txg) that N no longer references: they are on N's
// deadlist with a birth after S.prev_snap_txg, and they are freed. N's
// other deadlist blocks (born by P, so P still holds them) stay, and S's
// own deadlist (blocks P holds that S no longer did) moves to N: N now
// follows P directly. Before version 26 that is done block by block on the
// bplists (the kept ones go on S's list, which becomes N's); from 26 by
// deadlist keys: N's entries keyed at or after S.prev_snap_txg are freed,
// S's entries are appended to N's entry of the greatest key not above
// theirs, and when N is a snapshot the head's key for S's txg goes (its
// entry joins the one before).
//
// Accounting, as ZFS keeps it: the directory's SNAP usage drops by what is
// freed (exactly S's unique bytes); P, when S was its successor, now alone
// holds the blocks born after P's own predecessor that N killed, and its
// unique bytes grow by them; N, when a snapshot, now alone holds the blocks
// born between P and S that the snapshot after N killed; a head's unique
// bytes are recomputed (referenced, less what it shares with P: P's
// referenced less the head's deadlist), and a refreservation's unused part
// shrinks by what its unique bytes grew.
//
// Every snapshot named is checked before any is destroyed (all or none),
// all in one txg's sync task. A snapshot with clones or user holds is
// refused (or, with defer, only marked to go when the last is gone).
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>

#include "zfs/dmu/block_tree.h"
#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/deadlist_format.h"
#include "zfs/dsl/pool.h"
#include "zfs/util/endian.h"

namespace uzfs {

Result<std::vector<BlockPtr>> Pool::ReadBpobj(uint64_t obj, int depth) {
  if (depth > 8) return Status::Corruption("bpobj " + std::to_string(obj) + ": sub-objects nest too deep");
  UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(obj));
  if (dn.bonus.size() < 16) return Status::Corruption("bpobj " + std::to_string(obj) + ": header too short");
  const uint64_t n = LoadLE64(dn.bonus.data());
  if (n > (uint64_t{1} << 26)) return Status::Corruption("bpobj " + std::to_string(obj) + ": impossible length");
  std::vector<uint8_t> raw(n * kBlockPtrSize);
  UZFS_RETURN_IF_ERROR(mos_->Read(obj, 0, raw));
  std::vector<BlockPtr> out;
  out.reserve(n);
  for (uint64_t i = 0; i < n; i++) {
    out.push_back(
        DecodeBlockPtr(std::span<const uint8_t, kBlockPtrSize>(raw.data() + i * kBlockPtrSize, kBlockPtrSize)));
  }
  // Sub-objects (another ZFS enqueues whole bpobjs into one).
  if (dn.bonus.size() >= 48 && LoadLE64(dn.bonus.data() + 32) != 0) {
    const uint64_t subs = LoadLE64(dn.bonus.data() + 32), count = LoadLE64(dn.bonus.data() + 40);
    if (count > (uint64_t{1} << 20)) return Status::Corruption("bpobj " + std::to_string(obj) + ": impossible sub-object count");
    std::vector<uint8_t> ids(count * 8);
    UZFS_RETURN_IF_ERROR(mos_->Read(subs, 0, ids));
    for (uint64_t i = 0; i < count; i++) {
      UZFS_ASSIGN_OR_RETURN(std::vector<BlockPtr> more, ReadBpobj(LoadLE64(ids.data() + i * 8), depth + 1));
      out.insert(out.end(), more.begin(), more.end());
    }
  }
  return out;
}

Status Pool::FreeBpobjObject(uint64_t obj, Txg txg) {
  if (Result<uint64_t> empty = MosZapLookup(1, "empty_bpobj"); empty.ok() && *empty == obj) {
    return DropEmptyBpobjRef(txg);
  }
  UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(obj));
  if (dn.bonus.size() >= 48 && LoadLE64(dn.bonus.data() + 32) != 0) {
    const uint64_t subs = LoadLE64(dn.bonus.data() + 32), count = LoadLE64(dn.bonus.data() + 40);
    std::vector<uint8_t> ids(count * 8);
    UZFS_RETURN_IF_ERROR(mos_->Read(subs, 0, ids));
    for (uint64_t i = 0; i < count; i++) UZFS_RETURN_IF_ERROR(FreeBpobjObject(LoadLE64(ids.data() + i * 8), txg));
    UZFS_RETURN_IF_ERROR(mos_->FreeObject(subs, txg));
  }
  return mos_->FreeObject(obj, txg);
}

// Bytes of a keyed deadlist's entries with keys in [from, to), from each
// entry's bpobj header.
Result<Pool::Space3> Pool::DeadlistRange(uint64_t dl_obj, uint64_t from, uint64_t to) {
  UZFS_ASSIGN_OR_RETURN(auto entries, DeadlistEntries(dl_obj));
  Space3 s;
  for (auto it = entries.lower_bound(from); it != entries.end() && it->first < to; ++it) {
    UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(it->second));
    if (dn.bonus.size() < 32) return Status::Corruption("bpobj " + std::to_string(it->second) + ": header too short");
    s.used += LoadLE64(dn.bonus.data() + 8);
    s.comp += LoadLE64(dn.bonus.data() + 16);
    s.uncomp += LoadLE64(dn.bonus.data() + 24);
  }
  return s;
}

// Bytes of the blocks of a bplist born in (after, upto].
Result<Pool::Space3> Pool::BplistBornIn(uint64_t obj, uint64_t after, uint64_t upto) {
  UZFS_ASSIGN_OR_RETURN(std::vector<BlockPtr> bps, ReadBpobj(obj));
  Space3 s;
  for (const BlockPtr& bp : bps) {
    if (bp.birth <= after || bp.birth > upto) continue;
    s.used += Deflate(BlockAsize(bp));
    s.comp += bp.psize;
    s.uncomp += UncompressedCharge(bp);
  }
  return s;
}

Status Pool::AddDeadlistHeader(uint64_t dl_obj, int64_t used, int64_t comp, int64_t uncomp, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(dl_obj));
  std::vector<uint8_t> hdr = dn.bonus;
  if (hdr.size() < 24) return Status::Corruption("deadlist " + std::to_string(dl_obj) + ": header too short");
  StoreLE64(hdr.data(), LoadLE64(hdr.data()) + static_cast<uint64_t>(used));
  StoreLE64(hdr.data() + 8, LoadLE64(hdr.data() + 8) + static_cast<uint64_t>(comp));
  StoreLE64(hdr.data() + 16, LoadLE64(hdr.data() + 16) + static_cast<uint64_t>(uncomp));
  return mos_->SetBonus(dl_obj, dn.bonustype, hdr, txg);
}

// Appends bps to the entry `key` of keyed deadlist dl_obj (a shared empty
// bpobj there is replaced by one of its own first); the header grows.
Status Pool::AppendToDeadlistEntry(uint64_t dl_obj, uint64_t key, uint64_t bpobj, std::span<const BlockPtr> bps,
                                   Txg txg) {
  if (bps.empty()) return Status::Ok();
  if (Result<uint64_t> empty = MosZapLookup(1, "empty_bpobj"); empty.ok() && *empty == bpobj) {
    UZFS_ASSIGN_OR_RETURN(bpobj, MosCreateBplist(kBpobjBlockSize, txg));
    UZFS_RETURN_IF_ERROR(MosZapRemove(dl_obj, DeadlistKeyName(key), txg));
    UZFS_RETURN_IF_ERROR(MosZapAdd(dl_obj, DeadlistKeyName(key), bpobj, txg));
    UZFS_RETURN_IF_ERROR(DropEmptyBpobjRef(txg));
  }
  UZFS_RETURN_IF_ERROR(AppendBplist(bpobj, bps, txg));
  Space3 s;
  for (const BlockPtr& bp : bps) {
    s.used += Deflate(BlockAsize(bp));
    s.comp += bp.psize;
    s.uncomp += UncompressedCharge(bp);
  }
  return AddDeadlistHeader(dl_obj, static_cast<int64_t>(s.used), static_cast<int64_t>(s.comp),
                           static_cast<int64_t>(s.uncomp), txg);
}

Result<Pool::SnapshotToDestroy> Pool::CheckSnapshotDestroy(const std::string& name) {
  const size_t at = name.find('@');
  if (at == std::string::npos) return Status::InvalidArgument("'" + name + "' is not a snapshot");
  const std::string fs = name.substr(0, at), snap = name.substr(at + 1);
  const std::string q = "cannot destroy snapshot " + name + ": ";
  auto dir = LookupDir(fs);
  if (!dir.ok()) return Status::NotFound("cannot open '" + fs + "': dataset does not exist");
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(*dir));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(d.head_dataset_obj));
  auto obj = MosZapLookup(h.snapnames_zapobj, snap);
  if (!obj.ok()) return Status::NotFound("cannot open '" + name + "': dataset does not exist");
  SnapshotToDestroy t;
  t.fs = fs;
  t.snap = snap;
  t.dir_obj = *dir;
  t.obj = *obj;
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(t.obj));
  if (s.num_children > 1) {
    std::string m = "cannot destroy '" + name + "': snapshot has dependent clones\nuse '-R' to destroy the following datasets:";
    std::vector<std::string> clones;
    if (s.next_clones_obj != 0) {
      UZFS_ASSIGN_OR_RETURN(auto entries, MosZapList(s.next_clones_obj));
      for (const auto& [k, v] : entries) {
        if (v.empty()) continue;
        UZFS_ASSIGN_OR_RETURN(DslDatasetPhys c, ReadDsPhys(v[0]));
        UZFS_ASSIGN_OR_RETURN(std::string cn, DirName(c.dir_obj));
        clones.push_back(cn);
      }
    }
    std::sort(clones.begin(), clones.end());
    for (const std::string& cn : clones) m += "\n" + cn;
    return Status::Exists(m);
  }
  if (s.userrefs_obj != 0) {
    UZFS_ASSIGN_OR_RETURN(auto holds, MosZapList(s.userrefs_obj));
    if (!holds.empty()) return Status::Busy(q + "dataset is busy");
  }
  // Open for reading (pool_snapshot_open.cc): browsed under .zfs/snapshot.
  if (open_snapshots_.count(t.obj)) return Status::Busy(q + "dataset is busy");
  if (ident_.version >= kVersionDeadlists) {
    for (uint64_t dl : {s.deadlist_obj, h.deadlist_obj}) {
      UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(dl));
      if (dn.type != dmu_ot::kDeadlist) {
        return Status::NotSupported(q + "its deadlists are in the format of an older pool version, which uzfs "
                                        "does not convert yet");
      }
    }
  }
  return t;
}

Result<std::string> Pool::DirName(uint64_t dir_obj) {
  if (dir_obj == root_dir_obj_) return ident_.name;
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir_obj));
  if (d.parent_obj == 0) return Status::Corruption("DSL directory " + std::to_string(dir_obj) + " has no parent");
  UZFS_ASSIGN_OR_RETURN(DslDirPhys parent, ReadDirPhys(d.parent_obj));
  UZFS_ASSIGN_OR_RETURN(auto kids, MosZapList(parent.child_dir_zapobj));
  for (const auto& [k, v] : kids) {
    if (!v.empty() && v[0] == dir_obj) {
      UZFS_ASSIGN_OR_RETURN(std::string up, DirName(d.parent_obj));
      return up + "/" + k;
    }
  }
  return Status::Corruption("DSL directory " + std::to_string(dir_obj) + " is not in its parent's child map");
}

Result<std::string> Pool::SnapshotName(uint64_t obj) {
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(obj));
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(s.dir_obj));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(d.head_dataset_obj));
  UZFS_ASSIGN_OR_RETURN(auto snaps, MosZapList(h.snapnames_zapobj));
  for (const auto& [snap, v] : snaps) {
    if (!v.empty() && v[0] == obj) {
      UZFS_ASSIGN_OR_RETURN(std::string fs, DirName(s.dir_obj));
      return fs + "@" + snap;
    }
  }
  return Status::Corruption("snapshot " + std::to_string(obj) + " is not in its file system's snapshot map");
}

Status Pool::DestroySnapshots(const std::vector<std::string>& names) {
  if (names.empty()) return Status::Ok();
  ReleaseOpenSnapshots(names);
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::NotSupported("pool is read-only");
    std::set<std::string> seen;
    for (const std::string& n : names) {
      if (!seen.insert(n).second) continue;
      UZFS_RETURN_IF_ERROR(CheckSnapshotDestroy(n).status());
    }
  }
  return RunTask([this, names](Txg txg) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    std::vector<SnapshotToDestroy> all;
    std::set<std::string> seen;
    for (const std::string& n : names) {
      if (!seen.insert(n).second) continue;
      UZFS_ASSIGN_OR_RETURN(SnapshotToDestroy t, CheckSnapshotDestroy(n));
      all.push_back(std::move(t));
    }
    for (const SnapshotToDestroy& t : all) UZFS_RETURN_IF_ERROR(DestroySnapshotSync(t, txg));
    return Status::Ok();
  });
}

Status Pool::DestroySnapshotSync(const SnapshotToDestroy& t, Txg txg) {
  const bool keyed = ident_.version >= kVersionDeadlists;
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(t.dir_obj));
  const uint64_t head_obj = d.head_dataset_obj;
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys h, ReadDsPhys(head_obj));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(t.obj));

  // The predecessor: its successor (or its clones list) skips S.
  std::optional<DslDatasetPhys> prev;
  bool after_branch = false;
  if (s.prev_snap_obj != 0) {
    UZFS_ASSIGN_OR_RETURN(prev, ReadDsPhys(s.prev_snap_obj));
    after_branch = prev->next_snap_obj != t.obj;
    if (after_branch && prev->next_clones_obj != 0) {
      Status rm = MosZapRemove(prev->next_clones_obj, NextClonesEntryName(t.obj), txg);
      if (!rm.ok() && !rm.IsNotFound()) return rm;
      if (s.next_snap_obj != 0) {
        UZFS_RETURN_IF_ERROR(
            MosZapAdd(prev->next_clones_obj, NextClonesEntryName(s.next_snap_obj), s.next_snap_obj, txg));
      }
    }
    if (!after_branch) prev->next_snap_obj = s.next_snap_obj;
  }

  const uint64_t next_obj = s.next_snap_obj;
  const bool next_is_head = next_obj == head_obj;
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys next, next_is_head ? Result<DslDatasetPhys>(h) : ReadDsPhys(next_obj));
  const uint64_t old_unique = next.unique_bytes;
  next.prev_snap_obj = s.prev_snap_obj;
  next.prev_snap_txg = s.prev_snap_txg;

  // Blocks to free, freed after every change to the MOS: a failure before
  // them leaves the pool as it was, one after fails the txg.
  Space3 freed;
  std::vector<BlockPtr> doomed;
  if (!keyed) {
    // Block by block: N's deadlist blocks born by P stay (on S's list,
    // which becomes N's); the rest were S's alone and are freed.
    UZFS_ASSIGN_OR_RETURN(std::vector<BlockPtr> bps, ReadBpobj(next.deadlist_obj));
    std::vector<BlockPtr> keep;
    for (const BlockPtr& bp : bps) {
      const uint64_t used = Deflate(BlockAsize(bp));
      if (bp.birth <= s.prev_snap_txg) {
        keep.push_back(bp);
        if (prev && !after_branch && bp.birth > prev->prev_snap_txg) prev->unique_bytes += used;
      } else {
        freed.used += used;
        freed.comp += bp.psize;
        freed.uncomp += UncompressedCharge(bp);
        doomed.push_back(bp);
      }
    }
    UZFS_RETURN_IF_ERROR(AppendBplist(s.deadlist_obj, keep, txg));
    std::swap(s.deadlist_obj, next.deadlist_obj);
    UZFS_RETURN_IF_ERROR(mos_->FreeObject(s.deadlist_obj, txg));
  } else {
    if (prev && !after_branch) {
      UZFS_ASSIGN_OR_RETURN(Space3 r, DeadlistRange(next.deadlist_obj, prev->prev_snap_txg, s.prev_snap_txg));
      prev->unique_bytes += r.used;
    }
    // N's entries from S's predecessor on: S's alone, freed.
    UZFS_ASSIGN_OR_RETURN(auto next_entries, DeadlistEntries(next.deadlist_obj));
    for (auto it = next_entries.lower_bound(s.prev_snap_txg); it != next_entries.end(); ++it) {
      UZFS_ASSIGN_OR_RETURN(std::vector<BlockPtr> bps, ReadBpobj(it->second));
      for (const BlockPtr& bp : bps) {
        freed.used += Deflate(BlockAsize(bp));
        freed.comp += bp.psize;
        freed.uncomp += UncompressedCharge(bp);
        doomed.push_back(bp);
      }
      UZFS_RETURN_IF_ERROR(FreeBpobjObject(it->second, txg));
      UZFS_RETURN_IF_ERROR(MosZapRemove(next.deadlist_obj, DeadlistKeyName(it->first), txg));
    }
    UZFS_RETURN_IF_ERROR(AddDeadlistHeader(next.deadlist_obj, -static_cast<int64_t>(freed.used),
                                           -static_cast<int64_t>(freed.comp), -static_cast<int64_t>(freed.uncomp),
                                           txg));
    // S's deadlist joins N's, entry by entry.
    UZFS_ASSIGN_OR_RETURN(auto remaining, DeadlistEntries(next.deadlist_obj));
    UZFS_ASSIGN_OR_RETURN(auto mine, DeadlistEntries(s.deadlist_obj));
    for (const auto& [key, bpobj] : mine) {
      UZFS_ASSIGN_OR_RETURN(std::vector<BlockPtr> bps, ReadBpobj(bpobj));
      if (!bps.empty()) {
        auto target = remaining.upper_bound(key);
        if (target == remaining.begin()) {
          // No key of N's at or below it: it becomes one.
          UZFS_ASSIGN_OR_RETURN(const uint64_t fresh, MosCreateBplist(kBpobjBlockSize, txg));
          UZFS_RETURN_IF_ERROR(MosZapAdd(next.deadlist_obj, DeadlistKeyName(key), fresh, txg));
          target = remaining.emplace(key, fresh).first;
        } else {
          --target;
        }
        UZFS_RETURN_IF_ERROR(AppendToDeadlistEntry(next.deadlist_obj, target->first, target->second, bps, txg));
        // (A shared empty bpobj there was replaced by one of its own.)
        UZFS_ASSIGN_OR_RETURN(target->second, MosZapLookup(next.deadlist_obj, DeadlistKeyName(target->first)));
      }
      UZFS_RETURN_IF_ERROR(FreeBpobjObject(bpobj, txg));
    }
    UZFS_RETURN_IF_ERROR(mos_->FreeObject(s.deadlist_obj, txg));
  }
  {
    std::array<int64_t, kDdUsedCount> use{};
    use[static_cast<int>(DdUsed::kSnap)] = -static_cast<int64_t>(freed.used);
    UZFS_RETURN_IF_ERROR(
        DirUse(t.dir_obj, use, -static_cast<int64_t>(freed.comp), -static_cast<int64_t>(freed.uncomp), txg));
  }

  if (!next_is_head) {
    // N alone now holds what was born between P and S and killed after N.
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys nn, ReadDsPhys(next.next_snap_obj));
    Space3 r;
    if (keyed) {
      UZFS_ASSIGN_OR_RETURN(r, DeadlistRange(nn.deadlist_obj, s.prev_snap_txg, s.creation_txg));
    } else {
      UZFS_ASSIGN_OR_RETURN(r, BplistBornIn(nn.deadlist_obj, s.prev_snap_txg, s.creation_txg));
    }
    next.unique_bytes += r.used;
    if (keyed) {
      // S's range closes in the head and in the clones of newer snapshots.
      UZFS_RETURN_IF_ERROR(RemoveDeadlistKey(h.deadlist_obj, s.creation_txg, txg));
      UZFS_RETURN_IF_ERROR(RemoveClonesKey(t.dir_obj, s.creation_txg, txg));
    }
    UZFS_RETURN_IF_ERROR(WriteDsPhys(next_obj, next, txg));
  } else {
    // The head: unique = referenced less what it shares with P now.
    const uint64_t shared_base = prev ? prev->referenced_bytes : 0;
    UZFS_ASSIGN_OR_RETURN(const uint64_t dead, DeadlistBytes(next.deadlist_obj));
    const uint64_t shared = shared_base > dead ? shared_base - dead : 0;
    next.unique_bytes = next.referenced_bytes > shared ? next.referenced_bytes - shared : 0;
    UZFS_ASSIGN_OR_RETURN(const uint64_t refres, RefReservationOf(d));
    if (old_unique < refres && next.unique_bytes > old_unique) {
      std::array<int64_t, kDdUsedCount> use{};
      use[static_cast<int>(DdUsed::kRefReserve)] =
          -static_cast<int64_t>(std::min(next.unique_bytes - old_unique, refres - old_unique));
      UZFS_RETURN_IF_ERROR(DirUse(t.dir_obj, use, 0, 0, txg));
    }
    UZFS_RETURN_IF_ERROR(WriteDsPhys(next_obj, next, txg));
    if (auto it = datasets_.find(t.fs); it != datasets_.end()) it->second->prev_snap_txg = s.prev_snap_txg;
  }
  if (prev) UZFS_RETURN_IF_ERROR(WriteDsPhys(s.prev_snap_obj, *prev, txg));

  // Out of the name space and the MOS.
  UZFS_ASSIGN_OR_RETURN(h, ReadDsPhys(head_obj));
  UZFS_RETURN_IF_ERROR(MosZapRemove(h.snapnames_zapobj, t.snap, txg));
  if (auto props = MosZapLookup(1, "pool_props"); props.ok()) {
    if (auto b = MosZapLookup(*props, "bootfs"); b.ok() && *b == t.obj) {
      UZFS_RETURN_IF_ERROR(MosZapAdd(*props, "bootfs", 0, txg));
    }
  }
  UZFS_RETURN_IF_ERROR(DropDatasetFeatures(t.obj, txg));
  for (uint64_t obj : {s.next_clones_obj, s.props_obj, s.userrefs_obj, t.obj}) {
    if (obj != 0) UZFS_RETURN_IF_ERROR(mos_->FreeObject(obj, txg));
  }
  for (const BlockPtr& bp : doomed) UZFS_RETURN_IF_ERROR(zio_->Free(bp, txg.number()));
  return Status::Ok();
}

// Removes key `key` of a keyed deadlist; its blocks join the entry before.
Status Pool::RemoveDeadlistKey(uint64_t dl_obj, uint64_t key, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(auto entries, DeadlistEntries(dl_obj));
  auto it = entries.find(key);
  if (it == entries.end()) return Status::Ok();
  if (it == entries.begin()) return Status::Corruption("deadlist " + std::to_string(dl_obj) + ": no key before " + std::to_string(key));
  const auto before = std::prev(it);
  UZFS_ASSIGN_OR_RETURN(std::vector<BlockPtr> bps, ReadBpobj(it->second));
  UZFS_RETURN_IF_ERROR(FreeBpobjObject(it->second, txg));
  UZFS_RETURN_IF_ERROR(MosZapRemove(dl_obj, DeadlistKeyName(key), txg));
  if (bps.empty()) return Status::Ok();
  // Moved within one deadlist: its totals stay.
  UZFS_RETURN_IF_ERROR(AppendToDeadlistEntry(dl_obj, before->first, before->second, bps, txg));
  Space3 s;
  for (const BlockPtr& bp : bps) {
    s.used += Deflate(BlockAsize(bp));
    s.comp += bp.psize;
    s.uncomp += UncompressedCharge(bp);
  }
  return AddDeadlistHeader(dl_obj, -static_cast<int64_t>(s.used), -static_cast<int64_t>(s.comp),
                           -static_cast<int64_t>(s.uncomp), txg);
}

Result<uint64_t> Pool::SnapshotsReclaim(const std::vector<std::string>& names) {
  ReleaseOpenSnapshots(names);  // as DestroySnapshots: only a snapshot in use is busy
  MutexLock l(&mu_);
  // Per file system: the snapshots to go, and what each successor's
  // deadlist frees once every one of them is gone.
  std::map<std::string, std::set<uint64_t>> by_fs;
  for (const std::string& n : names) {
    UZFS_ASSIGN_OR_RETURN(SnapshotToDestroy t, CheckSnapshotDestroy(n));
    by_fs[t.fs].insert(t.obj);
  }
  uint64_t total = 0;
  for (const auto& [fs, objs] : by_fs) {
    // Runs of consecutive doomed snapshots: a block dies with the run if it
    // was born after the run's predecessor and killed before its successor.
    for (uint64_t first : objs) {
      UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(first));
      if (s.prev_snap_obj != 0 && objs.count(s.prev_snap_obj)) continue;  // not a run's start
      const uint64_t after = s.prev_snap_txg;
      uint64_t cur = first;
      for (;;) {
        UZFS_ASSIGN_OR_RETURN(DslDatasetPhys c, ReadDsPhys(cur));
        UZFS_ASSIGN_OR_RETURN(DslDatasetPhys nx, ReadDsPhys(c.next_snap_obj));
        Space3 r;
        if (ident_.version >= kVersionDeadlists) {
          UZFS_ASSIGN_OR_RETURN(r, DeadlistRange(nx.deadlist_obj, after, UINT64_MAX));
        } else {
          UZFS_ASSIGN_OR_RETURN(r, BplistBornIn(nx.deadlist_obj, after, UINT64_MAX));
        }
        total += r.used;
        if (!objs.count(c.next_snap_obj)) break;
        cur = c.next_snap_obj;
      }
    }
  }
  return total;
}

// The clones of dir's snapshots newer than `key` (and theirs, in turn)
// keep their file system's deadlist keys below their origin: a snapshot of
// txg `key` destroyed, its key goes from their heads' deadlists too (ZFS's
// dsl_dataset_remove_clones_key).
Status Pool::RemoveClonesKey(uint64_t dir_obj, uint64_t key, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(DslDirPhys d, ReadDirPhys(dir_obj));
  if (d.clones == 0) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(auto clones, MosZapList(d.clones));
  for (const auto& [name, v] : clones) {
    if (v.empty()) continue;
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys c, ReadDsPhys(v[0]));
    UZFS_ASSIGN_OR_RETURN(DslDirPhys cd, ReadDirPhys(c.dir_obj));
    if (cd.origin_obj == 0) continue;
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys origin, ReadDsPhys(cd.origin_obj));
    if (origin.creation_txg <= key) continue;
    UZFS_RETURN_IF_ERROR(RemoveDeadlistKey(c.deadlist_obj, key, txg));
    UZFS_RETURN_IF_ERROR(RemoveClonesKey(c.dir_obj, key, txg));
  }
  return Status::Ok();
}

}  // namespace uzfs
