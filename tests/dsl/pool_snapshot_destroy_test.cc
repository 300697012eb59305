// Destroying snapshots (pool_snapshot_destroy.cc) on every version uzfs
// writes: three snapshots with overwrites between them, destroyed middle,
// oldest, newest. Each destroy frees exactly what only that snapshot held
// (its unique bytes, also what SnapshotsReclaim predicted), the neighbours'
// unique bytes grow by what they alone hold now, the directory's snapshot
// usage shrinks to match, the remaining snapshots still read as they were
// taken, and our zdb finds no leak; with every snapshot and the file system
// gone the pool's allocated space is the empty pool's again. Bad names
// destroy nothing.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/dsl/pool_test_util.h"
#include "tests/dsl/snapshot_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/inspect/block_traverse.h"
#include "zfs/inspect/pool_reader.h"

namespace uzfs {
namespace {

constexpr size_t kObj = 256 * 1024;

using snaptest::Find;

std::vector<uint8_t> ReadAt(Pool& p, const BlockPtr& bp, uint64_t obj) { return snaptest::ReadAt(p, bp, obj, kObj); }

void Overwrite(Pool& p, const std::vector<uint64_t>& objs, const std::vector<int>& which, uint64_t seed) {
  // Object objs[i] gets the bytes of seed + i.
  for (int i : which) ASSERT_NO_FATAL_FAILURE(snaptest::Overwrite(p, "sp/fs", {objs[i]}, kObj, seed + i));
  ASSERT_UZFS_OK(p.Sync());
}

void ExpectAbout(uint64_t got, int n, const std::string& what) { snaptest::ExpectAbout(got, n, kObj, what); }

using snaptest::Allocated;

class PoolSnapshotDestroyTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(PoolSnapshotDestroyTest, EachDestroyFreesWhatOnlyItHeld) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(dir.path(), "d0"));
  PoolCreateOptions o = pooltest::V23();
  o.version = GetParam();
  auto p = Pool::Create("sp", layout, o);
  ASSERT_UZFS_OK(p.status());
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  const uint64_t empty_alloc = Allocated(dir.path());
  p = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  ASSERT_UZFS_OK((*p)->CreateDataset("sp/fs", {}));
  std::vector<uint64_t> objs;
  pooltest::WriteObjects(**p, "sp/fs", 8, kObj, 100, &objs);
  ASSERT_UZFS_OK((*p)->Sync());
  ASSERT_UZFS_OK((*p)->Snapshot({"sp/fs@s1"}));
  ASSERT_NO_FATAL_FAILURE(Overwrite(**p, objs, {0, 1, 2, 3}, 200));
  ASSERT_UZFS_OK((*p)->Snapshot({"sp/fs@s2"}));
  ASSERT_NO_FATAL_FAILURE(Overwrite(**p, objs, {0, 1, 4, 5}, 300));
  ASSERT_UZFS_OK((*p)->Snapshot({"sp/fs@s3"}));
  ASSERT_NO_FATAL_FAILURE(Overwrite(**p, objs, {0, 1, 2, 3, 4, 5, 6, 7}, 400));

  auto l = (*p)->ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  ExpectAbout(Find(*l, "sp/fs@s1")->ds.unique_bytes, 4, "s1 alone: the first four originals");
  ExpectAbout(Find(*l, "sp/fs@s2")->ds.unique_bytes, 2, "s2 alone: its versions of objects 0 and 1");
  ExpectAbout(Find(*l, "sp/fs@s3")->ds.unique_bytes, 4, "s3 alone: its versions of 0, 1, 4, 5");
  ExpectAbout(Find(*l, "sp/fs")->dir.used_breakdown[static_cast<int>(DdUsed::kSnap)], 16, "every dead block");
  const BlockPtr s1_bp = Find(*l, "sp/fs@s1")->ds.bp, s3_bp = Find(*l, "sp/fs@s3")->ds.bp;

  // What each destroy would free is known before.
  auto r2 = (*p)->SnapshotsReclaim({"sp/fs@s2"});
  ASSERT_UZFS_OK(r2.status());
  EXPECT_EQ(*r2, Find(*l, "sp/fs@s2")->ds.unique_bytes);
  auto r12 = (*p)->SnapshotsReclaim({"sp/fs@s1", "sp/fs@s2"});
  ASSERT_UZFS_OK(r12.status());
  ExpectAbout(*r12, 8, "s1 and s2 together: the originals only they held and s2's own");

  // The middle one.
  const uint64_t snap_before = Find(*l, "sp/fs")->dir.used_breakdown[static_cast<int>(DdUsed::kSnap)];
  ASSERT_UZFS_OK((*p)->DestroySnapshots({"sp/fs@s2"}));
  auto l2 = (*p)->ListDatasets(true);
  ASSERT_UZFS_OK(l2.status());
  EXPECT_EQ(Find(*l2, "sp/fs@s2"), nullptr);
  const DatasetInfo* s1 = Find(*l2, "sp/fs@s1");
  const DatasetInfo* s3 = Find(*l2, "sp/fs@s3");
  ExpectAbout(s1->ds.unique_bytes, 6, "s1 now alone holds what s2 shared with it");
  ExpectAbout(s3->ds.unique_bytes, 6, "s3 now alone holds s2's objects 2 and 3");
  EXPECT_EQ(s1->ds.next_snap_obj, s3->ds_obj);
  EXPECT_EQ(s3->ds.prev_snap_obj, s1->ds_obj);
  EXPECT_EQ(s3->ds.prev_snap_txg, s1->ds.creation_txg);
  EXPECT_EQ(Find(*l2, "sp/fs")->dir.used_breakdown[static_cast<int>(DdUsed::kSnap)], snap_before - *r2);
  EXPECT_EQ(ReadAt(**p, s1_bp, objs[0]), test::RandomBytes(kObj, 100));
  EXPECT_EQ(ReadAt(**p, s3_bp, objs[2]), test::RandomBytes(kObj, 202));
  EXPECT_EQ(ReadAt(**p, s3_bp, objs[0]), test::RandomBytes(kObj, 300));
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");

  // The oldest, then the newest (whose successor is the file system).
  p = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  ASSERT_UZFS_OK((*p)->DestroySnapshots({"sp/fs@s1"}));
  auto l3 = (*p)->ListDatasets(true);
  ASSERT_UZFS_OK(l3.status());
  ExpectAbout(Find(*l3, "sp/fs@s3")->ds.unique_bytes, 8, "s3 alone holds every dead block left");
  ExpectAbout(Find(*l3, "sp/fs")->dir.used_breakdown[static_cast<int>(DdUsed::kSnap)], 8, "s3's");
  EXPECT_EQ(ReadAt(**p, s3_bp, objs[7]), test::RandomBytes(kObj, 107));
  ASSERT_UZFS_OK((*p)->DestroySnapshots({"sp/fs@s3"}));
  auto l4 = (*p)->ListDatasets(true);
  ASSERT_UZFS_OK(l4.status());
  const DatasetInfo* fs = Find(*l4, "sp/fs");
  EXPECT_EQ(fs->dir.used_breakdown[static_cast<int>(DdUsed::kSnap)], 0u);
  EXPECT_EQ(fs->ds.unique_bytes, fs->ds.referenced_bytes) << "the file system holds all it references alone";
  EXPECT_EQ(fs->dir.used_bytes, fs->ds.referenced_bytes);
  // Writing goes on freeing at once.
  ASSERT_NO_FATAL_FAILURE(Overwrite(**p, objs, {0, 1}, 500));
  auto l5 = (*p)->ListDatasets(true);
  ASSERT_UZFS_OK(l5.status());
  EXPECT_EQ(Find(*l5, "sp/fs")->dir.used_bytes, Find(*l5, "sp/fs")->ds.referenced_bytes);
  // Everything gone: the pool is as empty as it was (give or take the
  // metadata its space maps grew by).
  ASSERT_UZFS_OK((*p)->DestroyDataset("sp/fs"));
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
  const uint64_t end_alloc = Allocated(dir.path());
  EXPECT_LE(end_alloc, empty_alloc + 256 * 1024) << "empty " << empty_alloc << ", now " << end_alloc;
}

INSTANTIATE_TEST_SUITE_P(Versions, PoolSnapshotDestroyTest, ::testing::Values(23, 28, 5000),
                         [](const ::testing::TestParamInfo<uint64_t>& i) { return "v" + std::to_string(i.param); });

TEST(PoolSnapshotDestroy, MissingNamesDestroyNothing) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(dir.path(), "d0"));
  auto p = Pool::Create("sp", layout, pooltest::V23());
  ASSERT_UZFS_OK(p.status());
  ASSERT_UZFS_OK((*p)->CreateDataset("sp/fs", {}));
  ASSERT_UZFS_OK((*p)->Snapshot({"sp/fs@a"}));
  Status s = (*p)->DestroySnapshots({"sp/fs@a", "sp/fs@nope"});
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.message(), "cannot open 'sp/fs@nope': dataset does not exist");
  s = (*p)->DestroySnapshots({"sp/nope@a"});
  EXPECT_EQ(s.message(), "cannot open 'sp/nope': dataset does not exist");
  auto l = (*p)->ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  EXPECT_NE(Find(*l, "sp/fs@a"), nullptr) << "all or nothing";
  // The file system's own snapshots keep it until they are gone.
  EXPECT_EQ((*p)->DestroyDataset("sp/fs").code(), Code::kBusy);
  ASSERT_UZFS_OK((*p)->DestroySnapshots({"sp/fs@a", "sp/fs@a"}));
  ASSERT_UZFS_OK((*p)->DestroyDataset("sp/fs"));
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
}

}  // namespace
}  // namespace uzfs
