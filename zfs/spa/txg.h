// TxgEngine: the transaction groups of a pool — open, quiescing, syncing —
// the sync thread, and the write throttle. Generic: it knows nothing about
// the DMU. The pool registers a TxgSyncer and the engine calls it, from its
// one sync thread, once per txg, in order (DESIGN.md section 4).
//
// Stages. At most one txg is in each stage:
//   open       accepts new transactions (Assign returns its number);
//   quiescing  closed; waits for the transactions already assigned to it
//              to Commit/Abort (no thread needed: the last one to finish
//              moves it on);
//   syncing    the syncer writes it (SyncTxg(txg) on the sync thread).
// The open txg closes (becoming quiescing, txg + 1 opening at once) only
// when the quiescing stage is empty, i.e. once the previous txg has left
// quiescing; a quiesced txg starts syncing when the previous sync returned.
// So Assign never waits for a txg to open, SyncTxg(N) runs while N + 1 is
// quiescing and N + 2 is open, and txgs sync strictly one by one, N, N + 1,
// ... from `first_txg` (the pool's last synced txg + 1).
//
// When the open txg closes (its "reason", counted in TxgStats):
//   - timeout:   `timeout` after its first transaction was assigned (an
//                open txg with no transaction never times out, so an idle
//                pool writes no uberblocks);
//   - dirty:     the bytes its transactions changed reach dirty_sync_pct %
//                of dirty_max, or its dirty bytes (the memory its records
//                hold) reach half of delay_min_pct % (never less than the
//                first figure), or a writer is blocked by the throttle at
//                dirty_max;
//   - requested: SyncNow(), WaitOpenSynced() or Shutdown() while it has a
//                transaction, or WaitSynced(txg) naming it (this one syncs
//                it even with no transaction: the caller asked for it).
//
// Transactions and dirty bytes. Assign(estimate) takes a hold on the open
// txg and adds `estimate` to its dirty bytes at once, so the throttle and
// the dirty trigger see work in flight. Tx::Commit(actual) replaces the
// estimate with the actual count; Tx::Commit(actual, changed) also says how
// many bytes the transaction changed, apart from the memory it made its
// txg hold: a 4 KiB write that dirties a 128 KiB record holds the record
// but changes 4 KiB, and a later write into the same record in the same
// txg holds nothing new and costs the sync nothing more. The throttle
// counts the memory; the dirty trigger counts the changed bytes, so
// scattered small writes share a txg that writes each record once, until
// the memory its records hold calls for a sync (an open txg and a syncing
// one at that size together stay below the throttle's delays). Changed
// bytes equal dirty bytes unless the caller says otherwise. Tx::Abort()
// drops the estimate (the caller changed
// nothing); a Tx destroyed while still active keeps its estimate (it is
// committed as is: the hold must go either way, and whatever the caller
// dirtied will be synced with the txg, so the estimate is the safe count).
// A txg's dirty bytes stay counted until its SyncTxg returns.
//
// Write throttle (Assign with TxgWait::kWait; never an error for being
// throttled). With D = dirty bytes of open + quiescing + syncing txgs:
//   D <= delay_min_pct % of dirty_max:  no delay;
//   between:  delay = delay_scale * (D - min) / (dirty_max - D), at most
//             max_delay; delayed callers are spaced at least `delay` apart
//             from each other (a shared wake-up schedule), so many writers
//             together get the rate one delayed writer would;
//   D >= dirty_max:  blocks (holding no txg) until a sync frees room.
// The caller sleeps before it holds a txg, so sleeping writers never keep a
// txg from quiescing.
//
// Errors. If SyncTxg fails the engine is failed, like a suspended pool: the
// txg stays unsynced, nothing more is synced, Assign/SyncNow/Throttle
// return that error, and waiters (WaitSynced, throttled writers) wake and
// return it. There is no resume: the pool must be closed and reopened.
//
// Threading contract:
//   - Every public method may be called from any thread, except that no
//     method that waits (Assign with kWait, Throttle, WaitSynced,
//     WaitOpenSynced, Shutdown) may be called from inside SyncTxg, nor by a
//     thread holding an active Tx (the txg it holds could never sync).
//   - Callers that hold their own locks which SyncTxg might need assign
//     with kNoWait: on Busy they drop those locks, call Throttle(), take
//     them again and assign with kNoThrottle (ZFS's TXG_NOWAIT pattern).
//   - SyncTxg runs on the engine's one sync thread with no engine lock held;
//     it may call the non-waiting methods (stats(), open_txg(), Assign with
//     kNoThrottle for a later txg, ...).
//   - Every Tx must be finished (or destroyed) before the engine is
//     destroyed. Shutdown() (also run by the destructor) stops new
//     assignments, waits for transactions already assigned, syncs them
//     (unless the engine has failed) and joins the sync thread.
//   - One internal Mutex (mu_) guards all state; join_mu_ only serializes
//     joining the thread and is never held with mu_.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "zfs/util/mutex.h"
#include "zfs/util/status.h"
#include "zfs/util/txg_number.h"

namespace uzfs {

// What the pool does when a txg syncs: write its dirty data copy-on-write,
// flush, write the uberblocks, flush (DESIGN.md section 4). Whatever must
// wait for the txg to be durable (deferred frees, ...) is done at the end
// of SyncTxg: the engine reports txg N synced only once SyncTxg(N) returns
// OK. SyncTxg can be called for a txg with no transaction in it (when
// someone asked for that txg by number).
class TxgSyncer {
 public:
  virtual ~TxgSyncer() = default;
  virtual Status SyncTxg(Txg txg) = 0;
  // For the txg probes (zfs/util/probes.h): the pool's name, and how many
  // passes the last SyncTxg took.
  virtual std::string ProbeName() const { return {}; }
  virtual uint32_t LastSyncPasses() const { return 0; }
};

struct TxgOptions {
  // The open txg closes this long after its first transaction.
  std::chrono::nanoseconds timeout = std::chrono::seconds(5);
  // Dirty bytes (open + quiescing + syncing) at which writers block.
  uint64_t dirty_max = uint64_t{256} << 20;
  // The open txg closes when the bytes its transactions changed reach this
  // % of dirty_max (or its dirty bytes half of delay_min_pct %: see top).
  uint32_t dirty_sync_pct = 20;
  // Writers are delayed above this % of dirty_max.
  uint32_t delay_min_pct = 60;
  // The delay curve's scale: the delay halfway from min to dirty_max.
  std::chrono::nanoseconds delay_scale = std::chrono::microseconds(500);
  // The longest delay of one Assign (not counting blocking at dirty_max).
  std::chrono::nanoseconds max_delay = std::chrono::milliseconds(100);
};

// The throttle's delay for D = `dirty` outstanding bytes (0 at or below
// delay_min_pct % of dirty_max, max_delay at or above dirty_max). Pure;
// increasing in `dirty`.
std::chrono::nanoseconds TxgThrottleDelay(uint64_t dirty, const TxgOptions& o);

enum class TxgWait {
  kWait,        // throttle (delay/block) as needed; never fails for that
  kNoWait,      // never sleeps: Busy if the throttle would delay or block
  kNoThrottle,  // never sleeps, never throttled (after Throttle(), or sync
                // context work that must not wait)
};

enum class TxgCloseReason : uint8_t { kNone, kTimeout, kDirty, kRequested };

struct TxgStats {
  uint64_t open_txg = 0;
  uint64_t quiescing_txg = 0;  // 0: none
  uint64_t syncing_txg = 0;    // 0: none
  uint64_t synced_txg = 0;     // last txg whose SyncTxg returned OK
  uint64_t txgs_synced = 0;
  uint64_t closed_by_timeout = 0;  // among txgs synced
  uint64_t closed_by_dirty = 0;
  uint64_t closed_by_request = 0;
  uint64_t tx_assigned = 0;
  uint64_t dirty_bytes = 0;       // open + quiescing + syncing
  uint64_t open_dirty_bytes = 0;
  uint64_t open_changed_bytes = 0;  // what the open txg's dirty trigger counts
  uint64_t delayed_count = 0;     // Assigns/Throttles that slept a delay
  uint64_t blocked_count = 0;     // ... that blocked at dirty_max
  std::chrono::nanoseconds delay_time{0};  // total slept (delays + blocks)
};

class TxgEngine;

// A transaction: a hold on one txg. Move-only. Finish it with Commit or
// Abort; destroying an active Tx commits it with its estimate (see top).
class Tx {
 public:
  Tx() = default;
  Tx(Tx&& o) noexcept;
  Tx& operator=(Tx&& o) noexcept;
  Tx(const Tx&) = delete;
  Tx& operator=(const Tx&) = delete;
  ~Tx();

  Txg txg() const { return Txg{txg_}; }
  bool active() const { return engine_ != nullptr; }
  // The txg's dirty bytes count `actual_dirty_bytes` for this transaction,
  // all of them changed bytes.
  void Commit(uint64_t actual_dirty_bytes);
  // As above for the throttle (the memory the transaction's dirty records
  // newly hold); the dirty trigger counts `changed_bytes`, the bytes it
  // changed, instead (see top).
  void Commit(uint64_t actual_dirty_bytes, uint64_t changed_bytes);
  // Commit with the estimate given to Assign.
  void Commit();
  // The caller dirtied nothing in this txg: its estimate is dropped.
  void Abort();

 private:
  friend class TxgEngine;
  Tx(TxgEngine* e, uint64_t txg, uint64_t estimate) : engine_(e), txg_(txg), estimate_(estimate) {}
  void Finish(uint64_t dirty, uint64_t changed);
  TxgEngine* engine_ = nullptr;
  uint64_t txg_ = 0;
  uint64_t estimate_ = 0;
};

class TxgEngine {
 public:
  // Starts the sync thread. first_txg >= 1 is the first txg to open (the
  // pool's last synced txg + 1). InvalidArgument for impossible options.
  static Result<std::unique_ptr<TxgEngine>> Create(TxgSyncer& syncer, Txg first_txg,
                                                   const TxgOptions& options = {});
  ~TxgEngine();
  TxgEngine(const TxgEngine&) = delete;
  TxgEngine& operator=(const TxgEngine&) = delete;

  // A hold on the open txg, `bytes_estimate` dirty bytes counted for it.
  // Errors: the failure status once the engine has failed; Busy after
  // Shutdown began, or (kNoWait only) when the throttle would sleep.
  Result<Tx> Assign(uint64_t bytes_estimate, TxgWait mode = TxgWait::kWait) UZFS_EXCLUDES(mu_);
  // Sleeps what Assign(kWait) would, without assigning (after a kNoWait
  // Busy, with the caller's locks dropped). Failure/shutdown status.
  Status Throttle() UZFS_EXCLUDES(mu_);

  // Closes the open txg if it has a transaction; returns the txg that then
  // holds everything assigned so far (open_txg - 1 when it had none).
  // Does not wait.
  Result<Txg> SyncNow() UZFS_EXCLUDES(mu_);
  // Returns once SyncTxg(txg) has returned OK (at once for txg already
  // synced). Naming the open txg closes it, even if empty. InvalidArgument
  // for a txg not open yet; the failure status if the engine failed before
  // txg synced; Busy if the engine shut down without syncing it.
  Status WaitSynced(Txg txg) UZFS_EXCLUDES(mu_);
  // Waits until everything assigned so far is synced (fsync without a
  // log, export): SyncNow() then WaitSynced of what it returned.
  Status WaitOpenSynced() UZFS_EXCLUDES(mu_);

  // Stops new assignments (Busy), waits for assigned transactions, syncs
  // them unless the engine has failed, joins the sync thread. Returns the
  // failure status if the engine failed, else OK. Idempotent.
  Status Shutdown() UZFS_EXCLUDES(mu_, join_mu_);

  Txg open_txg() const UZFS_EXCLUDES(mu_);
  Txg synced_txg() const UZFS_EXCLUDES(mu_);
  TxgStats stats() const UZFS_EXCLUDES(mu_);
  const TxgOptions& options() const { return opts_; }

 private:
  friend class Tx;
  using Clock = std::chrono::steady_clock;

  struct TxgState {
    uint64_t txg = 0;
    uint64_t holds = 0;     // active Tx in this txg
    uint64_t tx_count = 0;  // Tx ever assigned to it
    uint64_t dirty = 0;
    uint64_t changed = 0;  // what dirty_sync_bytes_ is compared with
    Clock::time_point first_assign{};
    TxgCloseReason reason = TxgCloseReason::kNone;
  };
  static constexpr int kSlots = 4;  // open, quiescing, syncing + 1 spare

  TxgEngine(TxgSyncer& syncer, uint64_t first_txg, const TxgOptions& options);

  TxgState& Slot(uint64_t txg) UZFS_REQUIRES(mu_) { return slots_[txg % kSlots]; }
  const TxgState& Slot(uint64_t txg) const UZFS_REQUIRES(mu_) { return slots_[txg % kSlots]; }
  // Error Assign/Throttle/SyncNow must return now, or OK.
  Status RefuseLocked() const UZFS_REQUIRES(mu_);
  Status ThrottleLocked() UZFS_REQUIRES(mu_);
  void RequestClose(TxgCloseReason why) UZFS_REQUIRES(mu_);
  // Moves txgs along the stages as far as the state allows.
  void Advance() UZFS_REQUIRES(mu_);
  void Release(uint64_t txg, uint64_t estimate, uint64_t dirty, uint64_t changed) UZFS_EXCLUDES(mu_);
  // Whether the open txg `s` has reached a dirty trigger.
  bool DirtyTriggerLocked(const TxgState& s) const UZFS_REQUIRES(mu_);
  Status WaitSyncedLocked(uint64_t txg) UZFS_REQUIRES(mu_);
  void SyncLoop() UZFS_EXCLUDES(mu_);
  // The txg to sync next, or 0 when the thread should exit.
  uint64_t WaitForWorkLocked() UZFS_REQUIRES(mu_);
  void FinishSyncLocked(uint64_t txg, Status st) UZFS_REQUIRES(mu_);

  TxgSyncer& syncer_;
  const TxgOptions opts_;
  const std::string probe_name_;  // the pool's, for the probes
  const uint64_t dirty_sync_bytes_;   // changed bytes that close the open txg
  const uint64_t memory_sync_bytes_;  // dirty bytes that close it
  const uint64_t delay_min_bytes_;

  mutable Mutex mu_;
  CondVar sync_cv_;    // the sync thread: work or timer changed
  CondVar synced_cv_;  // WaitSynced: a txg synced, failure, thread exit
  CondVar room_cv_;    // writers blocked at dirty_max: dirty dropped
  CondVar stop_cv_;    // delayed writers: failure or shutdown
  TxgState slots_[kSlots] UZFS_GUARDED_BY(mu_);
  uint64_t open_txg_ UZFS_GUARDED_BY(mu_);
  uint64_t quiescing_txg_ UZFS_GUARDED_BY(mu_) = 0;
  uint64_t syncing_txg_ UZFS_GUARDED_BY(mu_) = 0;
  uint64_t synced_txg_ UZFS_GUARDED_BY(mu_);
  uint64_t dirty_total_ UZFS_GUARDED_BY(mu_) = 0;
  uint64_t room_waiters_ UZFS_GUARDED_BY(mu_) = 0;
  Clock::time_point last_wakeup_ UZFS_GUARDED_BY(mu_){};
  Status failure_ UZFS_GUARDED_BY(mu_);
  bool stopping_ UZFS_GUARDED_BY(mu_) = false;
  bool thread_exited_ UZFS_GUARDED_BY(mu_) = false;
  TxgStats stats_ UZFS_GUARDED_BY(mu_);

  Mutex join_mu_;
  std::thread thread_ UZFS_GUARDED_BY(join_mu_);
};

}  // namespace uzfs
