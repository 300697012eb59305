// Run-directory paths (rundir.h).
#include "cmd/common/rundir.h"

#include <cstdlib>

namespace uzfs::cmd {

std::string RunDir() {
  const char* d = std::getenv("UZFS_RUNDIR");
  if (d != nullptr && *d != '\0') return d;
  return "/run/uzfs";
}

std::string SocketPath(const std::string& rundir) { return rundir + "/uzfsd.sock"; }
std::string PidPath(const std::string& rundir) { return rundir + "/uzfsd.pid"; }
std::string LogPath(const std::string& rundir) { return rundir + "/uzfsd.log"; }
std::string CachePath(const std::string& rundir) { return rundir + "/zpool.cache"; }

}  // namespace uzfs::cmd
