// TxgEngine: stages and ordering, sync triggers (request, dirty, timeout),
// the write throttle, failure propagation, shutdown, and many writers
// against a syncer that checks "txgs arrive one by one, none with a
// transaction still open". Assertions are about order and counts; the only
// times are short engine timeouts and generous upper bounds on waits.
#include "zfs/spa/txg.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

using namespace std::chrono_literals;

constexpr auto kLongWait = 20s;  // upper bound for anything that must happen

// A syncer that records txgs, checks their order and that the test's own
// count of open transactions in the txg is zero, and can be held at a gate
// or told to fail.
class TestSyncer : public TxgSyncer {
 public:
  static constexpr int kRing = 64;

  explicit TestSyncer(uint64_t first_txg) : next_(first_txg) {}

  Status SyncTxg(Txg tx_group) override {
    const uint64_t txg = tx_group.number();
    std::unique_lock l(mu_);
    entered_.push_back(txg);
    cv_.notify_all();
    if (txg != next_) violations_++;
    next_ = txg + 1;
    if (open_[txg % kRing].load() != 0) violations_++;
    cv_.wait(l, [&] { return !gate_closed_; });
    if (hook_) {
      l.unlock();
      hook_(txg);
      l.lock();
    }
    if (txg == fail_at_) return Status::IoError("disk gone");
    synced_.push_back(txg);
    cv_.notify_all();
    return Status::Ok();
  }

  // The test brackets each transaction with Begin/End inside its hold.
  void Begin(Txg txg) { open_[txg.number() % kRing]++; }
  void End(Txg txg) { open_[txg.number() % kRing]--; }

  void CloseGate() { std::lock_guard l(mu_); gate_closed_ = true; }
  void OpenGate() { std::lock_guard l(mu_); gate_closed_ = false; cv_.notify_all(); }
  void FailAt(uint64_t txg) { std::lock_guard l(mu_); fail_at_ = txg; }
  void SetHook(std::function<void(uint64_t)> h) { std::lock_guard l(mu_); hook_ = std::move(h); }

  bool WaitEntered(size_t n) {
    std::unique_lock l(mu_);
    return cv_.wait_for(l, kLongWait, [&] { return entered_.size() >= n; });
  }
  bool WaitSynced(size_t n) {
    std::unique_lock l(mu_);
    return cv_.wait_for(l, kLongWait, [&] { return synced_.size() >= n; });
  }
  std::vector<uint64_t> synced() { std::lock_guard l(mu_); return synced_; }
  std::vector<uint64_t> entered() { std::lock_guard l(mu_); return entered_; }
  int violations() { std::lock_guard l(mu_); return violations_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t next_;
  std::atomic<int> open_[kRing] = {};
  bool gate_closed_ = false;
  uint64_t fail_at_ = 0;
  std::function<void(uint64_t)> hook_;
  std::vector<uint64_t> entered_, synced_;
  int violations_ = 0;
};

TxgOptions NoTimerOptions() {
  TxgOptions o;
  o.timeout = 1h;  // syncs in these tests come from requests or dirty bytes
  return o;
}

std::unique_ptr<TxgEngine> MakeEngine(TestSyncer& s, uint64_t first, const TxgOptions& o) {
  auto r = TxgEngine::Create(s, Txg{first}, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString(true);
  return r.ok() ? std::move(r).value() : nullptr;
}

// Polls `pred` (stats are not waitable) until true or kLongWait passes.
template <typename Pred>
bool Eventually(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + kLongWait;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(200us);
  }
  return true;
}

TEST(TxgThrottleDelay, ZeroBelowMinThenGrowsSmoothlyToTheCap) {
  TxgOptions o;
  o.dirty_max = 1000000;
  o.delay_min_pct = 60;
  o.delay_scale = 500us;
  o.max_delay = 100ms;
  EXPECT_EQ(TxgThrottleDelay(0, o).count(), 0);
  EXPECT_EQ(TxgThrottleDelay(600000, o).count(), 0);
  EXPECT_GT(TxgThrottleDelay(600001, o).count(), 0);
  // Halfway from min to max the delay equals the scale.
  EXPECT_EQ(TxgThrottleDelay(800000, o), std::chrono::nanoseconds(500us));
  std::chrono::nanoseconds prev(0);
  for (uint64_t d = 600000; d <= 1000000; d += 1000) {
    const auto cur = TxgThrottleDelay(d, o);
    EXPECT_GE(cur, prev) << d;
    EXPECT_LE(cur, o.max_delay) << d;
    prev = cur;
  }
  EXPECT_EQ(TxgThrottleDelay(999999, o), o.max_delay);
  EXPECT_EQ(TxgThrottleDelay(1000000, o), o.max_delay);
  EXPECT_EQ(TxgThrottleDelay(UINT64_MAX, o), o.max_delay);
  o.dirty_max = UINT64_MAX;  // no overflow in the percentages
  EXPECT_EQ(TxgThrottleDelay(UINT64_MAX / 2, o).count(), 0);
}

TEST(TxgEngine, CreateRejectsImpossibleOptions) {
  TestSyncer s(1);
  EXPECT_FALSE(TxgEngine::Create(s, 0).ok());
  TxgOptions o;
  o.dirty_max = 0;
  EXPECT_FALSE(TxgEngine::Create(s, 1, o).ok());
  o = {};
  o.dirty_sync_pct = 0;
  EXPECT_FALSE(TxgEngine::Create(s, 1, o).ok());
  o = {};
  o.delay_min_pct = 100;
  EXPECT_FALSE(TxgEngine::Create(s, 1, o).ok());
  o = {};
  o.timeout = 0s;
  EXPECT_FALSE(TxgEngine::Create(s, 1, o).ok());
  o = {};
  o.max_delay = -1ms;
  EXPECT_EQ(TxgEngine::Create(s, 1, o).status().code(), Code::kInvalidArgument);
}

TEST(TxgEngine, IdleEngineSyncsNothingAndWaitOpenSyncedReturns) {
  TestSyncer s(7);
  auto e = MakeEngine(s, 7, NoTimerOptions());
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->open_txg().number(), 7u);
  EXPECT_EQ(e->synced_txg().number(), 6u);
  EXPECT_UZFS_OK(e->WaitSynced(3));  // long synced
  EXPECT_UZFS_OK(e->WaitOpenSynced());  // nothing assigned: nothing to wait for
  auto now = e->SyncNow();
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->number(), 6u);
  EXPECT_EQ(e->WaitSynced(8).code(), Code::kInvalidArgument);  // not open yet
  EXPECT_UZFS_OK(e->Shutdown());
  EXPECT_TRUE(s.entered().empty());
}

TEST(TxgEngine, WaitSyncedReturnsOnlyAfterSyncTxgReturned) {
  TestSyncer s(5);
  auto e = MakeEngine(s, 5, NoTimerOptions());
  ASSERT_NE(e, nullptr);
  auto tx = e->Assign(100);
  ASSERT_TRUE(tx.ok());
  EXPECT_EQ(tx->txg().number(), 5u);
  tx->Commit(100);
  s.CloseGate();
  std::atomic<bool> done{false};
  bool saw_synced = false;
  std::thread waiter([&] {
    EXPECT_UZFS_OK(e->WaitSynced(5));
    const auto v = s.synced();  // SyncTxg appends just before returning
    saw_synced = v.size() == 1 && v[0] == 5;
    done = true;
  });
  ASSERT_TRUE(s.WaitEntered(1));
  EXPECT_FALSE(done.load());  // SyncTxg(5) is still inside the gate
  EXPECT_EQ(e->stats().syncing_txg, 5u);
  s.OpenGate();
  waiter.join();
  EXPECT_TRUE(saw_synced);
  EXPECT_EQ(e->synced_txg().number(), 5u);
  EXPECT_EQ(e->stats().closed_by_request, 1u);
  EXPECT_EQ(e->stats().dirty_bytes, 0u);
  EXPECT_EQ(s.violations(), 0);
}

TEST(TxgEngine, HeldTxgNeverSyncsAndOpenAdvancesOnlyWhenQuiescingIsEmpty) {
  TestSyncer s(5);
  auto e = MakeEngine(s, 5, NoTimerOptions());
  ASSERT_NE(e, nullptr);
  auto tx1 = e->Assign(10);
  ASSERT_TRUE(tx1.ok());
  s.Begin(tx1->txg());
  ASSERT_EQ(tx1->txg().number(), 5u);
  auto n = e->SyncNow();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, Txg{5});
  TxgStats st = e->stats();
  EXPECT_EQ(st.quiescing_txg, 5u);  // held by tx1
  EXPECT_EQ(st.open_txg, 6u);       // opened at once
  EXPECT_EQ(st.syncing_txg, 0u);

  auto tx2 = e->Assign(10);
  ASSERT_TRUE(tx2.ok());
  s.Begin(tx2->txg());
  EXPECT_EQ(tx2->txg().number(), 6u);
  ASSERT_TRUE(e->SyncNow().ok());  // 6 wants to close, but 5 still quiesces
  auto tx3 = e->Assign(10);
  ASSERT_TRUE(tx3.ok());
  s.Begin(tx3->txg());
  EXPECT_EQ(tx3->txg().number(), 6u);
  st = e->stats();
  EXPECT_EQ(st.quiescing_txg, 5u);
  EXPECT_EQ(st.open_txg, 6u);
  EXPECT_TRUE(s.entered().empty());

  s.End(5);
  tx1->Commit();
  st = e->stats();  // 5 left quiescing, so 6 closed and 7 opened
  EXPECT_EQ(st.quiescing_txg, 6u);
  EXPECT_EQ(st.open_txg, 7u);
  EXPECT_UZFS_OK(e->WaitSynced(5));
  auto tx4 = e->Assign(10);
  ASSERT_TRUE(tx4.ok());
  EXPECT_EQ(tx4->txg().number(), 7u);
  EXPECT_EQ(e->synced_txg().number(), 5u);  // 6 still held by tx2, tx3
  s.End(6);
  tx2->Commit();
  s.End(6);
  tx3->Abort();
  EXPECT_UZFS_OK(e->WaitSynced(6));
  tx4->Abort();
  EXPECT_UZFS_OK(e->WaitOpenSynced());  // 7 had a transaction
  EXPECT_EQ(s.synced(), (std::vector<uint64_t>{5, 6, 7}));
  EXPECT_EQ(s.violations(), 0);
  EXPECT_EQ(e->stats().dirty_bytes, 0u);
}

TEST(TxgEngine, DirtyBytesAreAccountedPerTxg) {
  TestSyncer s(1);
  TxgOptions o = NoTimerOptions();
  o.dirty_max = 1 << 20;
  auto e = MakeEngine(s, 1, o);
  ASSERT_NE(e, nullptr);
  auto a = e->Assign(1000);
  auto b = e->Assign(500);
  auto c = e->Assign(300);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(e->stats().open_dirty_bytes, 1800u);  // estimates count at once
  a->Commit(200);
  b->Abort();
  EXPECT_EQ(e->stats().open_dirty_bytes, 500u);
  { Tx moved = std::move(*c); EXPECT_FALSE(c->active()); }  // destroyed: keeps its estimate
  EXPECT_EQ(e->stats().open_dirty_bytes, 500u);
  ASSERT_TRUE(e->SyncNow().ok());
  auto d = e->Assign(64);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->txg(), Txg{2});
  TxgStats st = e->stats();
  EXPECT_EQ(st.open_dirty_bytes, 64u);
  d->Commit();
  EXPECT_UZFS_OK(e->WaitSynced(1));
  EXPECT_EQ(e->stats().dirty_bytes, 64u);  // only txg 2 left
  EXPECT_UZFS_OK(e->WaitOpenSynced());
  EXPECT_EQ(e->stats().dirty_bytes, 0u);
}

TEST(TxgEngine, DirtyLimitTriggersSyncWithoutTimeout) {
  TestSyncer s(1);
  TxgOptions o = NoTimerOptions();
  o.dirty_max = 1000;
  o.dirty_sync_pct = 20;  // 200 bytes
  auto e = MakeEngine(s, 1, o);
  ASSERT_NE(e, nullptr);
  auto a = e->Assign(10);
  ASSERT_TRUE(a.ok());
  a->Commit(250);  // the actual count crosses the limit
  EXPECT_EQ(e->open_txg().number(), 2u);  // closed by the commit itself
  ASSERT_TRUE(s.WaitSynced(1));
  EXPECT_UZFS_OK(e->WaitSynced(1));  // 1 is already closed: not a request
  auto b = e->Assign(300);  // the estimate crosses it
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->txg(), Txg{2});
  EXPECT_EQ(e->stats().quiescing_txg, 2u);
  b->Commit();
  ASSERT_TRUE(s.WaitSynced(2));
  EXPECT_UZFS_OK(e->WaitSynced(2));  // the engine has counted it too
  EXPECT_EQ(s.synced(), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(e->stats().closed_by_dirty, 2u);
  EXPECT_EQ(e->stats().closed_by_timeout, 0u);
}

// Tx::Commit(dirty, changed): the dirty trigger counts the changed bytes
// (what scattered small writes added), and the dirty bytes (the memory
// their records hold) only from half of delay_min_pct on.
TEST(TxgEngine, ChangedBytesCloseTheTxgAndHeldMemoryOnlyFromHalfTheDelayMark) {
  TestSyncer s(1);
  TxgOptions o = NoTimerOptions();
  o.dirty_max = 1000;
  o.dirty_sync_pct = 20;  // 200 changed bytes
  o.delay_min_pct = 60;   // 300 dirty bytes
  auto e = MakeEngine(s, 1, o);
  ASSERT_NE(e, nullptr);
  auto a = e->Assign(10);
  ASSERT_TRUE(a.ok());
  a->Commit(250, 20);  // holds more than 200, changed little: stays open
  EXPECT_EQ(e->open_txg().number(), 1u);
  EXPECT_EQ(e->stats().open_dirty_bytes, 250u);
  EXPECT_EQ(e->stats().open_changed_bytes, 20u);
  auto b = e->Assign(10);
  ASSERT_TRUE(b.ok());
  b->Commit(0, 190);  // held nothing new; 210 changed bytes close it
  EXPECT_EQ(e->open_txg().number(), 2u);
  ASSERT_TRUE(s.WaitSynced(1));
  EXPECT_UZFS_OK(e->WaitSynced(1));
  auto c = e->Assign(10);
  ASSERT_TRUE(c.ok());
  c->Commit(299, 10);  // just under the memory trigger
  EXPECT_EQ(e->open_txg().number(), 2u);
  auto d = e->Assign(10);
  ASSERT_TRUE(d.ok());
  d->Commit(1, 1);  // 300 dirty bytes: the memory closes it
  EXPECT_EQ(e->open_txg().number(), 3u);
  ASSERT_TRUE(s.WaitSynced(2));
  EXPECT_UZFS_OK(e->WaitSynced(2));
  EXPECT_EQ(e->stats().closed_by_dirty, 2u);
  // The memory trigger is never below the changed-bytes one.
  TestSyncer s2(1);
  o.delay_min_pct = 10;  // half of it, 50, is below 200
  auto e2 = MakeEngine(s2, 1, o);
  ASSERT_NE(e2, nullptr);
  auto f = e2->Assign(1);
  ASSERT_TRUE(f.ok());
  f->Commit(199, 1);
  EXPECT_EQ(e2->open_txg().number(), 1u);
  auto g = e2->Assign(1);
  ASSERT_TRUE(g.ok());
  g->Commit(1, 1);
  EXPECT_EQ(e2->open_txg().number(), 2u);
}

TEST(TxgEngine, TimeoutTriggersSync) {
  TestSyncer s(1);
  TxgOptions o;
  o.timeout = 20ms;
  auto e = MakeEngine(s, 1, o);
  ASSERT_NE(e, nullptr);
  auto a = e->Assign(1);
  ASSERT_TRUE(a.ok());
  a->Commit();
  ASSERT_TRUE(s.WaitSynced(1));
  EXPECT_EQ(s.synced()[0], 1u);
  EXPECT_TRUE(Eventually([&] { return e->stats().txgs_synced == 1; }));
  EXPECT_EQ(e->stats().closed_by_timeout, 1u);
  // A later transaction starts a fresh timer.
  auto b = e->Assign(1);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->txg(), Txg{2});
  b->Commit();
  ASSERT_TRUE(s.WaitSynced(2));
  EXPECT_TRUE(Eventually([&] { return e->stats().closed_by_timeout == 2; }));
}

TEST(TxgEngine, ThrottleDelaysThenBlocksWhenSyncerIsSlowAndNeverFails) {
  TestSyncer s(1);
  TxgOptions o = NoTimerOptions();
  o.dirty_max = 1000;
  o.dirty_sync_pct = 20;
  o.delay_min_pct = 60;
  o.delay_scale = 20us;
  o.max_delay = 1ms;
  auto e = MakeEngine(s, 1, o);
  ASSERT_NE(e, nullptr);
  s.CloseGate();  // the syncer is as slow as the test wants
  constexpr int kTx = 300;
  std::atomic<int> ok{0};
  std::thread writer([&] {
    for (int i = 0; i < kTx; i++) {
      auto tx = e->Assign(50);
      if (!tx.ok()) continue;
      ok++;
      tx->Commit();
    }
  });
  ASSERT_TRUE(Eventually([&] { return e->stats().blocked_count >= 1; }));
  TxgStats st = e->stats();
  EXPECT_GE(st.dirty_bytes, o.dirty_max);       // blocked only once full
  EXPECT_LT(st.dirty_bytes, o.dirty_max + 50);  // and never let far past it
  EXPECT_GT(st.delayed_count, 0u);              // delayed on the way up
  EXPECT_LT(ok.load(), kTx);
  s.OpenGate();
  writer.join();
  EXPECT_EQ(ok.load(), kTx);
  EXPECT_UZFS_OK(e->WaitOpenSynced());
  st = e->stats();
  EXPECT_EQ(st.dirty_bytes, 0u);
  EXPECT_GT(st.delay_time.count(), 0);
  EXPECT_EQ(st.tx_assigned, static_cast<uint64_t>(kTx));
  EXPECT_EQ(s.violations(), 0);
}

TEST(TxgEngine, NoWaitIsBusyWhenThrottledAndThrottleThenNoThrottleAssigns) {
  TestSyncer s(1);
  TxgOptions o = NoTimerOptions();
  o.dirty_max = 1000;
  o.delay_scale = 10us;
  o.max_delay = 1ms;
  auto e = MakeEngine(s, 1, o);
  ASSERT_NE(e, nullptr);
  auto small = e->Assign(1, TxgWait::kNoWait);
  ASSERT_TRUE(small.ok());  // no throttle below 60%
  small->Abort();
  s.CloseGate();
  auto big = e->Assign(700, TxgWait::kNoThrottle);
  ASSERT_TRUE(big.ok());
  big->Commit();
  ASSERT_TRUE(s.WaitEntered(1));  // txg 1 (700 bytes) is stuck syncing
  auto busy = e->Assign(1, TxgWait::kNoWait);
  EXPECT_EQ(busy.status().code(), Code::kBusy);
  EXPECT_UZFS_OK(e->Throttle());  // what kWait would have slept
  EXPECT_EQ(e->stats().delayed_count, 1u);
  auto retry = e->Assign(1, TxgWait::kNoThrottle);
  ASSERT_TRUE(retry.ok());
  EXPECT_EQ(retry->txg(), Txg{2});
  retry->Commit();
  s.OpenGate();
  EXPECT_UZFS_OK(e->WaitOpenSynced());
  EXPECT_TRUE(e->Assign(1, TxgWait::kNoWait).ok());
}

TEST(TxgEngine, SyncerErrorFailsEngineAndWakesWaiters) {
  TestSyncer s(1);
  s.FailAt(2);
  auto e = MakeEngine(s, 1, NoTimerOptions());
  ASSERT_NE(e, nullptr);
  auto a = e->Assign(1);
  ASSERT_TRUE(a.ok());
  a->Commit();
  EXPECT_UZFS_OK(e->WaitSynced(1));
  auto b = e->Assign(1);
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b->txg(), Txg{2});
  std::atomic<bool> waiter_done{false};
  Status waited;
  std::thread waiter([&] {
    waited = e->WaitSynced(2);  // closes 2; it quiesces until b commits
    waiter_done = true;
  });
  ASSERT_TRUE(Eventually([&] { return e->stats().open_txg == 3; }));
  auto c = e->Assign(1);  // lands in 3, outlives the failure
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->txg(), Txg{3});
  EXPECT_FALSE(waiter_done.load());
  b->Commit();
  waiter.join();
  EXPECT_EQ(waited.code(), Code::kIoError);
  EXPECT_NE(waited.message().find("disk gone"), std::string::npos);
  auto d = e->Assign(1);
  EXPECT_EQ(d.status().code(), Code::kIoError);
  EXPECT_EQ(e->SyncNow().status().code(), Code::kIoError);
  EXPECT_EQ(e->WaitOpenSynced().code(), Code::kIoError);
  EXPECT_EQ(e->Throttle().code(), Code::kIoError);
  c->Commit();  // still fine after the failure
  EXPECT_EQ(e->synced_txg().number(), 1u);
  EXPECT_EQ(e->Shutdown().code(), Code::kIoError);
  EXPECT_EQ(e->Shutdown().code(), Code::kIoError);
  EXPECT_EQ(s.synced(), (std::vector<uint64_t>{1}));
}

TEST(TxgEngine, WriterBlockedAtDirtyMaxWakesWithTheFailure) {
  TestSyncer s(1);
  s.FailAt(1);
  TxgOptions o = NoTimerOptions();
  o.dirty_max = 1000;
  o.delay_scale = 1us;
  o.max_delay = 100us;
  auto e = MakeEngine(s, 1, o);
  ASSERT_NE(e, nullptr);
  s.CloseGate();
  auto big = e->Assign(2000, TxgWait::kNoThrottle);
  ASSERT_TRUE(big.ok());
  big->Commit();
  Status got;
  std::thread writer([&] { got = e->Assign(1).status(); });
  ASSERT_TRUE(Eventually([&] { return e->stats().blocked_count >= 1; }));
  s.OpenGate();
  writer.join();
  EXPECT_EQ(got.code(), Code::kIoError);
}

TEST(TxgEngine, ShutdownWaitsForPendingTransactionsAndSyncsThem) {
  TestSyncer s(1);
  auto e = MakeEngine(s, 1, NoTimerOptions());
  ASSERT_NE(e, nullptr);
  constexpr int kThreads = 3;
  std::atomic<int> assigned{0};
  std::atomic<bool> release{false};
  std::vector<std::thread> ts;
  for (int i = 0; i < kThreads; i++) {
    ts.emplace_back([&] {
      auto tx = e->Assign(10);
      ASSERT_TRUE(tx.ok());
      s.Begin(tx->txg());
      assigned++;
      while (!release.load()) std::this_thread::yield();
      s.End(tx->txg());
      tx->Commit();
    });
  }
  ASSERT_TRUE(Eventually([&] { return assigned.load() == kThreads; }));
  std::atomic<bool> shut{false};
  Status shutdown_status;
  std::thread closer([&] {
    shutdown_status = e->Shutdown();
    shut = true;
  });
  // New work is refused as soon as shutdown begins.
  ASSERT_TRUE(Eventually([&] { return !e->Assign(1).ok(); }));
  EXPECT_EQ(e->Assign(1).status().code(), Code::kBusy);
  EXPECT_FALSE(shut.load());
  EXPECT_TRUE(s.entered().empty());
  release = true;
  for (auto& t : ts) t.join();
  closer.join();
  EXPECT_UZFS_OK(shutdown_status);
  EXPECT_EQ(s.synced(), (std::vector<uint64_t>{1}));
  EXPECT_EQ(e->synced_txg().number(), 1u);
  EXPECT_UZFS_OK(e->WaitOpenSynced());                  // everything assigned is synced
  EXPECT_EQ(e->WaitSynced(2).code(), Code::kBusy);      // will never sync
  EXPECT_UZFS_OK(e->Shutdown());                        // idempotent
  EXPECT_EQ(s.violations(), 0);
}

TEST(TxgEngine, WaitOpenSyncedDuringShutdownWaitsForTheLastTxg) {
  TestSyncer s(1);
  auto e = MakeEngine(s, 1, NoTimerOptions());
  ASSERT_NE(e, nullptr);
  auto tx1 = e->Assign(1);
  ASSERT_TRUE(tx1.ok());
  ASSERT_TRUE(e->SyncNow().ok());  // 1 quiesces (held by tx1)
  auto tx2 = e->Assign(1);
  ASSERT_TRUE(tx2.ok());
  ASSERT_EQ(tx2->txg().number(), 2u);
  Status shut, waited;
  std::thread closer([&] { shut = e->Shutdown(); });
  ASSERT_TRUE(Eventually([&] { return !e->Assign(1).ok(); }));
  // 2 must sync before shutdown ends, though it cannot close yet.
  EXPECT_EQ(e->stats().open_txg, 2u);
  std::thread waiter([&] { waited = e->WaitOpenSynced(); });
  tx1->Commit();
  tx2->Commit();
  waiter.join();
  closer.join();
  EXPECT_UZFS_OK(waited);
  EXPECT_UZFS_OK(shut);
  EXPECT_EQ(s.synced(), (std::vector<uint64_t>{1, 2}));
}

TEST(TxgEngine, DestructorSyncsWhatIsOpen) {
  TestSyncer s(40);
  {
    auto e = MakeEngine(s, 40, NoTimerOptions());
    ASSERT_NE(e, nullptr);
    auto a = e->Assign(5);
    ASSERT_TRUE(a.ok());
    a->Commit();
  }
  EXPECT_EQ(s.synced(), (std::vector<uint64_t>{40}));
  // A failed engine is destroyed safely too.
  TestSyncer f(1);
  f.FailAt(1);
  {
    auto e = MakeEngine(f, 1, NoTimerOptions());
    ASSERT_NE(e, nullptr);
    auto a = e->Assign(5);
    ASSERT_TRUE(a.ok());
    a->Commit();
    EXPECT_EQ(e->WaitOpenSynced().code(), Code::kIoError);
  }
  EXPECT_TRUE(f.synced().empty());
}

TEST(TxgEngine, ManyWritersTxgsInOrderAndNeverSyncedWhileHeld) {
  constexpr uint64_t kFirst = 100;
  TestSyncer s(kFirst);
  TxgOptions o;
  o.timeout = 50ms;
  o.dirty_max = 64 << 10;
  o.dirty_sync_pct = 20;
  o.delay_scale = 5us;
  o.max_delay = 20us;
  constexpr int kThreads = 8, kTx = 2000;
  constexpr uint64_t kEst = 100;
  auto e = MakeEngine(s, kFirst, o);
  ASSERT_NE(e, nullptr);
  std::atomic<int> dirty_violations{0};
  TxgEngine* raw = e.get();
  s.SetHook([&, raw](uint64_t) {
    // Non-waiting calls are allowed from SyncTxg. Each writer can pass the
    // throttle's check just below dirty_max and then double its count.
    if (raw->stats().dirty_bytes >= o.dirty_max + kThreads * 2 * kEst) dirty_violations++;
  });
  std::atomic<int> failures{0}, order_violations{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; t++) {
    ts.emplace_back([&, t] {
      std::mt19937 rng(t);
      uint64_t last = 0;
      for (int i = 0; i < kTx; i++) {
        auto tx = e->Assign(kEst);
        if (!tx.ok()) {
          failures++;
          continue;
        }
        const Txg txg = tx->txg();
        if (txg.number() < last) order_violations++;
        last = txg.number();
        s.Begin(txg);
        if (rng() % 16 == 0) std::this_thread::yield();
        s.End(txg);
        switch (rng() % 4) {
          case 0: tx->Abort(); break;
          case 1: tx->Commit(2 * kEst); break;
          case 2: break;  // destroyed: commits its estimate
          default: tx->Commit(kEst / 2); break;
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  ASSERT_UZFS_OK(e->WaitOpenSynced());
  const uint64_t last_txg = e->synced_txg().number();
  EXPECT_UZFS_OK(e->Shutdown());
  const TxgStats st = e->stats();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(order_violations.load(), 0);
  EXPECT_EQ(dirty_violations.load(), 0);
  EXPECT_EQ(s.violations(), 0);
  EXPECT_EQ(st.tx_assigned, static_cast<uint64_t>(kThreads * kTx));
  EXPECT_EQ(st.dirty_bytes, 0u);
  const auto synced = s.synced();
  ASSERT_FALSE(synced.empty());
  EXPECT_EQ(synced.front(), kFirst);
  EXPECT_EQ(synced.back(), last_txg);
  EXPECT_EQ(synced.size(), last_txg - kFirst + 1);
  EXPECT_EQ(st.txgs_synced, synced.size());
  EXPECT_EQ(st.closed_by_dirty + st.closed_by_timeout + st.closed_by_request, st.txgs_synced);
  // ~1.2 MB through a 13 KB sync limit and a 64 KB dirty_max: many txgs.
  EXPECT_GE(st.txgs_synced, 10u);
  EXPECT_GT(st.closed_by_dirty, 0u);
}

}  // namespace
}  // namespace uzfs
