// zdb -b's traversal over the zfs-fuse fixture pool: the counts zfs-fuse's
// zdb -b printed for the same image (244 blocks, 6578688 logical, 832512
// physical, 1206272 allocated = the space maps' total, no leaks), then a
// destroyed data block must show up as a checksum error, not a crash.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/dmu/pool_image.h"
#include "zfs/dmu/dmu_types.h"
#include "zfs/inspect/block_traverse.h"

namespace uzfs {
namespace {

TEST(BlockTraverseTest, CountsMatchZfsFuseAndSpaceMapsAgree) {
  test::PoolImage image("dmupool");
  ASSERT_TRUE(image.ok());
  auto pool = PoolReader::Open(image.dir().string(), "dmupool");
  ASSERT_UZFS_OK(pool.status());
  auto r = TraversePool(**pool);
  ASSERT_UZFS_OK(r.status());
  EXPECT_EQ(r->total.count, 244u);
  EXPECT_EQ(r->total.lsize, 6578688u);
  EXPECT_EQ(r->total.psize, 832512u);
  EXPECT_EQ(r->total.asize, 1206272u);
  EXPECT_EQ(r->spa_allocated, 1206272u);
  EXPECT_EQ(r->leaked, 0u);
  EXPECT_EQ(r->unreachable, 0u);
  EXPECT_EQ(r->double_allocated, 0u);
  EXPECT_EQ(r->checksum_errors, 0u);
  // Per type, as zdb -bb printed: 36 plain-file blocks, 18 deferred frees.
  EXPECT_EQ(r->by_type[dmu_ot::kPlainFileContents].count, 36u);
  EXPECT_EQ(r->by_type[kDeferredFreeStat].count, 18u);
  EXPECT_EQ(r->by_type[kDeferredFreeStat].asize, 34.5 * 1024);
}

TEST(BlockTraverseTest, DestroyedBlockIsAChecksumError) {
  test::PoolImage image("dmupool");
  ASSERT_TRUE(image.ok());
  BlockPtr victim;
  {
    auto pool = PoolReader::Open(image.dir().string(), "dmupool");
    ASSERT_UZFS_OK(pool.status());
    auto ds = (*pool)->ResolveDataset("dmupool/fs");
    ASSERT_UZFS_OK(ds.status());
    auto os = (*pool)->OpenObjset(*ds);
    ASSERT_UZFS_OK(os.status());
    // Object 6 is fs/services (zdb -dddd): one data block, one copy.
    auto dn = (*pool)->reader().ReadDnode(os->meta_dnode, 6);
    ASSERT_UZFS_OK(dn.status());
    victim = dn->blkptr[0];
    ASSERT_EQ(victim.NumDvas(), 1);
  }
  {
    std::fstream f(image.dir() / "dmupool.img", std::ios::in | std::ios::out | std::ios::binary);
    const std::string junk(victim.dva[0].asize, '\x33');
    f.seekp(static_cast<std::streamoff>(kVdevDataOffset + victim.dva[0].offset));
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  auto pool = PoolReader::Open(image.dir().string(), "dmupool");
  ASSERT_UZFS_OK(pool.status());
  auto r = TraversePool(**pool);
  ASSERT_UZFS_OK(r.status());
  EXPECT_EQ(r->checksum_errors, 1u);
  ASSERT_EQ(r->errors.size(), 1u);
  EXPECT_NE(r->errors[0].find("object 6"), std::string::npos) << r->errors[0];
  // Still counted (it is allocated), so the space accounting holds.
  EXPECT_EQ(r->total.count, 244u);
  EXPECT_EQ(r->leaked, 0u);
}

}  // namespace
}  // namespace uzfs
