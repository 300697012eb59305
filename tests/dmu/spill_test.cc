// Spill blocks in ObjsetWriter (SetSpill/ReadSpill), over the in-memory
// doubles (MemTarget + SectorAllocator: frees are immediate, so a leaked or
// doubly freed spill shows in the allocator's count at once) and, at the
// end, in a real pool judged by our zdb -b (TraversePool: no leak, every
// block reachable, the traversed asize equals the space maps').
//
// What is checked: the dnode gets flag SPILL_BLKPTR (4) and a spill pointer
// in its last 128 bytes (level 0, type SA, metadata copies, fletcher4, a
// multiple of 512), its bonus room shrinks to 192 bytes, dn_used and
// SyncStats count the spill, a replaced or removed spill is freed, a freed
// object frees its spill, unsynced spills read back newest first, txg
// ordering rules, and a later sync pass rewrites a spill born in its txg in
// place.
#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "tests/zio/zio_test_util.h"
#include "zfs/dmu/block_tree.h"
#include "zfs/dmu/object_reader.h"
#include "zfs/dmu/objset_writer.h"
#include "zfs/dsl/pool.h"

namespace uzfs {
namespace {

// asize of every block of dn's tree (not its spill).
uint64_t TreeAsize(Zio& zio, const Dnode& dn, const BlockPtr& bp) {
  if (bp.IsHole()) return 0;
  uint64_t n = BlockAsize(bp);
  if (bp.level == 0) return n;
  std::vector<uint8_t> raw(bp.lsize);
  EXPECT_UZFS_OK(zio.Read(bp, raw));
  for (size_t i = 0; i + kBlockPtrSize <= raw.size(); i += kBlockPtrSize) {
    n += TreeAsize(zio, dn, DecodeBlockPtr(std::span<const uint8_t, kBlockPtrSize>(raw.data() + i, kBlockPtrSize)));
  }
  return n;
}
uint64_t TreeAsize(Zio& zio, const Dnode& dn) {
  uint64_t n = 0;
  for (const BlockPtr& bp : dn.blkptr) n += TreeAsize(zio, dn, bp);
  return n;
}

// Every block the set at root holds: the objset block, the meta-dnode's
// tree, every object's tree and spill. Checks each dn_used on the way.
uint64_t SetAsize(Zio& zio, const BlockPtr& root) {
  ObjectReader r(zio);
  auto os = r.ReadObjset(root);
  EXPECT_UZFS_OK(os.status());
  if (!os.ok()) return 0;
  uint64_t total = BlockAsize(root) + TreeAsize(zio, os->meta_dnode);
  const uint64_t n = (os->meta_dnode.maxblkid + 1) * kDnodesPerBlock;
  for (uint64_t o = 1; o < n; o++) {
    auto dn = r.ReadDnode(os->meta_dnode, o);
    if (!dn.ok() || dn->IsFree()) continue;
    uint64_t used = TreeAsize(zio, *dn);
    if (dn->spill) used += BlockAsize(*dn->spill);
    EXPECT_EQ(dn->UsedBytes(), used) << "dn_used of object " << o;
    total += used;
    o += dn->extra_slots;
  }
  return total;
}

std::vector<uint8_t> Sa(size_t n, uint64_t seed) {
  std::vector<uint8_t> d = test::RandomBytes(n, seed);
  d[0] = 0x2f;  // SA magic's first byte: never all zeros
  return d;
}

class SpillTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kAsize = 64ull << 20;
  SpillTest() : target_(2, kAsize), alloc_(2, kAsize), zio_(target_, alloc_, ZioOptions{.threads = 2}) {}

  std::unique_ptr<ObjsetWriter> NewSet(bool multi_pass = false) {
    ObjsetWriterOptions o;
    o.multi_pass = multi_pass;
    auto w = ObjsetWriter::Create(zio_, ObjsetType::kZfs, o);
    EXPECT_UZFS_OK(w.status());
    return std::move(*w);
  }
  // A ZPL 5-like file: SA bonus type, a 320-byte bonus, one block pointer.
  uint64_t NewFile(ObjsetWriter& w, uint64_t txg) {
    ObjectProps p;
    p.bonustype = dmu_ot::kSa;
    p.bonuslen = 320;
    p.block_size = 512;
    auto o = w.AllocateObject(p, Txg{txg});
    EXPECT_UZFS_OK(o.status());
    return *o;
  }
  static std::vector<uint8_t> Padded(std::vector<uint8_t> v) {
    v.resize((v.size() + 511) / 512 * 512, 0);
    return v;
  }

  test::MemTarget target_;
  test::SectorAllocator alloc_;
  Zio zio_;
};

TEST_F(SpillTest, SetSyncReopenRead) {
  auto w = NewSet();
  const uint64_t obj = NewFile(*w, 10);
  ASSERT_UZFS_OK(w->Write(obj, 0, test::RandomBytes(300, 1), 10));
  const std::vector<uint8_t> spill = Sa(700, 2);
  // A full 320-byte bonus leaves no room for the pointer.
  EXPECT_TRUE(w->SetSpill(obj, spill, 10).code() == Code::kInvalidArgument);
  const std::vector<uint8_t> bonus = Sa(192, 3);
  ASSERT_UZFS_OK(w->SetBonus(obj, dmu_ot::kSa, bonus, 10));
  ASSERT_UZFS_OK(w->SetSpill(obj, spill, 10));
  EXPECT_TRUE(w->SetSpill(obj, std::vector<uint8_t>(kSpillMaxSize + 1, 1), 10).code() == Code::kInvalidArgument);
  // Unsynced: read back padded; the flag is set and the bonus room is 192.
  EXPECT_EQ(*w->ReadSpill(obj), Padded(spill));
  auto dn = w->GetDnode(obj);
  ASSERT_UZFS_OK(dn.status());
  EXPECT_TRUE(dn->flags & kDnodeFlagSpillBlkptr);
  EXPECT_EQ(dn->MaxBonusLen(), 192u);
  ASSERT_TRUE(dn->spill.has_value());
  EXPECT_TRUE(dn->spill->IsHole());
  EXPECT_TRUE(w->SetBonus(obj, dmu_ot::kSa, Sa(193, 4), 10).code() == Code::kInvalidArgument);
  EXPECT_GE(w->DirtyBytes(10), 1024u);

  SyncStats st;
  auto root = w->Sync(10, &st);
  ASSERT_UZFS_OK(root.status());
  EXPECT_EQ(SetAsize(zio_, *root), alloc_.allocated());
  EXPECT_EQ(st.born_asize, alloc_.allocated());

  ObjectReader r(zio_);
  auto os = r.ReadObjset(*root);
  ASSERT_UZFS_OK(os.status());
  auto d = r.ReadDnode(os->meta_dnode, obj);
  ASSERT_UZFS_OK(d.status());
  EXPECT_EQ(d->flags, kDnodeFlagUsedBytes | kDnodeFlagSpillBlkptr);
  EXPECT_EQ(d->nblkptr, 1);
  EXPECT_EQ(d->bonus, bonus);
  ASSERT_TRUE(d->spill.has_value());
  const BlockPtr sp = *d->spill;
  EXPECT_EQ(sp.level, 0);
  EXPECT_EQ(sp.type, dmu_ot::kSa);
  EXPECT_EQ(sp.lsize, 1024u);
  EXPECT_EQ(sp.NumDvas(), 2);  // metadata copies of a dataset
  EXPECT_EQ(sp.checksum, static_cast<uint8_t>(ChecksumType::kFletcher4));
  EXPECT_EQ(sp.birth, 10u);
  EXPECT_EQ(sp.fill, 1u);
  EXPECT_EQ(*r.ReadSpill(*d), Padded(spill));
  // The data still reads, and the raw dnode holds the pointer in its last
  // 128 bytes.
  std::vector<uint8_t> data(300);
  ASSERT_UZFS_OK(r.Read(*d, 0, data));
  EXPECT_EQ(data, test::RandomBytes(300, 1));

  auto w2 = ObjsetWriter::Open(zio_, *root, {});
  ASSERT_UZFS_OK(w2.status());
  EXPECT_EQ(*(*w2)->ReadSpill(obj), Padded(spill));
  EXPECT_EQ(*(*w2)->GetDnode(obj)->spill, sp);
  EXPECT_EQ(*w->ReadSpill(obj), Padded(spill));
}

TEST_F(SpillTest, ReplaceRemoveAndFree) {
  auto w = NewSet();
  const uint64_t obj = NewFile(*w, 10);
  const uint64_t plain = NewFile(*w, 10);
  ASSERT_UZFS_OK(w->SetBonus(obj, dmu_ot::kSa, Sa(192, 1), 10));
  ASSERT_UZFS_OK(w->SetSpill(obj, Sa(512, 2), 10));
  auto root = w->Sync(10);
  ASSERT_UZFS_OK(root.status());
  const BlockPtr first = *w->GetDnode(obj)->spill;

  // Replaced by a bigger one: the old block is freed.
  ASSERT_UZFS_OK(w->SetSpill(obj, Sa(5000, 3), 11));
  SyncStats st;
  root = w->Sync(11, &st);
  ASSERT_UZFS_OK(root.status());
  EXPECT_EQ(SetAsize(zio_, *root), alloc_.allocated());
  auto dn = w->GetDnode(obj);
  EXPECT_EQ(dn->spill->lsize, 5120u);
  EXPECT_NE(dn->spill->dva[0], first.dva[0]);
  EXPECT_GE(st.killed_asize, BlockAsize(first));
  EXPECT_EQ(*w->ReadSpill(obj), Padded(Sa(5000, 3)));

  // Removed, and the bonus grows back in the same txg.
  ASSERT_UZFS_OK(w->SetSpill(obj, {}, 12));
  ASSERT_UZFS_OK(w->SetBonus(obj, dmu_ot::kSa, Sa(320, 4), 12));
  EXPECT_TRUE(w->ReadSpill(obj)->empty());
  root = w->Sync(12);
  ASSERT_UZFS_OK(root.status());
  EXPECT_EQ(SetAsize(zio_, *root), alloc_.allocated());
  ObjectReader r(zio_);
  auto d = r.ReadDnode(r.ReadObjset(*root)->meta_dnode, obj);
  ASSERT_UZFS_OK(d.status());
  EXPECT_FALSE(d->flags & kDnodeFlagSpillBlkptr);
  EXPECT_FALSE(d->spill.has_value());
  EXPECT_EQ(d->bonuslen, 320u);
  EXPECT_TRUE(w->ReadSpill(obj)->empty());
  EXPECT_TRUE(w->ReadSpill(plain)->empty());

  // A freed object frees its spill.
  ASSERT_UZFS_OK(w->SetBonus(obj, dmu_ot::kSa, Sa(100, 5), 13));
  ASSERT_UZFS_OK(w->SetSpill(obj, Sa(2000, 6), 13));
  ASSERT_UZFS_OK(w->Sync(13).status());
  const uint64_t with_spill = alloc_.allocated();
  ASSERT_UZFS_OK(w->FreeObject(obj, 14));
  EXPECT_TRUE(w->ReadSpill(obj).status().IsNotFound());
  root = w->Sync(14);
  ASSERT_UZFS_OK(root.status());
  EXPECT_LT(alloc_.allocated(), with_spill);
  EXPECT_EQ(SetAsize(zio_, *root), alloc_.allocated());
}

TEST_F(SpillTest, TxgOrderAndUnsyncedReads) {
  auto w = NewSet();
  const uint64_t obj = NewFile(*w, 10);
  ASSERT_UZFS_OK(w->SetBonus(obj, dmu_ot::kSa, Sa(150, 1), 10));
  ASSERT_UZFS_OK(w->SetSpill(obj, Sa(600, 2), 10));
  ASSERT_UZFS_OK(w->SetSpill(obj, Sa(900, 3), 11));
  EXPECT_TRUE(w->SetSpill(obj, Sa(100, 4), 10).code() == Code::kInvalidArgument);  // txg 11 changed it
  EXPECT_EQ(*w->ReadSpill(obj), Padded(Sa(900, 3)));
  // A bonus that would not leave the pointer room is refused in a newer txg too.
  EXPECT_TRUE(w->SetBonus(obj, dmu_ot::kSa, Sa(300, 5), 12).code() == Code::kInvalidArgument);
  ASSERT_UZFS_OK(w->Sync(10).status());
  EXPECT_EQ(*w->ReadSpill(obj), Padded(Sa(900, 3)));
  EXPECT_EQ(w->GetDnode(obj)->spill->birth, 10u);
  auto root = w->Sync(11);
  ASSERT_UZFS_OK(root.status());
  EXPECT_EQ(w->GetDnode(obj)->spill->birth, 11u);
  EXPECT_EQ(SetAsize(zio_, *root), alloc_.allocated());
  // Allocated, spilled and freed before reaching disk: nothing written.
  const uint64_t before = alloc_.allocated();
  const uint64_t tmp = NewFile(*w, 12);
  ASSERT_UZFS_OK(w->SetBonus(tmp, dmu_ot::kSa, Sa(192, 6), 12));
  ASSERT_UZFS_OK(w->SetSpill(tmp, Sa(4000, 7), 12));
  ASSERT_UZFS_OK(w->FreeObject(tmp, 12));
  root = w->Sync(12);
  ASSERT_UZFS_OK(root.status());
  EXPECT_EQ(SetAsize(zio_, *root), alloc_.allocated());
  EXPECT_EQ(alloc_.allocated(), before);  // the objset block and dnode block were replaced in kind
}

TEST_F(SpillTest, LaterPassRewritesInPlace) {
  auto w = NewSet(/*multi_pass=*/true);
  const uint64_t obj = NewFile(*w, 10);
  ASSERT_UZFS_OK(w->SetBonus(obj, dmu_ot::kSa, Sa(192, 1), 10));
  ASSERT_UZFS_OK(w->SetSpill(obj, Sa(1000, 2), 10));
  ASSERT_UZFS_OK(w->Sync(10).status());
  ASSERT_UZFS_OK(w->SetSpill(obj, Sa(1000, 3), 10));  // pass 2: uncompressed, same size
  SyncStats st2;
  ASSERT_UZFS_OK(w->Sync(10, &st2).status());
  const BlockPtr a = *w->GetDnode(obj)->spill;
  ASSERT_UZFS_OK(w->SetSpill(obj, Sa(1000, 4), 10));  // pass 3: now rewritten in place
  SyncStats st3;
  auto root = w->Sync(10, &st3);
  ASSERT_UZFS_OK(root.status());
  const BlockPtr b = *w->GetDnode(obj)->spill;
  EXPECT_EQ(st3.pass, 3);
  EXPECT_EQ(a.dva[0], b.dva[0]);
  EXPECT_GE(st3.rewritten_blocks, 1u);
  EXPECT_EQ(*w->ReadSpill(obj), Padded(Sa(1000, 4)));
  EXPECT_EQ(SetAsize(zio_, *root), alloc_.allocated());
}

// In a real pool: our zdb -b reaches the spill blocks (no leak), the
// dataset's space accounting includes them.
TEST(SpillPoolTest, TraversalSeesSpillBlocks) {
  test::TempDir d;
  {
    PoolCreateOptions o;
    o.version = 5000;
    o.ashift = 9;
    o.history = "zpool create sp";
    PoolLayout l;
    l.data = {pooltest::Leaf(d.path(), "d0")};
    auto p = Pool::Create("sp", l, o);
    ASSERT_UZFS_OK(p.status());
    Pool& P = **p;
    ASSERT_UZFS_OK(P.CreateDataset("sp/fs", {}));
    ASSERT_UZFS_OK(P.Sync());
    auto os = P.Objset("sp/fs");
    ASSERT_UZFS_OK(os.status());
    std::vector<uint64_t> objs;
    {
      auto tx = P.Begin(1 << 20);
      ASSERT_UZFS_OK(tx.status());
      for (int i = 0; i < 5; i++) {
        ObjectProps pr;
        pr.bonustype = dmu_ot::kSa;
        pr.bonuslen = 320;  // one block pointer, as ZPL 5 files have
        pr.block_size = 512;
        auto o = (*os)->AllocateObject(pr, tx->txg());
        ASSERT_UZFS_OK(o.status());
        ASSERT_UZFS_OK((*os)->SetBonus(*o, dmu_ot::kSa, Sa(192, 50 + i), tx->txg()));
        ASSERT_UZFS_OK((*os)->SetSpill(*o, Sa(300 + 900 * i, i), tx->txg()));
        objs.push_back(*o);
      }
      tx->Commit();
    }
    ASSERT_UZFS_OK(P.Sync());
    {
      auto tx = P.Begin(1 << 20);
      ASSERT_UZFS_OK(tx.status());
      ASSERT_UZFS_OK((*os)->SetSpill(objs[0], Sa(3000, 9), tx->txg()));  // replaced
      ASSERT_UZFS_OK((*os)->SetSpill(objs[1], {}, tx->txg()));           // removed
      ASSERT_UZFS_OK((*os)->FreeObject(objs[2], tx->txg()));             // freed with it
      tx->Commit();
    }
    ASSERT_UZFS_OK(P.Sync());
    ASSERT_UZFS_OK(P.Export());
  }
  pooltest::ExpectConsistent(d.path(), "sp");
  auto r = PoolReader::Open(d.path().string(), "sp");
  ASSERT_UZFS_OK(r.status());
  auto t = TraversePool(**r);
  ASSERT_UZFS_OK(t.status());
  EXPECT_EQ(t->by_type[dmu_ot::kSa].count, 3u);  // objects 0, 3 and 4 keep one
}

}  // namespace
}  // namespace uzfs
