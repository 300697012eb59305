// The socket server (server.h).
#include "cmd/uzfsd/server.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <exception>
#include <thread>

#include "cmd/common/protocol.h"
#include "cmd/uzfsd/commands.h"
#include "cmd/uzfsd/output.h"
#include "zfs/util/thread_name.h"

namespace uzfs::cmd {

void Server::Run(int stop_fd, const std::function<void()>& every_few_seconds) {
  using Clock = std::chrono::steady_clock;
  const auto period = std::chrono::seconds(kHousekeepingSeconds);
  auto next = Clock::now() + period;
  for (;;) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    const int wait_ms = every_few_seconds
        ? static_cast<int>(std::max<int64_t>(
              0, std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count()))
        : -1;
    const int ready = ::poll(p, 2, wait_ms);
    if (every_few_seconds && Clock::now() >= next) {
      every_few_seconds();
      next = Clock::now() + period;
    }
    if (ready == 0) continue;
    if (ready < 0) {
      if (errno == EINTR) continue;
      reg_.log().Log("poll failed: " + std::to_string(errno));
      return;
    }
    if (p[1].revents != 0) return;
    if ((p[0].revents & POLLIN) == 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    {
      MutexLock l(&mu_);
      active_++;
    }
    std::thread([this, fd] {
      NameThisThread("zfs_cmd");
      Serve(fd);
    }).detach();
  }
}

void Server::Drain() {
  stopping_.store(true);
  MutexLock l(&mu_);
  while (active_ > 0) idle_.Wait(&mu_);
}

void Server::Serve(int fd) {
  auto send = [fd](const Reply& r) { return WriteAll(fd, EncodeReply(r)); };
  auto finish = [&](int rc) {
    send(Reply{Reply::Kind::kExit, {}, rc});
    ::close(fd);
    MutexLock l(&mu_);
    if (--active_ == 0) idle_.SignalAll();
  };
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
      (cred.uid != 0 && cred.uid != ::geteuid())) {
    reg_.log().Log("refused a client with uid " + std::to_string(cred.uid));
    send(Reply{Reply::Kind::kStderr, "permission denied: uzfsd serves only root and uid " +
                                         std::to_string(::geteuid()) + "\n", 0});
    finish(1);
    return;
  }
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string buf, line;
  std::optional<Request> req;
  // The descriptors the client passed (its stdin or stdout), closed when
  // the command is done.
  struct PassedFds {
    std::vector<int> fds;
    ~PassedFds() {
      for (int f : fds) ::close(f);
    }
  } passed;
  constexpr size_t kMaxPassedFds = 2;
  if (ReadLineWithFds(fd, &buf, &line, &passed.fds, kMaxPassedFds)) req = DecodeRequest(line);
  if (req && req->fds.size() != passed.fds.size()) req.reset();  // names without descriptors, or the reverse
  if (req) req->fd_values = passed.fds;
  if (!req || (req->command != "zpool" && req->command != "zfs" && req->command != "zinject")) {
    send(Reply{Reply::Kind::kStderr, "uzfsd: malformed request\n", 0});
    finish(2);
    return;
  }
  // From here on the command runs: a client that loses the connection
  // after this line must not send it again.
  if (!send(Reply{Reply::Kind::kStarted, {}, 0})) {
    finish(1);
    return;
  }
  Output out([&send](bool is_err, const std::string& text) {
    return send(Reply{is_err ? Reply::Kind::kStderr : Reply::Kind::kStdout, text, 0});
  });
  std::string cmdline = req->command;
  for (const std::string& a : req->argv) cmdline += " " + a;
  int rc = 1;
  try {
    rc = req->command == "zpool"     ? RunZpool(reg_, out, *req, stopping_)
         : req->command == "zinject" ? RunZinject(reg_, out, *req, stopping_)
                                     : RunZfs(reg_, out, *req, stopping_);
  } catch (const std::exception& e) {
    // The boundary: a library exception (allocation, JSON) fails this
    // request, never the daemon.
    reg_.log().Log(std::string("internal error in '") + cmdline + "': " + e.what());
    out.ErrLine(std::string("internal error: ") + e.what() + " (see uzfsd.log)");
    rc = 1;
  }
  out.Flush();
  reg_.log().Log("uid " + std::to_string(cred.uid) + ": " + cmdline + " -> exit " + std::to_string(rc));
  finish(rc);
}

}  // namespace uzfs::cmd
