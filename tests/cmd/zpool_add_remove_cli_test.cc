// zpool add / zpool remove through the daemon: the status tree follows
// (new data vdevs, logs, cache, spares; a removed log disappears), the
// change survives export/import, -n changes nothing, and bad requests
// (unknown pool, a device in another pool, mismatched replication without
// -f, a data vdev to remove, usage errors) fail with zpool's messages.
#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using namespace clitest;

TEST(ZpoolAddRemoveCli, AddThenRemoveFollowStatusAndImport) {
  CliEnv env;
  const std::string a0 = env.Dev("a0"), a1 = env.Dev("a1"), b0 = env.Dev("b0"), b1 = env.Dev("b1");
  const std::string log0 = env.Dev("log0"), log1 = env.Dev("log1"), c0 = env.Dev("c0"), s0 = env.Dev("s0");
  Ran r = env.Zpool("create tank mirror " + a0 + " " + a1);
  ASSERT_EQ(r.rc, 0) << r.err;

  // -n prints the would-be layout and changes nothing.
  r = env.Zpool("add -n tank mirror " + b0 + " " + b1 + " log " + log0);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "would update 'tank' to the following configuration:")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\tlogs\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, b1)) << r.out;
  r = env.Zpool("status tank");
  EXPECT_FALSE(Contains(r.out, b0)) << r.out;

  r = env.Zpool("add tank mirror " + b0 + " " + b1 + " log mirror " + log0 + " " + log1 + " cache " + c0 +
                " spare " + s0);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(r.out.empty() && r.err.empty()) << r.out << r.err;
  r = env.Zpool("status tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "mirror-1")) << r.out;
  EXPECT_TRUE(Contains(r.out, "logs")) << r.out;
  EXPECT_TRUE(Contains(r.out, "mirror-2")) << r.out;
  EXPECT_TRUE(Contains(r.out, "cache")) << r.out;
  EXPECT_TRUE(Contains(r.out, "spares")) << r.out;
  for (const std::string& p : {b0, b1, log0, log1, c0, s0}) EXPECT_TRUE(Contains(r.out, p)) << p << "\n" << r.out;

  r = env.Zpool("remove tank mirror-2 " + c0 + " " + s0);
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("status tank");
  EXPECT_FALSE(Contains(r.out, "logs")) << r.out;
  EXPECT_FALSE(Contains(r.out, log0)) << r.out;
  EXPECT_FALSE(Contains(r.out, c0)) << r.out;
  EXPECT_FALSE(Contains(r.out, s0)) << r.out;
  EXPECT_FALSE(Contains(r.out, "hole")) << r.out;
  r = env.Zpool("history tank");
  EXPECT_TRUE(Contains(r.out, "zpool add tank mirror")) << r.out;
  EXPECT_TRUE(Contains(r.out, "zpool remove tank mirror-2")) << r.out;

  // Survives export/import; the removed log can be added back.
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  r = env.Zpool("import -d " + env.devdir() + " tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("status tank");
  EXPECT_TRUE(Contains(r.out, "mirror-1")) << r.out;
  EXPECT_FALSE(Contains(r.out, log0)) << r.out;
  r = env.Zpool("add tank log " + log0);
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("status tank");
  EXPECT_TRUE(Contains(r.out, "logs")) << r.out;
  EXPECT_TRUE(Contains(r.out, log0)) << r.out;
  r = env.Zpool("list -H -o name,health tank");
  EXPECT_EQ(r.out, "tank\tONLINE\n");
}

TEST(ZpoolAddRemoveCli, BadRequests) {
  CliEnv env;
  const std::string a0 = env.Dev("a0"), a1 = env.Dev("a1"), x = env.Dev("x"), y = env.Dev("y");
  ASSERT_EQ(env.Zpool("create tank mirror " + a0 + " " + a1).rc, 0);
  ASSERT_EQ(env.Zpool("create other " + y).rc, 0);

  Ran r = env.Zpool("add");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "missing pool name argument")) << r.err;
  EXPECT_TRUE(Contains(r.err, "add [-fn] <pool> <vdev> ...")) << r.err;
  r = env.Zpool("add tank");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "missing vdev specification")) << r.err;
  r = env.Zpool("add nosuch " + x);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'nosuch': no such pool\n");
  r = env.Zpool("add tank " + y);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, y + " is part of active pool 'other'")) << r.err;
  r = env.Zpool("add tank " + a0);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, a0 + " is part of active pool 'tank'")) << r.err;
  r = env.Zpool("add tank " + x);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "use '-f' to override the following errors:")) << r.err;
  EXPECT_TRUE(Contains(r.err, "mismatched replication level: pool uses 2-way mirror and new vdev is file")) << r.err;
  r = env.Zpool("add tank raidz2 " + x);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "raidz2 requires at least 3 devices")) << r.err;
  r = env.Zpool("status tank");
  EXPECT_FALSE(Contains(r.out, x)) << r.out;

  r = env.Zpool("remove tank");
  EXPECT_EQ(r.rc, 2);
  r = env.Zpool("remove tank mirror-0");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "only inactive hot spares, cache, top-level, or log devices can be removed")) << r.err;
  r = env.Zpool("remove tank " + x);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "no such device in pool")) << r.err;
  r = env.Zpool("history tank");
  EXPECT_FALSE(Contains(r.out, "zpool remove")) << r.out;  // refused removals change nothing

  // -f takes the mismatched vdev.
  r = env.Zpool("add -f tank " + x);
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("status tank");
  EXPECT_TRUE(Contains(r.out, x)) << r.out;
}

}  // namespace
}  // namespace uzfs
