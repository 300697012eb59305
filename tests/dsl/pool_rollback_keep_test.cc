// Rolling back while keeping the later state (pool_rollback_keep.cc), on
// every version uzfs writes: the file system reads as the snapshot again
// and keeps only it and the older ones; the later snapshots, a clone of
// one of them and everything written before the call (synced or not) are
// the kept file system's, a clone of the snapshot; the space moves
// exactly (the two directories add up to what the file system used, each
// breakdown adds up, the kept head's usage is its written@snapshot); both
// go on writing and snapshotting; our zdb finds no leak, before and after
// everything is destroyed; the dd_clones lists name the heads where they
// are now. A file system that is a clone keeps its origin's list right
// and its refreservation charged. Bad names change nothing.
#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/dsl/snapshot_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl_format/dsl_phys.h"
#include "zfs/inspect/pool_reader.h"

namespace uzfs {
namespace {

constexpr size_t kObj = 128 * 1024;

using snaptest::Find;

uint64_t Part(const DatasetInfo& i, DdUsed u) { return i.dir.used_breakdown[static_cast<int>(u)]; }

void ExpectBreakdownAddsUp(const DatasetInfo& i) {
  uint64_t sum = 0;
  for (uint64_t v : i.dir.used_breakdown) sum += v;
  EXPECT_EQ(sum, i.dir.used_bytes) << i.name;
}

// The values of a MOS ZAP (dd_clones: dataset objects).
std::set<uint64_t> ZapValues(PoolReader& r, uint64_t zap) {
  std::set<uint64_t> out;
  if (zap == 0) return out;
  auto z = r.MosZap(zap);
  EXPECT_UZFS_OK(z.status());
  if (!z.ok()) return out;
  auto entries = z->List();
  EXPECT_UZFS_OK(entries.status());
  if (!entries.ok()) return out;
  for (const ZapEntry& e : *entries) out.insert(e.value());
  return out;
}

// The dd_clones of the directory of snapshot object `origin`.
std::set<uint64_t> OriginDirClones(PoolReader& r, uint64_t origin) {
  auto dn = r.MosObject(origin);
  EXPECT_UZFS_OK(dn.status());
  if (!dn.ok()) return {};
  auto ds = DecodeDslDataset(dn->bonus);
  EXPECT_UZFS_OK(ds.status());
  if (!ds.ok()) return {};
  auto ddn = r.MosObject(ds->dir_obj);
  EXPECT_UZFS_OK(ddn.status());
  if (!ddn.ok()) return {};
  auto dir = DecodeDslDir(ddn->bonus);
  EXPECT_UZFS_OK(dir.status());
  return dir.ok() ? ZapValues(r, dir->clones) : std::set<uint64_t>{};
}

class PoolRollbackKeepTest : public ::testing::TestWithParam<uint64_t> {
 protected:
  void SetUp() override {
    PoolLayout layout;
    layout.data.push_back(pooltest::Leaf(dir_.path(), "d0"));
    PoolCreateOptions o = pooltest::V23();
    o.version = GetParam();
    auto p = Pool::Create("sp", layout, o);
    ASSERT_UZFS_OK(p.status());
    p_ = std::move(*p);
    ASSERT_UZFS_OK(p_->CreateDataset("sp/fs", {}));
  }
  void Overwrite(const std::vector<uint64_t>& objs, uint64_t seed, const std::string& ds = "sp/fs") {
    snaptest::Overwrite(*p_, ds, objs, kObj, seed);
  }
  Result<std::vector<DatasetInfo>> List() { return p_->ListDatasets(true); }

  test::TempDir dir_;
  std::unique_ptr<Pool> p_;
};

TEST_P(PoolRollbackKeepTest, LaterSnapshotsAndChangesBecomeAClone) {
  std::vector<uint64_t> objs, added;
  pooltest::WriteObjects(*p_, "sp/fs", 6, kObj, 10, &objs);
  ASSERT_UZFS_OK(p_->Sync());
  ASSERT_UZFS_OK(p_->Snapshot({"sp/fs@old"}));
  ASSERT_NO_FATAL_FAILURE(Overwrite({objs[0], objs[1], objs[2]}, 100));
  ASSERT_UZFS_OK(p_->Sync());
  ASSERT_UZFS_OK(p_->Snapshot({"sp/fs@a"}));
  ASSERT_NO_FATAL_FAILURE(Overwrite({objs[0], objs[3]}, 200));
  pooltest::WriteObjects(*p_, "sp/fs", 2, kObj, 300, &added);
  ASSERT_UZFS_OK(p_->Sync());
  ASSERT_UZFS_OK(p_->Snapshot({"sp/fs@b"}));
  ASSERT_UZFS_OK(p_->Clone("sp/fs@b", "sp/cb", {}));
  ASSERT_NO_FATAL_FAILURE(Overwrite({objs[4]}, 400));
  ASSERT_UZFS_OK(p_->Sync());
  ASSERT_NO_FATAL_FAILURE(Overwrite({objs[5]}, 550));

  // Bad input changes nothing.
  EXPECT_EQ(p_->RollbackKeep("sp/fs@nope", "").status().code(), Code::kNotFound);
  EXPECT_EQ(p_->RollbackKeep("sp/fs@old", "sp/cb").status().code(), Code::kExists);
  EXPECT_EQ(p_->RollbackKeep("sp/fs@old", "sp/fs/inside").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(p_->RollbackKeep("sp/fs@old", "other/x").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(p_->RollbackKeep("sp/fs@old", "sp/bad@name").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(p_->RollbackKeep("sp/fs@old", "sp/no/parent").status().code(), Code::kNotFound);
  ASSERT_UZFS_OK(p_->Sync());
  auto before = List();
  ASSERT_UZFS_OK(before.status());
  EXPECT_NE(Find(*before, "sp/fs@b"), nullptr);
  const uint64_t used_before = Find(*before, "sp/fs")->dir.used_bytes;
  const uint64_t head_unique = Find(*before, "sp/fs")->ds.unique_bytes;
  const uint64_t head_ref = Find(*before, "sp/fs")->ds.referenced_bytes;
  const uint64_t old_head = Find(*before, "sp/fs")->ds_obj;
  // Not synced before the call; the same size as what it replaces.
  ASSERT_NO_FATAL_FAILURE(Overwrite({objs[5]}, 500));

  auto kept = p_->RollbackKeep("sp/fs@old", "");
  ASSERT_UZFS_OK(kept.status());
  EXPECT_TRUE(kept->starts_with("sp/fs-rollback-")) << *kept;
  const std::string k = *kept;

  // The file system is its snapshot again, with only it.
  pooltest::ExpectObjects(*p_, "sp/fs", objs, kObj, 10);
  // The kept one is the file system as it was, the unsynced write too.
  pooltest::ExpectObjects(*p_, k, {objs[0], objs[3]}, kObj, 200);
  pooltest::ExpectObjects(*p_, k, {objs[1], objs[2]}, kObj, 101);
  pooltest::ExpectObjects(*p_, k, {objs[4]}, kObj, 400);
  pooltest::ExpectObjects(*p_, k, {objs[5]}, kObj, 500);
  pooltest::ExpectObjects(*p_, k, added, kObj, 300);
  pooltest::ExpectObjects(*p_, "sp/cb", added, kObj, 300);

  auto l = List();
  ASSERT_UZFS_OK(l.status());
  EXPECT_EQ(Find(*l, "sp/fs@a"), nullptr);
  EXPECT_EQ(Find(*l, "sp/fs@b"), nullptr);
  const DatasetInfo* fs = Find(*l, "sp/fs");
  const DatasetInfo* old = Find(*l, "sp/fs@old");
  const DatasetInfo* kh = Find(*l, k);
  ASSERT_NE(fs, nullptr);
  ASSERT_NE(old, nullptr);
  ASSERT_NE(kh, nullptr);
  ASSERT_NE(Find(*l, k + "@a"), nullptr);
  ASSERT_NE(Find(*l, k + "@b"), nullptr);
  EXPECT_EQ(snaptest::ReadAt(*p_, Find(*l, k + "@a")->ds.bp, objs[0], kObj), test::RandomBytes(kObj, 100));
  EXPECT_EQ(kh->origin, "sp/fs@old");
  EXPECT_EQ(old->clones, std::vector<std::string>{k});
  EXPECT_EQ(Find(*l, "sp/cb")->origin, k + "@b");
  EXPECT_EQ(fs->ds.bp, old->ds.bp);
  EXPECT_EQ(fs->ds.unique_bytes, 0u);
  EXPECT_EQ(old->ds.unique_bytes, 0u);
  EXPECT_EQ(old->ds.num_children, 2u);
  EXPECT_EQ(kh->ds_obj, old_head) << "the old head is the kept one's";
  EXPECT_NE(fs->ds_obj, old_head);
  // The space moved, exactly. (The unsynced rewrite replaced a block born
  // after the newest snapshot: used and unique changed as referenced did.)
  const int64_t grew = static_cast<int64_t>(kh->ds.referenced_bytes) - static_cast<int64_t>(head_ref);
  EXPECT_EQ(static_cast<int64_t>(kh->ds.unique_bytes), static_cast<int64_t>(head_unique) + grew);
  EXPECT_EQ(static_cast<int64_t>(fs->dir.used_bytes + kh->dir.used_bytes), static_cast<int64_t>(used_before) + grew);
  EXPECT_EQ(fs->dir.used_bytes, fs->ds.referenced_bytes) << "no space held by snapshots alone";
  if (fs->dir.flags & kDdFlagUsedBreakdown) {
    EXPECT_EQ(Part(*fs, DdUsed::kSnap), 0u);
    ExpectBreakdownAddsUp(*fs);
    ExpectBreakdownAddsUp(*kh);
    auto written = p_->SpaceWritten("sp/fs@old", k);
    ASSERT_UZFS_OK(written.status());
    EXPECT_EQ(Part(*kh, DdUsed::kHead), *written);
    EXPECT_GT(Part(*kh, DdUsed::kSnap), 0u) << "what @b holds that the head overwrote";
  }

  // Both go on.
  ASSERT_NO_FATAL_FAILURE(Overwrite({objs[1]}, 600));
  ASSERT_NO_FATAL_FAILURE(Overwrite({objs[2]}, 700, k));
  ASSERT_UZFS_OK(p_->Sync());
  ASSERT_UZFS_OK(p_->Snapshot({"sp/fs@c", k + "@c"}));
  const uint64_t new_head = fs->ds_obj, fs_origin = fs->dir.origin_obj;
  ASSERT_UZFS_OK(p_->Export());
  p_.reset();
  pooltest::ExpectConsistent(dir_.path(), "sp");
  if (GetParam() >= 26) {
    // dd_clones: the file system's origin's directory lists its new head,
    // not the old one; the file system's directory lists the kept head.
    auto r = PoolReader::Open(dir_.path().string(), "sp");
    ASSERT_UZFS_OK(r.status());
    EXPECT_EQ(OriginDirClones(**r, fs_origin).count(new_head), 1u);
    EXPECT_EQ(OriginDirClones(**r, fs_origin).count(old_head), 0u);
    auto fsref = (*r)->ResolveDataset("sp/fs");
    ASSERT_UZFS_OK(fsref.status());
    EXPECT_EQ(ZapValues(**r, fsref->dir.clones).count(old_head), 1u);
  }
  auto p = pooltest::ImportFrom(dir_.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  p_ = std::move(*p);
  pooltest::ExpectObjects(*p_, "sp/fs", {objs[1]}, kObj, 600);
  pooltest::ExpectObjects(*p_, k, {objs[2]}, kObj, 700);
  pooltest::ExpectObjects(*p_, k, {objs[5]}, kObj, 500);

  // Everything goes, in the order the dependencies allow.
  ASSERT_UZFS_OK(p_->DestroyDataset("sp/cb"));
  ASSERT_UZFS_OK(p_->DestroySnapshots({k + "@a", k + "@b", k + "@c"}));
  ASSERT_UZFS_OK(p_->DestroyDataset(k));
  auto l2 = List();
  ASSERT_UZFS_OK(l2.status());
  EXPECT_TRUE(Find(*l2, "sp/fs@old")->clones.empty());
  ASSERT_UZFS_OK(p_->DestroySnapshots({"sp/fs@old", "sp/fs@c"}));
  auto l3 = List();
  ASSERT_UZFS_OK(l3.status());
  fs = Find(*l3, "sp/fs");
  EXPECT_EQ(fs->dir.used_bytes, fs->ds.referenced_bytes);
  ASSERT_UZFS_OK(p_->DestroyDataset("sp/fs"));
  ASSERT_UZFS_OK(p_->Export());
  p_.reset();
  pooltest::ExpectConsistent(dir_.path(), "sp");
}

TEST_P(PoolRollbackKeepTest, ToTheNewestSnapshotKeepsTheChangesAlone) {
  std::vector<uint64_t> objs;
  pooltest::WriteObjects(*p_, "sp/fs", 3, kObj, 10, &objs);
  ASSERT_UZFS_OK(p_->Sync());
  ASSERT_UZFS_OK(p_->Snapshot({"sp/fs@s"}));
  ASSERT_UZFS_OK(p_->CreateDataset("sp/fs/child", {}));
  ASSERT_NO_FATAL_FAILURE(Overwrite({objs[0]}, 100));
  ASSERT_UZFS_OK(p_->CreateDataset("sp/keep", {}));
  // A quota above the kept one that the moved space would exceed refuses
  // it, and nothing changes.
  ASSERT_UZFS_OK(p_->CreateDataset("sp/small", {{"quota", "64K"}}));
  auto refused = p_->RollbackKeep("sp/fs@s", "sp/small/mine");
  EXPECT_EQ(refused.status().code(), Code::kNoSpace);
  EXPECT_EQ(refused.status().message(), "cannot rollback to 'sp/fs@s': out of space");
  pooltest::ExpectObjects(*p_, "sp/fs", {objs[0]}, kObj, 100);
  auto kept = p_->RollbackKeep("sp/fs@s", "sp/keep/mine");
  ASSERT_UZFS_OK(kept.status());
  EXPECT_EQ(*kept, "sp/keep/mine");
  pooltest::ExpectObjects(*p_, "sp/fs", objs, kObj, 10);
  pooltest::ExpectObjects(*p_, "sp/keep/mine", {objs[0]}, kObj, 100);
  auto l = List();
  ASSERT_UZFS_OK(l.status());
  EXPECT_NE(Find(*l, "sp/fs/child"), nullptr) << "the file system keeps its children";
  EXPECT_EQ(Find(*l, "sp/keep/mine")->origin, "sp/fs@s");
  // Promoting the kept one turns it into the file system's history.
  ASSERT_UZFS_OK(p_->Promote("sp/keep/mine"));
  ASSERT_UZFS_OK(p_->Export());
  p_.reset();
  pooltest::ExpectConsistent(dir_.path(), "sp");
}

// A file system that is itself a clone, with a refreservation: its
// origin's directory lists its new head, the refreservation is charged in
// full again (refused when the pool has no room for it), and the origin's
// older snapshot, the kept one and the clone all destroy cleanly after.
// A pool's root file system cannot keep its state.
TEST_P(PoolRollbackKeepTest, ACloneWithARefreservation) {
  std::vector<uint64_t> objs;
  pooltest::WriteObjects(*p_, "sp/fs", 4, kObj, 10, &objs);
  ASSERT_UZFS_OK(p_->Sync());
  ASSERT_UZFS_OK(p_->Snapshot({"sp/fs@o1"}));
  ASSERT_NO_FATAL_FAILURE(Overwrite({objs[0]}, 50));
  ASSERT_UZFS_OK(p_->Sync());
  ASSERT_UZFS_OK(p_->Snapshot({"sp/fs@o2"}));
  ASSERT_UZFS_OK(p_->Clone("sp/fs@o2", "sp/c", {{"refreservation", "2M"}}));
  ASSERT_NO_FATAL_FAILURE(Overwrite({objs[1]}, 100, "sp/c"));
  ASSERT_UZFS_OK(p_->Sync());
  ASSERT_UZFS_OK(p_->Snapshot({"sp/c@s"}));
  ASSERT_NO_FATAL_FAILURE(Overwrite({objs[2]}, 200, "sp/c"));
  ASSERT_UZFS_OK(p_->Sync());
  EXPECT_EQ(p_->RollbackKeep("sp@none", "").status().code(), Code::kNotFound);
  ASSERT_UZFS_OK(p_->Snapshot({"sp@root"}));
  auto root = p_->RollbackKeep("sp@root", "");
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_NE(root.status().message().find("root file system"), std::string::npos) << root.status().message();

  auto before = List();
  ASSERT_UZFS_OK(before.status());
  const DatasetInfo* c = Find(*before, "sp/c");
  const uint64_t old_head = c->ds_obj, unique = c->ds.unique_bytes;
  const uint64_t refrsrv_before = Part(*c, DdUsed::kRefReserve);
  ASSERT_UZFS_OK(p_->RollbackKeep("sp/c@s", "sp/kept").status());
  pooltest::ExpectObjects(*p_, "sp/c", {objs[1]}, kObj, 100);
  pooltest::ExpectObjects(*p_, "sp/kept", {objs[2]}, kObj, 200);
  auto l = List();
  ASSERT_UZFS_OK(l.status());
  c = Find(*l, "sp/c");
  EXPECT_EQ(c->origin, "sp/fs@o2");
  EXPECT_EQ(Find(*l, "sp/kept")->origin, "sp/c@s");
  if (c->dir.flags & kDdFlagUsedBreakdown) {
    EXPECT_EQ(Part(*c, DdUsed::kRefReserve), refrsrv_before + std::min<uint64_t>(unique, 2 << 20));
    ExpectBreakdownAddsUp(*c);
  }
  const uint64_t origin = c->dir.origin_obj, new_head = c->ds_obj;
  ASSERT_UZFS_OK(p_->Export());
  p_.reset();
  pooltest::ExpectConsistent(dir_.path(), "sp");
  if (GetParam() >= 26) {
    auto r = PoolReader::Open(dir_.path().string(), "sp");
    ASSERT_UZFS_OK(r.status());
    const std::set<uint64_t> clones = OriginDirClones(**r, origin);
    EXPECT_EQ(clones.count(new_head), 1u);
    EXPECT_EQ(clones.count(old_head), 0u);
  }
  auto p = pooltest::ImportFrom(dir_.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  p_ = std::move(*p);
  // The origin's older snapshot goes (its key leaves the clones'
  // deadlists: every clone must be where dd_clones says), then the rest.
  ASSERT_UZFS_OK(p_->DestroySnapshots({"sp/fs@o1"}));
  ASSERT_UZFS_OK(p_->DestroyDataset("sp/kept"));
  ASSERT_UZFS_OK(p_->DestroySnapshots({"sp/c@s"}));
  ASSERT_UZFS_OK(p_->DestroyDataset("sp/c"));
  ASSERT_UZFS_OK(p_->DestroySnapshots({"sp/fs@o2", "sp@root"}));
  ASSERT_UZFS_OK(p_->Export());
  p_.reset();
  pooltest::ExpectConsistent(dir_.path(), "sp");
}

INSTANTIATE_TEST_SUITE_P(Versions, PoolRollbackKeepTest, ::testing::Values(23, 28, 5000),
                         [](const ::testing::TestParamInfo<uint64_t>& i) { return "v" + std::to_string(i.param); });

}  // namespace
}  // namespace uzfs
