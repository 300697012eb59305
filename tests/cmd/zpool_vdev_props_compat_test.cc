// Vdev properties as OpenZFS 2.1's zdb reads them: the config names each
// leaf's and top-level vdev's ZAP as OpenZFS does, the object directory
// names the AVZ, the comment is a string in the vdev's ZAP, and after
// vdevs joined and left the tree no MOS object is leaked (zdb -d's leak
// check) and every block is accounted for (zdb -bcc).
#include <string>

#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using clitest::CliEnv;
using clitest::Contains;

TEST(ZpoolVdevPropsCompat, OpenZfsZdbFindsTheZapsAndNoLeak) {
  CliEnv env;
  const std::string d0 = env.Dev("d0"), d1 = env.Dev("d1"), d2 = env.Dev("d2"), d3 = env.Dev("d3");
  const std::string l0 = env.Dev("l0"), l1 = env.Dev("l1");
  ASSERT_EQ(env.Zpool("create -f -m none tank " + d0 + " mirror " + d1 + " " + d2 + " log " + l0).rc, 0);
  ASSERT_EQ(env.Zpool("set comment=uzfs-leaf tank " + d1).rc, 0);
  ASSERT_EQ(env.Zpool("set org.example:rack=r7 tank mirror-1").rc, 0);
  // Vdevs join and leave: an attached leaf, a top-level leaf turned into a
  // mirror and back, a log device added and removed.
  ASSERT_EQ(env.Zpool("attach -w tank " + d0 + " " + d3).rc, 0);
  ASSERT_EQ(env.Zpool("detach tank " + d3).rc, 0);
  ASSERT_EQ(env.Zpool("add tank log " + l1).rc, 0);
  ASSERT_EQ(env.Zpool("remove tank " + l0).rc, 0);
  ASSERT_EQ(env.Zpool("export tank").rc, 0);

  std::string out;
  ASSERT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + env.devdir() + " -C tank", &out), 0) << out;
  // Every leaf a leaf ZAP, every top-level vdev a top ZAP: d0 is both, the
  // mirror's two leaves and the log leaf add theirs.
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t p = out.find(what); p != std::string::npos; p = out.find(what, p + 1)) n++;
    return n;
  };
  EXPECT_EQ(count("com.delphix:vdev_zap_leaf:"), 4u) << out;
  EXPECT_EQ(count("com.delphix:vdev_zap_top:"), 3u) << out;

  ASSERT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + env.devdir() + " -d tank", &out), 0) << out;
  EXPECT_FALSE(Contains(out, "leaked")) << out;
  EXPECT_FALSE(Contains(out, "referenced but not allocated")) << out;
  ASSERT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + env.devdir() + " -bcc tank", &out), 0) << out;
  EXPECT_TRUE(Contains(out, "No leaks (block sum matches space maps exactly)")) << out;
  // The object directory names the AVZ; the MOS dump shows the comment.
  ASSERT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + env.devdir() + " -dddd tank 1", &out), 0) << out;
  EXPECT_TRUE(Contains(out, "com.delphix:vdev_zap_map = ")) << out;
  ASSERT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + env.devdir() + " -dddd tank", &out), 0) << out;
  EXPECT_TRUE(Contains(out, "comment = uzfs-leaf")) << out;
  EXPECT_TRUE(Contains(out, "org.example:rack = r7")) << out;

  // uzfs reads them back after the round trip.
  ASSERT_EQ(env.Zpool("import -d " + env.devdir() + " tank").rc, 0);
  EXPECT_EQ(env.Zpool("get -H -o value comment tank " + d1).out, "uzfs-leaf\n");
  EXPECT_EQ(env.Zpool("get -H -o value org.example:rack tank mirror-1").out, "r7\n");
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
}

}  // namespace
}  // namespace uzfs
