// The pool's persistent error log (error_log.h): damaged blocks found by
// reads are recorded in memory, written into the MOS's "errlog_last" ZAP at
// the next txg sync (created on first use and named in the pool directory,
// as ZFS does), and listed from both logs plus what is not synced yet.
//
// While a scrub runs, new entries go to "errlog_scrub" instead (emptied when
// the scrub starts); when it finishes, that log replaces errlog_last, as in
// ZFS: the list is then what the scrub (and reads during it) found.
//
// Promises: a block is listed from the moment a read failed on it until a
// scrub that started after the failure finishes without finding it damaged,
// across export/import and daemon restarts; a read-only pool lists what it
// found in memory only (nothing is written to it).
#include <algorithm>
#include <set>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"
#include "zfs/util/probes.h"

namespace uzfs {

void Pool::LoadErrorLog() {
  if (auto o = MosZapLookup(1, kErrlogLastKey); o.ok()) errlog_last_obj_ = *o;
  if (auto o = MosZapLookup(1, kErrlogScrubKey); o.ok()) errlog_scrub_obj_ = *o;
}

std::function<void(uint64_t, int64_t, uint64_t, const Status&)> Pool::ReadErrorHook(uint64_t objset) {
  return [this, objset](uint64_t object, int64_t level, uint64_t blkid, const Status& why) {
    RecordDataError(DataErrorBookmark{objset, object, level, blkid}, why);
  };
}

void Pool::RecordDataError(const DataErrorBookmark& b, const Status& why) {
  if (why.code() == Code::kCorruption) {  // (an unreadable block is not a checksum error)
    UZFS_PROBE(checksum_error, uint64_t{0}, uint64_t{0}, static_cast<int64_t>(b.objset), static_cast<int64_t>(b.object),
               static_cast<int64_t>(b.level), static_cast<int64_t>(b.blkid));
  }
  std::function<void(const std::string&)> log;
  {
    MutexLock l(&errlog_mu_);
    errlog_pending_.insert(b);
    if (!errlog_reported_.insert(b).second) return;
    log = event_log_;
  }
  PostEvent("ereport.fs.zfs.data", {{"zio_err", "\"" + std::string(why.message()) + "\""},
                                    {"zio_objset", std::to_string(b.objset)},
                                    {"zio_object", std::to_string(b.object)},
                                    {"zio_level", std::to_string(b.level)},
                                    {"zio_blkid", std::to_string(b.blkid)}});
  if (!log) return;
  log("pool '" + ident_.name + "': permanent error in " +
      (b.objset == 0 ? std::string("the pool's metadata") : "dataset object " + std::to_string(b.objset)) +
      ", object " + std::to_string(b.object) + " level " + std::to_string(b.level) + " block " +
      std::to_string(b.blkid) + ": " + std::string(why.message()));
}

void Pool::SetEventLog(std::function<void(const std::string&)> log) {
  MutexLock l(&errlog_mu_);
  event_log_ = std::move(log);
}

Status Pool::WriteErrorLog(Txg txg) {
  std::set<DataErrorBookmark> batch;
  {
    MutexLock l(&errlog_mu_);
    batch = errlog_pending_;
  }
  bool started = false, finished = false, scrubbing = false;
  {
    MutexLock k(&scan_mu_);
    if (readonly_) return Status::Ok();
    started = std::exchange(errlog_scrub_started_, false);
    finished = std::exchange(errlog_scrub_finished_, false);
    scrubbing = scan_.scanning() && scan_.func == ScanFunc::kScrub;
  }
  // Under mu_, as this function (the analysis does not follow lambdas).
  auto drop = [&](uint64_t* obj, const char* key) UZFS_NO_THREAD_SAFETY_ANALYSIS -> Status {
    if (*obj == 0) return Status::Ok();
    UZFS_RETURN_IF_ERROR(MosZapRemove(1, key, txg));
    UZFS_RETURN_IF_ERROR(mos_->FreeObject(*obj, txg));
    *obj = 0;
    return Status::Ok();
  };
  if (started) UZFS_RETURN_IF_ERROR(drop(&errlog_scrub_obj_, kErrlogScrubKey));
  if (!batch.empty()) {
    const bool to_scrub = scrubbing || finished;
    uint64_t& obj = to_scrub ? errlog_scrub_obj_ : errlog_last_obj_;
    if (obj == 0) {
      UZFS_ASSIGN_OR_RETURN(obj, MosCreateZap(dmu_ot::kErrorLog, txg));
      UZFS_RETURN_IF_ERROR(MosZapAdd(1, to_scrub ? kErrlogScrubKey : kErrlogLastKey, obj, txg));
    }
    for (const DataErrorBookmark& b : batch) {
      UZFS_RETURN_IF_ERROR(MosZapAddString(obj, ErrorLogName(b), "", txg));
    }
  }
  if (finished) {
    // The scrub's findings become the list.
    UZFS_RETURN_IF_ERROR(drop(&errlog_last_obj_, kErrlogLastKey));
    if (errlog_scrub_obj_ != 0) {
      UZFS_RETURN_IF_ERROR(MosZapRemove(1, kErrlogScrubKey, txg));
      UZFS_RETURN_IF_ERROR(MosZapAdd(1, kErrlogLastKey, errlog_scrub_obj_, txg));
      errlog_last_obj_ = std::exchange(errlog_scrub_obj_, 0);
    }
  }
  // Only what was written leaves the pending set: entries recorded while
  // this ran wait for the next sync.
  MutexLock l(&errlog_mu_);
  for (const DataErrorBookmark& b : batch) errlog_pending_.erase(b);
  if (finished) errlog_reported_.clear();  // a block damaged again is news again
  return Status::Ok();
}

Result<std::vector<DataErrorBookmark>> Pool::DataErrors() {
  std::set<DataErrorBookmark> all;
  MutexLock l(&mu_);  // held while the pending set is read: a sync moves entries from it into the MOS
  for (uint64_t obj : {errlog_last_obj_, errlog_scrub_obj_}) {
    if (obj == 0) continue;
    UZFS_ASSIGN_OR_RETURN(auto entries, MosZapList(obj));
    for (const auto& [name, value] : entries) {
      if (auto b = ParseErrorLogName(name)) all.insert(*b);
    }
  }
  {
    MutexLock e(&errlog_mu_);
    all.insert(errlog_pending_.begin(), errlog_pending_.end());
  }
  return std::vector<DataErrorBookmark>(all.begin(), all.end());
}

Result<std::string> Pool::DatasetNameOf(uint64_t ds_obj) {
  UZFS_ASSIGN_OR_RETURN(std::vector<DatasetInfo> all, ListDatasets());
  for (const DatasetInfo& d : all) {
    if (d.ds_obj == ds_obj) return d.name;
  }
  return Status::NotFound("no dataset with object number " + std::to_string(ds_obj));
}

}  // namespace uzfs
