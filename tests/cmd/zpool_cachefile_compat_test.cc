// Cache files moving between uzfs and its peers:
//   - one zfs-fuse writes (`zpool create -o cachefile=`) lists its pool for
//     uzfs's `zpool import -c`, which imports it;
//   - one uzfs writes for a version-23 pool is read by zfs-fuse's `zpool
//     import -c`, which imports the pool ONLINE;
//   - one uzfs writes for a version-5000 pool is what OpenZFS 2.1's `zdb -U
//     FILE -C` prints: the pool, its guid and its devices.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using clitest::CliEnv;
using clitest::Contains;
using clitest::Ran;

TEST(ZpoolCacheFileCompat, ZfsFusesFileImportsHere) {
  CliEnv env;
  const std::string d = env.devdir(), z0 = env.Dev("z0"), z1 = env.Dev("z1");
  std::string out;
  const int rc = test::RunInZfsFuseSandbox("set -e\nzpool create -o cachefile=" + d + "/zc zp mirror " + z0 + " " +
                                               z1 + "\ncp " + d + "/zc " + env.tmp().string() +
                                               "/theirs.cache\nzpool export zp\n",
                                           &out);
  ASSERT_EQ(rc, 0) << out;
  const std::string theirs = (env.tmp() / "theirs.cache").string();
  Ran r = env.Zpool("import -c " + theirs);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "   pool: zp\n")) << r.out;
  r = env.Zpool("import -c " + theirs + " zp");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.Zpool("list -H -o name,health zp").out, "zp\tONLINE\n");
  ASSERT_EQ(env.Zpool("export zp").rc, 0);
}

TEST(ZpoolCacheFileCompat, OursImportsInZfsFuse) {
  CliEnv env;
  const std::string c = (env.tmp() / "c").string(), saved = (env.tmp() / "saved").string();
  const std::string d0 = env.Dev("d0"), d1 = env.Dev("d1");
  Ran r = env.Zpool("create -m none -o version=23 -o cachefile=" + c + " tank mirror " + d0 + " " + d1);
  ASSERT_EQ(r.rc, 0) << r.err;
  std::filesystem::copy_file(c, saved);
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  ASSERT_TRUE(env.StopDaemon());
  std::string out;
  const int rc = test::RunInZfsFuseSandbox(
      "set -e\nzpool import -c " + saved + "\nzpool import -c " + saved + " tank\nzpool status tank\nzpool export tank\n",
      &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_TRUE(Contains(out, "  pool: tank\n")) << out;
  EXPECT_TRUE(Contains(out, " state: ONLINE\n")) << out;
  EXPECT_TRUE(Contains(out, d1 + "  ONLINE       0     0     0")) << out;
}

TEST(ZpoolCacheFileCompat, OpenZfsZdbReadsOurs) {
  CliEnv env;
  const std::string c = (env.tmp() / "c").string();
  const std::string d0 = env.Dev("d0"), d1 = env.Dev("d1");
  Ran r = env.Zpool("create -m none -o cachefile=" + c + " tank mirror " + d0 + " " + d1);
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string guid = clitest::Lines(env.Zpool("get -H -o value guid tank").out).at(0);
  std::string out;
  const int rc = test::RunOpenZfsZdb("-U " + c + " -C", &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_TRUE(Contains(out, "tank:\n    version: 5000\n    name: 'tank'\n    state: 0\n")) << out;
  EXPECT_TRUE(Contains(out, "    pool_guid: " + guid + "\n")) << out;
  EXPECT_TRUE(Contains(out, "path: '" + d0 + "'")) << out;
  EXPECT_TRUE(Contains(out, "path: '" + d1 + "'")) << out;
  ASSERT_EQ(env.Zpool("destroy tank").rc, 0);
}

}  // namespace
}  // namespace uzfs
