// zpool trim, zpool wait -t trim and the trim notes of zpool status -t
// (man/zpool.8).
//
// What they promise: `zpool trim [-w] [-r rate] pool [device...]` starts
// trimming the devices named (every leaf of the pool without names) and
// returns, or with -w once they are done; -c cancels. Errors are OpenZFS's
// lines ("currently trimming", "there is no active trim", "no such device
// in pool"), one per failure, exit status 1; bad flags print the usage.
// Waiting never holds a pool's lock between polls.
#include <thread>

#include "cmd/uzfsd/args.h"
#include "cmd/uzfsd/output.h"
#include "cmd/uzfsd/zpool_handlers.h"
#include "zfs/dsl/prop_table.h"

namespace uzfs::cmd {
namespace {

// Whether a leaf of the pool named is being trimmed; false when it is gone.
bool Trimming(Registry& reg, const std::string& name) {
  auto e = reg.Find(name);
  if (e == nullptr) return false;
  MutexLock l(&e->mu);
  return e->pool != nullptr && e->pool->TrimRunning();
}

unsigned Percent(const Pool::TrimProgress& p) {
  if (p.state == Pool::TrimState::kComplete) return 100;
  if (p.total == 0) return 0;
  return static_cast<unsigned>(std::min<uint64_t>(100, p.examined * 100 / p.total));
}

}  // namespace

void WaitForTrims(CmdCtx& c, const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    while (!c.stopping.load() && Trimming(c.reg, n)) {
      if (!c.out.Flush()) return;  // the client went away
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

std::string TrimNote(const Pool::TrimProgress* p) {
  using S = Pool::TrimState;
  if (p == nullptr || p->state == S::kNone) return "(untrimmed)";
  if (p->state == S::kFailed && p->unsupported) return "(trim unsupported)";
  const std::string pct = std::to_string(Percent(*p)) + "% trimmed, ";
  switch (p->state) {
    case S::kActive: return "(" + pct + "started at " + DateText(p->start_time) + ")";
    case S::kComplete: return "(" + pct + "completed at " + DateText(p->end_time) + ")";
    case S::kCanceled: return "(" + pct + "canceled at " + DateText(p->end_time) + ")";
    case S::kFailed: return "(" + pct + "failed: " + p->error + ")";
    case S::kNone: break;
  }
  return "(untrimmed)";
}

json TrimJson(const Pool::TrimProgress* p) {
  using S = Pool::TrimState;
  static const char* const kState[] = {"UNTRIMMED", "ACTIVE", "CANCELED", "COMPLETE", "FAILED"};
  if (p == nullptr) return {{"trim_state", "UNTRIMMED"}};
  json j{{"trim_state", p->unsupported ? "UNSUPPORTED" : kState[static_cast<int>(p->state)]},
         {"trim_examined", std::to_string(p->examined)},
         {"trim_total", std::to_string(p->total)},
         {"trimmed_bytes", std::to_string(p->trimmed)},
         {"trim_start_time", std::to_string(p->start_time)},
         {"trim_end_time", std::to_string(p->end_time)}};
  if (p->state == S::kFailed) j["trim_error"] = p->error;
  return j;
}

int ZpoolTrim(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "cwr", "r");
  if (!a.error.empty()) return ZpoolUsage(c, "trim", a.error);
  if (a.Has('c') && (a.Has('w') || a.Has('r'))) {
    return ZpoolUsage(c, "trim", "-c cannot be combined with other options");
  }
  if (a.operands.empty()) return ZpoolUsage(c, "trim", "missing pool name argument");
  uint64_t rate = 0;
  if (a.Has('r')) {
    auto r = ParsePropSize(a.Values('r').back());
    if (!r.ok() || *r == 0) {
      return ZpoolUsage(c, "trim", "invalid value '" + a.Values('r').back() + "' for -r: " +
                                       (r.ok() ? "must be more than zero" : std::string(r.status().message())));
    }
    rate = *r;
  }
  const std::string& name = a.operands[0];
  const std::vector<std::string> devs(a.operands.begin() + 1, a.operands.end());
  {
    auto e = c.reg.Find(name);
    if (e == nullptr) return c.Fail("cannot open '" + name + "': no such pool");
    MutexLock l(&e->mu);
    if (e->pool == nullptr) return c.Fail("cannot open '" + name + "': no such pool");
    if (e->pool->readonly()) return c.Fail("cannot trim '" + name + "': pool is read-only");
    const Status s = a.Has('c') ? e->pool->CancelTrim(devs) : e->pool->StartTrim(devs, rate);
    if (!s.ok()) return c.Fail(std::string(s.message()));
    e->pool->LogHistory(c.cmdline);
  }
  if (a.Has('w')) WaitForTrims(c, {name});
  return 0;
}

}  // namespace uzfs::cmd
