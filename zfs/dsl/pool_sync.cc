// The txg sync of a pool (contract in pool.h): sync tasks, the dirty
// dataset objsets, config and history, then sync passes until the space
// maps and the MOS agree, deferred frees, and the labels and uberblock
// written between cache flushes.
#include <algorithm>
#include <map>

#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_build.h"
#include "zfs/dsl/pool_config.h"
#include "zfs/dsl/pool_identity.h"
#include "zfs/dsl/space_map_objects.h"
#include "zfs/spa/label_io.h"
#include "zfs/util/endian.h"

namespace uzfs {

namespace {

constexpr uint64_t kMaxSyncPasses = 32;

}  // namespace

Status Pool::Sync() {
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::Ok();
    if (!failed_.ok()) return failed_;
    if (closed_) return Status::InvalidArgument("pool '" + ident_.name + "' is not open");
  }
  // WaitSynced closes the open txg even when nothing joined it, so queued
  // DSL operations run.
  return txg_->WaitSynced(txg_->open_txg());
}

Status Pool::SyncTxg(Txg txg) {
  sync_waiting_.fetch_add(1, std::memory_order_relaxed);  // a scan slice ends sooner
  MutexLock s(&sync_mu_);
  sync_waiting_.fetch_sub(1, std::memory_order_relaxed);
  return SyncTxgLocked(txg);
}

Status Pool::RunTask(SyncTask task, bool after_datasets) {
  auto result = std::make_shared<Status>(Status::Ok());
  uint64_t queued_in = 0;
  {
    MutexLock l(&mu_);
    if (readonly_) return Status::NotSupported("pool is read-only");
    if (closed_) return Status::InvalidArgument("pool is not open");
    queued_in = txg_ ? txg_->open_txg().number() : 0;
    tasks_.push_back(PendingTask{std::move(task), result, after_datasets, queued_in});
  }
  // Sync waits for the txg open now, queued_in or later: the one that ran it.
  UZFS_RETURN_IF_ERROR(Sync());
  return *result;
}

Status Pool::SyncTxgLocked(Txg txg) {
  MutexLock l(&mu_);
  if (!failed_.ok()) return failed_;
  auto fail = [&](Status s) UZFS_NO_THREAD_SAFETY_ANALYSIS {
    failed_ = s.WithContext("pool '" + ident_.name + "' suspended: txg " + std::to_string(txg.number()) + " failed to sync");
    return failed_;
  };
  // 1. Sync tasks: each runs all or nothing as far as the caller sees; a
  //    failed task reports its error but the txg still syncs.
  //    A task checks everything before it changes anything, so a task that
  //    fails for bad input changed nothing and the txg goes on.
  // 0. Devices changed under the pool get no more writes; last txg's
  //    deferred frees (its later passes' replaced blocks).
  CheckLeaves();
  CheckFaults();
  NoteMissedWrites();
  ActivateSpares();
  if (Status s = ProcessDeferredFrees(txg); !s.ok()) return fail(s);
  // Tasks queued while a later txg was open wait for that one.
  std::vector<PendingTask> tasks, later;
  for (PendingTask& t : tasks_) (t.min_txg > txg.number() ? later : tasks).push_back(std::move(t));
  tasks_ = std::move(later);
  auto run_tasks = [&](bool after_datasets) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    for (PendingTask& t : tasks) {
      if (t.after_datasets != after_datasets) continue;
      const uint64_t before = mos_->DirtyBytes(txg);
      *t.result = t.fn(txg);
      if (!t.result->ok() && mos_->DirtyBytes(txg) != before) {
        // It failed after changing the MOS: the txg cannot be trusted.
        return t.result->WithContext("operation failed part way");
      }
    }
    return Status::Ok();
  };
  if (Status s = run_tasks(false); !s.ok()) return fail(s);
  // 2. Datasets, then the tasks that must see their sync (snapshots).
  if (Status s = SyncDatasets(txg); !s.ok()) return fail(s);
  // Resumable receives' positions, for the bytes this sync just wrote.
  if (Status s = WriteReceiveProgress(txg); !s.ok()) return fail(s);
  if (Status s = run_tasks(true); !s.ok()) return fail(s);
  // Destroyed file systems' trees: this txg's share of the frees.
  if (Status s = FreeQueuedTrees(txg); !s.ok()) return fail(s.WithContext("async destroy"));
  // 3. DTLs (a new one names its map in the config), config and history.
  //    A write the datasets' sync could not put on a leaf makes it stale
  //    now, so this txg's DTL names it.
  NoteMissedWrites();
  if (Status s = SyncDtls(txg); !s.ok()) return fail(s);
  if (config_dirty_) {
    if (Status s = WriteConfigObject(txg); !s.ok()) return fail(s);
  }
  if (!history_.empty()) {
    if (Status s = WriteHistory(txg); !s.ok()) return fail(s);
  }
  if (Status s = WriteErrorLog(txg); !s.ok()) return fail(s);
  if (Status s = WriteScanState(txg); !s.ok()) return fail(s);
  // 4. Passes until the MOS and the space maps agree.
  if (Status s = SyncPasses(txg); !s.ok()) return fail(s);
  // 5. Flush, labels, uberblock, flush. A leaf a MOS write missed is
  //    stale first: it gets no uberblock of a txg it does not hold.
  NoteMissedWrites();
  if (Status s = WriteUberblock(txg); !s.ok()) return fail(s);
  // The MOS's blocks of this txg are final: the cache may keep them.
  if (mos_reader_) mos_reader_->Settle(txg.number());
  AfterCommit();
  if (config_written_) {
    // On disk now: whoever keeps a copy of the config (a cache file) may
    // take it.
    if (config_listener_) config_listener_(*config_written_);
    config_written_.reset();
  }
  ZilSyncDone(txg);
  alloc_->SyncDone(txg.number());
  LogClassSyncDone(txg);
  open_txg_ = txg.next();
  return Status::Ok();
}

Status Pool::SyncDatasets(Txg txg) {
  for (auto& [name, ds] : datasets_) {
    if (!ds->os) continue;
    UZFS_RETURN_IF_ERROR(ZilSyncDataset(*ds, txg));
    if (!ds->needs_sync && !ds->os->HasDirty(txg)) continue;
    UZFS_ASSIGN_OR_RETURN(BlockPtr bp, ds->os->Sync(txg));
    const SyncStats st = ds->os->LastSyncStats();
    ds->needs_sync = false;
    if (st.max_born_lsize > kOldMaxBlockSize) UZFS_RETURN_IF_ERROR(ActivateLargeBlocks(ds->ds_obj, txg));
    if (st.born_zstd) UZFS_RETURN_IF_ERROR(ActivateDatasetFeature(ds->ds_obj, kZstdCompressGuid, txg));
    UZFS_ASSIGN_OR_RETURN(DslDatasetPhys p, ReadDsPhys(ds->ds_obj));
    // What it references changes by all it wrote and killed; what only it
    // holds (unique, the dir's usage) not by what a snapshot still holds.
    DeadTally dead;
    if (!ds->dead.empty()) {
      UZFS_ASSIGN_OR_RETURN(dead, KillToDeadlist(*ds, p, txg));
    }
    const int64_t du = static_cast<int64_t>(Deflate(st.born_asize)) - static_cast<int64_t>(Deflate(st.killed_asize));
    const int64_t dc = static_cast<int64_t>(st.born_psize) - static_cast<int64_t>(st.killed_psize);
    const int64_t dl = static_cast<int64_t>(st.born_lsize) - static_cast<int64_t>(st.killed_lsize);
    const int64_t dunique = du + static_cast<int64_t>(dead.used);
    // Under a refreservation the dataset's directory grows only by what
    // max(unique, refreservation) grows by: the rest of the new data takes
    // the place of reserved space (REFRSRV shrinks as HEAD grows). One net
    // change per txg gives what ZFS's block-by-block charges add up to.
    UZFS_ASSIGN_OR_RETURN(DslDirPhys dir, ReadDirPhys(ds->dir_obj));
    UZFS_ASSIGN_OR_RETURN(const uint64_t refreservation, RefReservationOf(dir));
    const uint64_t unique_after = p.unique_bytes + static_cast<uint64_t>(dunique);
    const int64_t charged = static_cast<int64_t>(std::max(unique_after, refreservation)) -
                            static_cast<int64_t>(std::max(p.unique_bytes, refreservation));
    p.bp = bp;
    p.referenced_bytes += du;
    p.compressed_bytes += dc;
    p.uncompressed_bytes += dl;
    p.unique_bytes = unique_after;
    UZFS_RETURN_IF_ERROR(WriteDsPhys(ds->ds_obj, p, txg));
    std::array<int64_t, kDdUsedCount> parts{};
    parts[static_cast<int>(DdUsed::kHead)] = dunique - static_cast<int64_t>(dead.to_snap);
    parts[static_cast<int>(DdUsed::kSnap)] = static_cast<int64_t>(dead.to_snap);
    parts[static_cast<int>(DdUsed::kRefReserve)] = charged - dunique;
    UZFS_RETURN_IF_ERROR(DirUse(ds->dir_obj, parts, dc + static_cast<int64_t>(dead.compressed),
                                dl + static_cast<int64_t>(dead.uncompressed), txg));
  }
  return Status::Ok();
}

Status Pool::SyncPasses(Txg txg) {
  maps_->SetTxg(txg);
  std::string trace;  // per pass: born/killed/rewritten blocks, for the error
  for (uint64_t pass = 1;; pass++) {
    last_sync_passes_.store(static_cast<uint32_t>(pass), std::memory_order_relaxed);
    if (pass > kMaxSyncPasses) return Status::Corruption("sync passes did not converge:" + trace);
    UZFS_RETURN_IF_ERROR(alloc_->SyncTxg(txg.number(), *maps_, /*allow_condense=*/pass == 1));
    UZFS_RETURN_IF_ERROR(LogClassSyncTxg(txg, /*allow_condense=*/pass == 1));
    if (!mos_->HasDirty(txg)) break;
    UZFS_RETURN_IF_ERROR(mos_->Sync(txg).status());
    UZFS_RETURN_IF_ERROR(AppendDeferredFrees(txg));
    const SyncStats st = mos_->LastSyncStats();
    if (pass > kMaxSyncPasses - 4) {
      trace += " [pass " + std::to_string(pass) + ": born " + std::to_string(st.born_blocks) + "/" +
               std::to_string(st.born_asize) + " killed " + std::to_string(st.killed_blocks) + "/" +
               std::to_string(st.killed_asize) + " rewritten " + std::to_string(st.rewritten_blocks) + "]";
    }
    const int64_t du = static_cast<int64_t>(Deflate(st.born_asize)) - static_cast<int64_t>(Deflate(st.killed_asize));
    const int64_t dc = static_cast<int64_t>(st.born_psize) - static_cast<int64_t>(st.killed_psize);
    const int64_t dl = static_cast<int64_t>(st.born_lsize) - static_cast<int64_t>(st.killed_lsize);
    if (du != 0 || dc != 0 || dl != 0) {
      UZFS_RETURN_IF_ERROR(ChargeDirs(mos_dir_obj_, du, dc, dl, static_cast<int>(DdUsed::kHead), txg));
    }
  }
  return Status::Ok();
}

ObjsetWriterOptions Pool::MosOptions() {
  ObjsetWriterOptions mo;
  mo.pool_version = ident_.version;
  mo.multi_pass = true;
  mo.reader = mos_reader_.get();
  mo.free_hook = [this](const BlockPtr& bp, Txg txg, int pass) UZFS_NO_THREAD_SAFETY_ANALYSIS {
    // Runs inside mos_->Sync, called by SyncPasses with mu_ held.
    if (pass >= 2 && bp.birth < txg.number() && sync_bplist_obj_ != 0) {
      deferred_frees_.push_back(bp);
      return Status::Ok();
    }
    return zio_->Free(bp, txg.number());
  };
  mo.on_read_error = ReadErrorHook(0);
  return mo;
}

// The deferred-free list is a bplist (bpobj from v26).
Status Pool::AppendDeferredFrees(Txg txg) {
  if (deferred_frees_.empty()) return Status::Ok();
  UZFS_RETURN_IF_ERROR(AppendBplist(sync_bplist_obj_, deferred_frees_, txg));
  deferred_frees_.clear();
  return Status::Ok();
}

Status Pool::ProcessDeferredFrees(Txg txg) {
  if (sync_bplist_obj_ == 0) return Status::Ok();
  UZFS_ASSIGN_OR_RETURN(Dnode dn, mos_->GetDnode(sync_bplist_obj_));
  if (dn.bonus.size() < 32) return Status::Corruption("sync_bplist header too short");
  const uint64_t n = LoadLE64(dn.bonus.data());
  if (n == 0) return Status::Ok();
  if (n > (uint64_t{1} << 24)) return Status::Corruption("sync_bplist has an impossible length");
  std::vector<uint8_t> raw(n * kBlockPtrSize);
  UZFS_RETURN_IF_ERROR(mos_->Read(sync_bplist_obj_, 0, raw));
  for (uint64_t i = 0; i < n; i++) {
    const BlockPtr bp =
        DecodeBlockPtr(std::span<const uint8_t, kBlockPtrSize>(raw.data() + i * kBlockPtrSize, kBlockPtrSize));
    UZFS_RETURN_IF_ERROR(zio_->Free(bp, txg.number()));
  }
  UZFS_RETURN_IF_ERROR(mos_->FreeRange(sync_bplist_obj_, 0, UINT64_MAX, txg));
  std::vector<uint8_t> hdr(dn.bonus.size(), 0);
  return mos_->SetBonus(sync_bplist_obj_, dn.bonustype, hdr, txg);
}

Status Pool::WriteLabels(uint64_t state, Txg txg) {
  std::map<uint64_t, Vdev*> by_guid;
  std::vector<Vdev*> leaves;
  root_->CollectLeaves(&leaves);
  for (Vdev* v : leaves) by_guid[v->guid()] = v;
  int written = 0;
  Status first = Status::Ok();
  const std::vector<uint64_t> holes = HoleIds(tree_);
  // Newest top-level vdevs first: a crash part way through a `zpool add`
  // leaves labels on the new devices (which import then drops, see
  // LoadAfterImport) rather than old labels naming devices that have none.
  for (auto top_it = tree_.children.rbegin(); top_it != tree_.children.rend(); ++top_it) {
    const VdevNode& top = *top_it;
    std::vector<const VdevNode*> ln;
    CollectLeafNodes(top, &ln);
    for (const VdevNode* n : ln) {
      auto it = by_guid.find(n->guid);
      if (it == by_guid.end() || !it->second->usable() || !it->second->device()) continue;
      Status s = WriteDeviceConfig(*it->second->device(),
                                   LeafLabelConfig(ident_, state, txg, top, n->guid, tree_.children.size(), holes));
      if (s.ok()) {
        written++;
      } else if (first.ok()) {
        first = s;
      }
    }
  }
  if (written == 0) return first.ok() ? Status::IoError("no device to write labels to") : first;
  return Status::Ok();
}

// Leaves a replace, attach or detach took out of the tree stay open until
// the pool closes (a read in flight may still use one), but once the
// config without them is on disk another pool may take them (zpool create
// -f of a detached file). A spare given back is a spare again on disk.
void Pool::AfterCommit() {
  if (!tree_left_due_) return;
  tree_left_due_ = false;
  for (uint64_t guid : spare_labels_due_) {
    auto it = idle_spares_.find(guid);
    if (it == idle_spares_.end() || it->second == nullptr || it->second->device() == nullptr) continue;
    BlockDevice& d = *it->second->device();
    if (InitDeviceLabels(d).ok()) WriteDeviceConfig(d, AuxLabelConfig(ident_.version, kPoolStateSpare, guid)).IgnoreError();
  }
  spare_labels_due_.clear();
  // What must stay locked: the live tree, the idle spares (ready to stand
  // in) and a detached leaf whose labels are not wiped yet.
  std::vector<Vdev*> keep;
  root_->CollectLeaves(&keep);
  for (const auto& [guid, spare] : idle_spares_)
    if (spare != nullptr) spare->CollectLeaves(&keep);
  keep.insert(keep.end(), locked_until_wiped_.begin(), locked_until_wiped_.end());
  for (const auto& v : swapped_vdevs_) {
    if (v == nullptr) continue;
    std::vector<Vdev*> gone;
    v->CollectOwnedLeaves(&gone);  // a retired group may still name a child it gave away
    for (Vdev* leaf : gone) {
      if (leaf->device() != nullptr && std::find(keep.begin(), keep.end(), leaf) == keep.end())
        leaf->device()->ReleaseExclusive();
    }
  }
}

Status Pool::WriteUberblock(Txg txg) {
  // Every top-level vdev flushed; a failed log device is not fatal (it
  // holds no pool data: the intent log moves to the main pool).
  for (size_t i = 0; i < tree_.children.size(); i++) {
    Vdev* top = root_->child(static_cast<uint32_t>(i));
    if (top == nullptr) continue;
    Status s = top->Flush();
    if (!s.ok() && !tree_.children[i].is_log) return s;
  }
  if (labels_dirty_) {
    UZFS_RETURN_IF_ERROR(WriteLabels(label_state_, txg));
    labels_dirty_ = false;
    tree_left_due_ = true;
  }
  Uberblock ub;
  ub.version = ident_.version;
  ub.txg = txg.number();
  ub.guid_sum = GuidSum(tree_);
  ub.timestamp = PoolClockSeconds();
  ub.rootbp = mos_->root();
  std::vector<Vdev*> leaves;
  root_->CollectLeaves(&leaves);
  int written = 0;
  Status first = Status::Ok();
  for (Vdev* leaf : leaves) {
    // Not to a stale leaf: its newest uberblock says up to which txg it is
    // whole, which import reads back (pool_device_state.cc).
    if (!leaf->usable() || !leaf->device() || leaf->stale()) continue;
    Status s = WriteDeviceUberblock(*leaf->device(), ub, leaf->ashift());
    if (s.ok()) {
      written++;
    } else if (first.ok()) {
      first = s;
    }
  }
  if (written == 0) return first.ok() ? Status::IoError("no device to write the uberblock to") : first;
  ub_ = ub;
  return Status::Ok();
}

}  // namespace uzfs
