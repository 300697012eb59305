// zfs list and zfs get (man/zfs.8). Values and sources come from
// zfs/dsl/prop_table.h's inheritance walk over the dataset's chain of DSL
// props ZAPs, with the computed properties from the DSL records; a pool
// imported with an altroot shows mountpoints below it, as ZFS does.
// `zfs get all` lists zfs-fuse's properties on a pool of version <= 28 and
// OpenZFS 2.x's (sync, relatime, written, ... at their places) on a
// feature-flag pool.
// Layouts: ../shared/CLI.md §3 (NAME USED AVAIL REFER MOUNTPOINT; get's
// NAME PROPERTY VALUE SOURCE), -H/-p/-o/-s/-S/-j as in output.h.
#include <algorithm>
#include <set>

#include "cmd/uzfsd/zfs_datasets.h"
#include "cmd/uzfsd/zfs_handlers.h"

namespace uzfs::cmd {

namespace {

// Whether property p exists for the row's kind of dataset (a snapshot has
// no mountpoint, quota, ...): "-" where it does not.
bool AppliesTo(const std::string& p, const DsRow& r) {
  if (r.bookmark) return p == "type" || p == "creation" || p == "createtxg" || p == "guid" || p == "name";
  const PropDef* d = FindDatasetProp(p);
  if (d == nullptr) return true;  // user properties
  return (d->types & (r.info.snapshot ? kPropSnapshot : kPropFilesystem)) != 0;
}

}  // namespace

int ZfsList(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "rHpj", "dosSt", {"json"});
  if (!a.error.empty()) return ZfsUsage(c, "list", a.error);
  const bool scripted = a.Has('H'), parsable = a.Has('p');
  const bool as_json = a.Has('j') || a.HasLong("json");
  int depth = -1;
  if (ParseDepth(a, &depth) != 0) return ZfsUsage(c, "list", "invalid depth '" + a.Values('d').back() + "'");
  std::vector<std::string> props = {"name", "used", "available", "referenced", "mountpoint"};
  if (!a.Values('o').empty()) {
    props.clear();
    for (const std::string& o : a.Values('o')) {
      for (const std::string& p : SplitComma(o)) {
        const std::string cp = CanonicalDatasetProp(p);
        if (cp.empty()) return ZfsUsage(c, "list", "invalid property '" + p + "'");
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
    const std::string cp = CanonicalDatasetProp(o.value);
    if (cp.empty()) return ZfsUsage(c, "list", "invalid property '" + o.value + "'");
    keys.push_back(Key{cp, o.flag == 'S'});
  }
  int rc = 0;
  const DatasetTypes types = ParseDatasetTypes(c, a, "list", DatasetTypes{}, &rc);
  if (rc == 2) return 2;
  std::vector<Selected> sel = SelectDatasets(c, a.operands, a.Has('r'), depth, types, &rc);

  struct Row {
    std::vector<std::string> text;
    std::vector<std::optional<PropValue>> raw;
    json j;
  };
  std::vector<Row> rows;
  for (const Selected& s : sel) {
    MutexLock l(&s.entry->mu);
    if (s.entry->pool == nullptr) continue;
    auto chain = DatasetPropChain(*s.entry->pool, s.row.name);
    if (!chain.ok()) {
      rc = c.Fail(ErrorLine(chain.status(), "open", s.row.name));
      continue;
    }
    const PropZap computed = ComputedProps(s.row);
    const PropZap zpl = ZplMasterZap(*s.entry->pool, s.row.name.substr(0, s.row.name.find_first_of("@#")));
    const std::string altroot = s.entry->rec.altroot;
    Pool& pool = *s.entry->pool;
    Row r;
    r.j = DatasetJsonHead(s.row);
    json jp = json::object();
    auto value_of = [&](const std::string& p, std::string* text, std::optional<PropValue>* raw) {
      if (p == "name") {
        *text = s.row.name;
        *raw = PropValue::String(s.row.name);
        return;
      }
      if (IsWrittenAt(p)) {
        const std::optional<PropValue> w = WrittenSince(pool, s.row, p);
        *text = w ? DatasetValueText(p, *w, parsable, altroot) : "-";
        if (w) *raw = *w;
        return;
      }
      auto v = ResolveDatasetProp(p, *chain, &zpl, &computed);
      if (!v.ok() || !AppliesTo(p, s.row)) {
        *text = "-";
        return;
      }
      *text = DatasetValueText(p, v->value, parsable, altroot);
      *raw = v->value;
      jp[p] = {{"value", *text}, {"source", DatasetSourceJson(*v)}};
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
    if (rc == 0 && !scripted) c.out.ErrLine("no datasets available");
    return rc;
  }
  std::vector<Column> cols;
  for (const std::string& p : props) cols.push_back(Column{p == "name" ? "NAME" : DatasetColumnHeader(p), DatasetRightAligned(p)});
  std::vector<std::vector<std::string>> text;
  for (Row& r : rows) text.push_back(std::move(r.text));
  c.out.Out(RenderTable(cols, text, scripted));
  return rc;
}

// ------------------------------------------------------------------ get

int ZfsGet(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "rHpj", "dost", {"json"});
  if (!a.error.empty()) return ZfsUsage(c, "get", a.error);
  if (a.operands.empty()) return ZfsUsage(c, "get", "missing property argument");
  const bool scripted = a.Has('H'), parsable = a.Has('p');
  const bool as_json = a.Has('j') || a.HasLong("json");
  int depth = -1;
  if (ParseDepth(a, &depth) != 0) return ZfsUsage(c, "get", "invalid depth '" + a.Values('d').back() + "'");
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
          return ZfsUsage(c, "get", "invalid field '" + f + "'");
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
        return ZfsUsage(c, "get", "invalid source '" + w + "'");
      }
      sources.insert(w);
    }
  }
  std::vector<std::string> wanted;
  bool all = false;
  const std::vector<std::string> asked = SplitComma(a.operands[0]);
  for (const std::string& p : asked) {
    if (p == "all") {
      if (asked.size() > 1) return ZfsUsage(c, "get", "bad property list: 'all' can only be used by itself");
      all = true;
      continue;
    }
    const std::string cp = CanonicalDatasetProp(p);
    if (cp.empty() || cp == "space") return ZfsUsage(c, "get", "bad property list: invalid property '" + p + "'");
    wanted.push_back(cp);
  }
  int rc = 0;
  const DatasetTypes types = ParseDatasetTypes(c, a, "get", DatasetTypes{true, true}, &rc);
  if (rc == 2) return 2;
  std::vector<Selected> sel = SelectDatasets(
      c, std::vector<std::string>(a.operands.begin() + 1, a.operands.end()), a.Has('r'), depth, types, &rc);
  std::vector<std::vector<std::string>> rows;
  json jds = json::object();
  std::vector<std::string> user_order;
  for (const Selected& s : sel) {
    MutexLock l(&s.entry->mu);
    if (s.entry->pool == nullptr) continue;
    auto chain = DatasetPropChain(*s.entry->pool, s.row.name);
    if (!chain.ok()) {
      rc = c.Fail(ErrorLine(chain.status(), "open", s.row.name));
      continue;
    }
    const PropZap computed = ComputedProps(s.row);
    const PropZap zpl = ZplMasterZap(*s.entry->pool, s.row.name.substr(0, s.row.name.find_first_of("@#")));
    std::vector<ResolvedProp> props;
    if (all) {
      // zfs-fuse's listing on a legacy pool, OpenZFS 2.x's on a feature-flag one.
      auto r = ResolveAllDatasetProps(*chain, &zpl, &computed, s.row.info.snapshot ? kPropSnapshot : kPropFilesystem,
                                      &user_order, s.entry->pool->version());
      if (!r.ok()) {
        rc = c.Fail(ErrorLine(r.status(), "open", s.row.name));
        continue;
      }
      props = std::move(*r);
      // (A bookmark has four, two of them hidden from a file system's.)
      if (s.row.bookmark) {
        props.clear();
        for (const char* n : {"type", "creation", "createtxg", "guid"}) {
          if (auto v = ResolveDatasetProp(n, *chain, &zpl, &computed); v.ok()) props.push_back(*v);
        }
      }
    }
    for (const std::string& w : wanted) {
      if (w == "name") {
        ResolvedProp p;
        p.name = "name";
        p.value = PropValue::String(s.row.name);
        props.push_back(p);
        continue;
      }
      if (IsWrittenAt(w)) {
        ResolvedProp p;  // "-" when not a snapshot before the dataset
        p.name = w;
        const std::optional<PropValue> v = WrittenSince(*s.entry->pool, s.row, w);
        p.value = v ? *v : PropValue::String("");
        props.push_back(p);
        continue;
      }
      auto r = ResolveDatasetProp(w, *chain, &zpl, &computed);
      if (!r.ok() || !AppliesTo(w, s.row)) {
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
      const std::string v = p.name == "name" ? s.row.name : DatasetValueText(p.name, p.value, parsable, s.entry->rec.altroot);
      std::vector<std::string> row;
      for (const std::string& f : fields) {
        row.push_back(f == "name" ? s.row.name : f == "property" ? p.name : f == "value" ? v
                      : f == "received" ? "-" : p.SourceText());
      }
      rows.push_back(row);
      jp[p.name] = {{"value", v}, {"source", DatasetSourceJson(p)}};
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

}  // namespace uzfs::cmd
