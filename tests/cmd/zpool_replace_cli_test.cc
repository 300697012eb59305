// zpool offline / online / replace / resilver through the real binaries,
// without FUSE: status says DEGRADED with OpenZFS's paragraph for an
// offline device, online brings it back with a resilver, a replace of a
// raidz disk runs to the end with -w and the new disk is in the config
// where the old one was; bad requests get one line and exit 1 (usage:
// exit 2) with nothing changed.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <filesystem>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using namespace clitest;

TEST(ZpoolReplaceCli, OfflineOnlineAndReplace) {
  CliEnv env;
  const std::string a = env.Dev("a"), b = env.Dev("b"), c = env.Dev("c"), n = env.Dev("n");
  Ran r = env.Zpool("create -m none tank raidz1 " + a + " " + b + " " + c);
  ASSERT_EQ(r.rc, 0) << r.err;

  r = env.Zpool("offline tank " + b);
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("status tank");
  EXPECT_TRUE(Contains(r.out, " state: DEGRADED\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "status: One or more devices has been taken offline by the administrator.")) << r.out;
  EXPECT_TRUE(Contains(r.out, "action: Online the device using 'zpool online'")) << r.out;
  EXPECT_TRUE(Contains(r.out, "OFFLINE")) << r.out;
  // Beyond the parity: refused, nothing changed.
  r = env.Zpool("offline tank " + c);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot offline " + c + ": no valid replicas\n");
  r = env.Zpool("online tank " + b);
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("wait -t resilver tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("status -x tank");
  EXPECT_TRUE(Contains(r.out, "pool 'tank' is healthy")) << r.out;

  r = env.Zpool("replace -w tank " + c + " " + n);
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("status tank");
  EXPECT_TRUE(Contains(r.out, "  scan: resilvered ")) << r.out;
  EXPECT_TRUE(Contains(r.out, n)) << r.out;
  EXPECT_FALSE(Contains(r.out, c + " ")) << r.out;
  EXPECT_FALSE(Contains(r.out, "replacing")) << r.out;
  r = env.Zpool("history tank");
  EXPECT_TRUE(Contains(r.out, "zpool replace -w tank")) << r.out;
  r = env.Zpool("events tank");
  EXPECT_TRUE(Contains(r.out, "sysevent.fs.zfs.resilver_finish")) << r.out;

  // Bad requests.
  r = env.Zpool("replace tank /no/such " + env.Dev("x"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot replace /no/such with " + env.Dev("x") + ": no such device in pool\n");
  r = env.Zpool("replace tank " + a + " " + b);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "is part of active pool 'tank'")) << r.err;
  r = env.Zpool("replace tank");
  EXPECT_EQ(r.rc, 2);
  r = env.Zpool("offline -z tank " + a);
  EXPECT_EQ(r.rc, 2);
  r = env.Zpool("online nopool " + a);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'nopool': no such pool\n");
  // A disk gone while exported: imported DEGRADED, said so, replaced.
  r = env.Zpool("export tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::filesystem::remove(a);
  r = env.Zpool("import -d " + env.devdir());
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "  state: DEGRADED\n status: One or more devices are missing from the system.\n"
                              " action: The pool can be imported despite missing or damaged devices.  The\n"
                              "\tfault tolerance of the pool may be compromised if imported.\n"
                              "   see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-2Q\n"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "UNAVAIL  cannot open\n")) << r.out;
  r = env.Zpool("import -d " + env.devdir() + " tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("status tank");
  EXPECT_TRUE(Contains(r.out, " state: DEGRADED\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "status: One or more devices could not be opened.")) << r.out;
  EXPECT_TRUE(Contains(r.out, "ZFS-8000-2Q")) << r.out;
  EXPECT_TRUE(Contains(r.out, "UNAVAIL")) << r.out;
  const std::string m = env.Dev("m");
  r = env.Zpool("replace -w tank " + a + " " + m);
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("status -x tank");
  EXPECT_TRUE(Contains(r.out, "pool 'tank' is healthy")) << r.out;
  r = env.Zpool("resilver tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("wait tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("status tank");
  EXPECT_TRUE(Contains(r.out, " state: ONLINE\n")) << r.out;
  r = env.Zpool("export tank");
  ASSERT_EQ(r.rc, 0) << r.err;
}

// The devices a pool has follow its tree: a new disk from another
// directory is found by the daemon started after a crash (the cache file
// names it), and a detached or replaced disk is free for another pool
// (with -f: its label still names the pool, as in ZFS).
TEST(ZpoolReplaceCli, DevicesFollowReplaceAndDetach) {
  CliEnv env;
  const std::string a = env.Dev("a"), b = env.Dev("b"), c = env.Dev("c");
  const std::filesystem::path other = env.tmp() / "other";
  std::filesystem::create_directories(other);
  const std::string n = (other / "n").string();
  std::filesystem::copy_file(a, n);  // a sparse 128 MiB file, not yet labelled
  Ran r = env.Zpool("create -m none tank raidz1 " + a + " " + b + " " + c);
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("replace -w tank " + b + " " + n);
  ASSERT_EQ(r.rc, 0) << r.err;
  const pid_t pid = env.DaemonPid();
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  for (int i = 0; i < 500 && CliEnv::Alive(pid); i++) ::usleep(10000);
  r = env.Zpool("status tank");
  EXPECT_TRUE(Contains(r.out, " state: ONLINE\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, n + "  ONLINE")) << r.out;
  // The replaced disk: its label still says tank, so -f; then it is taken.
  r = env.Zpool("create -m none second " + b);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "is part of active pool 'tank'")) << r.err;
  EXPECT_TRUE(Contains(r.err, "use '-f'")) << r.err;
  r = env.Zpool("create -f -m none second " + b);
  EXPECT_EQ(r.rc, 0) << r.err;
  // A detached mirror side, the same.
  const std::string x = env.Dev("x"), y = env.Dev("y");
  r = env.Zpool("create -m none mp mirror " + x + " " + y);
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("detach mp " + y);
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("create -f -m none again " + y);
  EXPECT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("list -H -o name");
  EXPECT_EQ(r.out, "again\nmp\nsecond\ntank\n");
  // A disk still in a pool is refused even with -f.
  r = env.Zpool("create -f -m none nope " + x);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, x + " is part of active pool 'mp'")) << r.err;
}

}  // namespace
}  // namespace uzfs
