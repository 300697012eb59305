// recordsize up to 1 MiB (the large_blocks feature): accepted on feature-flag
// pools uzfs creates (large_blocks enabled), refused above 128K on legacy
// pools with zfs-fuse's message; files grow one block up to recordsize, then
// use recordsize blocks; the dataset activates large_blocks (refcount 1,
// the dataset object becomes a ZAP) when its first big block syncs, and
// gives it back when destroyed; data survives export + import, and the pool
// stays consistent (our zdb -b).
#include <fcntl.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "tests/zpl/zpl_pool_util.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/prop_table.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs {
namespace {

std::unique_ptr<Pool> NewPool(const std::filesystem::path& dir, const std::string& name, uint64_t version) {
  PoolLayout l;
  l.data.push_back(pooltest::Leaf(dir, "d0"));
  PoolCreateOptions o = pooltest::V23();
  o.version = version;
  o.fs_init = InitNewFilesystem;
  o.txg.timeout = std::chrono::milliseconds(50);
  auto p = Pool::Create(name, l, o);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? std::move(*p) : nullptr;
}

uint64_t WriteFile(ZplFs& fs, uint64_t dir, const std::string& name, const std::vector<uint8_t>& data) {
  ZplCred root;
  auto c = fs.Create(root, dir, name, S_IFREG | 0644, O_CREAT | O_RDWR);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  auto w = fs.Write(c->second, 0, data);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_TRUE(fs.Release(c->second).ok());
  return c->first.ino;
}

std::vector<uint8_t> ReadFile(ZplFs& fs, uint64_t ino, size_t n) {
  ZplCred root;
  auto h = fs.Open(root, ino, O_RDONLY);
  EXPECT_TRUE(h.ok());
  std::vector<uint8_t> out(n);
  auto r = fs.Read(*h, 0, out);
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(fs.Release(*h).ok());
  return out;
}

TEST(ZplLargeBlocksTest, LegacyPoolsRefuseOver128K) {
  test::TempDir dir;
  auto p = NewPool(dir.path(), "lg", 23);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->max_record_size(), 131072u);
  Status s = p->SetProp("lg", "recordsize", "256k");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("'recordsize' must be power of 2 from 512 to 128k"), std::string::npos)
      << s.ToString();
  ASSERT_UZFS_OK(p->SetProp("lg", "recordsize", "128k"));
  // The table alone: by pool version.
  PropContext ctx;
  ctx.pool_version = 5000;
  EXPECT_TRUE(ParseDatasetProp("recordsize", "1M", ctx).ok());
  EXPECT_FALSE(ParseDatasetProp("recordsize", "2M", ctx).ok());
  ctx.pool_version = 28;
  EXPECT_FALSE(ParseDatasetProp("recordsize", "256K", ctx).ok());
  ctx.pool_version = 5000;
  ctx.max_block_size = 131072;  // a v5000 pool without large_blocks
  EXPECT_FALSE(ParseDatasetProp("recordsize", "256K", ctx).ok());
  ASSERT_UZFS_OK(p->Export());
}

TEST(ZplLargeBlocksTest, OneMegabyteRecordsActivateTheFeature) {
  test::TempDir dir;
  auto p = NewPool(dir.path(), "lb", 5000);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->max_record_size(), 1048576u);
  ASSERT_UZFS_OK(p->CreateDataset("lb/big", {{"recordsize", "1M"}}));
  ASSERT_UZFS_OK(p->CreateDataset("lb/small", {}));
  EXPECT_FALSE(p->SetProp("lb/small", "recordsize", "2M").ok());
  const std::vector<uint8_t> data = test::RandomBytes(3 * 1048576 + 12345, 5);
  const std::vector<uint8_t> mid = test::RandomBytes(700000, 6);
  uint64_t f = 0, g = 0;
  {
    auto fs = ZplFs::Mount(*p, "lb/big");
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    f = WriteFile(**fs, (*fs)->root_ino(), "f", data);
    g = WriteFile(**fs, (*fs)->root_ino(), "g", mid);
    // One block growing with the file up to recordsize, then recordsize blocks.
    EXPECT_EQ((*fs)->GetAttr(f)->blksize, 1048576u);
    // A one-block file's block is its size rounded to 512 (ZFS's rule), here
    // past the old 128K limit.
    EXPECT_EQ((*fs)->GetAttr(g)->blksize, 700416u);
    ASSERT_TRUE((*fs)->Unmount().ok());
  }
  {
    auto fs = ZplFs::Mount(*p, "lb/small");
    ASSERT_TRUE(fs.ok());
    const uint64_t s = WriteFile(**fs, (*fs)->root_ino(), "s", mid);
    EXPECT_EQ((*fs)->GetAttr(s)->blksize, 131072u);
    ASSERT_TRUE((*fs)->Unmount().ok());
  }
  ASSERT_UZFS_OK(p->Export());
  p.reset();
  pooltest::ExpectConsistent(dir.path(), "lb");
  auto p2 = zpltest::ImportWithZpl(dir.path(), "lb");
  ASSERT_UZFS_OK(p2.status());
  {
    auto fs = ZplFs::Mount(**p2, "lb/big");
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    EXPECT_TRUE(ReadFile(**fs, f, data.size()) == data);
    EXPECT_TRUE(ReadFile(**fs, g, mid.size()) == mid);
    EXPECT_EQ((*fs)->GetAttr(f)->blksize, 1048576u);
    ASSERT_TRUE((*fs)->Unmount().ok());
  }
  // Destroying the dataset gives the feature back (checked by OpenZFS's
  // zdb in the compat test); the pool stays consistent.
  ASSERT_UZFS_OK((*p2)->DestroyDataset("lb/big"));
  ASSERT_UZFS_OK((*p2)->Export());
  p2->reset();
  pooltest::ExpectConsistent(dir.path(), "lb");
}

}  // namespace
}  // namespace uzfs
