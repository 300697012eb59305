// TxgEngine: see txg.h for the stages, the throttle and the threading
// contract. All state lives under mu_; the sync thread drops mu_ only
// around SyncTxg.
#include "zfs/spa/txg.h"

#include <algorithm>
#include <string>
#include <utility>

#include "zfs/util/probes.h"
#include "zfs/util/thread_name.h"

namespace uzfs {

using std::chrono::nanoseconds;

namespace {
// pct % of v without overflow.
uint64_t Pct(uint64_t v, uint32_t pct) { return v / 100 * pct + v % 100 * pct / 100; }
}  // namespace

nanoseconds TxgThrottleDelay(uint64_t dirty, const TxgOptions& o) {
  const uint64_t min = Pct(o.dirty_max, o.delay_min_pct);
  if (dirty <= min) return nanoseconds(0);
  if (dirty >= o.dirty_max) return o.max_delay;
  // scale * (D - min) / (max - D): grows smoothly from 0, equals the scale
  // halfway from min to max, and goes to infinity as D reaches max.
  const double d = static_cast<double>(o.delay_scale.count()) * static_cast<double>(dirty - min) /
                   static_cast<double>(o.dirty_max - dirty);
  if (d >= static_cast<double>(o.max_delay.count())) return o.max_delay;
  return nanoseconds(static_cast<int64_t>(d));
}

// ---- Tx ----

Tx::Tx(Tx&& o) noexcept
    : engine_(std::exchange(o.engine_, nullptr)), txg_(o.txg_), estimate_(o.estimate_) {}

Tx& Tx::operator=(Tx&& o) noexcept {
  if (this != &o) {
    if (engine_ != nullptr) Finish(estimate_, estimate_);
    engine_ = std::exchange(o.engine_, nullptr);
    txg_ = o.txg_;
    estimate_ = o.estimate_;
  }
  return *this;
}

Tx::~Tx() {
  if (engine_ != nullptr) Finish(estimate_, estimate_);
}

void Tx::Commit(uint64_t actual_dirty_bytes) {
  if (engine_ != nullptr) Finish(actual_dirty_bytes, actual_dirty_bytes);
}
void Tx::Commit(uint64_t actual_dirty_bytes, uint64_t changed_bytes) {
  if (engine_ != nullptr) Finish(actual_dirty_bytes, changed_bytes);
}
void Tx::Commit() {
  if (engine_ != nullptr) Finish(estimate_, estimate_);
}
void Tx::Abort() {
  if (engine_ != nullptr) Finish(0, 0);
}

void Tx::Finish(uint64_t dirty, uint64_t changed) {
  TxgEngine* e = std::exchange(engine_, nullptr);
  e->Release(txg_, estimate_, dirty, changed);
}

// ---- TxgEngine ----

TxgEngine::TxgEngine(TxgSyncer& syncer, uint64_t first_txg, const TxgOptions& options)
    : syncer_(syncer),
      opts_(options),
      probe_name_(syncer.ProbeName()),
      dirty_sync_bytes_(std::max<uint64_t>(1, Pct(options.dirty_max, options.dirty_sync_pct))),
      memory_sync_bytes_(std::max(dirty_sync_bytes_, Pct(options.dirty_max, options.delay_min_pct / 2))),
      delay_min_bytes_(Pct(options.dirty_max, options.delay_min_pct)),
      open_txg_(first_txg),
      synced_txg_(first_txg - 1) {
  MutexLock l(&mu_);
  Slot(first_txg) = TxgState{.txg = first_txg};
  UZFS_PROBE(txg_open, probe_name_.c_str(), first_txg);
}

Result<std::unique_ptr<TxgEngine>> TxgEngine::Create(TxgSyncer& syncer, Txg first,
                                                     const TxgOptions& o) {
  const uint64_t first_txg = first.number();
  if (first_txg == 0 || first_txg == UINT64_MAX)
    return Status::InvalidArgument("txg engine: first txg must be >= 1");
  if (o.timeout <= nanoseconds(0) || o.timeout > std::chrono::hours(24))
    return Status::InvalidArgument("txg engine: timeout must be in (0, 24h]");
  if (o.dirty_max == 0) return Status::InvalidArgument("txg engine: dirty_max must be > 0");
  if (o.dirty_sync_pct == 0 || o.dirty_sync_pct > 100)
    return Status::InvalidArgument("txg engine: dirty_sync_pct must be in 1..100");
  if (o.delay_min_pct >= 100) return Status::InvalidArgument("txg engine: delay_min_pct must be < 100");
  if (o.delay_scale < nanoseconds(0) || o.max_delay < nanoseconds(0) ||
      o.max_delay > std::chrono::seconds(10))
    return Status::InvalidArgument("txg engine: delays must be >= 0 and max_delay <= 10 s");
  std::unique_ptr<TxgEngine> e(new TxgEngine(syncer, first_txg, o));
  {
    MutexLock l(&e->join_mu_);
    TxgEngine* raw = e.get();
    e->thread_ = std::thread([raw] {
      NameThisThread("txg_sync");
      raw->SyncLoop();
    });
  }
  return e;
}

TxgEngine::~TxgEngine() { Shutdown().IgnoreError(); }

Status TxgEngine::RefuseLocked() const {
  if (!failure_.ok()) return failure_;
  if (stopping_) return Status::Busy("txg engine is shut down");
  return Status::Ok();
}

void TxgEngine::RequestClose(TxgCloseReason why) {
  TxgState& s = Slot(open_txg_);
  if (s.reason == TxgCloseReason::kNone) s.reason = why;
}

void TxgEngine::Advance() {
  if (!failure_.ok()) return;
  for (;;) {
    bool moved = false;
    if (quiescing_txg_ != 0 && syncing_txg_ == 0 && Slot(quiescing_txg_).holds == 0) {
      syncing_txg_ = std::exchange(quiescing_txg_, 0);
      sync_cv_.Signal();
      moved = true;
    }
    if (quiescing_txg_ == 0 && Slot(open_txg_).reason != TxgCloseReason::kNone) {
      quiescing_txg_ = open_txg_++;
      Slot(open_txg_) = TxgState{.txg = open_txg_};
      UZFS_PROBE(txg_quiesce, probe_name_.c_str(), quiescing_txg_, Slot(quiescing_txg_).dirty);
      UZFS_PROBE(txg_open, probe_name_.c_str(), open_txg_);
      moved = true;
    }
    if (!moved) return;
  }
}

Status TxgEngine::ThrottleLocked() {
  bool delayed = false;
  for (;;) {
    UZFS_RETURN_IF_ERROR(RefuseLocked());
    if (dirty_total_ >= opts_.dirty_max) {
      // Full: make sure the open txg's dirty data is on its way, then wait
      // for a sync to free room. No txg is held while waiting.
      if (Slot(open_txg_).tx_count > 0) RequestClose(TxgCloseReason::kDirty);
      Advance();
      stats_.blocked_count++;
      const Clock::time_point start = Clock::now();
      room_waiters_++;
      while (dirty_total_ >= opts_.dirty_max && failure_.ok() && !stopping_) room_cv_.Wait(&mu_);
      room_waiters_--;
      const nanoseconds blocked = Clock::now() - start;
      stats_.delay_time += blocked;
      UZFS_PROBE(throttle_delay, probe_name_.c_str(), static_cast<uint64_t>(blocked.count()), dirty_total_);
      continue;
    }
    if (delayed) return Status::Ok();  // one delay per call; only dirty_max re-blocks
    const nanoseconds delay = TxgThrottleDelay(dirty_total_, opts_);
    if (delay <= nanoseconds(0)) return Status::Ok();
    // Delayed callers share one schedule: each wakes at least `delay`
    // after the previous one's wake-up, and never more than max_delay
    // from now.
    const Clock::time_point now = Clock::now();
    Clock::time_point wakeup = std::max(now, last_wakeup_) + delay;
    wakeup = std::min(wakeup, now + opts_.max_delay);
    last_wakeup_ = wakeup;
    stats_.delayed_count++;
    for (Clock::time_point t = now; t < wakeup && failure_.ok() && !stopping_; t = Clock::now())
      stop_cv_.WaitFor(&mu_, wakeup - t);
    const nanoseconds held = Clock::now() - now;
    stats_.delay_time += held;
    UZFS_PROBE(throttle_delay, probe_name_.c_str(), static_cast<uint64_t>(held.count()), dirty_total_);
    delayed = true;
  }
}

Result<Tx> TxgEngine::Assign(uint64_t bytes_estimate, TxgWait mode) {
  MutexLock l(&mu_);
  if (mode == TxgWait::kWait) {
    UZFS_RETURN_IF_ERROR(ThrottleLocked());
  } else {
    UZFS_RETURN_IF_ERROR(RefuseLocked());
    if (mode == TxgWait::kNoWait && dirty_total_ > delay_min_bytes_)
      return Status::Busy("txg engine: write throttle would wait");
  }
  TxgState& s = Slot(open_txg_);
  s.holds++;
  if (s.tx_count++ == 0) {
    s.first_assign = Clock::now();
    sync_cv_.Signal();  // the timer starts now
  }
  s.dirty += bytes_estimate;
  s.changed += bytes_estimate;
  dirty_total_ += bytes_estimate;
  stats_.tx_assigned++;
  if (DirtyTriggerLocked(s)) {
    RequestClose(TxgCloseReason::kDirty);
    Advance();
  }
  return Tx(this, s.txg, bytes_estimate);
}

Status TxgEngine::Throttle() {
  MutexLock l(&mu_);
  return ThrottleLocked();
}

bool TxgEngine::DirtyTriggerLocked(const TxgState& s) const {
  return s.changed >= dirty_sync_bytes_ || s.dirty >= memory_sync_bytes_;
}

void TxgEngine::Release(uint64_t txg, uint64_t estimate, uint64_t dirty, uint64_t changed) {
  MutexLock l(&mu_);
  TxgState& s = Slot(txg);
  s.holds--;
  s.dirty = s.dirty - estimate + dirty;
  s.changed = s.changed - estimate + changed;
  dirty_total_ = dirty_total_ - estimate + dirty;
  if (dirty < estimate && room_waiters_ > 0) room_cv_.SignalAll();
  if (txg == open_txg_ && DirtyTriggerLocked(s)) RequestClose(TxgCloseReason::kDirty);
  Advance();
}

Result<Txg> TxgEngine::SyncNow() {
  MutexLock l(&mu_);
  UZFS_RETURN_IF_ERROR(RefuseLocked());
  if (Slot(open_txg_).tx_count == 0) return Txg{open_txg_ - 1};
  const uint64_t txg = open_txg_;
  RequestClose(TxgCloseReason::kRequested);
  Advance();
  return Txg{txg};
}

Status TxgEngine::WaitSyncedLocked(uint64_t txg) {
  if (txg > open_txg_)
    return Status::InvalidArgument("txg engine: txg " + std::to_string(txg) + " is not open yet");
  if (txg <= synced_txg_) return Status::Ok();
  if (txg == open_txg_ && failure_.ok() && Slot(txg).reason == TxgCloseReason::kNone) {
    // Once shutdown began, an open txg nobody asked to close never syncs.
    if (stopping_) return Status::Busy("txg engine shut down before txg " + std::to_string(txg) + " synced");
    RequestClose(TxgCloseReason::kRequested);
    Advance();
  }
  while (synced_txg_ < txg) {
    if (!failure_.ok()) return failure_;
    if (thread_exited_)
      return Status::Busy("txg engine shut down before txg " + std::to_string(txg) + " synced");
    synced_cv_.Wait(&mu_);
  }
  return Status::Ok();
}

Status TxgEngine::WaitSynced(Txg txg) {
  MutexLock l(&mu_);
  return WaitSyncedLocked(txg.number());
}

Status TxgEngine::WaitOpenSynced() {
  MutexLock l(&mu_);
  return WaitSyncedLocked(Slot(open_txg_).tx_count > 0 ? open_txg_ : open_txg_ - 1);
}

Status TxgEngine::Shutdown() {
  {
    MutexLock l(&mu_);
    if (!stopping_) {
      stopping_ = true;
      // Everything assigned so far is synced before the thread exits.
      if (Slot(open_txg_).tx_count > 0) RequestClose(TxgCloseReason::kRequested);
      Advance();
      sync_cv_.Signal();
      stop_cv_.SignalAll();
      room_cv_.SignalAll();
      synced_cv_.SignalAll();
    }
  }
  {
    MutexLock l(&join_mu_);
    if (thread_.joinable()) thread_.join();
  }
  MutexLock l(&mu_);
  return failure_;
}

uint64_t TxgEngine::WaitForWorkLocked() {
  for (;;) {
    if (!failure_.ok()) return 0;
    if (syncing_txg_ != 0) return syncing_txg_;
    const TxgState& open = Slot(open_txg_);
    if (stopping_ && quiescing_txg_ == 0 && open.reason == TxgCloseReason::kNone) return 0;
    if (open.tx_count > 0 && open.reason == TxgCloseReason::kNone) {
      const Clock::time_point deadline = open.first_assign + opts_.timeout;
      const Clock::time_point now = Clock::now();
      if (now >= deadline) {
        RequestClose(TxgCloseReason::kTimeout);
        Advance();
        continue;
      }
      sync_cv_.WaitFor(&mu_, deadline - now);
    } else {
      sync_cv_.Wait(&mu_);
    }
  }
}

void TxgEngine::FinishSyncLocked(uint64_t txg, Status st) {
  if (!st.ok()) {
    failure_ = st.WithContext("txg " + std::to_string(txg) + " sync failed");
    stop_cv_.SignalAll();
    room_cv_.SignalAll();
    synced_cv_.SignalAll();
    return;
  }
  TxgState& s = Slot(txg);
  synced_txg_ = txg;
  syncing_txg_ = 0;
  dirty_total_ -= s.dirty;
  stats_.txgs_synced++;
  switch (s.reason) {
    case TxgCloseReason::kTimeout: stats_.closed_by_timeout++; break;
    case TxgCloseReason::kDirty: stats_.closed_by_dirty++; break;
    default: stats_.closed_by_request++; break;
  }
  synced_cv_.SignalAll();
  if (room_waiters_ > 0) room_cv_.SignalAll();
  Advance();
}

void TxgEngine::SyncLoop() {
  for (;;) {
    uint64_t txg, dirty;
    {
      MutexLock l(&mu_);
      txg = WaitForWorkLocked();
      if (txg == 0) {
        thread_exited_ = true;
        synced_cv_.SignalAll();
        room_cv_.SignalAll();
        return;
      }
      dirty = Slot(txg).dirty;
    }
    UZFS_PROBE(txg_sync_start, probe_name_.c_str(), txg, dirty);
    const uint64_t t0 = UZFS_PROBE_ENABLED(txg_sync_done) ? probes::NowNs() : 0;
    Status st = syncer_.SyncTxg(Txg{txg});
    UZFS_PROBE(txg_sync_done, probe_name_.c_str(), txg, probes::Since(t0), dirty, syncer_.LastSyncPasses(),
               ErrnoOf(st));
    MutexLock l(&mu_);
    FinishSyncLocked(txg, std::move(st));
  }
}

Txg TxgEngine::open_txg() const {
  MutexLock l(&mu_);
  return Txg{open_txg_};
}

Txg TxgEngine::synced_txg() const {
  MutexLock l(&mu_);
  return Txg{synced_txg_};
}

TxgStats TxgEngine::stats() const {
  MutexLock l(&mu_);
  TxgStats s = stats_;
  s.open_txg = open_txg_;
  s.quiescing_txg = quiescing_txg_;
  s.syncing_txg = syncing_txg_;
  s.synced_txg = synced_txg_;
  s.dirty_bytes = dirty_total_;
  s.open_dirty_bytes = Slot(open_txg_).dirty;
  s.open_changed_bytes = Slot(open_txg_).changed;
  return s;
}

}  // namespace uzfs
