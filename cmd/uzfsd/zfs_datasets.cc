// What the zfs subcommands read about datasets (zfs_datasets.h): the
// rows of a pool's datasets with their space, the inheritance chain of
// DSL props ZAPs (Pool::LocalProps), the computed properties from the DSL
// records and zfs/dsl/pool_space.h, value texts, and the selection of
// datasets for list and get. Nothing here changes a pool.
#include <map>
#include <set>

#include "cmd/uzfsd/zfs_datasets.h"
#include "cmd/uzfsd/zfs_handlers.h"
#include "cmd/uzfsd/zfs_receive.h"
#include "zfs/zpl/zpl_create.h"

namespace uzfs::cmd {

namespace {

// ZFS's listing order: a file system, its snapshots (oldest first), then
// the file systems below it.
bool ListedBefore(const DsRow& a, const DsRow& b) {
  const std::string fa = a.name.substr(0, a.name.find('@')), fb = b.name.substr(0, b.name.find('@'));
  if (fa != fb) return fa < fb;
  if (a.info.snapshot != b.info.snapshot) return !a.info.snapshot;
  return a.info.ds.creation_txg < b.info.ds.creation_txg;
}

Result<std::vector<DsRow>> PoolDatasets(Pool& p, bool with_snapshots) {
  // (With the file systems a resumable receive left part way: zfs list
  // and get show them, as OpenZFS does, with their resume token.)
  UZFS_ASSIGN_OR_RETURN(std::vector<DatasetInfo> infos, p.ListDatasets(with_snapshots, /*with_partial=*/true));
  UZFS_ASSIGN_OR_RETURN(std::vector<DatasetSpace> spaces, ListDatasetSpace(p));
  std::vector<DsRow> rows;
  for (DatasetInfo& i : infos) {
    DsRow r;
    r.name = i.name;
    r.info = std::move(i);
    if (r.info.saved_receive) {
      auto saved = p.SavedReceiveOf(r.name);
      if (saved.ok() && *saved) r.resume_token = ResumeTokenText(**saved);
    }
    if (r.info.snapshot) {
      // A snapshot's space: what only it holds, what it references.
      r.space.used = r.info.ds.unique_bytes;
      r.space.refer = r.info.ds.referenced_bytes;
    } else {
      for (const DatasetSpace& s : spaces) {
        if (s.name == r.name) r.space = s;
      }
    }
    rows.push_back(std::move(r));
  }
  std::sort(rows.begin(), rows.end(), ListedBefore);
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

}  // namespace

Result<std::vector<DslPropLevel>> DatasetPropChain(Pool& p, const std::string& ds) {
  std::vector<DslPropLevel> chain;
  const size_t at = ds.find('@');
  // A bookmark has its file system's; a snapshot its own user
  // properties, then its file system's chain.
  if (const size_t hash = ds.find('#'); hash != std::string::npos) return DatasetPropChain(p, ds.substr(0, hash));
  if (at != std::string::npos) {
    UZFS_ASSIGN_OR_RETURN(auto local, p.LocalProps(ds));
    chain.push_back(DslPropLevel{ds, ZapFromLocal(local)});
  }
  for (std::string n = ds.substr(0, at); !n.empty(); n = DatasetParent(n)) {
    UZFS_ASSIGN_OR_RETURN(auto local, p.LocalProps(n));
    chain.push_back(DslPropLevel{n, ZapFromLocal(local)});
  }
  return chain;
}

PropZap ComputedProps(const DsRow& r) {
  const DslDirPhys& d = r.info.dir;
  const DslDatasetPhys& s = r.info.ds;
  // Ratios in hundredths, never below 1.00x: compressratio over the DSL
  // directory (the dataset and its descendants, as OpenZFS counts it),
  // refcompressratio over what the dataset itself references.
  auto ratio_of = [](uint64_t uncompressed, uint64_t compressed) {
    return compressed == 0 ? uint64_t{100} : std::max<uint64_t>(uncompressed * 100 / compressed, 100);
  };
  // Referenced since the previous snapshot: what the dataset references
  // less what it still shares with that snapshot (the snapshot's
  // referenced bytes less what this one no longer references of them: its
  // deadlist).
  const uint64_t written = s.referenced_bytes + r.info.deadlist_bytes - std::min(s.referenced_bytes + r.info.deadlist_bytes, r.info.prev_referenced);
  if (r.bookmark) {
    return {
        {"type", PropValue::String("bookmark")},
        {"creation", PropValue::Number(s.creation_time)},
        {"createtxg", PropValue::Number(s.creation_txg)},
        {"guid", PropValue::Number(s.guid)},
    };
  }
  if (r.info.snapshot) {
    std::string clones;
    for (const std::string& c : r.info.clones) clones += (clones.empty() ? "" : ",") + c;
    return {
        {"type", PropValue::String("snapshot")},
        {"creation", PropValue::Number(s.creation_time)},
        {"used", PropValue::Number(s.unique_bytes)},
        {"referenced", PropValue::Number(s.referenced_bytes)},
        {"compressratio", PropValue::Number(ratio_of(s.uncompressed_bytes, s.compressed_bytes))},
        {"refcompressratio", PropValue::Number(ratio_of(s.uncompressed_bytes, s.compressed_bytes))},
        {"written", PropValue::Number(written)},
        {"logicalreferenced", PropValue::Number(s.uncompressed_bytes)},
        {"createtxg", PropValue::Number(s.creation_txg)},
        {"guid", PropValue::Number(s.guid)},
        {"userrefs", PropValue::Number(r.info.userrefs)},
        // (Its next snapshot or head is the other child.)
        {"numclones", PropValue::Number(s.num_children > 0 ? s.num_children - 1 : 0)},
        {"clones", PropValue::String(clones)},
        {"defer_destroy", PropValue::Number((s.flags & kDsFlagDeferDestroy) != 0 ? 1 : 0)},
        {"objsetid", PropValue::Number(r.info.ds_obj)},
    };
  }
  PropZap z = {
      {"type", PropValue::String("filesystem")},
      {"creation", PropValue::Number(s.creation_time)},
      {"used", PropValue::Number(r.space.used)},
      {"available", PropValue::Number(r.space.avail)},
      {"referenced", PropValue::Number(r.space.refer)},
      {"compressratio", PropValue::Number(ratio_of(d.uncompressed_bytes, d.compressed_bytes))},
      {"refcompressratio", PropValue::Number(ratio_of(s.uncompressed_bytes, s.compressed_bytes))},
      {"written", PropValue::Number(written)},
      {"logicalused", PropValue::Number(d.uncompressed_bytes)},
      {"logicalreferenced", PropValue::Number(s.uncompressed_bytes)},
      {"mounted", PropValue::Number(r.mounted ? 1 : 0)},
      {"createtxg", PropValue::Number(s.creation_txg)},
      {"guid", PropValue::Number(s.guid)},
      {"usedbysnapshots", PropValue::Number(d.used_breakdown[1])},
      {"usedbydataset", PropValue::Number(d.used_breakdown[0])},
      {"usedbychildren", PropValue::Number(d.used_breakdown[2] + d.used_breakdown[3])},
      {"usedbyrefreservation", PropValue::Number(d.used_breakdown[4])},
      {"objsetid", PropValue::Number(r.info.ds_obj)},
  };
  // "-" (no value) for a file system that is no clone.
  if (!r.info.origin.empty()) z.push_back({"origin", PropValue::String(r.info.origin)});
  if (!r.resume_token.empty()) z.push_back({"receive_resume_token", PropValue::String(r.resume_token)});
  return z;
}

std::optional<PropValue> WrittenSince(Pool& p, const DsRow& r, const std::string& prop) {
  std::string snap = prop.substr(prop.find('@') + 1);
  if (snap.find('@') == std::string::npos) snap = r.name.substr(0, r.name.find('@')) + "@" + snap;
  auto w = p.SpaceWritten(snap, r.name);
  if (!w.ok()) return std::nullopt;
  return PropValue::Number(*w);
}

// The ZPL master node's entries `zfs get` shows (version, normalization,
// utf8only, casesensitivity): the dataset's own; a dataset without a ZPL
// shows the version new file systems of this pool get (zpl_create.h).
PropZap ZplMasterZap(Pool& p, const std::string& ds) {
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

namespace {

bool IsSizeProp(const std::string& n) {
  if (IsWrittenAt(n)) return true;
  static const std::set<std::string> k = {"used", "available", "referenced", "quota", "reservation",
                                          "recordsize", "volsize", "volblocksize", "refquota",
                                          "refreservation", "usedbysnapshots", "usedbydataset",
                                          "usedbychildren", "usedbyrefreservation", "logicalused",
                                          "logicalreferenced", "written"};
  return k.count(n) != 0;
}

}  // namespace

// The VALUE text (output.h's human sizes: "0B", "512B").
std::string DatasetValueText(const std::string& prop, const PropValue& v, bool parsable, const std::string& altroot) {
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
std::string CanonicalDatasetProp(const std::string& n) {
  if (n == "name" || n == "space" || IsWrittenAt(n)) return n;
  if (IsUserProp(n)) return n;
  const PropDef* d = FindDatasetProp(n);
  return d == nullptr ? "" : std::string(d->name);
}

std::string DatasetColumnHeader(const std::string& prop) {
  if (IsUserProp(prop)) return Upper(prop);
  const PropDef* d = FindDatasetProp(prop);
  return d == nullptr ? Upper(prop) : std::string(d->column);
}

bool DatasetRightAligned(const std::string& prop) {
  if (IsWrittenAt(prop)) return true;
  const PropDef* d = FindDatasetProp(prop);
  return d != nullptr && d->kind == PropKind::kNumber && !IsUserProp(prop);
}


json DatasetSourceJson(const ResolvedProp& p) {
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
  if (r.bookmark) {
    const size_t hash = r.name.find('#');
    return {{"name", r.name},
            {"type", "BOOKMARK"},
            {"pool", PoolOfDataset(r.name)},
            {"createtxg", std::to_string(r.info.ds.creation_txg)},
            {"dataset", r.name.substr(0, hash)},
            {"bookmark_name", r.name.substr(hash + 1)}};
  }
  if (r.info.snapshot) {
    const size_t at = r.name.find('@');
    return {{"name", r.name},
            {"type", "SNAPSHOT"},
            {"pool", PoolOfDataset(r.name)},
            {"createtxg", std::to_string(r.info.ds.creation_txg)},
            {"dataset", r.name.substr(0, at)},
            {"snapshot_name", r.name.substr(at + 1)}};
  }
  return {{"name", r.name},
          {"type", "FILESYSTEM"},
          {"pool", PoolOfDataset(r.name)},
          {"createtxg", std::to_string(r.info.ds.creation_txg)}};
}

std::vector<Selected> SelectDatasets(CmdCtx& c, const std::vector<std::string>& names, bool recurse,
                                     int max_depth, DatasetTypes types, int* rc) {
  std::vector<Selected> out;
  // named: `top` was an operand (shown whatever -t says when it is a
  // snapshot, as ZFS does); else the pool walked for a list of everything.
  auto add_pool = [&](const std::shared_ptr<PoolEntry>& e, const std::string& top, bool rec, int depth,
                      bool named) {
    MutexLock l(&e->mu);
    if (e->pool == nullptr) return false;
    auto rows = PoolDatasets(*e->pool, types.snapshot || top.find('@') != std::string::npos);
    if (!rows.ok()) {
      *rc = c.Fail(ErrorLine(rows.status(), "open", top));
      return true;
    }
    bool found = false;
    // `zfs list -t snapshot fs`: the snapshots of fs (OpenZFS's rule for a
    // file system named with only snapshots wanted); the same for bookmarks.
    if (!rec && (types.snapshot || types.bookmark) && !types.filesystem && top.find_first_of("@#") == std::string::npos) {
      rec = true;
      depth = 1;
    }
    // Bookmarks, after their file system's snapshots: each file system's
    // are held back until the next file system's row.
    const bool named_bookmark = top.find('#') != std::string::npos;
    std::vector<DsRow> held;
    auto flush = [&]() {
      for (DsRow& b : held) out.push_back(Selected{e, std::move(b)});
      held.clear();
    };
    auto bookmarks_of = [&](const std::string& fs, bool in_scope) UZFS_REQUIRES(e->mu) {
      if (!(types.bookmark && in_scope) && !(named_bookmark && fs == top.substr(0, top.find('#')))) return;
      auto bms = e->pool->Bookmarks(fs);
      if (!bms.ok()) return;
      for (const Pool::Bookmark& b : *bms) {
        if (named_bookmark && b.name != top) continue;
        if (!named_bookmark && depth >= 0 && DatasetDepth(fs) - DatasetDepth(top) + 1 > depth) continue;
        DsRow r;
        r.name = b.name;
        r.bookmark = true;
        r.info.name = b.name;
        r.info.ds.guid = b.guid;
        r.info.ds.creation_txg = b.creation_txg;
        r.info.ds.creation_time = b.creation_time;
        if (b.name == top) found = true;
        held.push_back(std::move(r));
      }
    };
    for (DsRow& r : *rows) {
      if (!r.info.snapshot) flush();
      r.mounted = !r.info.snapshot && e->mounts.Find(r.name) != nullptr;
      const bool self = r.name == top;
      const std::string fs = r.name.substr(0, r.name.find('@'));
      const int levels = DatasetDepth(fs) - DatasetDepth(top) + (r.info.snapshot ? 1 : 0);
      const bool below = rec && (fs == top || IsDescendant(fs, top)) && !self && (depth < 0 || levels <= depth);
      if (self) found = true;
      const bool wanted = r.info.snapshot ? types.snapshot || (self && named) : types.filesystem;
      if (!r.info.snapshot) bookmarks_of(r.name, (rec && (r.name == top || IsDescendant(r.name, top))) || self);
      if (!wanted) continue;
      if (self || below) out.push_back(Selected{e, std::move(r)});
    }
    flush();
    return found;
  };
  if (names.empty()) {
    for (const auto& e : c.reg.All()) {
      std::string pool;
      {
        MutexLock l(&e->mu);
        pool = e->rec.name;
      }
      add_pool(e, pool, true, max_depth, false);
    }
    return out;
  }
  for (const std::string& n : names) {
    auto e = c.reg.Find(PoolOfDataset(n));
    if (e == nullptr || !add_pool(e, n, recurse || max_depth >= 0, max_depth, true)) {
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

DatasetTypes ParseDatasetTypes(CmdCtx& c, const ParsedArgs& a, const std::string& sub, DatasetTypes unset, int* rc) {
  if (a.Values('t').empty()) return unset;
  DatasetTypes t{false, false};
  for (const std::string& v : a.Values('t')) {
    for (const std::string& w : SplitComma(v)) {
      if (w == "filesystem" || w == "fs") {
        t.filesystem = true;
      } else if (w == "snapshot" || w == "snap") {
        t.snapshot = true;
      } else if (w == "bookmark") {
        t.bookmark = true;
      } else if (w == "all") {
        t.filesystem = t.snapshot = t.bookmark = true;
      } else if (w != "volume" && w != "vol") {
        *rc = ZfsUsage(c, sub, "invalid type '" + w + "'");
        return DatasetTypes{false, false};
      }
    }
  }
  return t;
}

}  // namespace uzfs::cmd
