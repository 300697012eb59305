// ZplRangeLocks: disjoint ranges are held at once, overlapping writers
// wait for each other, readers share, and a waiting whole-file request
// is not passed by later overlapping ones.
#include "zfs/zpl/zpl_range_lock.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace uzfs {
namespace {

using namespace std::chrono_literals;

// Runs fn on a thread; reports whether it finished within `wait`.
class Attempt {
 public:
  explicit Attempt(std::function<void()> fn) : th_([this, fn = std::move(fn)] {
    fn();
    done_ = true;
  }) {}
  ~Attempt() { th_.join(); }
  bool DoneWithin(std::chrono::milliseconds wait) {
    const auto end = std::chrono::steady_clock::now() + wait;
    while (!done_ && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
    return done_;
  }

 private:
  std::atomic<bool> done_{false};
  std::thread th_;
};

TEST(ZplRangeLocksTest, DisjointRangesAndOtherObjectsAreHeldTogether) {
  ZplRangeLocks locks;
  auto a = locks.Lock(7, 0, 4096, true);
  auto b = locks.Lock(7, 4096, 4096, true);   // adjacent, not overlapping
  auto c = locks.Lock(8, 0, ZplRangeLocks::kToEnd, true);  // another file
  EXPECT_EQ(locks.requests(), 3u);
  auto r1 = locks.Lock(9, 0, 100, false);
  auto r2 = locks.Lock(9, 50, 100, false);  // readers share
  EXPECT_EQ(locks.requests(), 5u);
  a.Release();
  EXPECT_FALSE(a.held());
  EXPECT_EQ(locks.requests(), 4u);
}

TEST(ZplRangeLocksTest, OverlappingWriterWaitsForTheHolder) {
  ZplRangeLocks locks;
  auto held = locks.Lock(1, 1000, 10, true);
  ZplRangeLocks::Held got;
  {
    Attempt t([&] { got = locks.Lock(1, 1005, 100, true); });
    EXPECT_FALSE(t.DoneWithin(50ms));
    held.Release();
    EXPECT_TRUE(t.DoneWithin(5000ms));
  }
  EXPECT_TRUE(got.held());
  // A reader waits for an overlapping writer too.
  {
    Attempt t([&] { auto r = locks.Lock(1, 0, ZplRangeLocks::kToEnd, false); });
    EXPECT_FALSE(t.DoneWithin(50ms));
    got.Release();
    EXPECT_TRUE(t.DoneWithin(5000ms));
  }
  EXPECT_EQ(locks.requests(), 0u);
}

TEST(ZplRangeLocksTest, WaitingWholeFileRequestIsNotPassed) {
  ZplRangeLocks locks;
  auto first = locks.Lock(3, 0, 4096, true);
  std::atomic<int> order{0};
  int whole_at = 0, small_at = 0;
  {
    Attempt whole([&] {
      auto h = locks.Lock(3, 0, ZplRangeLocks::kToEnd, true);
      whole_at = ++order;
    });
    EXPECT_FALSE(whole.DoneWithin(30ms));
    // Disjoint from `first`, but behind the waiting whole-file request.
    Attempt small([&] {
      auto h = locks.Lock(3, 8192, 4096, true);
      small_at = ++order;
    });
    EXPECT_FALSE(small.DoneWithin(30ms));
    first.Release();
    EXPECT_TRUE(whole.DoneWithin(5000ms));
    EXPECT_TRUE(small.DoneWithin(5000ms));
  }
  EXPECT_EQ(whole_at, 1);
  EXPECT_EQ(small_at, 2);
}

TEST(ZplRangeLocksTest, ManyThreadsNeverOverlapAWriter) {
  ZplRangeLocks locks;
  constexpr int kThreads = 6, kRounds = 2000;
  std::vector<std::atomic<int>> owners(64);
  std::atomic<int> violations{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; t++) {
    ts.emplace_back([&, t] {
      uint64_t x = 0x9e3779b97f4a7c15ull * (t + 1);
      for (int i = 0; i < kRounds; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const uint64_t start = x % 60, len = 1 + (x >> 8) % 4;
        auto h = locks.Lock(5, start, len, true);
        for (uint64_t b = start; b < start + len; b++) {
          if (owners[b].exchange(t + 1) != 0) violations++;
        }
        for (uint64_t b = start; b < start + len; b++) owners[b].store(0);
      }
    });
  }
  for (auto& th : ts) th.join();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_EQ(locks.requests(), 0u);
}

}  // namespace
}  // namespace uzfs
