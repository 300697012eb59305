// large_blocks judged by OpenZFS 2.1's zdb: a pool with 1 MiB records in one
// dataset (and another such dataset created, filled and destroyed) checks
// clean (-bcc: every block's checksum, no leaks), and -d verifies the
// large_blocks refcount against the datasets that record it (1). zl/big
// also has org.openzfs:zilsaxattr active (its log was started by an
// fsync; a feature this zdb does not know, read-only compatible) with an
// SA xattr logged.
#include <fcntl.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "tests/zpl/zpl_pool_util.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs {
namespace {

void Fill(Pool& p, const std::string& ds, int files, bool fsync = false) {
  auto fs = ZplFs::Mount(p, ds);
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  ZplCred root;
  for (int i = 0; i < files; i++) {
    auto c = (*fs)->Create(root, (*fs)->root_ino(), "f" + std::to_string(i), S_IFREG | 0644, O_CREAT | O_RDWR);
    ASSERT_TRUE(c.ok());
    if (fsync && i == 0) {
      ASSERT_TRUE((*fs)->Fsync(c->second, false).ok());  // starts the log: zilsaxattr active
      const std::vector<uint8_t> v = {'v'};
      ASSERT_TRUE((*fs)->SetXattr(root, c->first.ino, "user.k", v, 0).ok());
      ASSERT_TRUE((*fs)->Fsync(c->second, false).ok());
    }
    ASSERT_TRUE((*fs)->Write(c->second, 0, test::RandomBytes(2500000 + 100000 * i, 7 + i)).ok());
    ASSERT_TRUE((*fs)->Release(c->second).ok());
  }
  ASSERT_TRUE((*fs)->Unmount().ok());
}

TEST(ZplLargeBlocksCompat, JudgedByOpenZfsZdb) {
  test::TempDir d;
  {
    auto p = zpltest::CreateFeaturePool(d.path(), "zl");
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->CreateDataset("zl/big", {{"recordsize", "1M"}, {"compression", "lz4"}}));
    ASSERT_UZFS_OK((*p)->CreateDataset("zl/gone", {{"recordsize", "512K"}}));
    Fill(**p, "zl/big", 3, /*fsync=*/true);
    Fill(**p, "zl/gone", 1);
    ASSERT_UZFS_OK((*p)->Sync());
    ASSERT_UZFS_OK((*p)->DestroyDataset("zl/gone"));
    ASSERT_UZFS_OK((*p)->Export());
  }
  pooltest::ExpectConsistent(d.path(), "zl");
  std::string out;
  EXPECT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + d.path().string() + " -bcc zl", &out), 0) << out;
  EXPECT_NE(out.find("No leaks"), std::string::npos) << out;
  for (const char* bad : {"error", "leaked space", "unreachable", "ASSERT", "panic"})
    EXPECT_EQ(out.find(bad), std::string::npos) << bad << " in\n" << out;
  EXPECT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + d.path().string() + " -dd zl", &out), 0) << out;
  EXPECT_NE(out.find("Verified large_blocks feature refcount of 1 is correct"), std::string::npos) << out;
  EXPECT_EQ(out.find("mismatch"), std::string::npos) << out;
  EXPECT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + d.path().string() + " -dddd zl/big", &out), 0) << out;
  // The files' data blocks are 1 MiB ("dblk 1M" in the object lines).
  EXPECT_NE(out.find("    1M "), std::string::npos) << out.substr(0, 6000);
}

}  // namespace
}  // namespace uzfs
