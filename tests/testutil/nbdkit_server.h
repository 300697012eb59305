// An nbdkit server for tests: started in the foreground on a Unix socket
// in the caller's temporary directory, stopped by its PID (SIGKILL, as a
// server that crashed or lost power: a SIGTERM'd nbdkit waits for its
// clients to leave; then waited for) when the object goes. Restart() brings it back on the same
// socket, as a server that was rebooted. Header-only, in uzfs::test.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

extern char** environ;

namespace uzfs::test {

class NbdkitServer {
 public:
  // `args`: nbdkit's plugin and filter arguments, e.g. {"file", "/tmp/x/d0"}
  // or {"--filter=delay", "memory", "128M", "rdelay=2"}.
  NbdkitServer(std::string socket, std::vector<std::string> args)
      : socket_(std::move(socket)), args_(std::move(args)) {
    Start();
  }
  ~NbdkitServer() { Stop(); }
  NbdkitServer(const NbdkitServer&) = delete;
  NbdkitServer& operator=(const NbdkitServer&) = delete;

  // nbd+unix:///?socket=PATH: the server's one export.
  std::string uri() const { return "nbd+unix:///?socket=" + socket_; }
  pid_t pid() const { return pid_; }

  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int st = 0;
    ::waitpid(pid_, &st, 0);
    pid_ = -1;
    ::unlink(socket_.c_str());
  }
  void Restart() {
    Stop();
    Start();
  }

 private:
  void Start() {
    std::vector<std::string> argv = {"nbdkit", "--foreground", "--exit-with-parent", "-U", socket_};
    argv.insert(argv.end(), args_.begin(), args_.end());
    std::vector<char*> cargv;
    for (std::string& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    ::unlink(socket_.c_str());
    if (::posix_spawnp(&pid_, "nbdkit", nullptr, nullptr, cargv.data(), environ) != 0) {
      pid_ = -1;
      ADD_FAILURE() << "cannot start nbdkit (install it: make deps)";
      return;
    }
    // Ready once its socket exists.
    struct stat st;
    for (int i = 0; i < 500 && ::stat(socket_.c_str(), &st) != 0; i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(::stat(socket_.c_str(), &st), 0) << "nbdkit did not create " << socket_;
  }

  std::string socket_;
  std::vector<std::string> args_;
  pid_t pid_ = -1;
};

}  // namespace uzfs::test
