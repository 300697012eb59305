// ObjsetWriter over the in-memory pool doubles (MemTarget + SectorAllocator,
// whose frees are immediate so leaks show at once) and over the real block
// layer (raidz2 + mirror with the metaslab allocator). The judge is always
// the read side: every synced root is reopened with ObjectReader and each
// object compared with a model (bytes, type, bonus), every tree walked to
// check fill counts, levels and dn_used, and the allocator's count of
// allocated bytes compared with the bytes the walked trees hold.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <thread>

#include "tests/testutil/testutil.h"
#include "tests/zio/zio_test_util.h"
#include "zfs/dmu/block_tree.h"
#include "zfs/dmu/object_reader.h"
#include "zfs/dmu/objset_writer.h"
#include "zfs/spa/allocator.h"
#include "zfs/vdev/io_engine.h"
#include "zfs/vdev/mem_device.h"
#include "zfs/vdev/vdev.h"
#include "zfs/zio/spa_allocator.h"
#include "zfs/zio/vdev_target.h"

namespace uzfs {
namespace {

struct ModelObject {
  ObjectProps props;
  std::vector<uint8_t> bytes;  // logical contents up to the end written
  std::vector<uint8_t> bonus;
};
using Model = std::map<uint64_t, ModelObject>;

struct TreeWalk {
  uint64_t asize = 0;     // every block of the tree, all copies
  uint64_t data = 0;      // non-hole level-0 blocks
  int max_level = 0;
};

// Walks bp's subtree (level `level`), checking levels, sizes and fills.
void WalkPtr(Zio& zio, const Dnode& dn, const BlockPtr& bp, int level, TreeWalk* w, uint64_t* fill) {
  if (bp.IsHole()) return;
  ASSERT_EQ(bp.level, level);
  ASSERT_EQ(bp.type, dn.type);
  w->asize += BlockAsize(bp);
  w->max_level = std::max(w->max_level, level);
  if (level == 0) {
    ASSERT_EQ(bp.lsize, dn.DataBlockSize());
    w->data++;
    *fill += bp.fill;
    return;
  }
  ASSERT_EQ(bp.lsize, dn.IndirectBlockSize());
  std::vector<uint8_t> raw(bp.lsize);
  ASSERT_UZFS_OK(zio.Read(bp, raw));
  uint64_t below = 0;
  for (size_t i = 0; i < raw.size() / kBlockPtrSize; i++) {
    BlockPtr c = DecodeBlockPtr(std::span<const uint8_t, kBlockPtrSize>(raw.data() + i * kBlockPtrSize, kBlockPtrSize));
    WalkPtr(zio, dn, c, level - 1, w, &below);
  }
  EXPECT_EQ(bp.fill, below) << "fill of an L" << level << " block";
  *fill += below;
}

TreeWalk WalkTree(Zio& zio, const Dnode& dn) {
  TreeWalk w;
  uint64_t fill = 0;
  for (const BlockPtr& bp : dn.blkptr) WalkPtr(zio, dn, bp, dn.nlevels - 1, &w, &fill);
  EXPECT_EQ(dn.UsedBytes(), w.asize) << "dn_used of a type " << int(dn.type) << " object";
  return w;
}

// Reopens `root` with the read side, compares every object with the model
// and returns the bytes all trees hold (objset block included).
uint64_t Judge(Zio& zio, const BlockPtr& root, const Model& model, uint64_t max_object = 0) {
  ObjectReader r(zio);
  auto os = r.ReadObjset(root);
  EXPECT_TRUE(os.ok()) << os.status().ToString(true);
  if (!os.ok()) return 0;
  uint64_t total = BlockAsize(root);
  total += WalkTree(zio, os->meta_dnode).asize;
  uint64_t objects = 0;
  for (const BlockPtr& bp : os->meta_dnode.blkptr) objects += bp.IsHole() ? 0 : bp.fill;
  EXPECT_EQ(root.fill, objects);
  EXPECT_EQ(objects, model.size());
  for (const auto& [obj, m] : model) {
    SCOPED_TRACE("object " + std::to_string(obj));
    auto dn = r.ReadDnode(os->meta_dnode, obj);
    EXPECT_TRUE(dn.ok()) << dn.status().ToString(true);
    if (!dn.ok()) continue;
    EXPECT_EQ(dn->type, m.props.type);
    EXPECT_EQ(dn->bonus, m.bonus);
    EXPECT_EQ(dn->Size(), m.props.dnode_size);
    std::vector<uint8_t> got(m.bytes.size() + 777, 0xEE);
    EXPECT_UZFS_OK(r.Read(*dn, 0, got));
    std::vector<uint8_t> want = m.bytes;
    want.resize(got.size(), 0);
    EXPECT_TRUE(got == want) << "object bytes differ";
    const uint64_t dblk = dn->DataBlockSize();
    if (!m.bytes.empty()) {
      EXPECT_EQ(dn->maxblkid, (m.bytes.size() - 1) / dblk);
    }
    total += WalkTree(zio, *dn).asize;
  }
  // Slots past the model's objects are free.
  for (uint64_t o = 1; o < max_object; o++) {
    if (model.count(o)) continue;
    auto dn = r.ReadDnode(os->meta_dnode, o);
    if (dn.ok()) {
      EXPECT_TRUE(dn->IsFree()) << "object " << o;
    }
  }
  return total;
}

std::vector<uint8_t> Pattern(size_t n, uint64_t seed) {
  auto d = test::RandomBytes(n, seed);
  for (size_t i = 0; i < n; i += 2) d[i] = 'z';  // compressible, not trivially
  return d;
}

class ObjsetWriterTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kAsize = 96ull << 20;
  ObjsetWriterTest() : target_(2, kAsize), alloc_(2, kAsize), zio_(target_, alloc_, ZioOptions{.threads = 2}) {}

  std::unique_ptr<ObjsetWriter> NewSet(ObjsetType type = ObjsetType::kZfs, uint64_t version = 5000) {
    ObjsetWriterOptions o;
    o.pool_version = version;
    auto w = ObjsetWriter::Create(zio_, type, o);
    EXPECT_TRUE(w.ok());
    return std::move(*w);
  }
  // Writes through the writer and the model.
  void Put(ObjsetWriter& w, Model& m, uint64_t obj, uint64_t off, const std::vector<uint8_t>& d, uint64_t txg) {
    ASSERT_UZFS_OK(w.Write(obj, off, d, Txg{txg}));
    auto& b = m[obj].bytes;
    if (b.size() < off + d.size()) b.resize(off + d.size(), 0);
    std::copy(d.begin(), d.end(), b.begin() + off);
  }
  uint64_t Alloc(ObjsetWriter& w, Model& m, const ObjectProps& p, uint64_t txg) {
    auto o = w.AllocateObject(p, Txg{txg});
    EXPECT_TRUE(o.ok()) << o.status().ToString(true);
    m[*o].props = p;
    m[*o].bonus.assign(p.bonuslen, 0);
    return *o;
  }
  // The model object's bytes through the writer equal the model.
  void CheckWriterReads(ObjsetWriter& w, const Model& m) {
    for (const auto& [obj, mo] : m) {
      std::vector<uint8_t> got(mo.bytes.size() + 100, 0xEE);
      ASSERT_UZFS_OK(w.Read(obj, 0, got));
      std::vector<uint8_t> want = mo.bytes;
      want.resize(got.size(), 0);
      EXPECT_TRUE(got == want) << "writer read of object " << obj;
    }
  }

  test::MemTarget target_;
  test::SectorAllocator alloc_;
  Zio zio_;
};

TEST_F(ObjsetWriterTest, EmptySetSyncsAndReopens) {
  auto w = NewSet();
  auto root = w->Sync(5);
  ASSERT_UZFS_OK(root.status());
  EXPECT_EQ(root->type, dmu_ot::kObjset);
  EXPECT_EQ(root->lsize, kObjsetPhysSizeV2);
  EXPECT_EQ(root->NumDvas(), 2);  // dataset metadata: two copies
  EXPECT_EQ(root->birth, 5u);
  EXPECT_EQ(Judge(zio_, *root, {}), alloc_.allocated());
  auto mos = NewSet(ObjsetType::kMeta, 23);
  auto mroot = mos->Sync(5);
  ASSERT_UZFS_OK(mroot.status());
  EXPECT_EQ(mroot->NumDvas(), 3);  // the MOS: three
  EXPECT_EQ(mroot->lsize, kObjsetPhysSizeV2);
  auto old = NewSet(ObjsetType::kZfs, 14);
  auto oroot = old->Sync(3);
  ASSERT_UZFS_OK(oroot.status());
  EXPECT_EQ(oroot->lsize, kObjsetPhysSizeV1);
  EXPECT_EQ(oroot->compression, static_cast<uint8_t>(CompressType::kLzjb));
  ObjectReader r(zio_);
  EXPECT_EQ(r.ReadObjset(*mroot)->type, static_cast<uint64_t>(ObjsetType::kMeta));
}

// Objects of every block size 512 B..128 KiB, random ranges (some all
// zeros, producing holes), one txg; the read side sees exactly the model.
TEST_F(ObjsetWriterTest, RandomWritesAllBlockSizes) {
  auto w = NewSet();
  Model m;
  std::mt19937_64 rng(7);
  for (uint64_t bs = 512; bs <= 131072; bs *= 2) {
    ObjectProps p;
    p.block_size = bs;
    const uint64_t obj = Alloc(*w, m, p, 10);
    for (int i = 0; i < 6; i++) {
      const uint64_t off = rng() % (bs * 40);
      const size_t len = 1 + rng() % (bs * 3);
      auto d = (i == 3) ? std::vector<uint8_t>(len, 0) : Pattern(len, rng());
      Put(*w, m, obj, off, d, 10);
    }
  }
  // A single-block object of a size that is not a power of two.
  ObjectProps odd;
  odd.block_size = 3 * 512;
  const uint64_t o = Alloc(*w, m, odd, 10);
  Put(*w, m, o, 100, Pattern(1000, 1), 10);
  EXPECT_FALSE(w->Write(o, 1536, Pattern(10, 2), 10).ok());
  CheckWriterReads(*w, m);
  EXPECT_GT(w->DirtyBytes(10), 0u);
  auto root = w->Sync(10);
  ASSERT_UZFS_OK(root.status());
  EXPECT_EQ(w->DirtyBytes(10), 0u);
  EXPECT_EQ(Judge(zio_, *root, m), alloc_.allocated());
  CheckWriterReads(*w, m);
}

// 512-byte blocks under 512-byte indirect blocks (4 pointers each) need
// one more level for every 4x of size: files of 1..5 levels, grown txg by
// txg (the old top pointers move under a new level).
TEST_F(ObjsetWriterTest, TreesGrowThroughIndirectLevels) {
  auto w = NewSet();
  Model m;
  ObjectProps p;
  p.block_size = 512;
  p.indblkshift = 9;
  p.bonuslen = 300;  // one block pointer in the dnode
  const uint64_t obj = Alloc(*w, m, p, 2);
  ObjectReader r(zio_);
  uint64_t txg = 2;
  for (uint64_t blk : {0ull, 3ull, 15ull, 60ull, 250ull}) {
    Put(*w, m, obj, blk * 512 + 7, Pattern(600, blk), txg);
    auto root = w->Sync(Txg{txg});
    ASSERT_UZFS_OK(root.status());
    EXPECT_EQ(Judge(zio_, *root, m), alloc_.allocated()) << "after block " << blk;
    auto dn = r.ReadDnode(r.ReadObjset(*root)->meta_dnode, obj);
    ASSERT_UZFS_OK(dn.status());
    uint64_t cap = 1;
    int levels = 1;
    while (cap <= (blk * 512 + 7 + 599) / 512) cap *= 4, levels++;
    EXPECT_EQ(dn->nlevels, levels) << "block " << blk;
    txg++;
  }
}

// Several txgs in a row with random writes, frees and truncations over
// many objects; after each sync the read side matches the model, and the
// allocator holds exactly the blocks of the live trees (nothing leaked,
// nothing live freed).
TEST_F(ObjsetWriterTest, ManyTxgsOfRandomChanges) {
  auto w = NewSet();
  Model m;
  std::mt19937_64 rng(42);
  for (uint64_t txg = 3; txg < 15; txg++) {
    if (m.size() < 12) {
      ObjectProps p;
      p.block_size = 512ull << (rng() % 9);
      p.indblkshift = static_cast<uint8_t>(10 + rng() % 8);
      p.bonuslen = static_cast<uint16_t>(rng() % 200);
      Alloc(*w, m, p, txg);
    }
    for (int op = 0; op < 12; op++) {
      auto it = m.begin();
      std::advance(it, rng() % m.size());
      const uint64_t obj = it->first;
      const uint64_t bs = it->second.props.block_size;
      const int kind = rng() % 10;
      if (kind < 6) {
        const uint64_t off = rng() % (bs * 300);
        Put(*w, m, obj, off, Pattern(1 + rng() % (bs * 4), rng()), txg);
      } else if (kind < 8) {
        auto& b = it->second.bytes;
        const uint64_t off = b.empty() ? 0 : rng() % b.size();
        const uint64_t len = 1 + rng() % (bs * 5);
        ASSERT_UZFS_OK(w->FreeRange(obj, off, len, Txg{txg}));
        for (uint64_t i = off; i < std::min<uint64_t>(b.size(), off + len); i++) b[i] = 0;
      } else if (kind < 9) {
        auto& b = it->second.bytes;
        const uint64_t off = b.empty() ? 0 : rng() % b.size();
        ASSERT_UZFS_OK(w->FreeRange(obj, off, UINT64_MAX, Txg{txg}));
        b.resize(std::min<uint64_t>(b.size(), off));
        // maxblkid drops to the block holding off-1; bytes up to it stay.
      } else {
        std::vector<uint8_t> bonus = Pattern(it->second.props.bonuslen, rng());
        ASSERT_UZFS_OK(w->SetBonus(obj, dmu_ot::kPlainOther, bonus, Txg{txg}));
        it->second.bonus = bonus;
      }
    }
    CheckWriterReads(*w, m);
    auto root = w->Sync(Txg{txg});
    ASSERT_UZFS_OK(root.status());
    // Truncation keeps whole blocks: the model's length is a lower bound,
    // so compare through the read side only up to what the model has.
    Model judged = m;
    for (auto& [obj, mo] : judged) {
      auto dn = w->GetDnode(obj);
      ASSERT_UZFS_OK(dn.status());
      const uint64_t end = (dn->maxblkid + 1) * dn->DataBlockSize();
      bool any = false;
      for (const BlockPtr& bp : dn->blkptr) any |= !bp.IsHole();
      if (any && mo.bytes.size() < end && !mo.bytes.empty()) mo.bytes.resize(end, 0);
    }
    for (auto& [obj, mo] : judged) {
      if (mo.bytes.empty()) continue;
      auto dn = w->GetDnode(obj);
      ASSERT_EQ((mo.bytes.size() - 1) / dn->DataBlockSize(), dn->maxblkid) << "object " << obj;
    }
    EXPECT_EQ(Judge(zio_, *root, judged), alloc_.allocated()) << "txg " << txg;
    if (HasFailure()) return;
  }
}

TEST_F(ObjsetWriterTest, FreeingEverythingLeavesOnlyMetadata) {
  auto w = NewSet();
  Model m;
  std::vector<uint64_t> objs;
  for (int i = 0; i < 40; i++) {
    ObjectProps p;
    p.block_size = 4096;
    p.indblkshift = 12;
    objs.push_back(Alloc(*w, m, p, 4));
    Put(*w, m, objs.back(), i * 10000, Pattern(30000, i), 4);
  }
  auto r1 = w->Sync(4);
  ASSERT_UZFS_OK(r1.status());
  const uint64_t full = alloc_.allocated();
  EXPECT_EQ(Judge(zio_, *r1, m), full);
  // Truncate half, free the rest.
  for (size_t i = 0; i < objs.size(); i++) {
    if (i % 2) {
      ASSERT_UZFS_OK(w->FreeObject(objs[i], 5));
      m.erase(objs[i]);
    } else {
      ASSERT_UZFS_OK(w->FreeRange(objs[i], 0, UINT64_MAX, 5));
      m[objs[i]].bytes.clear();
    }
  }
  std::vector<uint8_t> ten(10);
  EXPECT_TRUE(w->Read(objs[1], 0, ten).IsNotFound());
  auto r2 = w->Sync(5);
  ASSERT_UZFS_OK(r2.status());
  const uint64_t meta_only = Judge(zio_, *r2, m, 64);
  EXPECT_EQ(meta_only, alloc_.allocated());
  EXPECT_LT(alloc_.allocated(), full / 10);
  // Every data object now holds no blocks at all.
  for (const auto& [obj, mo] : m) EXPECT_EQ(w->GetDnode(obj)->used, 0u);
  // Freed numbers are reused once their free has synced.
  ObjectProps p;
  auto again = w->AllocateObject(p, 6);
  ASSERT_UZFS_OK(again.status());
  EXPECT_EQ(*again, objs[1]);
}

TEST_F(ObjsetWriterTest, FreedNumbersWaitForTheirSync) {
  auto w = NewSet();
  ObjectProps p;
  auto a = w->AllocateObject(p, 2), b = w->AllocateObject(p, 2);
  ASSERT_UZFS_OK(w->Sync(2).status());
  ASSERT_UZFS_OK(w->FreeObject(*a, 3));
  auto c = w->AllocateObject(p, 3);
  EXPECT_NE(*c, *a);
  EXPECT_NE(*c, *b);
  ASSERT_UZFS_OK(w->Sync(3).status());
  EXPECT_EQ(*w->AllocateObject(p, 4), *a);
}

TEST_F(ObjsetWriterTest, BonusBuffersAndLargeDnodes) {
  auto w = NewSet();
  Model m;
  for (uint32_t size : {512u, 1024u, 4096u, 16384u}) {
    ObjectProps p;
    p.dnode_size = size;
    p.bonustype = dmu_ot::kZnode;
    p.bonuslen = static_cast<uint16_t>(size - 64 - 128);
    p.block_size = 1024;
    const uint64_t obj = Alloc(*w, m, p, 3);
    m[obj].bonus = Pattern(p.bonuslen, size);
    ASSERT_UZFS_OK(w->SetBonus(obj, dmu_ot::kZnode, m[obj].bonus, 3));
    Put(*w, m, obj, 5000, Pattern(3000, size + 1), 3);
    EXPECT_EQ(w->GetDnode(obj)->nblkptr, 1);
    // Large dnodes never cross a 16 KiB dnode block.
    EXPECT_LE(obj % kDnodesPerBlock + size / 512, kDnodesPerBlock) << size;
  }
  // A 3-pointer dnode with a short bonus that then grows to its limit.
  ObjectProps small;
  small.bonuslen = 8;
  const uint64_t s = Alloc(*w, m, small, 3);
  EXPECT_EQ(w->GetDnode(s)->nblkptr, 3);
  m[s].bonus = Pattern(64, 3);
  ASSERT_UZFS_OK(w->SetBonus(s, dmu_ot::kPlainOther, m[s].bonus, 3));
  EXPECT_FALSE(w->SetBonus(s, dmu_ot::kPlainOther, Pattern(65, 3), 3).ok());
  auto root = w->Sync(3);
  ASSERT_UZFS_OK(root.status());
  EXPECT_EQ(Judge(zio_, *root, m, 80), alloc_.allocated());
  // And through a writer reopened from the root.
  auto w2 = ObjsetWriter::Open(zio_, *root, {});
  ASSERT_UZFS_OK(w2.status());
  for (const auto& [obj, mo] : m) EXPECT_EQ((*w2)->GetDnode(obj)->bonus, mo.bonus);
  // The reopened writer knows which slots the large dnodes hold: new
  // objects land only in free slots, and the set still judges right.
  for (int i = 0; i < 40; i++) {
    ObjectProps q;
    q.dnode_size = 512u << (i % 3);
    auto o = (*w2)->AllocateObject(q, 4);
    ASSERT_UZFS_OK(o.status());
    for (const auto& [obj, mo] : m) {
      EXPECT_FALSE(*o < obj + mo.props.dnode_size / 512 && obj < *o + q.dnode_size / 512)
          << "object " << *o << " overlaps " << obj;
    }
    m[*o].props = q;
  }
  auto r4 = (*w2)->Sync(4);
  ASSERT_UZFS_OK(r4.status());
  EXPECT_EQ(Judge(zio_, *r4, m, 200), alloc_.allocated());
}

// Opened read-only (a snapshot's object set): every object reads as
// written, large dnodes included, free numbers are NotFound, and every
// change is refused.
TEST_F(ObjsetWriterTest, ReadOnlyOpenReadsEverythingAndChangesNothing) {
  auto w = NewSet();
  Model m;
  ObjectProps big;
  big.dnode_size = 2048;
  big.bonustype = dmu_ot::kZnode;
  big.bonuslen = 1024;
  const uint64_t a = Alloc(*w, m, big, 3);
  m[a].bonus = Pattern(1024, 7);
  ASSERT_UZFS_OK(w->SetBonus(a, dmu_ot::kZnode, m[a].bonus, 3));
  const uint64_t b = Alloc(*w, m, {}, 3);
  Put(*w, m, b, 0, Pattern(5000, 8), 3);
  auto root = w->Sync(3);
  ASSERT_UZFS_OK(root.status());
  ObjsetWriterOptions o;
  o.read_only = true;
  auto r = ObjsetWriter::Open(zio_, *root, o);
  ASSERT_UZFS_OK(r.status());
  EXPECT_EQ((*r)->GetDnode(a)->bonus, m[a].bonus);
  EXPECT_EQ((*r)->GetDnode(a)->extra_slots, 3);
  std::vector<uint8_t> got(5000);
  ASSERT_UZFS_OK((*r)->Read(b, 0, got));
  EXPECT_EQ(got, Pattern(5000, 8));
  EXPECT_EQ((*r)->GetDnode(b + 40).status().code(), Code::kNotFound);
  EXPECT_EQ((*r)->GetDnode(1u << 20).status().code(), Code::kNotFound);
  EXPECT_EQ((*r)->AllocateObject({}, 4).status().code(), Code::kNotSupported);
  EXPECT_EQ((*r)->Write(b, 0, Pattern(10, 9), 4).code(), Code::kNotSupported);
  EXPECT_EQ((*r)->FreeObject(b, 4).code(), Code::kNotSupported);
  ASSERT_UZFS_OK((*r)->Read(b, 0, got));
  EXPECT_EQ(got, Pattern(5000, 8));
}

// Txg N+1 is modified while N is unsynced: N's sync carries only N's
// changes, reads see both, and N+1 lands on top.
TEST_F(ObjsetWriterTest, OverlappingTxgsStaySeparate) {
  auto w = NewSet();
  Model m5, m6;
  ObjectProps p;
  p.block_size = 4096;
  const uint64_t a = Alloc(*w, m5, p, 5);
  Put(*w, m5, a, 0, Pattern(20000, 1), 5);
  m6 = m5;
  Put(*w, m6, a, 1000, Pattern(5000, 2), 6);  // blocks dirty in 5 and 6
  const uint64_t b = Alloc(*w, m6, p, 6);
  Put(*w, m6, b, 100, Pattern(100, 3), 6);
  ASSERT_UZFS_OK(w->FreeRange(a, 16384, 4096, 6));
  std::fill(m6[a].bytes.begin() + 16384, m6[a].bytes.begin() + 20000, 0);
  m6[a].bytes.resize(20000);
  EXPECT_FALSE(w->Write(a, 1000, Pattern(10, 4), 5).ok());  // block changed in 6 already
  CheckWriterReads(*w, m6);
  EXPECT_FALSE(w->Sync(6).ok());  // txg 5 first
  auto r5 = w->Sync(5);
  ASSERT_UZFS_OK(r5.status());
  Judge(zio_, *r5, m5);
  EXPECT_FALSE(w->Write(a, 0, Pattern(10, 5), 5).ok());  // txg 5 is synced
  CheckWriterReads(*w, m6);
  auto r6 = w->Sync(6);
  ASSERT_UZFS_OK(r6.status());
  EXPECT_EQ(Judge(zio_, *r6, m6), alloc_.allocated());
}

// The crash model: what txg 8 wrote is absent when reopening from txg 7's
// root (the blocks txg 8 never synced do not exist on disk at all).
TEST_F(ObjsetWriterTest, UnsyncedTxgIsAbsentAfterReopen) {
  auto w = NewSet();
  Model m;
  ObjectProps p;
  const uint64_t a = Alloc(*w, m, p, 7);
  Put(*w, m, a, 0, Pattern(300000, 1), 7);
  auto r7 = w->Sync(7);
  ASSERT_UZFS_OK(r7.status());
  const uint64_t before = alloc_.allocated();
  ASSERT_UZFS_OK(w->Write(a, 0, Pattern(300000, 2), 8));
  ASSERT_UZFS_OK(w->FreeRange(a, 0, UINT64_MAX, 8));
  ObjectProps q;
  ASSERT_UZFS_OK(w->AllocateObject(q, 8).status());
  EXPECT_EQ(alloc_.allocated(), before);  // nothing written before sync
  w.reset();                              // the "crash"
  Judge(zio_, *r7, m);
  auto w2 = ObjsetWriter::Open(zio_, *r7, {});
  ASSERT_UZFS_OK(w2.status());
  CheckWriterReads(**w2, m);
  // Txg 8 again, differently, on the reopened set.
  Put(**w2, m, a, 50, Pattern(10, 3), 8);
  auto r8 = (*w2)->Sync(8);
  ASSERT_UZFS_OK(r8.status());
  EXPECT_EQ(Judge(zio_, *r8, m), alloc_.allocated());
}

TEST_F(ObjsetWriterTest, SyncFailureLeavesNothingAllocated) {
  auto w = NewSet();
  Model m;
  ObjectProps p;
  const uint64_t a = Alloc(*w, m, p, 2);
  Put(*w, m, a, 0, Pattern(500000, 1), 2);
  auto r2 = w->Sync(2);
  ASSERT_UZFS_OK(r2.status());
  const uint64_t before = alloc_.allocated();
  Put(*w, m, a, 200000, Pattern(800000, 2), 3);
  target_.Fail(0, true);
  target_.Fail(1, true);
  EXPECT_FALSE(w->Sync(3).ok());
  EXPECT_EQ(alloc_.allocated(), before);
  target_.Fail(0, false);
  target_.Fail(1, false);
  auto r3 = w->Sync(3);  // retried
  ASSERT_UZFS_OK(r3.status());
  EXPECT_EQ(Judge(zio_, *r3, m), alloc_.allocated());
}

TEST_F(ObjsetWriterTest, EstimatesCoverWhatSyncAllocates) {
  auto w = NewSet();
  ObjectProps p;
  p.compress = static_cast<uint8_t>(CompressType::kOff);
  auto a = w->AllocateObject(p, 2);
  ASSERT_UZFS_OK(w->Sync(2).status());
  const uint64_t before = alloc_.allocated();
  auto est = w->EstimateWrite(*a, 12345, 3 << 20);
  ASSERT_UZFS_OK(est.status());
  ASSERT_UZFS_OK(w->Write(*a, 12345, test::RandomBytes(3 << 20, 9), 3));
  ASSERT_UZFS_OK(w->Sync(3).status());
  EXPECT_LE(alloc_.allocated() - before, *est);
}

// Another thread keeps writing txg N+1 while Sync(N) runs (TSan's case).
TEST_F(ObjsetWriterTest, SyncRunsWhileTheNextTxgIsWritten) {
  auto w = NewSet();
  Model m;
  ObjectProps p;
  p.block_size = 8192;
  const uint64_t a = Alloc(*w, m, p, 2), b = Alloc(*w, m, p, 2);
  for (uint64_t txg = 2; txg < 8; txg++) {
    Put(*w, m, a, txg * 3000, Pattern(40000, txg), txg);
    Model at_sync = m;
    std::thread writer([&] {
      for (int i = 0; i < 20; i++) {
        std::vector<uint8_t> d = Pattern(5000, txg * 100 + i);
        EXPECT_UZFS_OK(w->Write(b, i * 7000, d, Txg{txg + 1}));
        std::vector<uint8_t> back(5000);
        EXPECT_UZFS_OK(w->Read(b, i * 7000, back));
        EXPECT_EQ(back, d);
      }
    });
    auto root = w->Sync(Txg{txg});
    writer.join();
    ASSERT_UZFS_OK(root.status());
    for (int i = 0; i < 20; i++) {
      auto d = Pattern(5000, txg * 100 + i);
      auto& bb = m[b].bytes;
      if (bb.size() < i * 7000 + 5000u) bb.resize(i * 7000 + 5000, 0);
      std::copy(d.begin(), d.end(), bb.begin() + i * 7000);
    }
    Judge(zio_, *root, at_sync);
  }
  auto last = w->Sync(8);
  ASSERT_UZFS_OK(last.status());
  EXPECT_EQ(Judge(zio_, *last, m), alloc_.allocated());
}

// The synced-block cache: after a sync, partial writes in later txgs take
// the buffers the sync left (no read of the committed block), and what
// they produce is what the read side finds on disk.
TEST_F(ObjsetWriterTest, SyncedBlocksServeLaterPartialWrites) {
  auto w = NewSet();
  Model m;
  ObjectProps p;  // 128 KiB records, as a file
  const uint64_t obj = Alloc(*w, m, p, 2);
  Put(*w, m, obj, 0, Pattern(16 * 131072, 1), 2);
  ASSERT_UZFS_OK(w->Sync(2).status());
  EXPECT_EQ(w->synced_cache_stats().blocks, 16u);
  EXPECT_EQ(w->synced_cache_stats().bytes, 16u * 131072);
  std::mt19937_64 rng(3);
  for (uint64_t txg = 3; txg < 8; txg++) {
    for (int i = 0; i < 40; i++) Put(*w, m, obj, (rng() % (16 * 32)) * 4096, Pattern(4096, rng()), txg);
    CheckWriterReads(*w, m);
    auto root = w->Sync(Txg{txg});
    ASSERT_UZFS_OK(root.status());
    EXPECT_EQ(Judge(zio_, *root, m), alloc_.allocated()) << "txg " << txg;
  }
  const SyncedCacheStats st = w->synced_cache_stats();
  EXPECT_EQ(st.misses, 0u) << "a partial write read a committed block";
  EXPECT_GE(st.hits, 5u * 16 / 2);
  EXPECT_EQ(st.blocks, 16u);
  // A limit evicts down to it; 0 empties the cache and writes read again.
  w->SetSyncedCacheLimit(4 * 131072);
  EXPECT_EQ(w->synced_cache_stats().blocks, 4u);
  w->SetSyncedCacheLimit(0);
  EXPECT_EQ(w->synced_cache_stats().bytes, 0u);
  Put(*w, m, obj, 5 * 131072 + 100, Pattern(10, 9), 8);
  EXPECT_EQ(w->synced_cache_stats().misses, 1u);
  auto root = w->Sync(8);
  ASSERT_UZFS_OK(root.status());
  EXPECT_EQ(Judge(zio_, *root, m), alloc_.allocated());
  EXPECT_EQ(w->synced_cache_stats().blocks, 0u);
}

// The cache never serves bytes the committed tree no longer has: frees,
// truncations, objects freed and their numbers reused, a one-block object
// changing its block size, a tiny limit evicting all the time, and txg N+1
// written while N syncs. Every txg is checked through the writer and, after
// its sync, on disk.
TEST_F(ObjsetWriterTest, SyncedCacheNeverServesStaleBytes) {
  for (uint64_t limit : {uint64_t{0}, uint64_t{3 * 4096}, uint64_t{64} << 20}) {
    SCOPED_TRACE("limit " + std::to_string(limit));
    const uint64_t base = alloc_.allocated();  // what earlier rounds' sets left allocated
    auto w = NewSet();
    w->SetSyncedCacheLimit(limit);
    Model m;
    std::mt19937_64 rng(11);
    ObjectProps small;
    small.block_size = 4096;
    small.indblkshift = 12;
    ObjectProps grow;  // one block that grows (a small file, a micro ZAP)
    grow.block_size = 1024;
    const uint64_t one = Alloc(*w, m, grow, 2);
    Put(*w, m, one, 0, Pattern(700, 1), 2);
    for (uint64_t txg = 2; txg < 16; txg++) {
      while (m.size() < 5) Alloc(*w, m, small, txg);
      for (int op = 0; op < 16; op++) {
        auto it = m.begin();
        std::advance(it, rng() % m.size());
        const uint64_t obj = it->first;
        auto& b = it->second.bytes;
        const int kind = rng() % 12;
        if (obj == one) {
          if (kind < 2 && b.size() <= 1024) {
            ASSERT_UZFS_OK(w->SetBlockSize(obj, 2048, 17, Txg{txg}));
            it->second.props.block_size = 2048;
          }
          const uint64_t bs = it->second.props.block_size;
          Put(*w, m, obj, rng() % (bs - 64), Pattern(1 + rng() % 64, rng()), txg);
        } else if (kind < 7) {
          Put(*w, m, obj, rng() % (4096 * 24), Pattern(1 + rng() % 6000, rng()), txg);
        } else if (kind < 9) {
          const uint64_t off = b.empty() ? 0 : rng() % b.size();
          const uint64_t len = 1 + rng() % (4096 * 3);
          ASSERT_UZFS_OK(w->FreeRange(obj, off, len, Txg{txg}));
          for (uint64_t i = off; i < std::min<uint64_t>(b.size(), off + len); i++) b[i] = 0;
        } else if (kind < 11) {
          // Truncate to a block boundary and write past it later.
          const uint64_t off = b.empty() ? 0 : (rng() % b.size()) / 4096 * 4096;
          ASSERT_UZFS_OK(w->FreeRange(obj, off, UINT64_MAX, Txg{txg}));
          b.resize(std::min<uint64_t>(b.size(), off));
        } else {
          ASSERT_UZFS_OK(w->FreeObject(obj, Txg{txg}));
          m.erase(it);
        }
      }
      CheckWriterReads(*w, m);
      // The next txg is written while this one syncs: partial writes of
      // blocks this txg holds copy them, never the cache.
      Model next = m;
      std::vector<std::pair<uint64_t, uint64_t>> later;  // (obj, off)
      for (const auto& [obj, mo] : m) {
        if (obj != one && !mo.bytes.empty()) later.push_back({obj, rng() % mo.bytes.size()});
      }
      std::thread writer([&] {
        for (const auto& [obj, off] : later) {
          std::vector<uint8_t> d = Pattern(100, obj * 1000 + off);
          EXPECT_UZFS_OK(w->Write(obj, off, d, Txg{txg + 1}));
        }
      });
      auto root = w->Sync(Txg{txg});
      writer.join();
      ASSERT_UZFS_OK(root.status());
      EXPECT_EQ(Judge(zio_, *root, m) + base, alloc_.allocated()) << "txg " << txg;
      for (const auto& [obj, off] : later) {
        std::vector<uint8_t> d = Pattern(100, obj * 1000 + off);
        auto& b = next[obj].bytes;
        if (b.size() < off + d.size()) b.resize(off + d.size(), 0);
        std::copy(d.begin(), d.end(), b.begin() + off);
      }
      m = next;
      CheckWriterReads(*w, m);
      if (limit != 0) {
        EXPECT_LE(w->synced_cache_stats().bytes, limit);
      }
      if (HasFailure()) return;
    }
    auto last = w->Sync(16);
    ASSERT_UZFS_OK(last.status());
    EXPECT_EQ(Judge(zio_, *last, m) + base, alloc_.allocated());
    if (limit == 0) {
      EXPECT_EQ(w->synced_cache_stats().hits, 0u);
    }
    if (limit > (1 << 20)) {
      EXPECT_GT(w->synced_cache_stats().hits, 0u);
    }
  }
}

// The real block layer: raidz2 of six plus a mirror, metaslab allocator
// (deferred frees), a large file needing an L1 level with lz4 and random
// changes over several txgs; after
// deleting everything and letting the frees mature, allocated space is
// exactly the live metadata.
TEST(ObjsetWriterPoolTest, RealBlockLayerNoLeaks) {
  auto io = std::move(IoEngine::Create()).value();
  std::vector<std::unique_ptr<Vdev>> rz, mirror;
  for (int i = 0; i < 8; i++) {
    MemDeviceOptions o;
    o.volatile_cache = false;
    auto leaf = MakeLeafVdev(std::move(MemDevice::Create(128ull << 20, o)).value(), *io, 1000 + i, 12);
    (i < 6 ? rz : mirror).push_back(std::move(leaf));
  }
  std::vector<std::unique_ptr<Vdev>> tops;
  tops.push_back(std::move(MakeRaidzVdev(std::move(rz), 2, 1, 12)).value());
  tops.push_back(std::move(MakeMirrorVdev(std::move(mirror), 2, 12)).value());
  auto root = std::move(MakeRootVdev(std::move(tops))).value();
  std::vector<TopVdevSpace> spaces;
  for (uint32_t v = 0; v < 2; v++) {
    Vdev* top = root->child(v);
    spaces.push_back(TopVdevSpace{v, top->asize(), top->ashift(), [top](uint64_t p) { return top->AllocatedSize(p); }, 0});
  }
  auto alloc = std::move(Allocator::Create(spaces, AllocatorOptions{})).value();
  MemSpaceMapProvider maps;
  auto commit = [&](uint64_t txg) {  // what the pool's sync will do
    ASSERT_UZFS_OK(alloc->SyncTxg(txg, maps));
    alloc->SyncDone(txg);
  };
  VdevTreeTarget target(*root);
  SpaAllocator shim(*alloc);
  {
    Zio zio(target, shim);
    auto w = std::move(ObjsetWriter::Create(zio, ObjsetType::kZfs, {})).value();
    Model m;
    ObjectProps p;
    auto a = w->AllocateObject(p, 10);
    ASSERT_UZFS_OK(a.status());
    m[*a].props = p;
    std::vector<uint8_t> big = Pattern(3 << 20, 1);  // 24 blocks: an L1 level
    ASSERT_UZFS_OK(w->Write(*a, 0, big, 10));
    m[*a].bytes = big;
    auto r = w->Sync(10);
    ASSERT_UZFS_OK(r.status());
    commit(10);
    EXPECT_EQ(Judge(zio, *r, m), alloc->allocated());
    // Random overwrites, holes and new objects over a few txgs; after each
    // commit the allocator's live bytes are the walked trees' bytes.
    std::mt19937_64 rng(3);
    for (uint64_t txg = 11; txg < 15; txg++) {
      ObjectProps q;
      q.block_size = 512ull << (rng() % 9);
      auto o = w->AllocateObject(q, Txg{txg});
      ASSERT_UZFS_OK(o.status());
      m[*o].props = q;
      for (int i = 0; i < 8; i++) {
        auto it = m.begin();
        std::advance(it, rng() % m.size());
        const uint64_t off = rng() % (4 << 20);
        auto d = (i % 3 == 2) ? std::vector<uint8_t>(1 + rng() % 300000, 0) : Pattern(1 + rng() % 300000, rng());
        ASSERT_UZFS_OK(w->Write(it->first, off, d, Txg{txg}));
        auto& b = it->second.bytes;
        if (b.size() < off + d.size()) b.resize(off + d.size(), 0);
        std::copy(d.begin(), d.end(), b.begin() + off);
      }
      r = w->Sync(Txg{txg});
      ASSERT_UZFS_OK(r.status());
      commit(txg);
      EXPECT_EQ(Judge(zio, *r, m), alloc->allocated()) << "txg " << txg;
    }
    for (const auto& [obj, mo] : m) ASSERT_UZFS_OK(w->FreeObject(obj, 15));
    m.clear();
    r = w->Sync(15);
    ASSERT_UZFS_OK(r.status());
    commit(15);
    EXPECT_GT(alloc->deferred(), 3u << 20);  // frees wait for their txg
    for (uint64_t t = 16; t < 19; t++) commit(t);
    EXPECT_EQ(alloc->deferred(), 0u);
    EXPECT_EQ(Judge(zio, *r, m), alloc->allocated());
  }
  root.reset();
}

// Early writes: 128 KiB blocks of uncompressed data.
constexpr uint64_t kB = 131072;
ObjectProps Uncompressed() {
  ObjectProps p;
  p.compress = static_cast<uint8_t>(CompressType::kOff);
  return p;
}

// WriteEarly ("dmu_sync", for writes logged by reference): the sync puts
// the early block in the tree instead of writing the data again; a block
// changed or truncated away after its early write is written anew (or
// not at all) and its early block freed; nothing leaks; no early write
// for a txg that has synced or a block the txg does not hold.
TEST_F(ObjsetWriterTest, EarlyWritesAreReusedBySync) {
  auto w = NewSet();
  Model m;
  const uint64_t a = Alloc(*w, m, Uncompressed(), 5);
  Put(*w, m, a, 0, test::RandomBytes(4 * kB, 1), 5);
  std::vector<ObjsetWriter::EarlyWrite> req;
  for (uint64_t i = 0; i < 4; i++) req.push_back({a, i * kB + 100, 5, Status::Ok(), {}});
  req.push_back({a, kB, 5, Status::Ok(), {}});  // block 1 again
  req.push_back({a, 0, 4, Status::Ok(), {}});   // txg 4 holds nothing of it
  w->WriteEarly(req);
  for (int i = 0; i < 5; i++) {
    ASSERT_UZFS_OK(req[i].status);
    EXPECT_EQ(req[i].bp.birth, 5u);
    EXPECT_EQ(req[i].bp.lsize, kB);
  }
  EXPECT_TRUE(req[4].bp == req[1].bp);
  EXPECT_TRUE(req[5].status.IsNotFound()) << req[5].status.ToString();
  Put(*w, m, a, 2 * kB + 5, {1, 2, 3}, 5);  // block 2 changes again
  // ... and is not written early again in txg 5 (its dropped early block
  // holds its space until the sync): the caller copies.
  std::vector<ObjsetWriter::EarlyWrite> again{{a, 2 * kB, 5, Status::Ok(), {}}};
  w->WriteEarly(again);
  EXPECT_FALSE(again[0].status.ok());
  ASSERT_UZFS_OK(w->FreeRange(a, 3 * kB, UINT64_MAX, 5));  // block 3 goes
  m[a].bytes.resize(3 * kB);
  uint64_t written0 = zio_.stats().logical_written.load();
  auto root = w->Sync(5);
  ASSERT_UZFS_OK(root.status());
  const uint64_t with_early = zio_.stats().logical_written.load() - written0;
  EXPECT_EQ(w->early_used(), 2u);
  EXPECT_EQ(w->early_dropped(), 2u);
  CheckWriterReads(*w, m);
  EXPECT_EQ(Judge(zio_, *root, m), alloc_.allocated());
  auto dn = w->GetDnode(a);
  ASSERT_UZFS_OK(dn.status());
  BlockTree tree(zio_, *dn);
  auto l0 = tree.Lookup(0, 0);
  ASSERT_UZFS_OK(l0.status());
  EXPECT_TRUE(*l0 == req[0].bp);
  std::vector<ObjsetWriter::EarlyWrite> late{{a, 0, 5, Status::Ok(), {}}};
  w->WriteEarly(late);
  EXPECT_FALSE(late[0].status.ok());  // txg 5 has synced
  {
    // The same changes without early writes: the sync writes blocks 0
    // and 1 too.
    auto c = NewSet();
    Model cm;
    const uint64_t ca = Alloc(*c, cm, Uncompressed(), 5);
    Put(*c, cm, ca, 0, test::RandomBytes(4 * kB, 1), 5);
    Put(*c, cm, ca, 2 * kB + 5, {1, 2, 3}, 5);
    ASSERT_UZFS_OK(c->FreeRange(ca, 3 * kB, UINT64_MAX, 5));
    written0 = zio_.stats().logical_written.load();
    ASSERT_UZFS_OK(c->Sync(5).status());
    EXPECT_EQ(zio_.stats().logical_written.load() - written0, with_early + 2 * kB);
  }
}

// An early write writes from the record's own buffer: a change to the
// block while that write is in flight must go to a copy (DirtyBlock's copy
// on write), so the early block holds exactly the bytes that were logged
// and the sync writes the new bytes.
TEST_F(ObjsetWriterTest, ChangeDuringAnEarlyWriteGoesToACopy) {
  auto w = NewSet();
  Model m;
  const uint64_t a = Alloc(*w, m, Uncompressed(), 5);
  const std::vector<uint8_t> logged = test::RandomBytes(kB, 3);
  Put(*w, m, a, 0, logged, 5);
  const std::vector<uint8_t> later = test::RandomBytes(kB, 4);
  bool changed = false;
  target_.before_write = [&] {
    if (changed) return;
    changed = true;
    Put(*w, m, a, 0, later, 5);  // on the zio worker, mid early write
  };
  std::vector<ObjsetWriter::EarlyWrite> req{{a, 0, 5, Status::Ok(), {}}};
  w->WriteEarly(req);
  target_.before_write = nullptr;
  ASSERT_TRUE(changed);
  ASSERT_UZFS_OK(req[0].status);
  std::vector<uint8_t> got(kB);
  ASSERT_UZFS_OK(zio_.Read(req[0].bp, got));  // verified against its checksum
  EXPECT_EQ(got, logged);
  CheckWriterReads(*w, m);  // the writer sees the change
  auto root = w->Sync(5);
  ASSERT_UZFS_OK(root.status());
  EXPECT_EQ(w->early_used(), 0u);
  EXPECT_EQ(w->early_dropped(), 1u);
  CheckWriterReads(*w, m);
  EXPECT_EQ(Judge(zio_, *root, m), alloc_.allocated());
}

}  // namespace
}  // namespace uzfs
