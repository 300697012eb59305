// ThreadPool: every task runs once, tasks can submit tasks, shutdown drains;
// workers start with the work, never more than the pool's size, and leave
// once idle.
#include "zfs/util/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace uzfs {
namespace {

TEST(ThreadPoolTest, RunsEveryTaskOnce) {
  std::atomic<int> sum{0};
  {
    ThreadPool pool(3);
    EXPECT_EQ(pool.size(), 3u);
    for (int i = 1; i <= 1000; i++) pool.Submit([&sum, i] { sum += i; });
  }  // destructor drains
  EXPECT_EQ(sum.load(), 500500);
}

TEST(ThreadPoolTest, TasksSubmitTasks) {
  std::atomic<int> n{0};
  ThreadPool pool(2);
  std::function<void(int)> spawn = [&](int depth) {
    n++;
    if (depth < 10) {
      pool.Submit([&, depth] { spawn(depth + 1); });
      pool.Submit([&, depth] { spawn(depth + 1); });
    }
  };
  pool.Submit([&] { spawn(0); });
  pool.Shutdown();
  EXPECT_EQ(n.load(), 2047);  // a full binary tree of depth 10
}

TEST(ThreadPoolTest, WorkersComeAndGoWithTheWork) {
  ThreadPool pool(4);
  EXPECT_EQ(pool.live(), 0u);  // nothing started before there is work
  std::atomic<int> running{0}, peak{0};
  std::atomic<bool> release{false};
  for (int i = 0; i < 16; i++) {
    pool.Submit([&] {
      const int now = ++running;
      int p = peak.load();
      while (now > p && !peak.compare_exchange_weak(p, now)) {
      }
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      running--;
    });
  }
  for (int i = 0; i < 2000 && peak.load() < 4; i++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(peak.load(), 4);  // blocking tasks got a worker each, up to the size
  EXPECT_LE(pool.live(), 4u);
  release = true;
  // Idle workers leave (after two seconds).
  for (int i = 0; i < 600 && pool.live() > 0; i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(pool.live(), 0u);
  // And come back for new work.
  std::atomic<bool> ran{false};
  pool.Submit([&] { ran = true; });
  pool.Shutdown();
  EXPECT_TRUE(ran.load());
}

TEST(ThreadPoolTest, SubmitAfterShutdownRunsInline) {
  ThreadPool pool(1);
  pool.Shutdown();
  bool ran = false;
  pool.Submit([&] { ran = true; });
  EXPECT_TRUE(ran);
}

}  // namespace
}  // namespace uzfs
