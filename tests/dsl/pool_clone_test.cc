// Clones, promote, holds, snapshot renames and written@ (pool_clone.cc,
// pool_promote.cc, pool_holds.cc, pool_snapshot_rename.cc,
// pool_written.cc) on versions 23 and 5000. A clone reads as
// its origin did, is charged only for what it writes, leaves its origin
// and the origin's file system as they were, and keeps its origin from
// being destroyed until it is gone; our zdb finds no leak at each step,
// and with everything destroyed the pool's allocated space is the empty
// pool's again. Holds keep a snapshot until released; renames move names
// only. Bad input changes nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <ostream>

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

void ExpectAbout(uint64_t got, int n, const std::string& what) { snaptest::ExpectAbout(got, n, kObj, what); }

using snaptest::Allocated;

// Exports, checks with our zdb, imports again.
void Reopen(const std::filesystem::path& dir, std::unique_ptr<Pool>* p) {
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  ASSERT_NO_FATAL_FAILURE(pooltest::ExpectConsistent(dir, "sp"));
  auto again = pooltest::ImportFrom(dir, "sp");
  ASSERT_UZFS_OK(again.status());
  *p = std::move(*again);
}

// The new pool's allocated space, exported and imported again to measure.
void EmptyAllocated(const std::filesystem::path& dir, std::unique_ptr<Pool>* p, uint64_t* empty_alloc) {
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  *empty_alloc = Allocated(dir);
  auto imported = pooltest::ImportFrom(dir, "sp");
  ASSERT_UZFS_OK(imported.status());
  *p = std::move(*imported);
}

std::unique_ptr<Pool> NewPool(const std::filesystem::path& dir, uint64_t version) {
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(dir, "d0"));
  PoolCreateOptions o = pooltest::V23();
  o.version = version;
  auto p = Pool::Create("sp", layout, o);
  EXPECT_UZFS_OK(p.status());
  return p.ok() ? std::move(*p) : nullptr;
}

class PoolCloneTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(PoolCloneTest, ACloneSharesItsOriginAndKeepsItUntilDestroyed) {
  test::TempDir dir;
  std::unique_ptr<Pool> p = NewPool(dir.path(), GetParam());
  ASSERT_NE(p, nullptr);
  uint64_t empty_alloc = 0;
  ASSERT_NO_FATAL_FAILURE(EmptyAllocated(dir.path(), &p, &empty_alloc));

  ASSERT_UZFS_OK(p->CreateDataset("sp/fs", {}));
  std::vector<uint64_t> objs;
  pooltest::WriteObjects(*p, "sp/fs", 8, kObj, 100, &objs);
  ASSERT_UZFS_OK(p->Sync());
  ASSERT_UZFS_OK(p->Snapshot({"sp/fs@s1"}));
  ASSERT_NO_FATAL_FAILURE(snaptest::Overwrite(*p, "sp/fs", {objs[0], objs[1]}, kObj, 200));
  ASSERT_UZFS_OK(p->Sync());
  ASSERT_UZFS_OK(p->Snapshot({"sp/fs@s2"}));
  ASSERT_NO_FATAL_FAILURE(snaptest::Overwrite(*p, "sp/fs", {objs[2]}, kObj, 300));
  ASSERT_UZFS_OK(p->Sync());

  // A clone of the newer snapshot reads as it was taken and costs nothing.
  ASSERT_UZFS_OK(p->Clone("sp/fs@s2", "sp/c", {{"com.uzfs:note", "clone"}}));
  auto l = p->ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  const DatasetInfo* c = Find(*l, "sp/c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->origin, "sp/fs@s2");
  EXPECT_EQ(c->dir.used_bytes, 0u);
  EXPECT_EQ(c->ds.referenced_bytes, Find(*l, "sp/fs@s2")->ds.referenced_bytes);
  EXPECT_EQ(Find(*l, "sp/fs@s2")->clones, std::vector<std::string>{"sp/c"});
  EXPECT_EQ(Find(*l, "sp/fs@s2")->ds.num_children, 2u);
  auto local = p->LocalProps("sp/c");
  ASSERT_UZFS_OK(local.status());
  EXPECT_EQ(local->at("com.uzfs:note"), "clone");
  std::vector<uint64_t> first2 = {objs[0], objs[1]};
  ASSERT_NO_FATAL_FAILURE(pooltest::ExpectObjects(*p, "sp/c", first2, kObj, 200));
  ASSERT_NO_FATAL_FAILURE(pooltest::ExpectObjects(*p, "sp/c", {objs[2]}, kObj, 102));
  ASSERT_NO_FATAL_FAILURE(Reopen(dir.path(), &p));

  // What the clone writes is its own: its dir is charged for it alone; the
  // origin and its file system read as before.
  ASSERT_NO_FATAL_FAILURE(snaptest::Overwrite(*p, "sp/c", {objs[3], objs[4]}, kObj, 400));
  ASSERT_UZFS_OK(p->Sync());
  l = p->ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  ExpectAbout(Find(*l, "sp/c")->dir.used_bytes, 2, "the clone's two new objects");
  EXPECT_EQ(Find(*l, "sp/c")->dir.used_breakdown[static_cast<int>(DdUsed::kSnap)], 0u)
      << "what it overwrote of the origin is the origin's";
  ASSERT_NO_FATAL_FAILURE(pooltest::ExpectObjects(*p, "sp/fs", {objs[3], objs[4]}, kObj, 103));
  EXPECT_EQ(snaptest::ReadAt(*p, Find(*l, "sp/fs@s2")->ds.bp, objs[3], kObj), test::RandomBytes(kObj, 103));

  // A snapshot and a clone of the clone.
  ASSERT_UZFS_OK(p->Snapshot({"sp/c@cs"}));
  ASSERT_UZFS_OK(p->Clone("sp/c@cs", "sp/fs/cc", {}));
  ASSERT_NO_FATAL_FAILURE(pooltest::ExpectObjects(*p, "sp/fs/cc", {objs[3], objs[4]}, kObj, 400));
  ASSERT_NO_FATAL_FAILURE(Reopen(dir.path(), &p));

  // The origin stays while it has clones; the snapshot before it may go
  // (its range closes in the clones' deadlists too).
  Status s = p->DestroySnapshots({"sp/fs@s2"});
  EXPECT_EQ(s.code(), Code::kExists);
  EXPECT_EQ(s.message(),
            "cannot destroy 'sp/fs@s2': snapshot has dependent clones\nuse '-R' to destroy the following datasets:"
            "\nsp/c");
  ASSERT_UZFS_OK(p->DestroySnapshots({"sp/fs@s1"}));
  ASSERT_NO_FATAL_FAILURE(snaptest::Overwrite(*p, "sp/c", {objs[5]}, kObj, 500));
  ASSERT_UZFS_OK(p->Sync());
  ASSERT_NO_FATAL_FAILURE(Reopen(dir.path(), &p));
  EXPECT_EQ(p->DestroyDataset("sp/c").code(), Code::kBusy) << "its own snapshot keeps it";

  // Everything destroyed, clones first: the pool is as empty as it was.
  ASSERT_UZFS_OK(p->DestroyDataset("sp/fs/cc"));
  ASSERT_UZFS_OK(p->DestroySnapshots({"sp/c@cs"}));
  ASSERT_UZFS_OK(p->DestroyDataset("sp/c"));
  l = p->ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  EXPECT_TRUE(Find(*l, "sp/fs@s2")->clones.empty());
  EXPECT_EQ(Find(*l, "sp/fs@s2")->ds.num_children, 1u);
  ASSERT_UZFS_OK(p->DestroySnapshots({"sp/fs@s2"}));
  ASSERT_UZFS_OK(p->DestroyDataset("sp/fs"));
  ASSERT_UZFS_OK(p->Export());
  p.reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
  const uint64_t end_alloc = Allocated(dir.path());
  EXPECT_LE(end_alloc, empty_alloc + 256 * 1024) << "empty " << empty_alloc << ", now " << end_alloc;
}

TEST_P(PoolCloneTest, HoldsKeepASnapshotUntilReleased) {
  test::TempDir dir;
  std::unique_ptr<Pool> p = NewPool(dir.path(), GetParam());
  ASSERT_NE(p, nullptr);
  ASSERT_UZFS_OK(p->CreateDataset("sp/fs", {}));
  ASSERT_UZFS_OK(p->CreateDataset("sp/fs/kid", {}));
  ASSERT_UZFS_OK(p->Snapshot({"sp/fs@a", "sp/fs/kid@a"}));
  ASSERT_UZFS_OK(p->Hold({"sp/fs@a", "sp/fs/kid@a"}, "keep"));
  ASSERT_UZFS_OK(p->Hold({"sp/fs@a"}, "backup"));
  Status s = p->Hold({"sp/fs/kid@a", "sp/fs@a"}, "backup");
  EXPECT_EQ(s.code(), Code::kExists);
  EXPECT_EQ(s.message(), "cannot hold snapshot 'sp/fs@a': tag already exists on this dataset");
  ASSERT_NO_FATAL_FAILURE(Reopen(dir.path(), &p));
  auto h = p->Holds("sp/fs@a");
  ASSERT_UZFS_OK(h.status());
  EXPECT_EQ(h->size(), 2u);
  EXPECT_TRUE(h->count("keep") && h->count("backup"));
  EXPECT_EQ(p->Holds("sp/fs/kid@a")->size(), 1u) << "the failed hold of two placed none";
  auto l = p->ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  EXPECT_EQ(Find(*l, "sp/fs@a")->userrefs, 2u);

  s = p->DestroySnapshots({"sp/fs/kid@a"});
  EXPECT_EQ(s.code(), Code::kBusy);
  EXPECT_EQ(s.message(), "cannot destroy snapshot sp/fs/kid@a: dataset is busy");
  s = p->Release({"sp/fs@a"}, "nope");
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.message(), "cannot release hold from snapshot 'sp/fs@a': no such tag on this dataset");
  EXPECT_EQ(p->Hold({"sp/fs@zz"}, "t").message(), "cannot open 'sp/fs@zz': dataset does not exist");
  EXPECT_EQ(p->Hold({"sp/fs@a"}, "").code(), Code::kInvalidArgument);
  ASSERT_UZFS_OK(p->Release({"sp/fs@a", "sp/fs/kid@a"}, "keep"));
  ASSERT_UZFS_OK(p->DestroySnapshots({"sp/fs/kid@a"}));
  EXPECT_EQ(p->DestroySnapshots({"sp/fs@a"}).code(), Code::kBusy);
  ASSERT_UZFS_OK(p->Release({"sp/fs@a"}, "backup"));
  ASSERT_UZFS_OK(p->DestroySnapshots({"sp/fs@a"}));
  ASSERT_UZFS_OK(p->Export());
  p.reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
}

TEST_P(PoolCloneTest, SnapshotRenamesMoveNamesOnly) {
  test::TempDir dir;
  std::unique_ptr<Pool> p = NewPool(dir.path(), GetParam());
  ASSERT_NE(p, nullptr);
  ASSERT_UZFS_OK(p->CreateDataset("sp/fs", {}));
  ASSERT_UZFS_OK(p->CreateDataset("sp/fs/a", {}));
  ASSERT_UZFS_OK(p->CreateDataset("sp/fs/b", {}));
  ASSERT_UZFS_OK(p->Snapshot({"sp/fs@s", "sp/fs/a@s"}));
  ASSERT_UZFS_OK(p->Snapshot({"sp/fs/b@t"}));
  auto l = p->ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  const uint64_t guid = Find(*l, "sp/fs@s")->ds.guid;

  Status s = p->RenameSnapshot("sp/fs@s", "sp/fs/a@x", false);
  EXPECT_EQ(s.message(), "cannot rename to 'sp/fs/a@x': snapshots must be part of same dataset");
  s = p->RenameSnapshot("sp/fs@s", "sp/fs@b/ad", false);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(p->RenameSnapshot("sp/fs@nope", "sp/fs@x", false).code(), Code::kNotFound);
  ASSERT_UZFS_OK(p->Snapshot({"sp/fs/a@x"}));
  s = p->RenameSnapshot("sp/fs@s", "sp/fs@x", true);
  EXPECT_EQ(s.code(), Code::kExists);
  EXPECT_EQ(s.message(), "cannot rename to 'sp/fs/a@x': dataset already exists");
  ASSERT_UZFS_OK(p->DestroySnapshots({"sp/fs/a@x"}));

  ASSERT_UZFS_OK(p->RenameSnapshot("sp/fs@s", "sp/fs@x", true));
  ASSERT_NO_FATAL_FAILURE(Reopen(dir.path(), &p));
  l = p->ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  EXPECT_EQ(Find(*l, "sp/fs@s"), nullptr);
  ASSERT_NE(Find(*l, "sp/fs@x"), nullptr);
  EXPECT_EQ(Find(*l, "sp/fs@x")->ds.guid, guid) << "the same snapshot, renamed";
  EXPECT_NE(Find(*l, "sp/fs/a@x"), nullptr);
  EXPECT_NE(Find(*l, "sp/fs/b@t"), nullptr) << "one without the name is left alone";
  ASSERT_UZFS_OK(p->RenameSnapshot("sp/fs@x", "sp/fs@y", false));
  l = p->ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  EXPECT_NE(Find(*l, "sp/fs@y"), nullptr);
  EXPECT_NE(Find(*l, "sp/fs/a@x"), nullptr) << "without -r only the one named";
  ASSERT_UZFS_OK(p->Export());
  p.reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
}

// The space of each directory, as zfs list shows it.
struct DirSpace {
  uint64_t used = 0, snap = 0, head = 0, comp = 0;
  bool operator==(const DirSpace&) const = default;
};
std::ostream& operator<<(std::ostream& o, const DirSpace& d) {
  return o << "used " << d.used << " snap " << d.snap << " head " << d.head << " comp " << d.comp;
}
DirSpace SpaceOf(const std::vector<DatasetInfo>& l, const std::string& name) {
  const DatasetInfo* i = Find(l, name);
  EXPECT_NE(i, nullptr) << name;
  if (i == nullptr) return {};
  return DirSpace{i->dir.used_bytes, i->dir.used_breakdown[static_cast<int>(DdUsed::kSnap)],
                  i->dir.used_breakdown[static_cast<int>(DdUsed::kHead)], i->dir.compressed_bytes};
}

TEST_P(PoolCloneTest, PromoteHandsTheHistoryOverAndBack) {
  test::TempDir dir;
  std::unique_ptr<Pool> p = NewPool(dir.path(), GetParam());
  ASSERT_NE(p, nullptr);
  uint64_t empty_alloc = 0;
  ASSERT_NO_FATAL_FAILURE(EmptyAllocated(dir.path(), &p, &empty_alloc));
  ASSERT_UZFS_OK(p->CreateDataset("sp/fs", {}));
  std::vector<uint64_t> objs;
  pooltest::WriteObjects(*p, "sp/fs", 8, kObj, 100, &objs);
  ASSERT_UZFS_OK(p->Sync());
  ASSERT_UZFS_OK(p->Snapshot({"sp/fs@s1"}));
  ASSERT_NO_FATAL_FAILURE(snaptest::Overwrite(*p, "sp/fs", {objs[0], objs[1]}, kObj, 200));
  ASSERT_UZFS_OK(p->Sync());
  ASSERT_UZFS_OK(p->Snapshot({"sp/fs@s2"}));
  ASSERT_NO_FATAL_FAILURE(snaptest::Overwrite(*p, "sp/fs", {objs[2]}, kObj, 300));
  ASSERT_UZFS_OK(p->Sync());
  ASSERT_UZFS_OK(p->Snapshot({"sp/fs@s3"}));
  ASSERT_NO_FATAL_FAILURE(snaptest::Overwrite(*p, "sp/fs", {objs[6]}, kObj, 350));
  ASSERT_UZFS_OK(p->CreateDataset("sp/other", {}));
  ASSERT_UZFS_OK(p->Clone("sp/fs@s2", "sp/other/c", {}));
  ASSERT_NO_FATAL_FAILURE(snaptest::Overwrite(*p, "sp/other/c", {objs[0], objs[3], objs[4]}, kObj, 400));
  ASSERT_UZFS_OK(p->Sync());
  ASSERT_UZFS_OK(p->Snapshot({"sp/other/c@cs"}));
  ASSERT_NO_FATAL_FAILURE(snaptest::Overwrite(*p, "sp/other/c", {objs[5]}, kObj, 500));
  ASSERT_UZFS_OK(p->Sync());
  Status bad = p->Promote("sp/fs");
  EXPECT_EQ(bad.message(), "cannot promote 'sp/fs': not a cloned filesystem");
  EXPECT_EQ(p->Promote("sp/nope").code(), Code::kNotFound);
  ASSERT_NO_FATAL_FAILURE(Reopen(dir.path(), &p));
  auto before = p->ListDatasets(true);
  ASSERT_UZFS_OK(before.status());
  const DirSpace fs0 = SpaceOf(*before, "sp/fs"), c0 = SpaceOf(*before, "sp/other/c"),
                 other0 = SpaceOf(*before, "sp/other");

  // A quota above the clone that the moving space would exceed refuses it.
  ASSERT_UZFS_OK(p->SetProp("sp/other", "quota", std::to_string(other0.used + (1 << 20))));
  const Status over = p->Promote("sp/other/c");
  EXPECT_EQ(over.code(), Code::kNoSpace);
  EXPECT_EQ(over.message(), "cannot promote 'sp/other/c': out of space");
  ASSERT_UZFS_OK(p->SetProp("sp/other", "quota", "none"));

  ASSERT_UZFS_OK(p->Promote("sp/other/c"));
  auto l = p->ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  for (const char* gone : {"sp/fs@s1", "sp/fs@s2"}) EXPECT_EQ(Find(*l, gone), nullptr) << gone;
  for (const char* there : {"sp/other/c@s1", "sp/other/c@s2", "sp/other/c@cs", "sp/fs@s3"}) {
    EXPECT_NE(Find(*l, there), nullptr) << there;
  }
  EXPECT_EQ(Find(*l, "sp/fs")->origin, "sp/other/c@s2");
  EXPECT_EQ(Find(*l, "sp/other/c")->origin, "");
  EXPECT_EQ(Find(*l, "sp/other/c@s2")->clones, std::vector<std::string>{"sp/fs"});
  const DirSpace fs1 = SpaceOf(*l, "sp/fs"), c1 = SpaceOf(*l, "sp/other/c");
  EXPECT_EQ(fs1.used + c1.used, fs0.used + c0.used) << "space only moves";
  EXPECT_EQ(SpaceOf(*l, "sp/other").used, other0.used - c0.used + c1.used) << "the parent follows its child";
  ExpectAbout(fs1.head, 2, "fs alone: its versions of objects 2 and 6");
  EXPECT_LT(fs1.snap, kObj / 2) << "what fs's snapshots hold of their own data was born by s2: the clone's now";
  ExpectAbout(c1.used, 14, "the clone: s1's eight, s2's two, cs's three, its own one");
  ExpectAbout(Find(*l, "sp/other/c@s2")->ds.unique_bytes, 1, "what cs killed of s2's own: object 0");
  ASSERT_NO_FATAL_FAILURE(pooltest::ExpectObjects(*p, "sp/other/c", {objs[5]}, kObj, 500));
  ASSERT_NO_FATAL_FAILURE(pooltest::ExpectObjects(*p, "sp/fs", {objs[2]}, kObj, 300));
  EXPECT_EQ(snaptest::ReadAt(*p, Find(*l, "sp/other/c@s1")->ds.bp, objs[0], kObj), test::RandomBytes(kObj, 100));
  ASSERT_NO_FATAL_FAILURE(Reopen(dir.path(), &p));

  // Back again: every directory's space is what it was.
  ASSERT_UZFS_OK(p->Promote("sp/fs"));
  l = p->ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  EXPECT_EQ(SpaceOf(*l, "sp/fs"), fs0);
  EXPECT_EQ(SpaceOf(*l, "sp/other/c"), c0);
  EXPECT_EQ(Find(*l, "sp/other/c")->origin, "sp/fs@s2");
  EXPECT_NE(Find(*l, "sp/fs@s1"), nullptr);
  ASSERT_NO_FATAL_FAILURE(Reopen(dir.path(), &p));

  // Promoted once more, the old origin file system goes first, then the
  // rest: the space adds up to nothing at the end.
  ASSERT_UZFS_OK(p->Promote("sp/other/c"));
  ASSERT_UZFS_OK(p->DestroySnapshots({"sp/fs@s3"}));
  ASSERT_UZFS_OK(p->DestroyDataset("sp/fs"));
  ASSERT_NO_FATAL_FAILURE(Reopen(dir.path(), &p));
  ASSERT_UZFS_OK(p->DestroySnapshots({"sp/other/c@s1", "sp/other/c@s2"}));
  l = p->ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  ExpectAbout(SpaceOf(*l, "sp/other/c").snap, 1, "cs alone: object 5 as cloned");
  ASSERT_UZFS_OK(p->DestroySnapshots({"sp/other/c@cs"}));
  l = p->ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  EXPECT_EQ(SpaceOf(*l, "sp/other/c").snap, 0u);
  EXPECT_EQ(SpaceOf(*l, "sp/other/c").used, Find(*l, "sp/other/c")->ds.referenced_bytes);
  ASSERT_UZFS_OK(p->DestroyDataset("sp/other/c"));
  ASSERT_UZFS_OK(p->Export());
  p.reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
  const uint64_t end_alloc = Allocated(dir.path());
  EXPECT_LE(end_alloc, empty_alloc + 256 * 1024) << "empty " << empty_alloc << ", now " << end_alloc;
}

TEST_P(PoolCloneTest, PromoteRefusesAConflictingSnapshotName) {
  test::TempDir dir;
  std::unique_ptr<Pool> p = NewPool(dir.path(), GetParam());
  ASSERT_NE(p, nullptr);
  ASSERT_UZFS_OK(p->CreateDataset("sp/fs", {}));
  ASSERT_UZFS_OK(p->Snapshot({"sp/fs@a"}));
  ASSERT_UZFS_OK(p->Snapshot({"sp/fs@b"}));
  ASSERT_UZFS_OK(p->Clone("sp/fs@b", "sp/c", {}));
  ASSERT_UZFS_OK(p->Snapshot({"sp/c@a"}));
  const Status s = p->Promote("sp/c");
  EXPECT_EQ(s.code(), Code::kExists);
  EXPECT_EQ(s.message(), "cannot promote 'sp/c': conflicting snapshot 'a' from parent 'sp/fs'");
  auto l = p->ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  EXPECT_NE(Find(*l, "sp/fs@a"), nullptr) << "nothing moved";
  EXPECT_EQ(Find(*l, "sp/c")->origin, "sp/fs@b");
  ASSERT_UZFS_OK(p->RenameSnapshot("sp/c@a", "sp/c@a2", false));
  ASSERT_UZFS_OK(p->Promote("sp/c"));
  ASSERT_UZFS_OK(p->Export());
  p.reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
}

TEST_P(PoolCloneTest, WrittenSinceAnEarlierSnapshot) {
  test::TempDir dir;
  std::unique_ptr<Pool> p = NewPool(dir.path(), GetParam());
  ASSERT_NE(p, nullptr);
  ASSERT_UZFS_OK(p->CreateDataset("sp/fs", {}));
  std::vector<uint64_t> objs;
  pooltest::WriteObjects(*p, "sp/fs", 6, kObj, 100, &objs);
  ASSERT_UZFS_OK(p->Sync());
  ASSERT_UZFS_OK(p->Snapshot({"sp/fs@s1"}));
  ASSERT_NO_FATAL_FAILURE(snaptest::Overwrite(*p, "sp/fs", {objs[0], objs[1]}, kObj, 200));
  ASSERT_UZFS_OK(p->Sync());
  ASSERT_UZFS_OK(p->Snapshot({"sp/fs@s2"}));
  ASSERT_NO_FATAL_FAILURE(snaptest::Overwrite(*p, "sp/fs", {objs[0], objs[2]}, kObj, 300));
  ASSERT_UZFS_OK(p->Sync());
  ASSERT_UZFS_OK(p->Clone("sp/fs@s2", "sp/c", {}));
  ASSERT_NO_FATAL_FAILURE(snaptest::Overwrite(*p, "sp/c", {objs[4]}, kObj, 400));
  ASSERT_UZFS_OK(p->Sync());
  auto w = [&](const std::string& snap, const std::string& ds) {
    auto r = p->SpaceWritten(snap, ds);
    EXPECT_UZFS_OK(r.status());
    return r.ok() ? *r : 0;
  };
  ExpectAbout(w("sp/fs@s1", "sp/fs"), 3, "objects 0, 1 and 2 are newer than s1 in the head");
  ExpectAbout(w("sp/fs@s2", "sp/fs"), 2, "objects 0 and 2 are newer than s2");
  ExpectAbout(w("sp/fs@s1", "sp/fs@s2"), 2, "s2's own objects 0 and 1");
  ExpectAbout(w("sp/fs@s1", "sp/c"), 3, "through the origin: s2's 0 and 1, the clone's 4");
  auto l = p->ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  const DatasetInfo* fs = Find(*l, "sp/fs");
  const uint64_t written = fs->ds.referenced_bytes + fs->deadlist_bytes - fs->prev_referenced;
  EXPECT_EQ(w("sp/fs@s2", "sp/fs"), written) << "written@latest is written";
  EXPECT_EQ(p->SpaceWritten("sp/fs@s2", "sp/fs@s1").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(p->SpaceWritten("sp/c@nope", "sp/c").status().code(), Code::kNotFound);
}

// Bplists (23) and keyed deadlists with the shared empty bpobj (5000);
// version 28's keyed deadlists without it are judged by OpenZFS's zdb in
// pool_clone_compat_test.
INSTANTIATE_TEST_SUITE_P(Versions, PoolCloneTest, ::testing::Values(23, 5000),
                         [](const ::testing::TestParamInfo<uint64_t>& i) { return "v" + std::to_string(i.param); });

TEST(PoolClone, BadInputChangesNothing) {
  test::TempDir dir;
  std::unique_ptr<Pool> p = NewPool(dir.path(), 5000);
  ASSERT_NE(p, nullptr);
  ASSERT_UZFS_OK(p->CreateDataset("sp/fs", {}));
  ASSERT_UZFS_OK(p->Snapshot({"sp/fs@s"}));
  auto before = p->ListDatasets(true);
  ASSERT_UZFS_OK(before.status());
  struct Case {
    std::string origin, target;
    std::vector<std::pair<std::string, std::string>> props;
    Code code;
    std::string message;
  };
  const Case cases[] = {
      {"sp/fs@nope", "sp/c", {}, Code::kNotFound, "cannot open 'sp/fs@nope': dataset does not exist"},
      {"sp/nope@s", "sp/c", {}, Code::kNotFound, "cannot open 'sp/nope@s': dataset does not exist"},
      {"sp/fs", "sp/c", {}, Code::kInvalidArgument, "cannot open 'sp/fs': missing '@' delimiter in snapshot name"},
      {"sp/fs@s", "sp/fs", {}, Code::kExists, "cannot create 'sp/fs': dataset already exists"},
      {"sp/fs@s", "sp/no/c", {}, Code::kNotFound, "cannot create 'sp/no/c': parent does not exist"},
      {"sp/fs@s", "other/c", {}, Code::kInvalidArgument, "cannot create 'other/c': source and target pools differ"},
      {"sp/fs@s", "sp/c@x", {}, Code::kInvalidArgument,
       "cannot create 'sp/c@x': snapshot delimiter '@' is not expected here"},
      {"sp/fs@s", "sp/c", {{"casesensitivity", "mixed"}}, Code::kInvalidArgument,
       "cannot create 'sp/c': property 'casesensitivity' is set when a file system is created; a clone has its "
       "origin's"},
      {"sp/fs@s", "sp/c", {{"compression", "nonsense"}}, Code::kInvalidArgument, ""},
  };
  for (const Case& k : cases) {
    const Status s = p->Clone(k.origin, k.target, k.props);
    EXPECT_EQ(s.code(), k.code) << k.origin << " -> " << k.target << ": " << s.ToString();
    if (!k.message.empty()) {
      EXPECT_EQ(s.message(), k.message);
    }
  }
  auto after = p->ListDatasets(true);
  ASSERT_UZFS_OK(after.status());
  EXPECT_EQ(after->size(), before->size());
  EXPECT_EQ(Find(*after, "sp/fs@s")->ds.num_children, 1u);
  ASSERT_UZFS_OK(p->Export());
  p.reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
}

TEST(PoolClone, HoldsNeedVersion18) {
  test::TempDir dir;
  std::unique_ptr<Pool> p = NewPool(dir.path(), 15);
  ASSERT_NE(p, nullptr);
  ASSERT_UZFS_OK(p->CreateDataset("sp/fs", {}));
  ASSERT_UZFS_OK(p->Snapshot({"sp/fs@s"}));
  const Status s = p->Hold({"sp/fs@s"}, "t");
  EXPECT_EQ(s.code(), Code::kNotSupported);
  EXPECT_EQ(s.message(), "cannot hold snapshot 'sp/fs@s': pool must be upgraded");
}

}  // namespace
}  // namespace uzfs
