// ObjsetWriter::Sync: writes one txg's dirty records copy-on-write and
// installs the new tree (contract and threading in objset_writer.h).
// Sync runs these steps in order, each a member function below:
//   CollectDirty      snapshot txg's dirty objects under mu_ (or find a
//                     pass >= 2 with nothing to write);
//   PlanDataBlocks,   the level-0 data and spill blocks to write (early
//   PlanSpillBlocks   blocks reused, rewrite candidates of a pass >= 2);
//   WriteDataBlocks   write them, all in flight at once;
//   SyncObjectTrees   each object's indirect tree and new dnode;
//   WriteMetaDnode    the dnode blocks and the meta-dnode's tree;
//   WriteObjsetBlock  the objset block (the new root);
//   AccountSync       born/killed/rewritten space for SyncStats;
//   InstallSync       the new tree becomes the committed one, under mu_;
//   FreeReplaced      free what the new tree replaced.
// Until InstallSync nothing committed changes: a failed step goes to
// FailSync, which unallocates every block written so far.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zfs/dmu/block_tree.h"
#include "zfs/dmu/object_reader.h"
#include "zfs/dmu/objset_writer.h"
#include "zfs/dmu/objset_writer_internal.h"

namespace uzfs {

// What one Sync call carries from step to step. CollectDirty fills the
// snapshot under mu_; the write steps then use it without mu_ (nobody
// changes txg's records any more).
struct ObjsetWriter::SyncState {
  uint64_t txg = 0;
  bool again = false;  // a pass >= 2 of txg
  SyncStats stats;
  // Set when a pass >= 2 has nothing to write: the root Sync returns.
  std::optional<BlockPtr> unchanged_root;
  struct Work {
    uint64_t object;
    Dnode old;
    std::shared_ptr<TxgRecord> rec;
  };
  std::vector<Work> work;
  Objset os;
  BlockPtr old_root;
  DataProps dp;
  // Metadata gets one copy more than data, up to 3 (the MOS: 3), and no
  // compression from pass 2 on, so sizes stop changing.
  int meta_copies = 1;
  CompressType meta_compress = CompressType::kOff;
  // New allocations (what a failure unallocates) and replaced blocks (what
  // success frees); rewrites in place are in neither.
  std::vector<BlockPtr> all_written, all_frees;
  uint64_t rewritten = 0;
  bool issued = false;  // writes were issued (a pass >= 2 may have rewritten)
  // Committed trees of the objects, built by PlanDataBlocks when a pass
  // >= 2 looks up its data blocks' rewrite candidates, reused by
  // SyncObjectTrees.
  std::vector<std::unique_ptr<BlockTree>> trees;
  // Level-0 data blocks (then spill blocks) to write, and where each data
  // block goes: (work index, blkid); job_at covers data blocks only.
  std::vector<BlockWrite> jobs;
  std::vector<std::pair<size_t, uint64_t>> job_at;
  // Blocks written early that this sync uses (born here, but not
  // unallocated if it fails: they stay the record's overrides) and those
  // it does not use (freed once it succeeds).
  std::vector<BlockPtr> early_born, early_unused;
  std::vector<uint8_t> preset;  // per job: result given by an early write
  std::vector<size_t> spill_job;  // per work index: its spill job, or kNoSpillJob
  static constexpr size_t kNoSpillJob = SIZE_MAX;
  std::vector<SyncedObject> done;  // per work index: what the sync made of it
  std::map<uint64_t, BlockPtr> dnode_cands;  // pass >= 2: dnode blocks born in txg
  BlockPtr root;                   // the new objset block
};

namespace {

// Number of allocated dnodes in a 16 KiB dnode block (its fill count).
uint64_t CountDnodes(std::span<const uint8_t> blk) {
  uint64_t n = 0;
  for (size_t i = 0; i < kDnodesPerBlock;) {
    const uint8_t* p = blk.data() + i * kDnodeSlotSize;
    if (p[0] != 0) {
      n++;
      i += size_t{p[12]} + 1;
    } else {
      i++;
    }
  }
  return n;
}

void AddUsed(Dnode* dn, const std::vector<BlockPtr>& freed, const std::vector<BlockPtr>& written) {
  uint64_t bytes = dn->UsedBytes();
  for (const BlockPtr& bp : freed) bytes -= std::min(bytes, BlockAsize(bp));
  for (const BlockPtr& bp : written) bytes += BlockAsize(bp);
  dn->used = (dn->flags & kDnodeFlagUsedBytes) ? bytes : bytes >> 9;
}

// The props a sync writes a metadata block with: fletcher4, the sync's
// metadata compression and copies.
WriteProps MetaWriteProps(CompressType compress, int copies, uint8_t type) {
  WriteProps p;
  p.compress = compress;
  p.checksum = ChecksumType::kFletcher4;
  p.copies = copies;
  p.type = type;
  return p;
}

}  // namespace

Result<BlockPtr> ObjsetWriter::Sync(Txg txg) { return Sync(txg, nullptr); }

Result<BlockPtr> ObjsetWriter::Sync(Txg tx_group, SyncStats* stats_out) {
  const uint64_t txg = tx_group.number();
  MutexLock sync_lock(&sync_mu_);
  SyncState st;
  st.txg = txg;
  UZFS_RETURN_IF_ERROR(CollectDirty(st));
  if (st.unchanged_root) {
    if (stats_out) *stats_out = st.stats;
    return *st.unchanged_root;
  }
  if (Status s = WriteTxg(st); !s.ok()) return FailSync(st, std::move(s));
  AccountSync(st);
  InstallSync(st);
  // Under sync_mu_: no later Sync can free these blocks before they are
  // cached (this one frees only blocks the new tree replaced).
  HandOverEvicted();
  if (stats_out) *stats_out = st.stats;
  UZFS_RETURN_IF_ERROR(FreeReplaced(st));
  return st.root;
}

Status ObjsetWriter::CollectDirty(SyncState& st) {
  const uint64_t txg = st.txg;
  SyncStats& stats = st.stats;
  stats.txg = Txg{txg};
  {
    MutexLock l(&mu_);
    st.again = opts_.multi_pass && pass_txg_ != 0 && txg == pass_txg_ && txg == synced_txg_;
    // Another pass is allowed even when a newer txg has records by now
    // (they came after this txg's, which must still be synced first).
    if (!st.again || broken_) UZFS_RETURN_IF_ERROR(CheckTxg(txg));
    for (const auto& [t, objs] : dirty_objects_) {
      if (t < txg && !objs.empty())
        return Status::InvalidArgument("txg " + std::to_string(t) + " has unsynced changes; sync it before txg " +
                                       std::to_string(txg));
    }
    stats.pass = st.again ? passes_ + 1 : 1;
    auto d = dirty_objects_.find(txg);
    if (st.again && (d == dirty_objects_.end() || d->second.empty())) {
      // Nothing changed since the last pass: write nothing, keep the root.
      if (d != dirty_objects_.end()) dirty_objects_.erase(d);
      dirty_bytes_.erase(txg);
      passes_ = stats.pass;
      last_stats_ = stats;
      st.unchanged_root = root_;
      return Status::Ok();
    }
    syncing_txg_ = txg;
    // Early writes of txg still running finish first (none starts now).
    while (early_inflight_.count(txg)) early_cv_.Wait(&mu_);
    for (uint64_t o : dirty_objects_[txg]) {
      Object* obj = objects_.at(o).get();
      st.work.push_back({o, obj->committed, obj->txgs.at(txg)});
    }
    st.os = os_;
    // The newest log header set for txg or before (older ones not synced
    // yet belong to txgs nothing else dirtied: this sync writes them).
    for (auto z = zil_headers_.begin(); z != zil_headers_.end() && z->first <= txg; z = zil_headers_.erase(z))
      st.os.zil = z->second;
    st.old_root = root_;
    // Data properties changed for this txg or before take effect now.
    for (auto it = pending_props_.begin(); it != pending_props_.end() && it->first <= txg;
         it = pending_props_.erase(it))
      data_props_ = it->second;
    st.dp = data_props_;
  }
  st.meta_copies = std::min(3, st.dp.copies + 1);
  st.meta_compress = st.again ? CompressType::kOff : MetaCompress();
  st.trees.resize(st.work.size());
  return Status::Ok();
}

Status ObjsetWriter::FailSync(SyncState& st, Status s) {
  for (const BlockPtr& bp : st.all_written) {
    zio_.Unallocate(bp, st.txg).IgnoreError();
    // Indirect and dnode blocks were offered to the reader's cache as
    // they were written: their (address, birth) may name another block
    // when this txg is synced again.
    reader_.Forget(bp);
  }
  MutexLock l(&mu_);
  syncing_txg_ = 0;
  if (st.again && st.issued) broken_ = true;
  return s;
}

// Every write of the sync, up to and including the new root; nothing
// committed changes here.
Status ObjsetWriter::WriteTxg(SyncState& st) {
  UZFS_RETURN_IF_ERROR(PlanDataBlocks(st));
  PlanSpillBlocks(st);
  UZFS_RETURN_IF_ERROR(WriteDataBlocks(st));
  UZFS_RETURN_IF_ERROR(SyncObjectTrees(st));
  UZFS_RETURN_IF_ERROR(WriteMetaDnode(st));
  return WriteObjsetBlock(st);
}

// 1a. The level-0 data blocks of every object: a job per block, its result
// preset when an early write made it.
Status ObjsetWriter::PlanDataBlocks(SyncState& st) {
  const uint64_t txg = st.txg;
  const bool again = st.again;
  for (size_t i = 0; i < st.work.size(); i++) {
    const TxgRecord& r = *st.work[i].rec;
    for (const auto& [blkid, e] : r.early) {
      auto b = r.blocks.find(blkid);
      const bool usable = !r.freed && !e.stale && !e.in_flight && blkid <= r.fields.maxblkid &&
                          b != r.blocks.end() && e.bp.lsize == b->second->size() && !again;
      if (!usable && !e.in_flight) st.early_unused.push_back(e.bp);
    }
    if (r.freed) continue;
    const Dnode& f = r.fields;
    WriteProps p = DataWriteProps(f, st.dp);
    if (again) p.compress = CompressType::kOff;
    const Dnode& old = st.work[i].old;
    for (const auto& entry : r.blocks) {
      const uint64_t blkid = entry.first;  // a plain variable: clang 14 cannot capture bindings
      const auto& buf = entry.second;
      if (blkid > f.maxblkid) continue;  // truncated away later in the txg
      BlockWrite job{*buf, p, {}};
      if (auto e = r.early.find(blkid); !again && e != r.early.end() && !e->second.stale &&
                                        !e->second.in_flight && e->second.bp.lsize == buf->size()) {
        job.result = e->second.bp;
        st.early_born.push_back(e->second.bp);
        st.jobs.push_back(job);
        st.job_at.push_back({i, blkid});
        st.preset.push_back(1);
        continue;
      }
      // The block it replaces, unless this txg's frees (applied first)
      // make that slot a hole before the new block lands in it.
      const bool freed_first = std::any_of(r.frees.begin(), r.frees.end(), [&](const auto& fr) {
        return blkid >= fr.first && blkid < fr.second;
      });
      if (again && !old.IsFree() && !freed_first && blkid <= old.maxblkid &&
          old.DataBlockSize() == buf->size()) {
        if (!st.trees[i]) st.trees[i] = std::make_unique<BlockTree>(zio_, old, &reader_, ReadOpts());
        auto cand = st.trees[i]->Lookup(0, blkid);
        if (!cand.ok()) return cand.status().WithContext("object " + std::to_string(st.work[i].object));
        if (cand->birth == txg) job.props.rewrite = *cand;
      }
      st.jobs.push_back(job);
      st.job_at.push_back({i, blkid});
      st.preset.push_back(0);
    }
  }
  return Status::Ok();
}

// 1b. Spill blocks, after every data block.
void ObjsetWriter::PlanSpillBlocks(SyncState& st) {
  st.spill_job.assign(st.work.size(), SyncState::kNoSpillJob);
  for (size_t i = 0; i < st.work.size(); i++) {
    const TxgRecord& r = *st.work[i].rec;
    if (r.freed || !r.spill_set || !r.spill || r.spill->empty()) continue;
    // Metadata (OpenZFS writes spill blocks with the metadata policy):
    // the bonus type, level 0, fletcher4, metadata compression and copies.
    WriteProps p = MetaWriteProps(st.meta_compress, st.meta_copies,
                                  r.fields.bonustype != 0 ? r.fields.bonustype : dmu_ot::kSa);
    const Dnode& old = st.work[i].old;
    if (st.again && !old.IsFree() && old.spill && !old.spill->IsHole() && old.spill->birth == st.txg)
      p.rewrite = *old.spill;
    st.spill_job[i] = st.jobs.size();
    st.jobs.push_back(BlockWrite{*r.spill, p, {}});
  }
}

// 1c. Writes the planned data and spill blocks, all in flight at once
// (those an early write made are not written again).
Status ObjsetWriter::WriteDataBlocks(SyncState& st) {
  std::vector<BlockWrite>& jobs = st.jobs;
  st.issued = true;
  st.preset.resize(jobs.size(), 0);  // spill jobs
  if (st.early_born.empty()) {
    UZFS_RETURN_IF_ERROR(WriteBlocks(zio_, jobs, st.txg));
  } else {
    std::vector<BlockWrite> to_write;
    std::vector<size_t> at;
    for (size_t j = 0; j < jobs.size(); j++) {
      if (st.preset[j]) continue;
      to_write.push_back(jobs[j]);
      at.push_back(j);
    }
    UZFS_RETURN_IF_ERROR(WriteBlocks(zio_, to_write, st.txg));
    for (size_t k = 0; k < at.size(); k++) jobs[at[k]].result = to_write[k].result;
  }
  for (size_t j = 0; j < jobs.size(); j++) {
    const BlockWrite& bw = jobs[j];
    if (!st.preset[j] && !bw.result.IsHole() && !IsRewriteOf(bw.result, bw.props.rewrite))
      st.all_written.push_back(bw.result);
  }
  return Status::Ok();
}

// 2. Each object's tree and new dnode, in work order (as job_at is).
Status ObjsetWriter::SyncObjectTrees(SyncState& st) {
  size_t next_job = 0;
  for (size_t i = 0; i < st.work.size(); i++) {
    SyncedObject so;
    UZFS_RETURN_IF_ERROR(SyncObjectTree(st, i, &next_job, &so));
    st.all_frees.insert(st.all_frees.end(), so.frees.begin(), so.frees.end());
    st.done.push_back(std::move(so));
    st.trees[i].reset();  // its cached indirect blocks are no longer needed
  }
  return Status::Ok();
}

// 2a. Object i's level-0 changes put in its tree and the indirect blocks
// above them written; *next_job: its first data job, moved past its last.
Status ObjsetWriter::SyncObjectTree(SyncState& st, size_t i, size_t* next_job, SyncedObject* so) {
  const SyncState::Work& w = st.work[i];
  const TxgRecord& r = *w.rec;
  so->object = w.object;
  so->old = w.old;
  Dnode base = w.old;
  if (base.IsFree()) {
    base = r.fields;
    base.blkptr.assign(base.nblkptr, BlockPtr{});
    base.nlevels = 1;
    base.maxblkid = 0;
    base.used = 0;
  }
  if (base.IsFree()) {  // allocated and freed before ever reaching disk
    so->dn = Dnode{};
    return Status::Ok();
  }
  if (!st.trees[i]) st.trees[i] = std::make_unique<BlockTree>(zio_, base, &reader_, ReadOpts());
  BlockTree& tree = *st.trees[i];
  Status s = Status::Ok();
  if (r.freed) {
    s = tree.FreeRange(0, UINT64_MAX);
    if (s.ok() && base.spill) so->frees.push_back(*base.spill);
  } else {
    tree.GrowTo(r.fields.maxblkid);
    for (const auto& [a, b] : r.frees) {
      if (s.ok()) s = tree.FreeRange(a, b);
    }
    for (; s.ok() && *next_job < st.job_at.size() && st.job_at[*next_job].first == i; ++*next_job) {
      s = tree.SetL0(st.job_at[*next_job].second, st.jobs[*next_job].result);
      so->l0.emplace_back(st.job_at[*next_job].second, st.jobs[*next_job].result);
    }
    // Blocks past a truncated end that reached disk in earlier txgs.
    if (s.ok() && r.fields.maxblkid < base.maxblkid) s = tree.FreeRange(r.fields.maxblkid + 1, UINT64_MAX);
  }
  // For a freed object this writes nothing (every block is a hole) but
  // collects the replaced indirect blocks for freeing.
  if (s.ok()) s = tree.WriteIndirect(MetaWriteProps(st.meta_compress, st.meta_copies, base.type), st.txg);
  // Count the L0 blocks already in all_written once; indirect ones now.
  for (const BlockPtr& bp : tree.written()) {
    if (bp.level > 0) st.all_written.push_back(bp);
  }
  if (!s.ok()) return s.WithContext("object " + std::to_string(w.object));
  so->frees.insert(so->frees.end(), tree.frees().begin(), tree.frees().end());
  so->written = tree.written();
  st.rewritten += tree.rewritten().size();
  if (r.freed) {
    so->dn = Dnode{};
    return Status::Ok();
  }
  return NewDnode(st, i, tree, so);
}

// 2b. The new dnode of object i (not freed in txg) over its synced tree:
// the record's fields, the tree's top, the spill block and dn_used.
Status ObjsetWriter::NewDnode(SyncState& st, size_t i, const BlockTree& tree, SyncedObject* so) {
  const SyncState::Work& w = st.work[i];
  const TxgRecord& r = *w.rec;
  so->dn = r.fields;
  so->dn.nlevels = static_cast<uint8_t>(tree.levels());
  so->dn.blkptr = tree.top();
  so->dn.used = w.old.IsFree() ? 0 : w.old.used;
  so->dn.spill = w.old.IsFree() ? std::nullopt : w.old.spill;
  if (r.spill_set) {
    // The new spill block (if any) replaces the old one (if any).
    std::optional<BlockPtr> spill;
    bool in_place = false;
    if (st.spill_job[i] != SyncState::kNoSpillJob) {
      const BlockWrite& j = st.jobs[st.spill_job[i]];
      if (!j.result.IsHole()) spill = j.result;
      in_place = spill && IsRewriteOf(j.result, j.props.rewrite);
    }
    if (in_place) {
      st.rewritten++;
    } else {
      if (so->dn.spill && !so->dn.spill->IsHole()) so->frees.push_back(*so->dn.spill);
      if (spill) so->written.push_back(*spill);
    }
    so->dn.spill = spill;
  }
  if (so->dn.spill) {
    so->dn.flags |= kDnodeFlagSpillBlkptr;
  } else {
    so->dn.flags &= static_cast<uint8_t>(~kDnodeFlagSpillBlkptr);
  }
  AddUsed(&so->dn, so->frees, so->written);
  if (Status v = ValidateDnode(so->dn); !v.ok())
    return v.WithContext("new dnode of object " + std::to_string(w.object));
  return Status::Ok();
}

// 3a. The dnode blocks the synced objects live in, read (or zeroed when
// new) and their slots rewritten; a pass >= 2 notes which were born in txg
// (rewrite candidates) in st.dnode_cands.
Status ObjsetWriter::FillDnodeBlocks(SyncState& st, const Dnode& meta, BlockTree& mtree,
                                     std::map<uint64_t, std::vector<uint8_t>>* mblocks) {
  for (const SyncedObject& so : st.done) {
    const uint64_t b = so.object / kDnodesPerBlock;
    auto it = mblocks->find(b);
    if (it == mblocks->end()) {
      std::vector<uint8_t> blk(kMetaDnodeBlockSize, 0);
      if (b <= meta.maxblkid) {
        if (Status s = mtree.ReadL0(b, blk); !s.ok()) return s.WithContext("dnode block");
        if (st.again) {
          auto cand = mtree.Lookup(0, b);
          if (!cand.ok()) return cand.status().WithContext("dnode block");
          if (cand->birth == st.txg) st.dnode_cands[b] = *cand;
        }
      }
      it = mblocks->emplace(b, std::move(blk)).first;
    }
    const size_t off = (so.object % kDnodesPerBlock) * kDnodeSlotSize;
    std::span<uint8_t> slot = std::span<uint8_t>(it->second).subspan(off);
    if (so.dn.IsFree()) {
      const size_t n = so.old.IsFree() ? kDnodeSlotSize : so.old.Size();
      std::fill_n(slot.begin(), std::min(n, slot.size()), 0);
    } else {
      EncodeDnode(so.dn, slot);
    }
  }
  return Status::Ok();
}

// 3b. The dnode blocks written, then the meta-dnode's tree over them.
Status ObjsetWriter::WriteMetaDnode(SyncState& st) {
  Dnode meta = st.os.meta_dnode;
  BlockTree mtree(zio_, meta, &reader_, ReadOpts());
  std::map<uint64_t, std::vector<uint8_t>> mblocks;
  UZFS_RETURN_IF_ERROR(FillDnodeBlocks(st, meta, mtree, &mblocks));
  std::vector<BlockWrite> mjobs;
  for (auto& [b, blk] : mblocks) {
    WriteProps p = MetaWriteProps(st.meta_compress, st.meta_copies, dmu_ot::kDnode);
    p.fill = CountDnodes(blk);
    if (auto c = st.dnode_cands.find(b); c != st.dnode_cands.end()) p.rewrite = c->second;
    mjobs.push_back(BlockWrite{blk, p, {}});
  }
  UZFS_RETURN_IF_ERROR(WriteBlocks(zio_, mjobs, st.txg));
  for (const BlockWrite& j : mjobs) {
    if (j.result.IsHole() || IsRewriteOf(j.result, j.props.rewrite)) continue;
    st.all_written.push_back(j.result);
    // Dnode loads of the next txgs read it through the reader's cache.
    if (reader_.Caches()) reader_.Written(j.result, std::make_shared<AlignedBytes>(j.data.begin(), j.data.end()), ReadOpts());
  }
  if (!mblocks.empty()) meta.maxblkid = std::max(meta.maxblkid, mblocks.rbegin()->first);
  mtree.GrowTo(meta.maxblkid);
  Status s = Status::Ok();
  size_t k = 0;
  for (auto& [b, blk] : mblocks) {
    if (s.ok()) s = mtree.SetL0(b, mjobs[k].result);
    k++;
  }
  if (s.ok()) s = mtree.WriteIndirect(MetaWriteProps(st.meta_compress, st.meta_copies, dmu_ot::kDnode), st.txg);
  for (const BlockPtr& bp : mtree.written()) {
    if (bp.level > 0) st.all_written.push_back(bp);
  }
  if (!s.ok()) return s.WithContext("meta-dnode");
  meta.nlevels = static_cast<uint8_t>(mtree.levels());
  meta.blkptr = mtree.top();
  AddUsed(&meta, mtree.frees(), mtree.written());
  st.all_frees.insert(st.all_frees.end(), mtree.frees().begin(), mtree.frees().end());
  st.rewritten += mtree.rewritten().size();
  st.os.meta_dnode = meta;
  return Status::Ok();
}

// 4. The objset block: the new root.
Status ObjsetWriter::WriteObjsetBlock(SyncState& st) {
  const BlockPtr& old_root = st.old_root;
  const size_t os_size = !old_root.IsHole() ? old_root.lsize
                         : st.os.userused ? kObjsetPhysSizeV2
                                          : kObjsetPhysSizeV1;
  std::vector<uint8_t> raw(os_size);
  EncodeObjset(st.os, raw);
  BlockWrite rj{raw, MetaWriteProps(st.meta_compress, st.meta_copies, dmu_ot::kObjset), {}};
  rj.props.rewrite = old_root;  // Zio takes it only when born in this txg (a pass >= 2)
  rj.props.fill = 0;
  for (const BlockPtr& bp : st.os.meta_dnode.blkptr) rj.props.fill += bp.IsHole() ? 0 : bp.fill;
  UZFS_RETURN_IF_ERROR(WriteBlocks(zio_, std::span<BlockWrite>(&rj, 1), st.txg));
  if (rj.result.IsHole()) return Status::Corruption("objset block encoded as zeros");
  const bool root_rewritten = IsRewriteOf(rj.result, old_root);
  if (root_rewritten) {
    st.rewritten++;
  } else {
    st.all_written.push_back(rj.result);  // counted as born below
    if (opts_.free_old_root && !old_root.IsHole()) st.all_frees.push_back(old_root);
  }
  st.root = rj.result;
  return Status::Ok();
}

// Born, killed and rewritten space of the sync, for SyncStats.
void ObjsetWriter::AccountSync(SyncState& st) {
  SyncStats& stats = st.stats;
  st.all_written.insert(st.all_written.end(), st.early_born.begin(), st.early_born.end());  // counted as born
  for (const BlockPtr& bp : st.all_written) {
    stats.born_blocks++;
    stats.born_asize += BlockAsize(bp);
    stats.born_psize += bp.psize;
    stats.born_lsize += UncompressedCharge(bp);
    stats.max_born_lsize = std::max<uint64_t>(stats.max_born_lsize, bp.lsize);
    if (bp.compression == static_cast<uint8_t>(CompressType::kZstd)) stats.born_zstd = true;
  }
  for (const BlockPtr& bp : st.all_frees) {
    if (bp.IsHole()) continue;
    stats.killed_blocks++;
    stats.killed_asize += BlockAsize(bp);
    stats.killed_psize += bp.psize;
    stats.killed_lsize += UncompressedCharge(bp);
  }
  stats.rewritten_blocks = st.rewritten;
  stats.wrote = true;
}

// 5a. The new tree becomes the committed one: dnodes, freed slots, the
// objset and its root, the synced-block cache.
void ObjsetWriter::InstallSync(SyncState& st) {
  const uint64_t txg = st.txg;
  MutexLock l(&mu_);
  for (size_t i = 0; i < st.done.size(); i++) {
    SyncedObject& so = st.done[i];
    auto it = objects_.find(so.object);
    Object* obj = it->second.get();
    obj->txgs.erase(txg);
    KeepSynced(so.object, obj, *st.work[i].rec, so.old, so.dn, so.l0);
    if (so.dn.IsFree() && obj->txgs.empty()) {
      objects_.erase(it);
    } else {
      obj->committed = std::move(so.dn);
    }
  }
  for (const auto& [o, n] : freed_objects_[txg]) {
    std::fill_n(slots_.begin() + o, std::min<size_t>(n, slots_.size() - o), 0);
    alloc_hint_ = std::min(alloc_hint_, o);
  }
  freed_objects_.erase(txg);
  dirty_objects_.erase(txg);
  dirty_bytes_.erase(txg);
  os_ = std::move(st.os);
  root_ = st.root;
  installs_.fetch_add(1, std::memory_order_acq_rel);
  synced_txg_ = txg;
  syncing_txg_ = 0;
  pass_txg_ = txg;
  passes_ = st.stats.pass;
  last_stats_ = st.stats;
}

// 5b. Frees what the new tree replaced and the early blocks it did not use.
Status ObjsetWriter::FreeReplaced(SyncState& st) {
  const uint64_t txg = st.txg;
  Status first_err = Status::Ok();
  for (const BlockPtr& bp : st.all_frees) {
    Status s = opts_.free_hook ? opts_.free_hook(bp, Txg{txg}, st.stats.pass) : zio_.Free(bp, txg);
    if (!s.ok() && first_err.ok()) first_err = s;
    reader_.Forget(bp);  // its cached buffer can go now (the ARC's arc_freed)
  }
  for (const BlockPtr& bp : st.early_unused) {
    Status s = zio_.Free(bp, txg);
    if (!s.ok() && first_err.ok()) first_err = s;
  }
  early_used_.fetch_add(st.early_born.size(), std::memory_order_relaxed);
  early_dropped_.fetch_add(st.early_unused.size(), std::memory_order_relaxed);
  if (!first_err.ok()) return first_err.WithContext("freeing replaced blocks (space leaked)");
  return Status::Ok();
}

WriteProps ObjsetWriter::DataWriteProps(const Dnode& f, const DataProps& dp) const {
  WriteProps p;
  p.compress = f.compress > 1 ? static_cast<CompressType>(f.compress)
               : dp.compress != CompressType::kInherit ? dp.compress
                                                       : MetaCompress();
  // The dataset's zstd level applies where its compression does; an
  // object that names zstd itself gets the default level.
  if (f.compress <= 1 && dp.compress == CompressType::kZstd) p.zstd_level = dp.zstd_level;
  p.checksum = f.checksum > 1 ? static_cast<ChecksumType>(f.checksum) : dp.checksum;
  p.copies = dp.copies;
  p.type = f.type;
  return p;
}

}  // namespace uzfs
