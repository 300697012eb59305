// What zpool list, get, status and iostat read off an imported pool
// (zpool_report.h): the property rows with their sources, column names and
// aliases, the JSON heads, the vdev tree's rows. Callers hold the entry's
// lock; nothing here changes a pool.
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <set>

#include "cmd/uzfsd/zpool_report.h"

#include "zfs/dsl/pool_build.h"
#include "zfs/dsl/pool_space.h"

namespace uzfs::cmd {

std::string HealthOf(Pool& p) { return std::string(VdevStateName(p.root_vdev().state())); }

namespace {

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
  st.load_guid = e.load_guid;
  return st;
}

// What uzfs adds to the table's rows, as legacy pools list them after it.
constexpr const char* kLegacyExtras[] = {"fragmentation", "expandsize", "checkpoint", "freeing",
                                         "leaked",        "usable",     "available",  "readonly"};

// `zpool get all` of a feature-flag pool: OpenZFS 2.x's property order
// (its zpool_prop_t enumeration, hidden ones out), then uzfs's usable and
// available. dedupditto is not there: OpenZFS 2.x hides it.
constexpr const char* kOpenZfsListing[] = {
    "size",          "capacity",    "altroot",     "health",           "guid",     "version",
    "bootfs",        "delegation",  "autoreplace", "cachefile",        "failmode", "listsnapshots",
    "autoexpand",    "dedupratio",  "free",        "allocated",        "readonly", "ashift",
    "comment",       "expandsize",  "freeing",     "fragmentation",    "leaked",   "multihost",
    "checkpoint",    "load_guid",   "autotrim",    "compatibility",    "bcloneused", "bclonesaved",
    "bcloneratio",   "dedup_table_size", "usable", "available"};

}  // namespace

// Every property uzfs answers: those `get all` lists, in its order, then
// the others (zpool_report.h).
Result<std::vector<PoolPropRow>> PoolPropRows(PoolEntry& e, bool parsable) UZFS_REQUIRES(e.mu) {
  UZFS_ASSIGN_OR_RETURN(PoolSpaceReport sp, PoolListSpace(*e.pool));
  UZFS_ASSIGN_OR_RETURN(Pool::StoredPoolProps stored, PoolZapOf(e));
  const PoolPropState st = StateOf(e, sp, stored.bootfs_name);
  const uint64_t version = e.pool->version();
  // Every row by name: the table's, then the pool's figures uzfs adds.
  std::vector<PoolPropRow> all;
  for (const PropDef& d : PoolProps()) {
    if (d.name == "name") continue;
    UZFS_ASSIGN_OR_RETURN(ResolvedProp p, ResolvePoolProp(d.name, stored.zap, st));
    std::string v = FormatPoolProp(p.name, p.value, parsable);
    if (!parsable && (p.name == "size" || p.name == "free" || p.name == "allocated")) {
      v = HumanSize(p.value.number);
    }
    if (parsable && (p.name == "dedupratio" || p.name == "bcloneratio") && !v.empty() && v.back() == 'x') v.pop_back();
    std::string src = p.SourceText();
    if (p.name == "version" && version == kFeatureVersion) {
      v = "-";  // feature flags: no version number (OpenZFS prints "-")
      src = "default";
    }
    if (p.name == "guid") src = "-";
    all.push_back(PoolPropRow{p.name, v, src});
  }
  const uint64_t usable = sp.dspace > sp.slop ? sp.dspace - sp.slop : 0;
  UZFS_ASSIGN_OR_RETURN(const Pool::AsyncDestroyState freeing, e.pool->AsyncDestroy());
  all.push_back(PoolPropRow{"fragmentation", "-", "-"});
  all.push_back(PoolPropRow{"expandsize", "-", "-"});
  all.push_back(PoolPropRow{"checkpoint", "-", "-"});
  all.push_back(PoolPropRow{"freeing", SizeText(freeing.freeing, parsable), "-"});
  all.push_back(PoolPropRow{"leaked", SizeText(freeing.leaked, parsable), "-"});
  all.push_back(PoolPropRow{"usable", SizeText(sp.dspace, parsable), "-"});
  all.push_back(PoolPropRow{"available", SizeText(usable, parsable), "-"});
  all.push_back(PoolPropRow{"readonly", e.rec.readonly ? "on" : "off", "-"});

  // The listing's names, in order.
  std::vector<std::string> order;
  if (version < kFeatureVersion) {
    for (const PropDef& d : PoolProps()) {
      if (ListedByGetAll(d, version)) order.emplace_back(d.name);
    }
    for (const char* n : kLegacyExtras) order.emplace_back(n);
  } else {
    for (const char* n : kOpenZfsListing) order.emplace_back(n);
  }
  std::vector<PoolPropRow> rows;
  std::vector<bool> taken(all.size(), false);
  for (const std::string& n : order) {
    for (size_t i = 0; i < all.size(); i++) {
      if (all[i].name != n || taken[i]) continue;
      rows.push_back(all[i]);
      taken[i] = true;
    }
  }
  for (size_t i = 0; i < all.size(); i++) {
    if (taken[i]) continue;
    rows.push_back(all[i]);
    rows.back().listed = false;  // by name only
  }
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
  // User properties (module:name) last, by name.
  std::vector<PoolPropRow> user;
  for (const PropZapEntry& z : stored.zap) {
    if (IsUserProp(z.name) && z.value.is_string) user.push_back(PoolPropRow{z.name, z.value.string, "local"});
  }
  std::sort(user.begin(), user.end(), [](const PoolPropRow& a, const PoolPropRow& b) { return a.name < b.name; });
  rows.insert(rows.end(), user.begin(), user.end());
  return rows;
}

// Properties PoolPropRows answers: the table's and these.
bool KnownPoolProp(const std::string& p) {
  static const std::set<std::string> kExtra = {"name", "fragmentation", "expandsize", "checkpoint", "freeing",
                                               "leaked", "usable", "available", "readonly"};
  return kExtra.count(p) != 0 || FindPoolProp(p) != nullptr;
}

// zpool's short column names and the properties they stand for: list and
// get take either, and the short name, upper-cased, heads the column.
struct ColumnAlias {
  const char* shortname;
  const char* prop;
};
constexpr ColumnAlias kColumnAliases[] = {
    {"alloc", "allocated"},   {"cap", "capacity"},      {"frag", "fragmentation"},
    {"dedup", "dedupratio"},  {"expandsz", "expandsize"}, {"ckpoint", "checkpoint"},
    {"avail", "available"},   {"expand", "autoexpand"},  {"replace", "autoreplace"}};

std::string CanonicalPoolProp(const std::string& n) {
  for (const ColumnAlias& a : kColumnAliases) {
    if (n == a.shortname) return a.prop;
  }
  return n;
}

bool RightAligned(const std::string& prop) {
  static const std::set<std::string> kNum = {"size", "allocated", "free", "checkpoint", "expandsize",
                                            "fragmentation", "capacity", "dedupratio", "freeing", "leaked", "usable",
                                            "available", "guid", "version", "ashift", "load_guid",
                                            "bcloneused", "bclonesaved", "bcloneratio", "dedup_table_size"};
  return kNum.count(prop) != 0;
}

std::string ColumnHeader(const std::string& prop) {
  for (const ColumnAlias& a : kColumnAliases) {
    if (prop == a.prop) return Upper(a.shortname);
  }
  return Upper(prop);
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
  // Spares as the pool has them now (one may have taken over by itself, or
  // become a lasting member): INUSE while one stands in a spare vdev.
  const Pool::ConfigView config = e.pool->Config();
  if (!config.spares.empty()) {
    std::vector<const VdevNode*> in_tree;
    CollectLeafNodes(config.tree, &in_tree);
    rows.push_back(VdevRow{"spares", 0, nullptr, false, {}, true});
    for (const VdevNode& sp : config.spares) {
      const bool used = std::any_of(in_tree.begin(), in_tree.end(), [&](const VdevNode* n) { return n->guid == sp.guid; });
      const std::string st = used ? "INUSE" : ::access(sp.path.c_str(), R_OK) == 0 ? "AVAIL" : "UNAVAIL";
      rows.push_back(VdevRow{sp.path, 1, nullptr, false, st, true});
    }
  }
  return rows;
}

}  // namespace uzfs::cmd
