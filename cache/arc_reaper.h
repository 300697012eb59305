// The ARC reaper: keeps the daemon from being OOM-killed by its own cache.
//
// Every interval (arc_reap_interval_ms, 1 s) it reads the machine's memory
// state from a MemorySource — by default MemAvailable/MemTotal from
// /proc/meminfo, bounded by the cgroup's memory limit and what is left of
// it (a container's), and "some avg10" from /proc/pressure/memory (PSI; absent
// on kernels without it, then only MemAvailable counts). Pressure is
// available < sys_free (default 1/16 of RAM) or PSI above the threshold.
// Under pressure it lowers the ARC's target c by max(c >> shrink_shift,
// sys_free - available), never below c_min, evicts to it, and stops c from
// growing; after five calm readings in a row c may grow again (by inserts,
// see arc.h).
//
// Sources are injectable so tests drive the reaper with made-up readings
// and call Tick() directly instead of waiting for the thread.
// Threading: Start/Stop from one owner thread; Tick is also what the thread
// runs, so tests call it only without Start.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "cache/arc.h"
#include "zfs/util/cgroup_memory.h"
#include "zfs/util/mutex.h"
#include "zfs/util/status.h"

namespace uzfs {

struct MemorySnapshot {
  uint64_t total = 0;        // bytes of RAM
  uint64_t available = 0;    // MemAvailable
  double psi_some_avg10 = -1;  // percent; < 0: unknown
};

class MemorySource {
 public:
  virtual ~MemorySource() = default;
  virtual Result<MemorySnapshot> Read() = 0;
};

// Parses /proc/meminfo text (MemTotal, MemAvailable; kB) into *out.
Status ParseMeminfo(std::string_view text, MemorySnapshot* out);
// "some avg10=" of /proc/pressure/memory text.
Result<double> ParsePsiSomeAvg10(std::string_view text);

// Reads the two files (paths for tests), then bounds the figures by the
// process's cgroup memory limit (cgroup_memory.h; nullopt: not looked at).
std::unique_ptr<MemorySource> ProcMemorySource(std::string meminfo = "/proc/meminfo",
                                               std::string psi = "/proc/pressure/memory",
                                               std::optional<CgroupProcFiles> cgroup = CgroupProcFiles{});

struct ReaperOptions {
  uint64_t sys_free = 0;      // 0: total / 16
  double psi_threshold = 10;  // percent
  unsigned shrink_shift = 7;
  std::chrono::milliseconds interval{1000};
  int calm_ticks_to_grow = 5;
};

class ArcReaper {
 public:
  ArcReaper(Arc& arc, std::unique_ptr<MemorySource> source, const ReaperOptions& opts = {});
  ~ArcReaper();
  ArcReaper(const ArcReaper&) = delete;
  ArcReaper& operator=(const ArcReaper&) = delete;

  void Start() UZFS_EXCLUDES(mu_);
  void Stop() UZFS_EXCLUDES(mu_);
  // One reading and the action on it; returns how much c was lowered.
  uint64_t Tick();
  void SetOptions(const ReaperOptions& o) UZFS_EXCLUDES(mu_);

 private:
  void Run() UZFS_EXCLUDES(mu_);

  Arc& arc_;
  std::unique_ptr<MemorySource> source_;
  Mutex mu_;
  CondVar cv_;
  ReaperOptions opts_ UZFS_GUARDED_BY(mu_);
  bool stop_ UZFS_GUARDED_BY(mu_) = false;
  int calm_ = 0;  // only touched by Tick's caller
  std::thread thread_;
};

}  // namespace uzfs
