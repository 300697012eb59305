// What the zfs subcommands know about datasets: name arithmetic
// ("tank/a/b": pool "tank", parent "tank/a", depth 2), the rows zfs list
// and zfs get show (a dataset's DSL records, space, mount state), its
// property chain for the inheritance walk, the computed and ZPL master
// properties, value texts and column names, and the selection of
// datasets by operand, -r and -d. Reading only: nothing here changes a pool.
#pragma once

#include <optional>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cmd/uzfsd/args.h"
#include "cmd/uzfsd/subcommands.h"
#include "zfs/dsl/pool_space.h"
#include "zfs/dsl/prop_table.h"

namespace uzfs::cmd {

// The pool of a dataset (or snapshot, bookmark) name.
inline std::string PoolOfDataset(const std::string& ds) { return ds.substr(0, ds.find_first_of("/@#")); }

// "tank/a/b" -> "tank/a"; a pool's root dataset has none ("").
inline std::string DatasetParent(const std::string& ds) {
  const size_t s = ds.rfind('/');
  return s == std::string::npos ? "" : ds.substr(0, s);
}

inline bool IsDescendant(const std::string& ds, const std::string& of) {
  return ds.size() > of.size() && ds.compare(0, of.size(), of) == 0 && ds[of.size()] == '/';
}

// How many levels below its pool's root dataset.
inline int DatasetDepth(const std::string& ds) { return static_cast<int>(std::count(ds.begin(), ds.end(), '/')); }

// The pool holding `ds`, locked by the caller; nullptr when it is not
// imported (the caller says "dataset does not exist" or "no such pool").
inline std::shared_ptr<PoolEntry> PoolFor(CmdCtx& c, const std::string& ds) {
  return c.reg.Find(PoolOfDataset(ds));
}

inline bool DatasetExists(Pool& p, const std::string& ds) { return p.LocalProps(ds).ok(); }

// Whether "fs@snap" names a snapshot that exists.
inline bool SnapshotExists(Pool& p, const std::string& name) {
  auto all = p.ListDatasets(true);
  if (!all.ok()) return false;
  return std::any_of(all->begin(), all->end(), [&](const DatasetInfo& i) { return i.snapshot && i.name == name; });
}

// One dataset with everything the listings need.
struct DsRow {
  std::string name;
  DatasetInfo info;
  DatasetSpace space;
  bool mounted = false;
  std::string resume_token;  // of a receive saved for it (zfs receive -s)
  // A bookmark "fs#name" (info.ds holds its guid, creation txg and time).
  bool bookmark = false;
};

// The props ZAPs from `ds` up to its pool's root dataset, nearest first.
Result<std::vector<DslPropLevel>> DatasetPropChain(Pool& p, const std::string& ds);
// The computed properties (used, available, creation, ratios, ...).
PropZap ComputedProps(const DsRow& r);
// written@SNAP (prop, as given) of row r: SNAP is a snapshot of r's file
// system, or a full "fs@snap" name of one before it; nullopt ("-") when it
// is no snapshot before r.
std::optional<PropValue> WrittenSince(Pool& p, const DsRow& r, const std::string& prop);
inline bool IsWrittenAt(const std::string& prop) { return prop.size() > 8 && prop.starts_with("written@"); }
// The ZPL master node's entries `zfs get` shows (version, normalization,
// utf8only, casesensitivity): the dataset's own; a dataset without a ZPL
// shows the version new file systems of this pool get (zpl_create.h).
PropZap ZplMasterZap(Pool& p, const std::string& ds);
// The VALUE text (output.h's human sizes: "0B", "512B"); mountpoints
// below the pool's altroot.
std::string DatasetValueText(const std::string& prop, const PropValue& v, bool parsable, const std::string& altroot);
// Property name as the table knows it ("avail" -> "available"); user
// properties as given; empty when unknown.
std::string CanonicalDatasetProp(const std::string& n);
// The column header of a property ("available" -> "AVAIL").
std::string DatasetColumnHeader(const std::string& prop);
// Whether the column is a number (right-aligned).
bool DatasetRightAligned(const std::string& prop);
// A property's source as OpenZFS's JSON object.
json DatasetSourceJson(const ResolvedProp& p);
// The dataset's JSON object before its properties.
json DatasetJsonHead(const DsRow& r);

// The datasets a list/get names: operands (with -r / -d N below them) or
// every dataset of every pool. Missing ones print "dataset does not exist".
struct Selected {
  std::shared_ptr<PoolEntry> entry;
  DsRow row;
};

// Which kinds of dataset a listing shows (-t).
struct DatasetTypes {
  bool filesystem = true;
  bool snapshot = false;
  bool bookmark = false;
};

// Operands may name snapshots ("fs@snap"); rows come in ZFS's order (a
// file system, its snapshots oldest first, the file systems below it).
std::vector<Selected> SelectDatasets(CmdCtx& c, const std::vector<std::string>& names, bool recurse,
                                     int max_depth, DatasetTypes types, int* rc);
// -d N: the depth into *depth (-1 without -d); 1 when N is not a number >= 0.
int ParseDepth(const ParsedArgs& a, int* depth);
// -t filesystem,snapshot,all (volume and bookmark are accepted and match
// nothing: uzfs has none); `unset` without -t; *rc set (usage error of
// `sub`) for an unknown type.
DatasetTypes ParseDatasetTypes(CmdCtx& c, const ParsedArgs& a, const std::string& sub, DatasetTypes unset, int* rc);

}  // namespace uzfs::cmd
