// What zpool list, get, status and iostat read off an imported pool:
// its property rows (value and source as `zpool get all` shows them), the
// column names and aliases of list/get, the JSON heads in OpenZFS's shape,
// and the rows of its vdev tree. Functions taking a PoolEntry need its
// lock held; none of them changes the pool.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cmd/uzfsd/subcommands.h"

namespace uzfs::cmd {

// "ONLINE", "DEGRADED", ...: the root vdev's state.
std::string HealthOf(Pool& p);

struct PoolPropRow {
  std::string name, value, source;
  bool listed = true;  // shown by `zpool get all` (else by name only)
};

// Every pool property uzfs answers, those `zpool get all` lists first and
// in its order, then the rest (gettable by name) with listed false.
// Version <= 28 (zfs-fuse's pools): zfs-fuse's listing, then fragmentation,
// expandsize, checkpoint, freeing, leaked, usable, available, readonly, as
// before. Version 5000: OpenZFS 2.x's listing in its order (comment,
// multihost, load_guid, autotrim, compatibility, bcloneused, bclonesaved,
// bcloneratio, dedup_table_size among them; dedupditto not), usable and
// available last, then the feature@ / unsupported@ rows.
Result<std::vector<PoolPropRow>> PoolPropRows(PoolEntry& e, bool parsable) UZFS_REQUIRES(e.mu);
// Properties PoolPropRows answers, the table's and the others.
bool KnownPoolProp(const std::string& p);
// Column names and aliases of zpool list / get ("cap" -> "capacity").
std::string CanonicalPoolProp(const std::string& n);
// Whether the column is a number (right-aligned).
bool RightAligned(const std::string& prop);
// The column header of a property ("allocated" -> "ALLOC").
std::string ColumnHeader(const std::string& prop);
// The pool's JSON object before its properties or vdevs.
json PoolJsonHead(PoolEntry& e) UZFS_REQUIRES(e.mu);
// A source text ("default", "inherited from x") as OpenZFS's JSON object.
json SourceJson(const std::string& source);
// The pools named, or all; an unknown name prints "no such pool" and sets rc.
std::vector<std::shared_ptr<PoolEntry>> SelectPools(CmdCtx& c, const std::vector<std::string>& names, int* rc);

struct VdevRow {
  std::string name;
  int depth = 0;
  Vdev* vdev = nullptr;        // nullptr for class headers and aux devices
  bool top = false;
  std::string state;           // aux devices
  bool spare = false;          // the spares section (no I/O statistics)
};

// Rows of the config tree: data vdevs, then the logs section; with
// `include_aux` the cache and spares sections too.
std::vector<VdevRow> TreeRows(PoolEntry& e, bool include_aux) UZFS_REQUIRES(e.mu);

}  // namespace uzfs::cmd
