// uzfsd: the uzfs daemon (man/uzfsd.8). It plays the part of ZFS's kernel
// module: it owns every imported pool (each Pool runs its own txg engine)
// and serves the zpool/zfs commands over a Unix socket. One daemon per run
// directory (cmd/common/rundir.h):
//   - the run directory is created mode 0700;
//   - uzfsd.pid holds the daemon's pid and stays flock()ed while it runs:
//     a second daemon finds it locked and refuses to start ("already
//     running"); an unlocked pid file is stale (a crashed daemon) and is
//     taken over;
//   - uzfsd.sock (mode 0600) is the socket; peers are checked with
//     SO_PEERCRED (server.h);
//   - uzfsd.log gets one line per request and event (and stderr too with
//     -f, foreground);
//   - zpool.cache lists the imported pools; at start they are imported
//     again (ZFS's cachefile import at boot), see registry.h.
// SIGTERM/SIGINT: stop accepting, let running requests end, export every
// pool (they stay in the cache file), remove the socket and the pid file.
// Without -f the daemon detaches (fork, setsid, stdio to /dev/null) and its
// parent exits 0 once the socket is ready, or 1 with the reason on stderr.
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cmd/common/rundir.h"
#include "cmd/uzfsd/cache_cmd.h"
#include "cmd/uzfsd/commands.h"
#include "cmd/uzfsd/registry.h"
#include "cmd/uzfsd/server.h"
#include "zfs/util/block_buffer_pool.h"

namespace {

using uzfs::cmd::Logger;

void Usage(FILE* f) {
  std::fprintf(f,
               "usage: uzfsd [-f] [-o tunable=value] ...\n"
               "\t-f  stay in the foreground and log to stderr as well\n"
               "\t-o  set a tunable (arc_max=4G, ...); -o help lists them\n"
               "The run directory is $UZFS_RUNDIR, or /run/uzfs.\n");
}

// Creates dir (and its parents) and makes it 0700; error text on failure.
std::string MakeRunDir(const std::string& dir) {
  std::string cur;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    cur = dir.substr(0, pos);
    if (cur.empty()) continue;
    if (::mkdir(cur.c_str(), 0700) != 0 && errno != EEXIST) {
      return "cannot create run directory '" + cur + "': " + std::strerror(errno);
    }
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return "run directory '" + dir + "' is not a directory";
  }
  if (st.st_uid != ::geteuid()) {
    return "run directory '" + dir + "' belongs to uid " + std::to_string(st.st_uid) + ", not to us";
  }
  if ((st.st_mode & 07777) != 0700 && ::chmod(dir.c_str(), 0700) != 0) {
    return "cannot make run directory '" + dir + "' mode 0700: " + std::strerror(errno);
  }
  return "";
}

// Locks and fills the pid file; error text on failure. The fd stays open
// (and locked) for the daemon's life.
std::string TakePidFile(const std::string& path, Logger& log, int* fd_out) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot open '" + path + "': " + std::strerror(errno);
  char old[32] = {0};
  const ssize_t n = ::pread(fd, old, sizeof old - 1, 0);
  const long old_pid = n > 0 ? std::strtol(old, nullptr, 10) : 0;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return "already running (pid " + std::to_string(old_pid) + ", " + path + ")";
  }
  if (old_pid > 0) log.Log("taking over stale pid file (pid " + std::to_string(old_pid) + " is gone)");
  const std::string text = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    ::close(fd);
    return "cannot write '" + path + "': " + std::strerror(errno);
  }
  *fd_out = fd;
  return "";
}

// The listening socket, mode 0600; error text on failure.
std::string Listen(const std::string& path, int* fd_out) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path) return "socket path '" + path + "' is too long";
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::string("cannot create socket: ") + std::strerror(errno);
  ::unlink(path.c_str());  // a stale socket (we hold the pid lock)
  const mode_t old = ::umask(0177);
  const int b = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  ::umask(old);
  if (b != 0 || ::chmod(path.c_str(), 0600) != 0 || ::listen(fd, 64) != 0) {
    const std::string e = std::strerror(errno);
    ::close(fd);
    return "cannot listen on '" + path + "': " + e;
  }
  *fd_out = fd;
  return "";
}

// Reports readiness (empty) or the failure to a waiting parent.
void Notify(int fd, const std::string& error) {
  if (fd < 0) {
    if (!error.empty()) std::fprintf(stderr, "uzfsd: %s\n", error.c_str());
    return;
  }
  const std::string msg = error.empty() ? std::string("OK") : error;
  (void)!::write(fd, msg.data(), msg.size());
  ::close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  bool foreground = false;
  std::vector<std::string> tunable_opts;  // -o name=value
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "-f") {
      foreground = true;
    } else if (a == "-o" || (a.size() > 2 && a.starts_with("-o"))) {
      std::string v = a.size() > 2 ? a.substr(2) : (i + 1 < argc ? argv[++i] : "");
      if (v == "help") {
        std::fputs(uzfs::cmd::TunablesHelp().c_str(), stdout);
        return 0;
      }
      if (v.find('=') == std::string::npos) {
        std::fprintf(stderr, "uzfsd: -o needs name=value\n");
        Usage(stderr);
        return 2;
      }
      tunable_opts.push_back(v);
    } else if (a == "-h" || a == "--help") {
      Usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "uzfsd: invalid option '%s'\n", a.c_str());
      Usage(stderr);
      return 2;
    }
  }
  const std::string rundir = uzfs::cmd::RunDir();

  int ready_fd = -1;
  if (!foreground) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) {
      std::perror("uzfsd: pipe");
      return 1;
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("uzfsd: fork");
      return 1;
    }
    if (pid > 0) {
      ::close(p[1]);
      std::string msg;
      char b[512];
      ssize_t n;
      while ((n = ::read(p[0], b, sizeof b)) > 0) msg.append(b, static_cast<size_t>(n));
      if (msg == "OK") return 0;
      std::fprintf(stderr, "uzfsd: %s\n", msg.empty() ? "exited during start-up" : msg.c_str());
      return 1;
    }
    ::close(p[0]);
    ready_fd = p[1];
    ::setsid();
    const int devnull = ::open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      ::dup2(devnull, 0);
      ::dup2(devnull, 1);
      ::dup2(devnull, 2);
      if (devnull > 2) ::close(devnull);
    }
    if (::chdir("/") != 0) {
      // Not fatal: nothing uses the working directory.
    }
  }

  if (std::string e = MakeRunDir(rundir); !e.empty()) {
    Notify(ready_fd, e);
    return 1;
  }
  Logger log;
  if (!log.Open(uzfs::cmd::LogPath(rundir), foreground)) {
    Notify(ready_fd, "cannot open log '" + uzfs::cmd::LogPath(rundir) + "': " + std::strerror(errno));
    return 1;
  }
  int pid_fd = -1;
  if (std::string e = TakePidFile(uzfs::cmd::PidPath(rundir), log, &pid_fd); !e.empty()) {
    Notify(ready_fd, e);
    return 1;
  }

  // Signals: SIGPIPE ignored (clients may go away), SIGTERM/SIGINT/SIGHUP
  // taken by a dedicated thread (blocked here, so every thread inherits it).
  ::signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  int listen_fd = -1;
  const std::string sock = uzfs::cmd::SocketPath(rundir);
  if (std::string e = Listen(sock, &listen_fd); !e.empty()) {
    log.Log(e);
    ::unlink(uzfs::cmd::PidPath(rundir).c_str());
    Notify(ready_fd, e);
    return 1;
  }
  // The ARC every pool shares, sized by the tunables (environment, -o).
  auto cache = uzfs::cmd::DaemonCache::Create(tunable_opts);
  if (!cache.ok()) {
    const std::string e = "bad tunable: " + std::string(cache.status().message());
    log.Log(e);
    ::close(listen_fd);
    ::unlink(sock.c_str());
    ::unlink(uzfs::cmd::PidPath(rundir).c_str());
    Notify(ready_fd, e);
    return 1;
  }
  uzfs::cmd::SetDaemonCache(cache->get());
  // Freed block buffers stay resident up to dirty_data_max (at least the
  // pool's own default), so the records a txg dirties reuse the last txg's
  // buffers without a page fault per 4 KiB (block_buffer_pool.h); an idle
  // daemon still gives them back (the housekeeping below).
  {
    auto follow = [](uint64_t dirty_max) {
      uzfs::BlockBufferPool::Global().SetMaxWarm(std::max(dirty_max, uzfs::BlockBufferPool::kDefaultMaxWarm));
    };
    uzfs::Tunables& t = (*cache)->tunables();
    if (auto v = t.Get("dirty_data_max"); v.ok()) follow(*v);
    t.Watch([follow](std::string_view name, uint64_t v) {
      if (name == "dirty_data_max") follow(v);
    });
  }
  log.Log("started in " + rundir + (foreground ? " (foreground)" : "") + ", arc_max " +
          uzfs::FormatTunableValue(uzfs::TunableKind::kSize, (*cache)->arc().MaxSize()));
  uzfs::cmd::Registry reg(rundir, &log);
  uzfs::cmd::ImportCachedPools(reg);

  int stop[2];
  if (::pipe2(stop, O_CLOEXEC) != 0) {
    Notify(ready_fd, std::string("pipe: ") + std::strerror(errno));
    return 1;
  }
  std::thread sig_thread([&set, &stop, &log] {
    int sig = 0;
    while (sigwait(&set, &sig) != 0 || sig == SIGHUP) {
      // SIGHUP: nothing to reload yet.
    }
    log.Log(std::string("received ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") + ", shutting down");
    (void)!::write(stop[1], "x", 1);
  });
  Notify(ready_fd, "");

  uzfs::cmd::Server server(reg, listen_fd);
  // Housekeeping: memory a burst of I/O left behind goes back to the system
  // once the daemon is idle (block buffers no one took since the last look,
  // then malloc's free pages), so an idle daemon stays small.
  server.Run(stop[0], [] {
    if (uzfs::BlockBufferPool::Global().ReleaseIfIdle() > 0) ::malloc_trim(0);
  });
  ::close(listen_fd);
  ::unlink(sock.c_str());
  server.Drain();
  uzfs::cmd::ExportAllForShutdown(reg);
  uzfs::cmd::SetDaemonCache(nullptr);
  cache->reset();  // after every pool is gone
  sig_thread.join();
  ::unlink(uzfs::cmd::PidPath(rundir).c_str());
  ::close(pid_fd);
  log.Log("exited");
  return 0;
}
