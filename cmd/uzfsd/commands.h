// The zpool and zfs subcommands as the daemon runs them. Each gets the
// client's arguments and working directory, writes what the command prints
// to `out` and returns the exit status: 0 ok, 1 error (one line saying what
// is wrong, ZFS's wording: "cannot open 'tank': no such pool"), 2 bad usage
// (the reason, then the subcommand's usage text, on stderr).
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "cmd/common/protocol.h"
#include "cmd/uzfsd/output.h"
#include "cmd/uzfsd/registry.h"

namespace uzfs::cmd {

struct CmdCtx {
  Registry& reg;
  Output& out;
  std::vector<std::string> args;  // after the subcommand name
  std::string cwd;
  std::string cmdline;            // "zpool create tank ..." (pool history)
  const std::atomic<bool>& stopping;  // daemon shutting down (streaming commands stop)
  // The client's standard input and output when it passed them (zfs
  // receive reads a stream there, zfs send writes one); -1 otherwise.
  int in_fd = -1;
  int out_fd = -1;

  int Fail(const std::string& line) {
    out.ErrLine(line);
    return 1;
  }
};

int RunZpool(Registry& reg, Output& out, const Request& req, const std::atomic<bool>& stopping);
int RunZfs(Registry& reg, Output& out, const Request& req, const std::atomic<bool>& stopping);
// zinject (zinject_cmd.cc): fault injection into the leaves of imported pools.
int RunZinject(Registry& reg, Output& out, const Request& req, const std::atomic<bool>& stopping);
// `zinject -P import|export -s SECONDS POOL`: how long the next import
// (import=true) or export of the pool named `pool` must take at least;
// zero when none was asked for. The injection is used up by it.
std::chrono::seconds TakePoolDelay(const std::string& pool, bool import);

// zpool import (zpool_import.cc); `usage` is its usage text.
int ZpoolImport(CmdCtx& c, const std::string& usage);
// zpool add / zpool remove (zpool_vdev_cmd.cc); `usage` is the usage text.
int ZpoolAdd(CmdCtx& c, const std::string& usage);
int ZpoolRemove(CmdCtx& c, const std::string& usage);
// Imports from the cache file at daemon start (zpool_import.cc).
void ImportCachedPools(Registry& reg);
// Exports every pool, keeping them in the cache file (daemon shutdown).
void ExportAllForShutdown(Registry& reg);

// Shared by zpool commands and import: message of a failed engine call,
// with "cannot <action> 'name': " put in front unless it already says.
std::string ErrorLine(const Status& s, const std::string& action, const std::string& name);
// Makes the pool's entry after Create/Import (shape read, cache record).
// A read-only pool's devices get shared locks first; Busy (the pool closed
// again, nothing written) when they are held read-write elsewhere.
// With `mount`, mounts every dataset that mounts automatically.
Result<std::shared_ptr<PoolEntry>> MakeEntry(std::unique_ptr<Pool> pool, CacheRecord rec, const PoolShape* shape,
                                     Registry& reg, bool mount = true);
// Prints what the automatic mount of a new or imported pool could not
// mount (the pool stays imported); 1 when something did not mount.
int ReportMountErrors(CmdCtx& c, PoolEntry& e);
// Absolute path for a client-relative one; an NBD URI stays as it is.
std::string AbsPath(const std::string& cwd, const std::string& p);

}  // namespace uzfs::cmd
