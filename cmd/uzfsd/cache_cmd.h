// The daemon's cache: one tunables table, one ARC shared by every pool, the
// reaper that shrinks it under memory pressure, the set of mounted file
// systems that share one synced-block and directory cache budget
// (ZplMountSet); and the two zpool
// subcommands that look at it at run time:
//   zpool arcstats [-j]                the ARC's counters, as the text of
//                                      /proc/spl/kstat/zfs/arcstats (-j: JSON)
//   zpool arcstats [-Hp] interval [count]
//                                      a row per interval (arcstat_rows.cc)
//   zpool tunable [-Hj] [name[=value]] ...
//                                      list tunables, show some, or set them
//                                      (a set reaches the running ARC at once)
// Tunables come from their defaults (arc_max: half of RAM, ...), then the
// environment (UZFS_<NAME>), then `uzfsd -o name=value`, then `zpool
// tunable name=value` (man/uzfsd.8 lists them all).
// The DaemonCache is made by main() before any pool is imported and set as
// the process's (SetDaemonCache); pool create/import hand DaemonArc() and
// DaemonL2Arc() (which takes the pool's cache devices) to the pool, and
// mounts hand DaemonTunables() (file read-ahead) and DaemonMountSet() to
// the ZPL. All are null when no cache was set (then pools read uncached,
// and mounts share the process's default set).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cache/arc.h"
#include "cache/arc_reaper.h"
#include "cache/l2arc.h"
#include "cmd/uzfsd/commands.h"
#include "zfs/util/tunables.h"
#include "zfs/zpl/zpl_mount_set.h"

namespace uzfs::cmd {

class DaemonCache {
 public:
  // `options`: the values of `uzfsd -o` (name=value each), applied after
  // the environment. The error names the bad option.
  static Result<std::unique_ptr<DaemonCache>> Create(const std::vector<std::string>& options);
  ~DaemonCache();  // stops the reaper; every pool must be gone

  Tunables& tunables() { return *tunables_; }
  Arc& arc() { return *arc_; }
  L2Arc& l2arc() { return *l2arc_; }
  ZplMountSet& mount_set() { return *mount_set_; }

 private:
  DaemonCache() = default;
  std::unique_ptr<Tunables> tunables_;
  std::unique_ptr<Arc> arc_;
  std::unique_ptr<L2Arc> l2arc_;  // the ARC on the pools' cache devices
  std::unique_ptr<ArcReaper> reaper_;
  std::unique_ptr<ZplMountSet> mount_set_;  // every mount of the daemon
};

// The tunables table uzfsd knows (for `uzfsd -o help` and the man page).
std::string TunablesHelp();

void SetDaemonCache(DaemonCache* c);
Arc* DaemonArc();
L2Arc* DaemonL2Arc();
Tunables* DaemonTunables();
ZplMountSet* DaemonMountSet();

int ZpoolArcstats(CmdCtx& c, const std::string& usage);
// The rolling rows of `zpool arcstats interval [count]` (count 0: until
// the client goes away or the daemon stops).
int ArcstatRows(CmdCtx& c, Arc& arc, uint64_t interval, uint64_t count, bool parsable, bool scripted);
int ZpoolTunable(CmdCtx& c, const std::string& usage);

}  // namespace uzfs::cmd
