// zpool get and zpool set (man/zpool.8). get: the fields and properties
// asked for (aliases as zpool takes them, feature@ and unsupported@ too)
// of the pools named, as a table or OpenZFS's JSON; `all` is the pool's
// listing (zfs-fuse's below version 5000, OpenZFS 2.x's at 5000), a name
// any property uzfs answers. set: the value is checked against the
// property table first; pool properties go into the pool (Pool::
// SetPoolProps: the props ZAP, or the config for comment and
// compatibility), cachefile (this host's) into the cache record, and
// feature@NAME=enabled enables a feature. OpenZFS's properties are set on
// feature-flag pools only, and there dedupditto is taken and ignored with
// OpenZFS's note, as OpenZFS 2.x does.
#include "cmd/uzfsd/args.h"
#include "cmd/uzfsd/pool_cache_files.h"
#include "cmd/uzfsd/zpool_handlers.h"
#include "cmd/uzfsd/zpool_report.h"
#include "zfs/dsl/pool_cache_file.h"
#include "zfs/dsl/prop_table.h"

namespace uzfs::cmd {

int ZpoolGet(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "Hpj", "o", {"json"});
  if (!a.error.empty()) return ZpoolUsage(c, "get", a.error);
  if (a.operands.empty()) return ZpoolUsage(c, "get", "missing property argument");
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
          return ZpoolUsage(c, "get", "invalid field '" + f + "'");
        }
        fields.push_back(f);
      }
    }
  }
  std::vector<std::string> wanted;
  bool all = false;
  const std::vector<std::string> asked = SplitComma(a.operands[0]);
  const std::vector<std::string> targets(a.operands.begin() + 1, a.operands.end());
  if (NamesVdevs(c, targets)) return ZpoolGetVdevs(c, asked, targets, fields, scripted, parsable, as_json);
  for (const std::string& p : asked) {
    if (p == "all") {
      if (asked.size() > 1) return ZpoolUsage(c, "get", "bad property list: 'all' can only be used by itself");
      all = true;
    } else {
      wanted.push_back(IsUserProp(p) ? p : CanonicalPoolProp(p));
      if (!KnownPoolProp(wanted.back()) && !IsUserProp(p) && !wanted.back().starts_with("feature@") &&
          !wanted.back().starts_with("unsupported@"))
        return ZpoolUsage(c, "get", "bad property list: invalid property '" + p + "'");
    }
  }
  int rc = 0;
  auto pools = SelectPools(c, targets, &rc);
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
      for (const PoolPropRow& r : *pr) {
        if (r.listed) sel.push_back(r);
      }
    } else {
      for (const std::string& w : wanted) {
        bool found = false;
        for (const PoolPropRow& r : *pr) {
          if (r.name == w && !found) {
            sel.push_back(r);
            found = true;
          }
        }
        if (!found && w == "name") {
          sel.push_back(PoolPropRow{"name", e->rec.name, "-"});
          found = true;
        }
        if (!found && IsUserProp(w)) {  // not set: "-", as OpenZFS shows it
          sel.push_back(PoolPropRow{w, "-", "-"});
          found = true;
        }
        if (!found) return ZpoolUsage(c, "get", "bad property list: invalid property '" + w + "'");
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

int ZpoolSet(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "", "");
  if (!a.error.empty()) return ZpoolUsage(c, "set", a.error);
  if (a.operands.empty()) return ZpoolUsage(c, "set", "missing property=value argument");
  if (a.operands.size() < 2) return ZpoolUsage(c, "set", "missing pool name");
  if (a.operands.size() > 3) return ZpoolUsage(c, "set", "too many pool names");
  const std::string kv = a.operands[0], name = a.operands[1];
  const size_t eq = kv.find('=');
  if (eq == std::string::npos) return ZpoolUsage(c, "set", "missing '=' for property=value argument");
  if (a.operands.size() == 3) return ZpoolSetVdev(c, kv.substr(0, eq), kv.substr(eq + 1), name, a.operands[2]);
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
  if (IsUserProp(k)) {
    if (e->pool->readonly()) return c.Fail("cannot set property for '" + name + "': pool is read-only");
    e->pool->LogHistory(c.cmdline);
    if (Status s = e->pool->SetPoolProps({{k, v}}); !s.ok()) return c.Fail(std::string(s.message()));
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
  if (Status s = CheckPoolPropSettable(k, name, e->pool->version()); !s.ok()) {
    return c.Fail(std::string(s.message()));
  }
  const PropDef* d = FindPoolProp(k);
  if (d != nullptr && d->feature_listing == FeatureListing::kUnlisted && e->pool->version() >= kFeatureVersion) {
    // OpenZFS 2.x says so and drops it: dedup ditto copies are gone.
    c.out.Out("Note: property '" + k + "' no longer has any effect\n");
    return 0;
  }
  if (d != nullptr && d->storage == PropStorage::kPoolZap) {
    // In the pool itself: it moves with the pool (zfs-fuse reads it too).
    e->pool->LogHistory(c.cmdline);
    if (Status s = e->pool->SetPoolProps({{k, v}}); !s.ok()) return c.Fail(std::string(s.message()));
    return 0;
  }
  // cachefile: this host's, not the pool's.
  if (k == "cachefile" && v.starts_with("/")) {
    if (Status s = CheckPoolCacheFilePath(v); !s.ok()) {
      return c.Fail("cannot set property for '" + name + "': " + std::string(s.message()));
    }
  }
  const std::string old_file = CacheFilePath(e->rec);
  e->rec.props[k] = v;
  c.reg.UpdateCache(e->rec);
  if (k == "cachefile") {
    if (old_file != CacheFilePath(e->rec)) LeaveCacheFile(old_file, name, c.reg.log());
    FollowCacheFile(*e, c.reg.log());
  }
  e->pool->LogHistory(c.cmdline);
  return 0;
}

}  // namespace uzfs::cmd
