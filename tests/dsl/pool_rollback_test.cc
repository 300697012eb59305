// Rolling back (pool_rollback.cc) on every version uzfs writes: the file
// system reads as its newest snapshot again, what it wrote since (synced or
// not) is gone and its space free, what it had killed is its own again,
// the records agree (unique bytes 0 on both sides, no snapshot usage left,
// used = referenced), writing goes on from there, and our zdb finds no
// leak. A rollback past newer snapshots is refused naming them.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/dsl/pool_test_util.h"
#include "tests/dsl/snapshot_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"

namespace uzfs {
namespace {

constexpr size_t kObj = 128 * 1024;

using snaptest::Find;

void Overwrite(Pool& p, const std::vector<uint64_t>& objs, uint64_t seed) {
  snaptest::Overwrite(p, "sp/fs", objs, kObj, seed);
}

class PoolRollbackTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(PoolRollbackTest, TheFileSystemIsItsSnapshotAgain) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(dir.path(), "d0"));
  PoolCreateOptions o = pooltest::V23();
  o.version = GetParam();
  auto p = Pool::Create("sp", layout, o);
  ASSERT_UZFS_OK(p.status());
  ASSERT_UZFS_OK((*p)->CreateDataset("sp/fs", {}));
  std::vector<uint64_t> objs;
  pooltest::WriteObjects(**p, "sp/fs", 6, kObj, 10, &objs);
  ASSERT_UZFS_OK((*p)->Sync());
  ASSERT_UZFS_OK((*p)->Snapshot({"sp/fs@old"}));
  ASSERT_NO_FATAL_FAILURE(Overwrite(**p, {objs[0], objs[1], objs[2]}, 100));
  ASSERT_UZFS_OK((*p)->Sync());
  ASSERT_UZFS_OK((*p)->Snapshot({"sp/fs@a"}));
  ASSERT_NO_FATAL_FAILURE(Overwrite(**p, {objs[0], objs[3]}, 200));
  std::vector<uint64_t> added;
  pooltest::WriteObjects(**p, "sp/fs", 2, kObj, 300, &added);
  ASSERT_UZFS_OK((*p)->Sync());
  ASSERT_NO_FATAL_FAILURE(Overwrite(**p, {objs[4]}, 400));  // never synced

  Status s = (*p)->Rollback("sp/fs@old");
  EXPECT_EQ(s.code(), Code::kExists);
  EXPECT_EQ(s.message(), "cannot rollback to 'sp/fs@old': more recent snapshots or bookmarks exist\n"
                         "use '-r' to force deletion of the following snapshots and bookmarks:\nsp/fs@a");
  EXPECT_EQ((*p)->Rollback("sp/fs@nope").code(), Code::kNotFound);
  ASSERT_UZFS_OK((*p)->Rollback("sp/fs@a"));

  auto l = (*p)->ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  const DatasetInfo* fs = Find(*l, "sp/fs");
  const DatasetInfo* a = Find(*l, "sp/fs@a");
  EXPECT_EQ(fs->ds.bp, a->ds.bp);
  EXPECT_EQ(fs->ds.referenced_bytes, a->ds.referenced_bytes);
  EXPECT_EQ(fs->ds.unique_bytes, 0u);
  EXPECT_EQ(a->ds.unique_bytes, 0u);
  pooltest::ExpectObjects(**p, "sp/fs", {objs[0], objs[1], objs[2]}, kObj, 100);
  pooltest::ExpectObjects(**p, "sp/fs", {objs[3], objs[4], objs[5]}, kObj, 13);
  {
    auto os = (*p)->ObjsetForRead("sp/fs");
    ASSERT_UZFS_OK(os.status());
    for (uint64_t obj : added) {
      auto dn = (*os)->GetDnode(obj);
      EXPECT_TRUE(!dn.ok() || dn->IsFree()) << "object " << obj << " was written after the snapshot";
    }
  }
  // The file system goes on from the snapshot; then the older snapshot too.
  ASSERT_NO_FATAL_FAILURE(Overwrite(**p, {objs[5]}, 500));
  ASSERT_UZFS_OK((*p)->Sync());
  ASSERT_UZFS_OK((*p)->DestroySnapshots({"sp/fs@a"}));
  ASSERT_UZFS_OK((*p)->Rollback("sp/fs@old"));
  pooltest::ExpectObjects(**p, "sp/fs", objs, kObj, 10);
  auto l2 = (*p)->ListDatasets(true);
  ASSERT_UZFS_OK(l2.status());
  fs = Find(*l2, "sp/fs");
  EXPECT_EQ(fs->dir.used_breakdown[static_cast<int>(DdUsed::kSnap)], 0u);
  EXPECT_EQ(fs->dir.used_bytes, fs->ds.referenced_bytes) << "no space held by snapshots alone";
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
  p = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  pooltest::ExpectObjects(**p, "sp/fs", objs, kObj, 10);
  ASSERT_UZFS_OK((*p)->DestroySnapshots({"sp/fs@old"}));
  ASSERT_UZFS_OK((*p)->DestroyDataset("sp/fs"));
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
}

INSTANTIATE_TEST_SUITE_P(Versions, PoolRollbackTest, ::testing::Values(23, 28, 5000),
                         [](const ::testing::TestParamInfo<uint64_t>& i) { return "v" + std::to_string(i.param); });

}  // namespace
}  // namespace uzfs
