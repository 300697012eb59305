// ObjsetWriter sync passes (multi_pass, what the pool does to the MOS):
// after Sync(T), txg T is changed again and synced again until a pass
// allocates and frees nothing. Judged by an allocator that counts every
// allocation and free and keeps frees deferred (so a block of an older txg
// that were overwritten would show), and by full traversals of the trees
// (every block read and checksum-verified, dn_used and SyncStats compared
// with what the traversal finds).
#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "tests/testutil/testutil.h"
#include "tests/zio/zio_test_util.h"
#include "zfs/dmu/block_tree.h"
#include "zfs/dmu/object_reader.h"
#include "zfs/dmu/objset_writer.h"

namespace uzfs {
namespace {

constexpr uint64_t kAsize = 96ull << 20;

// Counts calls; frees are held until Drain() (as the real allocator defers
// them), so space freed in a txg is not reused while older roots may still
// be read.
class CountingAllocator : public BlockAllocator {
 public:
  CountingAllocator(uint32_t vdevs, uint64_t asize) : inner_(vdevs, asize) {}
  Result<std::vector<Dva>> Allocate(uint64_t psize, int copies, uint64_t txg) override {
    auto r = inner_.Allocate(psize, copies, txg);
    std::lock_guard<std::mutex> l(mu_);
    if (r.ok()) allocs_++;
    return r;
  }
  Status Free(const Dva& d, uint64_t txg) override {
    std::lock_guard<std::mutex> l(mu_);
    frees_++;
    deferred_.push_back(d);
    return Status::Ok();
  }
  Status Unallocate(const Dva& d, uint64_t txg) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      unallocs_++;
    }
    return inner_.Free(d, txg);
  }
  Status Drain() {
    std::vector<Dva> ds;
    {
      std::lock_guard<std::mutex> l(mu_);
      ds.swap(deferred_);
    }
    for (const Dva& d : ds) UZFS_RETURN_IF_ERROR(inner_.Free(d, 0));  // Corruption on a double free
    return Status::Ok();
  }
  uint64_t allocs() { std::lock_guard<std::mutex> l(mu_); return allocs_; }
  uint64_t frees() { std::lock_guard<std::mutex> l(mu_); return frees_; }
  uint64_t unallocs() { std::lock_guard<std::mutex> l(mu_); return unallocs_; }
  uint64_t allocated() { return inner_.allocated(); }

 private:
  test::SectorAllocator inner_;
  std::mutex mu_;
  std::vector<Dva> deferred_;
  uint64_t allocs_ = 0, frees_ = 0, unallocs_ = 0;
};

struct Sums {
  uint64_t blocks = 0, asize = 0, psize = 0, lsize = 0;  // lsize: ZFS's UCSIZE (psize for metadata)
  uint64_t max_birth = 0;
};

// Every block under bp (at `level`), each read through Zio (checksum
// verified); dnode blocks (type kDnode, level 0) are decoded and each
// allocated object's tree walked too, its dn_used checked.
void WalkPtr(Zio& zio, const BlockPtr& bp, int level, uint64_t ind_size, uint64_t dblk, uint8_t type,
             Sums* s, uint64_t* fill, std::vector<Dnode>* found);
void WalkDnode(Zio& zio, const Dnode& dn, Sums* s) {
  Sums mine;
  uint64_t fill = 0;
  std::vector<Dnode> found;  // objects in dn's dnode blocks (dn: a meta-dnode)
  for (const BlockPtr& bp : dn.blkptr)
    WalkPtr(zio, bp, dn.nlevels - 1, dn.IndirectBlockSize(), dn.DataBlockSize(), dn.type, &mine, &fill, &found);
  EXPECT_EQ(dn.UsedBytes(), mine.asize) << "dn_used of a type " << int(dn.type) << " object";
  s->blocks += mine.blocks;
  s->asize += mine.asize;
  s->psize += mine.psize;
  s->lsize += mine.lsize;
  s->max_birth = std::max(s->max_birth, mine.max_birth);
  for (const Dnode& o : found) WalkDnode(zio, o, s);
}

void WalkPtr(Zio& zio, const BlockPtr& bp, int level, uint64_t ind_size, uint64_t dblk, uint8_t type,
             Sums* s, uint64_t* fill, std::vector<Dnode>* found) {
  if (bp.IsHole()) return;
  ASSERT_EQ(bp.level, level);
  ASSERT_EQ(bp.type, type);
  s->blocks++;
  s->asize += BlockAsize(bp);
  s->psize += bp.psize;
  s->lsize += (bp.level > 0 || IsMetadataType(bp.type)) ? bp.psize : bp.lsize;  // BP_GET_UCSIZE
  s->max_birth = std::max(s->max_birth, bp.birth);
  std::vector<uint8_t> raw(bp.lsize);
  ASSERT_UZFS_OK(zio.Read(bp, raw));  // verifies the checksum of some copy
  // ... and every copy, so a half-overwritten block shows too.
  for (int d = 0; d < 3; d++) {
    if (bp.dva[d].asize == 0) continue;
    BlockPtr one = bp;
    for (int k = 0; k < 3; k++) one.dva[k] = k == 0 ? bp.dva[d] : Dva{};
    std::vector<uint8_t> again(bp.lsize);
    EXPECT_TRUE(zio.Read(one, again).ok()) << "copy " << d;
  }
  if (level == 0) {
    ASSERT_EQ(bp.lsize, dblk);
    if (type == dmu_ot::kDnode) {
      uint64_t n = 0;
      for (size_t i = 0; i < kDnodesPerBlock;) {
        std::span<const uint8_t> slot(raw.data() + i * kDnodeSlotSize, raw.size() - i * kDnodeSlotSize);
        if (slot[0] == 0) {
          i++;
          continue;
        }
        auto dn = DecodeDnode(slot);
        ASSERT_UZFS_OK(dn.status());
        found->push_back(*dn);
        n++;
        i += dn->Slots();
      }
      EXPECT_EQ(bp.fill, n) << "fill of a dnode block";
    }
    *fill += bp.fill;
    return;
  }
  ASSERT_EQ(bp.lsize, ind_size);
  uint64_t below = 0;
  for (size_t i = 0; i < raw.size() / kBlockPtrSize; i++) {
    BlockPtr c = DecodeBlockPtr(std::span<const uint8_t, kBlockPtrSize>(raw.data() + i * kBlockPtrSize, kBlockPtrSize));
    if (c.IsHole()) continue;
    WalkPtr(zio, c, level - 1, ind_size, dblk, type, s, &below, found);
  }
  EXPECT_EQ(bp.fill, below) << "fill of an L" << level << " block";
  *fill += below;
}

// The whole set under root: objset block, meta-dnode tree, every object.
Sums Traverse(Zio& zio, const BlockPtr& root) {
  Sums s;
  ObjectReader r(zio);
  auto os = r.ReadObjset(root);
  EXPECT_UZFS_OK(os.status());
  if (!os.ok()) return s;
  s.blocks = 1;
  s.asize = BlockAsize(root);
  s.psize = root.psize;
  s.lsize = root.psize;  // the objset block is metadata: its UCSIZE is psize
  s.max_birth = root.birth;
  WalkDnode(zio, os->meta_dnode, &s);
  return s;
}

using Model = std::map<uint64_t, std::vector<uint8_t>>;

void Put(ObjsetWriter& w, Model& m, uint64_t obj, uint64_t off, const std::vector<uint8_t>& d, uint64_t txg) {
  ASSERT_UZFS_OK(w.Write(obj, off, d, Txg{txg}));
  auto& b = m[obj];
  if (b.size() < off + d.size()) b.resize(off + d.size(), 0);
  std::copy(d.begin(), d.end(), b.begin() + off);
}

// Reopens root with ObjsetWriter::Open and ObjectReader; every object of
// the model reads back exactly.
void CheckContents(Zio& zio, const BlockPtr& root, const Model& m) {
  auto w = ObjsetWriter::Open(zio, root, ObjsetWriterOptions{});
  ASSERT_UZFS_OK(w.status());
  ObjectReader r(zio);
  auto os = r.ReadObjset(root);
  ASSERT_UZFS_OK(os.status());
  for (const auto& [obj, bytes] : m) {
    std::vector<uint8_t> got(bytes.size() + 512, 0xEE), want = bytes;
    want.resize(got.size(), 0);
    ASSERT_UZFS_OK((*w)->Read(obj, 0, got));
    EXPECT_TRUE(got == want) << "object " << obj << " through ObjsetWriter::Open";
    auto dn = r.ReadDnode(os->meta_dnode, obj);
    ASSERT_UZFS_OK(dn.status());
    std::fill(got.begin(), got.end(), 0xEE);
    ASSERT_UZFS_OK(r.Read(*dn, 0, got));
    EXPECT_TRUE(got == want) << "object " << obj << " through ObjectReader";
  }
}

std::vector<uint8_t> Compressible(size_t n, uint64_t seed) {
  auto d = test::RandomBytes(n, seed);
  for (size_t i = 0; i < n; i++) {
    if (i % 4 != 0) d[i] = 's';
  }
  return d;
}

class ObjsetMultipassTest : public ::testing::Test {
 protected:
  ObjsetMultipassTest() : target_(2, kAsize), alloc_(2, kAsize), zio_(target_, alloc_, ZioOptions{.threads = 2}) {}

  std::unique_ptr<ObjsetWriter> NewMos() {
    ObjsetWriterOptions o;
    o.multi_pass = true;
    auto w = ObjsetWriter::Create(zio_, ObjsetType::kMeta, o);
    EXPECT_UZFS_OK(w.status());
    return std::move(*w);
  }

  // One Sync pass; checks that SyncStats equal the change in what a full
  // traversal finds, that dn_used is right everywhere, and that the
  // allocator saw exactly the born and killed blocks.
  BlockPtr Pass(ObjsetWriter& w, uint64_t txg, SyncStats* out = nullptr) {
    const BlockPtr before = w.root();
    const Sums s0 = before.IsHole() ? Sums{} : Traverse(zio_, before);
    const uint64_t a0 = alloc_.allocs(), f0 = alloc_.frees();
    SyncStats st;
    auto root = w.Sync(Txg{txg}, &st);
    EXPECT_UZFS_OK(root.status());
    if (!root.ok()) return {};
    const SyncStats last = w.LastSyncStats();
    EXPECT_EQ(last.pass, st.pass);
    EXPECT_EQ(last.born_asize, st.born_asize);
    const Sums s1 = Traverse(zio_, *root);
    EXPECT_EQ(st.txg.number(), txg);
    EXPECT_EQ(int64_t(s1.asize) - int64_t(s0.asize), int64_t(st.born_asize) - int64_t(st.killed_asize));
    EXPECT_EQ(int64_t(s1.psize) - int64_t(s0.psize), int64_t(st.born_psize) - int64_t(st.killed_psize));
    EXPECT_EQ(int64_t(s1.lsize) - int64_t(s0.lsize), int64_t(st.born_lsize) - int64_t(st.killed_lsize));
    EXPECT_EQ(int64_t(s1.blocks) - int64_t(s0.blocks), int64_t(st.born_blocks) - int64_t(st.killed_blocks));
    EXPECT_EQ(alloc_.allocs() - a0, st.born_blocks) << "one allocation per block born (no gangs here)";
    // Every block of a MOS has three copies; Zio frees them one DVA at a time.
    EXPECT_EQ(alloc_.frees() - f0, 3 * st.killed_blocks);
    EXPECT_EQ(s1.max_birth, txg);
    if (out) *out = st;
    return *root;
  }

  test::MemTarget target_;
  CountingAllocator alloc_;
  Zio zio_;
};

TEST_F(ObjsetMultipassTest, PassesConvergeByRewritingInPlace) {
  auto w = NewMos();
  Model m;
  ObjectProps p;
  p.type = dmu_ot::kSpaceMap;
  p.block_size = 4096;  // 20 blocks: an indirect level above the data
  auto a = w->AllocateObject(p, 4);
  ASSERT_UZFS_OK(a.status());
  Put(*w, m, *a, 0, Compressible(20 * 4096, 1), 4);
  auto b = w->AllocateObject(p, 4);
  ASSERT_UZFS_OK(b.status());
  Put(*w, m, *b, 0, Compressible(3000, 2), 4);
  const BlockPtr root4 = Pass(*w, 4);
  const Model m4 = m;
  const Sums t4 = Traverse(zio_, root4);

  // txg 5, pass 1: change both objects and add one.
  Put(*w, m, *a, 4096 * 3, Compressible(5000, 3), 5);
  ObjectProps q = p;
  q.block_size = 16384;
  auto c = w->AllocateObject(q, 5);
  ASSERT_UZFS_OK(c.status());
  Put(*w, m, *c, 0, Compressible(16384, 4), 5);
  SyncStats s1;
  Pass(*w, 5, &s1);
  EXPECT_EQ(s1.pass, 1);
  EXPECT_EQ(s1.rewritten_blocks, 0u) << "pass 1 overwrites nothing";
  EXPECT_GT(s1.killed_blocks, 0u);
  EXPECT_FALSE(w->HasDirty(5));

  // Pass 2: "space map entries" appended into blocks pass 1 wrote
  // (compressed then, so they cannot be rewritten: new blocks, old freed).
  Put(*w, m, *a, 4096 * 3 + 5000, Compressible(100, 5), 5);
  Put(*w, m, *c, 9000, Compressible(200, 6), 5);
  EXPECT_TRUE(w->HasDirty(5));
  SyncStats s2;
  const BlockPtr r2 = Pass(*w, 5, &s2);
  EXPECT_EQ(s2.pass, 2);
  EXPECT_GT(s2.born_blocks, 0u);
  EXPECT_GT(s2.killed_blocks, 0u);
  EXPECT_EQ(r2.compression, static_cast<uint8_t>(CompressType::kOff)) << "no compression from pass 2 on";
  {
    ObjectReader r(zio_);
    auto os = r.ReadObjset(r2);
    ASSERT_UZFS_OK(os.status());
    auto dn = r.ReadDnode(os->meta_dnode, *a);
    ASSERT_UZFS_OK(dn.status());
    auto l0 = r.BlockPointerAt(*dn, 0, 4);
    ASSERT_UZFS_OK(l0.status());
    EXPECT_EQ(l0->compression, static_cast<uint8_t>(CompressType::kOff));
    EXPECT_EQ(l0->birth, 5u);
  }

  // Passes 3 and 4: more entries into the same blocks: everything dirty
  // was born in pass 2 at its final size, so all of it is rewritten in
  // place: no allocation, no free.
  for (int pass = 3; pass <= 4; pass++) {
    SCOPED_TRACE("pass " + std::to_string(pass));
    Put(*w, m, *a, 4096 * 3 + 5100 + pass * 10, Compressible(10, 7 + pass), 5);
    Put(*w, m, *c, 9200 + pass * 10, Compressible(10, 17 + pass), 5);
    const uint64_t allocs = alloc_.allocs(), frees = alloc_.frees(), allocated = alloc_.allocated();
    SyncStats st;
    const BlockPtr r = Pass(*w, 5, &st);
    EXPECT_EQ(st.pass, pass);
    EXPECT_EQ(alloc_.allocs(), allocs);
    EXPECT_EQ(alloc_.frees(), frees);
    EXPECT_EQ(alloc_.allocated(), allocated);
    EXPECT_EQ(st.born_blocks, 0u);
    EXPECT_EQ(st.killed_blocks, 0u);
    EXPECT_EQ(st.born_asize + st.killed_asize, 0u);
    EXPECT_GT(st.rewritten_blocks, 3u);  // data of a and c, a's L1, the dnode block, meta tree, root
    EXPECT_TRUE(IsRewriteOf(r, r2)) << "the objset block itself is rewritten";
    EXPECT_TRUE(st.wrote);
  }

  // A pass with nothing dirty writes nothing and keeps the root.
  ASSERT_FALSE(w->HasDirty(5));
  const BlockPtr before = w->root();
  const uint64_t writes = target_.writes();
  SyncStats idle;
  auto r5 = w->Sync(5, &idle);
  ASSERT_UZFS_OK(r5.status());
  EXPECT_EQ(*r5, before);
  EXPECT_EQ(target_.writes(), writes);
  EXPECT_FALSE(idle.wrote);
  EXPECT_EQ(idle.pass, 5);
  EXPECT_EQ(idle.born_blocks + idle.killed_blocks + idle.rewritten_blocks, 0u);

  // The final tree reads back; the txg-4 tree was never overwritten.
  CheckContents(zio_, *r5, m);
  CheckContents(zio_, root4, m4);
  const Sums again4 = Traverse(zio_, root4);
  EXPECT_EQ(again4.asize, t4.asize);
  EXPECT_EQ(again4.max_birth, 4u);
  // Once the deferred frees are returned, what stays allocated is exactly
  // the final tree (nothing leaked, nothing freed twice).
  ASSERT_UZFS_OK(alloc_.Drain());
  EXPECT_EQ(alloc_.allocated(), Traverse(zio_, *r5).asize);
  EXPECT_EQ(alloc_.unallocs(), 0u);
  // The next txg is a normal first pass again.
  Put(*w, m, *b, 0, Compressible(100, 40), 6);
  SyncStats s6;
  const BlockPtr r6 = Pass(*w, 6, &s6);
  EXPECT_EQ(s6.pass, 1);
  EXPECT_EQ(s6.rewritten_blocks, 0u);
  EXPECT_NE(r6.compression, static_cast<uint8_t>(CompressType::kOff));
  CheckContents(zio_, r6, m);
}

// Frees, truncation, new and freed objects in later passes: blocks born in
// an earlier pass are freed (in T), used and SyncStats stay right.
TEST_F(ObjsetMultipassTest, FreesAndObjectsInLaterPasses) {
  auto w = NewMos();
  Model m;
  ObjectProps p;
  p.type = dmu_ot::kSpaceMap;
  p.block_size = 4096;
  auto a = w->AllocateObject(p, 7);
  ASSERT_UZFS_OK(a.status());
  Put(*w, m, *a, 0, Compressible(8 * 4096, 1), 7);
  const BlockPtr root7 = Pass(*w, 7);
  const Model m7 = m;

  Put(*w, m, *a, 8 * 4096, Compressible(8 * 4096, 2), 8);  // blocks 8..15 born in 8
  auto b = w->AllocateObject(p, 8);
  ASSERT_UZFS_OK(b.status());
  Put(*w, m, *b, 0, Compressible(4096, 3), 8);
  Pass(*w, 8);

  // Pass 2: truncate a into the blocks pass 1 wrote, free b, allocate d.
  ASSERT_UZFS_OK(w->FreeRange(*a, 12 * 4096, UINT64_MAX, 8));
  m[*a].resize(12 * 4096);
  ASSERT_UZFS_OK(w->FreeObject(*b, 8));
  m.erase(*b);
  auto d = w->AllocateObject(p, 8);
  ASSERT_UZFS_OK(d.status());
  Put(*w, m, *d, 0, Compressible(2 * 4096, 4), 8);
  SyncStats s2;
  Pass(*w, 8, &s2);
  EXPECT_EQ(s2.pass, 2);
  EXPECT_GT(s2.killed_blocks, 4u);

  // Pass 3: a hole punched in a block of pass 2, a whole block of pass 1
  // zeroed, a write into d: its blocks were born in pass 2 uncompressed.
  ASSERT_UZFS_OK(w->FreeRange(*d, 4096, 4096, 8));
  std::fill(m[*d].begin() + 4096, m[*d].begin() + 8192, 0);
  std::vector<uint8_t> zeros(4096, 0);
  Put(*w, m, *a, 9 * 4096, zeros, 8);
  Put(*w, m, *d, 10, Compressible(10, 5), 8);
  SyncStats s3;
  Pass(*w, 8, &s3);
  EXPECT_GT(s3.rewritten_blocks, 0u);
  EXPECT_GE(s3.killed_blocks, 2u);  // d's block 1 and a's block 9

  // Pass 4: only rewrites.
  Put(*w, m, *d, 20, Compressible(10, 6), 8);
  const uint64_t allocs = alloc_.allocs(), frees = alloc_.frees();
  SyncStats s4;
  const BlockPtr r4 = Pass(*w, 8, &s4);
  EXPECT_EQ(alloc_.allocs(), allocs);
  EXPECT_EQ(alloc_.frees(), frees);
  EXPECT_EQ(s4.born_blocks + s4.killed_blocks, 0u);

  CheckContents(zio_, r4, m);
  CheckContents(zio_, root7, m7);
  EXPECT_EQ(Traverse(zio_, root7).max_birth, 7u);
  ASSERT_UZFS_OK(alloc_.Drain());
  EXPECT_EQ(alloc_.allocated(), Traverse(zio_, r4).asize);
}

TEST_F(ObjsetMultipassTest, WhatMayTargetASyncedTxg) {
  ObjectProps p;
  p.type = dmu_ot::kSpaceMap;
  p.block_size = 4096;
  // Without multi_pass a synced txg is closed.
  {
    auto w = ObjsetWriter::Create(zio_, ObjsetType::kMeta, ObjsetWriterOptions{});
    ASSERT_UZFS_OK(w.status());
    auto o = (*w)->AllocateObject(p, 3);
    ASSERT_UZFS_OK(o.status());
    ASSERT_UZFS_OK((*w)->Sync(3).status());
    EXPECT_EQ((*w)->Write(*o, 0, Compressible(10, 1), 3).code(), Code::kInvalidArgument);
    EXPECT_EQ((*w)->Sync(3).status().code(), Code::kInvalidArgument);
  }
  auto w = NewMos();
  auto o = w->AllocateObject(p, 3);
  ASSERT_UZFS_OK(o.status());
  ASSERT_UZFS_OK(w->Write(*o, 0, Compressible(100, 1), 3));
  const BlockPtr r3 = w->Sync(3).value();
  // Older txgs stay closed; the last synced one is open.
  EXPECT_EQ(w->Write(*o, 0, Compressible(10, 2), 2).code(), Code::kInvalidArgument);
  EXPECT_EQ(w->AllocateObject(p, 2).status().code(), Code::kInvalidArgument);
  ASSERT_UZFS_OK(w->Write(*o, 0, Compressible(10, 2), 3));
  ASSERT_UZFS_OK(w->SetBonus(*o, 0, {}, 3));
  ASSERT_UZFS_OK(w->Sync(3).status());
  // Once a newer txg has changes, txg 3 is closed for good.
  ASSERT_UZFS_OK(w->Write(*o, 0, Compressible(10, 3), 4));
  EXPECT_EQ(w->Write(*o, 0, Compressible(10, 4), 3).code(), Code::kInvalidArgument);
  EXPECT_EQ(w->AllocateObject(p, 3).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(w->FreeObject(*o, 3).code(), Code::kInvalidArgument);
  ASSERT_UZFS_OK(w->Sync(4).status());
  EXPECT_EQ(w->Write(*o, 0, Compressible(10, 5), 3).code(), Code::kInvalidArgument);
  // A writer opened from a durable root never treats its txg as open.
  const BlockPtr r4 = w->root();
  ObjsetWriterOptions mo;
  mo.multi_pass = true;
  auto opened = ObjsetWriter::Open(zio_, r4, mo);
  ASSERT_UZFS_OK(opened.status());
  EXPECT_EQ((*opened)->Write(*o, 0, Compressible(10, 6), 4).code(), Code::kInvalidArgument);
  EXPECT_EQ((*opened)->Sync(4).status().code(), Code::kInvalidArgument);
  (void)r3;
}

// A pass >= 2 that fails mid-write: nothing newly allocated stays, nothing
// durable is touched, and the writer refuses to go on (txg 5 is lost).
TEST_F(ObjsetMultipassTest, FailedLaterPassPoisonsTheTxgButNotOlderRoots) {
  auto w = NewMos();
  Model m;
  ObjectProps p;
  p.type = dmu_ot::kSpaceMap;
  p.block_size = 4096;
  auto a = w->AllocateObject(p, 4);
  ASSERT_UZFS_OK(a.status());
  Put(*w, m, *a, 0, Compressible(6 * 4096, 1), 4);
  const BlockPtr root4 = Pass(*w, 4);
  const Model m4 = m;
  Put(*w, m, *a, 100, Compressible(100, 2), 5);
  Pass(*w, 5);
  Put(*w, m, *a, 300, Compressible(100, 3), 5);
  Pass(*w, 5);
  Put(*w, m, *a, 500, Compressible(100, 4), 5);
  const uint64_t allocated = alloc_.allocated();
  target_.Fail(1, true);
  auto r = w->Sync(5);
  EXPECT_FALSE(r.ok());
  target_.Fail(1, false);
  EXPECT_EQ(alloc_.allocated(), allocated) << "new blocks unallocated, rewritten ones kept";
  EXPECT_TRUE(w->Write(*a, 0, Compressible(10, 5), 5).IsIoError());
  EXPECT_TRUE(w->Sync(5).status().IsIoError());
  EXPECT_TRUE(w->Write(*a, 0, Compressible(10, 5), 6).IsIoError());
  CheckContents(zio_, root4, m4);
  EXPECT_EQ(Traverse(zio_, root4).max_birth, 4u);
}

// A failed first pass is retried as before, and passes continue after it.
TEST_F(ObjsetMultipassTest, FailedFirstPassCanBeRetried) {
  auto w = NewMos();
  Model m;
  ObjectProps p;
  p.type = dmu_ot::kSpaceMap;
  p.block_size = 4096;
  auto a = w->AllocateObject(p, 4);
  ASSERT_UZFS_OK(a.status());
  Put(*w, m, *a, 0, Compressible(3 * 4096, 1), 4);
  Pass(*w, 4);
  Put(*w, m, *a, 100, Compressible(100, 2), 5);
  const uint64_t allocated = alloc_.allocated();
  target_.Fail(0, true);
  EXPECT_FALSE(w->Sync(5).ok());
  target_.Fail(0, false);
  EXPECT_EQ(alloc_.allocated(), allocated);
  SyncStats s;
  Pass(*w, 5, &s);
  EXPECT_EQ(s.pass, 1);
  Put(*w, m, *a, 200, Compressible(100, 3), 5);
  Pass(*w, 5, &s);
  EXPECT_EQ(s.pass, 2);
  CheckContents(zio_, w->root(), m);
}

}  // namespace
}  // namespace uzfs
