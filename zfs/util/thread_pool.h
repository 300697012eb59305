// ThreadPool: worker threads running queued tasks in FIFO order. The ZIO
// pipeline runs its stages (compress, checksum, allocate, issue; verify,
// decompress) on one, so every core works on blocks at once. Threads come
// and go with the work (elastic_threads.h): one is started when more tasks
// wait than workers are idle, up to the pool's size, and a worker idle for
// two seconds leaves, so an idle pool holds none.
//
// Promises: every task submitted before the destructor (or Shutdown) starts
// runs exactly once; the destructor waits for them, then joins the workers.
// Tasks may submit further tasks. A task must not throw (the engine has no
// exceptions); one that does terminates the process.
// Threading: Submit is safe from any thread, including a worker.
#pragma once

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "zfs/util/elastic_threads.h"
#include "zfs/util/mutex.h"

namespace uzfs {

class ThreadPool {
 public:
  // At most `threads` workers at once; 0 means one per core.
  explicit ThreadPool(unsigned threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Submit(std::function<void()> task) UZFS_EXCLUDES(mu_);
  // Runs the queue dry and joins the workers; later Submits run inline.
  void Shutdown() UZFS_EXCLUDES(mu_);
  unsigned size() const { return threads_.max(); }
  // Workers running now (0 when idle long enough).
  unsigned live() UZFS_EXCLUDES(mu_);

 private:
  void Work() UZFS_EXCLUDES(mu_);

  Mutex mu_;
  CondVar cv_;
  std::deque<std::function<void()>> queue_ UZFS_GUARDED_BY(mu_);
  bool stopping_ UZFS_GUARDED_BY(mu_) = false;
  ElasticThreads threads_;  // under mu_ (JoinAll takes it itself)
};

}  // namespace uzfs
