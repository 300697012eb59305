// Crash consistency of bookmarks: a child process imports the pool and
// loops: it writes to bp/fs, makes bookmarks bp/fs#m and bp/fs#n of
// bp/fs@s1, then destroys both, until the parent kills it (SIGKILL) at a
// random moment. After every kill the parent checks the pool as the kill
// left it:
//   - our zdb -b (ExpectConsistent): nothing leaked or doubly allocated;
//   - each bookmark there is whole: s1's guid, creation txg and time;
//   - the bookmarks feature counts bp/fs exactly when it has bookmarks;
//   - after "B+" (both made) both are there, after "X+" (destroyed) none.
// Stress mode: UZFS_STRESS_ITERATIONS=100 build/tests/pool_bookmarks_crash_test
#include <unistd.h>

#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "tests/dsl/crash_test_util.h"
#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

int Iterations() {
  if (const char* e = std::getenv("UZFS_STRESS_ITERATIONS"); e && *e) return std::max(1, std::atoi(e));
  return 8;
}

uint64_t BookmarksRefcount(Pool& p) {
  auto fs = p.Features();
  if (!fs.ok()) return UINT64_MAX;
  for (const PoolFeatureState& f : *fs) {
    if (f.guid == "com.delphix:bookmarks") return f.refcount;
  }
  return UINT64_MAX;
}

TEST(PoolBookmarksCrash, KilledWhileMakingAndDestroyingBookmarks) {
  test::TempDir dir;
  Pool::SnapshotEntry s1;
  uint64_t s1_guid = 0;
  std::vector<uint64_t> objs;
  {
    PoolLayout layout;
    layout.data.push_back(pooltest::Leaf(dir.path(), "d0", 128ull << 20));
    PoolCreateOptions o = pooltest::V23();
    o.version = 5000;
    auto p = Pool::Create("bp", layout, o);
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->CreateDataset("bp/fs", {}));
    pooltest::WriteObjects(**p, "bp/fs", 2, 100000, 1, &objs);
    ASSERT_UZFS_OK((*p)->Snapshot({"bp/fs@s1"}));
    auto e = (*p)->FindSnapshot("bp/fs@s1");
    ASSERT_UZFS_OK(e.status());
    s1 = *e;
    auto all = (*p)->ListDatasets(true);
    ASSERT_UZFS_OK(all.status());
    for (const DatasetInfo& i : *all) {
      if (i.name == "bp/fs@s1") s1_guid = i.ds.guid;
    }
    ASSERT_UZFS_OK((*p)->Export());
  }

  const uint64_t base = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  int made_seen = 0;
  for (int iter = 0; iter < Iterations(); iter++) {
    SCOPED_TRACE("iteration " + std::to_string(iter) + ", seed " + std::to_string(base));
    std::mt19937_64 rng(base + static_cast<uint64_t>(iter));
    auto child = [&](int report) {
      auto p = pooltest::ImportFrom(dir.path(), "bp");
      if (!p.ok()) _exit(2);
      Pool& pool = **p;
      auto os = pool.Objset("bp/fs");
      if (!os.ok()) _exit(2);
      for (uint64_t round = 0;; round++) {
        // Something for each txg to write besides the bookmarks.
        auto tx = pool.Begin(1 << 16);
        if (!tx.ok()) _exit(2);
        if (!(*os)->Write(objs[0], 0, test::RandomBytes(4096, round), tx->txg()).ok()) _exit(2);
        tx->Commit();
        auto have = pool.Bookmarks("bp/fs");
        if (!have.ok()) _exit(2);
        if (have->empty()) {
          crashtest::Report(report, "B");
          if (!pool.CreateBookmark("bp/fs@s1", "bp/fs#m").ok()) _exit(2);
          if (!pool.CreateBookmark("bp/fs#m", "bp/fs#n").ok()) _exit(2);
          crashtest::Report(report, "B+");
        }
        crashtest::Report(report, "X");
        // (A kill between the two creates left one.)
        const std::vector<std::string> names =
            have->size() == 1 ? std::vector<std::string>{have->front().name} : std::vector<std::string>{"bp/fs#m", "bp/fs#n"};
        if (!pool.DestroyBookmarks(names).ok()) _exit(2);
        crashtest::Report(report, "X+");
      }
    };
    std::string text, last;
    const bool wait = iter == Iterations() - 1 && made_seen == 0;
    ASSERT_NO_FATAL_FAILURE(
        crashtest::RunAndKill(child, 20 + static_cast<int>(rng() % 400), wait ? "B+" : "", &text, &last));
    if (text.find("B+") != std::string::npos) made_seen++;

    ASSERT_NO_FATAL_FAILURE(pooltest::ExpectConsistent(dir.path(), "bp"));
    auto p = pooltest::ImportFrom(dir.path(), "bp");
    ASSERT_UZFS_OK(p.status());
    auto marks = (*p)->Bookmarks("bp/fs");
    ASSERT_UZFS_OK(marks.status());
    for (const Pool::Bookmark& b : *marks) {
      EXPECT_EQ(b.guid, s1_guid) << b.name;
      EXPECT_EQ(b.creation_txg, s1.creation_txg) << b.name;
      EXPECT_EQ(b.creation_time, s1.creation_time) << b.name;
    }
    EXPECT_EQ(BookmarksRefcount(**p), marks->empty() ? 0u : 1u) << "last report: " << last;
    if (last == "B+") {
      EXPECT_EQ(marks->size(), 2u) << "both were made";
    }
    if (last == "X+") {
      EXPECT_TRUE(marks->empty()) << "they were destroyed";
    }
    ASSERT_UZFS_OK((*p)->Export());
    p->reset();
    ASSERT_NO_FATAL_FAILURE(pooltest::ExpectConsistent(dir.path(), "bp"));
  }
  EXPECT_GT(made_seen, 0);
}

}  // namespace
}  // namespace uzfs
