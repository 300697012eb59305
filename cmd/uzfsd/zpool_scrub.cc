// zpool scrub, zpool wait and the scan lines of zpool status (man/zpool.8);
// the scan lines speak of a scrub or a resilver as the record says.
//
// What they promise: `zpool scrub` starts, pauses (-p), resumes (again
// without -p) or cancels (-s) the scrub of each pool named, with OpenZFS's
// messages for what cannot be done ("currently scrubbing", "there is no
// active scrub"); -w, and `zpool wait -t scrub`, return once no scrub runs.
// Waiting never holds a pool's lock: the pool is looked up again on every
// poll, so an export meanwhile ends the wait instead of blocking it.
#include <algorithm>
#include <ctime>
#include <thread>

#include "cmd/uzfsd/args.h"
#include "cmd/uzfsd/output.h"
#include "cmd/uzfsd/zpool_handlers.h"

namespace uzfs::cmd {

namespace {

std::string Duration(uint64_t secs) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%02llu:%02llu:%02llu", static_cast<unsigned long long>(secs / 3600),
                static_cast<unsigned long long>(secs / 60 % 60), static_cast<unsigned long long>(secs % 60));
  if (secs >= 86400) return std::to_string(secs / 86400) + " days " + buf;
  return buf;
}

uint64_t Now() { return static_cast<uint64_t>(std::time(nullptr)); }

// Whether a scan of kind `func` (kNone: any) of the pool named runs;
// false when it is gone.
bool ScanRunning(Registry& reg, const std::string& name, ScanFunc func) {
  auto e = reg.Find(name);
  if (e == nullptr) return false;
  MutexLock l(&e->mu);
  if (e->pool == nullptr || e->pool->readonly()) return false;  // nothing scans a read-only pool
  const ScanPhys s = e->pool->scan_progress().phys;
  return s.running() && (func == ScanFunc::kNone || s.func == func);
}

// Whether destroyed file systems' trees of the pool named are still being
// freed; false when it is gone.
bool Freeing(Registry& reg, const std::string& name) {
  auto e = reg.Find(name);
  if (e == nullptr) return false;
  MutexLock l(&e->mu);
  if (e->pool == nullptr || e->pool->readonly()) return false;  // nothing is freed on a read-only pool
  return e->pool->AsyncDestroyQueued();
}

}  // namespace

// "Sat Nov 28 17:30:00 2026", as zpool status prints dates (ctime).
std::string DateText(uint64_t epoch) {
  const time_t t = static_cast<time_t>(epoch);
  struct tm tm;
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a %b %e %H:%M:%S %Y", &tm);
  return buf;
}

void WaitForScans(CmdCtx& c, const std::vector<std::string>& names, ScanFunc func) {
  for (const std::string& n : names) {
    while (!c.stopping.load() && ScanRunning(c.reg, n, func)) {
      if (!c.out.Flush()) return;  // the client went away
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

std::string ScanStatusLines(const Pool::ScanProgress& p) {
  const ScanPhys& s = p.phys;
  if (s.func == ScanFunc::kNone || s.state == ScanState::kNone) return "  scan: none requested\n";
  const bool resilver = s.func == ScanFunc::kResilver;
  const std::string what = resilver ? "resilver" : "scrub";
  if (s.state == ScanState::kCanceled) return "  scan: " + what + " canceled on " + DateText(s.end_time) + "\n";
  if (s.state == ScanState::kFinished) {
    return std::string(resilver ? "  scan: resilvered " : "  scan: scrub repaired ") + HumanSize(s.processed) + " in " +
           Duration(s.end_time >= s.start_time ? s.end_time - s.start_time : 0) + " with " +
           std::to_string(s.errors) + " errors on " + DateText(s.end_time) + "\n";
  }
  const uint64_t total = std::max(s.to_examine, s.examined);
  const double pct = total == 0 ? 0.0 : 100.0 * static_cast<double>(s.examined) / static_cast<double>(total);
  char pct_text[32];
  std::snprintf(pct_text, sizeof pct_text, "%.2f%%", pct > 100.0 ? 100.0 : pct);
  if (s.paused()) {
    return "  scan: scrub paused since " + DateText(p.pass_start) + "\n\tscrub started on " + DateText(s.start_time) +
           "\n\t" + HumanSize(s.examined) + " scanned, " + HumanSize(s.examined) + " issued, " + HumanSize(total) +
           " total\n\t" + HumanSize(s.processed) + " repaired, " + pct_text + " done\n";
  }
  const uint64_t elapsed = std::max<uint64_t>(1, Now() - std::min(Now(), p.pass_start));
  const uint64_t rate = p.pass_examined / elapsed;
  std::string left = "no estimated completion time";
  if (rate > 0 && total > s.examined) left = Duration((total - s.examined) / rate) + " to go";
  if (rate > 0 && total <= s.examined) left = Duration(0) + " to go";
  return "  scan: " + what + " in progress since " + DateText(s.start_time) + "\n\t" + HumanSize(s.examined) +
         " scanned at " + HumanSize(rate) + "/s, " + HumanSize(s.examined) + " issued at " + HumanSize(rate) +
         "/s, " + HumanSize(total) + " total\n\t" + HumanSize(s.processed) + (resilver ? " resilvered, " : " repaired, ") +
         pct_text + " done, " + left + "\n";
}

json ScanStatsJson(const Pool::ScanProgress& p) {
  const ScanPhys& s = p.phys;
  if (s.func == ScanFunc::kNone) return json::object();
  static const char* const kState[] = {"NONE", "SCANNING", "FINISHED", "CANCELED"};
  return {{"function", s.func == ScanFunc::kScrub ? "SCRUB" : "RESILVER"},
          {"state", kState[static_cast<int>(s.state)]},
          {"start_time", std::to_string(s.start_time)},
          {"end_time", std::to_string(s.end_time)},
          {"to_examine", std::to_string(s.to_examine)},
          {"examined", std::to_string(s.examined)},
          {"skipped", std::to_string(s.skipped)},
          {"processed", std::to_string(s.processed)},
          {"errors", std::to_string(s.errors)},
          {"issued", std::to_string(s.examined)},
          {"pass_start", std::to_string(p.pass_start)},
          {"pass_examined", std::to_string(p.pass_examined)},
          {"scrub_paused", s.paused() ? "1" : "0"}};
}

int ZpoolScrub(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "spw", "");
  if (!a.error.empty()) return ZpoolUsage(c, "scrub", a.error);
  if (a.Has('s') && a.Has('p')) {
    return ZpoolUsage(c, "scrub", "invalid option combination: -s and -p are mutually exclusive");
  }
  if (a.operands.empty()) return ZpoolUsage(c, "scrub", "missing pool name argument");
  int rc = 0;
  std::vector<std::string> started;
  for (const std::string& name : a.operands) {
    auto e = c.reg.Find(name);
    if (e == nullptr) {
      c.out.ErrLine("cannot open '" + name + "': no such pool");
      rc = 1;
      continue;
    }
    MutexLock l(&e->mu);
    if (e->pool == nullptr) {
      c.out.ErrLine("cannot open '" + name + "': no such pool");
      rc = 1;
      continue;
    }
    Status s = a.Has('s') ? e->pool->CancelScrub() : a.Has('p') ? e->pool->PauseScrub() : e->pool->StartScrub();
    if (!s.ok()) {
      const char* what = a.Has('s') ? "cannot cancel scrubbing " : a.Has('p') ? "cannot pause scrubbing " : "cannot scrub ";
      c.out.ErrLine(what + name + ": " + std::string(s.message()));
      rc = 1;
      continue;
    }
    e->pool->LogHistory(c.cmdline);
    started.push_back(name);
  }
  if (a.Has('w') && !a.Has('s') && !a.Has('p')) WaitForScans(c, started, ScanFunc::kScrub);
  return rc;
}

int ZpoolWait(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "Hpt", "t");
  if (!a.error.empty()) return ZpoolUsage(c, "wait", a.error);
  static const char* const kActivities[] = {"discard", "free", "initialize", "replace", "remove",
                                            "resilver", "scrub", "trim"};
  bool any = a.Values('t').empty();
  bool scrub = false, resilver = false, free = false, trim = false;
  for (const std::string& list : a.Values('t')) {
    size_t start = 0;
    while (start <= list.size()) {
      const size_t comma = std::min(list.find(',', start), list.size());
      const std::string act = list.substr(start, comma - start);
      if (std::find(std::begin(kActivities), std::end(kActivities), act) == std::end(kActivities)) {
        return ZpoolUsage(c, "wait", "invalid activity '" + act + "'");
      }
      // The others do not exist in uzfs yet: none is ever running. A
      // replace is its resilver; free: the async destroy queue.
      if (act == "scrub") scrub = true;
      if (act == "trim") trim = true;
      if (act == "free") free = true;
      if (act == "resilver" || act == "replace") resilver = true;
      start = comma + 1;
    }
  }
  if (a.operands.empty()) return ZpoolUsage(c, "wait", "missing 'pool' argument");
  if (a.operands.size() > 1) return ZpoolUsage(c, "wait", "too many arguments");
  if (c.reg.Find(a.operands[0]) == nullptr) return c.Fail("cannot open '" + a.operands[0] + "': no such pool");
  if (any || free) {
    while (!c.stopping.load() && Freeing(c.reg, a.operands[0])) {
      if (!c.out.Flush()) return 0;  // the client went away
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  if (any || trim) WaitForTrims(c, a.operands);
  if (any || (scrub && resilver)) {
    WaitForScans(c, a.operands, ScanFunc::kNone);
  } else if (scrub || resilver) {
    WaitForScans(c, a.operands, scrub ? ScanFunc::kScrub : ScanFunc::kResilver);
  }
  return 0;
}

}  // namespace uzfs::cmd
