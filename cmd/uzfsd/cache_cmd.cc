// The daemon's ARC and tunables, zpool arcstats / zpool tunable (see
// cache_cmd.h).
#include "cmd/uzfsd/cache_cmd.h"

#include <atomic>
#include <cstdlib>
#include <sstream>

#include "cache/arc_tunables.h"
#include "cache/l2arc_tunables.h"
#include "cache/prefetch_tunables.h"
#include "cmd/uzfsd/args.h"
#include "cmd/uzfsd/subcommands.h"
#include "cmd/uzfsd/zpool_handlers.h"
#include "cmd/uzfsd/txg_tunables.h"
#include "zfs/dmu/dmu_tunables.h"
#include "zfs/zpl/zpl_tunables.h"

namespace uzfs::cmd {
namespace {

std::atomic<DaemonCache*> g_cache{nullptr};

std::vector<std::span<const TunableDef>> Tables() {
  // Every layer's rows: `uzfsd -o help` and `zpool tunable` list them all.
  return {ArcTunableDefs(), PrefetchTunableDefs(), L2ArcTunableDefs(), DmuTunableDefs(), ZplTunableDefs(),
          TxgTunableDefs()};
}

}  // namespace

Result<std::unique_ptr<DaemonCache>> DaemonCache::Create(const std::vector<std::string>& options) {
  std::unique_ptr<DaemonCache> c(new DaemonCache());
  c->tunables_ = std::make_unique<Tunables>(Tables());
  UZFS_RETURN_IF_ERROR(c->tunables_->LoadEnvironment());
  for (const std::string& o : options) {
    const size_t eq = o.find('=');
    if (eq == std::string::npos || eq == 0)
      return Status::InvalidArgument("-o " + o + ": expected name=value");
    UZFS_RETURN_IF_ERROR(c->tunables_->Set(o.substr(0, eq), o.substr(eq + 1)));
  }
  Tunables& t = *c->tunables_;
  c->arc_ = std::make_unique<Arc>(ArcOptionsFromTunables(t));
  c->l2arc_ = std::make_unique<L2Arc>(*c->arc_, L2ArcOptionsFromTunables(t));
  c->reaper_ = std::make_unique<ArcReaper>(*c->arc_, ProcMemorySource(), ReaperOptionsFromTunables(t));
  c->mount_set_ = std::make_unique<ZplMountSet>();
  Arc* arc = c->arc_.get();
  L2Arc* l2arc = c->l2arc_.get();
  ArcReaper* reaper = c->reaper_.get();
  ApplyVdevTunables(t);
  t.Watch([&t, arc, l2arc, reaper](std::string_view name, uint64_t) {
    if (name.starts_with("vdev_") || name.starts_with("scan_")) ApplyVdevTunables(t);
    if (name.starts_with("arc_")) {
      ApplyArcTunables(t, *arc);
      reaper->SetOptions(ReaperOptionsFromTunables(t));
    }
    if (name.starts_with("l2arc_")) ApplyL2ArcTunables(t, *l2arc);
  });
  c->reaper_->Start();
  return c;
}

DaemonCache::~DaemonCache() {
  if (reaper_) reaper_->Stop();
  reaper_.reset();
  l2arc_.reset();  // stops the feed; the pools gave their cache devices back
  arc_.reset();
}

std::string TunablesHelp() {
  Tunables t(Tables());
  return t.RenderTable();
}

void SetDaemonCache(DaemonCache* c) { g_cache.store(c); }

namespace {

// A part of the daemon's cache (nullptr before SetDaemonCache).
template <typename T>
T* DaemonCachePart(T& (DaemonCache::*part)()) {
  DaemonCache* c = g_cache.load();
  return c ? &(c->*part)() : nullptr;
}

}  // namespace

Arc* DaemonArc() { return DaemonCachePart(&DaemonCache::arc); }
L2Arc* DaemonL2Arc() { return DaemonCachePart(&DaemonCache::l2arc); }
Tunables* DaemonTunables() { return DaemonCachePart(&DaemonCache::tunables); }
ZplMountSet* DaemonMountSet() { return DaemonCachePart(&DaemonCache::mount_set); }

// ------------------------------------------------------------ zpool arcstats

int ZpoolArcstats(CmdCtx& c, const std::string& usage) {
  const ParsedArgs a = ParseArgs(c.args, "jHp", "");
  auto bad = [&](const std::string& why) {
    c.out.ErrLine(why);
    c.out.Err("usage:\n" + usage);
    return 2;
  };
  if (!a.error.empty()) return bad(a.error);
  const bool as_json = a.Has('j');
  uint64_t interval = 0, count = 0;
  if (a.operands.size() > 2) return bad("too many arguments");
  if (!a.operands.empty() && (!ParseU64(a.operands[0], &interval) || interval == 0)) {
    return bad("invalid interval '" + a.operands[0] + "': a whole number of seconds above 0");
  }
  if (a.operands.size() == 2 && (!ParseU64(a.operands[1], &count) || count == 0)) {
    return bad("invalid count '" + a.operands[1] + "': a whole number above 0");
  }
  if (interval != 0 && as_json) return bad("-j cannot be combined with an interval");
  if (interval == 0 && (a.Has('H') || a.Has('p'))) return bad("-H and -p go with an interval");
  Arc* arc = DaemonArc();
  if (!arc) return c.Fail("the ARC is not running in this daemon");
  if (interval != 0) return ArcstatRows(c, *arc, interval, count, a.Has('p'), a.Has('H'));
  const std::string text = RenderArcStats(arc->Stats());
  if (!as_json) {
    c.out.Out(text);
    return 0;
  }
  // Rows are "name  4  value" after the two header lines.
  json stats = json::object();
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    if (n++ < 2) continue;
    std::istringstream ls(line);
    std::string name, type;
    uint64_t v = 0;
    if (ls >> name >> type >> v) stats[name] = v;
  }
  json j;
  j["output_version"] = OutputVersion("zpool arcstats");
  j["arcstats"] = stats;
  c.out.Out(Dump(j));
  return 0;
}

// ------------------------------------------------------------- zpool tunable

int ZpoolTunable(CmdCtx& c, const std::string& usage) {
  bool scripted = false, as_json = false;
  std::vector<std::string> names;
  for (const std::string& a : c.args) {
    if (a.size() > 1 && a[0] == '-') {
      for (size_t i = 1; i < a.size(); i++) {
        if (a[i] == 'H') {
          scripted = true;
        } else if (a[i] == 'j') {
          as_json = true;
        } else {
          c.out.ErrLine(std::string("invalid option '") + a[i] + "'");
          c.out.Err("usage:\n" + usage);
          return 2;
        }
      }
    } else {
      names.push_back(a);
    }
  }
  Tunables* t = DaemonTunables();
  if (!t) return c.Fail("tunables are not available in this daemon");
  // Sets first (all or report the first failure), then show what was named.
  std::vector<Tunables::Entry> show;
  int rc = 0;
  bool any_get = names.empty();
  for (const std::string& n : names) {
    const size_t eq = n.find('=');
    if (eq == std::string::npos) {
      any_get = true;
      continue;
    }
    const std::string name = n.substr(0, eq);
    if (Status s = t->Set(name, n.substr(eq + 1)); !s.ok()) {
      c.out.ErrLine("cannot set tunable '" + name + "': " + std::string(s.message()));
      rc = 1;
    } else {
      c.reg.log().Log("tunable " + name + " set to " + n.substr(eq + 1));
    }
  }
  if (!any_get) return rc;
  for (const std::string& n : names) {
    if (n.find('=') != std::string::npos) continue;
    bool found = false;
    for (const Tunables::Entry& e : t->List()) {
      if (e.def->name == n) {
        show.push_back(e);
        found = true;
      }
    }
    if (!found) {
      c.out.ErrLine("cannot get tunable '" + n + "': no such tunable");
      rc = 1;
    }
  }
  if (names.empty()) show = t->List();
  if (as_json) {
    json rows = json::object();
    for (const Tunables::Entry& e : show) {
      rows[std::string(e.def->name)] = {{"value", FormatTunableValue(e.def->kind, e.value)},
                                        {"default", FormatTunableValue(e.def->kind, e.default_value)},
                                        {"bytes", e.value}};
    }
    json j;
    j["output_version"] = OutputVersion("zpool tunable");
    j["tunables"] = rows;
    c.out.Out(Dump(j));
    return rc;
  }
  size_t w_name = 4, w_val = 5;
  for (const Tunables::Entry& e : show) {
    w_name = std::max(w_name, e.def->name.size());
    w_val = std::max(w_val, FormatTunableValue(e.def->kind, e.value).size());
  }
  auto pad = [](std::string s, size_t w) {
    s.resize(std::max(s.size(), w), ' ');
    return s;
  };
  if (!scripted && !show.empty()) c.out.Out(pad("NAME", w_name) + "  " + pad("VALUE", w_val) + "  DEFAULT\n");
  for (const Tunables::Entry& e : show) {
    const std::string v = FormatTunableValue(e.def->kind, e.value);
    const std::string d = FormatTunableValue(e.def->kind, e.default_value);
    c.out.Out(scripted ? std::string(e.def->name) + "\t" + v + "\t" + d + "\n"
                       : pad(std::string(e.def->name), w_name) + "  " + pad(v, w_val) + "  " + d + "\n");
  }
  return rc;
}

}  // namespace uzfs::cmd
