// CpuCrowding: whether more tasks are runnable right now than there are
// CPUs, for the FUSE workers that watch for the next request by spinning
// (fuse_loop.h, fuse_uring.h): a spinner on a crowded machine keeps one of
// the runnable tasks (often the client the reply just woke, or the txg
// sync) off a CPU, so it sleeps instead.
//
// The verdict comes from /proc/loadavg's running-task count and is shared
// by the callers: it is read again at most every 500 us (formatting
// /proc/loadavg costs microseconds, and reading it for every request was
// 9 % of the daemon's CPU in a file-create run).
//
// Threading: Crowded() from any thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace uzfs {

class CpuCrowding {
 public:
  // enabled = false: never opens /proc/loadavg, never crowded.
  explicit CpuCrowding(bool enabled);
  CpuCrowding(const CpuCrowding&) = delete;
  CpuCrowding& operator=(const CpuCrowding&) = delete;
  ~CpuCrowding();

  bool Crowded() const;

 private:
  bool Read() const;

  const long cpus_;
  const int loadavg_;  // /proc/loadavg, or -1
  mutable std::atomic<int64_t> read_at_{INT64_MIN / 2};  // steady clock, ns
  mutable std::atomic<bool> verdict_{false};
};

}  // namespace uzfs
