// zinject as the daemon runs it (man/zinject.8): fault injection into the
// leaves of imported pools, for administrators and tests.
//
//   zinject                         lists the active injections
//   zinject -d DEV -e io|checksum|nxio [-T read|write|flush|all] [-f PCT] POOL
//   zinject -d DEV -D MS:LANES POOL
//   zinject -P import|export -s SECONDS POOL
//   zinject -c ID | -c all
//
// Every pool the daemon creates or imports is opened fault_injectable, so
// each leaf's device is a FaultDevice (Pool::LeafFaults) that does nothing
// until told. An injection ("handler") is remembered here with an id; the
// faults of one device are the sum of its handlers: clearing one handler
// clears the device and applies the others again. io and checksum faults hit
// only the data area of a leaf (not its labels), as in ZFS, so a leaf with
// read errors stays ONLINE and its errors count in `zpool status`; nxio makes
// the whole device vanish.
//
// Handlers die with their pool: one whose pool was exported (or imported
// again, with new devices) is dropped when next listed or cleared.
// A pool delay (-P) is kept by pool name instead: an import delay is set
// while the pool is not imported, and each is used up by the import or
// export it slows down (TakePoolDelay), so that tests can see `zpool
// import -a` open its pools in parallel.
//
// Locking: g_mu guards the handler list; it is taken after a pool entry's mu,
// never before it.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cmd/uzfsd/args.h"
#include "cmd/uzfsd/commands.h"
#include "zfs/util/mutex.h"
#include "zfs/vdev/fault_device.h"

namespace uzfs::cmd {
namespace {

struct Handler {
  uint64_t id = 0;
  std::weak_ptr<PoolEntry> entry;
  const Pool* pool = nullptr;  // identity: the pool object it was made on
  std::string pool_name;
  std::string device;  // the leaf's path
  std::string type;    // io, checksum, nxio, delay
  bool read = false, write = false, flush = false;
  double freq = 100.0;  // percent
  uint64_t delay_ms = 0;
  uint32_t lanes = 0;
};

// zinject -P: the next import or export of `pool` takes at least `seconds`.
struct PoolDelay {
  uint64_t id = 0;
  std::string pool;
  bool import = false;
  uint64_t seconds = 0;
};

Mutex g_mu;
uint64_t g_next_id UZFS_GUARDED_BY(g_mu) = 1;
std::vector<Handler> g_handlers UZFS_GUARDED_BY(g_mu);
std::vector<PoolDelay> g_pool_delays UZFS_GUARDED_BY(g_mu);

// The longest a pool delay may be: an import or export held for an hour
// is a mistake, not a test.
constexpr uint64_t kMaxPoolDelaySeconds = 3600;

const char kUsage[] =
    "usage:\n"
    "\tzinject\n"
    "\t\tList the active injection handlers.\n"
    "\tzinject -d device -e io|checksum|nxio [-T read|write|flush|all]\n"
    "\t\t[-f frequency] pool\n"
    "\t\tMake a leaf device fail I/O (io), return corrupted data\n"
    "\t\t(checksum) or vanish (nxio). frequency: percent of I/Os (default 100).\n"
    "\tzinject -d device -D latency:lanes pool\n"
    "\t\tMake every I/O of a leaf take latency milliseconds more, with at\n"
    "\t\tmost lanes I/Os served at once.\n"
    "\tzinject -P import|export -s seconds pool\n"
    "\t\tMake the next import or export of the pool take at least that many\n"
    "\t\tseconds. The handler is cleared when that import or export is done.\n"
    "\tzinject -c id|all\n"
    "\t\tClear the handler with that id, or every handler.\n";

int Usage(CmdCtx& c, const std::string& why) {
  if (!why.empty()) c.out.ErrLine(why);
  c.out.Err(kUsage);
  return 2;
}

bool ParseUint(const std::string& s, uint64_t* v) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

// The data area of a leaf: io and checksum faults leave the labels alone.
FaultRange DataRange(const FaultDevice& d) {
  const uint64_t size = d.Size();
  if (size <= kLeafFrontReserve + kLeafBackReserve) return FaultRange{};
  return FaultRange{kLeafFrontReserve, size - kLeafFrontReserve - kLeafBackReserve};
}

void Apply(FaultDevice* d, const Handler& h) {
  const FaultTrigger t = h.freq >= 100.0 ? FaultTrigger::Always() : FaultTrigger::WithProbability(h.freq / 100.0);
  const FaultRange r = DataRange(*d);
  if (h.type == "io") {
    if (h.read) d->FailReads(t, r);
    if (h.write) d->FailWrites(t, r);
    if (h.flush) d->FailFlushes(t);
  } else if (h.type == "checksum") {
    d->CorruptReads(t, r, 0x5a);
  } else if (h.type == "nxio") {
    d->Vanish();
  } else if (h.type == "delay") {
    d->SetLatency(std::chrono::milliseconds(h.delay_ms), h.lanes);
  }
}

// The entry's pool when it is still the one `h` was made on.
// REQUIRES: e->mu held.
Pool* LivePool(PoolEntry& e, const Handler& h) UZFS_REQUIRES(e.mu) {
  return e.pool && e.pool.get() == h.pool ? e.pool.get() : nullptr;
}

// Drops the handlers of pools that are gone; returns the live ones.
std::vector<Handler> LiveHandlers() {
  std::vector<Handler> all;
  {
    MutexLock l(&g_mu);
    all = g_handlers;
  }
  std::vector<uint64_t> dead;
  std::vector<Handler> live;
  for (const Handler& h : all) {
    auto e = h.entry.lock();
    bool ok = false;
    if (e) {
      MutexLock l(&e->mu);
      ok = LivePool(*e, h) != nullptr;
    }
    if (ok) {
      live.push_back(h);
    } else {
      dead.push_back(h.id);
    }
  }
  if (!dead.empty()) {
    MutexLock l(&g_mu);
    std::erase_if(g_handlers, [&](const Handler& h) UZFS_NO_THREAD_SAFETY_ANALYSIS -> bool {
      return std::find(dead.begin(), dead.end(), h.id) != dead.end();
    });
  }
  return live;
}

std::string IoTypes(const Handler& h) {
  if (h.type == "nxio" || h.type == "delay") return "-";
  if (h.type == "checksum") return "read";
  if (h.read && h.write && h.flush) return "all";
  std::string s;
  if (h.read) s += ",read";
  if (h.write) s += ",write";
  if (h.flush) s += ",flush";
  return s.empty() ? "-" : s.substr(1);
}

std::string FreqText(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", f);
  return buf;
}

int List(CmdCtx& c) {
  std::vector<Handler> hs = LiveHandlers();
  std::vector<PoolDelay> delays;
  {
    MutexLock l(&g_mu);
    delays = g_pool_delays;
  }
  if (hs.empty() && delays.empty()) {
    c.out.Out("No handlers registered.\n");
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const Handler& h : hs) {
    const bool delay = h.type == "delay";
    rows.push_back({std::to_string(h.id), h.pool_name, h.device, h.type, IoTypes(h),
                    delay ? "-" : FreqText(h.freq), delay ? std::to_string(h.delay_ms) : "-",
                    delay ? std::to_string(h.lanes) : "-"});
  }
  for (const PoolDelay& d : delays) {
    rows.push_back({std::to_string(d.id), d.pool, "-", d.import ? "import" : "export", "-", "-",
                    std::to_string(d.seconds * 1000), "-"});
  }
  std::sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) {
    return std::stoull(x[0]) < std::stoull(y[0]);
  });
  c.out.Out(RenderTable({{"ID", true},
                         {"POOL"},
                         {"DEVICE"},
                         {"TYPE"},
                         {"IO"},
                         {"FREQ", true},
                         {"DELAY_MS", true},
                         {"LANES", true}},
                        rows, false));
  return 0;
}

// Clears handler `id` (0: all). Each touched device is cleared and its
// remaining handlers applied again.
int Clear(CmdCtx& c, const std::string& what) {
  uint64_t id = 0;
  if (what != "all" && (!ParseUint(what, &id) || id == 0)) {
    return Usage(c, "invalid handler id '" + what + "': expected a number or 'all'");
  }
  std::vector<Handler> live = LiveHandlers();
  std::vector<Handler> gone;
  std::vector<Handler> keep;
  for (const Handler& h : live) (id == 0 || h.id == id ? gone : keep).push_back(h);
  bool delay_gone = false;
  {
    MutexLock l(&g_mu);
    delay_gone = std::erase_if(g_pool_delays, [id](const PoolDelay& d) { return id == 0 || d.id == id; }) > 0;
  }
  if (id != 0 && gone.empty() && !delay_gone) return c.Fail("no such handler " + what);
  {
    MutexLock l(&g_mu);
    std::erase_if(g_handlers, [&](const Handler& h) UZFS_NO_THREAD_SAFETY_ANALYSIS -> bool {
      return id == 0 || h.id == id;
    });
  }
  for (const Handler& g : gone) {
    auto e = g.entry.lock();
    if (!e) continue;
    MutexLock l(&e->mu);
    Pool* p = LivePool(*e, g);
    FaultDevice* d = p ? p->LeafFaults(g.device) : nullptr;
    if (d == nullptr) continue;
    d->ClearFaults();
    for (const Handler& k : keep) {
      if (k.pool == g.pool && k.device == g.device) Apply(d, k);
    }
  }
  if (id == 0) c.out.Out("removed all registered handlers\n");
  else c.out.Out("removed handler " + std::to_string(id) + "\n");
  return 0;
}

// The leaf of `pool` named by `dev`: its path, its path relative to the
// client's directory, its file name, or its guid.
std::string FindLeaf(Pool& pool, const std::string& dev, const std::string& abs) {
  std::vector<Vdev*> leaves;
  pool.root_vdev().CollectLeaves(&leaves);
  for (Vdev* v : leaves) {
    if (v->device() == nullptr) continue;
    const std::string& path = v->device()->path();
    const size_t slash = path.rfind('/');
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    if (path == dev || path == abs || base == dev || std::to_string(v->guid()) == dev) return path;
  }
  for (const CacheDeviceInfo& ci : pool.CacheDevices()) {  // cache (L2ARC) devices take faults too
    const size_t slash = ci.path.rfind('/');
    const std::string base = slash == std::string::npos ? ci.path : ci.path.substr(slash + 1);
    if (ci.path == dev || ci.path == abs || base == dev || std::to_string(ci.guid) == dev) return ci.path;
  }
  return "";
}

// zinject -P import|export -s SECONDS POOL. An import delay is for a pool
// that is not imported (it slows down its coming import); an export delay
// for one that is.
int InjectPoolDelay(CmdCtx& c, const ParsedArgs& a) {
  if (a.Has('d') || a.Has('e') || a.Has('D') || a.Has('T') || a.Has('f')) {
    return Usage(c, "-P takes only -s and a pool");
  }
  if (a.operands.size() != 1) return Usage(c, a.operands.empty() ? "missing pool name" : "too many arguments");
  const std::string op = a.Values('P').back();
  if (op != "import" && op != "export") return Usage(c, "invalid operation '" + op + "': must be 'import' or 'export'");
  if (!a.Has('s')) return Usage(c, "-P requires -s seconds");
  uint64_t seconds = 0;
  const std::string v = a.Values('s').back();
  if (!ParseUint(v, &seconds) || seconds == 0 || seconds > kMaxPoolDelaySeconds) {
    return Usage(c, "invalid delay '" + v + "': expected whole seconds, 1 to " + std::to_string(kMaxPoolDelaySeconds));
  }
  PoolDelay d;
  d.pool = a.operands[0];
  d.import = op == "import";
  d.seconds = seconds;
  auto e = c.reg.Find(d.pool);
  bool imported = false;
  if (e) {
    MutexLock l(&e->mu);
    imported = e->pool != nullptr;
  }
  if (d.import && imported) return c.Fail("cannot inject an import delay: pool '" + d.pool + "' is already imported");
  if (!d.import && !imported) return c.Fail("cannot open '" + d.pool + "': no such pool");
  {
    MutexLock g(&g_mu);
    d.id = g_next_id++;
    g_pool_delays.push_back(d);
  }
  c.out.Out("Added handler " + std::to_string(d.id) + ": " + op + " delay of " + std::to_string(seconds) +
            " s, pool " + d.pool + "\n");
  return 0;
}

int Inject(CmdCtx& c, const ParsedArgs& a) {
  if (a.operands.size() != 1) {
    return Usage(c, a.operands.empty() ? "missing pool name" : "too many arguments");
  }
  const std::string pool_name = a.operands[0];
  const std::string dev = a.Values('d').back();
  Handler h;
  const bool delay = a.Has('D');
  if (delay == a.Has('e')) return Usage(c, delay ? "-e and -D cannot be combined" : "missing -e or -D");
  if (delay) {
    if (a.Has('T') || a.Has('f')) return Usage(c, "-T and -f do not apply to -D");
    const std::string v = a.Values('D').back();
    const size_t colon = v.find(':');
    uint64_t ms = 0, lanes = 0;
    if (colon == std::string::npos || !ParseUint(v.substr(0, colon), &ms) ||
        !ParseUint(v.substr(colon + 1), &lanes) || ms == 0 || lanes == 0 || ms > 10000 || lanes > 1024) {
      return Usage(c, "invalid latency '" + v + "': expected <milliseconds>:<lanes>, both at least 1");
    }
    h.type = "delay";
    h.delay_ms = ms;
    h.lanes = static_cast<uint32_t>(lanes);
  } else {
    h.type = a.Values('e').back();
    if (h.type != "io" && h.type != "checksum" && h.type != "nxio") {
      return Usage(c, "invalid error type '" + h.type + "': must be 'io', 'checksum' or 'nxio'");
    }
    const std::string t = a.Has('T') ? a.Values('T').back() : (h.type == "io" ? "all" : "read");
    if (t == "read") h.read = true;
    else if (t == "write") h.write = true;
    else if (t == "flush") h.flush = true;
    else if (t == "all") h.read = h.write = h.flush = true;
    else return Usage(c, "invalid I/O type '" + t + "': must be 'read', 'write', 'flush' or 'all'");
    if (h.type == "checksum" && !h.read) return Usage(c, "checksum errors can only be injected into reads");
    if (a.Has('f')) {
      const std::string f = a.Values('f').back();
      char* end = nullptr;
      const double v = std::strtod(f.c_str(), &end);
      if (f.empty() || *end != '\0' || !(v > 0.0 && v <= 100.0)) {
        return Usage(c, "invalid frequency '" + f + "': must be a percentage above 0, at most 100");
      }
      h.freq = v;
    }
  }
  auto e = c.reg.Find(pool_name);
  if (!e) return c.Fail("cannot open '" + pool_name + "': no such pool");
  MutexLock l(&e->mu);
  if (!e->pool) return c.Fail("cannot open '" + pool_name + "': no such pool");
  const std::string path = FindLeaf(*e->pool, dev, dev.find('/') != std::string::npos ? AbsPath(c.cwd, dev) : dev);
  FaultDevice* d = path.empty() ? nullptr : e->pool->LeafFaults(path);
  if (path.empty()) return c.Fail("cannot find device '" + dev + "' in pool '" + pool_name + "'");
  if (d == nullptr) return c.Fail("cannot inject into '" + dev + "': the pool was not opened for fault injection");
  h.entry = e;
  h.pool = e->pool.get();
  h.pool_name = pool_name;
  h.device = path;
  {
    MutexLock g(&g_mu);
    h.id = g_next_id++;
    g_handlers.push_back(h);
  }
  Apply(d, h);
  c.out.Out("Added handler " + std::to_string(h.id) + ": " +
            (delay           ? std::to_string(h.delay_ms) + " ms latency, " + std::to_string(h.lanes) + " lane(s)"
             : h.type == "nxio" ? std::string("device vanished (ENXIO)")
                                : h.type + " faults on " + IoTypes(h) + ", " + FreqText(h.freq) + "%") +
            ", device " + path + ", pool " + pool_name + "\n");
  return 0;
}

}  // namespace

std::chrono::seconds TakePoolDelay(const std::string& pool, bool import) {
  MutexLock l(&g_mu);
  auto it = std::find_if(g_pool_delays.begin(), g_pool_delays.end(),
                         [&](const PoolDelay& d) { return d.pool == pool && d.import == import; });
  if (it == g_pool_delays.end()) return std::chrono::seconds(0);
  const auto s = std::chrono::seconds(it->seconds);
  g_pool_delays.erase(it);
  return s;
}

int RunZinject(Registry& reg, Output& out, const Request& req, const std::atomic<bool>& stopping) {
  std::string cmdline = "zinject";
  for (const std::string& w : req.argv) cmdline += " " + w;
  CmdCtx c{reg, out, req.argv, req.cwd, cmdline, stopping};
  const ParsedArgs a = ParseArgs(c.args, "cdDefTPsh?", "cdDefTPs");
  if (!a.error.empty()) return Usage(c, a.error);
  if (a.Has('h') || a.Has('?')) {
    out.Out(kUsage);
    return 0;
  }
  if (a.Has('c')) {
    if (a.Has('d') || a.Has('e') || a.Has('D') || a.Has('T') || a.Has('f') || a.Has('P') || a.Has('s') ||
        !a.operands.empty()) {
      return Usage(c, "-c takes no other options or arguments");
    }
    return Clear(c, a.Values('c').back());
  }
  if (a.Has('P')) return InjectPoolDelay(c, a);
  if (a.Has('s')) return Usage(c, "-s applies only to -P");
  if (a.Has('d')) return Inject(c, a);
  if (a.Has('e') || a.Has('D') || a.Has('T') || a.Has('f')) return Usage(c, "missing -d device");
  if (!a.operands.empty()) return Usage(c, "missing -d device");
  return List(c);
}

}  // namespace uzfs::cmd
