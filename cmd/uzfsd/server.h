// The daemon's socket server: accepts connections on the listening Unix
// socket, checks each peer's credentials (SO_PEERCRED: root or the
// daemon's own uid, anyone else gets "permission denied" and exit 1), reads
// one request (cmd/common/protocol.h), runs it (commands.h) on its own
// thread and streams the replies. Requests run concurrently; commands lock
// what they touch (registry.h).
#pragma once

#include <atomic>
#include <functional>

#include "cmd/uzfsd/registry.h"
#include "zfs/util/mutex.h"

namespace uzfs::cmd {

class Server {
 public:
  Server(Registry& reg, int listen_fd) : reg_(reg), listen_fd_(listen_fd) {}
  // Accepts until `stop_fd` becomes readable (the signal thread writes it).
  // `every_few_seconds`, if set, runs on this thread about every
  // kHousekeepingSeconds, busy or not (the daemon's housekeeping).
  static constexpr int kHousekeepingSeconds = 3;
  void Run(int stop_fd, const std::function<void()>& every_few_seconds = {});
  // After Run: tells running commands to stop (streaming ones end) and
  // waits until every connection is finished.
  void Drain() UZFS_EXCLUDES(mu_);

 private:
  void Serve(int fd) UZFS_EXCLUDES(mu_);

  Registry& reg_;
  const int listen_fd_;
  std::atomic<bool> stopping_{false};
  Mutex mu_;
  CondVar idle_;
  int active_ UZFS_GUARDED_BY(mu_) = 0;
};

}  // namespace uzfs::cmd
