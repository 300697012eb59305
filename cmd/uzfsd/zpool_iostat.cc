// zpool iostat (man/zpool.8): capacity and the read/write operations and
// bytes a second since the previous report (the first: since import), -v
// with a row a vdev; -l adds average latencies and -q queue depths to each
// row; -w prints latency histograms and -r request size histograms instead,
// a table a pool (and with -v a vdev). With an interval it repeats until
// the count is done, the client goes away or the daemon stops.
//
// Where the numbers come from: operations and bytes from the pool's ZIO
// counters and each vdev's own (Vdev::io_counters); latencies, sizes and
// queues from the leaves' statistics (zfs/vdev/vdev_io_stats.h), an
// interior vdev's and the pool's being its leaves' sum. As OpenZFS does,
// -l averages the histograms' I/O since the previous report (each bucket
// at its midpoint), -w and -r show counts since import in the first report
// and counts a second after it, and -q shows the queues as they are now.
// Cache devices have no such statistics: their cells show "-".
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <thread>

#include "cmd/uzfsd/args.h"
#include "cmd/uzfsd/iostat_layout.h"
#include "cmd/uzfsd/zpool_handlers.h"
#include "cmd/uzfsd/zpool_report.h"
#include "zfs/dsl/pool_space.h"

namespace uzfs::cmd {

namespace {

struct IoSample {
  uint64_t rops = 0, wops = 0, rbytes = 0, wbytes = 0;
  std::chrono::steady_clock::time_point at;
  IoStatsSnapshot ex;  // the pool's: its leaves' statistics summed
};

IoSample Sample(Pool& p) {
  const ZioStats& s = p.zio().stats();
  IoSample x;
  x.rops = s.blocks_read.load();
  x.wops = s.blocks_written.load();
  x.rbytes = s.logical_read.load();
  x.wbytes = s.physical_written.load();
  x.ex = p.root_vdev().io_stats();
  x.at = std::chrono::steady_clock::now();
  return x;
}

// What a vdev row showed last time, for the next report's differences.
struct VdevSample {
  Vdev::IoCounters io;
  IoStatsSnapshot ex;
};

struct Flags {
  bool verbose = false, parsable = false, scripted = false;
  bool latency = false, queues = false, latency_histo = false, size_histo = false;
};

constexpr size_t Cls(IoClass c) { return static_cast<size_t>(c); }
constexpr IoClass kClassOrder[] = {IoClass::kSyncRead,   IoClass::kSyncWrite, IoClass::kAsyncRead,
                                   IoClass::kAsyncWrite, IoClass::kScrub,     IoClass::kTrim,
                                   IoClass::kRebuild};

// -l: total and disk wait (read, write), the four queues' wait, then
// scrub, trim and rebuild wait.
std::vector<std::string> LatencyCells(const IoStatsSnapshot& d, bool parsable) {
  auto t = [&](uint64_t ns) { return parsable ? (ns == 0 ? std::string("-") : std::to_string(ns)) : NiceTime(ns); };
  std::vector<std::string> v = {t(HistogramAverage(d.total[0])), t(HistogramAverage(d.total[1])),
                                t(HistogramAverage(d.disk[0])), t(HistogramAverage(d.disk[1]))};
  for (IoClass c : kClassOrder) v.push_back(t(HistogramAverage(d.queue[Cls(c)])));
  return v;
}

// -q: pending and active requests of each class.
std::vector<std::string> QueueCells(const IoStatsSnapshot& s, bool parsable) {
  auto n = [&](uint64_t x) { return parsable ? std::to_string(x) : NiceSize(x); };
  std::vector<std::string> v;
  for (IoClass c : kClassOrder) {
    v.push_back(n(s.pending[Cls(c)]));
    v.push_back(n(s.active[Cls(c)]));
  }
  return v;
}

// One -w or -r table: `name`'s histograms (counts times `scale`).
std::string HistogramTable(const std::string& name, size_t namewidth, const IoStatsSnapshot& d, double scale,
                           const Flags& f) {
  const IostatGroup g = f.latency_histo ? IostatGroup::kLatencyHisto : IostatGroup::kSizeHisto;
  std::vector<std::span<const uint64_t>> cols;
  size_t first = 0, last = 0;
  if (f.latency_histo) {
    for (const auto& h : d.total) cols.emplace_back(h);
    for (const auto& h : d.disk) cols.emplace_back(h);
    for (IoClass c : kClassOrder) cols.emplace_back(d.queue[Cls(c)]);
    last = kLatencyBuckets;
  } else {
    for (IoClass c : kClassOrder) {
      cols.emplace_back(d.size_ind[Cls(c)]);
      cols.emplace_back(d.size_agg[Cls(c)]);
    }
    first = 9;  // 512 bytes: no request is smaller
    last = kSizeBuckets;
  }
  uint64_t most = 0;
  for (const auto& col : cols) most = std::max(most, *std::max_element(col.begin(), col.end()));
  const unsigned width =
      f.parsable ? std::max(5u, most == 0 ? 1u : static_cast<unsigned>(std::log10(static_cast<double>(most))) + 1)
                 : 5u;
  const std::string title = f.latency_histo ? "latency" : "req_size";
  const size_t nw = std::max({namewidth, title.size(), name.size()});
  std::string t = "\n";
  if (f.scripted) {
    t += name + "\n";
  } else {
    t += IostatTopLine(name, nw, {g}, f.parsable, width) + "\n";
    t += IostatBottomLine(title, nw, {g}, f.parsable, width) + "\n";
    t += IostatDashes(nw, {g}, f.parsable, width) + "\n";
  }
  for (size_t j = first; j < last; j++) {
    // A latency row is named by the end of its bucket, a size row by its start.
    const uint64_t label = f.latency_histo ? (uint64_t{2} << j) - 1 : uint64_t{1} << j;
    if (f.scripted) {
      t += std::to_string(label);
    } else {
      std::string l = f.latency_histo ? NiceTime(label) : NiceSize(label);
      l.resize(std::max(nw, l.size()), ' ');
      t += l;
    }
    for (const auto& col : cols) {
      const auto v = static_cast<uint64_t>(static_cast<double>(col[j]) * scale);
      const std::string s = f.parsable ? std::to_string(v) : NiceSize(v);
      t += f.scripted ? "\t" + s : IostatCell(s, width);
    }
    t += "\n";
  }
  if (!f.scripted) t += std::string(nw + (width + 2) * IostatBottomLabels(g).size(), '-') + "\n";
  return t;
}

}  // namespace

std::string TimestampLine(char fmt) {
  const std::time_t now = std::time(nullptr);
  if (fmt == 'u') return std::to_string(static_cast<long long>(now)) + "\n";
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[128];
  if (std::strftime(buf, sizeof buf, "%a %b %e %H:%M:%S %Z %Y", &tm) == 0) return "\n";
  return std::string(buf) + "\n";
}

int ZpoolIostat(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "vHpynlqwr", "T");
  if (!a.error.empty()) return ZpoolUsage(c, "iostat", a.error);
  Flags f;
  f.verbose = a.Has('v');
  f.parsable = a.Has('p');
  f.scripted = a.Has('H');
  f.latency = a.Has('l');
  f.queues = a.Has('q');
  f.latency_histo = a.Has('w');
  f.size_histo = a.Has('r');
  if ((f.latency_histo || f.size_histo) && (f.latency || f.queues))
    return ZpoolUsage(c, "iostat", "[-r|-w] isn't allowed with [-c|-l|-q]");
  if (f.latency_histo && f.size_histo) return ZpoolUsage(c, "iostat", "Only one of [-r|-w] can be passed at a time");
  char stamp = 0;
  if (a.Has('T')) {
    const std::string t = a.Values('T').back();
    if (t != "u" && t != "d") return ZpoolUsage(c, "iostat", "invalid timestamp format '" + t + "'");
    stamp = t[0];
  }
  const bool histo = f.latency_histo || f.size_histo;
  std::vector<IostatGroup> groups = {IostatGroup::kDefault};
  if (f.latency) groups.push_back(IostatGroup::kLatency);
  if (f.queues) groups.push_back(IostatGroup::kQueues);
  size_t columns = 0;  // cells a row has
  for (IostatGroup g : groups) columns += IostatBottomLabels(g).size();

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
  std::map<std::string, IoSample> last;
  std::map<const Vdev*, VdevSample> last_vdev;  // -v rows, by vdev
  bool header_shown = false;
  uint64_t reports = 0;
  for (uint64_t iter = 0;; iter++) {
    int rc = 0;
    auto pools = SelectPools(c, names, &rc);
    if (rc != 0) return rc;
    if (pools.empty()) {
      c.out.ErrLine("no pools available");
      return 0;
    }
    // A row: its name (indented) and its cells, group after group.
    struct Line {
      std::string name;
      std::vector<std::string> v;
      bool header = false;  // a class's heading ("logs", "cache"): every cell "-"
      size_t indent = 0;    // two spaces a level below the pool (not with -H, as OpenZFS)
    };
    std::vector<std::vector<Line>> blocks;
    std::string tables;  // -w / -r
    size_t w = 10;
    auto num = [&](uint64_t x) { return f.parsable ? std::to_string(x) : NiceSize(x); };
    const std::string na = f.parsable ? "0" : "-";  // a capacity a vdev below the top level lacks
    // -l's cells of the I/O between two snapshots, -q's of the later one.
    auto extend = [&](Line* ln, const IoStatsSnapshot& now_ex, const IoStatsSnapshot& prev_ex) {
      if (f.latency) {
        for (std::string& s : LatencyCells(now_ex.Since(prev_ex), f.parsable)) ln->v.push_back(std::move(s));
      }
      if (f.queues) {
        for (std::string& s : QueueCells(now_ex, f.parsable)) ln->v.push_back(std::move(s));
      }
    };
    // Pass 1: every name's width (the histograms' tables share it too).
    for (const auto& e : pools) {
      MutexLock l(&e->mu);
      if (e->pool == nullptr) continue;
      w = std::max(w, e->rec.name.size());
      if (!f.verbose) continue;
      for (const VdevRow& vr : TreeRows(*e, true)) {
        if (!vr.spare) w = std::max(w, static_cast<size_t>(vr.depth) * 2 + vr.name.size());
      }
    }
    for (const auto& e : pools) {
      MutexLock l(&e->mu);
      if (e->pool == nullptr) continue;
      auto sp = PoolListSpace(*e->pool);
      if (!sp.ok()) continue;
      const IoSample now = Sample(*e->pool);
      IoSample prev;
      auto it = last.find(e->rec.name);
      const bool first = it == last.end();
      if (!first) {
        prev = it->second;
      } else {
        prev.at = e->since;
      }
      last[e->rec.name] = now;
      const double secs = std::max(1e-3, std::chrono::duration<double>(now.at - prev.at).count());
      auto rate = [&](uint64_t a1, uint64_t a0) { return num(static_cast<uint64_t>(static_cast<double>(a1 - a0) / secs)); };
      // Histogram counts: since import in the first report, a second after.
      const double scale = first ? 1.0 : 1.0 / secs;
      if (histo) {
        tables += HistogramTable(e->rec.name, w, now.ex.Since(prev.ex), scale, f);
        if (!f.verbose) continue;
        for (const VdevRow& vr : TreeRows(*e, false)) {
          if (vr.vdev == nullptr) {  // the logs heading: an empty line, as OpenZFS
            tables += "\n";
            continue;
          }
          const IoStatsSnapshot ex = vr.vdev->io_stats();
          auto was = last_vdev.find(vr.vdev);
          const IoStatsSnapshot d = was == last_vdev.end() ? ex : ex.Since(was->second.ex);
          last_vdev[vr.vdev].ex = ex;
          tables += HistogramTable(vr.name, w, d, was == last_vdev.end() ? 1.0 : scale, f);
        }
        continue;
      }
      std::vector<Line> block;
      Line pool_line{e->rec.name,
                     {num(sp->alloc), num(sp->free), rate(now.rops, prev.rops), rate(now.wops, prev.wops),
                      rate(now.rbytes, prev.rbytes), rate(now.wbytes, prev.wbytes)}};
      extend(&pool_line, now.ex, prev.ex);
      block.push_back(std::move(pool_line));
      if (f.verbose) {
        for (const VdevRow& vr : TreeRows(*e, true)) {
          if (vr.spare) continue;  // spares have no I/O statistics
          if (vr.vdev == nullptr && vr.state.empty()) {
            block.push_back(Line{vr.name, std::vector<std::string>(columns, "-"), true});
            continue;
          }
          Line ln{vr.name, {na, na, "-", "-", "-", "-"}, false, static_cast<size_t>(vr.depth) * 2};
          if (vr.vdev == nullptr) {  // a cache device: the L2ARC's bytes on it
            for (const CacheDeviceInfo& ci : e->pool->CacheDevices()) {
              if (ci.path == vr.name && ci.size > 0) {
                ln.v[0] = num(ci.alloc);
                ln.v[1] = num(ci.size - std::min(ci.alloc, ci.size));
              }
            }
            ln.v.resize(columns, "-");  // no latencies or queues of its own
            block.push_back(std::move(ln));
            continue;
          }
          const Vdev::IoCounters io = vr.vdev->io_counters();
          const IoStatsSnapshot ex = vr.vdev->io_stats();
          VdevSample& was = last_vdev[vr.vdev];  // zeros at first: since import
          ln.v[2] = rate(io.read_ops, was.io.read_ops);
          ln.v[3] = rate(io.write_ops, was.io.write_ops);
          ln.v[4] = rate(io.read_bytes, was.io.read_bytes);
          ln.v[5] = rate(io.write_bytes, was.io.write_bytes);
          if (vr.top) {
            for (const PoolSpaceVdev& sv : sp->vdevs) {
              if (sv.vdev_id == vr.vdev->id()) {
                ln.v[0] = num(sv.alloc);
                ln.v[1] = num(sv.free);
              }
            }
          }
          extend(&ln, ex, was.ex);
          was.io = io;
          was.ex = ex;
          block.push_back(std::move(ln));
        }
      }
      blocks.push_back(std::move(block));
    }
    std::string t;
    if (stamp != 0) t += TimestampLine(stamp);
    if (histo) {
      t += tables;
    } else {
      const std::string dashes = IostatDashes(w, groups, f.parsable) + "\n";
      if (!f.scripted && (!header_shown || !a.Has('n'))) {
        t += IostatTopLine("", w, groups, f.parsable) + "\n";
        t += IostatBottomLine("pool", w, groups, f.parsable) + "\n" + dashes;  // "vdev" when vdevs are named: not supported yet
      }
      for (const auto& block : blocks) {
        for (const Line& ln : block) {
          if (ln.header && f.scripted) {
            t += "\n";  // as OpenZFS: the heading's place, empty
            continue;
          }
          if (f.scripted) {
            t += ln.name;
            for (const std::string& v : ln.v) t += "\t" + v;
            t += "\n";
            continue;
          }
          std::string s = std::string(ln.indent, ' ') + ln.name;
          s.resize(std::max(w, s.size()), ' ');
          size_t k = 0;
          for (IostatGroup g : groups) {
            const unsigned cw = IostatColumnWidth(g, f.parsable);
            for (size_t i = 0; i < IostatBottomLabels(g).size() && k < ln.v.size(); i++) s += IostatCell(ln.v[k++], cw);
          }
          t += s + "\n";
        }
        if (f.verbose && !f.scripted) t += dashes;
      }
      // Several pools without -v: a closing line under them.
      if (blocks.size() > 1 && !f.verbose && !f.scripted) t += dashes;
    }
    // -y: the first report (since import) is not shown, nor counted.
    const bool skipped = a.Has('y') && iter == 0 && interval != 0;
    if (!skipped) {
      c.out.Out(t);
      header_shown = true;
      reports++;
    }
    if (interval == 0) return 0;
    if (have_count && reports >= count) return 0;
    if (!c.out.Flush()) return 1;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(interval);
    while (std::chrono::steady_clock::now() < until) {
      if (c.stopping.load()) return 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

}  // namespace uzfs::cmd
