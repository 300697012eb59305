// zpool get and set on vdevs (man/zpool.8, OpenZFS 2.2's vdevprops(7)):
// `zpool get all|PROP[,...] POOL all-vdevs|VDEV...` and `zpool set
// PROP=VALUE POOL VDEV`. A vdev is named as zpool status shows it (a
// leaf's path, "mirror-0", "raidz2-1"), by a leaf's file name, or by its
// guid; all-vdevs is every vdev of the data and log classes.
//
// The read-only properties are the vdev's live state and statistics, in
// OpenZFS's order: space (a top-level vdev of the normal class has its
// metaslabs' alloc/free; other vdevs show "-" where uzfs keeps no
// figure), identity and place in the tree, error and I/O counters since
// import. comment and user properties (module:name) are stored in the
// pool (Pool::SetVdevProps: the vdev's ZAP, as OpenZFS keeps them), so
// they move with it. The settable properties that steer OpenZFS's
// behaviour (allocating, failfast, checksum_n/t, io_n/t, slow_io_n/t) are
// refused by name: uzfs does not act on them.
#include <algorithm>
#include <functional>

#include "cmd/uzfsd/args.h"
#include "cmd/uzfsd/zpool_handlers.h"
#include "cmd/uzfsd/zpool_report.h"
#include "zfs/dsl/pool_space.h"
#include "zfs/dsl/prop_table.h"

namespace uzfs::cmd {
namespace {

// OpenZFS 2.2's vdev properties as `zpool get all` lists them; those
// marked settable take a value there.
struct VdevPropName {
  const char* name;
  bool settable;
};
constexpr VdevPropName kVdevProps[] = {
    {"capacity", false},        {"state", false},           {"guid", false},
    {"asize", false},           {"psize", false},           {"ashift", false},
    {"size", false},            {"free", false},            {"allocated", false},
    {"comment", true},          {"expandsize", false},      {"fragmentation", false},
    {"parity", false},          {"path", true},             {"devid", false},
    {"physpath", false},        {"encpath", false},         {"fru", false},
    {"parent", false},          {"children", false},        {"numchildren", false},
    {"read_errors", false},     {"write_errors", false},    {"checksum_errors", false},
    {"initialize_errors", false}, {"null_ops", false},      {"read_ops", false},
    {"write_ops", false},       {"free_ops", false},        {"claim_ops", false},
    {"trim_ops", false},        {"null_bytes", false},      {"read_bytes", false},
    {"write_bytes", false},     {"free_bytes", false},      {"claim_bytes", false},
    {"trim_bytes", false},      {"removing", false},        {"allocating", true},
    {"failfast", true},         {"checksum_n", true},       {"checksum_t", true},
    {"io_n", true},             {"io_t", true},             {"slow_io_n", true},
    {"slow_io_t", true},
};

const VdevPropName* FindVdevProp(const std::string& name) {
  for (const VdevPropName& p : kVdevProps) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

std::string Basename(const std::string& p) {
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

const VdevNode* FindNode(const VdevNode& n, uint64_t guid) {
  if (n.guid == guid) return &n;
  for (const VdevNode& c : n.children) {
    if (const VdevNode* f = FindNode(c, guid)) return f;
  }
  return nullptr;
}

// The vdevs an operand names: all-vdevs, or the one row whose name, file
// name or guid it is.
std::vector<VdevRow> MatchVdevs(const std::vector<VdevRow>& rows, const std::string& op) {
  std::vector<VdevRow> out;
  for (const VdevRow& r : rows) {
    if (r.vdev == nullptr) continue;
    if (op == "all-vdevs" || r.name == op || std::to_string(r.vdev->guid()) == op ||
        (r.vdev->children().empty() && Basename(r.name) == op)) {
      out.push_back(r);
      if (op != "all-vdevs") break;
    }
  }
  return out;
}

struct VdevPropRow {
  std::string name, value, source;
};

// Every property of one vdev, in kVdevProps order, then its user
// properties sorted.
std::vector<VdevPropRow> VdevPropRows(PoolEntry& e, const VdevRow& r, const Result<PoolSpaceReport>& space,
                                      const Pool::ConfigView& config,
                                      const std::vector<std::pair<std::string, std::string>>& stored,
                                      bool parsable) UZFS_REQUIRES(e.mu) {
  Vdev& v = *r.vdev;
  const VdevNode* node = FindNode(config.tree, v.guid());
  const PoolSpaceVdev* sv = nullptr;
  if (r.top && space.ok() && !v.is_log()) {
    for (const PoolSpaceVdev& s : space->vdevs) {
      if (s.vdev_id == v.id()) sv = &s;
    }
  }
  auto num = [](uint64_t n) { return std::to_string(n); };
  auto size = [&](uint64_t n) { return SizeText(n, parsable); };
  const Vdev::Counters errs = v.counters();
  const Vdev::IoCounters io = v.io_counters();
  const bool leaf = v.children().empty();
  std::vector<VdevPropRow> out;
  for (const VdevPropName& p : kVdevProps) {
    const std::string k = p.name;
    std::string val = "-", src = "-";
    if (k == "capacity") {
      if (sv != nullptr && sv->size != 0) val = num(sv->alloc * 100 / sv->size) + (parsable ? "" : "%");
    } else if (k == "state") {
      val = std::string(VdevStateName(v.state()));
    } else if (k == "guid") {
      val = num(v.guid());
    } else if (k == "asize") {
      val = size(v.asize());
    } else if (k == "psize") {
      if (leaf && v.device() != nullptr) val = size(v.device()->Size());
    } else if (k == "ashift") {
      val = num(v.ashift());
    } else if (k == "size") {
      val = size(sv != nullptr ? sv->size : v.asize());
    } else if (k == "free") {
      if (sv != nullptr) val = size(sv->free);
    } else if (k == "allocated") {
      if (sv != nullptr) val = size(sv->alloc);
    } else if (k == "comment") {
      src = "default";
      for (const auto& [sk, sval] : stored) {
        if (sk == "comment") val = sval, src = "local";
      }
    } else if (k == "parity") {
      val = num(node != nullptr && node->type == "raidz" ? node->nparity : 0);
    } else if (k == "path") {
      if (leaf) val = r.name;
    } else if (k == "parent") {
      val = r.top ? e.rec.name : v.parent() != nullptr ? v.parent()->name() : "-";
    } else if (k == "children") {
      std::string names;
      for (Vdev* ch : v.children()) names += (names.empty() ? "" : ",") + ch->name();
      if (!names.empty()) val = names;
    } else if (k == "numchildren") {
      val = num(v.children().size());
    } else if (k == "read_errors") {
      val = num(errs.read_errors);
    } else if (k == "write_errors") {
      val = num(errs.write_errors);
    } else if (k == "checksum_errors") {
      val = num(errs.checksum_errors);
    } else if (k == "initialize_errors") {
      val = "0";
    } else if (k == "read_ops" || k == "write_ops" || k == "read_bytes" || k == "write_bytes") {
      const uint64_t n = k == "read_ops" ? io.read_ops : k == "write_ops" ? io.write_ops
                         : k == "read_bytes" ? io.read_bytes : io.write_bytes;
      val = k.ends_with("_bytes") ? size(n) : num(n);
    } else if (k.ends_with("_ops")) {
      val = "0";  // uzfs issues no null, free or claim I/O to a vdev, and no trim yet
    } else if (k.ends_with("_bytes")) {
      val = size(0);
    } else if (k == "expandsize" || k == "fragmentation" || k == "devid" || k == "physpath" || k == "encpath" ||
               k == "fru") {
      // Not kept by uzfs: shown as OpenZFS shows a value it lacks.
    } else if (k == "removing") {
      val = "off";
    } else if (k == "allocating") {
      // Normal-class and log top-level vdevs take allocations.
      if (r.top) val = "on", src = "default";
    } else {
      continue;  // behaviour knobs uzfs does not act on: not listed
    }
    out.push_back(VdevPropRow{k, val, src});
  }
  for (const auto& [sk, sval] : stored) {
    if (sk != "comment") out.push_back(VdevPropRow{sk, sval, "local"});
  }
  return out;
}

}  // namespace

bool NamesVdevs(CmdCtx& c, const std::vector<std::string>& operands) {
  if (operands.size() < 2) return false;
  auto e = c.reg.Find(operands[0]);
  if (e == nullptr) return false;
  MutexLock l(&e->mu);
  if (e->pool == nullptr) return false;
  // As OpenZFS decides: vdevs when every operand after the pool is one.
  const std::vector<VdevRow> rows = TreeRows(*e, false);
  for (size_t i = 1; i < operands.size(); i++) {
    if (MatchVdevs(rows, operands[i]).empty()) return false;
  }
  return true;
}

int ZpoolGetVdevs(CmdCtx& c, const std::vector<std::string>& asked, const std::vector<std::string>& operands,
                  const std::vector<std::string>& fields, bool scripted, bool parsable, bool as_json) {
  const bool all = asked.size() == 1 && asked[0] == "all";
  for (const std::string& p : asked) {
    if (p == "all" && asked.size() > 1) {
      return ZpoolUsage(c, "get", "bad property list: 'all' can only be used by itself");
    }
    if (p != "all" && FindVdevProp(p) == nullptr && p != "name" && !IsUserProp(p)) {
      return ZpoolUsage(c, "get", "bad property list: invalid property '" + p + "'");
    }
  }
  const std::string& pool = operands[0];
  auto e = c.reg.Find(pool);
  if (e == nullptr) return c.Fail("cannot open '" + pool + "': no such pool");
  MutexLock l(&e->mu);
  if (e->pool == nullptr) return c.Fail("cannot open '" + pool + "': no such pool");
  const std::vector<VdevRow> tree = TreeRows(*e, false);
  std::vector<VdevRow> chosen;
  int rc = 0;
  for (size_t i = 1; i < operands.size(); i++) {
    std::vector<VdevRow> m = MatchVdevs(tree, operands[i]);
    if (m.empty()) rc = c.Fail("cannot get property for '" + operands[i] + "': no such device in pool '" + pool + "'");
    chosen.insert(chosen.end(), m.begin(), m.end());
  }
  const Result<PoolSpaceReport> space = PoolListSpace(*e->pool);
  const Pool::ConfigView config = e->pool->Config();
  std::vector<std::vector<std::string>> rows;
  json jvdevs = json::object();
  for (const VdevRow& r : chosen) {
    auto stored = e->pool->VdevProps(r.vdev->guid());
    if (!stored.ok()) {
      rc = c.Fail("cannot get property for '" + r.name + "': " + std::string(stored.status().message()));
      continue;
    }
    const std::vector<VdevPropRow> props = VdevPropRows(*e, r, space, config, *stored, parsable);
    std::vector<VdevPropRow> sel;
    if (all) {
      sel = props;
    } else {
      for (const std::string& w : asked) {
        auto it = std::find_if(props.begin(), props.end(), [&](const VdevPropRow& p) { return p.name == w; });
        if (it != props.end()) {
          sel.push_back(*it);
        } else if (w == "name") {
          sel.push_back(VdevPropRow{"name", r.name, "-"});
        } else {
          // A user property not set, or a knob uzfs does not act on.
          sel.push_back(VdevPropRow{w, "-", "-"});
        }
      }
    }
    json jprops = json::object();
    for (const VdevPropRow& p : sel) {
      std::vector<std::string> row;
      for (const std::string& f : fields) {
        row.push_back(f == "name" ? r.name : f == "property" ? p.name : f == "value" ? p.value : p.source);
      }
      rows.push_back(std::move(row));
      jprops[p.name] = {{"value", p.value}, {"source", SourceJson(p.source)}};
    }
    jvdevs[r.name] = {{"name", r.name}, {"pool", pool}, {"guid", std::to_string(r.vdev->guid())},
                      {"properties", jprops}};
  }
  if (as_json) {
    c.out.Out(Dump(json{{"output_version", OutputVersion("zpool get")}, {"vdevs", jvdevs}}));
    return rc;
  }
  std::vector<Column> cols;
  for (const std::string& f : fields) cols.push_back(Column{Upper(f), false});
  if (!rows.empty()) c.out.Out(RenderTable(cols, rows, scripted));
  return rc;
}

int ZpoolSetVdev(CmdCtx& c, const std::string& key, const std::string& value, const std::string& pool,
                 const std::string& vdev) {
  auto e = c.reg.Find(pool);
  if (e == nullptr) return c.Fail("cannot open '" + pool + "': no such pool");
  MutexLock l(&e->mu);
  if (e->pool == nullptr) return c.Fail("cannot open '" + pool + "': no such pool");
  const std::vector<VdevRow> m = MatchVdevs(TreeRows(*e, false), vdev);
  if (m.empty() || vdev == "all-vdevs") {
    return c.Fail("cannot set property for '" + vdev + "': no such device in pool '" + pool + "'");
  }
  const std::string q = "cannot set property for '" + vdev + "': ";
  const VdevPropName* d = FindVdevProp(key);
  if (d == nullptr && !IsUserProp(key)) return c.Fail(q + "invalid property '" + key + "'");
  if (d != nullptr && !d->settable) return c.Fail(q + "property '" + key + "' is readonly");
  if (d != nullptr && key != "comment") return c.Fail(q + "property '" + key + "' is not supported by uzfs");
  if (e->pool->readonly()) return c.Fail(q + "pool is read-only");
  if (Status s = e->pool->SetVdevProps(m[0].vdev->guid(), vdev, {{key, value}}); !s.ok()) {
    return c.Fail(std::string(s.message()));
  }
  e->pool->LogHistory(c.cmdline);
  return 0;
}

}  // namespace uzfs::cmd
