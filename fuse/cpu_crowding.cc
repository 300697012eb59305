// CpuCrowding (see cpu_crowding.h).
#include "fuse/cpu_crowding.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace uzfs {
namespace {
constexpr int64_t kTtlNs = 500'000;
int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

CpuCrowding::CpuCrowding(bool enabled)
    : cpus_(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN))),
      loadavg_(enabled ? ::open("/proc/loadavg", O_RDONLY | O_CLOEXEC) : -1) {}

CpuCrowding::~CpuCrowding() {
  if (loadavg_ >= 0) ::close(loadavg_);
}

bool CpuCrowding::Crowded() const {
  if (loadavg_ < 0) return false;
  const int64_t now = SteadyNs();
  int64_t at = read_at_.load(std::memory_order_relaxed);
  // One caller reads again when the verdict is stale; the others use it.
  if (now - at < kTtlNs || !read_at_.compare_exchange_strong(at, now, std::memory_order_relaxed)) {
    return verdict_.load(std::memory_order_relaxed);
  }
  const bool v = Read();
  verdict_.store(v, std::memory_order_relaxed);
  return v;
}

// /proc/loadavg is "1.00 0.50 0.25 R/T last-pid": R, the tasks running or
// waiting for a CPU right now (the caller among them).
bool CpuCrowding::Read() const {
  char b[128];
  const ssize_t n = ::pread(loadavg_, b, sizeof(b) - 1, 0);
  if (n <= 0) return false;
  b[n] = '\0';
  const char* p = b;
  for (int field = 0; field < 3 && p != nullptr; ++field) {
    p = std::strchr(p, ' ');
    if (p != nullptr) ++p;
  }
  return p != nullptr && std::strtol(p, nullptr, 10) > cpus_;
}

}  // namespace uzfs
