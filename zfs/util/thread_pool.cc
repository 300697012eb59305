// ThreadPool; see thread_pool.h.
#include "zfs/util/thread_pool.h"

namespace uzfs {

ThreadPool::ThreadPool(unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  workers_.reserve(threads);
  for (unsigned i = 0; i < threads; i++) workers_.emplace_back([this] { Work(); });
}

ThreadPool::~ThreadPool() { Shutdown(); }

void ThreadPool::Submit(std::function<void()> task) {
  {
    MutexLock l(&mu_);
    if (!stopping_) {
      queue_.push_back(std::move(task));
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
  for (auto& t : workers_) t.join();
}

void ThreadPool::Work() {
  for (;;) {
    std::function<void()> task;
    {
      MutexLock l(&mu_);
      while (queue_.empty() && !stopping_) cv_.Wait(&mu_);
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace uzfs
