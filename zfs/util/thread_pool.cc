// ThreadPool; see thread_pool.h.
#include "zfs/util/thread_pool.h"

namespace uzfs {
namespace {

constexpr std::chrono::milliseconds kIdleExit{2000};

unsigned OrCores(unsigned threads) {
  return threads != 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

ThreadPool::ThreadPool(unsigned threads) : threads_(OrCores(threads), kIdleExit) {}

ThreadPool::~ThreadPool() { Shutdown(); }

unsigned ThreadPool::live() {
  MutexLock l(&mu_);
  return threads_.live();
}

void ThreadPool::Submit(std::function<void()> task) {
  {
    MutexLock l(&mu_);
    if (!stopping_) {
      queue_.push_back(std::move(task));
      threads_.Grow(queue_.size(), [this] { Work(); });
      cv_.Signal();
      return;
    }
  }
  task();  // after Shutdown: run inline so nothing is lost
}

void ThreadPool::Shutdown() {
  {
    MutexLock l(&mu_);
    if (stopping_) return;
    stopping_ = true;
    cv_.SignalAll();
  }
  threads_.JoinAll(&mu_);
}

void ThreadPool::Work() {
  for (;;) {
    std::function<void()> task;
    {
      MutexLock l(&mu_);
      while (queue_.empty() && !stopping_) {
        if (!threads_.Idle(&mu_, &cv_) && queue_.empty() && !stopping_) {
          threads_.Leaving();
          return;
        }
      }
      if (queue_.empty()) {  // stopping and drained
        threads_.Leaving();
        return;
      }
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace uzfs
