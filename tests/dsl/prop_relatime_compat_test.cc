// A relatime set by uzfs on a version 23 pool, judged by zfs-fuse (which
// has no relatime property): the pool imports, `zfs get all` works and
// lists no relatime (the ZAP entry is neither a known nor a user
// property), `zfs get relatime` is an invalid property there, and the
// entry survives zfs-fuse's import and export for uzfs to read back.
// Runs zfs-fuse: needs root.
#include <gtest/gtest.h>

#include <string>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"

namespace uzfs {
namespace {

TEST(PropRelatimeCompat, ZfsFuseIgnoresASetRelatime) {
  test::TempDir tmp;
  const std::string d = tmp.path().string();
  pooltest::MakeFile(tmp.path(), "r0");
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox("d=" + d + "\n"
                                      "zpool create -o version=23 -m $d/mnt rp $d/r0\n"
                                      "zfs create rp/a\n"
                                      "zpool export rp\n",
                                      &out),
            0)
      << out;
  {
    auto pool = pooltest::ImportFrom(tmp.path(), "rp");
    ASSERT_UZFS_OK(pool.status());
    ASSERT_UZFS_OK((*pool)->SetProp("rp", "relatime", "on"));
    ASSERT_UZFS_OK((*pool)->SetProp("rp/a", "relatime", "off"));
    ASSERT_UZFS_OK((*pool)->Export());
  }
  ASSERT_EQ(test::RunInZfsFuseSandbox(
                "d=" + d + "\n"
                "zpool import -d $d -R $d/alt rp\n"
                "zfs get -H -o name,property,value all rp rp/a > $d/getall.txt\n"
                "rc=0; zfs get relatime rp > $d/rel.out 2> $d/rel.err || rc=$?; echo $rc > $d/rel.rc\n"
                "zpool export rp\n",
                &out),
            0)
      << out;
  const std::string all = test::ReadText(d + "/getall.txt");
  EXPECT_NE(all.find("rp/a\tatime\ton\n"), std::string::npos) << all;
  EXPECT_NE(all.find("rp\tcompression\toff\n"), std::string::npos) << all;
  EXPECT_EQ(all.find("relatime"), std::string::npos) << all;
  EXPECT_NE(test::ReadText(d + "/rel.rc"), "0\n");
  EXPECT_NE(test::ReadText(d + "/rel.err").find("invalid property 'relatime'"), std::string::npos)
      << test::ReadText(d + "/rel.err");

  auto pool = pooltest::ImportFrom(tmp.path(), "rp");
  ASSERT_UZFS_OK(pool.status());
  auto root = (*pool)->LocalProps("rp");
  ASSERT_UZFS_OK(root.status());
  EXPECT_EQ(root->count("relatime"), 1u);
  auto a = (*pool)->LocalProps("rp/a");
  ASSERT_UZFS_OK(a.status());
  EXPECT_EQ(a->count("relatime"), 1u);
  ASSERT_UZFS_OK((*pool)->Export());
}

}  // namespace
}  // namespace uzfs
