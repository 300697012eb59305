// Bookmarks at the pool's level: made from a snapshot or another bookmark,
// they keep the snapshot's guid, creation txg and time after it is
// destroyed; the bookmarks feature counts the file systems that have any
// (back to zero with the last one, or with the file system); they survive
// an import; bad names, a source of another file system, a name taken and
// a pool without the feature are refused with nothing changed; the pool
// stays consistent throughout.
#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

uint64_t BookmarksRefcount(Pool& p) {
  auto fs = p.Features();
  if (!fs.ok()) return UINT64_MAX;
  for (const PoolFeatureState& f : *fs) {
    if (f.guid == "com.delphix:bookmarks") return f.enabled ? f.refcount : UINT64_MAX - 1;
  }
  return UINT64_MAX;
}

class PoolBookmarks : public ::testing::Test {
 protected:
  void SetUp() override {
    PoolLayout layout;
    layout.data.push_back(pooltest::Leaf(dir_.path(), "d0", 128ull << 20));
    PoolCreateOptions o = pooltest::V23();
    o.version = 5000;
    auto p = Pool::Create("bp", layout, o);
    ASSERT_UZFS_OK(p.status());
    pool_ = std::move(*p);
    ASSERT_UZFS_OK(pool_->CreateDataset("bp/fs", {}));
    ASSERT_UZFS_OK(pool_->CreateDataset("bp/other", {}));
    std::vector<uint64_t> objs;
    pooltest::WriteObjects(*pool_, "bp/fs", 2, 100000, 1, &objs);
    ASSERT_UZFS_OK(pool_->Snapshot({"bp/fs@s1", "bp/other@o1"}));
    pooltest::WriteObjects(*pool_, "bp/fs", 2, 100000, 10, &objs);
    ASSERT_UZFS_OK(pool_->Snapshot({"bp/fs@s2"}));
  }

  void Reimport() {
    ASSERT_UZFS_OK(pool_->Export());
    pool_.reset();
    ASSERT_NO_FATAL_FAILURE(pooltest::ExpectConsistent(dir_.path(), "bp"));
    auto p = pooltest::ImportFrom(dir_.path(), "bp");
    ASSERT_UZFS_OK(p.status());
    pool_ = std::move(*p);
  }

  test::TempDir dir_;
  std::unique_ptr<Pool> pool_;
};

TEST_F(PoolBookmarks, ABookmarkKeepsItsSnapshotsIdentityAfterTheSnapshotIsGone) {
  EXPECT_EQ(BookmarksRefcount(*pool_), 0u) << "enabled on a new pool, not active";
  auto s1 = pool_->FindSnapshot("bp/fs@s1");
  ASSERT_UZFS_OK(s1.status());
  ASSERT_UZFS_OK(pool_->CreateBookmark("bp/fs@s1", "bp/fs#m1"));
  ASSERT_UZFS_OK(pool_->CreateBookmark("bp/fs#m1", "bp/fs#copy"));
  ASSERT_UZFS_OK(pool_->CreateBookmark("bp/fs@s2", "bp/fs#m2"));
  EXPECT_EQ(BookmarksRefcount(*pool_), 1u) << "one file system has bookmarks";
  auto all = pool_->ListDatasets(true);
  ASSERT_UZFS_OK(all.status());
  uint64_t guid1 = 0;
  for (const DatasetInfo& i : *all) {
    if (i.name == "bp/fs@s1") guid1 = i.ds.guid;
  }
  ASSERT_UZFS_OK(pool_->DestroySnapshots({"bp/fs@s1"}));
  ASSERT_NO_FATAL_FAILURE(Reimport());
  auto marks = pool_->Bookmarks("bp/fs");
  ASSERT_UZFS_OK(marks.status());
  ASSERT_EQ(marks->size(), 3u);
  auto m1 = pool_->FindBookmark("bp/fs#m1");
  ASSERT_UZFS_OK(m1.status());
  EXPECT_EQ(m1->guid, guid1);
  EXPECT_EQ(m1->creation_txg, s1->creation_txg);
  EXPECT_EQ(m1->creation_time, s1->creation_time);
  auto copy = pool_->FindBookmark("bp/fs#copy");
  ASSERT_UZFS_OK(copy.status());
  EXPECT_EQ(copy->guid, guid1);
  EXPECT_EQ(marks->front().creation_txg, s1->creation_txg) << "oldest first";
  EXPECT_EQ(marks->back().name, "bp/fs#m2");

  ASSERT_UZFS_OK(pool_->DestroyBookmarks({"bp/fs#m1", "bp/fs#copy"}));
  EXPECT_EQ(BookmarksRefcount(*pool_), 1u);
  ASSERT_UZFS_OK(pool_->DestroyBookmarks({"bp/fs#m2"}));
  EXPECT_EQ(BookmarksRefcount(*pool_), 0u) << "the last one gives the count back";
  EXPECT_TRUE(pool_->Bookmarks("bp/fs")->empty());
  ASSERT_NO_FATAL_FAILURE(Reimport());
}

TEST_F(PoolBookmarks, DestroyingTheFileSystemTakesItsBookmarks) {
  ASSERT_UZFS_OK(pool_->CreateBookmark("bp/other@o1", "bp/other#o"));
  ASSERT_UZFS_OK(pool_->CreateBookmark("bp/fs@s1", "bp/fs#f"));
  EXPECT_EQ(BookmarksRefcount(*pool_), 2u);
  ASSERT_UZFS_OK(pool_->DestroySnapshots({"bp/other@o1"}));
  ASSERT_UZFS_OK(pool_->DestroyDataset("bp/other"));
  EXPECT_EQ(BookmarksRefcount(*pool_), 1u);
  ASSERT_NO_FATAL_FAILURE(Reimport());
  EXPECT_EQ(BookmarksRefcount(*pool_), 1u);
}

TEST_F(PoolBookmarks, BadBookmarksAreRefusedAndChangeNothing) {
  ASSERT_UZFS_OK(pool_->CreateBookmark("bp/fs@s1", "bp/fs#m"));
  struct Case {
    std::string source, bookmark, message;
  };
  const Case cases[] = {
      {"bp/fs@s2", "bp/fs#m", "cannot create bookmark 'bp/fs#m': bookmark exists"},
      {"bp/other@o1", "bp/fs#x", "source and bookmark must be of the same file system"},
      {"bp/fs@nope", "bp/fs#x", "snapshot 'bp/fs@nope' does not exist"},
      {"bp/fs#nope", "bp/fs#x", "source 'bp/fs#nope' does not exist"},
      {"bp/fs@s1", "bp/fs#a/b", "invalid character '/' in name"},
      {"bp/fs@s1", "bp/fs#", "empty component"},
      {"bp/fs@s1", "bp/fs", "missing '#' delimiter"},
  };
  for (const Case& k : cases) {
    Status s = pool_->CreateBookmark(k.source, k.bookmark);
    EXPECT_FALSE(s.ok()) << k.bookmark;
    EXPECT_NE(s.message().find(k.message), std::string::npos) << s.message();
  }
  Status gone = pool_->DestroyBookmarks({"bp/fs#m", "bp/fs#nope"});
  EXPECT_TRUE(gone.IsNotFound());
  EXPECT_EQ(gone.message(), "cannot destroy 'bp/fs#nope': bookmark does not exist");
  EXPECT_EQ(pool_->Bookmarks("bp/fs")->size(), 1u) << "all or nothing";
  EXPECT_EQ(BookmarksRefcount(*pool_), 1u);
  ASSERT_NO_FATAL_FAILURE(Reimport());
}

TEST(PoolBookmarksOldPool, APoolWithoutTheFeatureRefusesBookmarks) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(dir.path(), "d0", 128ull << 20));
  PoolCreateOptions o = pooltest::V23();
  o.version = 28;
  auto p = Pool::Create("old", layout, o);
  ASSERT_UZFS_OK(p.status());
  ASSERT_UZFS_OK((*p)->Snapshot({"old@s"}));
  Status s = (*p)->CreateBookmark("old@s", "old#m");
  EXPECT_EQ(s.code(), Code::kNotSupported);
  EXPECT_NE(s.message().find("bookmark feature not enabled"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace uzfs
