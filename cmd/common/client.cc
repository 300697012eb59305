// The thin client (client.h).
#include "cmd/common/client.h"

#include <limits.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cmd/common/protocol.h"
#include "cmd/common/rundir.h"

namespace uzfs::cmd {
namespace {

// A connected socket, or -1 with errno set.
int Connect(const std::string& path) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

bool Executable(const std::string& p) { return ::access(p.c_str(), X_OK) == 0; }

std::string FindDaemon() {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    std::string dir(self);
    dir.erase(dir.rfind('/'));
    for (const std::string& c : {dir + "/uzfsd", dir + "/../uzfsd/uzfsd", dir + "/../sbin/uzfsd"}) {
      if (Executable(c)) return c;
    }
  }
  const char* path = std::getenv("PATH");
  std::string p = path != nullptr ? path : "/usr/sbin:/usr/bin:/sbin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    const std::string d = p.substr(start, end - start);
    if (!d.empty() && Executable(d + "/uzfsd")) return d + "/uzfsd";
    start = end + 1;
  }
  return "";
}

// Starts uzfsd (it detaches once ready) and waits for it. False with a
// message printed when it could not be started.
bool StartDaemon(const char* program, const std::string& rundir) {
  const std::string daemon = FindDaemon();
  if (daemon.empty()) {
    std::fprintf(stderr, "%s: cannot start uzfsd: not found next to %s or in PATH\n", program, program);
    return false;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::fprintf(stderr, "%s: cannot start uzfsd: %s\n", program, std::strerror(errno));
    return false;
  }
  if (pid == 0) {
    ::execl(daemon.c_str(), "uzfsd", static_cast<char*>(nullptr));
    std::fprintf(stderr, "%s: cannot run %s: %s\n", program, daemon.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  // Exit 0: ready. Otherwise another daemon may have won a race to start:
  // the caller's connect loop decides.
  (void)rundir;
  return true;
}

// How one attempt to have the daemon run the request ended.
enum class Attempt {
  kDone,       // the daemon answered with an exit status (in *rc)
  kNotRun,     // no daemon took the request: connect failed, or the
               // connection ended before "started" (send it again)
  kLostMidway  // the daemon began the command and went away
};

// Connects (starting the daemon when none listens), sends the request and
// relays the replies.
Attempt RunOnce(const char* program, const std::string& rundir, const std::string& request,
                const std::vector<int>& fds, int* rc,
                int* connect_errno, std::chrono::steady_clock::time_point* last_start) {
  const std::string sock = SocketPath(rundir);
  *connect_errno = 0;
  int fd = Connect(sock);
  // At most one start every half second: a daemon that is still dying or
  // exporting holds the pid file, and starts fail until it is gone.
  const auto now = std::chrono::steady_clock::now();
  if (fd < 0 && (errno == ENOENT || errno == ECONNREFUSED) && now - *last_start >= std::chrono::milliseconds(500)) {
    *last_start = now;
    if (!StartDaemon(program, rundir)) {
      *rc = 1;
      return Attempt::kDone;
    }
    fd = Connect(sock);
  }
  if (fd < 0) {
    *connect_errno = errno;
    return Attempt::kNotRun;
  }
  if (!WriteAllWithFds(fd, request, fds)) {
    ::close(fd);
    return Attempt::kNotRun;
  }
  bool started = false;
  std::string buf, line;
  while (ReadLine(fd, &buf, &line)) {
    std::optional<Reply> r = DecodeReply(line);
    if (!r) continue;
    switch (r->kind) {
      case Reply::Kind::kStarted:
        started = true;
        break;
      case Reply::Kind::kStdout:
        started = true;
        std::fwrite(r->text.data(), 1, r->text.size(), stdout);
        std::fflush(stdout);
        break;
      case Reply::Kind::kStderr:
        started = true;
        std::fflush(stdout);
        std::fwrite(r->text.data(), 1, r->text.size(), stderr);
        break;
      case Reply::Kind::kExit:
        ::close(fd);
        *rc = r->exit;
        return Attempt::kDone;
    }
  }
  ::close(fd);
  return started ? Attempt::kLostMidway : Attempt::kNotRun;
}

}  // namespace

int RunClient(const char* program, int argc, char** argv) {
  const std::string rundir = RunDir();
  Request req;
  req.command = program;
  for (int i = 1; i < argc; i++) req.argv.push_back(argv[i]);
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) != nullptr) req.cwd = cwd;
  req.posixly_correct = std::getenv("POSIXLY_CORRECT") != nullptr;
  // zfs send writes its stream to our stdout, zfs receive reads one from
  // our stdin: the daemon gets the descriptor itself.
  std::vector<int> fds;
  if (std::string(program) == "zfs" && argc > 1) {
    const std::string sub = argv[1];
    if (sub == "send") {
      req.fds = {"stdout"};
      fds = {STDOUT_FILENO};
    } else if (sub == "receive" || sub == "recv") {
      req.fds = {"stdin"};
      fds = {STDIN_FILENO};
    }
  }
  const std::string request = EncodeRequest(req);
  // A daemon that is starting (importing its pools) or dying (killed, its
  // socket not yet closed) may take the connection without running the
  // request; try again until one runs it, for up to 30 s.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int connect_errno = 0;
  std::chrono::steady_clock::time_point last_start{};
  for (;;) {
    int rc = 1;
    switch (RunOnce(program, rundir, request, fds, &rc, &connect_errno, &last_start)) {
      case Attempt::kDone:
        return rc;
      case Attempt::kLostMidway:
        std::fprintf(stderr, "%s: uzfsd exited while running the command (see %s)\n", program,
                     LogPath(rundir).c_str());
        return 1;
      case Attempt::kNotRun:
        break;
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (connect_errno != 0) {
    std::fprintf(stderr, "%s: cannot connect to uzfsd at '%s': %s (see %s)\n", program,
                 SocketPath(rundir).c_str(), std::strerror(connect_errno), LogPath(rundir).c_str());
  } else {
    std::fprintf(stderr, "%s: uzfsd closed the connection without running the command (see %s)\n",
                 program, LogPath(rundir).c_str());
  }
  return 1;
}

}  // namespace uzfs::cmd
