// ObjsetWriter's early writes (WR_INDIRECT: "dmu_sync" plus the dirty
// record's override): WriteEarly writes a level-0 block of an unsynced
// txg's record before that txg syncs, so the intent log can name the block
// instead of copying its data, and DropEarly takes the override back when
// the block changes again. What they promise (see objset_writer.h):
//   - an early block holds the bytes the record held when it was asked for
//     (the write runs from the record's buffer; a change meanwhile copies);
//   - Sync(T) puts an unchanged early block in the tree instead of writing
//     the data again, and waits for early writes of T still in flight;
//   - a dropped or unused early block is freed in its own txg, deferred, so
//     a log record naming it stays readable until that txg is on disk;
//   - at most one early block per block and txg, never a gang block, none
//     for a txg syncing or synced and none on a multi_pass writer.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "zfs/dmu/block_tree.h"
#include "zfs/dmu/objset_writer.h"
#include "zfs/dmu/objset_writer_internal.h"

namespace uzfs {

void ObjsetWriter::DropEarly(TxgRecord* rec, uint64_t first, uint64_t stop, uint64_t txg) {
  for (auto it = rec->early.lower_bound(first); it != rec->early.end() && it->first < stop;) {
    if (it->second.in_flight) {
      it->second.stale = true;
      rec->early_dropped.insert(it->first);
      ++it;
      continue;
    }
    // Deferred like any free of txg: a log record naming it stays readable
    // until txg is on disk.
    zio_.Free(it->second.bp, txg).IgnoreError();
    rec->early_dropped.insert(it->first);
    early_dropped_.fetch_add(1, std::memory_order_relaxed);
    it = rec->early.erase(it);
  }
}

void ObjsetWriter::WriteEarly(std::span<EarlyWrite> reqs) {
  struct Job {
    size_t req;
    std::shared_ptr<TxgRecord> rec;
    uint64_t blkid;
    // The record's buffer itself: a writer changing the block meanwhile
    // gets a copy (DirtyBlock), so these bytes stay what was logged.
    std::shared_ptr<const AlignedBytes> bytes;
  };
  std::vector<Job> jobs;
  std::vector<BlockWrite> writes;
  constexpr size_t kNoJob = SIZE_MAX;
  std::vector<size_t> dup_of(reqs.size(), kNoJob);  // a request answered by another's job
  {
    MutexLock l(&mu_);
    for (size_t i = 0; i < reqs.size(); i++) {
      EarlyWrite& q = reqs[i];
      q.bp = BlockPtr{};
      q.status = Status::Ok();
      auto fail = [&](Status s) { q.status = std::move(s); };
      if (opts_.multi_pass) {
        fail(Status::NotSupported("no early writes in a multi-pass set"));
        continue;
      }
      if (broken_ || q.txg.number() <= synced_txg_ || (syncing_txg_ != 0 && q.txg.number() <= syncing_txg_)) {
        fail(Status::Busy("txg " + std::to_string(q.txg.number()) + " is syncing or synced"));
        continue;
      }
      auto o = objects_.find(q.object);
      if (o == objects_.end()) {
        fail(Status::NotFound("object not dirty"));
        continue;
      }
      auto t = o->second->txgs.find(q.txg.number());
      if (t == o->second->txgs.end() || t->second->freed) {
        fail(Status::NotFound("object not dirty in that txg"));
        continue;
      }
      const std::shared_ptr<TxgRecord>& rec = t->second;
      const uint64_t dblk = rec->fields.DataBlockSize();
      const uint64_t blkid = q.offset / dblk;
      auto b = rec->blocks.find(blkid);
      if (b == rec->blocks.end() || blkid > rec->fields.maxblkid) {
        fail(Status::NotFound("block not dirty in that txg"));
        continue;
      }
      if (rec->early_dropped.count(blkid)) {
        // Rewritten after an early write in this txg: one early block per
        // block and txg (the dropped one holds its space until the sync).
        fail(Status::Busy("block already written early once in this txg"));
        continue;
      }
      auto e = rec->early.find(blkid);
      if (e != rec->early.end()) {
        if (e->second.in_flight || e->second.stale) {
          // Asked twice in one call: the job below answers both.
          for (size_t k = 0; k < jobs.size(); k++) {
            if (jobs[k].rec == rec && jobs[k].blkid == blkid) dup_of[i] = k;
          }
          if (dup_of[i] == kNoJob) fail(Status::Busy("block being written early"));
          continue;
        }
        q.bp = e->second.bp;
        continue;
      }
      rec->early[blkid].in_flight = true;
      early_inflight_[q.txg.number()]++;
      jobs.push_back(Job{i, rec, blkid, b->second});
      DataProps dp = data_props_;
      for (auto it = pending_props_.begin(); it != pending_props_.end() && it->first <= q.txg.number(); ++it) dp = it->second;
      writes.push_back(BlockWrite{{}, DataWriteProps(rec->fields, dp), {}});
    }
  }
  if (jobs.empty()) return;
  for (size_t k = 0; k < jobs.size(); k++) writes[k].data = *jobs[k].bytes;
  // All in one txg per request; group by txg for WriteBlocks.
  std::vector<Status> errs(jobs.size(), Status::Ok());
  std::map<uint64_t, std::vector<size_t>> by_txg;
  for (size_t k = 0; k < jobs.size(); k++) by_txg[reqs[jobs[k].req].txg.number()].push_back(k);
  for (const auto& [txg, ks] : by_txg) {
    std::vector<BlockWrite> w;
    for (size_t k : ks) w.push_back(writes[k]);
    Status s = WriteBlocks(zio_, w, txg);
    for (size_t n = 0; n < ks.size(); n++) {
      writes[ks[n]].result = w[n].result;
      errs[ks[n]] = s;
    }
  }
  MutexLock l(&mu_);
  for (size_t k = 0; k < jobs.size(); k++) {
    Job& j = jobs[k];
    EarlyWrite& q = reqs[j.req];
    const BlockPtr bp = writes[k].result;
    auto e = j.rec->early.find(j.blkid);
    const bool stale = e == j.rec->early.end() || e->second.stale;
    bool gang = false;
    for (int d = 0; d < bp.NumDvas(); d++) gang |= bp.dva[d].gang;
    if (gang) {
      // A gang block's DVA does not describe its space as one range
      // (claims on import could not take it): the caller copies instead.
      zio_.Unallocate(bp, q.txg.number()).IgnoreError();
      q.status = Status::NoSpace("no room for the block in one piece");
      if (e != j.rec->early.end()) j.rec->early.erase(e);
    } else if (!errs[k].ok() || bp.IsHole()) {
      q.status = !errs[k].ok() ? errs[k] : Status::NotFound("an all-zero block");
      if (e != j.rec->early.end()) j.rec->early.erase(e);
    } else if (stale) {
      // Changed while it was written: Sync writes the new bytes; this
      // block still holds what the log record needs until txg is on disk.
      zio_.Free(bp, q.txg.number()).IgnoreError();
      early_dropped_.fetch_add(1, std::memory_order_relaxed);
      if (e != j.rec->early.end()) j.rec->early.erase(e);
      q.bp = bp;
    } else {
      e->second.in_flight = false;
      e->second.bp = bp;
      q.bp = bp;
    }
    if (--early_inflight_[q.txg.number()] == 0) early_inflight_.erase(q.txg.number());
  }
  for (size_t i = 0; i < reqs.size(); i++) {
    if (dup_of[i] == kNoJob) continue;
    reqs[i].status = reqs[jobs[dup_of[i]].req].status;
    reqs[i].bp = reqs[jobs[dup_of[i]].req].bp;
  }
  early_cv_.SignalAll();
}

}  // namespace uzfs
