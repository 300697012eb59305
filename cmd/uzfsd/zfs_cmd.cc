// zfs's subcommands inside the daemon (man/zfs.8): create, destroy, list,
// get, set, inherit, rename; mount/unmount answer that mounting is not
// available yet (the FUSE adapter will add it).
//
// Values and sources come from zfs/dsl/prop_table.h's inheritance walk over
// the dataset's chain of DSL props ZAPs (Pool::LocalProps), with the
// computed properties (used, available, referenced, creation, ...) taken
// from the DSL records (Pool::ListDatasets) and zfs/dsl/pool_space.h. A
// pool imported with an altroot shows mountpoints below it, as ZFS does.
// Layouts: ../shared/CLI.md §3 (NAME USED AVAIL REFER MOUNTPOINT; get's
// NAME PROPERTY VALUE SOURCE), -H/-p/-o/-s/-S/-j as in output.h.
#include <algorithm>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cmd/uzfsd/args.h"
#include "cmd/uzfsd/commands.h"
#include "cmd/uzfsd/subcommands.h"
#include "zfs/dsl/pool_space.h"
#include "zfs/dsl/prop_table.h"
#include "zfs/zpl/zpl_create.h"

namespace uzfs::cmd {

namespace {

// The subcommand table (defined at the end, after the handlers).
std::span<const Sub> Subs();

int Usage(CmdCtx& c, const std::string& sub, const std::string& why) {
  return UsageFail(c, Subs(), sub, why);
}

std::string GlobalUsage() {
  return cmd::GlobalUsage("zfs", Subs(),
                          "\tsnapshot, rollback, clone, promote, send, receive:\n\t    not available in uzfs yet\n");
}

std::string PoolOf(const std::string& ds) { return ds.substr(0, ds.find_first_of("/@#")); }

std::string Parent(const std::string& ds) {
  const size_t s = ds.rfind('/');
  return s == std::string::npos ? "" : ds.substr(0, s);
}

bool IsDescendant(const std::string& ds, const std::string& of) {
  return ds.size() > of.size() && ds.compare(0, of.size(), of) == 0 && ds[of.size()] == '/';
}

int Depth(const std::string& ds) { return static_cast<int>(std::count(ds.begin(), ds.end(), '/')); }

// One dataset with everything the listings need.
struct DsRow {
  std::string name;
  DatasetInfo info;
  DatasetSpace space;
  bool mounted = false;
};

Result<std::vector<DsRow>> PoolDatasets(Pool& p) {
  UZFS_ASSIGN_OR_RETURN(std::vector<DatasetInfo> infos, p.ListDatasets());
  UZFS_ASSIGN_OR_RETURN(std::vector<DatasetSpace> spaces, ListDatasetSpace(p));
  std::vector<DsRow> rows;
  for (DatasetInfo& i : infos) {
    DsRow r;
    r.name = i.name;
    r.info = std::move(i);
    for (const DatasetSpace& s : spaces) {
      if (s.name == r.name) r.space = s;
    }
    rows.push_back(std::move(r));
  }
  std::sort(rows.begin(), rows.end(), [](const DsRow& a, const DsRow& b) { return a.name < b.name; });
  return rows;
}

PropZap ZapFromLocal(const std::map<std::string, std::string>& local) {
  PropZap z;
  for (const auto& [k, v] : local) {
    const PropDef* d = FindDatasetProp(k);
    const bool numeric = d != nullptr && d->kind != PropKind::kString && !v.empty() &&
                         std::all_of(v.begin(), v.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    z.push_back(PropZapEntry{k, numeric ? PropValue::Number(std::strtoull(v.c_str(), nullptr, 10))
                                        : PropValue::String(v)});
  }
  return z;
}

Result<std::vector<DslPropLevel>> Chain(Pool& p, const std::string& ds) {
  std::vector<DslPropLevel> chain;
  for (std::string n = ds; !n.empty(); n = Parent(n)) {
    UZFS_ASSIGN_OR_RETURN(auto local, p.LocalProps(n));
    chain.push_back(DslPropLevel{n, ZapFromLocal(local)});
  }
  return chain;
}

PropZap Computed(const DsRow& r) {
  const DslDirPhys& d = r.info.dir;
  const DslDatasetPhys& s = r.info.ds;
  // Ratios in hundredths, never below 1.00x: compressratio over the DSL
  // directory (the dataset and its descendants, as OpenZFS counts it),
  // refcompressratio over what the dataset itself references.
  auto ratio_of = [](uint64_t uncompressed, uint64_t compressed) {
    return compressed == 0 ? uint64_t{100} : std::max<uint64_t>(uncompressed * 100 / compressed, 100);
  };
  PropZap z = {
      {"type", PropValue::String("filesystem")},
      {"creation", PropValue::Number(s.creation_time)},
      {"used", PropValue::Number(r.space.used)},
      {"available", PropValue::Number(r.space.avail)},
      {"referenced", PropValue::Number(r.space.refer)},
      {"compressratio", PropValue::Number(ratio_of(d.uncompressed_bytes, d.compressed_bytes))},
      {"refcompressratio", PropValue::Number(ratio_of(s.uncompressed_bytes, s.compressed_bytes))},
      // Referenced since the previous snapshot: uzfs has no snapshots yet,
      // so everything the dataset references.
      {"written", PropValue::Number(r.space.refer)},
      {"logicalused", PropValue::Number(d.uncompressed_bytes)},
      {"logicalreferenced", PropValue::Number(s.uncompressed_bytes)},
      {"mounted", PropValue::Number(r.mounted ? 1 : 0)},
      {"createtxg", PropValue::Number(s.creation_txg)},
      {"guid", PropValue::Number(s.guid)},
      {"usedbysnapshots", PropValue::Number(d.used_breakdown[1])},
      {"usedbydataset", PropValue::Number(d.used_breakdown[0])},
      {"usedbychildren", PropValue::Number(d.used_breakdown[2] + d.used_breakdown[3])},
      {"usedbyrefreservation", PropValue::Number(d.used_breakdown[4])},
      {"userrefs", PropValue::Number(0)},
      {"objsetid", PropValue::Number(r.info.ds_obj)},
  };
  return z;
}

// The ZPL master node's entries `zfs get` shows (version, normalization,
// utf8only, casesensitivity): the dataset's own; a dataset without a ZPL
// shows the version new file systems of this pool get (zpl_create.h).
PropZap ZplMaster(Pool& p, const std::string& ds) {
  PropZap z;
  auto m = p.ZplMasterProps(ds);
  if (m.ok()) {
    for (const auto& [k, v] : *m) z.push_back({k, PropValue::Number(v)});
  }
  if (FindInZap(z, "VERSION") == nullptr) {
    auto v = ZplVersionForPool(p.version());
    z.push_back({"VERSION", PropValue::Number(v.ok() ? std::min(*v, kNewestZplVersionWritten) : kPropZplVersionCurrent)});
  }
  return z;
}

bool IsSizeProp(const std::string& n) {
  static const std::set<std::string> k = {"used", "available", "referenced", "quota", "reservation",
                                          "recordsize", "volsize", "volblocksize", "refquota",
                                          "refreservation", "usedbysnapshots", "usedbydataset",
                                          "usedbychildren", "usedbyrefreservation", "logicalused",
                                          "logicalreferenced", "written"};
  return k.count(n) != 0;
}

// The VALUE text (output.h's human sizes: "0B", "512B").
std::string ValueText(const std::string& prop, const PropValue& v, bool parsable, const std::string& altroot) {
  std::string s = FormatDatasetProp(prop, v, parsable);
  if (!parsable && IsSizeProp(prop) && !v.is_string && s != "none") s = HumanSize(v.number);
  // -p: ratios without the "x" (current OpenZFS; zfs-fuse kept it).
  if (parsable && (prop == "compressratio" || prop == "refcompressratio") && !s.empty() && s.back() == 'x') {
    s.pop_back();
  }
  if (prop == "mountpoint" && !altroot.empty() && !s.empty() && s[0] == '/') {
    s = s == "/" ? altroot : altroot + s;
  }
  return s;
}

// Property name as the table knows it ("avail" -> "available"); user
// properties as given; empty when unknown.
std::string CanonicalProp(const std::string& n) {
  if (n == "name" || n == "space") return n;
  if (IsUserProp(n)) return n;
  const PropDef* d = FindDatasetProp(n);
  return d == nullptr ? "" : std::string(d->name);
}

std::string Header(const std::string& prop) {
  if (IsUserProp(prop)) return Upper(prop);
  const PropDef* d = FindDatasetProp(prop);
  return d == nullptr ? Upper(prop) : std::string(d->column);
}

bool Right(const std::string& prop) {
  const PropDef* d = FindDatasetProp(prop);
  return d != nullptr && d->kind == PropKind::kNumber && !IsUserProp(prop);
}


json SourceJson(const ResolvedProp& p) {
  switch (p.kind) {
    case PropSourceKind::kNone: return {{"type", "NONE"}, {"data", "-"}};
    case PropSourceKind::kDefault: return {{"type", "DEFAULT"}, {"data", "-"}};
    case PropSourceKind::kLocal: return {{"type", "LOCAL"}, {"data", "-"}};
    case PropSourceKind::kReceived: return {{"type", "RECEIVED"}, {"data", "-"}};
    case PropSourceKind::kInherited: return {{"type", "INHERITED"}, {"data", p.setpoint}};
  }
  return {{"type", "NONE"}, {"data", "-"}};
}

json DatasetJsonHead(const DsRow& r) {
  return {{"name", r.name},
          {"type", "FILESYSTEM"},
          {"pool", PoolOf(r.name)},
          {"createtxg", std::to_string(r.info.ds.creation_txg)}};
}

// The datasets a list/get names: operands (with -r / -d N below them) or
// every dataset of every pool. Missing ones print "dataset does not exist".
struct Selected {
  std::shared_ptr<PoolEntry> entry;
  DsRow row;
};

std::vector<Selected> SelectDatasets(CmdCtx& c, const std::vector<std::string>& names, bool recurse,
                                     int max_depth, int* rc) {
  std::vector<Selected> out;
  auto add_pool = [&](const std::shared_ptr<PoolEntry>& e, const std::string& top, bool rec, int depth) {
    MutexLock l(&e->mu);
    if (e->pool == nullptr) return false;
    auto rows = PoolDatasets(*e->pool);
    if (!rows.ok()) {
      *rc = c.Fail(ErrorLine(rows.status(), "open", top));
      return true;
    }
    bool found = false;
    for (DsRow& r : *rows) {
      r.mounted = e->mounts.Find(r.name) != nullptr;
      const bool self = r.name == top;
      const bool below = IsDescendant(r.name, top) && rec && (depth < 0 || Depth(r.name) - Depth(top) <= depth);
      if (self) found = true;
      if (self || below) out.push_back(Selected{e, std::move(r)});
    }
    return found;
  };
  if (names.empty()) {
    for (const auto& e : c.reg.All()) {
      std::string pool;
      {
        MutexLock l(&e->mu);
        pool = e->rec.name;
      }
      add_pool(e, pool, true, max_depth);
    }
    return out;
  }
  for (const std::string& n : names) {
    if (n.find('@') != std::string::npos) {
      *rc = c.Fail("cannot open '" + n + "': snapshots are not supported by uzfs yet");
      continue;
    }
    auto e = c.reg.Find(PoolOf(n));
    if (e == nullptr || !add_pool(e, n, recurse || max_depth >= 0, max_depth)) {
      *rc = c.Fail("cannot open '" + n + "': dataset does not exist");
    }
  }
  return out;
}

int ParseDepth(const ParsedArgs& a, int* depth) {
  *depth = -1;
  if (a.Values('d').empty()) return 0;
  const std::string v = a.Values('d').back();
  char* end = nullptr;
  const long d = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || d < 0) return 1;
  *depth = static_cast<int>(d);
  return 0;
}

// -t: only filesystems exist in uzfs so far; false when the list excludes them.
bool TypesIncludeFs(CmdCtx& c, const ParsedArgs& a, const std::string& sub, int* rc) {
  bool fs = a.Values('t').empty();
  for (const std::string& t : a.Values('t')) {
    for (const std::string& w : SplitComma(t)) {
      if (w == "filesystem" || w == "fs" || w == "all") {
        fs = true;
      } else if (w != "snapshot" && w != "snap" && w != "volume" && w != "vol" && w != "bookmark") {
        *rc = Usage(c, sub, "invalid type '" + w + "'");
        return false;
      }
    }
  }
  return fs;
}

// ------------------------------------------------------------------ list

int List(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "rHpj", "dosSt", {"json"});
  if (!a.error.empty()) return Usage(c, "list", a.error);
  const bool scripted = a.Has('H'), parsable = a.Has('p');
  const bool as_json = a.Has('j') || a.HasLong("json");
  int depth = -1;
  if (ParseDepth(a, &depth) != 0) return Usage(c, "list", "invalid depth '" + a.Values('d').back() + "'");
  std::vector<std::string> props = {"name", "used", "available", "referenced", "mountpoint"};
  if (!a.Values('o').empty()) {
    props.clear();
    for (const std::string& o : a.Values('o')) {
      for (const std::string& p : SplitComma(o)) {
        const std::string cp = CanonicalProp(p);
        if (cp.empty()) return Usage(c, "list", "invalid property '" + p + "'");
        if (cp == "space") {
          for (const char* s : {"name", "available", "used", "usedbysnapshots", "usedbydataset",
                                "usedbyrefreservation", "usedbychildren"}) {
            props.push_back(s);
          }
          continue;
        }
        props.push_back(cp);
      }
    }
  }
  struct Key {
    std::string prop;
    bool descending;
  };
  std::vector<Key> keys;
  for (const ParsedOpt& o : a.opts) {
    if (o.flag != 's' && o.flag != 'S') continue;
    const std::string cp = CanonicalProp(o.value);
    if (cp.empty()) return Usage(c, "list", "invalid property '" + o.value + "'");
    keys.push_back(Key{cp, o.flag == 'S'});
  }
  int rc = 0;
  const bool fs = TypesIncludeFs(c, a, "list", &rc);
  if (rc == 2) return 2;
  std::vector<Selected> sel = SelectDatasets(c, a.operands, a.Has('r'), depth, &rc);
  if (!fs) sel.clear();

  struct Row {
    std::vector<std::string> text;
    std::vector<std::optional<PropValue>> raw;
    json j;
  };
  std::vector<Row> rows;
  for (const Selected& s : sel) {
    MutexLock l(&s.entry->mu);
    if (s.entry->pool == nullptr) continue;
    auto chain = Chain(*s.entry->pool, s.row.name);
    if (!chain.ok()) {
      rc = c.Fail(ErrorLine(chain.status(), "open", s.row.name));
      continue;
    }
    const PropZap computed = Computed(s.row);
    const PropZap zpl = ZplMaster(*s.entry->pool, s.row.name);
    const std::string altroot = s.entry->rec.altroot;
    Row r;
    r.j = DatasetJsonHead(s.row);
    json jp = json::object();
    auto value_of = [&](const std::string& p, std::string* text, std::optional<PropValue>* raw) {
      if (p == "name") {
        *text = s.row.name;
        *raw = PropValue::String(s.row.name);
        return;
      }
      auto v = ResolveDatasetProp(p, *chain, &zpl, &computed);
      if (!v.ok()) {
        *text = "-";
        return;
      }
      *text = ValueText(p, v->value, parsable, altroot);
      *raw = v->value;
      jp[p] = {{"value", *text}, {"source", SourceJson(*v)}};
    };
    for (const std::string& p : props) {
      std::string t;
      std::optional<PropValue> raw;
      value_of(p, &t, &raw);
      r.text.push_back(t);
    }
    for (const Key& k : keys) {
      std::string t;
      std::optional<PropValue> raw;
      value_of(k.prop, &t, &raw);
      r.raw.push_back(raw);
    }
    r.j["properties"] = jp;
    rows.push_back(std::move(r));
  }
  if (!keys.empty()) {
    std::stable_sort(rows.begin(), rows.end(), [&](const Row& x, const Row& y) {
      for (size_t i = 0; i < keys.size(); i++) {
        const auto& a1 = x.raw[i];
        const auto& b1 = y.raw[i];
        if (!a1 && !b1) continue;
        if (!a1) return false;  // rows without a value go last
        if (!b1) return true;
        int cmp = 0;
        if (!a1->is_string && !b1->is_string) {
          cmp = a1->number < b1->number ? -1 : a1->number > b1->number ? 1 : 0;
        } else {
          cmp = a1->string.compare(b1->string);
        }
        if (cmp != 0) return keys[i].descending ? cmp > 0 : cmp < 0;
      }
      return false;
    });
  }
  if (as_json) {
    json ds = json::object();
    for (const Row& r : rows) ds[r.j["name"].get<std::string>()] = r.j;
    c.out.Out(Dump(json{{"output_version", OutputVersion("zfs list")}, {"datasets", ds}}));
    return rc;
  }
  if (rows.empty()) {
    if (a.operands.empty() && rc == 0 && !scripted) c.out.ErrLine("no datasets available");
    return rc;
  }
  std::vector<Column> cols;
  for (const std::string& p : props) cols.push_back(Column{p == "name" ? "NAME" : Header(p), Right(p)});
  std::vector<std::vector<std::string>> text;
  for (Row& r : rows) text.push_back(std::move(r.text));
  c.out.Out(RenderTable(cols, text, scripted));
  return rc;
}

// ------------------------------------------------------------------ get

int Get(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "rHpj", "dost", {"json"});
  if (!a.error.empty()) return Usage(c, "get", a.error);
  if (a.operands.empty()) return Usage(c, "get", "missing property argument");
  const bool scripted = a.Has('H'), parsable = a.Has('p');
  const bool as_json = a.Has('j') || a.HasLong("json");
  int depth = -1;
  if (ParseDepth(a, &depth) != 0) return Usage(c, "get", "invalid depth '" + a.Values('d').back() + "'");
  std::vector<std::string> fields = {"name", "property", "value", "source"};
  if (!a.Values('o').empty()) {
    fields.clear();
    for (const std::string& o : a.Values('o')) {
      for (const std::string& f : SplitComma(o)) {
        if (f == "all") {
          fields = {"name", "property", "value", "received", "source"};
          continue;
        }
        if (f != "name" && f != "property" && f != "value" && f != "source" && f != "received") {
          return Usage(c, "get", "invalid field '" + f + "'");
        }
        fields.push_back(f);
      }
    }
  }
  std::set<std::string> sources;
  for (const std::string& s : a.Values('s')) {
    for (const std::string& w : SplitComma(s)) {
      if (w != "local" && w != "default" && w != "inherited" && w != "temporary" && w != "received" &&
          w != "none") {
        return Usage(c, "get", "invalid source '" + w + "'");
      }
      sources.insert(w);
    }
  }
  std::vector<std::string> wanted;
  bool all = false;
  for (const std::string& p : SplitComma(a.operands[0])) {
    if (p == "all") {
      all = true;
      continue;
    }
    const std::string cp = CanonicalProp(p);
    if (cp.empty() || cp == "space") return Usage(c, "get", "bad property list: invalid property '" + p + "'");
    wanted.push_back(cp);
  }
  int rc = 0;
  const bool fs = TypesIncludeFs(c, a, "get", &rc);
  if (rc == 2) return 2;
  std::vector<Selected> sel = SelectDatasets(
      c, std::vector<std::string>(a.operands.begin() + 1, a.operands.end()), a.Has('r'), depth, &rc);
  if (!fs) sel.clear();
  std::vector<std::vector<std::string>> rows;
  json jds = json::object();
  std::vector<std::string> user_order;
  for (const Selected& s : sel) {
    MutexLock l(&s.entry->mu);
    if (s.entry->pool == nullptr) continue;
    auto chain = Chain(*s.entry->pool, s.row.name);
    if (!chain.ok()) {
      rc = c.Fail(ErrorLine(chain.status(), "open", s.row.name));
      continue;
    }
    const PropZap computed = Computed(s.row);
    const PropZap zpl = ZplMaster(*s.entry->pool, s.row.name);
    std::vector<ResolvedProp> props;
    if (all) {
      auto r = ResolveAllDatasetProps(*chain, &zpl, &computed, kPropFilesystem, &user_order);
      if (!r.ok()) {
        rc = c.Fail(ErrorLine(r.status(), "open", s.row.name));
        continue;
      }
      props = std::move(*r);
    }
    for (const std::string& w : wanted) {
      if (w == "name") {
        ResolvedProp p;
        p.name = "name";
        p.value = PropValue::String(s.row.name);
        props.push_back(p);
        continue;
      }
      auto r = ResolveDatasetProp(w, *chain, &zpl, &computed);
      if (!r.ok()) {
        ResolvedProp p;  // unset user property, or one uzfs cannot compute: "-"
        p.name = w;
        p.value = PropValue::String("");
        props.push_back(p);
        continue;
      }
      props.push_back(*r);
    }
    json jp = json::object();
    for (const ResolvedProp& p : props) {
      if (!sources.empty()) {
        const char* k = p.kind == PropSourceKind::kLocal       ? "local"
                        : p.kind == PropSourceKind::kDefault   ? "default"
                        : p.kind == PropSourceKind::kInherited ? "inherited"
                        : p.kind == PropSourceKind::kReceived  ? "received"
                                                               : "none";
        if (sources.count(k) == 0) continue;
      }
      const std::string v = p.name == "name" ? s.row.name : ValueText(p.name, p.value, parsable, s.entry->rec.altroot);
      std::vector<std::string> row;
      for (const std::string& f : fields) {
        row.push_back(f == "name" ? s.row.name : f == "property" ? p.name : f == "value" ? v
                      : f == "received" ? "-" : p.SourceText());
      }
      rows.push_back(row);
      jp[p.name] = {{"value", v}, {"source", SourceJson(p)}};
    }
    json j = DatasetJsonHead(s.row);
    j["properties"] = jp;
    jds[s.row.name] = j;
  }
  if (as_json) {
    c.out.Out(Dump(json{{"output_version", OutputVersion("zfs get")}, {"datasets", jds}}));
    return rc;
  }
  std::vector<Column> cols;
  for (const std::string& f : fields) cols.push_back(Column{Upper(f), false});
  if (!rows.empty()) c.out.Out(RenderTable(cols, rows, scripted));
  return rc;
}

// ------------------------------------------------------------------ changes

// The pool holding `ds`, locked by the caller; "dataset does not exist"
// (or "no such pool") when it is not imported.
std::shared_ptr<PoolEntry> PoolFor(CmdCtx& c, const std::string& ds) {
  return c.reg.Find(PoolOf(ds));
}

bool Exists(Pool& p, const std::string& ds) { return p.LocalProps(ds).ok(); }

int Create(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "psunvP", "obV");
  if (!a.error.empty()) return Usage(c, "create", a.error);
  if (!a.Values('V').empty()) return c.Fail("cannot create volumes: not supported by uzfs yet");
  if (a.operands.empty()) return Usage(c, "create", "missing filesystem argument");
  if (a.operands.size() > 1) return Usage(c, "create", "too many arguments");
  const std::string name = a.operands[0];
  std::vector<std::pair<std::string, std::string>> props;
  for (const std::string& kv : a.Values('o')) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) return Usage(c, "create", "missing '=' for -o option");
    props.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  if (name.find('@') != std::string::npos) {
    return c.Fail("cannot create '" + name + "': snapshot delimiter '@' is not expected here");
  }
  auto e = PoolFor(c, name);
  if (e == nullptr) return c.Fail("cannot create '" + name + "': no such pool '" + PoolOf(name) + "'");
  MutexLock l(&e->mu);
  if (e->pool == nullptr) return c.Fail("cannot create '" + name + "': no such pool '" + PoolOf(name) + "'");
  Pool& p = *e->pool;
  if (name.find('/') != std::string::npos) {
    for (const auto& [k, v] : props) {
      if (IsUserProp(k)) continue;
      PropContext ctx;
      ctx.target = name;
      ctx.action = "cannot create";
      ctx.pool_version = p.version();
      ctx.creating = true;
      auto pv = ParseDatasetProp(k, v, ctx);
      if (!pv.ok()) return c.Fail(std::string(pv.status().message()));
    }
  }
  std::string top = name;  // the highest dataset this command creates
  std::vector<std::string> missing;  // -p: parents to create, lowest first
  // The whole name first: -p must not create parents of a name that fails.
  if (Status s = Pool::CheckDatasetName(name); !s.ok()) return c.Fail(ErrorLine(s, "create", name));
  if (a.Has('p')) {
    if (Exists(p, name)) return 0;  // -p: an existing dataset is fine
    for (std::string n = Parent(name); !n.empty() && n.find('/') != std::string::npos && !Exists(p, n);
         n = Parent(n)) {
      missing.push_back(n);
    }
  }
  if (a.Has('n') || a.Has('v') || a.Has('P')) {
    // -n: every check of the real create, nothing changed; -v/-P: say what
    // is (or would be) created, with the properties given.
    if (a.Has('n')) {
      // The highest missing parent is checked as the real create would; the
      // datasets below it only by name and properties (their parents do
      // not exist yet).
      std::vector<std::pair<std::string, std::string>> none;
      Status s = missing.empty() ? p.CheckNewDataset(name, props) : p.CheckNewDataset(missing.back(), none);
      if (!s.ok()) return c.Fail(ErrorLine(s, "create", missing.empty() ? name : missing.back()));
    }
    const bool parsable = a.Has('P');
    if (parsable || a.Has('v')) {
      const std::string verb = a.Has('n') ? "would create " : "create ";
      for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
        c.out.Out(parsable ? "create\t" + *it + "\n" : verb + *it + "\n");
      }
      c.out.Out(parsable ? "create\t" + name + "\n" : verb + name + "\n");
      for (const auto& [k, v] : props) {
        c.out.Out(parsable ? "property\t" + k + "\t" + v + "\n" : "\t" + k + "=" + v + "\n");
      }
    }
    if (a.Has('n')) return 0;
  }
  if (!missing.empty()) {
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
      if (Status s = p.CreateDataset(*it, {}); !s.ok()) return c.Fail(ErrorLine(s, "create", *it));
    }
    if (!missing.empty()) top = missing.back();
  }
  if (Status s = p.CreateDataset(name, props); !s.ok()) return c.Fail(ErrorLine(s, "create", name));
  p.LogHistory(c.cmdline);
  // A new file system mounts at once (and its new parents), as in ZFS.
  std::vector<std::string> errs;
  e->mounts.MountAll(p, e->rec.altroot, &errs, /*automatic=*/true, top);
  for (const std::string& m : errs) c.out.ErrLine(m);
  return errs.empty() ? 0 : 1;
}

// After a change of where datasets mount (mountpoint, canmount, rename):
// unmount the tree below ds and mount again what should be.
int Remount(CmdCtx& c, PoolEntry& e, const std::string& ds) UZFS_REQUIRES(e.mu) {
  if (Status s = e.mounts.UnmountTree(ds, false); !s.ok() && !s.IsNotFound()) {
    return c.Fail(std::string(s.message()));
  }
  std::vector<std::string> errs;
  e.mounts.MountAll(*e.pool, e.rec.altroot, &errs, /*automatic=*/true, ds);
  for (const std::string& m : errs) c.out.ErrLine(m);
  return errs.empty() ? 0 : 1;
}

bool AffectsMount(const std::string& prop) { return prop == "mountpoint" || prop == "canmount"; }

// After any property change: the mounted file systems take the new values
// (ZplFs props; exec/setuid/devices as mount flags, as ZFS remounts).
int RefreshMounts(CmdCtx& c, PoolEntry& e) UZFS_REQUIRES(e.mu) {
  std::vector<std::string> errs;
  e.mounts.RefreshProps(*e.pool, &errs);
  for (const std::string& m : errs) c.out.ErrLine(m);
  return errs.empty() ? 0 : 1;
}

int Destroy(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "rRfnpv", "");
  if (!a.error.empty()) return Usage(c, "destroy", a.error);
  if (a.operands.empty()) return Usage(c, "destroy", "missing dataset argument");
  if (a.operands.size() > 1) return Usage(c, "destroy", "too many arguments");
  const std::string name = a.operands[0];
  if (name.find('@') != std::string::npos) {
    return c.Fail("cannot destroy '" + name + "': snapshots are not supported by uzfs yet");
  }
  auto e = PoolFor(c, name);
  if (e == nullptr) return c.Fail("cannot open '" + name + "': dataset does not exist");
  MutexLock l(&e->mu);
  if (e->pool == nullptr || !Exists(*e->pool, name)) {
    return c.Fail("cannot open '" + name + "': dataset does not exist");
  }
  Pool& p = *e->pool;
  auto infos = p.ListDatasets();
  if (!infos.ok()) return c.Fail(ErrorLine(infos.status(), "destroy", name));
  std::vector<std::string> below;
  for (const DatasetInfo& i : *infos) {
    if (IsDescendant(i.name, name)) below.push_back(i.name);
  }
  std::sort(below.begin(), below.end());
  const bool recursive = a.Has('r') || a.Has('R');
  if (name.find('/') == std::string::npos && !(recursive && !below.empty())) {
    return c.Fail("cannot destroy '" + name + "': operation does not apply to pools\n"
                  "use 'zfs destroy -r " + name + "' to destroy all datasets in the pool\n"
                  "use 'zpool destroy " + name + "' to destroy the pool itself");
  }
  if (!below.empty() && !recursive) {
    std::string m = "cannot destroy '" + name + "': filesystem has children\n"
                    "use '-r' to destroy the following datasets:";
    for (const std::string& b : below) m += "\n" + b;
    return c.Fail(m);
  }
  if (a.Has('n')) {
    std::string t;
    if (a.Has('v') || a.Has('p')) {
      for (auto it = below.rbegin(); it != below.rend(); ++it) t += "would destroy " + *it + "\n";
      if (name.find('/') != std::string::npos) t += "would destroy " + name + "\n";
    }
    c.out.Out(t);
    return 0;
  }
  // Unmount what goes away (busy mounts stop it unless -f).
  if (Status s = e->mounts.UnmountTree(name, a.Has('f')); !s.ok() && !s.IsNotFound()) {
    return c.Fail(std::string(s.message()));
  }
  // Deepest first.
  for (auto it = below.rbegin(); it != below.rend(); ++it) {
    if (Status s = p.DestroyDataset(*it); !s.ok()) return c.Fail(ErrorLine(s, "destroy", *it));
    if (a.Has('v')) c.out.Out("will destroy " + *it + "\n");
  }
  if (name.find('/') != std::string::npos) {
    if (Status s = p.DestroyDataset(name); !s.ok()) return c.Fail(ErrorLine(s, "destroy", name));
    if (a.Has('v')) c.out.Out("will destroy " + name + "\n");
  }
  p.LogHistory(c.cmdline);
  return 0;
}

int Set(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "u", "");
  if (!a.error.empty()) return Usage(c, "set", a.error);
  std::vector<std::pair<std::string, std::string>> kvs;
  std::vector<std::string> targets;
  for (const std::string& w : a.operands) {
    const size_t eq = w.find('=');
    if (eq != std::string::npos && targets.empty()) {
      kvs.emplace_back(w.substr(0, eq), w.substr(eq + 1));
    } else {
      targets.push_back(w);
    }
  }
  if (kvs.empty()) return Usage(c, "set", a.operands.empty() ? "missing arguments" : "missing property=value argument(s)");
  if (targets.empty()) return Usage(c, "set", "missing dataset name(s)");
  int rc = 0;
  for (const std::string& ds : targets) {
    auto e = PoolFor(c, ds);
    if (e == nullptr) {
      rc = c.Fail("cannot open '" + ds + "': dataset does not exist");
      continue;
    }
    MutexLock l(&e->mu);
    if (e->pool == nullptr || !Exists(*e->pool, ds)) {
      rc = c.Fail("cannot open '" + ds + "': dataset does not exist");
      continue;
    }
    bool remount = false;
    for (const auto& [k, v] : kvs) {
      std::string prop = k;
      if (!IsUserProp(k)) {
        const PropDef* d = FindDatasetProp(k);
        if (d != nullptr) prop = std::string(d->name);
      }
      if (Status s = e->pool->SetProp(ds, prop, v); !s.ok()) {
        rc = c.Fail(ErrorLine(s, "set property for", ds));
        break;
      }
      remount = remount || AffectsMount(prop);
    }
    e->pool->LogHistory(c.cmdline);
    if (RefreshMounts(c, *e) != 0) rc = 1;
    if (remount && Remount(c, *e, ds) != 0) rc = 1;
  }
  return rc;
}

int Inherit(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "rS", "");
  if (!a.error.empty()) return Usage(c, "inherit", a.error);
  if (a.operands.empty()) return Usage(c, "inherit", "missing property argument");
  if (a.operands.size() < 2) return Usage(c, "inherit", "missing dataset argument");
  std::string prop = a.operands[0];
  if (!IsUserProp(prop)) {
    const PropDef* d = FindDatasetProp(prop);
    if (d == nullptr) return Usage(c, "inherit", "invalid property '" + prop + "'");
    prop = std::string(d->name);
    if (Status s = CheckInheritable(prop); !s.ok()) return c.Fail(std::string(s.message()));
  }
  int rc = 0;
  for (size_t i = 1; i < a.operands.size(); i++) {
    const std::string ds = a.operands[i];
    auto e = PoolFor(c, ds);
    if (e == nullptr) {
      rc = c.Fail("cannot open '" + ds + "': dataset does not exist");
      continue;
    }
    MutexLock l(&e->mu);
    if (e->pool == nullptr || !Exists(*e->pool, ds)) {
      rc = c.Fail("cannot open '" + ds + "': dataset does not exist");
      continue;
    }
    std::vector<std::string> targets = {ds};
    if (a.Has('r')) {
      auto infos = e->pool->ListDatasets();
      if (infos.ok()) {
        for (const DatasetInfo& inf : *infos) {
          if (IsDescendant(inf.name, ds)) targets.push_back(inf.name);
        }
      }
    }
    for (const std::string& t : targets) {
      if (Status s = e->pool->InheritProp(t, prop); !s.ok()) {
        rc = c.Fail(ErrorLine(s, "inherit " + prop + " for", t));
        break;
      }
    }
    e->pool->LogHistory(c.cmdline);
    if (RefreshMounts(c, *e) != 0) rc = 1;
    if (AffectsMount(prop) && Remount(c, *e, ds) != 0) rc = 1;
  }
  return rc;
}

int Rename(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "pfu", "");
  if (!a.error.empty()) return Usage(c, "rename", a.error);
  if (a.operands.size() < 2) return Usage(c, "rename", "missing target dataset argument");
  if (a.operands.size() > 2) return Usage(c, "rename", "too many arguments");
  const std::string from = a.operands[0], to = a.operands[1];
  if (from.find('@') != std::string::npos || to.find('@') != std::string::npos) {
    return c.Fail("cannot rename '" + from + "': snapshots are not supported by uzfs yet");
  }
  if (from.find('/') == std::string::npos) {
    return c.Fail("cannot rename '" + from + "': operation does not apply to pools");
  }
  if (PoolOf(from) != PoolOf(to)) return c.Fail("cannot rename to '" + to + "': datasets must be within same pool");
  auto e = PoolFor(c, from);
  if (e == nullptr) return c.Fail("cannot open '" + from + "': dataset does not exist");
  MutexLock l(&e->mu);
  if (e->pool == nullptr || !Exists(*e->pool, from)) {
    return c.Fail("cannot open '" + from + "': dataset does not exist");
  }
  Pool& p = *e->pool;
  if (IsDescendant(to, from)) {
    return c.Fail("cannot rename to '" + to + "': New dataset name cannot be a descendant of current dataset name");
  }
  if (Exists(p, to)) return c.Fail("cannot rename to '" + to + "': dataset already exists");
  if (!Exists(p, Parent(to))) {
    if (!a.Has('p')) return c.Fail("cannot rename to '" + to + "': parent does not exist");
    std::vector<std::string> missing;
    for (std::string n = Parent(to); n.find('/') != std::string::npos && !Exists(p, n); n = Parent(n)) {
      missing.push_back(n);
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
      if (Status s = p.CreateDataset(*it, {}); !s.ok()) return c.Fail(ErrorLine(s, "create", *it));
    }
  }
  if (Status s = e->mounts.UnmountTree(from, a.Has('f')); !s.ok() && !s.IsNotFound()) {
    return c.Fail(std::string(s.message()));
  }
  if (Status s = p.RenameDataset(from, to); !s.ok()) {
    (void)Remount(c, *e, from);
    return c.Fail(ErrorLine(s, "rename to", to));
  }
  p.LogHistory(c.cmdline);
  return Remount(c, *e, to);
}

// zfs mount: no operand lists what is mounted ("dataset<TAB>path", as
// ZFS's two columns); -a mounts every dataset that mounts automatically;
// a dataset mounts it (also canmount=noauto). zfs unmount: -a, a dataset
// or a mountpoint path; -f unmounts even with files open.
// `zfs mount --legacy [-o options] DATASET PATH`: what mount.fuse.uzfs
// sends for `mount -t fuse.uzfs DATASET PATH` (fstab). As mount.zfs, only
// for datasets whose mountpoint is legacy; of the options, ro/rw count,
// suid/nosuid, dev/nodev and exec/noexec override the dataset's setuid,
// devices and exec properties for this mount (mounts.h), and the other
// generic mount(8) ones are accepted and ignored.
int MountLegacy(CmdCtx& c, const ParsedArgs& a) {
  if (a.operands.size() != 2) {
    return c.Fail("usage: mount -t fuse.uzfs [-o options] <dataset> <mountpoint>");
  }
  const std::string ds = a.operands[0], path = a.operands[1];
  bool ro = false;
  MountOverrides overrides;
  for (const std::string& list : a.Values('o')) {
    for (const std::string& o : SplitComma(list)) {
      static const std::set<std::string> kIgnored = {
          "defaults", "atime",  "noatime", "relatime", "norelatime", "strictatime", "auto",    "noauto",
          "user",     "nouser", "users",   "_netdev",  "nofail",     "async",       "sync",    "dirsync",
          "lazytime", "nolazytime", "loud", "silent"};
      if (o == "ro") {
        ro = true;
      } else if (o == "rw") {
        ro = false;
      } else if (o == "suid" || o == "nosuid") {
        overrides.setuid = o == "suid";
      } else if (o == "dev" || o == "nodev") {
        overrides.devices = o == "dev";
      } else if (o == "exec" || o == "noexec") {
        overrides.exec = o == "exec";
      } else if (kIgnored.count(o) == 0 && o.rfind("x-", 0) != 0 && o.rfind("comment=", 0) != 0) {
        return c.Fail("cannot mount '" + ds + "': unsupported mount option '" + o + "'");
      }
    }
  }
  auto e = PoolFor(c, ds);
  if (e == nullptr) return c.Fail("cannot open '" + ds + "': dataset does not exist");
  MutexLock l(&e->mu);
  if (e->pool == nullptr || !Exists(*e->pool, ds)) return c.Fail("cannot open '" + ds + "': dataset does not exist");
  auto where = EffectiveMountpoint(*e->pool, ds, "");
  if (!where.ok()) return c.Fail("cannot mount '" + ds + "': " + std::string(where.status().message()));
  auto local = e->pool->LocalProps(ds);
  if (where->has_value() || (local.ok() && local->count("mountpoint") && local->at("mountpoint") == "none")) {
    return c.Fail("filesystem '" + ds + "' cannot be mounted using 'mount'.\n"
                  "Use 'zfs set mountpoint=legacy' or 'zfs mount " + ds + "'.\n"
                  "See zfs(8) for more information.");
  }
  std::string at = path;
  while (at.size() > 1 && at.back() == '/') at.pop_back();
  if (at.empty() || at[0] != '/') at = c.cwd + "/" + at;
  Status s = e->mounts.MountAt(*e->pool, ds, at, ro, overrides);
  return s.ok() ? 0 : c.Fail(std::string(s.message()));
}

int Mount(CmdCtx& c, bool mount) {
  const std::string sub = mount ? "mount" : "unmount";
  ParsedArgs a = ParseArgs(c.args, mount ? "aOlvfj" : "afu", "o", {"json", "legacy"});
  if (!a.error.empty()) return Usage(c, sub, a.error);
  if (mount && a.HasLong("legacy")) return MountLegacy(c, a);
  if (a.Has('a') && !a.operands.empty()) return Usage(c, sub, "the -a option cannot be used with a filesystem");
  if (a.operands.size() > 1) return Usage(c, sub, "too many arguments");
  if (mount && !a.Values('o').empty()) {
    return c.Fail("cannot mount: temporary mount options (-o) are not supported by uzfs yet");
  }
  const bool force = a.Has('f');
  int rc = 0;
  if (a.operands.empty()) {
    if (mount && !a.Has('a')) {
      for (const auto& e : c.reg.All()) {
        MutexLock l(&e->mu);
        for (const DatasetMount* m : e->mounts.List()) c.out.Out(m->dataset + "\t" + m->path + "\n");
      }
      return 0;
    }
    if (!a.Has('a')) return Usage(c, sub, "missing filesystem argument");
    for (const auto& e : c.reg.All()) {
      MutexLock l(&e->mu);
      if (e->pool == nullptr) continue;
      if (mount) {
        std::vector<std::string> errs;
        e->mounts.MountAll(*e->pool, e->rec.altroot, &errs, /*automatic=*/false);
        for (const std::string& m : errs) rc = c.Fail(m);
      } else if (Status s = e->mounts.UnmountAll(force); !s.ok()) {
        rc = c.Fail(std::string(s.message()));
      }
    }
    return rc;
  }
  std::string what = a.operands[0];
  if (!mount && !what.empty() && what[0] == '/') {
    // A mountpoint path: find the dataset mounted there.
    while (what.size() > 1 && what.back() == '/') what.pop_back();
    for (const auto& e : c.reg.All()) {
      MutexLock l(&e->mu);
      for (const DatasetMount* m : e->mounts.List()) {
        if (m->path == what) {
          Status s = e->mounts.Unmount(m->dataset, force);
          return s.ok() ? 0 : c.Fail(std::string(s.message()));
        }
      }
    }
    return c.Fail("cannot unmount '" + what + "': not a mounted uzfs filesystem");
  }
  auto e = PoolFor(c, what);
  if (e == nullptr) return c.Fail("cannot open '" + what + "': dataset does not exist");
  MutexLock l(&e->mu);
  if (e->pool == nullptr || !Exists(*e->pool, what)) {
    return c.Fail("cannot open '" + what + "': dataset does not exist");
  }
  Status s = mount ? e->mounts.Mount(*e->pool, what, e->rec.altroot) : e->mounts.Unmount(what, force);
  return s.ok() ? 0 : c.Fail(std::string(s.message()));
}

}  // namespace

namespace {

std::span<const Sub> Subs() {
  static const Sub kSubs[] = {
      {"create", "\tcreate [-p] [-o property=value] ... <filesystem>\n", Create},
      {"destroy", "\tdestroy [-fr] <filesystem>\n", Destroy},
      {"list", "\tlist [-Hp] [-j] [-r|-d max] [-o property[,...]] [-s property]...\n"
               "\t    [-S property]... [-t type[,...]] [filesystem] ...\n",
       List},
      {"get", "\tget [-rHp] [-j] [-d max] [-o \"all\" | field[,...]]\n"
              "\t    [-t type[,...]] [-s source[,...]]\n"
              "\t    <\"all\" | property[,...]> [filesystem] ...\n",
       Get},
      {"set", "\tset <property=value> ... <filesystem> ...\n", Set},
      {"inherit", "\tinherit [-r] <property> <filesystem> ...\n", Inherit},
      {"rename", "\trename [-p] <filesystem> <filesystem>\n", Rename},
      {"mount", "\tmount\n\tmount <-a | filesystem>\n", [](CmdCtx& c) { return Mount(c, true); }},
      {"unmount", "\tunmount [-f] <-a | filesystem | mountpoint>\n", [](CmdCtx& c) { return Mount(c, false); },
       SubLock::kNone, "umount"},
      // ZFS subcommands uzfs does not offer yet.
      {"snapshot", nullptr, nullptr, SubLock::kNone, "snap"}, {"rollback", nullptr}, {"clone", nullptr},
      {"promote", nullptr}, {"send", nullptr}, {"receive", nullptr, nullptr, SubLock::kNone, "recv"},
      {"diff", nullptr}, {"hold", nullptr}, {"release", nullptr}, {"holds", nullptr}, {"upgrade", nullptr},
      {"userspace", nullptr}, {"groupspace", nullptr}, {"allow", nullptr}, {"unallow", nullptr},
      {"share", nullptr}, {"unshare", nullptr}, {"bookmark", nullptr}, {"load-key", nullptr},
      {"unload-key", nullptr}, {"change-key", nullptr}, {"program", nullptr}, {"wait", nullptr},
      {"redact", nullptr}, {"project", nullptr},
  };
  return kSubs;
}

}  // namespace

int RunZfs(Registry& reg, Output& out, const Request& req, const std::atomic<bool>& stopping) {
  return RunSubcommand("zfs", Subs(), GlobalUsage(), reg, out, req, stopping);
}

}  // namespace uzfs::cmd
