// User properties of snapshots (pool_snapshot_props.cc): set with the
// snapshot in its txg or later, removed, kept across an export and import
// and a rename, natives refused, and the props ZAP freed with the snapshot
// (our zdb finds no leak). Pools before version 12 have no snapshot
// properties and refuse them, taking nothing.
#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"

namespace uzfs {
namespace {

std::unique_ptr<Pool> NewPool(const test::TempDir& dir, uint64_t version) {
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(dir.path(), "d0"));
  PoolCreateOptions o = pooltest::V23();
  o.version = version;
  auto p = Pool::Create("sp", layout, o);
  EXPECT_UZFS_OK(p.status());
  if (!p.ok()) return nullptr;
  EXPECT_UZFS_OK((*p)->CreateDataset("sp/fs", {}));
  return std::move(*p);
}

class PoolSnapshotPropsTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(PoolSnapshotPropsTest, SetKeptAndFreedWithTheSnapshot) {
  test::TempDir dir;
  std::unique_ptr<Pool> p = NewPool(dir, GetParam());
  ASSERT_NE(p, nullptr);
  ASSERT_UZFS_OK(p->Snapshot({"sp/fs@a"}, {{"com.x:note", "hello"}, {"com.x:n", "2"}}));
  auto local = p->LocalProps("sp/fs@a");
  ASSERT_UZFS_OK(local.status());
  EXPECT_EQ(*local, (std::map<std::string, std::string>{{"com.x:n", "2"}, {"com.x:note", "hello"}}));
  ASSERT_UZFS_OK(p->SetProp("sp/fs@a", "com.x:n", "3"));
  ASSERT_UZFS_OK(p->InheritProp("sp/fs@a", "com.x:note"));
  ASSERT_UZFS_OK(p->InheritProp("sp/fs@a", "com.x:never-set"));
  // Natives, bad names and missing snapshots change nothing.
  Status s = p->SetProp("sp/fs@a", "compression", "off");
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "cannot set property for 'sp/fs@a': this property can not be modified for snapshots");
  EXPECT_EQ(p->SetProp("sp/fs@nope", "com.x:n", "1").code(), Code::kNotFound);
  EXPECT_FALSE(p->Snapshot({"sp/fs@b"}, {{"atime", "off"}}).ok());
  EXPECT_FALSE(p->Snapshot({"sp/fs@b"}, {{"nocolon", "x"}}).ok());
  auto l = p->ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  for (const DatasetInfo& i : *l) EXPECT_NE(i.name, "sp/fs@b") << "a refused snapshot was taken";
  // The file system's own properties are untouched.
  auto fs_local = p->LocalProps("sp/fs");
  ASSERT_UZFS_OK(fs_local.status());
  EXPECT_EQ(fs_local->count("com.x:n"), 0u);
  ASSERT_UZFS_OK(p->RenameSnapshot("sp/fs@a", "sp/fs@renamed", false));
  ASSERT_UZFS_OK(p->Export());
  p.reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
  auto q = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(q.status());
  local = (*q)->LocalProps("sp/fs@renamed");
  ASSERT_UZFS_OK(local.status());
  EXPECT_EQ(*local, (std::map<std::string, std::string>{{"com.x:n", "3"}}));
  ASSERT_UZFS_OK((*q)->DestroySnapshots({"sp/fs@renamed"}));
  ASSERT_UZFS_OK((*q)->Export());
  q->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
}

INSTANTIATE_TEST_SUITE_P(Versions, PoolSnapshotPropsTest, ::testing::Values(12, 23, 28, 5000),
                         [](const ::testing::TestParamInfo<uint64_t>& i) { return "v" + std::to_string(i.param); });

TEST(PoolSnapshotProps, RefusedBeforeVersion12) {
  test::TempDir dir;
  std::unique_ptr<Pool> p = NewPool(dir, 11);
  ASSERT_NE(p, nullptr);
  Status s = p->Snapshot({"sp/fs@a"}, {{"com.x:n", "1"}});
  EXPECT_EQ(s.code(), Code::kNotSupported);
  EXPECT_EQ(s.message(), "cannot create snapshot 'sp/fs@a': pool must be upgraded to set this property or value");
  ASSERT_UZFS_OK(p->Snapshot({"sp/fs@b"}));
  EXPECT_EQ(p->SetProp("sp/fs@b", "com.x:n", "1").code(), Code::kNotSupported);
  auto l = p->ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  for (const DatasetInfo& i : *l) EXPECT_NE(i.name, "sp/fs@a");
  auto local = p->LocalProps("sp/fs@b");
  ASSERT_UZFS_OK(local.status());
  EXPECT_TRUE(local->empty());
  ASSERT_UZFS_OK(p->Export());
  p.reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
}

}  // namespace
}  // namespace uzfs
