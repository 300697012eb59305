// `zfs destroy` of a file system whose snapshots zfs-fuse took: without -r
// its snapshots keep it (named); with -r, a snapshot with a clone stops the
// whole command before anything is destroyed (the clone named, -R
// suggested); once the clone is gone, -r takes the snapshots, the child
// and the file system, and zfs-fuse's zdb finds no leak.
#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using namespace clitest;

TEST(ZfsDestroyCompat, RecursiveDestroyTakesSnapshotsUnlessOneHasAClone) {
  CliEnv env;
  env.Dev("z0");
  const std::string d = env.devdir();
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox("set -e\nd=" + d + "\n"
                                      "zpool create -o version=23 -m $d/mnt zs $d/z0\n"
                                      "zfs create zs/fs; zfs create zs/fs/child\n"
                                      "for i in $(seq 1 100); do mountpoint -q $d/mnt/fs && break; sleep 0.1; done\n"
                                      "head -c 1M /dev/urandom > $d/mnt/fs/f\n"
                                      "zfs snapshot zs/fs@s1\n"
                                      "rm $d/mnt/fs/f\n"
                                      "zfs snapshot zs/fs/child@c1\n"
                                      "zfs clone zs/fs@s1 zs/cl\n"
                                      "zpool export zs\n",
                                      &out),
            0)
      << out;
  Ran r = env.Zpool("import -d " + d + " -R " + (env.tmp() / "alt").string() + " zs");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zfs("destroy zs/fs/child");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot destroy 'zs/fs/child': filesystem has children\n"
                   "use '-r' to destroy the following datasets:\nzs/fs/child@c1\n");
  r = env.Zfs("destroy -r zs/fs");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot destroy 'zs/fs': filesystem has dependent clones\n"
                   "use '-R' to destroy the following datasets:\nzs/cl\n");
  r = env.Zfs("destroy -rnv zs/fs");
  EXPECT_EQ(r.rc, 1) << "a dry run says the same";
  r = env.Zfs("list -H -o name -t all -r zs");
  EXPECT_EQ(r.out, "zs\nzs/cl\nzs/fs\nzs/fs@s1\nzs/fs/child\nzs/fs/child@c1\n") << "nothing was destroyed";
  // The clone goes first (it shares its origin's blocks), then everything.
  r = env.Zfs("destroy zs/cl");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zfs("destroy -r zs/fs");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.Zfs("list -H -o name -t all -r zs").out, "zs\n");
  ASSERT_EQ(env.Zpool("export zs").rc, 0);
  ASSERT_EQ(test::RunInZfsFuseSandbox("zdb -e -p " + d + " -bcc zs > " + d + "/zdb.txt 2>&1; zpool import -d " + d +
                                          " zs && zfs list -H -o name -t all -r zs > " + d + "/list.txt; zpool export zs",
                                      &out),
            0)
      << out;
  const std::string zdb = test::ReadText(d + "/zdb.txt");
  EXPECT_NE(zdb.find("No leaks"), std::string::npos) << zdb;
  EXPECT_EQ(zdb.find("error"), std::string::npos) << zdb;
  EXPECT_EQ(test::ReadText(d + "/list.txt"), "zs\n");
}

}  // namespace
}  // namespace uzfs
