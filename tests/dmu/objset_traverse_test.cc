// TraverseObjset: one walk visits every block of the tree once (compared
// with the blocks found by reading every object's tree directly), and a
// walk stopped at any point and started again from `next` visits exactly
// the blocks the first did not: the property a scrub that resumes after a
// pause, an export or a crash relies on.
#include "zfs/dmu/objset_traverse.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "tests/testutil/testutil.h"
#include "tests/zio/zio_test_util.h"
#include "zfs/dmu/object_reader.h"
#include "zfs/dmu/objset_writer.h"

namespace uzfs {
namespace {

using BlockKey = std::pair<uint32_t, uint64_t>;  // first DVA
BlockKey Key(const BlockPtr& bp) { return {bp.dva[0].vdev, bp.dva[0].offset}; }

class ObjsetTraverseTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kAsize = 96ull << 20;
  ObjsetTraverseTest() : target_(2, kAsize), alloc_(2, kAsize), zio_(target_, alloc_, ZioOptions{.threads = 2}) {}

  // An object set with objects of several shapes: one-block files, deep
  // trees with holes, spill blocks, enough objects for several dnode blocks.
  BlockPtr Build(int objects) {
    auto w = ObjsetWriter::Create(zio_, ObjsetType::kZfs, {});
    EXPECT_TRUE(w.ok());
    std::mt19937_64 rng(7);
    for (int i = 0; i < objects; i++) {
      ObjectProps p;
      p.block_size = (i % 3 == 0) ? 512 : 4096;
      p.indblkshift = 10;  // 8 pointers per indirect block: trees get deep fast
      p.bonustype = dmu_ot::kSa;
      p.bonuslen = (i % 7 == 0) ? 320 : 64;  // 320: one block pointer, room for a spill pointer
      auto obj = (*w)->AllocateObject(p, 1);
      EXPECT_TRUE(obj.ok());
      const uint64_t blocks = 1 + rng() % (i % 5 == 0 ? 90 : 3);
      for (uint64_t b = 0; b < blocks; b += 1 + rng() % 3) {
        EXPECT_UZFS_OK((*w)->Write(*obj, b * p.block_size, test::RandomBytes(p.block_size, rng()), 1));
      }
      if (i % 7 == 0) {
        EXPECT_UZFS_OK((*w)->SetBonus(*obj, dmu_ot::kSa, std::vector<uint8_t>(64), 1));
        EXPECT_UZFS_OK((*w)->SetSpill(*obj, test::RandomBytes(1024, rng()), 1));
      }
    }
    auto root = (*w)->Sync(1);
    EXPECT_TRUE(root.ok());
    return *root;
  }

  // Every block under root, found by reading each object's tree.
  std::set<BlockKey> Expected(const BlockPtr& root) {
    std::set<BlockKey> out{Key(root)};
    ObjectReader r(zio_);
    auto os = r.ReadObjset(root);
    EXPECT_TRUE(os.ok());
    auto tree = [&](const Dnode& dn, auto&& self, const BlockPtr& bp) -> void {
      if (bp.IsHole() || bp.embedded) return;
      out.insert(Key(bp));
      if (bp.level == 0) return;
      std::vector<uint8_t> raw(bp.lsize);
      ASSERT_UZFS_OK(zio_.Read(bp, raw));
      for (size_t i = 0; i < raw.size() / kBlockPtrSize; i++) {
        self(dn, self, DecodeBlockPtr(std::span<const uint8_t, kBlockPtrSize>(raw.data() + i * kBlockPtrSize,
                                                                            kBlockPtrSize)));
      }
    };
    for (const BlockPtr& bp : os->meta_dnode.blkptr) tree(os->meta_dnode, tree, bp);
    const uint64_t n = (os->meta_dnode.maxblkid + 1) * (os->meta_dnode.DataBlockSize() / kDnodeSlotSize);
    for (uint64_t obj = 1; obj < n; obj++) {
      auto dn = r.ReadDnode(os->meta_dnode, obj);
      if (!dn.ok() || dn->IsFree()) continue;
      for (const BlockPtr& bp : dn->blkptr) tree(*dn, tree, bp);
      if (dn->spill) out.insert(Key(*dn->spill));
    }
    return out;
  }

  test::MemTarget target_;
  test::SectorAllocator alloc_;
  Zio zio_;
};

TEST_F(ObjsetTraverseTest, OneWalkVisitsEveryBlockOnceInOrder) {
  const BlockPtr root = Build(150);
  std::multiset<BlockKey> seen;
  std::vector<std::pair<uint64_t, uint64_t>> objects;
  ObjsetTraverseOptions o;
  o.visit = [&](const TraversedBlock& b) { seen.insert(Key(b.bp)); };
  o.on_dnode = [&](uint64_t obj, const Dnode&) { objects.push_back({obj, 0}); };
  o.unreadable = [](const TraversedBlock&, const Status& s) { ADD_FAILURE() << s.ToString(); };
  auto r = TraverseObjset(zio_, root, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString(true);
  EXPECT_TRUE(r->done);
  const std::set<BlockKey> expected = Expected(root);
  EXPECT_EQ(seen.size(), expected.size()) << "a block visited twice or missed";
  EXPECT_EQ(std::set<BlockKey>(seen.begin(), seen.end()), expected);
  ASSERT_EQ(objects.size(), 150u);
  EXPECT_TRUE(std::is_sorted(objects.begin(), objects.end()));
}

TEST_F(ObjsetTraverseTest, StoppedWalksResumeWithoutGapsOrRepeats) {
  const BlockPtr root = Build(120);
  const std::set<BlockKey> expected = Expected(root);
  for (int stop_every : {1, 2, 5, 17, 60}) {
    std::multiset<BlockKey> seen;
    TraversePosition from;
    int walks = 0;
    for (;;) {
      int asked = 0;
      ObjsetTraverseOptions o;
      o.from = from;
      o.visit = [&](const TraversedBlock& b) { seen.insert(Key(b.bp)); };
      o.should_stop = [&] { return ++asked % stop_every == 0; };
      auto r = TraverseObjset(zio_, root, o);
      ASSERT_TRUE(r.ok());
      walks++;
      if (r->done) break;
      ASSERT_GT(r->next, from) << "a walk made no progress";
      from = r->next;
      ASSERT_LT(walks, 100000);
    }
    EXPECT_GT(walks, 1);
    EXPECT_EQ(seen.size(), expected.size()) << "stopping every " << stop_every << " positions";
    EXPECT_EQ(std::set<BlockKey>(seen.begin(), seen.end()), expected);
  }
}

TEST_F(ObjsetTraverseTest, ABadBlockIsReportedAndTheWalkGoesOn) {
  const BlockPtr root = Build(40);
  const size_t all_blocks = Expected(root).size();
  // Damage one indirect block of a deep object: the walk reports it, skips
  // what is under it and visits everything else.
  ObjectReader r(zio_);
  auto os = r.ReadObjset(root);
  ASSERT_TRUE(os.ok());
  BlockPtr victim;
  for (uint64_t obj = 1; obj < 41 && victim.IsHole(); obj++) {
    auto dn = r.ReadDnode(os->meta_dnode, obj);
    if (dn.ok() && dn->nlevels > 1 && !dn->blkptr[0].IsHole()) victim = dn->blkptr[0];
  }
  ASSERT_FALSE(victim.IsHole());
  for (int d = 0; d < victim.NumDvas(); d++) target_.Corrupt(victim.dva[d].vdev, victim.dva[d].offset);
  int reported = 0;
  uint64_t visited = 0;
  ObjsetTraverseOptions o;
  o.visit = [&](const TraversedBlock&) { visited++; };
  o.unreadable = [&](const TraversedBlock& b, const Status&) {
    reported++;
    EXPECT_EQ(Key(b.bp), Key(victim));
  };
  auto res = TraverseObjset(zio_, root, o);
  ASSERT_TRUE(res.ok());
  EXPECT_TRUE(res->done);
  EXPECT_EQ(reported, 1);
  EXPECT_LT(visited, all_blocks);  // the blocks under the bad one were not reached
  EXPECT_GT(visited, 40u);
}

TEST_F(ObjsetTraverseTest, ARootThatIsNotAnObjsetIsAnError) {
  BlockPtr hole;
  EXPECT_FALSE(TraverseObjset(zio_, hole, {}).ok());
}

}  // namespace
}  // namespace uzfs
