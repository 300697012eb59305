// CreateZplFilesystem judged by zfs-fuse itself, not by a stored fixture:
// zfs-fuse runs tests/fixtures/zpl/make-zpl-fixtures.sh into a scratch
// directory (a fresh version-23 pool, datasets with several ZPL property
// sets, nothing written), and the same comparison as the unit test runs
// against what it made now: zdb's text of objects 1-4 and the raw dnodes,
// znodes and ZAP blocks of the image. So the layout stays honest across
// zfs-fuse versions, and the stored fixtures can be checked for staleness.
// Also: the ZPL version `zfs get version` reports for a v23 pool is the one
// ZplVersionForPool gives.
// (uzfs cannot create pools yet, so zfs-fuse cannot mount one of our file
// systems here; when pool creation lands, this test should also let zfs-fuse
// import a pool uzfs made and mount, list and scrub its datasets.)
#define UZFS_ZPL_CREATE_HELPERS_ONLY
#include "tests/zpl/zpl_create_test.cc"

namespace uzfs {
namespace {

TEST(ZplCreateCompat, MatchesFreshZfsFuseFilesystems) {
  test::TempDir dir;
  const std::string out = dir.path().string();
  std::string log;
  const std::string script = test::FixturePath("zpl/make-zpl-fixtures.sh").string() + " " + out;
  ASSERT_EQ(test::RunInZfsFuseSandbox(script, &log), 0) << log;

  // zfs get -H -p -r -o name,property,value version,... zplpool
  const std::string props = test::ReadText(dir.path() / "zplpool.zfs-get.txt");
  auto v23 = ZplVersionForPool(23);
  ASSERT_TRUE(v23.ok());
  EXPECT_NE(props.find("zplpool/empty\tversion\t" + std::to_string(*v23) + "\n"), std::string::npos)
      << props;
  EXPECT_NE(props.find("zplpool/norm\tnormalization\tformD\n"), std::string::npos) << props;
  EXPECT_NE(props.find("zplpool/v3\tversion\t3\n"), std::string::npos) << props;

  CompareWithZfsFuse(dir.path());
}

}  // namespace
}  // namespace uzfs
