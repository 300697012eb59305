// Async destroy (pool_async_destroy.cc): on a feature-flag pool a destroyed
// file system's tree is queued and freed a share per txg. The destroy is
// visible at once (the name is gone, the space is `freeing`, the feature
// active); the frees go on across txgs, an export and an import, resuming
// from the bookmark without freeing a block twice or leaking one (our zdb
// over the pool part way and at the end); a clone's destroy leaves its
// origin's blocks; with the feature disabled, or before version 5000, a
// destroy frees everything in its own txg as before.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/dsl/pool_test_util.h"
#include "tests/dsl/snapshot_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dmu/destroyed_tree_walk.h"
#include "zfs/dsl/pool.h"

namespace uzfs {
namespace {

constexpr size_t kObj = 256 * 1024;
constexpr int kObjects = 48;
constexpr const char* kGuid = "com.delphix:async_destroy";

using snaptest::Allocated;
using snaptest::Find;

uint64_t FeatureRefcount(Pool& p) {
  auto f = p.Features();
  EXPECT_UZFS_OK(f.status());
  if (!f.ok()) return UINT64_MAX;
  for (const PoolFeatureState& s : *f) {
    if (s.guid == kGuid) return s.enabled ? s.refcount : UINT64_MAX;
  }
  return UINT64_MAX;
}

Pool::AsyncDestroyState State(Pool& p) {
  auto st = p.AsyncDestroy();
  EXPECT_UZFS_OK(st.status());
  return st.ok() ? *st : Pool::AsyncDestroyState{};
}

// A pool in dir with "sp/fs" holding kObjects objects; what the pool had
// allocated before the file system was written.
struct Built {
  std::unique_ptr<Pool> pool;
  uint64_t empty_alloc = 0;
  uint64_t fs_used = 0;
  std::vector<uint64_t> objs;
};

Built Make(const test::TempDir& dir, PoolCreateOptions o) {
  Built s;
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(dir.path(), "d0"));
  auto p = Pool::Create("sp", layout, o);
  EXPECT_UZFS_OK(p.status());
  if (!p.ok()) return s;
  EXPECT_UZFS_OK((*p)->CreateDataset("sp/other", {}));
  EXPECT_UZFS_OK((*p)->Export());
  p->reset();
  s.empty_alloc = Allocated(dir.path());
  p = pooltest::ImportFrom(dir.path(), "sp");
  EXPECT_UZFS_OK(p.status());
  if (!p.ok()) return s;
  s.pool = std::move(*p);
  EXPECT_UZFS_OK(s.pool->CreateDataset("sp/fs", {}));
  pooltest::WriteObjects(*s.pool, "sp/fs", kObjects, kObj, 7, &s.objs);
  EXPECT_UZFS_OK(s.pool->Sync());
  auto l = s.pool->ListDatasets();
  EXPECT_UZFS_OK(l.status());
  if (l.ok()) s.fs_used = Find(*l, "sp/fs")->dir.used_bytes;
  return s;
}

PoolCreateOptions V5000() {
  PoolCreateOptions o = pooltest::V23();
  o.version = kFeatureVersion;
  return o;
}

TEST(PoolAsyncDestroy, TheDestroyReturnsAndTheTreeIsFreedAcrossTxgsAndAnImport) {
  test::TempDir dir;
  Built s = Make(dir, V5000());
  ASSERT_NE(s.pool, nullptr);
  Pool& p = *s.pool;
  EXPECT_EQ(FeatureRefcount(p), 0u) << "enabled on a new pool, not active";
  ASSERT_GT(s.fs_used, kObjects * kObj);

  // Held: nothing is freed yet, all of it is `freeing`.
  p.SetAsyncDestroyPace(0);
  ASSERT_UZFS_OK(p.DestroyDataset("sp/fs"));
  auto l = p.ListDatasets();
  ASSERT_UZFS_OK(l.status());
  EXPECT_EQ(Find(*l, "sp/fs"), nullptr);
  Pool::AsyncDestroyState st = State(p);
  EXPECT_EQ(st.queued, 1u);
  EXPECT_EQ(st.freeing, s.fs_used);
  EXPECT_EQ(st.leaked, 0u);
  EXPECT_EQ(FeatureRefcount(p), 1u);
  ASSERT_UZFS_OK(p.Sync());
  EXPECT_EQ(State(p).freeing, s.fs_used);

  // A few blocks per txg: part way, exported, checked by our zdb (the
  // tree's rest is still allocated, nothing else is).
  p.SetAsyncDestroyPace(8, /*background=*/false);
  for (int i = 0; i < 4; i++) ASSERT_UZFS_OK(p.Sync());
  st = State(p);
  EXPECT_EQ(st.queued, 1u);
  EXPECT_LT(st.freeing, s.fs_used);
  EXPECT_GT(st.freeing, 0u);
  p.SetAsyncDestroyPace(0, false);
  ASSERT_UZFS_OK(p.Export());
  s.pool.reset();
  pooltest::ExpectConsistent(dir.path(), "sp");

  // Imported, it goes on by itself to the end (the scan thread brings
  // the txgs; it may be done before this looks).
  auto q = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(q.status());
  ASSERT_UZFS_OK((*q)->WaitFreed());
  st = State(**q);
  EXPECT_EQ(st.queued, 0u);
  EXPECT_EQ(st.freeing, 0u);
  EXPECT_EQ(st.leaked, 0u);
  EXPECT_EQ(FeatureRefcount(**q), 0u);
  ASSERT_UZFS_OK((*q)->Export());
  q->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
  EXPECT_LT(Allocated(dir.path()), s.empty_alloc + kObj) << "every block of the file system is free again";
}

TEST(PoolAsyncDestroy, AClonesDestroyLeavesItsOriginWhole) {
  test::TempDir dir;
  Built s = Make(dir, V5000());
  ASSERT_NE(s.pool, nullptr);
  Pool& p = *s.pool;
  ASSERT_UZFS_OK(p.Snapshot({"sp/fs@s"}));
  ASSERT_UZFS_OK(p.Clone("sp/fs@s", "sp/c", {}));
  std::vector<uint64_t> half(s.objs.begin(), s.objs.begin() + kObjects / 2);
  ASSERT_NO_FATAL_FAILURE(snaptest::Overwrite(p, "sp/c", half, kObj, 900));
  ASSERT_UZFS_OK(p.Sync());
  p.SetAsyncDestroyPace(4);
  ASSERT_UZFS_OK(p.DestroyDataset("sp/c"));
  EXPECT_GT(State(p).freeing, 0u);
  ASSERT_UZFS_OK(p.WaitFreed());
  EXPECT_EQ(State(p).freeing, 0u);
  EXPECT_EQ(State(p).leaked, 0u) << "the queue's totals matched the blocks freed";
  auto l = p.ListDatasets(true);
  ASSERT_UZFS_OK(l.status());
  const BlockPtr snap_bp = Find(*l, "sp/fs@s")->ds.bp;
  for (int i : {0, kObjects / 2 - 1, kObjects - 1}) {
    EXPECT_EQ(snaptest::ReadAt(p, snap_bp, s.objs[i], kObj), test::RandomBytes(kObj, 7 + i)) << i;
  }
  ASSERT_UZFS_OK(p.Export());
  s.pool.reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
}

TEST(PoolAsyncDestroy, SeveralTreesQueueInOrder) {
  test::TempDir dir;
  Built s = Make(dir, V5000());
  ASSERT_NE(s.pool, nullptr);
  Pool& p = *s.pool;
  ASSERT_UZFS_OK(p.CreateDataset("sp/fs2", {}));
  std::vector<uint64_t> objs2;
  pooltest::WriteObjects(p, "sp/fs2", 8, kObj, 70, &objs2);
  ASSERT_UZFS_OK(p.Sync());
  p.SetAsyncDestroyPace(0);
  ASSERT_UZFS_OK(p.DestroyDataset("sp/fs"));
  ASSERT_UZFS_OK(p.DestroyDataset("sp/fs2"));
  EXPECT_EQ(State(p).queued, 2u);
  EXPECT_EQ(FeatureRefcount(p), 1u) << "one queue, one reference";
  p.SetAsyncDestroyPace(16);
  ASSERT_UZFS_OK(p.WaitFreed());
  EXPECT_EQ(State(p).queued, 0u);
  EXPECT_EQ(State(p).freeing, 0u);
  EXPECT_EQ(FeatureRefcount(p), 0u);
  ASSERT_UZFS_OK(p.Export());
  s.pool.reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
  EXPECT_LT(Allocated(dir.path()), s.empty_alloc + kObj);
}

// Without the feature (disabled at create, or a pool before feature
// flags) the destroy frees everything in its own txg.
TEST(PoolAsyncDestroy, WithoutTheFeatureTheDestroyFreesAtOnce) {
  for (const bool v28 : {false, true}) {
    SCOPED_TRACE(v28 ? "version 28" : "feature disabled");
    test::TempDir dir;
    PoolCreateOptions o = V5000();
    if (v28) {
      o.version = 28;
    } else {
      o.disabled_features.insert(kGuid);
    }
    Built s = Make(dir, o);
    ASSERT_NE(s.pool, nullptr);
    s.pool->SetAsyncDestroyPace(0);
    ASSERT_UZFS_OK(s.pool->DestroyDataset("sp/fs"));
    const Pool::AsyncDestroyState st = State(*s.pool);
    EXPECT_EQ(st.queued, 0u);
    EXPECT_EQ(st.freeing, 0u);
    ASSERT_UZFS_OK(s.pool->Export());
    s.pool.reset();
    pooltest::ExpectConsistent(dir.path(), "sp");
    EXPECT_LT(Allocated(dir.path()), s.empty_alloc + kObj);
  }
}

// The walk itself, over a real tree: a meta-dnode with indirect blocks
// (1500 objects), large dnodes, objects of several blocks. Walked a block
// at a time (paused at every pause point after a visit and resumed from
// the bookmark) it visits exactly the blocks of the whole walk, once each,
// in the same order; resumed from a meta-dnode block's bookmark (where
// OpenZFS may stop) it visits that block and all after it, none of the
// objects in it.
TEST(DestroyedTreeWalk, StepwiseWalksVisitEachBlockOnceInTheWholeWalksOrder) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(dir.path(), "d0"));
  auto p = Pool::Create("sp", layout, V5000());
  ASSERT_UZFS_OK(p.status());
  ASSERT_UZFS_OK((*p)->CreateDataset("sp/fs", {}));
  {
    auto os = (*p)->Objset("sp/fs");
    ASSERT_UZFS_OK(os.status());
    auto tx = (*p)->Begin(64 << 20);
    ASSERT_UZFS_OK(tx.status());
    for (int i = 0; i < 1500; i++) {
      ObjectProps op;
      op.block_size = 4096;
      if (i % 7 == 0) op.dnode_size = 1024;
      auto obj = (*os)->AllocateObject(op, tx->txg());
      ASSERT_UZFS_OK(obj.status());
      const size_t size = i % 50 == 0 ? 40000 : 1000;
      ASSERT_UZFS_OK((*os)->Write(*obj, 0, test::RandomBytes(size, i), tx->txg()));
    }
    tx->Commit();
  }
  ASSERT_UZFS_OK((*p)->Sync());
  auto l = (*p)->ListDatasets();
  ASSERT_UZFS_OK(l.status());
  const BlockPtr root = Find(*l, "sp/fs")->ds.bp;

  auto key = [](const BlockPtr& bp) { return std::make_pair(bp.dva[0].offset, bp.birth); };
  std::vector<std::pair<uint64_t, uint64_t>> whole;
  std::vector<BlockPtr> whole_bps;
  DestroyedTreeWalkOptions o;
  o.visit = [&](const BlockPtr& bp) {
    whole.push_back(key(bp));
    whole_bps.push_back(bp);
    return Status::Ok();
  };
  auto r = WalkDestroyedTree((*p)->zio(), root, o);
  ASSERT_UZFS_OK(r.status());
  ASSERT_TRUE(r->done);
  ASSERT_GT(whole.size(), 1500u / 32);

  std::vector<std::pair<uint64_t, uint64_t>> stepped;
  size_t this_round = 0;
  DestroyedTreeWalkOptions s;
  s.visit = [&](const BlockPtr& bp) {
    stepped.push_back(key(bp));
    this_round++;
    return Status::Ok();
  };
  s.should_pause = [&] { return this_round > 0; };
  int rounds = 0;
  for (;; rounds++) {
    ASSERT_LT(rounds, 100000);
    this_round = 0;
    auto step = WalkDestroyedTree((*p)->zio(), root, s);
    ASSERT_UZFS_OK(step.status());
    ASSERT_UZFS_OK(step->read_error);
    if (step->done) break;
    EXPECT_EQ(step->resume.objset, kDestroyedObjset);
    EXPECT_EQ(step->resume.level, 0);
    s.resume = step->resume;
  }
  EXPECT_GT(rounds, 1500);
  EXPECT_EQ(stepped, whole);

  // From meta-dnode block 2 (its objects done).
  size_t at = 0, meta_blocks = 0;
  for (; at < whole_bps.size(); at++) {
    if (whole_bps[at].type == dmu_ot::kDnode && whole_bps[at].level == 0 && meta_blocks++ == 2) break;
  }
  ASSERT_LT(at, whole_bps.size());
  std::vector<std::pair<uint64_t, uint64_t>> from_meta;
  DestroyedTreeWalkOptions m;
  m.resume = {kDestroyedObjset, 0, 0, 2};
  m.visit = [&](const BlockPtr& bp) {
    from_meta.push_back(key(bp));
    return Status::Ok();
  };
  auto rm = WalkDestroyedTree((*p)->zio(), root, m);
  ASSERT_UZFS_OK(rm.status());
  EXPECT_TRUE(rm->done);
  const std::vector<std::pair<uint64_t, uint64_t>> suffix(whole.begin() + static_cast<long>(at), whole.end());
  EXPECT_EQ(from_meta, suffix);
  ASSERT_UZFS_OK((*p)->Export());
}

TEST(DestroyedTreeWalk, BookmarksCompareAsOpenZfsOrdersThem) {
  const TreeBookmark obj5_blk3{kDestroyedObjset, 5, 0, 3};
  // A block of an earlier object, an earlier block of the same object.
  EXPECT_LT(CompareTreeBookmarks(32, 17, {kDestroyedObjset, 4, 0, 900}, 32, 0, obj5_blk3), 0);
  EXPECT_LT(CompareTreeBookmarks(32, 17, {kDestroyedObjset, 5, 0, 2}, 32, 0, obj5_blk3), 0);
  EXPECT_GT(CompareTreeBookmarks(32, 17, {kDestroyedObjset, 5, 0, 4}, 32, 0, obj5_blk3), 0);
  // An indirect block covering block 3 comes first at its first block.
  EXPECT_LT(CompareTreeBookmarks(32, 17, {kDestroyedObjset, 5, 1, 0}, 32, 0, {kDestroyedObjset, 5, 0, 0}), 0);
  // Meta-dnode block 1 (objects 32..63 of 16 KiB dnode blocks) sits at
  // object 32, above its objects' levels; the accounting objects last.
  EXPECT_GT(CompareTreeBookmarks(32, 14, {kDestroyedObjset, 0, 0, 1}, 32, 0, {kDestroyedObjset, 31, 0, 7}), 0);
  EXPECT_LT(CompareTreeBookmarks(32, 14, {kDestroyedObjset, 0, 0, 1}, 32, 0, {kDestroyedObjset, 32, 0, 0}), 0);
  EXPECT_GT(CompareTreeBookmarks(32, 17, {kDestroyedObjset, UINT64_MAX, 0, 0}, 32, 0, obj5_blk3), 0);
  EXPECT_EQ(CompareTreeBookmarks(32, 17, obj5_blk3, 32, 0, obj5_blk3), 0);
}

}  // namespace
}  // namespace uzfs
