// ObjsetWriter on a pool zfs-fuse wrote (tests/fixtures/pools/dmupool, v23,
// lzjb): a copy of the image, grown so new blocks go only into space past
// the pool's old end (no space maps yet: that space is certainly free), has
// the file dmupool/fs/gen.txt changed in place, append and hole punch
// included; the dataset's object set syncs to a new root, and the read side
// reads the new root back. Labels and uberblocks are not touched (the
// pool-level commit comes with txg sync). Every freed block must belong to
// the old tree and none may still be referenced by the new one.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "tests/dmu/pool_image.h"
#include "tests/testutil/testutil.h"
#include "zfs/dmu/block_tree.h"
#include "zfs/dmu/objset_writer.h"

namespace uzfs {
namespace {

constexpr uint64_t kGrowth = 64ull << 20;

class WritableStripe : public BlockTarget {
 public:
  WritableStripe(BlockDevice& dev, uint64_t asize) : dev_(dev), asize_(asize) {}
  uint32_t TopLevelCount() const override { return 1; }
  uint64_t TopLevelAsize(uint32_t) const override { return asize_; }
  void Submit(std::span<BlockIo> ios) override {
    for (BlockIo& io : ios)
      io.status = io.is_read() ? ReadBlock(io.vdev, io.offset, io.buf, io.verifier())
                               : WriteBlock(io.vdev, io.offset, io.buf);
  }
  Status ReadBlock(uint32_t vdev, uint64_t off, std::span<uint8_t> buf, const BlockVerifier* verify) {
    if (vdev != 0) return Status::IoError("no such vdev");
    UZFS_RETURN_IF_ERROR(dev_.Read(kVdevDataOffset + off, buf));
    if (verify && !(*verify)(buf)) return Status::Corruption("checksum mismatch");
    return Status::Ok();
  }
  Status WriteBlock(uint32_t vdev, uint64_t off, std::span<const uint8_t> buf) {
    if (vdev != 0) return Status::IoError("no such vdev");
    return dev_.Write(kVdevDataOffset + off, buf);
  }

 private:
  BlockDevice& dev_;
  const uint64_t asize_;
};

// Bump allocation in [start, end): the region added to the image. Frees are
// only recorded (the old pool's space maps are not maintained yet).
class GrowthAllocator : public BlockAllocator {
 public:
  GrowthAllocator(uint64_t start, uint64_t end) : next_(start), start_(start), end_(end) {}
  Result<std::vector<Dva>> Allocate(uint64_t psize, int copies, uint64_t) override {
    MutexLock l(&mu_);
    const uint64_t asize = (psize + 511) & ~uint64_t{511};
    if (next_ + asize * copies > end_) return Status::NoSpace("growth region full");
    std::vector<Dva> out;
    for (int c = 0; c < copies; c++) {
      out.push_back(Dva{.vdev = 0, .asize = asize, .offset = next_});
      next_ += asize;
    }
    return out;
  }
  Status Free(const Dva& d, uint64_t) override {
    MutexLock l(&mu_);
    freed_.push_back(d);
    return Status::Ok();
  }
  std::vector<Dva> freed() {
    MutexLock l(&mu_);
    return freed_;
  }
  uint64_t start() const { return start_; }

 private:
  Mutex mu_;
  uint64_t next_ UZFS_GUARDED_BY(mu_);
  const uint64_t start_, end_;
  std::vector<Dva> freed_ UZFS_GUARDED_BY(mu_);
};

// Every DVA of the tree of dn (and below), for the live-set check.
void CollectDvas(Zio& zio, const Dnode& dn, const BlockPtr& bp, int level, std::set<uint64_t>* out) {
  if (bp.IsHole()) return;
  for (int d = 0; d < bp.NumDvas(); d++) out->insert(bp.dva[d].offset);
  if (level == 0) return;
  std::vector<uint8_t> raw(bp.lsize);
  ASSERT_UZFS_OK(zio.Read(bp, raw));
  for (size_t i = 0; i < raw.size() / kBlockPtrSize; i++) {
    BlockPtr c = DecodeBlockPtr(std::span<const uint8_t, kBlockPtrSize>(raw.data() + i * kBlockPtrSize, kBlockPtrSize),
                                !bp.little_endian);
    CollectDvas(zio, dn, c, level - 1, out);
  }
}
uint64_t TreeAsize(Zio& zio, const BlockPtr& bp, int level) {
  if (bp.IsHole()) return 0;
  uint64_t n = BlockAsize(bp);
  if (level == 0) return n;
  std::vector<uint8_t> raw(bp.lsize);
  EXPECT_UZFS_OK(zio.Read(bp, raw));
  for (size_t i = 0; i < raw.size() / kBlockPtrSize; i++) {
    n += TreeAsize(zio, DecodeBlockPtr(std::span<const uint8_t, kBlockPtrSize>(raw.data() + i * kBlockPtrSize, kBlockPtrSize),
                                       !bp.little_endian), level - 1);
  }
  return n;
}
void CollectTree(Zio& zio, const Dnode& dn, std::set<uint64_t>* out) {
  for (const BlockPtr& bp : dn.blkptr) CollectDvas(zio, dn, bp, dn.nlevels - 1, out);
}

TEST(ObjsetWriterFixtureTest, ModifyAFileInAZfsFuseDataset) {
  test::PoolImage pool("dmupool");
  ASSERT_TRUE(pool.ok());
  // dmupool/fs: root_dataset -> child "fs" -> head dataset -> its bp.
  auto od = pool.MosZap(1);
  ASSERT_UZFS_OK(od.status());
  auto rootdir = od->LookupUint64("root_dataset");
  ASSERT_UZFS_OK(rootdir.status());
  auto rd = pool.MosObject(*rootdir);
  ASSERT_UZFS_OK(rd.status());
  auto children = pool.MosZap(LoadLE64(rd->bonus.data() + 32));
  ASSERT_UZFS_OK(children.status());
  auto fsdir = children->LookupUint64("fs");
  ASSERT_UZFS_OK(fsdir.status());
  auto dir = pool.MosObject(*fsdir);
  ASSERT_UZFS_OK(dir.status());
  auto ds = pool.MosObject(LoadLE64(dir->bonus.data() + 8));
  ASSERT_UZFS_OK(ds.status());
  const BlockPtr fs_bp =
      DecodeBlockPtr(std::span<const uint8_t, kBlockPtrSize>(ds->bonus.data() + 128, kBlockPtrSize));
  auto fs = pool.reader().ReadObjset(fs_bp);
  ASSERT_UZFS_OK(fs.status());
  // gen.txt: master node -> ROOT -> "gen.txt".
  auto master = pool.reader().ReadDnode(fs->meta_dnode, 1);
  ASSERT_UZFS_OK(master.status());
  auto mz = OpenObjectZap(pool.reader(), *master);
  ASSERT_UZFS_OK(mz.status());
  auto rootobj = mz->LookupUint64("ROOT");
  ASSERT_UZFS_OK(rootobj.status());
  auto rootdn = pool.reader().ReadDnode(fs->meta_dnode, *rootobj);
  auto rz = OpenObjectZap(pool.reader(), *rootdn);
  ASSERT_UZFS_OK(rz.status());
  auto genv = rz->LookupUint64("gen.txt");
  ASSERT_UZFS_OK(genv.status());
  const uint64_t gen = *genv & ((1ull << 48) - 1);
  auto gdn = pool.reader().ReadDnode(fs->meta_dnode, gen);
  ASSERT_UZFS_OK(gdn.status());
  ASSERT_EQ(gdn->nlevels, 2);
  const uint64_t size = LoadLE64(gdn->bonus.data() + 80);
  std::vector<uint8_t> model(size);
  ASSERT_UZFS_OK(pool.reader().Read(*gdn, 0, model));
  auto services = rz->LookupUint64("services");
  ASSERT_UZFS_OK(services.status());
  const uint64_t svc = *services & ((1ull << 48) - 1);
  auto sdn = pool.reader().ReadDnode(fs->meta_dnode, svc);
  ASSERT_UZFS_OK(sdn.status());
  std::vector<uint8_t> svc_bytes(LoadLE64(sdn->bonus.data() + 80));
  ASSERT_UZFS_OK(pool.reader().Read(*sdn, 0, svc_bytes));
  const uint64_t txg = pool.labels().uberblock->txg + 1;

  // A grown, writable copy of the image.
  test::TempDir tmp;
  const auto img = tmp.path() / "copy.img";
  std::filesystem::copy_file(pool.dir() / "dmupool.img", img);
  const uint64_t old_size = std::filesystem::file_size(img);
  std::filesystem::resize_file(img, old_size + kGrowth);
  auto dev = FileDevice::Open(img.string(), FileDeviceOptions{});
  ASSERT_UZFS_OK(dev.status());
  const uint64_t old_asize = old_size - kVdevDataOffset - kVdevLabelEndSize;
  const uint64_t new_asize = old_size + kGrowth - kVdevDataOffset - kVdevLabelEndSize;
  WritableStripe target(**dev, new_asize);
  GrowthAllocator alloc(old_asize, new_asize);
  Zio zio(target, alloc, ZioOptions{.threads = 2});

  ObjsetWriterOptions o;
  o.pool_version = 23;
  o.data_compress = CompressType::kLzjb;
  auto w = ObjsetWriter::Open(zio, fs_bp, o);
  ASSERT_UZFS_OK(w.status());
  // Overwrite across a block boundary, punch a hole over block 10, append
  // past the end, and keep the znode's size right.
  auto put = [&](uint64_t off, const std::vector<uint8_t>& d) {
    ASSERT_UZFS_OK((*w)->Write(gen, off, d, Txg{txg}));
    if (model.size() < off + d.size()) model.resize(off + d.size(), 0);
    std::copy(d.begin(), d.end(), model.begin() + off);
  };
  put(131072 - 5000, std::vector<uint8_t>(10000, 'U'));
  ASSERT_UZFS_OK((*w)->FreeRange(gen, 10 * 131072, 131072, Txg{txg}));
  std::fill(model.begin() + 10 * 131072, model.begin() + 11 * 131072, 0);
  put(40 * 131072 + 3, test::RandomBytes(200000, 5));
  auto cur = (*w)->GetDnode(gen);
  ASSERT_UZFS_OK(cur.status());
  std::vector<uint8_t> bonus = cur->bonus;
  StoreLE64(bonus.data() + 80, model.size());
  ASSERT_UZFS_OK((*w)->SetBonus(gen, cur->bonustype, bonus, Txg{txg}));
  auto root = (*w)->Sync(Txg{txg});
  ASSERT_UZFS_OK(root.status());
  EXPECT_EQ(root->lsize, fs_bp.lsize);
  EXPECT_EQ(root->NumDvas(), 2);
  EXPECT_EQ(root->compression, static_cast<uint8_t>(CompressType::kLzjb));

  // The read side on the new root: the file as modelled, its neighbour as
  // before, the object count unchanged.
  ObjectReader r(zio);
  auto nfs = r.ReadObjset(*root);
  ASSERT_UZFS_OK(nfs.status());
  EXPECT_EQ(nfs->type, static_cast<uint64_t>(ObjsetType::kZfs));
  EXPECT_EQ(nfs->meta_dnode.nlevels, fs->meta_dnode.nlevels);
  EXPECT_EQ(root->fill, fs_bp.fill);
  EXPECT_EQ(nfs->userused.has_value(), fs->userused.has_value());
  auto ndn = r.ReadDnode(nfs->meta_dnode, gen);
  ASSERT_UZFS_OK(ndn.status());
  EXPECT_EQ(ndn->maxblkid, (model.size() - 1) / 131072);
  EXPECT_EQ(LoadLE64(ndn->bonus.data() + 80), model.size());
  // dn_used: zfs-fuse's figure for the old tree equals ours for it, and
  // the new figure is the new tree's.
  EXPECT_EQ(gdn->UsedBytes(), TreeAsize(zio, gdn->blkptr[0], gdn->nlevels - 1));
  EXPECT_EQ(ndn->UsedBytes(), TreeAsize(zio, ndn->blkptr[0], ndn->nlevels - 1));
  std::vector<uint8_t> got(model.size());
  ASSERT_UZFS_OK(r.Read(*ndn, 0, got));
  EXPECT_TRUE(got == model);
  EXPECT_TRUE(r.BlockPointerAt(*ndn, 0, 10)->IsHole());
  EXPECT_EQ(r.BlockPointerAt(*ndn, 0, 0)->birth, txg);
  EXPECT_LT(r.BlockPointerAt(*ndn, 0, 5)->birth, txg);  // untouched: the old block
  EXPECT_EQ(r.BlockPointerAt(*ndn, 0, 1)->birth, txg);
  EXPECT_EQ(r.BlockPointerAt(*ndn, 0, 1)->compression, static_cast<uint8_t>(CompressType::kLzjb));
  auto nsdn = r.ReadDnode(nfs->meta_dnode, svc);
  ASSERT_UZFS_OK(nsdn.status());
  std::vector<uint8_t> svc_again(svc_bytes.size());
  ASSERT_UZFS_OK(r.Read(*nsdn, 0, svc_again));
  EXPECT_TRUE(svc_again == svc_bytes);
  // Still a ZPL set: the master node resolves ROOT and gen.txt.
  auto nmaster = r.ReadDnode(nfs->meta_dnode, 1);
  ASSERT_UZFS_OK(nmaster.status());
  auto nmz = OpenObjectZap(r, *nmaster);
  ASSERT_UZFS_OK(nmz.status());
  EXPECT_EQ(*nmz->LookupUint64("ROOT"), *rootobj);

  // What was freed is old (below the growth region) and not in the new tree.
  std::set<uint64_t> live;
  CollectTree(zio, nfs->meta_dnode, &live);
  CollectTree(zio, *ndn, &live);
  for (int d = 0; d < root->NumDvas(); d++) live.insert(root->dva[d].offset);
  const auto freed = alloc.freed();
  EXPECT_GE(freed.size(), 2u * 2 + 1);  // data blocks 0, 1, 10, the L1, dnode and objset blocks
  for (const Dva& d : freed) {
    EXPECT_LT(d.offset, alloc.start());
    EXPECT_FALSE(live.count(d.offset)) << "freed a live block at " << d.offset;
  }
  // The old root still reads as before (copy-on-write: nothing overwritten).
  auto old_again = r.ReadObjset(fs_bp);
  ASSERT_UZFS_OK(old_again.status());
  auto odn = r.ReadDnode(old_again->meta_dnode, gen);
  ASSERT_UZFS_OK(odn.status());
  std::vector<uint8_t> old_bytes(size);
  ASSERT_UZFS_OK(r.Read(*odn, 0, old_bytes));
  std::vector<uint8_t> want_old(size);
  ASSERT_UZFS_OK(pool.reader().Read(*gdn, 0, want_old));
  EXPECT_TRUE(old_bytes == want_old);
}

}  // namespace
}  // namespace uzfs
