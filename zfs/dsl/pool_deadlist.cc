// Blocks a head kills that a snapshot still holds (contract in pool.h).
//
// A block born after the head's newest snapshot (prev_snap_txg) is the
// head's alone and is freed when the head kills it; one born before is
// still referenced by that snapshot (or, in a clone, by its origin), so it
// goes on the head's deadlist instead, as ZFS does: the list a snapshot
// destroy later frees from. Before version 26 the deadlist is a bplist;
// from 26 a ZAP of bpobjs, which uzfs does not write yet (Pool::Objset
// keeps such datasets read-only there).
//
// Accounting, as ZFS keeps it: the head no longer references the block;
// the dir still holds it (in a snapshot); if the head's newest snapshot
// is its own (not a clone's origin) and the block was born after that
// snapshot's own predecessor, only that snapshot holds it now, so its
// unique bytes grow; and a block born in this dir (after its origin)
// moves from the dir's HEAD usage to its SNAP usage.
#include "zfs/dmu/block_tree.h"
#include "zfs/dsl/pool.h"
#include "zfs/util/endian.h"

namespace uzfs {

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
  if (ident_.version >= kVersionDeadlists) {
    return Status::NotSupported(where + ": bpobj deadlists are not written yet");
  }
  if (p.deadlist_obj == 0) return Status::Corruption(where + ": the dataset has none");
  if (Status s = AppendBplist(p.deadlist_obj, dead, txg); !s.ok()) return s.WithContext(where);
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
