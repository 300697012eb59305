// FuseLoop: the worker threads that read a session's requests from
// /dev/fuse and answer them (in place of libfuse's fuse_session_loop_mt),
// built on libfuse's public low-level calls (fuse_session_receive_buf /
// fuse_session_process_buf).
//
// Why our own loop. Most of what a FUSE client does is a synchronous
// chain: unlink(2) with the writeback cache is UNLINK, then SETATTR (the
// kernel's ctime update), then GETATTR of the directory; write+fsync, create
// and stat are chains too. Each request of such a chain finds every daemon
// worker asleep in read(2), so each one costs a wake-up of a worker (in a
// VM: an idle vCPU woken by an IPI, tens of microseconds) on top of the
// client's own wake-up for the reply. Here the worker that has just answered
// a request watches /dev/fuse for `poll_us` microseconds (poll(2) with no
// timeout, in a loop) before it goes back to a blocking read, so the next
// request of the chain, which the client sends within microseconds of the
// reply, is read by a running thread.
//
// What it promises.
//   - At most one worker spins at a time, and for at most poll_us per
//     request answered (the machine may have two cores: a spinner takes a
//     core from the client and from the txg sync). poll_us = 0 turns
//     spinning off: every worker then sleeps in read(2), as libfuse's loop.
//   - Workers are started on demand, up to max_threads: when a worker takes
//     a request and no other is left reading, another one is started (so a
//     request that blocks, e.g. an fsync, never holds up the others). They
//     stay until the session ends. Sleeping workers block in read(2) on the
//     session's descriptor; the kernel wakes one of them per request.
//   - Run() returns once the session has exited (fuse_session_exit, or the
//     kernel ended the connection: unmount/abort) and every worker has
//     left: 0, or the first read error (-errno) that ended it.
//
// Threading: Run() once per loop, from the thread that owns it; stats()
// from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "fuse/cpu_crowding.h"
#include "zfs/util/mutex.h"

struct fuse_session;

namespace uzfs {

struct FuseLoopOptions {
  unsigned max_threads = 8;
  // How long a worker that has just answered a request watches for the next
  // one before it sleeps, microseconds; 0: never.
  unsigned poll_us = 0;
};

struct FuseLoopStats {
  uint64_t requests = 0;     // requests read
  uint64_t spins = 0;        // watches started (after a request)
  uint64_t spin_hits = 0;    // watches that saw a request arrive
  uint64_t threads = 0;      // workers started
  uint64_t crowded = 0;      // watches skipped: every CPU was taken
};

class FuseLoop {
 public:
  FuseLoop(fuse_session* se, const FuseLoopOptions& opts);
  FuseLoop(const FuseLoop&) = delete;
  FuseLoop& operator=(const FuseLoop&) = delete;
  ~FuseLoop();

  int Run();
  FuseLoopStats stats() const;

 private:
  void Worker();
  void StartWorker() UZFS_EXCLUDES(mu_);
  // Watches the descriptor for up to poll_us; true when a request (or an
  // error) is there to read.
  bool Spin();
  fuse_session* const se_;
  const int fd_;
  const FuseLoopOptions opts_;
  std::atomic<bool> spinning_{false};
  std::atomic<unsigned> idle_{0};  // workers not handling a request
  std::atomic<int> error_{0};
  const CpuCrowding crowding_;  // no spinning while the CPUs are taken
  std::atomic<uint64_t> requests_{0}, spins_{0}, spin_hits_{0}, started_{0}, crowded_{0};
  Mutex mu_;
  CondVar all_left_;
  unsigned live_ UZFS_GUARDED_BY(mu_) = 0;
  std::vector<std::thread> threads_ UZFS_GUARDED_BY(mu_);
};

}  // namespace uzfs
