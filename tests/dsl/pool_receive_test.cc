// Pool::BeginReceive / EndReceive / AbortReceive / DestroyStaleReceives
// (pool_receive.cc), driven as `zfs receive` drives them: streams made by
// SendObjset from a source file system's snapshots, applied with
// ApplySubstream (tests/dsl/receive_test_util.h). What is checked: the received file system holds every
// byte, its snapshots carry the stream's guids, and its space accounting
// is the source's to the byte (same blocks, same layout); an incremental
// refuses a target changed since its snapshot unless forced; a clone
// stream makes a clone of the received origin, its space the source
// clone's to the byte; an aborted receive and one a closed pool left
// behind leave nothing; our zdb finds the pool consistent after each.
#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/dsl/receive_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

using namespace pooltest;

const DatasetInfo* FindDs(const std::vector<DatasetInfo>& v, const std::string& name) {
  for (const DatasetInfo& d : v) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

class PoolReceiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PoolLayout layout;
    layout.data.push_back(Leaf(dir_.path(), "d0", 256ull << 20));
    PoolCreateOptions o = V23();
    o.version = 5000;
    auto p = Pool::Create("rp", layout, o);
    ASSERT_UZFS_OK(p.status());
    pool_ = std::move(*p);
    ASSERT_UZFS_OK(pool_->CreateDataset("rp/src", {}));
    WriteObjects(*pool_, "rp/src", 6, 300000, 1, &objs_);
    ASSERT_UZFS_OK(pool_->Snapshot({"rp/src@s1"}));
    // s2: two objects rewritten, two more made.
    auto os = pool_->Objset("rp/src");
    ASSERT_UZFS_OK(os.status());
    {
      auto tx = pool_->Begin(1 << 20);
      ASSERT_UZFS_OK(tx.status());
      ASSERT_UZFS_OK((*os)->Write(objs_[1], 0, test::RandomBytes(300000, 101), tx->txg()));
      ASSERT_UZFS_OK((*os)->Write(objs_[4], 0, test::RandomBytes(300000, 104), tx->txg()));
      tx->Commit();
    }
    WriteObjects(*pool_, "rp/src", 2, 300000, 200, &later_);
    ASSERT_UZFS_OK(pool_->Snapshot({"rp/src@s2"}));
  }

  uint64_t Guid(const std::string& name) { return receivetest::SnapshotGuid(*pool_, name); }

  std::vector<uint8_t> Stream(const std::string& to, const std::string& from = "") {
    auto s = receivetest::SnapshotStream(*pool_, to, from);
    EXPECT_UZFS_OK(s.status());
    return s.ok() ? *s : std::vector<uint8_t>{};
  }

  Status Receive(const std::string& fs, std::span<const uint8_t> bytes, bool force = false) {
    return receivetest::ReceiveBytes(*pool_, fs, bytes, force);
  }

  // The file system names the pool lists (hidden ones never appear).
  std::vector<std::string> Names() {
    auto all = pool_->ListDatasets(true);
    EXPECT_UZFS_OK(all.status());
    std::vector<std::string> n;
    for (const DatasetInfo& d : *all) n.push_back(d.name);
    return n;
  }

  void ExportAndCheck() {
    ASSERT_UZFS_OK(pool_->Export());
    pool_.reset();
    ExpectConsistent(dir_.path(), "rp");
  }

  test::TempDir dir_;
  std::unique_ptr<Pool> pool_;
  std::vector<uint64_t> objs_, later_;
};

TEST_F(PoolReceiveTest, FullThenIncrementalMatchTheSourceToTheByte) {
  const std::vector<uint8_t> full = Stream("rp/src@s1"), inc = Stream("rp/src@s2", "rp/src@s1");
  ASSERT_UZFS_OK(Receive("rp/dst", full));
  ExpectObjects(*pool_, "rp/dst", objs_, 300000, 1);
  EXPECT_EQ(Guid("rp/dst@s1"), Guid("rp/src@s1"));
  ASSERT_UZFS_OK(Receive("rp/dst", inc));
  ExpectObjects(*pool_, "rp/dst", later_, 300000, 200);
  std::vector<uint8_t> got(300000);
  auto os = pool_->ObjsetForRead("rp/dst");
  ASSERT_UZFS_OK(os.status());
  ASSERT_UZFS_OK((*os)->Read(objs_[4], 0, got));
  EXPECT_EQ(got, test::RandomBytes(300000, 104));
  EXPECT_EQ(Guid("rp/dst@s2"), Guid("rp/src@s2"));

  // The same blocks: the same space, dataset by dataset.
  auto all = pool_->ListDatasets(true);
  ASSERT_UZFS_OK(all.status());
  for (const char* suffix : {"", "@s1", "@s2"}) {
    const DatasetInfo* s = FindDs(*all, std::string("rp/src") + suffix);
    const DatasetInfo* d = FindDs(*all, std::string("rp/dst") + suffix);
    ASSERT_NE(s, nullptr);
    ASSERT_NE(d, nullptr) << suffix;
    EXPECT_EQ(d->ds.referenced_bytes, s->ds.referenced_bytes) << suffix;
    EXPECT_EQ(d->ds.unique_bytes, s->ds.unique_bytes) << suffix;
    EXPECT_EQ(d->deadlist_bytes, s->deadlist_bytes) << suffix;
  }
  const DatasetInfo* s = FindDs(*all, "rp/src");
  const DatasetInfo* d = FindDs(*all, "rp/dst");
  EXPECT_EQ(d->dir.used_bytes, s->dir.used_bytes);
  EXPECT_EQ(d->dir.used_breakdown, s->dir.used_breakdown);
  EXPECT_EQ(Names(), (std::vector<std::string>{"rp", "rp/dst", "rp/dst@s1", "rp/dst@s2", "rp/src", "rp/src@s1",
                                               "rp/src@s2"}));
  ExportAndCheck();
}

TEST_F(PoolReceiveTest, ACloneStreamMakesACloneOfTheReceivedOrigin) {
  // rp/cl: a clone of rp/src@s1 with objects of its own, snapshot c1.
  ASSERT_UZFS_OK(pool_->Clone("rp/src@s1", "rp/cl", {}));
  std::vector<uint64_t> own;
  WriteObjects(*pool_, "rp/cl", 3, 200000, 500, &own);
  ASSERT_UZFS_OK(pool_->Snapshot({"rp/cl@c1"}));
  const std::vector<uint8_t> full = Stream("rp/src@s1"), clone = Stream("rp/cl@c1", "rp/src@s1");
  ASSERT_UZFS_OK(Receive("rp/dst", full));

  // The origin must be the stream's: another snapshot is refused.
  ASSERT_UZFS_OK(pool_->Snapshot({"rp/dst@other"}));
  Status s = receivetest::ReceiveBytes(*pool_, "rp/dcl", clone, false, {}, "rp/dst@other");
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.message(), "cannot receive new filesystem stream: local origin for clone rp/dcl@c1 does not exist "
                         "('rp/dst@other' is another snapshot by that name)");
  // A target that exists is refused.
  s = receivetest::ReceiveBytes(*pool_, "rp/src", clone, false, {}, "rp/dst@s1");
  EXPECT_EQ(s.code(), Code::kExists);
  // Cut short: nothing is left, the origin has no clone.
  std::vector<uint8_t> cut(clone.begin(), clone.begin() + static_cast<long>(clone.size() / 2));
  EXPECT_EQ(receivetest::ReceiveBytes(*pool_, "rp/dcl", cut, false, {}, "rp/dst@s1").code(), Code::kCorruption);
  {
    auto all = pool_->ListDatasets(true);
    ASSERT_UZFS_OK(all.status());
    EXPECT_EQ(FindDs(*all, "rp/dcl"), nullptr);
    EXPECT_TRUE(FindDs(*all, "rp/dst@s1")->clones.empty());
  }

  ASSERT_UZFS_OK(receivetest::ReceiveBytes(*pool_, "rp/dcl", clone, false, {}, "rp/dst@s1"));
  ExpectObjects(*pool_, "rp/dcl", objs_, 300000, 1);
  ExpectObjects(*pool_, "rp/dcl", own, 200000, 500);
  EXPECT_EQ(Guid("rp/dcl@c1"), Guid("rp/cl@c1"));
  auto all = pool_->ListDatasets(true);
  ASSERT_UZFS_OK(all.status());
  const DatasetInfo* d = FindDs(*all, "rp/dcl");
  const DatasetInfo* c = FindDs(*all, "rp/cl");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->origin, "rp/dst@s1");
  EXPECT_EQ(FindDs(*all, "rp/dst@s1")->clones, std::vector<std::string>{"rp/dcl"});
  // The same blocks over the same origin: the same space.
  EXPECT_EQ(d->ds.referenced_bytes, c->ds.referenced_bytes);
  EXPECT_EQ(d->ds.unique_bytes, c->ds.unique_bytes);
  EXPECT_EQ(d->dir.used_breakdown, c->dir.used_breakdown);
  const DatasetInfo* ds = FindDs(*all, "rp/dcl@c1");
  const DatasetInfo* cs = FindDs(*all, "rp/cl@c1");
  EXPECT_EQ(ds->ds.referenced_bytes, cs->ds.referenced_bytes);
  EXPECT_EQ(ds->ds.unique_bytes, cs->ds.unique_bytes);
  ExportAndCheck();
}

TEST_F(PoolReceiveTest, AChangedTargetIsRefusedUnlessForced) {
  const std::vector<uint8_t> full = Stream("rp/src@s1"), inc = Stream("rp/src@s2", "rp/src@s1");
  ASSERT_UZFS_OK(Receive("rp/dst", full));
  std::vector<uint64_t> mine;
  WriteObjects(*pool_, "rp/dst", 1, 50000, 300, &mine);
  ASSERT_UZFS_OK(pool_->Sync());
  Status s = Receive("rp/dst", inc);
  EXPECT_EQ(s.code(), Code::kBusy);
  EXPECT_EQ(s.message(), "cannot receive incremental stream: destination rp/dst has been modified\n"
                         "since most recent snapshot");
  ExpectObjects(*pool_, "rp/dst", mine, 50000, 300);
  ASSERT_UZFS_OK(Receive("rp/dst", inc, /*force=*/true));
  ExpectObjects(*pool_, "rp/dst", later_, 300000, 200);
  // (The object made there took the number the stream's first new object
  // has: its bytes are the stream's now, checked above.)
  if (std::find(later_.begin(), later_.end(), mine[0]) == later_.end()) {
    auto os = pool_->ObjsetForRead("rp/dst");
    ASSERT_UZFS_OK(os.status());
    auto dn = (*os)->GetDnode(mine[0]);
    EXPECT_TRUE(!dn.ok() || dn->IsFree()) << "the change was not rolled back";
  }
  ExportAndCheck();
}

TEST_F(PoolReceiveTest, AForcedFullStreamReplacesAFileSystemWithoutSnapshots) {
  const std::vector<uint8_t> full = Stream("rp/src@s1");
  ASSERT_UZFS_OK(pool_->CreateDataset("rp/over", {{"com.uzfs:note", "kept"}}));
  ASSERT_UZFS_OK(pool_->CreateDataset("rp/over/child", {}));
  std::vector<uint64_t> mine;
  WriteObjects(*pool_, "rp/over", 3, 200000, 400, &mine);
  ASSERT_UZFS_OK(pool_->Sync());
  Status s = Receive("rp/over", full);
  EXPECT_EQ(s.message(), "cannot receive new filesystem stream: destination 'rp/over' exists\n"
                         "must specify -F to overwrite it");
  ASSERT_UZFS_OK(Receive("rp/over", full, /*force=*/true));
  ExpectObjects(*pool_, "rp/over", objs_, 300000, 1);
  // Its properties and children stay; the same space as a new file
  // system that received the stream (what it held before is freed).
  auto props = pool_->LocalProps("rp/over");
  ASSERT_UZFS_OK(props.status());
  EXPECT_EQ((*props)["com.uzfs:note"], "kept");
  ASSERT_UZFS_OK(Receive("rp/dst", full));
  auto all = pool_->ListDatasets(true);
  ASSERT_UZFS_OK(all.status());
  const DatasetInfo* o = FindDs(*all, "rp/over");
  const DatasetInfo* d = FindDs(*all, "rp/dst");
  ASSERT_NE(FindDs(*all, "rp/over/child"), nullptr);
  ASSERT_NE(FindDs(*all, "rp/over@s1"), nullptr);
  EXPECT_EQ(o->ds.referenced_bytes, d->ds.referenced_bytes);
  EXPECT_EQ(o->dir.used_breakdown[static_cast<int>(DdUsed::kHead)],
            d->dir.used_breakdown[static_cast<int>(DdUsed::kHead)]);
  EXPECT_EQ(o->dir.used_breakdown[static_cast<int>(DdUsed::kSnap)], 0u);
  // Now it has a snapshot: a full stream cannot replace it.
  s = Receive("rp/over", Stream("rp/src@s2"), /*force=*/true);
  EXPECT_EQ(s.message(), "cannot receive new filesystem stream: destination has snapshots (eg. rp/over@s1)\n"
                         "must destroy them to overwrite it");
  ExportAndCheck();
}

TEST_F(PoolReceiveTest, AbortedAndInterruptedReceivesLeaveNothing) {
  const std::vector<uint8_t> full = Stream("rp/src@s1"), inc = Stream("rp/src@s2", "rp/src@s1");
  ASSERT_UZFS_OK(Receive("rp/dst", full));
  // Cut short: the end record never comes.
  std::vector<uint8_t> cut(inc.begin(), inc.begin() + static_cast<long>(inc.size() / 2));
  EXPECT_EQ(Receive("rp/dst", cut).code(), Code::kCorruption);
  std::vector<uint8_t> cut_full(full.begin(), full.begin() + static_cast<long>(full.size() / 2));
  EXPECT_EQ(Receive("rp/new", cut_full).code(), Code::kCorruption);
  EXPECT_EQ(Names(), (std::vector<std::string>{"rp", "rp/dst", "rp/dst@s1", "rp/src", "rp/src@s1", "rp/src@s2"}));

  // A receive begun and never ended (the daemon died): the pool is closed
  // with the hidden datasets in it, and the next import's cleanup takes
  // them; then the same streams apply.
  Pool::ReceiveTarget inc_t, full_t;
  inc_t.fs = "rp/dst";
  inc_t.snap = "s2";
  inc_t.from_guid = Guid("rp/src@s1");
  full_t.fs = "rp/new";
  full_t.snap = "s1";
  ASSERT_UZFS_OK(pool_->BeginReceive(inc_t).status());
  ASSERT_UZFS_OK(pool_->BeginReceive(full_t).status());
  EXPECT_EQ(pool_->BeginReceive(inc_t).status().code(), Code::kBusy) << "two receives into one file system";
  EXPECT_EQ(pool_->BeginReceive(full_t).status().code(), Code::kBusy);
  EXPECT_EQ(pool_->DestroyDataset("rp/new").code(), Code::kBusy) << "a receive is writing it";
  ASSERT_UZFS_OK(pool_->Sync());
  pool_.reset();
  auto p = ImportFrom(dir_.path(), "rp");
  ASSERT_UZFS_OK(p.status());
  pool_ = std::move(*p);
  auto removed = pool_->DestroyStaleReceives();
  ASSERT_UZFS_OK(removed.status());
  EXPECT_EQ(*removed, 2u);
  ASSERT_UZFS_OK(Receive("rp/dst", inc));
  ASSERT_UZFS_OK(Receive("rp/new", full));
  ExpectObjects(*pool_, "rp/new", objs_, 300000, 1);
  ExportAndCheck();
}

}  // namespace
}  // namespace uzfs
