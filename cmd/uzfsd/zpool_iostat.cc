// zpool iostat (man/zpool.8): capacity and the read/write operations and
// bytes a second since the previous report (the first: since import), -v
// with a row a vdev; with an interval it repeats until the count is done,
// the client goes away or the daemon stops.
#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "cmd/uzfsd/args.h"
#include "cmd/uzfsd/zpool_handlers.h"
#include "cmd/uzfsd/zpool_report.h"
#include "zfs/dsl/pool_space.h"

namespace uzfs::cmd {

namespace {

struct IoSample {
  uint64_t rops = 0, wops = 0, rbytes = 0, wbytes = 0;
  std::chrono::steady_clock::time_point at;
};

IoSample Sample(Pool& p) {
  const ZioStats& s = p.zio().stats();
  IoSample x;
  x.rops = s.blocks_read.load();
  x.wops = s.blocks_written.load();
  x.rbytes = s.logical_read.load();
  x.wbytes = s.physical_written.load();
  x.at = std::chrono::steady_clock::now();
  return x;
}

}  // namespace

int ZpoolIostat(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "vHpyn", "T");
  if (!a.error.empty()) return ZpoolUsage(c, "iostat", a.error);
  std::vector<std::string> names = a.operands;
  uint64_t interval = 0, count = 0;
  bool have_count = false;
  uint64_t n;
  if (!names.empty() && ParseU64(names.back(), &n)) {
    interval = n;
    names.pop_back();
    if (!names.empty() && ParseU64(names.back(), &n)) {
      count = interval;
      interval = n;
      have_count = true;
      names.pop_back();
    }
  }
  if (interval == 0 && !a.operands.empty() && ParseU64(a.operands.back(), &n) && n == 0) {
    return ZpoolUsage(c, "iostat", "interval cannot be zero");
  }
  if (have_count && count == 0) return c.Fail("count cannot be zero");
  const bool verbose = a.Has('v'), parsable = a.Has('p'), scripted = a.Has('H');
  std::map<std::string, IoSample> last;
  std::map<const Vdev*, Vdev::IoCounters> last_vdev;  // -v rows, by vdev
  for (uint64_t iter = 0;; iter++) {
    int rc = 0;
    auto pools = SelectPools(c, names, &rc);
    if (rc != 0) return rc;
    if (pools.empty()) {
      c.out.ErrLine("no pools available");
      return 0;
    }
    struct Line {
      std::string name;
      std::vector<std::string> v;
    };
    std::vector<std::vector<Line>> blocks;
    size_t w = 10;
    auto num = [&](uint64_t x) { return parsable ? std::to_string(x) : NiceSize(x); };
    for (const auto& e : pools) {
      MutexLock l(&e->mu);
      if (e->pool == nullptr) continue;
      auto sp = PoolListSpace(*e->pool);
      if (!sp.ok()) continue;
      const IoSample now = Sample(*e->pool);
      IoSample prev;
      auto it = last.find(e->rec.name);
      if (it != last.end()) {
        prev = it->second;
      } else {
        prev.at = e->since;
      }
      last[e->rec.name] = now;
      const double secs = std::max(1e-3, std::chrono::duration<double>(now.at - prev.at).count());
      auto rate = [&](uint64_t a1, uint64_t a0) { return num(static_cast<uint64_t>(static_cast<double>(a1 - a0) / secs)); };
      std::vector<Line> block;
      block.push_back(Line{e->rec.name,
                           {num(sp->alloc), num(sp->free), rate(now.rops, prev.rops), rate(now.wops, prev.wops),
                            rate(now.rbytes, prev.rbytes), rate(now.wbytes, prev.wbytes)}});
      if (verbose) {
        for (const VdevRow& vr : TreeRows(*e, true)) {
          if (vr.spare) continue;  // spares have no I/O statistics
          Line ln{std::string(static_cast<size_t>(vr.depth) * 2, ' ') + vr.name, {"-", "-", "-", "-", "-", "-"}};
          if (vr.vdev == nullptr && !vr.state.empty()) {  // a cache device: the L2ARC's bytes on it
            for (const CacheDeviceInfo& ci : e->pool->CacheDevices()) {
              if (ci.path == vr.name && ci.size > 0) {
                ln.v[0] = num(ci.alloc);
                ln.v[1] = num(ci.size - std::min(ci.alloc, ci.size));
              }
            }
          }
          if (vr.vdev != nullptr) {
            const Vdev::IoCounters io = vr.vdev->io_counters();
            const Vdev::IoCounters was = last_vdev[vr.vdev];  // zeros at first: since import
            last_vdev[vr.vdev] = io;
            ln.v[2] = rate(io.read_ops, was.read_ops);
            ln.v[3] = rate(io.write_ops, was.write_ops);
            ln.v[4] = rate(io.read_bytes, was.read_bytes);
            ln.v[5] = rate(io.write_bytes, was.write_bytes);
          }
          if (vr.top) {
            for (const PoolSpaceVdev& sv : sp->vdevs) {
              if (sv.vdev_id == vr.vdev->id()) {
                ln.v[0] = num(sv.alloc);
                ln.v[1] = num(sv.free);
              }
            }
          }
          block.push_back(ln);
        }
      }
      for (const Line& ln : block) w = std::max(w, ln.name.size());
      blocks.push_back(std::move(block));
    }
    std::string t;
    const std::string dashes = std::string(w, '-') + "  -----  -----  -----  -----  -----  -----\n";
    if (!scripted && (iter == 0 || !a.Has('n'))) {
      t += std::string(w + 4, ' ') + "capacity     operations     bandwidth\n";
      std::string hdr = "pool";  // "vdev" when vdevs are named: not supported yet
      hdr.resize(w, ' ');
      t += hdr + "  alloc   free   read  write   read  write\n" + dashes;
    }
    for (const auto& block : blocks) {
      for (const Line& ln : block) {
        if (scripted) {
          t += ln.name;
          for (const std::string& v : ln.v) t += "\t" + v;
          t += "\n";
          continue;
        }
        std::string s = ln.name;
        s.resize(w, ' ');
        for (const std::string& v : ln.v) {
          s += "  ";
          if (v.size() < 5) s.append(5 - v.size(), ' ');
          s += v;
        }
        t += s + "\n";
      }
      if (verbose && !scripted) t += dashes;
    }
    if (!(a.Has('y') && iter == 0 && interval != 0)) c.out.Out(t);
    if (interval == 0) return 0;
    if (have_count && iter + 1 >= count) return 0;
    if (!c.out.Flush()) return 1;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(interval);
    while (std::chrono::steady_clock::now() < until) {
      if (c.stopping.load()) return 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

}  // namespace uzfs::cmd
