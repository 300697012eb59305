// Private to zfs/vdev: the pieces the IoEngine implementations share.
//
// WorkerPool runs requests synchronously (device->Read/Write/Flush) on its
// own threads; it is the whole "threads" engine and the uring engine's path
// for devices without a NativeFd(). A request whose device does its own
// asynchronous I/O (BlockDevice::StartAsync: an NBD connection) is handed
// to the device instead, without a worker waiting on it; the pool counts
// such requests until their completion so that Shutdown drains them too. Locks: WorkerPool::mu_ guards its queue
// and state; UringEngine::mu_ guards the ring's submission side, the pending
// queue and the in-flight count (the completion side belongs to the reaper
// thread alone). A pool's mu_ and the uring mu_ are never held together, and
// no lock is held while a `done` callback runs.
#pragma once

#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "zfs/vdev/io_engine.h"
#include "zfs/util/elastic_threads.h"
#include "zfs/util/mutex.h"

namespace uzfs::vdev_internal {

// Marks the calling thread as belonging to `engine` (for the "Shutdown from
// an engine thread" check).
void SetCurrentEngine(const IoEngine* engine);
// Aborts with a message if the calling thread belongs to `engine`.
void CheckNotEngineThread(const IoEngine* engine, const char* what);

// Runs one request synchronously on the calling thread; returns its status.
Status ExecuteSync(const IoRequest& req);

class WorkerPool {
 public:
  // complete(req, status) / cancel(req) are the owning engine's bookkeeping.
  using CompleteFn = std::function<void(IoRequest&, Status)>;
  using CancelFn = std::function<void(IoRequest&)>;

  WorkerPool(const IoEngine* owner, uint32_t threads, CompleteFn complete, CancelFn cancel);
  ~WorkerPool();  // REQUIRES: Shutdown() has returned

  // Starts the requests a device takes asynchronously and queues the
  // others; false (and nothing started or queued) once shutdown began.
  bool Enqueue(std::vector<IoRequest>* reqs) UZFS_EXCLUDES(mu_);
  void Shutdown(ShutdownMode mode) UZFS_EXCLUDES(mu_);

 private:
  void Run() UZFS_EXCLUDES(mu_);
  // Hands `req` to its device's StartAsync; false when the device did not
  // take it (req is left as it was).
  bool StartAsync(IoRequest& req) UZFS_EXCLUDES(mu_);

  const IoEngine* const owner_;
  const CompleteFn complete_;
  const CancelFn cancel_;
  Mutex mu_;
  CondVar cv_;
  std::deque<IoRequest> queue_ UZFS_GUARDED_BY(mu_);
  bool stopping_ UZFS_GUARDED_BY(mu_) = false;
  // Requests handed to a device's StartAsync whose completion has not run.
  uint64_t async_inflight_ UZFS_GUARDED_BY(mu_) = 0;
  CondVar async_cv_;  // signalled when async_inflight_ drops to zero
  // Started on demand up to the engine's thread count; an idle one leaves
  // (elastic_threads.h). Under mu_ (JoinAll takes it itself).
  ElasticThreads threads_;
  Mutex shutdown_mu_;                 // serialises Shutdown calls
  bool joined_ UZFS_GUARDED_BY(shutdown_mu_) = false;
};

// The "threads" engine.
std::unique_ptr<IoEngine> NewThreadsEngine(const IoEngineOptions& opts);
// The "uring" engine, or NotSupported when the kernel refuses io_uring.
Result<std::unique_ptr<IoEngine>> NewUringEngine(const IoEngineOptions& opts);

}  // namespace uzfs::vdev_internal
