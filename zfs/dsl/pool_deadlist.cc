// Blocks a head kills that a snapshot still holds (contract in pool.h).
//
// A block born after the head's newest snapshot (prev_snap_txg) is the
// head's alone and is freed when the head kills it; one born before is
// still referenced by that snapshot (or, in a clone, by its origin), so it
// goes on the head's deadlist instead, as ZFS does: the list a snapshot
// destroy later frees from. Before version 26 the deadlist is a bplist;
// from 26 a keyed deadlist: a ZAP whose keys (hex txgs, "mintxg") name
// bpobjs, each holding the killed blocks born after its key and up to the
// next key. A head's keys are the txgs of its earlier snapshots (and its
// origin's), so the entry a block goes to tells which snapshots hold it.
// A key's bpobj may be the pool's shared empty bpobj (OpenZFS's
// empty_bpobj feature): the first block for it gets a bpobj of its own and
// the feature's refcount drops.
//
// Accounting, as ZFS keeps it: the head no longer references the block;
// the dir still holds it (in a snapshot); if the head's newest snapshot
// is its own (not a clone's origin) and the block was born after that
// snapshot's own predecessor, only that snapshot holds it now, so its
// unique bytes grow; and a block born in this dir (after its origin)
// moves from the dir's HEAD usage to its SNAP usage.
#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>

#include "zfs/dmu/block_tree.h"
#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/deadlist_format.h"
#include "zfs/dsl/pool.h"
#include "zfs/util/endian.h"

namespace uzfs {

namespace {

constexpr const char* kEmptyBpobjGuid = "com.delphix:empty_bpobj";

}  // namespace

Result<std::map<uint64_t, uint64_t>> Pool::DeadlistEntries(uint64_t dl_obj) {
  UZFS_ASSIGN_OR_RETURN(auto entries, MosZapList(dl_obj));
  std::map<uint64_t, uint64_t> out;
  for (const auto& [name, values] : entries) {
    char* end = nullptr;
    const uint64_t key = std::strtoull(name.c_str(), &end, 16);
    if (name.empty() || *end != '\0' || values.size() != 1) {
      return Status::Corruption("deadlist " + std::to_string(dl_obj) + ": bad entry '" + name + "'");
    }
    out[key] = values[0];
  }
  return out;
}

Result<uint64_t> Pool::DeadlistBytes(uint64_t dl_obj) {
  if (dl_obj == 0) return uint64_t{0};
  UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(dl_obj));
  // Keyed: used first; a bplist/bpobj: entries, then bytes.
  const size_t at = dn.type == dmu_ot::kDeadlist ? 0 : 8;
  if (dn.bonus.size() < at + 8) return Status::Corruption("deadlist " + std::to_string(dl_obj) + ": header too short");
  return LoadLE64(dn.bonus.data() + at);
}

Result<uint64_t> Pool::NewHeadDeadlist(const DslDatasetPhys& h, Txg txg) {
  if (ident_.version < kVersionDeadlists) return MosCreateDeadlist(txg);
  UZFS_ASSIGN_OR_RETURN(auto old, DeadlistEntries(h.deadlist_obj));
  std::set<uint64_t> keys;
  for (const auto& [key, bpobj] : old) keys.insert(key);
  keys.insert(h.prev_snap_txg);
  return DeadlistWithKeys(keys, txg);
}

Result<uint64_t> Pool::DeadlistWithKeys(const std::set<uint64_t>& keys, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(const uint64_t dl, MosCreateDeadlist(txg));
  // With empty_bpobj every key names the pool's one empty bpobj (a head
  // with N snapshots would otherwise get N new objects per snapshot).
  UZFS_ASSIGN_OR_RETURN(const bool shared, FeatureEnabled(kEmptyBpobjGuid));
  uint64_t empty = 0;
  if (shared && !keys.empty()) {
    if (Result<uint64_t> e = MosZapLookup(1, "empty_bpobj"); e.ok()) {
      empty = *e;
    } else {
      UZFS_ASSIGN_OR_RETURN(empty, MosCreateBplist(kBpobjBlockSize, txg));
      UZFS_RETURN_IF_ERROR(MosZapAdd(1, "empty_bpobj", empty, txg));
    }
    UZFS_RETURN_IF_ERROR(FeatureAddRef(kEmptyBpobjGuid, static_cast<int64_t>(keys.size()), txg));
  }
  std::vector<std::pair<std::string, uint64_t>> entries;
  entries.reserve(keys.size());
  for (const uint64_t key : keys) {
    uint64_t bpobj = empty;
    if (!shared) {
      UZFS_ASSIGN_OR_RETURN(bpobj, MosCreateBplist(kBpobjBlockSize, txg));
    }
    entries.emplace_back(DeadlistKeyName(key), bpobj);
  }
  UZFS_RETURN_IF_ERROR(MosZapAddMany(dl, entries, txg));
  return dl;
}

Status Pool::FreeDeadlistObjects(uint64_t dl_obj, Txg txg) {
  UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(dl_obj));
  if (dn.type == dmu_ot::kDeadlist) {
    UZFS_ASSIGN_OR_RETURN(auto entries, DeadlistEntries(dl_obj));
    for (const auto& [key, bpobj] : entries) UZFS_RETURN_IF_ERROR(FreeBpobjObject(bpobj, txg));
  }
  return mos_->FreeObject(dl_obj, txg);
}

Status Pool::DeadlistInsert(uint64_t dl_obj, std::span<const BlockPtr> bps, Txg txg) {
  if (bps.empty()) return Status::Ok();
  const std::string where = "deadlist " + std::to_string(dl_obj);
  UZFS_ASSIGN_OR_RETURN(auto entries, DeadlistEntries(dl_obj));
  if (entries.empty()) return Status::Corruption(where + " has no entries for the blocks it must hold");
  std::map<uint64_t, std::vector<BlockPtr>> by_key;
  for (const BlockPtr& bp : bps) {
    // The greatest key below the birth (a birth at or below every key, which
    // ZFS reports as damage, goes to the first entry, as ZFS then does).
    auto it = entries.lower_bound(bp.birth);
    if (it != entries.begin()) --it;
    by_key[it->first].push_back(bp);
  }
  for (const auto& [key, list] : by_key) {
    if (Status s = AppendToDeadlistEntry(dl_obj, key, entries[key], list, txg); !s.ok()) return s.WithContext(where);
  }
  return Status::Ok();
}

// One use of the shared empty bpobj fewer: when none is left the object and
// its directory entry go, as OpenZFS's bpobj_decr_empty does.
Status Pool::DropEmptyBpobjRef(Txg txg) {
  UZFS_RETURN_IF_ERROR(FeatureAddRef(kEmptyBpobjGuid, -1, txg));
  for (const char* which : {"features_for_read", "features_for_write"}) {
    UZFS_ASSIGN_OR_RETURN(const uint64_t zap, MosZapLookup(1, which));
    const Result<uint64_t> refs = MosZapLookup(zap, kEmptyBpobjGuid);
    if (!refs.ok() || *refs != 0) continue;
    UZFS_ASSIGN_OR_RETURN(const uint64_t obj, MosZapLookup(1, "empty_bpobj"));
    UZFS_RETURN_IF_ERROR(MosZapRemove(1, "empty_bpobj", txg));
    return mos_->FreeObject(obj, txg);
  }
  return Status::Ok();
}

Status Pool::AppendBplist(uint64_t obj, std::span<const BlockPtr> bps, Txg txg) {
  if (bps.empty()) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(obj));
  // 16 bytes (entries, bytes) on pools before version 3, else 32 or more
  // (compressed and uncompressed too).
  std::vector<uint8_t> hdr = dn.bonus;
  if (hdr.size() < 16) {
    return Status::Corruption("block pointer list " + std::to_string(obj) + ": header too short");
  }
  const uint64_t n = LoadLE64(hdr.data());
  std::vector<uint8_t> raw(bps.size() * kBlockPtrSize);
  uint64_t bytes = 0, comp = 0, uncomp = 0;
  for (size_t i = 0; i < bps.size(); i++) {
    // As ZFS stores list entries: fill zeroed (fill 0 means "freed" to
    // OpenZFS's bpobj readers), and the checksum too unless the block is
    // deduplicated (its free finds its table entry by the checksum).
    BlockPtr bp = bps[i];
    bp.fill = 0;
    if (!bp.dedup) bp.cksum = {};
    EncodeBlockPtr(bp, std::span<uint8_t, kBlockPtrSize>(raw.data() + i * kBlockPtrSize, kBlockPtrSize));
    bytes += Deflate(BlockAsize(bps[i]));
    comp += bps[i].psize;
    uncomp += UncompressedCharge(bps[i]);
  }
  UZFS_RETURN_IF_ERROR(mos_->Write(obj, n * kBlockPtrSize, raw, txg));
  StoreLE64(hdr.data(), n + bps.size());
  StoreLE64(hdr.data() + 8, LoadLE64(hdr.data() + 8) + bytes);
  if (hdr.size() >= 32) {
    StoreLE64(hdr.data() + 16, LoadLE64(hdr.data() + 16) + comp);
    StoreLE64(hdr.data() + 24, LoadLE64(hdr.data() + 24) + uncomp);
  }
  return mos_->SetBonus(obj, dn.bonustype, hdr, txg);
}

Result<Pool::DeadTally> Pool::KillToDeadlist(Dataset& ds, const DslDatasetPhys& p, Txg txg) {
  std::vector<BlockPtr> dead = std::move(ds.dead);
  ds.dead.clear();
  const std::string where = "deadlist of dataset " + std::to_string(ds.ds_obj);
  if (p.deadlist_obj == 0) return Status::Corruption(where + ": the dataset has none");
  if (ident_.version >= kVersionDeadlists) {
    UZFS_RETURN_IF_ERROR(DeadlistInsert(p.deadlist_obj, dead, txg));
  } else if (Status s = AppendBplist(p.deadlist_obj, dead, txg); !s.ok()) {
    return s.WithContext(where);
  }
  // The newest snapshot, if it is this head's own (its next is the head).
  std::optional<DslDatasetPhys> prev;
  if (p.prev_snap_obj != 0) {
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys s, ReadDsPhys(p.prev_snap_obj));
    if (s.next_snap_obj == ds.ds_obj) prev = s;
  }
  // The dir's origin: blocks born up to its txg were never this dir's.
  UZFS_ASSIGN_OR_RETURN(DslDirPhys dir, ReadDirPhys(ds.dir_obj));
  uint64_t origin_txg = 0;
  if (dir.origin_obj != 0) {
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys origin, ReadDsPhys(dir.origin_obj));
    origin_txg = origin.creation_txg;
  }
  DeadTally t;
  uint64_t prev_unique = 0;
  for (const BlockPtr& bp : dead) {
    const uint64_t used = Deflate(BlockAsize(bp));
    t.used += used;
    t.compressed += bp.psize;
    t.uncompressed += UncompressedCharge(bp);
    if (bp.birth > origin_txg) t.to_snap += used;
    if (prev && bp.birth > prev->prev_snap_txg) prev_unique += used;
  }
  if (prev && prev_unique != 0) {
    prev->unique_bytes += prev_unique;
    UZFS_RETURN_IF_ERROR(WriteDsPhys(p.prev_snap_obj, *prev, txg));
  }
  return t;
}

}  // namespace uzfs
