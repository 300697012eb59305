// The ARC reaper (see arc_reaper.h).
#include "cache/arc_reaper.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "zfs/util/cgroup_memory.h"

namespace uzfs {

namespace {

Result<std::string> Slurp(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Status::NotFound("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The number after "<key>:" in meminfo text, in bytes (values are kB).
bool MeminfoField(std::string_view text, std::string_view key, uint64_t* out) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ':') {
      std::string rest(line.substr(key.size() + 1));
      char* end = nullptr;
      const unsigned long long v = std::strtoull(rest.c_str(), &end, 10);
      if (end == rest.c_str()) return false;
      *out = static_cast<uint64_t>(v) * 1024;
      return true;
    }
  }
  return false;
}

class ProcSource : public MemorySource {
 public:
  ProcSource(std::string meminfo, std::string psi, std::optional<CgroupProcFiles> cgroup)
      : meminfo_(std::move(meminfo)), psi_(std::move(psi)), cgroup_(std::move(cgroup)) {}
  Result<MemorySnapshot> Read() override {
    UZFS_ASSIGN_OR_RETURN(std::string mi, Slurp(meminfo_));
    MemorySnapshot s;
    UZFS_RETURN_IF_ERROR(ParseMeminfo(mi, &s));
    // In a cgroup with a memory limit (a container), that limit and what
    // is left of it are what the kernel kills the daemon by.
    if (cgroup_) {
      const std::optional<CgroupMemoryLimit> cg = ReadCgroupMemoryLimit(*cgroup_);
      if (cg) {
        s.total = std::min(s.total, cg->limit);
        s.available = std::min(s.available, cg->headroom);
      }
    }
    Result<std::string> p = Slurp(psi_);
    if (p.ok()) {
      Result<double> v = ParsePsiSomeAvg10(*p);
      if (v.ok()) s.psi_some_avg10 = *v;
    }
    return s;
  }

 private:
  std::string meminfo_, psi_;
  std::optional<CgroupProcFiles> cgroup_;
};

}  // namespace

Status ParseMeminfo(std::string_view text, MemorySnapshot* out) {
  if (!MeminfoField(text, "MemTotal", &out->total)) return Status::Corruption("meminfo: no MemTotal");
  if (!MeminfoField(text, "MemAvailable", &out->available)) {
    uint64_t free = 0;
    if (!MeminfoField(text, "MemFree", &free)) return Status::Corruption("meminfo: no MemAvailable");
    out->available = free;
  }
  return Status::Ok();
}

Result<double> ParsePsiSomeAvg10(std::string_view text) {
  const size_t at = text.find("some ");
  if (at == std::string_view::npos) return Status::Corruption("psi: no 'some' line");
  const size_t a = text.find("avg10=", at);
  if (a == std::string_view::npos) return Status::Corruption("psi: no avg10");
  std::string num(text.substr(a + 6, 16));
  char* end = nullptr;
  const double v = std::strtod(num.c_str(), &end);
  if (end == num.c_str()) return Status::Corruption("psi: bad avg10");
  return v;
}

std::unique_ptr<MemorySource> ProcMemorySource(std::string meminfo, std::string psi,
                                               std::optional<CgroupProcFiles> cgroup) {
  return std::make_unique<ProcSource>(std::move(meminfo), std::move(psi), std::move(cgroup));
}

ArcReaper::ArcReaper(Arc& arc, std::unique_ptr<MemorySource> source, const ReaperOptions& opts)
    : arc_(arc), source_(std::move(source)), opts_(opts) {}

ArcReaper::~ArcReaper() { Stop(); }

void ArcReaper::Start() {
  MutexLock l(&mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Run(); });
}

void ArcReaper::Stop() {
  {
    MutexLock l(&mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

void ArcReaper::SetOptions(const ReaperOptions& o) {
  MutexLock l(&mu_);
  opts_ = o;
}

void ArcReaper::Run() {
  for (;;) {
    {
      MutexLock l(&mu_);
      if (stop_) return;
      cv_.WaitFor(&mu_, opts_.interval);
      if (stop_) return;
    }
    Tick();
  }
}

uint64_t ArcReaper::Tick() {
  ReaperOptions o;
  {
    MutexLock l(&mu_);
    o = opts_;
  }
  Result<MemorySnapshot> r = source_->Read();
  if (!r.ok()) return 0;  // no reading, no action
  const MemorySnapshot& m = *r;
  const uint64_t want_free = o.sys_free ? o.sys_free : m.total / 16;
  const bool low = m.available < want_free;
  const bool psi = m.psi_some_avg10 >= 0 && m.psi_some_avg10 > o.psi_threshold;
  if (!low && !psi) {
    if (++calm_ >= o.calm_ticks_to_grow) arc_.SetNoGrow(false);
    return 0;
  }
  calm_ = 0;
  const uint64_t c = arc_.Target();
  uint64_t to_free = c >> o.shrink_shift;
  if (low) to_free = std::max(to_free, want_free - m.available);
  arc_.CountMemoryThrottle();
  const uint64_t nc = arc_.ReduceTarget(to_free);
  return c - nc;
}

}  // namespace uzfs
