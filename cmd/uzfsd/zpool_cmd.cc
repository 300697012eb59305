// zpool's subcommands inside the daemon (man/zpool.8): create, destroy,
// export, list, status, get, set, history, iostat (import is in
// zpool_import.cc). Layouts follow ../shared/CLI.md §2: tables through
// output.h, status rows "\t%*s%-*s  %-8s %5s %5s %5s", JSON (-j) in
// OpenZFS's shape ({"output_version":{...},"pools":{NAME:{...}}}).
//
// Sizes come from zfs/dsl/pool_space.h (SIZE/ALLOC/FREE from the
// allocator's metaslabs), health from the live vdev tree, property values
// and sources from zfs/dsl/prop_table.h. What Pool does not keep on disk
// yet (settable pool properties) comes from the cache record (registry.h).
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "cmd/uzfsd/args.h"
#include "cmd/uzfsd/cache_cmd.h"
#include "cmd/uzfsd/txg_tunables.h"
#include "cmd/uzfsd/commands.h"
#include "cmd/uzfsd/zpool_layout.h"
#include "cmd/uzfsd/subcommands.h"
#include "cmd/uzfsd/pool_info.h"
#include "cmd/uzfsd/pool_errors.h"
#include "zfs/dsl/pool_space.h"
#include "zfs/dsl/prop_table.h"
#include "zfs/zpl/zpl_create.h"

namespace uzfs::cmd {

namespace {

constexpr uint64_t kDefaultCreateVersion = 5000;  // DESIGN.md §3
constexpr uint64_t kSizeFuzz = 16ull << 20;        // zpool's tolerance for "different sizes"

// The subcommand table (defined at the end, after the handlers).
std::span<const Sub> Subs();

int Usage(CmdCtx& c, const std::string& sub, const std::string& why) {
  return UsageFail(c, Subs(), sub, why);
}

std::string GlobalUsage() {
  return cmd::GlobalUsage("zpool", Subs(),
                          "\tattach, detach, replace, online, offline, scrub, clear:\n"
                          "\t    not available in uzfs yet\n");
}

const char* UsageOf(const std::string& sub) { return cmd::UsageOf(Subs(), sub); }


bool ParseU64(const std::string& s, uint64_t* v) {
  if (s.empty() || s.size() > 19) return false;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return false;
  }
  *v = std::strtoull(s.c_str(), nullptr, 10);
  return true;
}

std::string HealthOf(Pool& p) { return std::string(VdevStateName(p.root_vdev().state())); }

}  // namespace

// Shared with zpool_vdev_cmd.cc (zpool_layout.h).

// Device size in bytes (0 when it cannot be read: Create reports that).
uint64_t DeviceSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 0;
  if (S_ISBLK(st.st_mode)) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    uint64_t n = 0;
    if (::ioctl(fd, BLKGETSIZE64, &n) != 0) n = 0;
    ::close(fd);
    return n;
  }
  return static_cast<uint64_t>(st.st_size);
}

const char* TypeWord(const VdevSpec& v) {
  switch (v.type) {
    case VdevSpec::Type::kMirror: return "mirror";
    case VdevSpec::Type::kRaidz: return "raidz";
    case VdevSpec::Type::kDisk: return "disk";
    case VdevSpec::Type::kFile: return "file";
  }
  return "?";
}

// zpool create's checks that -f overrides: devices of different sizes in
// one group, mixed replication levels among the data vdevs. Empty = fine.
std::vector<std::string> ReplicationProblems(const PoolLayout& l) {
  std::vector<std::string> out;
  auto check_sizes = [&](const VdevSpec& g) {
    if (g.children.empty()) return;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const VdevSpec& c : g.children) {
      const uint64_t s = DeviceSize(c.path);
      if (s == 0) return;
      lo = std::min(lo, s);
      hi = std::max(hi, s);
    }
    if (hi - lo > kSizeFuzz) out.push_back(std::string(TypeWord(g)) + " contains devices of different sizes");
  };
  for (const VdevSpec& g : l.data) check_sizes(g);
  for (const VdevSpec& g : l.logs) check_sizes(g);
  for (size_t i = 1; i < l.data.size(); i++) {
    const VdevSpec& a = l.data[0];
    const VdevSpec& b = l.data[i];
    const bool a_leaf = a.children.empty(), b_leaf = b.children.empty();
    if (a.type != b.type && !(a_leaf && b_leaf)) {
      out.push_back(std::string("mismatched replication level: both ") + TypeWord(a) + " and " +
                    TypeWord(b) + " vdevs are present");
      break;
    }
    if (a_leaf && b_leaf && a.type != b.type) {
      out.push_back("mismatched replication level: both disk and file vdevs are present");
      break;
    }
    if (a.type == VdevSpec::Type::kRaidz && a.nparity != b.nparity) {
      out.push_back("mismatched replication level: both raidz" + std::to_string(a.nparity) + " and raidz" +
                    std::to_string(b.nparity) + " vdevs are present");
      break;
    }
    if (a.children.size() != b.children.size()) {
      const bool mirror = a.type == VdevSpec::Type::kMirror;
      out.push_back("mismatched replication level: both " + std::to_string(a.children.size()) +
                    (mirror ? "-way" : "-device") + " and " + std::to_string(b.children.size()) +
                    (mirror ? "-way " : "-device ") + TypeWord(a) + " vdevs are present");
      break;
    }
  }
  return out;
}

void DryRunTree(const std::vector<VdevSpec>& list, std::string* out) {
  for (const VdevSpec& v : list) {
    if (v.children.empty()) {
      *out += "\t  " + v.path + "\n";
      continue;
    }
    *out += std::string("\t  ") +
            (v.type == VdevSpec::Type::kMirror ? std::string("mirror") : "raidz" + std::to_string(v.nparity)) +
            "\n";
    for (const VdevSpec& c : v.children) *out += "\t    " + c.path + "\n";
  }
}

std::vector<std::string> AllPaths(const PoolLayout& l) {
  std::vector<std::string> p;
  for (const auto* list : {&l.data, &l.logs, &l.cache, &l.spares}) {
    for (const VdevSpec& v : *list) {
      if (v.children.empty()) p.push_back(v.path);
      for (const VdevSpec& c : v.children) p.push_back(c.path);
    }
  }
  return p;
}

void ExpandShorthandDevices(std::vector<std::string>* words) {
  // Shorthand device names, as zpool takes them: "sdb" is /dev/sdb.
  for (std::string& w : *words) {
    static const std::set<std::string> kWords = {"mirror", "raidz", "raidz1", "raidz2", "raidz3",
                                                 "log", "cache", "spare"};
    if (!w.empty() && w[0] != '/' && w.find('/') == std::string::npos && kWords.count(w) == 0 &&
        ::access(("/dev/" + w).c_str(), F_OK) == 0) {
      w = "/dev/" + w;
    }
  }
}

namespace {

// ------------------------------------------------------------------ create

int Create(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "fnd", "moORt");
  if (!a.error.empty()) return Usage(c, "create", a.error);
  if (a.operands.empty()) return Usage(c, "create", "missing pool name");
  const std::string name = a.operands[0];
  std::vector<std::string> vdevs(a.operands.begin() + 1, a.operands.end());
  if (vdevs.empty()) return Usage(c, "create", "missing vdev specification");
  if (!a.Values('t').empty()) return c.Fail("cannot create '" + name + "': -t is not supported yet");

  PoolCreateOptions o;
  o.arc = DaemonArc();
  o.l2arc = DaemonL2Arc();
  o.txg = DaemonTxgOptions();
  o.version = kDefaultCreateVersion;
  o.force = a.Has('f');
  o.fs_init = InitNewFilesystem;
  o.fault_injectable = true;  // zinject
  o.history = c.cmdline;
  CacheRecord rec;
  rec.name = name;
  for (const std::string& kv : a.Values('o')) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) return Usage(c, "create", "missing '=' for -o option");
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    uint64_t n = 0;
    if (k == "version") {
      if (!ParseU64(v, &n)) return c.Fail("cannot create '" + name + "': bad numeric value '" + v + "'");
      o.version = n;
    } else if (k == "ashift") {
      if (!ParseU64(v, &n) || (n != 0 && (n < 9 || n > 16))) {
        return c.Fail("cannot create '" + name + "': property 'ashift' number " + v +
                      " is invalid (use 0 or 9 to 16)");
      }
      o.ashift = static_cast<uint32_t>(n);
    } else if (k == "altroot") {
      rec.altroot = AbsPath(c.cwd, v);
    } else if (k.starts_with("feature@")) {
      // Every feature uzfs knows is enabled unless -o feature@NAME=disabled.
      const std::optional<std::string> g = KnownFeatureGuid(k.substr(8));
      if (!g) return c.Fail("cannot create '" + name + "': property '" + k + "' is not a valid pool property");
      if (v != "enabled" && v != "disabled") {
        return c.Fail("cannot create '" + name + "': property '" + k + "' can only be set to 'enabled' or 'disabled'");
      }
      if (v == "disabled") o.disabled_features.insert(*g);
    } else {
      PropContext ctx;
      ctx.target = name;
      ctx.action = "cannot create";
      auto pv = ParsePoolProp(k, v, ctx);
      if (!pv.ok()) return c.Fail(std::string(pv.status().message()));
      if (k == "readonly") return c.Fail("cannot create '" + name + "': property 'readonly' can only be set at import time");
      if (k == "bootfs" && !v.empty() && v != name) {
        return c.Fail("cannot create '" + name + "': '" + v + "' is an invalid name: dataset does not exist");
      }
      rec.props[k] = v;
    }
  }
  if (!a.Values('R').empty()) rec.altroot = AbsPath(c.cwd, a.Values('R').back());
  for (const std::string& kv : a.Values('O')) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) return Usage(c, "create", "missing '=' for -O option");
    PropContext ctx;
    ctx.target = name;
    ctx.action = "cannot create";
    ctx.pool_version = o.version;
    ctx.creating = true;
    // -o feature@zstd_compress=disabled: the new pool cannot take zstd.
    if (o.version == kFeatureVersion) ctx.zstd_compress = o.disabled_features.count(kZstdCompressGuid) == 0;
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (!IsUserProp(k)) {
      auto pv = ParseDatasetProp(k, v, ctx);
      if (!pv.ok()) return c.Fail(std::string(pv.status().message()));
    }
    o.fs_props.emplace_back(k, v);
  }
  if (!a.Values('m').empty()) {
    const std::string m = a.Values('m').back();
    if (m != "none" && m != "legacy" && (m.empty() || m[0] != '/')) {
      return c.Fail("invalid mountpoint '" + m + "': must be an absolute path, 'legacy', or 'none'");
    }
    o.fs_props.emplace_back("mountpoint", m);
  }

  ExpandShorthandDevices(&vdevs);
  auto layout = ParseVdevGrammar(vdevs);
  if (!layout.ok()) return c.Fail(std::string(layout.status().message()));
  const std::vector<std::string> paths = AllPaths(*layout);
  for (size_t i = 0; i < paths.size(); i++) {
    for (size_t j = 0; j < i; j++) {
      if (paths[i] == paths[j]) {
        return c.Fail("invalid vdev specification: " + paths[i] + " is listed more than once");
      }
    }
  }
  for (const auto& e : c.reg.All()) {
    MutexLock l(&e->mu);
    for (const std::string& p : paths) {
      if (std::find(e->rec.devices.begin(), e->rec.devices.end(), p) != e->rec.devices.end()) {
        return c.Fail("invalid vdev specification\nthe following errors must be manually repaired:\n" + p +
                      " is part of active pool '" + e->rec.name + "'");
      }
    }
  }
  if (!o.force) {
    std::vector<std::string> problems = ReplicationProblems(*layout);
    if (!problems.empty()) {
      std::string msg = "invalid vdev specification\nuse '-f' to override the following errors:";
      for (const std::string& p : problems) msg += "\n" + p;
      return c.Fail(msg);
    }
  }
  if (c.reg.Find(name) != nullptr) return c.Fail("cannot create '" + name + "': pool already exists");
  if (a.Has('n')) {
    std::string t = "would create '" + name + "' with the following layout:\n\n\t" + name + "\n";
    DryRunTree(layout->data, &t);
    if (!layout->logs.empty()) {
      t += "\tlogs\n";
      DryRunTree(layout->logs, &t);
    }
    if (!layout->cache.empty()) {
      t += "\tcache\n";
      DryRunTree(layout->cache, &t);
    }
    if (!layout->spares.empty()) {
      t += "\tspares\n";
      DryRunTree(layout->spares, &t);
    }
    c.out.Out(t);
    return 0;
  }
  auto pool = Pool::Create(name, *layout, o);
  if (!pool.ok()) return c.Fail(ErrorLine(pool.status(), "create", name));
  PoolShape shape = ShapeFromLayout(*layout);
  auto entry = MakeEntry(std::move(*pool), rec, &shape, c.reg);
  if (!entry.ok()) return c.Fail(ErrorLine(entry.status(), "create", name));
  c.reg.log().Log("created pool '" + name + "'");
  return ReportMountErrors(c, **entry);
}

// ------------------------------------------------------------------ export / destroy

int ExportOrDestroy(CmdCtx& c, bool destroy) {
  const std::string sub = destroy ? "destroy" : "export";
  ParsedArgs a = ParseArgs(c.args, destroy ? "f" : "af", "");
  if (!a.error.empty()) return Usage(c, sub, a.error);
  std::vector<std::string> names = a.operands;
  if (!destroy && a.Has('a')) {
    if (!names.empty()) return Usage(c, sub, "the -a option cannot be used with pool names");
    for (const auto& e : c.reg.All()) {
      MutexLock l(&e->mu);
      names.push_back(e->rec.name);
    }
  } else if (names.empty()) {
    return Usage(c, sub, "missing pool argument");
  }
  if (destroy && names.size() > 1) return Usage(c, sub, "too many arguments");
  int rc = 0;
  for (const std::string& n : names) {
    auto e = c.reg.Find(n);
    if (e == nullptr) {
      rc = c.Fail("cannot open '" + n + "': no such pool");
      continue;
    }
    MutexLock l(&e->mu);
    if (e->pool == nullptr) {
      rc = c.Fail("cannot open '" + n + "': no such pool");
      continue;
    }
    // Unmount first; busy mounts stop the export unless -f.
    if (Status u = e->mounts.UnmountAll(a.Has('f')); !u.ok()) {
      rc = c.Fail(std::string(u.message()) + "\ncannot " + sub + " '" + n + "': pool is busy");
      continue;
    }
    if (!e->pool->readonly()) e->pool->LogHistory(c.cmdline);
    Status s = destroy ? e->pool->Destroy() : e->pool->Export();
    if (!s.ok()) {
      rc = c.Fail(ErrorLine(s, destroy ? "destroy" : "export", n));
      continue;
    }
    e->pool.reset();
    e->ro_locks.Release();
    c.reg.Remove(n, false);
    c.reg.log().Log(std::string(destroy ? "destroyed" : "exported") + " pool '" + n + "'");
  }
  return rc;
}

// ------------------------------------------------------------------ properties

struct PoolPropRow {
  std::string name, value, source;
};

// The pool's own props ZAP; a read-only import's `-o` values (kept in the
// cache record, nothing can be written) override it.
Result<Pool::StoredPoolProps> PoolZapOf(PoolEntry& e) UZFS_REQUIRES(e.mu) {
  UZFS_ASSIGN_OR_RETURN(Pool::StoredPoolProps stored, e.pool->PoolProps());
  for (const auto& kv : e.rec.props) {
    const std::string& k = kv.first;
    const PropDef* d = FindPoolProp(k);
    if (d == nullptr || d->storage != PropStorage::kPoolZap || k == "bootfs") continue;
    auto pv = ParsePoolProp(k, kv.second);
    if (!pv.ok()) continue;
    std::erase_if(stored.zap, [&k](const PropZapEntry& z) { return z.name == k; });
    stored.zap.push_back(PropZapEntry{k, *pv});
  }
  return stored;
}

PoolPropState StateOf(PoolEntry& e, const PoolSpaceReport& sp, const std::string& bootfs_name)
    UZFS_REQUIRES(e.mu) {
  PoolPropState st;
  st.size = sp.size;
  st.allocated = sp.alloc;
  st.free = sp.free;
  st.health = HealthOf(*e.pool);
  st.guid = e.pool->guid();
  st.version = e.pool->version();
  if (!e.rec.altroot.empty()) st.altroot = e.rec.altroot;
  if (auto it = e.rec.props.find("cachefile"); it != e.rec.props.end()) st.cachefile = it->second;
  st.bootfs_name = bootfs_name;
  if (e.pool->root_vdev().children().size() > 0) st.ashift = e.pool->root_vdev().child(0)->ashift();
  return st;
}

// Every property `zpool get all` shows, in order: the table's, then the
// OpenZFS additions uzfs can answer (capacity sits in the table).
Result<std::vector<PoolPropRow>> PoolPropRows(PoolEntry& e, bool parsable) UZFS_REQUIRES(e.mu) {
  UZFS_ASSIGN_OR_RETURN(PoolSpaceReport sp, PoolListSpace(*e.pool));
  UZFS_ASSIGN_OR_RETURN(Pool::StoredPoolProps stored, PoolZapOf(e));
  const PoolPropState st = StateOf(e, sp, stored.bootfs_name);
  UZFS_ASSIGN_OR_RETURN(std::vector<ResolvedProp> all, ResolveAllPoolProps(stored.zap, st));
  std::vector<PoolPropRow> rows;
  for (const ResolvedProp& p : all) {
    std::string v = FormatPoolProp(p.name, p.value, parsable);
    if (!parsable && (p.name == "size" || p.name == "free" || p.name == "allocated")) {
      v = HumanSize(p.value.number);
    }
    if (parsable && p.name == "dedupratio" && !v.empty() && v.back() == 'x') v.pop_back();
    std::string src = p.SourceText();
    if (p.name == "version" && e.pool->version() == 5000) {
      v = "-";  // feature flags: no version number (OpenZFS prints "-")
      src = "default";
    }
    if (p.name == "guid") src = "-";
    rows.push_back(PoolPropRow{p.name, v, src});
  }
  const uint64_t usable = sp.dspace > sp.slop ? sp.dspace - sp.slop : 0;
  rows.push_back(PoolPropRow{"fragmentation", "-", "-"});
  rows.push_back(PoolPropRow{"expandsize", "-", "-"});
  rows.push_back(PoolPropRow{"checkpoint", "-", "-"});
  rows.push_back(PoolPropRow{"usable", SizeText(sp.dspace, parsable), "-"});
  rows.push_back(PoolPropRow{"available", SizeText(usable, parsable), "-"});
  rows.push_back(PoolPropRow{"readonly", e.rec.readonly ? "on" : "off", "-"});
  // Feature-flag pools: feature@NAME as OpenZFS shows them; a feature
  // uzfs does not know as unsupported@GUID (inactive: enabled only).
  // Legacy versions list none, as zfs-fuse.
  if (e.pool->version() != kFeatureVersion) return rows;
  UZFS_ASSIGN_OR_RETURN(std::vector<PoolFeatureState> features, e.pool->Features());
  for (const PoolFeatureState& f : features) {
    if (f.supported) {
      rows.push_back(PoolPropRow{"feature@" + f.name,
                                 f.refcount > 0 ? "active" : f.enabled ? "enabled" : "disabled", "local"});
    } else {
      rows.push_back(PoolPropRow{"unsupported@" + f.guid, f.refcount > 0 ? "readonly" : "inactive", "local"});
    }
  }
  return rows;
}

// Properties PoolPropRows answers besides the table's.
bool KnownPoolProp(const std::string& p) {
  static const std::set<std::string> kExtra = {"name", "fragmentation", "expandsize", "checkpoint",
                                               "usable", "available", "readonly"};
  return kExtra.count(p) != 0 || FindPoolProp(p) != nullptr;
}

// Column names and aliases of zpool list / get.
std::string CanonicalPoolProp(const std::string& n) {
  static const std::map<std::string, std::string> kAlias = {
      {"alloc", "allocated"}, {"cap", "capacity"},   {"frag", "fragmentation"}, {"dedup", "dedupratio"},
      {"expandsz", "expandsize"}, {"ckpoint", "checkpoint"}, {"avail", "available"},
      {"expand", "autoexpand"}, {"replace", "autoreplace"}};
  auto it = kAlias.find(n);
  return it == kAlias.end() ? n : it->second;
}

bool RightAligned(const std::string& prop) {
  static const std::set<std::string> kNum = {"size", "allocated", "free", "checkpoint", "expandsize",
                                            "fragmentation", "capacity", "dedupratio", "usable",
                                            "available", "guid", "version", "ashift"};
  return kNum.count(prop) != 0;
}

std::string ColumnHeader(const std::string& prop) {
  static const std::map<std::string, std::string> kCol = {
      {"allocated", "ALLOC"}, {"capacity", "CAP"}, {"fragmentation", "FRAG"}, {"dedupratio", "DEDUP"},
      {"expandsize", "EXPANDSZ"}, {"checkpoint", "CKPOINT"}, {"available", "AVAIL"},
      {"autoexpand", "EXPAND"}, {"autoreplace", "REPLACE"}};
  auto it = kCol.find(prop);
  return it == kCol.end() ? Upper(prop) : it->second;
}

json PoolJsonHead(PoolEntry& e) UZFS_REQUIRES(e.mu) {
  return {{"name", e.rec.name},
          {"type", "POOL"},
          {"state", HealthOf(*e.pool)},
          {"pool_guid", std::to_string(e.pool->guid())},
          {"txg", std::to_string(e.pool->uberblock().txg)},
          {"spa_version", std::to_string(e.pool->version())},
          {"zpl_version", std::to_string(e.pool->version() >= 24 ? 5 : kPropZplVersionCurrent)}};
}

json SourceJson(const std::string& source) {
  if (source == "-") return {{"type", "NONE"}, {"data", "-"}};
  if (source == "default") return {{"type", "DEFAULT"}, {"data", "-"}};
  if (source == "local") return {{"type", "LOCAL"}, {"data", "-"}};
  if (source.rfind("inherited from ", 0) == 0) return {{"type", "INHERITED"}, {"data", source.substr(15)}};
  return {{"type", "NONE"}, {"data", source}};
}

// The pools named, or all; an unknown name prints "no such pool" and sets rc.
std::vector<std::shared_ptr<PoolEntry>> SelectPools(CmdCtx& c, const std::vector<std::string>& names, int* rc) {
  if (names.empty()) return c.reg.All();
  std::vector<std::shared_ptr<PoolEntry>> v;
  for (const std::string& n : names) {
    auto e = c.reg.Find(n);
    if (e == nullptr) {
      *rc = c.Fail("cannot open '" + n + "': no such pool");
      continue;
    }
    v.push_back(e);
  }
  return v;
}

// ------------------------------------------------------------------ list

struct VdevRow {
  std::string name;
  int depth = 0;
  Vdev* vdev = nullptr;        // nullptr for class headers and aux devices
  bool top = false;
  std::string state;           // aux devices
  bool spare = false;          // the spares section (no I/O statistics)
};

// Rows of the config tree: data vdevs, then the logs/cache/spares sections.
std::vector<VdevRow> TreeRows(PoolEntry& e, bool include_aux) UZFS_REQUIRES(e.mu) {
  std::vector<VdevRow> rows;
  Vdev& root = e.pool->root_vdev();
  std::function<void(Vdev*, int, bool)> walk = [&](Vdev* v, int depth, bool top) {
    rows.push_back(VdevRow{v->name(), depth, v, top, {}});
    for (Vdev* ch : v->children()) walk(ch, depth + 1, false);
  };
  const std::vector<bool> log_ids = e.shape.top_is_log;
  auto is_log = [&](uint32_t id) { return id < log_ids.size() && log_ids[id]; };
  for (Vdev* t : root.children()) {
    if (!is_log(t->id()) && !t->is_hole()) walk(t, 1, true);
  }
  bool logs = false;
  for (Vdev* t : root.children()) {
    if (!is_log(t->id()) || t->is_hole()) continue;
    if (!logs) rows.push_back(VdevRow{"logs", 0, nullptr, false, {}});
    logs = true;
    walk(t, 1, true);
  }
  if (!include_aux) return rows;
  if (!e.shape.cache.empty()) {
    rows.push_back(VdevRow{"cache", 0, nullptr, false, {}});
    const std::vector<CacheDeviceInfo> cache = e.pool->CacheDevices();  // state as the pool has it open
    for (const std::string& p : e.shape.cache) {
      std::string st = ::access(p.c_str(), R_OK) == 0 ? "ONLINE" : "UNAVAIL";
      for (const CacheDeviceInfo& ci : cache) {
        if (ci.path == p) st = ci.state;
      }
      rows.push_back(VdevRow{p, 1, nullptr, false, st});
    }
  }
  if (!e.shape.spares.empty()) {
    rows.push_back(VdevRow{"spares", 0, nullptr, false, {}, true});
    for (const std::string& p : e.shape.spares) {
      rows.push_back(VdevRow{p, 1, nullptr, false, ::access(p.c_str(), R_OK) == 0 ? "AVAIL" : "UNAVAIL", true});
    }
  }
  return rows;
}

std::string CapPercent3(uint64_t alloc, uint64_t size) {
  if (size == 0) return "-";
  const double pct = 100.0 * static_cast<double>(alloc) / static_cast<double>(size);
  char b[16];
  if (pct < 10) {
    std::snprintf(b, sizeof b, "%.2f%%", pct);
  } else if (pct < 100) {
    std::snprintf(b, sizeof b, "%.1f%%", pct);
  } else {
    std::snprintf(b, sizeof b, "%.0f%%", pct);
  }
  return b;
}

int List(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "Hpvj", "oT", {"json"});
  if (!a.error.empty()) return Usage(c, "list", a.error);
  const bool scripted = a.Has('H'), parsable = a.Has('p'), verbose = a.Has('v');
  const bool as_json = a.Has('j') || a.HasLong("json");
  std::vector<std::string> props = {"name", "size", "allocated", "free", "checkpoint", "expandsize",
                                    "fragmentation", "capacity", "dedupratio", "health", "altroot"};
  if (!a.Values('o').empty()) {
    props.clear();
    for (const std::string& o : a.Values('o')) {
      for (const std::string& p : SplitComma(o)) props.push_back(CanonicalPoolProp(p));
    }
  }
  for (const std::string& p : props) {
    if (!KnownPoolProp(p)) return Usage(c, "list", "invalid property '" + p + "'");
  }
  int rc = 0;
  auto pools = SelectPools(c, a.operands, &rc);
  std::vector<Column> cols;
  for (const std::string& p : props) cols.push_back(Column{ColumnHeader(p), RightAligned(p)});
  std::vector<std::vector<std::string>> rows;
  json jpools = json::object();
  for (const auto& e : pools) {
    MutexLock l(&e->mu);
    if (e->pool == nullptr) continue;
    auto pr = PoolPropRows(*e, parsable);
    if (!pr.ok()) {
      rc = c.Fail(ErrorLine(pr.status(), "open", e->rec.name));
      continue;
    }
    std::vector<std::string> row;
    json jprops = json::object();
    for (const std::string& p : props) {
      std::string v = "-", src = "-";
      if (p == "name") {
        v = e->rec.name;
      } else {
        bool found = false;
        for (const PoolPropRow& r : *pr) {
          if (r.name == p) {
            v = r.value;
            src = r.source;
            found = true;
          }
        }
        if (!found && !FindPoolProp(p)) return Usage(c, "list", "invalid property '" + p + "'");
        if (p == "altroot" && v.empty()) v = "-";
      }
      row.push_back(v);
      if (p != "name") jprops[p] = {{"value", v}, {"source", SourceJson(src)}};
    }
    rows.push_back(row);
    json jp = PoolJsonHead(*e);
    jp["properties"] = jprops;
    jpools[e->rec.name] = jp;
    if (verbose && !as_json) {
      auto sp = PoolListSpace(*e->pool);
      for (const VdevRow& vr : TreeRows(*e, true)) {
        std::vector<std::string> vrow;
        for (const std::string& p : props) {
          std::string v = "-";
          const bool header = vr.vdev == nullptr && vr.state.empty();
          if (p == "name") {
            v = std::string(static_cast<size_t>(vr.depth) * 2, ' ') + vr.name;
          } else if (header) {
            v = "-";
          } else if (p == "health") {
            v = vr.vdev != nullptr ? std::string(VdevStateName(vr.vdev->state())) : vr.state;
          } else if (p == "size" && vr.vdev != nullptr) {
            v = SizeText(vr.vdev->asize(), parsable);
            if (vr.top && sp.ok()) {
              for (const PoolSpaceVdev& sv : sp->vdevs) {
                if (sv.vdev_id == vr.vdev->id()) v = SizeText(sv.size, parsable);
              }
            }
          } else if (vr.top && sp.ok() && (p == "allocated" || p == "free" || p == "capacity")) {
            for (const PoolSpaceVdev& sv : sp->vdevs) {
              if (sv.vdev_id != vr.vdev->id()) continue;
              if (p == "allocated") v = SizeText(sv.alloc, parsable);
              if (p == "free") v = SizeText(sv.free, parsable);
              if (p == "capacity") v = CapPercent3(sv.alloc, sv.size);
            }
          }
          vrow.push_back(v);
        }
        rows.push_back(vrow);
      }
    }
  }
  if (as_json) {
    json j = {{"output_version", OutputVersion("zpool list")}, {"pools", jpools}};
    c.out.Out(Dump(j));
  } else if (!rows.empty() || !scripted) {
    if (rows.empty() && a.operands.empty()) {
      c.out.ErrLine("no pools available");
    } else if (!rows.empty()) {
      c.out.Out(RenderTable(cols, rows, scripted));
    }
  }
  return rc;
}

// ------------------------------------------------------------------ status

std::string StatusText(PoolEntry& e, const PoolTrouble& trouble, bool verbose) UZFS_REQUIRES(e.mu) {
  const std::string health = HealthOf(*e.pool);
  std::string t = "  pool: " + e.rec.name + "\n state: " + health + "\n";
  if (health != "ONLINE") {
    t += "status: One or more devices could not be used because the label is missing or\n"
         "\tinvalid.  Sufficient replicas exist for the pool to continue\n"
         "\tfunctioning in a degraded state.\n"
         "action: Replace the device and restore the pool from backup if needed;\n"
         "\tuzfs cannot replace devices yet.\n";
  } else {
    t += TroubleParagraph(trouble);
  }
  t += "  scan: none requested\nconfig:\n\n";
  std::vector<VdevRow> rows = TreeRows(e, true);
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
        row(r.name, r.depth, r.state, "", "", "", "");
      } else {
        row(r.name, r.depth, r.state, "0", "0", "0", r.state == "UNAVAIL" ? "cannot open" : "");
      }
    } else {
      const std::string st(VdevStateName(r.vdev->state()));
      std::string note;
      if (r.vdev->kind() == VdevKind::kLeaf && st != "ONLINE" && st != "OFFLINE") note = "cannot open";
      if (r.vdev->kind() != VdevKind::kLeaf && st == "UNAVAIL") note = "insufficient replicas";
      row(r.name, r.depth, st, counters(r.vdev, 0), counters(r.vdev, 1), counters(r.vdev, 2), note);
    }
  }
  t += "\n" + ErrorsSection(e, trouble, verbose);
  return t;
}

json VdevJson(PoolEntry& e, Vdev* v, const std::string& cls) UZFS_REQUIRES(e.mu) {
  const Vdev::Counters k = v->counters();
  std::string type = v->kind() == VdevKind::kLeaf ? "file" : v->kind() == VdevKind::kMirror ? "mirror"
                     : v->kind() == VdevKind::kRaidz ? "raidz" : "root";
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
  if (!v->children().empty()) {
    json kids = json::object();
    for (Vdev* ch : v->children()) kids[ch->name()] = VdevJson(e, ch, cls);
    j["vdevs"] = kids;
  }
  return j;
}

json StatusJson(PoolEntry& e) UZFS_REQUIRES(e.mu) {
  json j = PoolJsonHead(e);
  j["error_count"] = std::to_string(TroubleOf(e).data_errors.size());
  j["scan_stats"] = json::object();
  Vdev& root = e.pool->root_vdev();
  json rootj = VdevJson(e, &root, "normal");
  json data = json::object(), logs = json::object();
  for (Vdev* t : root.children()) {
    if (t->is_hole()) continue;
    const bool log = t->id() < e.shape.top_is_log.size() && e.shape.top_is_log[t->id()];
    (log ? logs : data)[t->name()] = VdevJson(e, t, log ? "log" : "normal");
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

int StatusCmd(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "vxjLPgD", "T", {"json"});
  if (!a.error.empty()) return Usage(c, "status", a.error);
  const bool as_json = a.Has('j') || a.HasLong("json");
  int rc = 0;
  auto pools = SelectPools(c, a.operands, &rc);
  if (pools.empty() && a.operands.empty()) {
    if (as_json) {
      c.out.Out(Dump(json{{"output_version", OutputVersion("zpool status")}, {"pools", json::object()}}));
    } else {
      c.out.ErrLine("no pools available");
    }
    return rc;
  }
  json jpools = json::object();
  std::string text;
  bool shown = false;
  for (const auto& e : pools) {
    MutexLock l(&e->mu);
    if (e->pool == nullptr) continue;
    if (as_json) {
      jpools[e->rec.name] = StatusJson(*e);
      continue;
    }
    const PoolTrouble trouble = TroubleOf(*e);
    if (a.Has('x') && HealthOf(*e->pool) == "ONLINE" && !trouble.any()) {
      if (!a.operands.empty()) text += "pool '" + e->rec.name + "' is healthy\n";
      continue;
    }
    if (shown) text += "\n";
    text += StatusText(*e, trouble, a.Has('v'));
    shown = true;
  }
  if (as_json) {
    c.out.Out(Dump(json{{"output_version", OutputVersion("zpool status")}, {"pools", jpools}}));
  } else {
    if (a.Has('x') && !shown && a.operands.empty()) text = "all pools are healthy\n";
    c.out.Out(text);
  }
  return rc;
}

// ------------------------------------------------------------------ get / set

int Get(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "Hpj", "o", {"json"});
  if (!a.error.empty()) return Usage(c, "get", a.error);
  if (a.operands.empty()) return Usage(c, "get", "missing property argument");
  const bool scripted = a.Has('H'), parsable = a.Has('p');
  const bool as_json = a.Has('j') || a.HasLong("json");
  std::vector<std::string> fields = {"name", "property", "value", "source"};
  if (!a.Values('o').empty()) {
    fields.clear();
    for (const std::string& o : a.Values('o')) {
      for (const std::string& f : SplitComma(o)) {
        if (f == "all") {
          fields = {"name", "property", "value", "source"};
          continue;
        }
        if (f != "name" && f != "property" && f != "value" && f != "source") {
          return Usage(c, "get", "invalid field '" + f + "'");
        }
        fields.push_back(f);
      }
    }
  }
  std::vector<std::string> wanted;
  bool all = false;
  for (const std::string& p : SplitComma(a.operands[0])) {
    if (p == "all") {
      all = true;
    } else {
      wanted.push_back(CanonicalPoolProp(p));
      if (!KnownPoolProp(wanted.back()) && !wanted.back().starts_with("feature@") &&
          !wanted.back().starts_with("unsupported@"))
        return Usage(c, "get", "bad property list: invalid property '" + p + "'");
    }
  }
  int rc = 0;
  auto pools = SelectPools(c, std::vector<std::string>(a.operands.begin() + 1, a.operands.end()), &rc);
  std::vector<std::vector<std::string>> rows;
  json jpools = json::object();
  for (const auto& e : pools) {
    MutexLock l(&e->mu);
    if (e->pool == nullptr) continue;
    auto pr = PoolPropRows(*e, parsable);
    if (!pr.ok()) {
      rc = c.Fail(ErrorLine(pr.status(), "open", e->rec.name));
      continue;
    }
    std::vector<PoolPropRow> sel;
    if (all) {
      sel = *pr;
    } else {
      for (const std::string& w : wanted) {
        bool found = false;
        for (const PoolPropRow& r : *pr) {
          if (r.name == w) {
            sel.push_back(r);
            found = true;
          }
        }
        if (!found && w == "name") {
          sel.push_back(PoolPropRow{"name", e->rec.name, "-"});
          found = true;
        }
        if (!found) return Usage(c, "get", "bad property list: invalid property '" + w + "'");
      }
    }
    json jprops = json::object();
    for (const PoolPropRow& r : sel) {
      std::vector<std::string> row;
      for (const std::string& f : fields) {
        row.push_back(f == "name" ? e->rec.name : f == "property" ? r.name : f == "value" ? r.value : r.source);
      }
      rows.push_back(row);
      jprops[r.name] = {{"value", r.value}, {"source", SourceJson(r.source)}};
    }
    json jp = PoolJsonHead(*e);
    jp["properties"] = jprops;
    jpools[e->rec.name] = jp;
  }
  if (as_json) {
    c.out.Out(Dump(json{{"output_version", OutputVersion("zpool get")}, {"pools", jpools}}));
    return rc;
  }
  std::vector<Column> cols;
  for (const std::string& f : fields) cols.push_back(Column{Upper(f), false});
  if (!rows.empty()) c.out.Out(RenderTable(cols, rows, scripted));
  return rc;
}

int Set(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "", "");
  if (!a.error.empty()) return Usage(c, "set", a.error);
  if (a.operands.empty()) return Usage(c, "set", "missing property=value argument");
  if (a.operands.size() < 2) return Usage(c, "set", "missing pool name");
  if (a.operands.size() > 2) return Usage(c, "set", "too many pool names");
  const std::string kv = a.operands[0], name = a.operands[1];
  const size_t eq = kv.find('=');
  if (eq == std::string::npos) return Usage(c, "set", "missing '=' for property=value argument");
  const std::string k = CanonicalPoolProp(kv.substr(0, eq)), v = kv.substr(eq + 1);
  auto e = c.reg.Find(name);
  if (e == nullptr) return c.Fail("cannot open '" + name + "': no such pool");
  MutexLock l(&e->mu);
  if (e->pool == nullptr) return c.Fail("cannot open '" + name + "': no such pool");
  if (k.starts_with("feature@")) {
    const std::optional<std::string> g = KnownFeatureGuid(k.substr(8));
    if (!g) return c.Fail("cannot set property for '" + name + "': property '" + k + "' is not a valid pool property");
    if (v != "enabled") return c.Fail("cannot set property for '" + name + "': property '" + k + "' can only be set to 'enabled'");
    if (e->pool->readonly()) return c.Fail("cannot set property for '" + name + "': pool is read-only");
    e->pool->LogHistory(c.cmdline);
    if (Status s = e->pool->EnableFeature(*g); !s.ok()) {
      return c.Fail("cannot set property for '" + name + "': " + std::string(s.message()));
    }
    return 0;
  }
  PropContext ctx;
  ctx.target = name;
  ctx.pool_version = e->pool->version();
  auto pv = ParsePoolProp(k, v, ctx);
  if (!pv.ok()) return c.Fail(std::string(pv.status().message()));
  if (k == "version") {
    return c.Fail("cannot set property for '" + name + "': upgrading a pool is not supported by uzfs yet");
  }
  if (k == "readonly") {
    return c.Fail("cannot set property for '" + name + "': property 'readonly' can only be set at import time");
  }
  if (e->pool->readonly()) return c.Fail("cannot set property for '" + name + "': pool is read-only");
  const PropDef* d = FindPoolProp(k);
  if (d != nullptr && d->storage == PropStorage::kPoolZap) {
    // In the pool itself: it moves with the pool (zfs-fuse reads it too).
    e->pool->LogHistory(c.cmdline);
    if (Status s = e->pool->SetPoolProps({{k, v}}); !s.ok()) return c.Fail(std::string(s.message()));
    return 0;
  }
  e->rec.props[k] = v;  // cachefile: this host's, not the pool's
  c.reg.UpdateCache(e->rec);
  e->pool->LogHistory(c.cmdline);
  return 0;
}

// ------------------------------------------------------------------ sync

// zpool sync [pool] ...: what the kernel still holds for the pools' mounts
// goes to the daemon first (syncfs on each mountpoint writes the FUSE
// mount's dirty pages back), then each pool writes its open transaction
// group to its disks, so space figures and the disks are current. No pool
// named: every imported pool. Read-only pools have nothing to write.
int Sync(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "", "");
  if (!a.error.empty()) return Usage(c, "sync", a.error);
  std::vector<std::shared_ptr<PoolEntry>> pools;
  if (a.operands.empty()) pools = c.reg.All();
  for (const std::string& name : a.operands) {
    auto e = c.reg.Find(name);
    if (e == nullptr) return c.Fail("cannot open '" + name + "': no such pool");
    pools.push_back(e);
  }
  int rc = 0;
  for (const auto& e : pools) {
    std::vector<std::string> paths;
    {
      MutexLock l(&e->mu);
      if (e->pool == nullptr || e->pool->readonly()) continue;
      for (const DatasetMount* m : e->mounts.List()) paths.push_back(m->path);
    }
    // Without the pool's lock: the write-back is served by the mounts' workers.
    for (const std::string& p : paths) {
      const int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0) continue;  // unmounted meanwhile
      (void)::syncfs(fd);
      ::close(fd);
    }
    MutexLock l(&e->mu);
    if (e->pool == nullptr) continue;
    if (Status s = e->pool->Sync(); !s.ok()) {
      c.out.ErrLine("cannot sync '" + e->rec.name + "': " + std::string(s.message()));
      rc = 1;
    }
  }
  return rc;
}

// ------------------------------------------------------------------ history

int History(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "il", "");
  if (!a.error.empty()) return Usage(c, "history", a.error);
  int rc = 0;
  auto pools = SelectPools(c, a.operands, &rc);
  if (pools.empty() && a.operands.empty()) {
    c.out.ErrLine("no pools available");
    return rc;
  }
  bool first = true;
  for (const auto& e : pools) {
    MutexLock l(&e->mu);
    if (e->pool == nullptr) continue;
    if (!e->pool->readonly()) {
      if (Status s = e->pool->Sync(); !s.ok()) {
        rc = c.Fail(ErrorLine(s, "get history for", e->rec.name));
        continue;
      }
    }
    auto h = ReadHistory(e->rec.devices, e->pool->guid());
    if (!h.ok()) {
      rc = c.Fail(ErrorLine(h.status(), "get history for", e->rec.name));
      continue;
    }
    std::string t = first ? "" : "\n";
    first = false;
    t += "History for '" + e->rec.name + "':\n";
    for (const HistoryRecord& r : *h) {
      char ts[64];
      const time_t tt = static_cast<time_t>(r.time);
      struct tm tm;
      ::localtime_r(&tt, &tm);
      std::strftime(ts, sizeof ts, "%Y-%m-%d.%H:%M:%S", &tm);
      t += std::string(ts) + " " + r.command;
      if (a.Has('l')) {
        std::string user = std::to_string(r.who);
        struct passwd pw, *res = nullptr;
        char buf[1024];
        if (::getpwuid_r(static_cast<uid_t>(r.who), &pw, buf, sizeof buf, &res) == 0 && res != nullptr) {
          user += std::string(" (") + pw.pw_name + ")";
        }
        t += " [user " + user + " on " + r.hostname + "]";
      }
      t += "\n";
    }
    c.out.Out(t);
  }
  return rc;
}

// ------------------------------------------------------------------ iostat

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

int Iostat(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "vHpyn", "T");
  if (!a.error.empty()) return Usage(c, "iostat", a.error);
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
    return Usage(c, "iostat", "interval cannot be zero");
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

}  // namespace

// ------------------------------------------------------------------ shared

std::string ErrorLine(const Status& s, const std::string& action, const std::string& name) {
  std::string m(s.message());
  if (m.rfind("cannot ", 0) == 0 || m.rfind("invalid vdev specification", 0) == 0) return m;
  return "cannot " + action + " '" + name + "': " + m;
}

int ReportMountErrors(CmdCtx& c, PoolEntry& e) {
  MutexLock l(&e.mu);
  for (const std::string& m : e.mount_errors) c.out.ErrLine(m);
  return e.mount_errors.empty() ? 0 : 1;
}

std::string AbsPath(const std::string& cwd, const std::string& p) {
  if (p.empty() || p[0] == '/' || cwd.empty()) return p;
  return cwd + "/" + p;
}

Result<std::shared_ptr<PoolEntry>> MakeEntry(std::unique_ptr<Pool> pool, CacheRecord rec, const PoolShape* shape,
                                             Registry& reg, bool mount) {
  auto e = std::make_shared<PoolEntry>();
  MutexLock l(&e->mu);
  e->mounts.SetLog([&log = reg.log()](const std::string& line) { log.Log(line); });
  pool->SetEventLog([&log = reg.log()](const std::string& line) { log.Log(line); });
  if (pool->readonly()) {
    // Closing a read-only pool writes nothing.
    UZFS_RETURN_IF_ERROR(e->ro_locks.Take(PoolDevicePaths(*pool, PoolShape{})));
  }
  PoolShape sh;
  if (shape != nullptr) {
    sh = *shape;
  } else {
    // The live tree's leaves give the directories to read the MOS config from.
    std::vector<std::string> leaves = PoolDevicePaths(*pool, PoolShape{});
    auto r = ReadShape(leaves, pool->guid());
    if (r.ok()) {
      sh = *r;
    } else {
      reg.log().Log("pool '" + pool->name() + "': cannot read its config's log/spare/cache sections: " +
                    std::string(r.status().message()));
    }
  }
  // Properties stored in the pool (`create -o`, `import -o`, or a record
  // an older uzfsd wrote when it kept them in the cache file) go into its
  // pool_props ZAP; the record keeps what is this host's (cachefile), and
  // a read-only import's values (nothing can be written).
  // One at a time, so a bad one (a bootfs that is gone) costs only itself;
  // its error is reported with the mount errors.
  std::vector<std::string> prop_errors;
  if (!pool->readonly()) {
    for (auto it = rec.props.begin(); it != rec.props.end();) {
      const PropDef* d = FindPoolProp(it->first);
      if (d == nullptr || d->storage != PropStorage::kPoolZap) {
        ++it;
        continue;
      }
      if (Status s = pool->SetPoolProps({{it->first, it->second}}); !s.ok()) {
        prop_errors.push_back(std::string(s.message()));
        reg.log().Log("pool '" + pool->name() + "': " + std::string(s.message()));
      }
      it = rec.props.erase(it);
    }
  }
  rec.name = pool->name();
  rec.guid = pool->guid();
  rec.readonly = pool->readonly();
  rec.devices = PoolDevicePaths(*pool, sh);
  e->shape = std::move(sh);
  e->rec = rec;
  e->since = std::chrono::steady_clock::now();
  e->pool = std::move(pool);
  // Mount every dataset that mounts automatically, as zpool create/import do.
  e->mount_errors.clear();
  if (mount) e->mounts.MountAll(*e->pool, rec.altroot, &e->mount_errors);
  e->mount_errors.insert(e->mount_errors.end(), prop_errors.begin(), prop_errors.end());
  for (const std::string& m : e->mount_errors) reg.log().Log(m);
  reg.Add(rec.name, e, rec);
  return e;
}

namespace {

std::span<const Sub> Subs() {
  using L = SubLock;
  static const Sub kSubs[] = {
      {"create", "\tcreate [-fnd] [-o property=value] ... \n"
                 "\t    [-O file-system-property=value] ... \n"
                 "\t    [-m mountpoint] [-R root] <pool> <vdev> ...\n",
       Create, L::kLifecycle},
      {"destroy", "\tdestroy [-f] <pool>\n", [](CmdCtx& c) { return ExportOrDestroy(c, true); }, L::kLifecycle},
      {"export", "\texport [-af] <pool> ...\n", [](CmdCtx& c) { return ExportOrDestroy(c, false); },
       L::kLifecycle},
      {"import", "\timport [-d dir] [-D]\n"
                 "\timport [-o mntopts] [-o property=value] ... \n"
                 "\t    [-d dir] [-D] [-f] [-F] [-N] [-R root] [-T txg] -a\n"
                 "\timport [-o mntopts] [-o property=value] ... \n"
                 "\t    [-d dir] [-D] [-f] [-F] [-N] [-R root] [-T txg] <pool | id> [newpool]\n",
       [](CmdCtx& c) { return ZpoolImport(c, UsageOf("import")); }, L::kLifecycle},
      {"list", "\tlist [-Hpv] [-j] [-o property[,...]] [pool] ...\n", List},
      {"iostat", "\tiostat [-v] [pool] ... [interval [count]]\n", Iostat},
      {"status", "\tstatus [-vx] [-j] [pool] ...\n", StatusCmd},
      {"history", "\thistory [-il] [<pool>] ...\n", History},
      {"get", "\tget [-Hp] [-j] [-o \"all\" | field[,...]] <\"all\" | property[,...]> [pool] ...\n", Get},
      {"set", "\tset <property=value> <pool>\n", Set},
      {"arcstats", "\tarcstats [-j]\n", [](CmdCtx& c) { return ZpoolArcstats(c, UsageOf("arcstats")); }},
      {"tunable", "\ttunable [-Hj] [name[=value]] ...\n", [](CmdCtx& c) { return ZpoolTunable(c, UsageOf("tunable")); }},
      {"add", "\tadd [-fn] <pool> <vdev> ...\n", [](CmdCtx& c) { return ZpoolAdd(c, UsageOf("add")); }, L::kLifecycle},
      {"remove", "\tremove <pool> <device> ...\n", [](CmdCtx& c) { return ZpoolRemove(c, UsageOf("remove")); },
       L::kLifecycle},
      {"sync", "\tsync [pool] ...\n", Sync},
      // ZFS subcommands uzfs does not offer yet.
      {"attach", nullptr}, {"detach", nullptr}, {"replace", nullptr}, {"online", nullptr},
      {"offline", nullptr}, {"scrub", nullptr}, {"clear", nullptr}, {"upgrade", nullptr},
      {"events", nullptr}, {"split", nullptr}, {"reguid", nullptr}, {"reopen", nullptr},
      {"labelclear", nullptr}, {"initialize", nullptr}, {"trim", nullptr}, {"wait", nullptr},
      {"checkpoint", nullptr},
  };
  return kSubs;
}

}  // namespace

int RunZpool(Registry& reg, Output& out, const Request& req, const std::atomic<bool>& stopping) {
  return RunSubcommand("zpool", Subs(), GlobalUsage(), reg, out, req, stopping);
}

}  // namespace uzfs::cmd
