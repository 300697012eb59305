// The run directory uzfsd and its clients share: /run/uzfs, or the
// directory UZFS_RUNDIR names (so tests run many isolated daemons side by
// side). It holds the socket (uzfsd.sock, mode 0600), the pid file
// (uzfsd.pid, locked by the live daemon), the log (uzfsd.log) and the cache
// file of imported pools (zpool.cache). The directory itself is mode 0700.
#pragma once

#include <string>

namespace uzfs::cmd {

// UZFS_RUNDIR when set and non-empty, else /run/uzfs.
std::string RunDir();
std::string SocketPath(const std::string& rundir);
std::string PidPath(const std::string& rundir);
std::string LogPath(const std::string& rundir);
std::string CachePath(const std::string& rundir);

}  // namespace uzfs::cmd
