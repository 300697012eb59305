// ThreadPool: every task runs once, tasks can submit tasks, shutdown drains.
#include "zfs/util/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>

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

TEST(ThreadPoolTest, SubmitAfterShutdownRunsInline) {
  ThreadPool pool(1);
  pool.Shutdown();
  bool ran = false;
  pool.Submit([&] { ran = true; });
  EXPECT_TRUE(ran);
}

}  // namespace
}  // namespace uzfs
