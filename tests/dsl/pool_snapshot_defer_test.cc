// Deferred destroy (pool_snapshot_defer.cc): a snapshot that a user hold
// or a clone keeps is marked (defer_destroy) instead of destroyed, stays
// readable and marked across an export and import, and goes in the task
// that releases its last hold or destroys its last clone; one nothing
// keeps goes at once; a missing name or a pool before version 18 changes
// nothing; our zdb finds no leak after each.
#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/dsl/snapshot_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"

namespace uzfs {
namespace {

constexpr size_t kObj = 64 * 1024;

using snaptest::Find;

std::unique_ptr<Pool> NewPool(const test::TempDir& dir, uint64_t version, std::vector<uint64_t>* objs) {
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(dir.path(), "d0"));
  PoolCreateOptions o = pooltest::V23();
  o.version = version;
  auto p = Pool::Create("sp", layout, o);
  EXPECT_UZFS_OK(p.status());
  if (!p.ok()) return nullptr;
  EXPECT_UZFS_OK((*p)->CreateDataset("sp/fs", {}));
  pooltest::WriteObjects(**p, "sp/fs", 4, kObj, 10, objs);
  EXPECT_UZFS_OK((*p)->Sync());
  return std::move(*p);
}

// The snapshot's dataset record as listed, or nullptr when it is gone.
const DatasetInfo* Snap(const std::vector<DatasetInfo>& l, const std::string& name) { return Find(l, name); }

bool Marked(Pool& p, const std::string& name) {
  auto l = p.ListDatasets(true);
  EXPECT_UZFS_OK(l.status());
  if (!l.ok()) return false;
  const DatasetInfo* i = Snap(*l, name);
  return i != nullptr && (i->ds.flags & kDsFlagDeferDestroy) != 0;
}

bool Exists(Pool& p, const std::string& name) {
  auto l = p.ListDatasets(true);
  EXPECT_UZFS_OK(l.status());
  return l.ok() && Snap(*l, name) != nullptr;
}

class PoolSnapshotDeferTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(PoolSnapshotDeferTest, HeldAndClonedSnapshotsGoWhenReleased) {
  test::TempDir dir;
  std::vector<uint64_t> objs;
  std::unique_ptr<Pool> p = NewPool(dir, GetParam(), &objs);
  ASSERT_NE(p, nullptr);
  ASSERT_UZFS_OK(p->Snapshot({"sp/fs@held"}));
  snaptest::Overwrite(*p, "sp/fs", {objs[0]}, kObj, 100);
  ASSERT_UZFS_OK(p->Sync());
  ASSERT_UZFS_OK(p->Snapshot({"sp/fs@cloned"}));
  snaptest::Overwrite(*p, "sp/fs", {objs[1]}, kObj, 200);
  ASSERT_UZFS_OK(p->Sync());
  ASSERT_UZFS_OK(p->Snapshot({"sp/fs@free"}));
  snaptest::Overwrite(*p, "sp/fs", {objs[2]}, kObj, 300);
  ASSERT_UZFS_OK(p->Sync());
  ASSERT_UZFS_OK(p->Hold({"sp/fs@held"}, "keep"));
  ASSERT_UZFS_OK(p->Clone("sp/fs@cloned", "sp/c", {}));

  // A missing name changes nothing.
  EXPECT_EQ(p->DeferDestroySnapshots({"sp/fs@held", "sp/fs@nope"}).code(), Code::kNotFound);
  EXPECT_FALSE(Marked(*p, "sp/fs@held"));
  // All three in one call: two marked, one destroyed now.
  ASSERT_UZFS_OK(p->DeferDestroySnapshots({"sp/fs@held", "sp/fs@cloned", "sp/fs@free"}));
  EXPECT_TRUE(Marked(*p, "sp/fs@held"));
  EXPECT_TRUE(Marked(*p, "sp/fs@cloned"));
  EXPECT_FALSE(Exists(*p, "sp/fs@free"));
  // Marking again is no error; a plain destroy is still refused.
  ASSERT_UZFS_OK(p->DeferDestroySnapshots({"sp/fs@held"}));
  EXPECT_EQ(p->DestroySnapshots({"sp/fs@held"}).code(), Code::kBusy);
  // Still there to read, and marked after an export and import.
  ASSERT_UZFS_OK(p->Export());
  p.reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
  auto q = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(q.status());
  p = std::move(*q);
  EXPECT_TRUE(Marked(*p, "sp/fs@held"));
  {
    auto l = p->ListDatasets(true);
    ASSERT_UZFS_OK(l.status());
    EXPECT_EQ(snaptest::ReadAt(*p, Snap(*l, "sp/fs@held")->ds.bp, objs[0], kObj), test::RandomBytes(kObj, 10));
  }
  // A second hold: the first release leaves it; the last one destroys it.
  ASSERT_UZFS_OK(p->Hold({"sp/fs@held"}, "second"));
  ASSERT_UZFS_OK(p->Release({"sp/fs@held"}, "keep"));
  EXPECT_TRUE(Exists(*p, "sp/fs@held"));
  ASSERT_UZFS_OK(p->Release({"sp/fs@held"}, "second"));
  EXPECT_FALSE(Exists(*p, "sp/fs@held"));
  // The clone's destroy takes its marked origin along.
  EXPECT_TRUE(Exists(*p, "sp/fs@cloned"));
  ASSERT_UZFS_OK(p->DestroyDataset("sp/c"));
  EXPECT_FALSE(Exists(*p, "sp/fs@cloned"));
  auto l = p->ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  const DatasetInfo* fs = Find(*l, "sp/fs");
  EXPECT_EQ(fs->dir.used_bytes, fs->ds.referenced_bytes) << "nothing held by snapshots any more";
  pooltest::ExpectObjects(*p, "sp/fs", {objs[0]}, kObj, 100);
  ASSERT_UZFS_OK(p->Export());
  p.reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
}

// Held and cloned at once: the release leaves it, the clone's destroy
// takes it; a dry run checks and changes nothing.
TEST_P(PoolSnapshotDeferTest, BothAHoldAndAClone) {
  test::TempDir dir;
  std::vector<uint64_t> objs;
  std::unique_ptr<Pool> p = NewPool(dir, GetParam(), &objs);
  ASSERT_NE(p, nullptr);
  ASSERT_UZFS_OK(p->Snapshot({"sp/fs@s"}));
  ASSERT_UZFS_OK(p->Hold({"sp/fs@s"}, "keep"));
  ASSERT_UZFS_OK(p->Clone("sp/fs@s", "sp/c", {}));
  ASSERT_UZFS_OK(p->DeferDestroySnapshots({"sp/fs@s"}, /*dry_run=*/true));
  EXPECT_FALSE(Marked(*p, "sp/fs@s"));
  ASSERT_UZFS_OK(p->DeferDestroySnapshots({"sp/fs@s"}));
  ASSERT_UZFS_OK(p->Release({"sp/fs@s"}, "keep"));
  EXPECT_TRUE(Marked(*p, "sp/fs@s")) << "the clone still keeps it";
  ASSERT_UZFS_OK(p->DestroyDataset("sp/c"));
  EXPECT_FALSE(Exists(*p, "sp/fs@s"));
  ASSERT_UZFS_OK(p->Export());
  p.reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
}

INSTANTIATE_TEST_SUITE_P(Versions, PoolSnapshotDeferTest, ::testing::Values(18, 23, 28, 5000),
                         [](const ::testing::TestParamInfo<uint64_t>& i) { return "v" + std::to_string(i.param); });

TEST(PoolSnapshotDefer, RefusedBeforeVersion18) {
  test::TempDir dir;
  std::vector<uint64_t> objs;
  std::unique_ptr<Pool> p = NewPool(dir, 17, &objs);
  ASSERT_NE(p, nullptr);
  ASSERT_UZFS_OK(p->Snapshot({"sp/fs@s"}));
  Status s = p->DeferDestroySnapshots({"sp/fs@s"});
  EXPECT_EQ(s.code(), Code::kNotSupported);
  EXPECT_EQ(s.message(), "cannot destroy snapshot sp/fs@s: pool must be upgraded");
  EXPECT_TRUE(Exists(*p, "sp/fs@s"));
  ASSERT_UZFS_OK(p->Export());
}

}  // namespace
}  // namespace uzfs
