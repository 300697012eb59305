// zpool status (man/zpool.8): health, the trouble paragraph, the config
// tree with error counters ("\t%*s%-*s  %-8s %5s %5s %5s" rows) and the
// errors section; -x only pools with trouble, -j in OpenZFS's JSON shape;
// -g names devices by guid, -L by the path their links resolve to.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "cmd/uzfsd/args.h"
#include "cmd/uzfsd/pool_errors.h"
#include "cmd/uzfsd/zpool_handlers.h"
#include "cmd/uzfsd/zpool_report.h"

namespace uzfs::cmd {

namespace {

// The status:/action:/see: lines for the pool's devices, worst first (as
// zpool status words them); "" when every device is ONLINE and whole.
std::string DeviceParagraph(Vdev& root, bool resilvering) {
  std::vector<Vdev*> leaves;
  root.CollectLeaves(&leaves);
  bool offline = false, removed = false, missing = false, bad_label = false, faulted = false, stale = false;
  for (Vdev* v : leaves) {
    switch (v->state()) {
      case VdevState::kOffline: offline = true; break;
      case VdevState::kRemoved: removed = true; break;
      case VdevState::kFaulted: faulted = true; break;
      case VdevState::kUnavail:
        // Gone from where it was, or there but not this pool's any more.
        (::access(v->name().c_str(), F_OK) == 0 ? bad_label : missing) = true;
        break;
      default: break;
    }
    stale = stale || v->stale();
  }
  const bool ok = root.usable();
  if (resilvering && stale) {
    return "status: One or more devices is currently being resilvered.  The pool will\n"
           "\tcontinue to function, possibly in a degraded state.\n"
           "action: Wait for the resilver to complete.\n";
  }
  const char* replicas = ok ? "\tSufficient replicas exist for the pool to continue functioning in a\n"
                              "\tdegraded state.\n"
                            : "\tThere are insufficient replicas for the pool to continue functioning.\n";
  if (faulted) {
    return std::string("status: One or more devices are faulted in response to persistent errors.\n") + replicas +
           "action: Replace the faulted device, or use 'zpool clear' to mark the device\n"
           "\trepaired.\n"
           "   see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-K4\n";
  }
  if (missing) {
    return std::string("status: One or more devices could not be opened.  ") +
           (ok ? "Sufficient replicas exist for\n\tthe pool to continue functioning in a degraded state.\n"
               : "There are insufficient\n\treplicas for the pool to continue functioning.\n") +
           "action: Attach the missing device and online it using 'zpool online'.\n"
           "   see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-2Q\n";
  }
  if (bad_label) {
    return std::string("status: One or more devices could not be used because the label is missing or\n\tinvalid.  ") +
           (ok ? "Sufficient replicas exist for the pool to continue\n\tfunctioning in a degraded state.\n"
               : "There are insufficient replicas for the pool to continue\n\tfunctioning.\n") +
           "action: Replace the device using 'zpool replace'.\n"
           "   see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-4J\n";
  }
  if (removed) {
    return std::string("status: One or more devices has been removed by the administrator.\n") + replicas +
           "action: Online the device using 'zpool online' or replace the device with\n"
           "\t'zpool replace'.\n";
  }
  if (offline) {
    return std::string("status: One or more devices has been taken offline by the administrator.\n") + replicas +
           "action: Online the device using 'zpool online' or replace the device with\n"
           "\t'zpool replace'.\n";
  }
  return "";
}

// How status names the devices: -g by guid, -L by the path a leaf's
// symbolic links resolve to; -P (full paths) is what uzfs always shows.
struct DeviceNaming {
  bool guids = false;
  bool resolve_links = false;
};

void RenameRows(PoolEntry& e, const DeviceNaming& how, std::vector<VdevRow>* rows) UZFS_REQUIRES(e.mu) {
  if (!how.guids && !how.resolve_links) return;
  const Pool::ConfigView config = e.pool->Config();
  for (VdevRow& r : *rows) {
    const bool header = r.vdev == nullptr && r.state.empty();
    if (header) continue;
    if (how.guids) {
      if (r.vdev != nullptr) {
        r.name = std::to_string(r.vdev->guid());
        continue;
      }
      for (const auto* list : {&config.spares, &config.cache}) {
        for (const VdevNode& n : *list) {
          if (n.path == r.name) r.name = std::to_string(n.guid);
        }
      }
      continue;
    }
    if (r.vdev != nullptr && !r.vdev->children().empty()) continue;
    std::error_code ec;
    const std::filesystem::path real = std::filesystem::canonical(r.name, ec);
    if (!ec) r.name = real.string();
  }
}

std::string StatusText(PoolEntry& e, const PoolTrouble& trouble, bool verbose, const DeviceNaming& naming,
                       bool trim) UZFS_REQUIRES(e.mu) {
  const std::map<uint64_t, Pool::TrimProgress> trims = trim ? e.pool->trim_progress()
                                                              : std::map<uint64_t, Pool::TrimProgress>{};
  const std::string health = HealthOf(*e.pool);
  std::string t = "  pool: " + e.rec.name + "\n state: " + health + "\n";
  const ScanPhys scan = e.pool->scan_progress().phys;
  t += DeviceParagraph(e.pool->root_vdev(), scan.running() && scan.func == ScanFunc::kResilver);
  if (t.find("status:") == std::string::npos) t += TroubleParagraph(trouble);
  t += ScanStatusLines(e.pool->scan_progress()) + "config:\n\n";
  std::vector<VdevRow> rows = TreeRows(e, true);
  RenameRows(e, naming, &rows);
  size_t w = std::max<size_t>(10, e.rec.name.size());
  for (const VdevRow& r : rows) w = std::max(w, r.name.size() + static_cast<size_t>(r.depth) * 2);
  char line[1024];
  auto row = [&](const std::string& name, int depth, const std::string& state, const std::string& rd,
                 const std::string& wr, const std::string& ck, const std::string& note) {
    std::snprintf(line, sizeof line, "\t%*s%-*s  %-8s %5s %5s %5s", depth * 2, "",
                  static_cast<int>(w) - depth * 2, name.c_str(), state.c_str(), rd.c_str(), wr.c_str(), ck.c_str());
    std::string s = line;
    if (!note.empty()) s += "  " + note;
    while (!s.empty() && s.back() == ' ') s.pop_back();
    t += s + "\n";
  };
  row("NAME", 0, "STATE", "READ", "WRITE", "CKSUM", "");
  auto counters = [](Vdev* v, int which) {
    const Vdev::Counters k = v->counters();
    return std::to_string(which == 0 ? k.read_errors : which == 1 ? k.write_errors : k.checksum_errors);
  };
  Vdev& root = e.pool->root_vdev();
  row(e.rec.name, 0, health, counters(&root, 0), counters(&root, 1), counters(&root, 2), "");
  for (const VdevRow& r : rows) {
    if (r.vdev == nullptr && r.state.empty()) {
      row(r.name, 0, "", "", "", "", "");
    } else if (r.vdev == nullptr) {
      if (r.state == "AVAIL" || r.state == "INUSE") {
        row(r.name, r.depth, r.state, "", "", "", r.state == "INUSE" ? "currently in use" : "");
      } else {
        row(r.name, r.depth, r.state, "0", "0", "0", r.state == "UNAVAIL" ? "cannot open" : "");
      }
    } else {
      const std::string st(VdevStateName(r.vdev->state()));
      std::string note;
      if (r.vdev->kind() == VdevKind::kLeaf && st != "ONLINE" && st != "OFFLINE") note = "cannot open";
      if (r.vdev->kind() == VdevKind::kLeaf && r.vdev->stale() && r.vdev->usable()) note = "(resilvering)";
      if (r.vdev->kind() != VdevKind::kLeaf && st == "UNAVAIL") note = "insufficient replicas";
      if (trim && r.vdev->kind() == VdevKind::kLeaf) {
        auto it = trims.find(r.vdev->guid());
        const std::string tn = TrimNote(it == trims.end() ? nullptr : &it->second);
        note = note.empty() ? tn : note + " " + tn;
      }
      row(r.name, r.depth, st, counters(r.vdev, 0), counters(r.vdev, 1), counters(r.vdev, 2), note);
    }
  }
  t += "\n" + ErrorsSection(e, trouble, verbose);
  return t;
}

// trims: with -t, each leaf's trim progress (its trim_* fields).
json VdevJson(PoolEntry& e, Vdev* v, const std::string& cls,
              const std::map<uint64_t, Pool::TrimProgress>* trims = nullptr) UZFS_REQUIRES(e.mu) {
  const Vdev::Counters k = v->counters();
  std::string type = v->kind() == VdevKind::kLeaf ? "file" : v->kind() == VdevKind::kMirror ? "mirror"
                     : v->kind() == VdevKind::kRaidz ? "raidz" : v->is_group() ? std::string(VdevKindName(v->kind()))
                     : "root";
  if (v->kind() == VdevKind::kLeaf && v->device() != nullptr) {
    struct stat st;
    if (::stat(v->device()->path().c_str(), &st) == 0 && S_ISBLK(st.st_mode)) type = "disk";
  }
  json j = {{"name", v->kind() == VdevKind::kRoot ? e.rec.name : v->name()},
            {"vdev_type", type},
            {"guid", std::to_string(v->guid())},
            {"class", cls},
            {"state", std::string(VdevStateName(v->state()))},
            {"total_space", std::to_string(v->asize())},
            {"read_errors", std::to_string(k.read_errors)},
            {"write_errors", std::to_string(k.write_errors)},
            {"checksum_errors", std::to_string(k.checksum_errors)}};
  if (v->device() != nullptr) j["path"] = v->device()->path();
  if (trims != nullptr && v->kind() == VdevKind::kLeaf) {
    auto it = trims->find(v->guid());
    j.update(TrimJson(it == trims->end() ? nullptr : &it->second));
  }
  if (!v->children().empty()) {
    json kids = json::object();
    for (Vdev* ch : v->children()) kids[ch->name()] = VdevJson(e, ch, cls, trims);
    j["vdevs"] = kids;
  }
  return j;
}

json StatusJson(PoolEntry& e, bool trim) UZFS_REQUIRES(e.mu) {
  std::map<uint64_t, Pool::TrimProgress> trim_map;
  if (trim) trim_map = e.pool->trim_progress();
  const auto* trims = trim ? &trim_map : nullptr;
  json j = PoolJsonHead(e);
  j["error_count"] = std::to_string(TroubleOf(e).data_errors.size());
  j["scan_stats"] = ScanStatsJson(e.pool->scan_progress());
  Vdev& root = e.pool->root_vdev();
  json rootj = VdevJson(e, &root, "normal", trims);
  json data = json::object(), logs = json::object();
  for (Vdev* t : root.children()) {
    if (t->is_hole()) continue;
    const bool log = t->id() < e.shape.top_is_log.size() && e.shape.top_is_log[t->id()];
    (log ? logs : data)[t->name()] = VdevJson(e, t, log ? "log" : "normal", trims);
  }
  rootj["vdevs"] = data;
  j["vdevs"] = json{{e.rec.name, rootj}};
  if (!logs.empty()) j["logs"] = logs;
  auto aux = [](const std::vector<std::string>& paths, const char* cls, const char* ok) {
    json m = json::object();
    for (const std::string& p : paths) {
      m[p] = {{"name", p}, {"vdev_type", "file"}, {"class", cls}, {"path", p},
              {"state", ::access(p.c_str(), R_OK) == 0 ? ok : "UNAVAIL"}};
    }
    return m;
  };
  if (!e.shape.cache.empty()) j["l2cache"] = aux(e.shape.cache, "l2cache", "ONLINE");
  if (!e.shape.spares.empty()) j["spares"] = aux(e.shape.spares, "spare", "AVAIL");
  return j;
}

}  // namespace

int ZpoolStatus(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "vxjLPgDt", "T", {"json"});
  if (!a.error.empty()) return ZpoolUsage(c, "status", a.error);
  char stamp = 0;
  if (a.Has('T')) {
    const std::string t = a.Values('T').back();
    if (t != "u" && t != "d") return ZpoolUsage(c, "status", "invalid timestamp format '" + t + "'");
    stamp = t[0];
  }
  const bool as_json = a.Has('j') || a.HasLong("json");
  const std::string stamp_line = stamp != 0 && !as_json ? TimestampLine(stamp) : "";
  int rc = 0;
  auto pools = SelectPools(c, a.operands, &rc);
  if (pools.empty() && a.operands.empty()) {
    if (as_json) {
      c.out.Out(Dump(json{{"output_version", OutputVersion("zpool status")}, {"pools", json::object()}}));
    } else {
      c.out.Out(stamp_line);
      c.out.ErrLine("no pools available");
    }
    return rc;
  }
  json jpools = json::object();
  std::string text = stamp_line;
  bool shown = false;
  for (const auto& e : pools) {
    MutexLock l(&e->mu);
    if (e->pool == nullptr) continue;
    if (as_json) {
      jpools[e->rec.name] = StatusJson(*e, a.Has('t'));
      continue;
    }
    const PoolTrouble trouble = TroubleOf(*e);
    if (a.Has('x') && HealthOf(*e->pool) == "ONLINE" && !trouble.any()) {
      if (!a.operands.empty()) text += "pool '" + e->rec.name + "' is healthy\n";
      continue;
    }
    if (shown) text += "\n";
    text += StatusText(*e, trouble, a.Has('v'), DeviceNaming{a.Has('g'), a.Has('L')}, a.Has('t'));
    shown = true;
  }
  if (as_json) {
    c.out.Out(Dump(json{{"output_version", OutputVersion("zpool status")}, {"pools", jpools}}));
  } else {
    if (a.Has('x') && !shown && a.operands.empty()) text = stamp_line + "all pools are healthy\n";
    c.out.Out(text);
  }
  return rc;
}

}  // namespace uzfs::cmd
