// uzfsd's life cycle and protocol (man/uzfsd.8): a command starts the
// daemon; the run directory is 0700, the socket 0600, the pid file names a
// live daemon and keeps a second one out; a stale pid file is taken over;
// SIGTERM exports every pool (labels say EXPORTED), removes socket and pid
// file, and the pools come back with the next daemon (cache file) or
// `zpool import -a`; the line-delimited JSON protocol answers a direct
// client and refuses malformed requests.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <thread>
#include <nlohmann/json.hpp>

#include "tests/cmd/cli_test_util.h"
#include "zfs/spa/vdev_config.h"

namespace uzfs {
namespace {

using namespace clitest;

mode_t ModeOf(const std::string& p) {
  struct stat st;
  if (::lstat(p.c_str(), &st) != 0) return 0;
  return st.st_mode;
}

// Sends `line` to the daemon's socket and returns every reply line.
std::vector<std::string> Talk(const std::string& sock, const std::string& line) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, sock.c_str(), sizeof sa.sun_path - 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    if (fd >= 0) ::close(fd);
    return {};
  }
  (void)!::write(fd, line.data(), line.size());
  std::string all;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) all.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return Lines(all);
}

TEST(Uzfsd, AutostartFilesAndModes) {
  CliEnv env;
  EXPECT_EQ(env.DaemonPid(), 0);
  Ran r = env.Zpool("list");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "no pools available\n");
  const pid_t pid = env.DaemonPid();
  ASSERT_GT(pid, 0);
  EXPECT_EQ(::kill(pid, 0), 0);
  EXPECT_EQ(ModeOf(env.rundir()) & 07777, 0700u);
  EXPECT_TRUE(S_ISSOCK(ModeOf(env.rundir() + "/uzfsd.sock")));
  EXPECT_EQ(ModeOf(env.rundir() + "/uzfsd.sock") & 07777, 0600u);
  EXPECT_EQ(ModeOf(env.rundir() + "/uzfsd.pid") & 07777, 0600u);
  const std::string log = test::ReadText(env.rundir() + "/uzfsd.log");
  EXPECT_TRUE(Contains(log, "started in " + env.rundir())) << log;
  EXPECT_TRUE(Contains(log, "zpool list -> exit 0")) << log;

  // The same daemon serves the next command; a second daemon is refused.
  EXPECT_EQ(env.Zfs("list").rc, 0);
  EXPECT_EQ(env.DaemonPid(), pid);
  r = env.Run("uzfsd", "-f");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "already running (pid " + std::to_string(pid))) << r.err;
  r = env.Run("uzfsd", "-x");
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(env.DaemonPid(), pid);
  EXPECT_EQ(::kill(pid, 0), 0);
}

TEST(Uzfsd, SigtermExportsAndPoolsComeBack) {
  CliEnv env;
  const std::string d0 = env.Dev("d0"), d1 = env.Dev("d1");
  ASSERT_EQ(env.Zpool("create tank mirror " + d0 + " " + d1).rc, 0);
  ASSERT_EQ(env.Zfs("create -o com.example:k=v tank/fs").rc, 0);
  const pid_t pid = env.DaemonPid();
  ASSERT_TRUE(env.StopDaemon());
  EXPECT_FALSE(std::filesystem::exists(env.rundir() + "/uzfsd.sock"));
  EXPECT_FALSE(std::filesystem::exists(env.rundir() + "/uzfsd.pid"));
  EXPECT_TRUE(Contains(test::ReadText(env.rundir() + "/uzfsd.log"), "exported pool 'tank'"));
  // The labels say exported: the pool was closed cleanly.
  auto found = ScanDeviceDir(env.devdir());
  ASSERT_TRUE(found.ok());
  ASSERT_EQ(found->size(), 2u);
  for (const FoundDevice& f : *found) EXPECT_EQ(f.state, 1u) << f.path;  // kPoolStateExported

  // zpool import -a (its daemon start imports the cache file's pools too).
  Ran r = env.Zpool("import -a");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(env.DaemonPid(), pid);
  r = env.Zfs("get -H -o value com.example:k tank/fs");
  EXPECT_EQ(r.out, "v\n");
  r = env.Zpool("list -H -o name,health");
  EXPECT_EQ(r.out, "tank\tONLINE\n");

  // An explicit export takes the pool out of the cache file: a restarted
  // daemon does not bring it back, import -a does (from the cache dirs).
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  ASSERT_TRUE(env.StopDaemon());
  r = env.Zpool("list");
  EXPECT_EQ(r.err, "no pools available\n");
  r = env.Zpool("import -a -d " + env.devdir());
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.Zpool("list -H -o name").out, "tank\n");
}

TEST(Uzfsd, StalePidFileTakenOver) {
  CliEnv env;
  std::filesystem::create_directories(env.rundir());
  // A pid that is certainly gone: a child that already exited.
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  int st;
  ::waitpid(dead, &st, 0);
  { std::ofstream(env.rundir() + "/uzfsd.pid") << dead << "\n"; }
  { std::ofstream(env.rundir() + "/uzfsd.sock") << "stale"; }
  Ran r = env.Zpool("list");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(env.DaemonPid(), dead);
  EXPECT_GT(env.DaemonPid(), 0);
  EXPECT_TRUE(Contains(test::ReadText(env.rundir() + "/uzfsd.log"), "stale pid file"));
}

TEST(Uzfsd, ForegroundLogsToStderr) {
  CliEnv env;
  // uzfsd -f in the background of a shell; SIGTERM ends it.
  const std::string errfile = (env.tmp() / "fg.err").string();
  const std::string cmd = "UZFS_RUNDIR=" + env.rundir() + " UZFS_AUTOMOUNT=0 " + clitest::Bin("uzfsd") + " -f >/dev/null 2>" + errfile +
                          " & echo $!";
  const pid_t pid = static_cast<pid_t>(std::stol(test::Capture(cmd)));
  Ran r;
  for (int i = 0; i < 200 && !std::filesystem::exists(env.rundir() + "/uzfsd.sock"); i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r = env.Zpool("list");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.DaemonPid(), pid);
  ASSERT_TRUE(env.StopDaemon());
  const std::string err = test::ReadText(errfile);
  EXPECT_TRUE(Contains(err, "started in")) << err;
  EXPECT_TRUE(Contains(err, "received SIGTERM")) << err;
}

TEST(Uzfsd, ProtocolDirect) {
  CliEnv env;
  ASSERT_EQ(env.Zpool("list").rc, 0);
  const std::string sock = env.rundir() + "/uzfsd.sock";
  std::vector<std::string> l =
      Talk(sock, R"({"uzfs":1,"command":"zpool","argv":["status","nopool"],"cwd":"/"})" "\n");
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(nlohmann::json::parse(l[0], nullptr, false)["started"], true);
  auto e = nlohmann::json::parse(l[1], nullptr, false);
  EXPECT_EQ(e["stderr"], "cannot open 'nopool': no such pool\n");
  auto x = nlohmann::json::parse(l[2], nullptr, false);
  EXPECT_EQ(x["exit"], 1);

  l = Talk(sock, "this is not json\n");
  ASSERT_FALSE(l.empty());
  EXPECT_EQ(nlohmann::json::parse(l.back(), nullptr, false)["exit"], 2);
  l = Talk(sock, R"({"uzfs":1,"command":"rm","argv":["-rf","/"]})" "\n");
  ASSERT_FALSE(l.empty());
  EXPECT_EQ(nlohmann::json::parse(l.back(), nullptr, false)["exit"], 2);
  // A request naming a descriptor it did not pass runs nothing.
  l = Talk(sock, R"({"uzfs":1,"command":"zfs","argv":["send","t@s"],"cwd":"/","fds":["stdout"]})" "\n");
  ASSERT_FALSE(l.empty());
  EXPECT_EQ(nlohmann::json::parse(l.front(), nullptr, false)["stderr"], "uzfsd: malformed request\n");
  EXPECT_EQ(nlohmann::json::parse(l.back(), nullptr, false)["exit"], 2);
  // The daemon is still there.
  EXPECT_EQ(env.Zpool("list").rc, 0);
}

TEST(Uzfsd, ConcurrentClientsAndAutostartRace) {
  CliEnv env;
  const std::string dev = env.Dev("d0");
  // Several clients find no daemon at once: one daemon wins, all are served.
  std::string script = "export UZFS_AUTOMOUNT=0 UZFS_RUNDIR=" + env.rundir() + "\n";
  for (int i = 0; i < 4; i++) script += clitest::Bin("zpool") + " list >/dev/null 2>&1 || echo FAIL &\n";
  script += "wait\n";
  EXPECT_EQ(test::Capture(script), "");
  ASSERT_EQ(env.Zpool("create tank " + dev).rc, 0);
  // Many dataset changes at once on one pool are serialized by the daemon.
  script = "export UZFS_AUTOMOUNT=0 UZFS_RUNDIR=" + env.rundir() + "\n";
  for (int i = 0; i < 12; i++) {
    script += clitest::Bin("zfs") + " create tank/c" + std::to_string(i) + " || echo FAIL &\n";
  }
  script += clitest::Bin("zpool") + " list -H >/dev/null || echo FAIL &\nwait\n";
  EXPECT_EQ(test::Capture(script), "");
  EXPECT_EQ(Lines(env.Zfs("list -H -o name").out).size(), 13u);
  EXPECT_EQ(env.Zpool("status -x").out, "all pools are healthy\n");
}

// A daemon killed at any moment: the next command is served (by a new
// daemon that imports the pool from the cache file), never answered with
// a dropped connection, even when it reached the dying daemon's socket or
// a daemon still importing. Commands running while the kill lands may fail,
// and then say that uzfsd exited while running them.
TEST(Uzfsd, CommandsAfterAKillAreServed) {
  CliEnv env;
  ASSERT_EQ(env.Zpool("create tank " + env.Dev("d0")).rc, 0);
  ASSERT_EQ(env.Zfs("create tank/a").rc, 0);
  // A background client issuing commands back to back for the whole test.
  const std::string stop = (env.tmp() / "stop").string();
  const std::string bad = (env.tmp() / "bad").string();
  { std::ofstream(bad).close(); }
  const std::string loop = "export UZFS_AUTOMOUNT=0 UZFS_RUNDIR=" + env.rundir() + "\n" +
                           "i=0; while [ ! -e " + stop + " ] && [ $i -lt 2000 ]; do i=$((i+1));\n" +
                           "  out=$(" + clitest::Bin("zfs") + " list -H -o name tank/a 2>&1) || " +
                           "case \"$out\" in *'exited while running'*) ;; *) echo \"$out\" >>" + bad + ";; esac\n" +
                           "done\n";
  const std::string loop_file = (env.tmp() / "loop.sh").string();
  { std::ofstream(loop_file) << loop; }
  std::thread bg([&] { (void)test::Capture("bash " + loop_file); });
  for (int i = 0; i < 12; i++) {
    const pid_t pid = env.DaemonPid();
    if (!CliEnv::Alive(pid) || ::kill(pid, SIGKILL) != 0) {
      ADD_FAILURE() << "no daemon to kill before kill " << i;
      break;
    }
    // At once: the socket may still be the dying daemon's.
    Ran r = env.Zfs("list -H -o name tank/a");
    EXPECT_EQ(r.rc, 0) << "after kill " << i << ": " << r.err;
    EXPECT_EQ(r.out, "tank/a\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(50 * (i % 4)));
  }
  { std::ofstream(stop) << "x"; }
  bg.join();
  EXPECT_EQ(test::ReadText(bad), "") << "background commands failed";
  EXPECT_EQ(env.Zpool("status -x").out, "all pools are healthy\n");
}

// A daemon started while its killed predecessor still holds the devices
// (the kernel tears a killed process down after its pid file is free)
// waits for them: its first command finds the pool imported, not missing.
// The test holds the device's lock for the dying daemon.
TEST(Uzfsd, ANewDaemonWaitsForDevicesItsPredecessorStillHolds) {
  CliEnv env;
  const std::string dev = env.Dev("d0");
  ASSERT_EQ(env.Zpool("create tank " + dev).rc, 0);
  const pid_t pid = env.DaemonPid();
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  const int fd = ::open(dev.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  // Taken as soon as the killed daemon has let go of it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::thread release([fd] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    ::close(fd);
  });
  Ran r = env.Zfs("list -H -o name tank");
  release.join();
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "tank\n");
  EXPECT_EQ(env.Zpool("status -x").out, "all pools are healthy\n");
}

TEST(Uzfsd, TwoDaemonsNeverShareAWritablePool) {
  CliEnv a, b;  // two run directories: two daemons
  const std::string dev = a.Dev("d0");
  ASSERT_EQ(a.Zpool("create rp " + dev).rc, 0);
  // Read-write in one daemon: the other lists it as in use, not as
  // importable, and cannot import it at all.
  Ran r = b.Zpool("import -d " + a.devdir());
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "   pool: rp\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "imported by another process")) << r.out;
  EXPECT_FALSE(Contains(r.out, "can be imported")) << r.out;
  r = b.Zpool("import -a -d " + a.devdir());
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "cannot import 'rp': pool is imported by another process")) << r.err;
  r = b.Zpool("import -d " + a.devdir() + " rp");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "cannot import 'rp': ")) << r.err;
  r = b.Zpool("import -o readonly=on -d " + a.devdir() + " rp");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "pool is in use")) << r.err;
  // Read-only in one daemon: another may read it too, never write it.
  ASSERT_EQ(a.Zpool("export rp").rc, 0);
  ASSERT_EQ(a.Zpool("import -o readonly=on -d " + a.devdir() + " rp").rc, 0);
  r = b.Zpool("import -d " + a.devdir() + " rp");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "in use")) << r.err;
  r = b.Zpool("import -o readonly=on -d " + a.devdir() + " rp");
  EXPECT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(b.Zpool("export rp").rc, 0);
  ASSERT_EQ(a.Zpool("export rp").rc, 0);
  r = b.Zpool("import -d " + a.devdir() + " rp");
  EXPECT_EQ(r.rc, 0) << r.err;
}

TEST(Uzfsd, OtherUsersCannotConnect) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch to another uid";
  CliEnv env;
  ASSERT_EQ(env.Zpool("list").rc, 0);
  const std::string sock = env.rundir() + "/uzfsd.sock";
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, sock.c_str(), sizeof sa.sun_path - 1);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    const bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
    ::_exit(connected ? 1 : 0);
  }
  int st = 0;
  ::waitpid(child, &st, 0);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0) << "uid 65534 could connect to the 0600 socket in a 0700 directory";
}

}  // namespace
}  // namespace uzfs
