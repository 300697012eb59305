// ElasticThreads: the threads of a work queue that come and go with the
// work, so an idle pool holds no thread (an imported pool that does nothing
// costs a handful of threads, not dozens) and a busy one has as many as
// it can use, up to a maximum.
//
// The owner keeps its queue, mutex and condition variable; every call here
// is made with the owner's mutex held, except JoinAll:
//   - after queueing work, Grow(queued, body) starts a thread running
//     body() when more items wait than threads are idle (and fewer than max
//     run);
//   - a worker with nothing to do calls Idle(): it waits on the owner's
//     condition variable until woken (true) or until it has waited
//     `idle_exit` (false: it should leave, calling Leaving() first);
//   - a worker that leaves (idle, or the owner is stopping) calls Leaving()
//     as the last thing it does under the mutex;
//   - JoinAll(mu), without the mutex held, after the owner told its
//     workers to stop, waits for every thread ever started.
// Threads that left are joined by the next Grow or by JoinAll.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <thread>
#include <vector>

#include "zfs/util/mutex.h"

namespace uzfs {

class ElasticThreads {
 public:
  ElasticThreads(unsigned max, std::chrono::milliseconds idle_exit)
      : max_(max == 0 ? 1 : max), idle_exit_(idle_exit) {}
  ElasticThreads(const ElasticThreads&) = delete;
  ElasticThreads& operator=(const ElasticThreads&) = delete;

  unsigned max() const { return max_; }
  // Threads running now (started and not left).
  unsigned live() const { return live_; }

  void Grow(size_t queued, std::function<void()> body) {
    Reap();
    if (queued <= idle_ || live_ >= max_) return;
    live_++;
    std::thread t(std::move(body));
    const std::thread::id id = t.get_id();
    threads_.emplace(id, std::move(t));
  }

  bool Idle(Mutex* mu, CondVar* cv) UZFS_REQUIRES(mu) {
    idle_++;
    const bool woke = cv->WaitFor(mu, idle_exit_);
    idle_--;
    return woke;
  }

  void Leaving() {
    live_--;
    left_.push_back(std::this_thread::get_id());
  }

  void JoinAll(Mutex* mu) UZFS_EXCLUDES(mu) {
    std::map<std::thread::id, std::thread> all;
    {
      MutexLock l(mu);
      all.swap(threads_);
      left_.clear();
    }
    for (auto& [id, t] : all) t.join();
  }

 private:
  void Reap() {
    for (const std::thread::id& id : left_) {
      auto it = threads_.find(id);
      if (it == threads_.end()) continue;
      it->second.join();  // it only returns after Leaving: no lock needed
      threads_.erase(it);
    }
    left_.clear();
  }

  const unsigned max_;
  const std::chrono::milliseconds idle_exit_;
  unsigned live_ = 0, idle_ = 0;
  std::map<std::thread::id, std::thread> threads_;
  std::vector<std::thread::id> left_;
};

}  // namespace uzfs
