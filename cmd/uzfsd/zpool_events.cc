// zpool events and zpool clear (man/zpool.8).
//
// What they promise: `zpool events` lists the events of the pools named
// (every imported pool when none is) oldest first, in OpenZFS's layout
// ("TIME  CLASS", -v with the payload, -H tab-separated without the
// header), -c drops them, -f keeps printing new ones until the client
// leaves or the daemon stops. `zpool clear` sets the error counters of a
// pool's devices (or of the one named) back to zero.
#include <algorithm>
#include <ctime>
#include <map>
#include <thread>

#include "cmd/uzfsd/args.h"
#include "cmd/uzfsd/zpool_handlers.h"

namespace uzfs::cmd {

namespace {

// "Nov 28 2026 17:30:00.123456789", as zpool events prints times.
std::string EventTime(std::chrono::system_clock::time_point tp) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(tp.time_since_epoch()).count();
  const time_t secs = static_cast<time_t>(ns / 1000000000);
  struct tm tm;
  localtime_r(&secs, &tm);
  char buf[64], out[96];
  std::strftime(buf, sizeof buf, "%b %e %Y %H:%M:%S", &tm);
  std::snprintf(out, sizeof out, "%s.%09lld", buf, static_cast<long long>(ns % 1000000000));
  return out;
}

std::string EventText(const Pool::Event& e, bool verbose, bool scripted) {
  std::string t = EventTime(e.time) + (scripted ? "\t" : " ") + e.cls + "\n";
  if (!verbose) return t;
  for (const auto& [name, value] : e.payload) t += "        " + name + " = " + value + "\n";
  return t + "\n";
}

}  // namespace

int ZpoolEvents(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "vHfc", "");
  if (!a.error.empty()) return ZpoolUsage(c, "events", a.error);
  if (a.Has('c') && (a.Has('f') || a.Has('v'))) {
    return ZpoolUsage(c, "events", "invalid options combined with -c");
  }
  if (a.operands.size() > 1) return ZpoolUsage(c, "events", "too many arguments");
  std::vector<std::string> names = a.operands;
  if (names.empty()) {
    for (const auto& e : c.reg.All()) {
      MutexLock l(&e->mu);
      if (e->pool != nullptr) names.push_back(e->rec.name);
    }
  } else if (c.reg.Find(names[0]) == nullptr) {
    return c.Fail("cannot open '" + names[0] + "': no such pool");
  }
  if (a.Has('c')) {
    size_t n = 0;
    for (const std::string& name : names) {
      auto e = c.reg.Find(name);
      if (e == nullptr) continue;
      MutexLock l(&e->mu);
      if (e->pool != nullptr) n += e->pool->ClearEvents();
    }
    c.out.Out("cleared " + std::to_string(n) + " events\n");
    return 0;
  }
  const bool verbose = a.Has('v'), scripted = a.Has('H');
  if (!scripted) c.out.Out("TIME                           CLASS\n");
  std::map<std::string, uint64_t> shown;  // pool -> last eid printed
  for (;;) {
    std::vector<std::pair<std::string, Pool::Event>> fresh;
    for (const std::string& name : names) {
      auto e = c.reg.Find(name);
      if (e == nullptr) continue;
      MutexLock l(&e->mu);
      if (e->pool == nullptr) continue;
      for (Pool::Event& ev : e->pool->Events()) {
        if (ev.eid > shown[name]) fresh.emplace_back(name, std::move(ev));
      }
    }
    std::sort(fresh.begin(), fresh.end(), [](const auto& x, const auto& y) { return x.second.time < y.second.time; });
    for (const auto& [name, ev] : fresh) {
      c.out.Out(EventText(ev, verbose, scripted));
      shown[name] = std::max(shown[name], ev.eid);
    }
    if (!a.Has('f')) return 0;
    if (!c.out.Flush()) return 0;  // the client went away
    for (int i = 0; i < 10 && !c.stopping.load(); i++) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (c.stopping.load()) return 0;
  }
}

int ZpoolClear(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "", "");
  if (!a.error.empty()) return ZpoolUsage(c, "clear", a.error);
  if (a.operands.empty()) return ZpoolUsage(c, "clear", "missing pool name");
  if (a.operands.size() > 2) return ZpoolUsage(c, "clear", "too many arguments");
  auto e = c.reg.Find(a.operands[0]);
  if (e == nullptr) return c.Fail("cannot open '" + a.operands[0] + "': no such pool");
  MutexLock l(&e->mu);
  if (e->pool == nullptr) return c.Fail("cannot open '" + a.operands[0] + "': no such pool");
  const std::string dev = a.operands.size() == 2 ? a.operands[1] : "";
  if (Status s = e->pool->ClearErrors(dev); !s.ok()) {
    return c.Fail("cannot clear errors for " + dev + ": " + std::string(s.message()));
  }
  e->pool->LogHistory(c.cmdline);
  return 0;
}

}  // namespace uzfs::cmd
