// OpenZFS 2.1's zdb (scripts/openzfs-zdb.sh) judges a pool uzfs left in the
// middle of an async destroy: a raidz1 pool with a file system of many
// objects and a clone of its snapshot, both destroyed, the queue freed a
// few blocks per txg and the pool exported part way. zdb walks what is
// left of each queued tree from the bookmark uzfs wrote (its own resume
// code) and must find every allocated block referenced exactly once: no
// leak, nothing freed twice. The async_destroy feature is active while the
// queue exists; once uzfs has finished it after an import, the feature is
// back to enabled and zdb finds the pool clean again.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/dsl/pool_test_util.h"
#include "tests/dsl/snapshot_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_create.h"

namespace uzfs {
namespace {

void ExpectZdbClean(const std::filesystem::path& dir, const std::string& refcount) {
  const std::string where = "-U /dev/null -e -p " + dir.string() + " ";
  std::string out;
  EXPECT_EQ(test::RunOpenZfsZdb(where + "-bcc ad", &out), 0) << out;
  EXPECT_NE(out.find("No leaks (block sum matches space maps exactly)"), std::string::npos) << out;
  for (const char* bad : {"error", "leaked space", "(leaked", "unreachable", "!= alloc", "mismatch", "ASSERT",
                          "panic"}) {
    EXPECT_EQ(out.find(bad), std::string::npos) << bad << " in\n" << out;
  }
  out.clear();
  EXPECT_EQ(test::RunOpenZfsZdb(where + "-dddd ad", &out), 0) << out;
  EXPECT_NE(out.find("com.delphix:async_destroy = " + refcount), std::string::npos) << out;
}

TEST(AsyncDestroyOpenZfsZdb, AQueueLeftPartWayIsWalkedFromItsBookmark) {
  test::TempDir d;
  {
    PoolCreateOptions o;
    o.version = kFeatureVersion;
    o.ashift = 9;
    o.fs_init = InitNewFilesystem;
    o.history = "zpool create ad";
    PoolLayout l;
    l.data = {pooltest::Group(d.path(), "r", VdevSpec::Type::kRaidz, 3, 1)};
    auto p = Pool::Create("ad", l, o);
    ASSERT_UZFS_OK(p.status());
    Pool& P = **p;
    ASSERT_UZFS_OK(P.CreateDataset("ad/a", {{"recordsize", "16K"}}));
    std::vector<uint64_t> objs;
    pooltest::WriteObjects(P, "ad/a", 80, 96 * 1024, 3, &objs);
    ASSERT_UZFS_OK(P.Sync());
    ASSERT_UZFS_OK(P.Snapshot({"ad/a@s"}));
    ASSERT_UZFS_OK(P.Clone("ad/a@s", "ad/c", {}));
    std::vector<uint64_t> some(objs.begin(), objs.begin() + 30);
    ASSERT_NO_FATAL_FAILURE(snaptest::Overwrite(P, "ad/c", some, 96 * 1024, 40));
    ASSERT_UZFS_OK(P.Sync());
    P.SetAsyncDestroyPace(0, /*background=*/false);
    ASSERT_UZFS_OK(P.DestroyDataset("ad/c"));
    ASSERT_UZFS_OK(P.DestroySnapshots({"ad/a@s"}));
    ASSERT_UZFS_OK(P.DestroyDataset("ad/a"));
    // Through the first tree, then a few txgs into the second.
    P.SetAsyncDestroyPace(37, false);
    for (int i = 0; i < 200; i++) {
      auto st = P.AsyncDestroy();
      ASSERT_UZFS_OK(st.status());
      if (st->queued < 2) break;
      ASSERT_UZFS_OK(P.Sync());
    }
    for (int i = 0; i < 2; i++) ASSERT_UZFS_OK(P.Sync());
    auto st = P.AsyncDestroy();
    ASSERT_UZFS_OK(st.status());
    EXPECT_EQ(st->queued, 1u) << "the clone's tree is freed, the file system's part way";
    EXPECT_GT(st->freeing, 0u);
    P.SetAsyncDestroyPace(0, false);
    ASSERT_UZFS_OK(P.Export());
  }
  ExpectZdbClean(d.path(), "1");

  auto p = pooltest::ImportFrom(d.path(), "ad");
  ASSERT_UZFS_OK(p.status());
  ASSERT_UZFS_OK((*p)->WaitFreed());
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  ExpectZdbClean(d.path(), "0");
}

}  // namespace
}  // namespace uzfs
