// The pool's scrub (pool.h, "scrub"): a thread that walks every object set
// of the last synced txg in slices, scrubbing each block through the Zio,
// and a scan record in the MOS that lets it go on after an import.
//
// Why slices under sync_mu_: the walk reads the tree of the last synced
// txg; a txg sync frees the blocks that tree loses (deferred, reusable
// after later txgs). While the slice holds sync_mu_ no txg syncs, so every
// block the slice walks is still the block the tree points to. Between
// slices the position is a (objset, object, blkid) bookmark and the next
// slice walks the tree of the then last synced txg from there; a block
// rewritten in between was born after the scrub began and needs no scrub.
//
// The sorted scan: data blocks are not read as the walk finds them but
// gathered into a window (pool.h, ScanQueue), sorted by offset and read
// in later slices, in batches whose reads merge on each leaf. A gathered
// block may be freed meanwhile (and its space reused after the deferral):
// every free is reported by the spa allocator while a window is queued
// (NoteScanFree, under sync_mu_ like every free), and a freed block is
// skipped when its batch is formed, in a slice that holds sync_mu_ until
// the batch is read. The bookmark moves past a window only once all of it
// was read.
#include <chrono>
#include <thread>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dmu/object_reader.h"
#include "zfs/dmu/objset_traverse.h"
#include "zfs/dsl/pool.h"
#include "zfs/util/probes.h"
#include "zfs/util/thread_name.h"
#include "zfs/vdev/vdev_io_stats.h"
#include "zfs/zap/dmu_zap_object.h"
#include "zfs/zap/zap_writer.h"

namespace uzfs {
namespace {

using Clock = std::chrono::steady_clock;
// The scan record reaches the disk at least this often while a scrub runs.
constexpr auto kScanCheckpoint = std::chrono::seconds(5);
// The sorted scan (pool.h, ScanQueue). A window ends, and its blocks are
// sorted and issued, when the walk reached the end, gathered
// kScanQueueBlocks data blocks (about 40 MiB of memory) or walked for
// kScanWindowSlices slices (so a resumed scan repeats at most that much).
// Issued in batches of up to kScanBatchBlocks blocks or kScanBatchBytes
// allocated bytes, kScanBatchesInflight at a time: each batch's reads go
// out together and merge on each leaf; a few in flight keep every leaf
// of a wide raidz busy while a slice still ends soon after it is told to.
constexpr size_t kScanQueueBlocks = 192 * 1024;
constexpr unsigned kScanWindowSlices = 20;
constexpr size_t kScanBatchBlocks = 1024;
constexpr uint64_t kScanBatchBytes = 4ull << 20;
constexpr uint64_t kScanBatchesInflight = 8;
// The unsorted scan (SetScanLegacy): windows of kLegacyWindowBlocks in walk
// order, each block alone, kLegacyInflight at a time.
constexpr size_t kLegacyWindowBlocks = 1024;
constexpr uint64_t kLegacyInflight = 64;
constexpr unsigned kScanWorkers = 16;

std::atomic<bool>& LegacyScan() {
  static std::atomic<bool> legacy{false};
  return legacy;
}
// How often the scan thread looks for disks to replace by themselves.
constexpr auto kAutoreplaceEvery = std::chrono::seconds(2);
// Txgs for async destroy's frees (pool_async_destroy.cc): the pause after
// each, and how often beside a running scrub.
constexpr auto kFreeTxgGap = std::chrono::milliseconds(5);
constexpr auto kFreeTxgBesideScan = std::chrono::seconds(1);

uint64_t NowSeconds() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

uint64_t Asize(const BlockPtr& bp) {
  uint64_t a = 0;
  for (const Dva& d : bp.dva) a += d.asize;
  return a;
}

uint64_t LeafRepairedBytes(Vdev& root) {
  std::vector<Vdev*> leaves;
  root.CollectLeaves(&leaves);
  uint64_t sum = 0;
  for (Vdev* v : leaves) sum += v->counters().repaired_bytes;
  return sum;
}

// The DSL dataset objects of the MOS at `mos_root`, ascending, with the
// object set each points to.
Result<std::map<uint64_t, BlockPtr>> SyncedDatasets(Zio& zio, const BlockPtr& mos_root) {
  ObjectReader reader(zio);
  UZFS_ASSIGN_OR_RETURN(Objset mos, reader.ReadObjset(mos_root));
  const Dnode& meta = mos.meta_dnode;
  std::vector<uint8_t> dnodes((meta.maxblkid + 1) * meta.DataBlockSize());
  UZFS_RETURN_IF_ERROR(reader.Read(meta, 0, dnodes));
  std::map<uint64_t, BlockPtr> out;
  for (uint64_t obj = 1; obj < dnodes.size() / kDnodeSlotSize; obj++) {
    auto dn = DecodeDnode(std::span<const uint8_t>(dnodes).subspan(obj * kDnodeSlotSize));
    if (!dn.ok() || dn->IsFree()) continue;
    if (dn->bonustype == dmu_ot::kDslDataset) {
      auto ds = DecodeDslDataset(dn->bonus);
      if (ds.ok() && !ds->bp.IsHole()) out.emplace(obj, ds->bp);
    }
    obj += dn->extra_slots;
  }
  return out;
}

}  // namespace

void SetScanLegacy(bool legacy) { LegacyScan().store(legacy, std::memory_order_relaxed); }
bool ScanLegacy() { return LegacyScan().load(std::memory_order_relaxed); }

// What one slice adds up (the workers of its batches too); the slice waits
// for every batch before it records its place.
struct Pool::ScanTally {
  Mutex mu;
  CondVar cv;
  uint64_t inflight UZFS_GUARDED_BY(mu) = 0;
  uint64_t examined UZFS_GUARDED_BY(mu) = 0;
  uint64_t errors UZFS_GUARDED_BY(mu) = 0;
  uint64_t repaired UZFS_GUARDED_BY(mu) = 0;
  void WaitBelow(uint64_t n) UZFS_EXCLUDES(mu) {
    MutexLock l(&mu);
    while (inflight > n) cv.Wait(&mu);
  }
};

void Pool::LoadScanState() {
  auto entries = MosZapList(1);
  if (!entries.ok()) return;
  for (const auto& [name, words] : *entries) {
    if (name != kPoolScanKey) continue;
    auto phys = DecodeScanPhys(words);
    if (!phys.ok()) return;  // a record uzfs does not understand: no scan resumes
    MutexLock k(&scan_mu_);
    scan_ = *phys;
    scan_pass_start_ = NowSeconds();
  }
}

Status Pool::WriteScanState(Txg txg) {
  std::array<uint64_t, kScanPhysWords> words;
  {
    MutexLock k(&scan_mu_);
    if (!scan_dirty_) return Status::Ok();
    words = EncodeScanPhys(scan_);
    scan_dirty_ = false;
  }
  DmuZapObject zo(*mos_, 1, txg);
  UZFS_ASSIGN_OR_RETURN(ZapWriter zw, ZapWriter::Open(zo));
  UZFS_RETURN_IF_ERROR(zw.Update(kPoolScanKey, 8, words));
  return zo.Flush();
}

Status Pool::ChangeScan(const std::function<Status(ScanPhys&)>& fn, const std::string& event) {
  if (readonly_ || !txg_) return Status::NotSupported("pool '" + ident_.name + "' is read-only");
  {
    MutexLock l(&mu_);
    if (closed_) return Status::InvalidArgument("pool '" + ident_.name + "' is not open");
    if (!failed_.ok()) return failed_;
  }
  {
    MutexLock k(&scan_mu_);
    ScanPhys next = scan_;
    UZFS_RETURN_IF_ERROR(fn(next));
    const bool runs = next.running();
    if (runs && !scan_.running()) {
      scan_pass_start_ = NowSeconds();
      scan_pass_examined_ = 0;
      scan_interrupt_.store(false);
    }
    if (!runs) {
      scan_interrupt_.store(true);
      // No window is issued until the scan runs again (and then a new
      // one): frees need not be kept meanwhile. (The slice that may be
      // issuing holds sync_mu_, under which every free happens.)
      scan_watch_frees_.store(false, std::memory_order_release);
      MutexLock f(&scan_freed_mu_);
      scan_freed_.clear();
    }
    scan_generation_++;
    if (next.paused() && !scan_.paused()) scan_pass_start_ = NowSeconds();  // "paused since"
    if (next.scanning() && next.func == ScanFunc::kScrub && next.start_time != scan_.start_time) {
      errlog_scrub_started_ = true;
      errlog_scrub_finished_ = false;
    }
    scan_ = next;
    scan_dirty_ = true;
    scan_cv_.SignalAll();
  }
  PostEvent(event);
  // Naming the open txg syncs it even when nothing else changed.
  return txg_->WaitSynced(txg_->open_txg());
}

Status Pool::StartScrub() {
  std::string event = "sysevent.fs.zfs.scrub_start";
  uint64_t synced = 0;
  {
    MutexLock l(&mu_);
    synced = ub_.txg;
  }
  const uint64_t allocated = alloc_ ? alloc_->allocated() : 0;
  return ChangeScan([&](ScanPhys& s) -> Status {
    if (s.scanning() && s.func == ScanFunc::kResilver) return Status::Busy("currently resilvering");
    if (s.running()) {
      return Status::Busy("currently scrubbing; use 'zpool scrub -s' to cancel current scrub");
    }
    if (s.paused()) {
      s.flags &= ~kScanFlagPaused;
      event = "sysevent.fs.zfs.scrub_resume";
      return Status::Ok();
    }
    s = ScanPhys{};
    s.func = ScanFunc::kScrub;
    s.state = ScanState::kScanning;
    s.max_txg = synced;
    s.cur_max_txg = synced;
    s.start_time = NowSeconds();
    s.to_examine = allocated;
    return Status::Ok();
  }, event);
}

Status Pool::PauseScrub() {
  return ChangeScan([](ScanPhys& s) -> Status {
    if (!s.scanning() || s.func != ScanFunc::kScrub) return Status::NotFound("there is no active scrub");
    s.flags |= kScanFlagPaused;
    return Status::Ok();
  }, "sysevent.fs.zfs.scrub_paused");
}

Status Pool::CancelScrub() {
  UZFS_RETURN_IF_ERROR(ChangeScan([](ScanPhys& s) -> Status {
    if (!s.scanning() || s.func != ScanFunc::kScrub) return Status::NotFound("there is no active scrub");
    s.state = ScanState::kCanceled;
    s.flags &= ~kScanFlagPaused;
    s.end_time = NowSeconds();
    return Status::Ok();
  }, "sysevent.fs.zfs.scrub_abort"));
  // A resilver that waited for the scrub starts now.
  uint64_t deferred = UINT64_MAX;
  {
    MutexLock l(&mu_);
    std::swap(deferred, resilver_deferred_from_);
  }
  return deferred == UINT64_MAX ? Status::Ok() : BeginResilver(deferred);
}

Pool::ScanProgress Pool::scan_progress() const {
  MutexLock k(&scan_mu_);
  ScanProgress p;
  p.phys = scan_;
  p.pass_start = scan_pass_start_;
  p.pass_examined = scan_pass_examined_;
  return p;
}

void Pool::WaitScan() {
  if (readonly_ || !txg_) return;  // nothing runs a scan on a read-only pool
  MutexLock k(&scan_mu_);
  while (!scan_stop_ && scan_.running()) scan_cv_.Wait(&scan_mu_);
}

void Pool::SetScanSlice(std::chrono::milliseconds slice) {
  MutexLock k(&scan_mu_);
  scan_slice_ = slice;
  scan_slice_max_ = slice;
}

void Pool::SetScanWindow(size_t max_blocks) {
  MutexLock k(&scan_mu_);
  scan_window_blocks_ = max_blocks;
}

void Pool::SetScanWindowHook(std::function<void()> hook) {
  MutexLock k(&scan_mu_);
  scan_window_hook_ = std::move(hook);
}

void Pool::StartScanThread() {
  MutexLock k(&scan_mu_);
  if (scan_thread_.joinable()) return;
  if (!scan_workers_) scan_workers_ = std::make_unique<ThreadPool>(kScanWorkers);
  scan_stop_ = false;
  scan_interrupt_.store(false);  // set by a StopScanThread before (a failed export)
  scan_thread_ = std::thread([this] {
    NameThisThread("scan");
    // The traversal's reads of metadata are background reads (`zpool
    // iostat`'s async queue, as OpenZFS issues them); the blocks it
    // verifies are read by the workers, in the scrub queue.
    const ScopedIoClass io_class(IoClass::kAsyncRead);
    ScanThreadMain();
  });
}

void Pool::StopScanThread() {
  {
    MutexLock k(&scan_mu_);
    scan_stop_ = true;
    scan_interrupt_.store(true);
    scan_cv_.SignalAll();
  }
  if (scan_thread_.joinable()) scan_thread_.join();
}

void Pool::ScanThreadMain() {
  auto last_checkpoint = Clock::now();
  auto last_autoreplace = Clock::now();
  auto last_free_txg = Clock::now();
  for (;;) {
    bool running = false;
    // Trees queued by destroys are freed a share per txg: while any are,
    // txgs keep coming (pool_async_destroy.cc).
    auto freeing = [this] { return AsyncFreesDue(); };
    {
      MutexLock k(&scan_mu_);
      // Idle, it still looks every few seconds for a new disk at a failed
      // one's path (autoreplace=on).
      while (!scan_stop_ && !scan_.running() && !freeing() && Clock::now() - last_autoreplace < kAutoreplaceEvery) {
        scan_cv_.WaitFor(&scan_mu_, std::chrono::milliseconds(500));
      }
      if (scan_stop_) return;
      running = scan_.running();
    }
    if (!running && scan_queue_) {
      // A paused or ended scan's window, and the frees kept for it.
      scan_queue_.reset();
      scan_watch_frees_.store(false, std::memory_order_release);
      MutexLock f(&scan_freed_mu_);
      scan_freed_.clear();
    }
    if (Clock::now() - last_autoreplace >= kAutoreplaceEvery) {
      last_autoreplace = Clock::now();
      AutoReplace();
      continue;
    }
    // A txg for the queued frees: back to back when nothing else runs
    // (a little apart, so the pool's lock is not held without a break),
    // once a second beside a scrub.
    if (freeing() && txg_ && (!running || Clock::now() - last_free_txg >= kFreeTxgBesideScan)) {
      last_free_txg = Clock::now();
      const bool synced = txg_->WaitSynced(txg_->open_txg()).ok();
      MutexLock k(&scan_mu_);
      // Suspended or closing: the retries are paced too.
      scan_cv_.WaitFor(&scan_mu_, synced ? kFreeTxgGap : std::chrono::milliseconds(200));
      if (!running) continue;
    }
    if (!running) continue;
    Result<bool> finished = ScanSlice();
    if (scan_window_sorted_) {
      scan_window_sorted_ = false;
      std::function<void()> hook;
      {
        MutexLock k(&scan_mu_);
        hook = scan_window_hook_;
      }
      if (hook) hook();
    }
    {
      MutexLock k(&scan_mu_);
      scan_cv_.SignalAll();
      if (!finished.ok()) {
        // The pool cannot sync (suspended) or is closing: try again later.
        scan_cv_.WaitFor(&scan_mu_, std::chrono::milliseconds(200));
        continue;
      }
    }
    if (*finished || Clock::now() - last_checkpoint >= kScanCheckpoint) {
      if (txg_) txg_->WaitSynced(txg_->open_txg()).IgnoreError();
      last_checkpoint = Clock::now();
    } else {
      // Lets the txg sync take sync_mu_ between slices.
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

void Pool::NoteScanFree(const Dva& dva) {
  if (!scan_watch_frees_.load(std::memory_order_acquire)) return;
  MutexLock f(&scan_freed_mu_);
  scan_freed_.emplace(dva.vdev, dva.offset);
}

// One slice: the walk of the current window (gathering its data blocks),
// or the issue of the window's blocks in offset order.
Result<bool> Pool::ScanSlice() {
  MutexLock sync_lock(&sync_mu_);
  BlockPtr mos_root;
  {
    MutexLock l(&mu_);
    if (closed_) return Status::Busy("pool is closing");
    if (!failed_.ok()) return failed_;
    mos_root = ub_.rootbp;
  }
  // The record as it is now that no txg can sync (a change made while this
  // thread waited for sync_mu_ is seen).
  ScanPhys st;
  std::chrono::milliseconds slice, slice_max;
  uint64_t generation = 0;
  size_t window_blocks = kScanQueueBlocks;
  {
    MutexLock k(&scan_mu_);
    st = scan_;
    slice = scan_slice_;
    slice_max = scan_slice_max_;
    generation = scan_generation_;
    if (scan_window_blocks_ != 0) window_blocks = std::min(scan_window_blocks_, kScanQueueBlocks);
  }
  if (!st.running()) {
    scan_queue_.reset();
    scan_watch_frees_.store(false, std::memory_order_release);
    return false;
  }
  if (!scan_queue_ || scan_queue_->generation != generation) {
    // A new window from the recorded place (a start, a resume, a pause or
    // a cancel in between drops what was gathered: it is walked again).
    scan_queue_.emplace();
    scan_queue_->walk = st.bookmark;
    scan_queue_->generation = generation;
    {
      MutexLock f(&scan_freed_mu_);
      scan_freed_.clear();
    }
    scan_watch_frees_.store(true, std::memory_order_release);
  }
  ScanQueue& q = *scan_queue_;
  if (q.blocks.empty() && !q.issuing) q.legacy = ScanLegacy();
  q.resilver = st.func == ScanFunc::kResilver;
  q.max_blocks = q.legacy ? std::min(window_blocks, kLegacyWindowBlocks) : window_blocks;
  const bool resilver = st.func == ScanFunc::kResilver;
  uint64_t epoch = 0;
  {
    MutexLock l(&mu_);
    epoch = resilver_epoch_;
  }
  // Each slice ends at the drain of its batches (a bubble in the reads):
  // past its minimum it goes on while no txg waits to sync.
  const auto start = Clock::now();
  const auto deadline = start + slice;
  const auto deadline_max = start + std::max(slice, slice_max);
  const std::function<bool()> stop = [&] {
    if (scan_interrupt_.load(std::memory_order_relaxed)) return true;
    const auto now = Clock::now();
    return now >= deadline_max || (now >= deadline && sync_waiting_.load(std::memory_order_relaxed) > 0);
  };
  const uint64_t leaf_repaired_before = LeafRepairedBytes(*root_);
  ScanTally tally;
  // Counts one scrubbed block (where it failed, in the error log).
  // (A std::function the batches' workers refer to until the slice ends.)
  const ScanAccount account = [this, &tally](const BlockPtr& bp, const DataErrorBookmark& where, Status s,
                                             const ScrubResult& r) {
    // A copy that could not be rewritten (its device refuses writes) is
    // the device's error, counted on it; the block itself was read whole.
    if (!s.ok() && s.code() == Code::kIoError && r.copies_unrepaired > 0) s = Status::Ok();
    if (!s.ok()) RecordDataError(where, s);
    MutexLock l(&tally.mu);
    tally.examined += Asize(bp);
    if (r.copies_repaired > 0) tally.repaired += static_cast<uint64_t>(r.copies_repaired) * bp.dva[0].asize;
    if (!s.ok()) tally.errors++;
  };
  std::optional<ScanBookmark> advance;
  if (!q.issuing) {
    GatherWindow(q, st, mos_root, stop, account, &tally);
    if (q.walk_done || q.blocks.size() >= q.max_blocks || ++q.gather_slices >= kScanWindowSlices) {
      // Sorted by where the first copy is: the batches read each leaf
      // front to back and their neighbouring columns merge.
      if (!q.legacy) std::sort(q.blocks.begin(), q.blocks.end(), [](const ScanQueuedBlock& a, const ScanQueuedBlock& b) {
        if (a.bp.dva[0].vdev != b.bp.dva[0].vdev) return a.bp.dva[0].vdev < b.bp.dva[0].vdev;
        return a.bp.dva[0].offset < b.bp.dva[0].offset;
      });
      q.issuing = true;
      scan_window_sorted_ = true;
    } else if (q.blocks.empty()) {
      // Only metadata so far, all scrubbed: the walk's place can be
      // recorded already.
      advance = q.walk;
    }
  } else {
    IssueWindow(q, stop, account, &tally);
  }
  tally.WaitBelow(0);
  // A window all issued: the record's place moves past it.
  bool finished = false;
  if (q.issuing && q.next == q.blocks.size()) {
    advance = q.walk;
    finished = q.walk_done;
    const ScanBookmark from = q.walk;
    scan_queue_.reset();
    if (!finished) {
      scan_queue_.emplace();
      scan_queue_->walk = from;
      scan_queue_->generation = generation;
    }
    {
      MutexLock f(&scan_freed_mu_);
      scan_freed_.clear();
    }
    scan_watch_frees_.store(!finished, std::memory_order_release);
  }
  uint64_t examined, errors, repaired;
  {
    MutexLock l(&tally.mu);
    examined = tally.examined;
    errors = tally.errors;
    // (zpool clear may have reset the counters meanwhile)
    const uint64_t leaf_repaired_after = LeafRepairedBytes(*root_);
    repaired = tally.repaired +
               (leaf_repaired_after >= leaf_repaired_before ? leaf_repaired_after - leaf_repaired_before : 0);
  }
  bool post_finish = false;
  const bool clean_resilver = finished && resilver && st.errors + errors == 0;
  if (clean_resilver) {
    // Every block was read whole and written to the stale leaves: they are
    // whole (a resilver with errors leaves them stale, and the replacing
    // vdevs in place, for another to finish).
    FinishResilver(epoch, generation);
  }
  {
    MutexLock k(&scan_mu_);
    scan_pass_examined_ += examined;
    // A pause or a cancel during the slice keeps its state; the progress
    // made counts either way.
    if (scan_generation_ == generation) {
      scan_.examined += examined;
      scan_.errors += errors;
      scan_.processed += repaired;
      UZFS_PROBE(scan_progress, ident_.name.c_str(), resilver ? "resilver" : "scrub", scan_.examined,
                 scan_.to_examine, scan_.processed);
      if (scan_.scanning()) {
        if (advance) scan_.bookmark = *advance;
        if (finished) {
          scan_.state = ScanState::kFinished;
          scan_.end_time = NowSeconds();
          scan_.bookmark = {};
          errlog_scrub_finished_ = !resilver;
          post_finish = true;
        }
      }
      scan_dirty_ = true;
    }
  }
  if (post_finish) PostEvent(resilver ? "sysevent.fs.zfs.resilver_finish" : "sysevent.fs.zfs.scrub_finish");
  if (post_finish && (!resilver || clean_resilver)) {
    // A resilver import found needed waited for this scrub, or for this
    // resilver to reach its end (one with errors leaves it waiting: its
    // own stale leaves need more than the waiting range).
    MutexLock l(&mu_);
    if (resilver_deferred_from_ != UINT64_MAX) {
      RestartResilverInSync(resilver_deferred_from_);
      resilver_deferred_from_ = UINT64_MAX;
    }
  }
  return finished;
}

// The walk from q.walk until `stop` or a full queue: indirect and dnode
// blocks are scrubbed here, before the walk reads what they point to (so it
// reads a good copy); data blocks join the queue.
void Pool::GatherWindow(ScanQueue& q, const ScanPhys& st, const BlockPtr& mos_root,
                        const std::function<bool()>& stop, const ScanAccount& account, ScanTally* tally) {
  const bool resilver = st.func == ScanFunc::kResilver;
  auto full_or_stop = [&] { return q.blocks.size() >= q.max_blocks || stop(); };
  std::optional<std::map<uint64_t, BlockPtr>> datasets;
  for (;;) {
    BlockPtr root = mos_root;
    if (q.walk.objset != 0) {
      if (!datasets) {
        auto d = SyncedDatasets(*zio_, mos_root);
        if (!d.ok()) {
          // The MOS's dnodes cannot be read: counted, and the scan ends
          // (it cannot know which datasets there are).
          RecordDataError(DataErrorBookmark{0, 0, 0, 0}, d.status());
          MutexLock l(&tally->mu);
          tally->errors++;
          q.walk_done = true;
          return;
        }
        datasets = std::move(*d);
      }
      // The dataset named, or the next one (it may be gone since).
      auto it = datasets->lower_bound(q.walk.objset);
      if (it == datasets->end()) {
        q.walk_done = true;
        return;
      }
      if (it->first != q.walk.objset) q.walk = {it->first, 0, 0, 0};
      root = it->second;
    }
    const uint64_t objset = q.walk.objset;
    ObjsetTraverseOptions o;
    o.from = {q.walk.object, q.walk.blkid};
    o.should_stop = full_or_stop;
    if (resilver) o.min_birth = st.min_txg;
    o.visit = [&](const TraversedBlock& b) {
      if (b.bp.birth > st.max_txg) return;  // written since the scan began
      if (resilver && b.bp.birth < st.min_txg) return;  // the objset block and accounting
      const DataErrorBookmark where{objset, b.object, b.level, b.blkid};
      if (b.level > 0 || b.object == 0) {
        ScrubResult r;
        Status s = zio_->Scrub(b.bp, &r);
        account(b.bp, where, std::move(s), r);
        return;
      }
      q.blocks.push_back(ScanQueuedBlock{b.bp, where});
    };
    auto out = TraverseObjset(*zio_, root, o);
    if (!out.ok()) {
      // The object set's own block cannot be read: counted (once: a root
      // the scan read was counted by its visit), and the walk goes on
      // with the next object set.
      if (root.birth > st.max_txg) {
        RecordDataError(DataErrorBookmark{objset, 0, -1, 0}, out.status());
        MutexLock l(&tally->mu);
        tally->errors++;
      }
    } else if (!out->done) {
      q.walk = {objset, out->next.object, 0, out->next.blkid};
      return;
    }
    q.walk = {objset + 1, 0, 0, 0};  // the next dataset (lower_bound above)
    if (full_or_stop()) return;
  }
}

// The window's next blocks in offset order, in batches of neighbours, on
// the workers, a few batches at a time, until `stop` (at least one batch).
// A block freed since it was gathered is skipped: its space may hold
// another block by now (and it no longer needs a scrub).
void Pool::IssueWindow(ScanQueue& q, const std::function<bool()>& stop, const ScanAccount& account,
                       ScanTally* tally) {
  do {
    auto batch = std::make_shared<std::vector<ScanQueuedBlock>>();
    uint64_t bytes = 0;
    {
      MutexLock f(&scan_freed_mu_);
      const size_t max_blocks = q.legacy ? 1 : kScanBatchBlocks;
      for (; q.next < q.blocks.size() && batch->size() < max_blocks && bytes < kScanBatchBytes; q.next++) {
        const BlockPtr& bp = q.blocks[q.next].bp;
        bool freed = false;
        for (const Dva& d : bp.dva)
          freed = freed || (d.asize != 0 && scan_freed_.count({d.vdev, d.offset}) != 0);
        if (freed) continue;
        bytes += Asize(bp);
        batch->push_back(q.blocks[q.next]);
      }
    }
    if (batch->empty()) continue;
    tally->WaitBelow((q.legacy ? kLegacyInflight : kScanBatchesInflight) - 1);
    {
      MutexLock l(&tally->mu);
      tally->inflight++;
    }
    const ReadMode mode = q.resilver ? ReadMode::kResilver : ReadMode::kScrub;
    scan_workers_->Submit([this, batch, &account, tally, mode] {
      const ScopedIoClass io_class(IoClass::kScrub);  // `zpool iostat -q/-w/-r`: the scrub queue
      std::vector<BlockPtr> bps;
      bps.reserve(batch->size());
      for (const ScanQueuedBlock& b : *batch) bps.push_back(b.bp);
      std::vector<Status> status(bps.size());
      std::vector<ScrubResult> results(bps.size());
      zio_->ScrubMany(bps, status, results, mode);
      for (size_t i = 0; i < bps.size(); i++) account(bps[i], (*batch)[i].where, std::move(status[i]), results[i]);
      MutexLock l(&tally->mu);
      tally->inflight--;
      tally->cv.SignalAll();
    });
  } while (q.next < q.blocks.size() && !stop());
}

}  // namespace uzfs
