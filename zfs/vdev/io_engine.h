// IoEngine: asynchronous I/O on BlockDevices, the bottom of the ZIO pipeline.
//
// What it does: takes batches of requests (device, read/write/flush, offset,
// buffer, completion callback) and completes each on its own threads
// (RunOnCaller: one request on the caller's thread instead). Two
// implementations, chosen at run time by Create():
//  - "uring": io_uring (liburing). Requests for devices with a NativeFd()
//    (FileDevice) go to the kernel ring; one reaper thread completes them.
//    Short transfers are resubmitted for the remainder; -EINTR/-EAGAIN are
//    retried. Requests for other devices (MemDevice, FaultDevice, anything
//    that wraps) run the device's synchronous Read/Write/Flush on a small
//    worker pool, so every device works through every engine; a device
//    that does its own asynchronous I/O (BlockDevice::StartAsync: an NBD
//    connection) is handed the request instead, with no worker waiting.
//  - "threads": a pool of worker threads calling Read/Write/Flush (pread/
//    pwrite/fdatasync for files). Always available.
// kAuto picks io_uring when the kernel allows it (io_uring_queue_init and an
// opcode probe succeed), else threads. UZFS_IO_ENGINE=uring|threads in the
// environment forces one (forcing uring where it is unavailable is an error).
//
// What it promises:
//  - Every submitted request's `done` is called exactly once: with OK, with
//    the device's error (IoError naming the path and offset; InvalidArgument
//    for a bad range), or with Busy when the engine is shutting down (a
//    cancelled or refused request; it did not touch the device).
//  - I/O errors are counted on the device (BlockDevice::errors()) once, by
//    whichever path ran the I/O; cancellations are not counted.
//  - No ordering between requests, even in one batch. A flush covers the
//    writes whose `done` ran before the flush was submitted; to order, wait.
//
// Threading contract: Submit may be called from any thread, including from
// inside a `done` callback (that is how a pipeline chains stages). `done`
// runs on an engine thread (or the device's own thread, for a request a
// device took with StartAsync; the caller's, for RunOnCaller), except for a
// request refused or cancelled by a shutdown, whose `done` may run on the
// thread calling Submit or Shutdown. It
// must not block for long and must not call Shutdown. The request's device and buffer must stay
// valid until its `done` has been called. Shutdown and the destructor must
// not be called from an engine thread (this aborts).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "zfs/util/mutex.h"
#include "zfs/util/status.h"
#include "zfs/vdev/block_device.h"
#include "zfs/vdev/vdev_io_stats.h"

namespace uzfs {

struct IoRequest {
  // Bytes the request transfers (buf, or the gathered or scattered pieces).
  uint64_t length() const {
    uint64_t n = 0;
    for (const auto& p : gather) n += p.size();
    for (const auto& p : scatter) n += p.size();
    return gather.empty() && scatter.empty() ? buf.size() : n;
  }

  BlockDevice* device = nullptr;  // not owned
  IoOp op = IoOp::kRead;
  uint64_t offset = 0;
  // Read into / written from (writes do not modify it). Empty for a flush.
  std::span<uint8_t> buf;
  // Called exactly once with the outcome. May be empty (fire and forget).
  std::function<void(Status)> done;
  // kWrite only, when not empty: a gathered write (adjacent writes merged,
  // zfs/vdev/vdev_impl.h) of these pieces back to back from `offset`, as
  // one I/O (io_uring writev / pwritev, or BlockDevice::WriteGather); `buf`
  // is then unused. The pieces must stay valid until `done` runs.
  std::vector<std::span<const uint8_t>> gather = {};
  // kRead only, when not empty: a scattered read (nearby reads merged,
  // zfs/vdev/vdev.cc) into these pieces back to back from `offset`, as one
  // I/O (io_uring readv / preadv, or BlockDevice::ReadScatter); `buf` is
  // then unused. The pieces must stay valid until `done` runs.
  std::vector<std::span<uint8_t>> scatter = {};
  // Optional: the engine stamps the moment it hands the request to the
  // device (NoteDispatched), for `zpool iostat`'s queue and disk times.
  // Must stay valid until `done` runs.
  IoTiming* timing = nullptr;
};

enum class IoEngineKind : uint8_t { kAuto, kUring, kThreads };
std::string_view IoEngineKindName(IoEngineKind k);

struct IoEngineOptions {
  IoEngineKind kind = IoEngineKind::kAuto;
  // io_uring: requests in the kernel at once (more wait in a queue).
  uint32_t queue_depth = 128;
  // Threads engine: I/O threads (the most requests in progress at once).
  // Uring engine: threads for devices without a NativeFd().
  uint32_t threads = 16;
};

enum class ShutdownMode : uint8_t {
  kDrain,   // run every accepted request to completion
  kCancel,  // complete queued (not yet started) requests with Busy; started
            // ones finish normally
};

struct IoEngineStats {
  uint64_t submitted = 0;  // requests passed to Submit or RunOnCaller (refused ones too)
  uint64_t completed = 0;  // done called, any status; == submitted when idle
  uint64_t cancelled = 0;  // done called with Busy at shutdown (incl. refused)
  uint64_t errors = 0;     // done called with a non-OK status other than cancel
};

class IoEngine {
 public:
  // Errors: NotSupported when io_uring is asked for (kUring or
  // UZFS_IO_ENGINE=uring) and unavailable; InvalidArgument for a bad
  // UZFS_IO_ENGINE value or zero depth/threads.
  static Result<std::unique_ptr<IoEngine>> Create(const IoEngineOptions& opts = {});

  // Implementations drain (ShutdownMode::kDrain) on destruction.
  virtual ~IoEngine() = default;
  IoEngine(const IoEngine&) = delete;
  IoEngine& operator=(const IoEngine&) = delete;

  // Starts every request of the batch; returns without waiting.
  virtual void Submit(std::vector<IoRequest>&& batch) = 0;
  void Submit(IoRequest req);
  // Runs one request on the calling thread through the device's
  // synchronous call, counted and completed (`done` before returning) as
  // any other; Busy, without touching the device, once Shutdown began.
  // For a lone request its caller waits for anyway (the intent log's
  // write of one block to a file or disk): the hand-offs to an engine
  // thread and back cost more than the I/O's own wait. Not for a flush: a
  // caller blocked in fdatasync waited ten times as long as the engine's
  // worker did while other processes kept the CPUs busy. The caller must
  // not be an engine thread.
  void RunOnCaller(IoRequest req) UZFS_EXCLUDES(caller_mu_);
  // Stops accepting requests (later ones complete at once with Busy), then
  // drains or cancels what is queued and waits until every accepted request
  // has completed and the engine's threads have exited. Idempotent.
  virtual void Shutdown(ShutdownMode mode) = 0;

  virtual IoEngineKind kind() const = 0;
  std::string_view name() const { return IoEngineKindName(kind()); }
  IoEngineStats stats() const;

 protected:
  IoEngine() = default;
  // Bookkeeping every implementation does around a completion.
  void NoteSubmitted(uint64_t n) { submitted_.fetch_add(n, std::memory_order_relaxed); }
  // Runs req.done(s) and counts it.
  void Complete(IoRequest& req, Status s);
  // Completes with Busy "I/O engine is shut down".
  void Cancel(IoRequest& req);
  // Every Shutdown calls this first: RunOnCaller refuses from then on, and
  // this returns once the requests running on callers' threads are done.
  void StopCallerRuns() UZFS_EXCLUDES(caller_mu_);

 private:
  Mutex caller_mu_;
  CondVar caller_cv_;
  bool caller_stopped_ UZFS_GUARDED_BY(caller_mu_) = false;
  uint64_t caller_running_ UZFS_GUARDED_BY(caller_mu_) = 0;
  std::atomic<uint64_t> submitted_{0};
  std::atomic<uint64_t> completed_{0};
  std::atomic<uint64_t> cancelled_{0};
  std::atomic<uint64_t> errors_{0};
};

// Submits the batch and blocks until all of it has completed; returns the
// first error (OK if none). Overwrites each request's `done`.
// REQUIRES: not called from an engine thread (it could wait on itself).
Status SubmitAndWait(IoEngine& engine, std::vector<IoRequest> batch);

}  // namespace uzfs
