// The ARC on the DMU read path: ObjsetWriter/ObjectReader reading through
// ArcBlockReader over the in-memory pool doubles (MemTarget +
// SectorAllocator, whose frees are immediate so a freed address is reused
// at once). The judge is the Zio's read counter: a second read of the same
// bytes must not reach it. Also: buffers kept compressed, a freed and
// reallocated address never returns the old bytes, primarycache
// none/metadata, a corrupted block detected on a miss (and never cached),
// prefetch counted as prefetch, the unlocked read racing Syncs; a
// multi-pass writer (the MOS) reading through SettledBlockReader, so a
// block a later pass rewrites in place is never served stale.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "cache/arc.h"
#include "cache/arc_block_reader.h"
#include "zfs/zio/settled_block_reader.h"
#include "tests/cache/arc_test_util.h"
#include "tests/testutil/testutil.h"
#include "tests/zio/zio_test_util.h"
#include "zfs/dmu/object_reader.h"
#include "zfs/dmu/objset_writer.h"

namespace uzfs {
namespace {

constexpr uint64_t kDisk = 64ull << 20;
constexpr uint64_t kBlk = 128 << 10;

std::vector<uint8_t> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Compressible but not all zeros.
std::vector<uint8_t> Text(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i++) v[i] = static_cast<uint8_t>('a' + (i / 64 + seed) % 26);
  return v;
}

class ArcReadPathTest : public ::testing::Test {
 protected:
  ArcReadPathTest()
      : target_(1, kDisk), alloc_(1, kDisk), zio_(target_, alloc_), arc_(ArcOpts()) {
    reader_ = std::make_unique<ArcBlockReader>(arc_, 1234, zio_);
  }
  ~ArcReadPathTest() override {
    w_.reset();
    reader_.reset();
  }
  static ArcOptions ArcOpts() { return arctest::SizedArc(64ull << 20, 16ull << 20, 8); }
  ObjsetWriterOptions Opts(BlockCachePolicy p = BlockCachePolicy::kAll,
                           CompressType c = CompressType::kOff) {
    ObjsetWriterOptions o;
    o.reader = reader_.get();
    o.cache_policy = p;
    o.data_compress = c;
    return o;
  }
  // An object of `data` (128 KiB blocks) synced in txg 1; the writer is
  // reopened from the synced root so nothing is held in memory.
  uint64_t MakeObject(const std::vector<uint8_t>& data, const ObjsetWriterOptions& o) {
    auto w = ObjsetWriter::Create(zio_, ObjsetType::kZfs, o);
    EXPECT_TRUE(w.ok());
    ObjectProps props;
    props.block_size = kBlk;
    auto obj = (*w)->AllocateObject(props, 1);
    EXPECT_TRUE(obj.ok());
    EXPECT_UZFS_OK((*w)->Write(*obj, 0, data, 1));
    auto root = (*w)->Sync(1);
    EXPECT_TRUE(root.ok()) << root.status().ToString();
    auto re = ObjsetWriter::Open(zio_, *root, o);
    EXPECT_TRUE(re.ok());
    w_ = std::move(*re);
    return *obj;
  }
  std::vector<uint8_t> ReadAll(uint64_t obj, size_t n) {
    std::vector<uint8_t> out(n);
    Status s = w_->Read(obj, 0, out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }
  uint64_t ZioReads() const { return zio_.stats().blocks_read.load(); }
  BlockPtr DataPtr(uint64_t obj, uint64_t blkid) {
    auto dn = w_->GetDnode(obj);
    EXPECT_TRUE(dn.ok());
    ObjectReader r(zio_);
    auto bp = r.BlockPointerAt(*dn, 0, blkid);
    EXPECT_TRUE(bp.ok());
    return *bp;
  }

  test::MemTarget target_;
  test::SectorAllocator alloc_;
  Zio zio_;
  Arc arc_;
  std::unique_ptr<ArcBlockReader> reader_;
  std::unique_ptr<ObjsetWriter> w_;
};

TEST_F(ArcReadPathTest, SecondReadIsServedByTheArc) {
  const auto data = Random(8 * kBlk + 1000, 1);  // 9 blocks: one indirect level
  const uint64_t obj = MakeObject(data, Opts());
  const uint64_t before = ZioReads();
  EXPECT_EQ(ReadAll(obj, data.size()), data);
  const uint64_t first = ZioReads() - before;
  EXPECT_GE(first, 9u);  // every data block at least
  // Whole, partial, unaligned: all from the ARC.
  EXPECT_EQ(ReadAll(obj, data.size()), data);
  std::vector<uint8_t> part(5000);
  ASSERT_UZFS_OK(w_->Read(obj, kBlk - 100, part));
  EXPECT_EQ(0, std::memcmp(part.data(), data.data() + kBlk - 100, part.size()));
  EXPECT_EQ(ZioReads() - before, first);
  const ArcStats s = arc_.Stats();
  EXPECT_GE(s.demand_data_hits, 9u + 2u);
  EXPECT_GE(s.demand_data_misses, 9u);
  EXPECT_GT(s.demand_metadata_hits, 0u);  // the indirect block
}

TEST_F(ArcReadPathTest, BuffersAreKeptCompressedAsOnDisk) {
  const auto data = Text(4 * kBlk, 3);
  const uint64_t obj = MakeObject(data, Opts(BlockCachePolicy::kAll, CompressType::kLz4));
  ASSERT_NE(DataPtr(obj, 0).psize, DataPtr(obj, 0).lsize);  // it did compress
  EXPECT_EQ(ReadAll(obj, data.size()), data);
  const uint64_t reads = ZioReads();
  EXPECT_EQ(ReadAll(obj, data.size()), data);
  EXPECT_EQ(ZioReads(), reads);
  const ArcStats s = arc_.Stats();
  EXPECT_LT(s.compressed_size * 4, s.uncompressed_size);
}

TEST_F(ArcReadPathTest, FreedAndReallocatedAddressNeverReturnsOldBytes) {
  // At the reader: a block is cached, freed, and its address reused by a
  // different block of a later txg.
  const auto a = Random(kBlk, 5), b = Random(kBlk, 6);
  WriteProps wp;
  wp.compress = CompressType::kOff;
  auto bpa = zio_.Write(a, wp, 10);
  ASSERT_TRUE(bpa.ok());
  std::vector<uint8_t> out(kBlk);
  ASSERT_UZFS_OK(reader_->Read(*bpa, out));
  ASSERT_EQ(out, a);
  ASSERT_UZFS_OK(zio_.Free(*bpa, 10));  // immediate in SectorAllocator
  auto bpb = zio_.Write(b, wp, 11);
  ASSERT_TRUE(bpb.ok());
  ASSERT_EQ(bpb->dva[0].vdev, bpa->dva[0].vdev);
  ASSERT_EQ(bpb->dva[0].offset, bpa->dva[0].offset);  // the same address
  ASSERT_UZFS_OK(reader_->Read(*bpb, out));
  EXPECT_EQ(out, b);
  ASSERT_UZFS_OK(reader_->Read(*bpa, out));  // the old pointer still names the old buffer
  EXPECT_EQ(out, a);

  // Through an object set: overwrite, sync, overwrite, sync; each synced
  // state reads back as written.
  const auto v1 = Random(kBlk, 7), v2 = Random(kBlk, 8), v3 = Random(kBlk, 9);
  const uint64_t obj = MakeObject(v1, Opts());
  EXPECT_EQ(ReadAll(obj, kBlk), v1);
  const Dva first = DataPtr(obj, 0).dva[0];
  ASSERT_UZFS_OK(w_->Write(obj, 0, v2, 2));
  ASSERT_TRUE(w_->Sync(2).ok());
  EXPECT_EQ(ReadAll(obj, kBlk), v2);
  ASSERT_UZFS_OK(w_->Write(obj, 0, v3, 3));
  ASSERT_TRUE(w_->Sync(3).ok());
  EXPECT_EQ(DataPtr(obj, 0).dva[0].offset, first.offset);  // reused txg 1's address
  EXPECT_EQ(ReadAll(obj, kBlk), v3);
}

TEST_F(ArcReadPathTest, BlocksASyncFreesLeaveTheArc) {
  const auto v1 = Random(kBlk, 21), v2 = Random(kBlk, 22);
  const uint64_t obj = MakeObject(v1, Opts());
  EXPECT_EQ(ReadAll(obj, kBlk), v1);
  auto old_key = ArcKey::FromBlockPtr(1234, DataPtr(obj, 0));
  ASSERT_TRUE(old_key.ok());
  EXPECT_NE(arc_.StateOf(*old_key), "");
  ASSERT_UZFS_OK(w_->Write(obj, 0, v2, 2));
  ASSERT_TRUE(w_->Sync(2).ok());
  EXPECT_EQ(arc_.StateOf(*old_key), "");  // freed by the sync: forgotten
  EXPECT_EQ(ReadAll(obj, kBlk), v2);
}

// Blocks the synced-block cache lets go are handed to the ARC (as OpenZFS
// keeps what arc_write wrote): 4 KiB writes into records written a while
// ago read nothing from the disks, also for compressed records (kept
// uncompressed), and nor does the lookup through the indirect block the
// sync wrote. primarycache=metadata keeps none of the data blocks.
TEST_F(ArcReadPathTest, BlocksTheSyncedCacheLetsGoStayInTheArc) {
  for (BlockCachePolicy policy : {BlockCachePolicy::kMetadata, BlockCachePolicy::kAll}) {
    SCOPED_TRACE(policy == BlockCachePolicy::kAll ? "primarycache=all" : "primarycache=metadata");
    ObjsetWriterOptions o = Opts(policy, CompressType::kLz4);
    o.synced_cache_max = 2 * kBlk;
    auto w = ObjsetWriter::Create(zio_, ObjsetType::kZfs, o);
    ASSERT_TRUE(w.ok());
    ObjectProps props;
    props.block_size = kBlk;
    auto obj = (*w)->AllocateObject(props, 1);
    ASSERT_TRUE(obj.ok());
    std::vector<uint8_t> model = Text(8 * kBlk, 5);
    ASSERT_UZFS_OK((*w)->Write(*obj, 0, model, 1));
    const uint64_t handed = reader_->stats().written;
    ASSERT_TRUE((*w)->Sync(1).ok());
    EXPECT_EQ((*w)->synced_cache_stats().blocks, policy == BlockCachePolicy::kAll ? 2u : 0u);
    const ArcStats before = arc_.Stats();
    const uint64_t reads = ZioReads();
    for (uint64_t b = 0; b < 8; b++) {
      const auto patch = Random(4096, static_cast<uint32_t>(b));
      std::copy(patch.begin(), patch.end(), model.begin() + b * kBlk + 8192);
      ASSERT_UZFS_OK((*w)->Write(*obj, b * kBlk + 8192, patch, 2));
    }
    const ArcStats after = arc_.Stats();
    if (policy == BlockCachePolicy::kAll) {
      EXPECT_GE(reader_->stats().written - handed, 6u);  // data; indirect and dnode blocks too
      EXPECT_EQ(after.demand_data_misses, before.demand_data_misses) << "a partial write read its record";
      EXPECT_GE(after.demand_data_hits - before.demand_data_hits, 6u);
      EXPECT_EQ(ZioReads() - reads, 0u);  // the indirect block the sync wrote is cached too
    } else {
      EXPECT_GE(ZioReads() - reads, 8u);  // every record (not even the synced cache keeps data)
      // Only the indirect and dnode blocks were kept: compressed, as on disk.
      EXPECT_GT(after.compressed_size, 0u);
      EXPECT_LT(after.compressed_size * 8, after.uncompressed_size);
    }
    std::vector<uint8_t> out(model.size());
    ASSERT_UZFS_OK((*w)->Read(*obj, 0, out));
    EXPECT_EQ(out, model);
    auto root = (*w)->Sync(2);
    ASSERT_TRUE(root.ok());
    auto re = ObjsetWriter::Open(zio_, *root, Opts(BlockCachePolicy::kNone));
    ASSERT_TRUE(re.ok());
    ASSERT_UZFS_OK((*re)->Read(*obj, 0, out));  // from the disks
    EXPECT_EQ(out, model);
  }
}

// A written block kept in another form than on disk (a compressed
// pointer, its bytes uncompressed) never goes to the L2ARC, whose copy
// could then only be checked against its own checksum; one in its on-disk
// form does. Seen through the L2 hook's view of evicted buffers.
TEST_F(ArcReadPathTest, WrittenBlocksNotInTheirOnDiskFormStayOutOfTheL2Arc) {
  struct Hook : ArcL2Hook {
    Result<ArcBlock> ReadL2(const ArcKey&, const BlockPtr&) override { return Status::NotFound("none"); }
    void FillStats(ArcStats*) const override {}
    void Evicted(const ArcL2View& v, AlignedBytes&) override { allowed[v.key.offset] = v.l2_allowed; }
    std::map<uint64_t, bool> allowed;
  } hook;
  arc_.SetL2(&hook);
  const auto raw = Random(kBlk, 31), text = Text(kBlk, 32);
  WriteProps off, lz4;
  off.compress = CompressType::kOff;
  lz4.compress = CompressType::kLz4;
  auto a = zio_.Write(raw, off, 5), b = zio_.Write(text, lz4, 5);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_LT(b->psize, b->lsize);
  reader_->Written(*a, std::make_shared<AlignedBytes>(raw.begin(), raw.end()), {});
  reader_->Written(*b, std::make_shared<AlignedBytes>(text.begin(), text.end()), {});
  std::vector<uint8_t> out(kBlk);
  const uint64_t reads = ZioReads();
  ASSERT_UZFS_OK(reader_->Read(*b, out));  // a hit, decoded right
  EXPECT_EQ(out, text);
  EXPECT_EQ(ZioReads(), reads);
  arc_.SetLimits(0, 0);  // evict everything
  arc_.SetL2(nullptr);
  ASSERT_EQ(hook.allowed.count(a->dva[0].offset), 1u);
  ASSERT_EQ(hook.allowed.count(b->dva[0].offset), 1u);
  EXPECT_TRUE(hook.allowed[a->dva[0].offset]);
  EXPECT_FALSE(hook.allowed[b->dva[0].offset]);
}

TEST_F(ArcReadPathTest, PrimarycacheNoneAndMetadata) {
  const auto data = Random(6 * kBlk, 11);
  {
    const uint64_t obj = MakeObject(data, Opts(BlockCachePolicy::kNone));
    EXPECT_EQ(ReadAll(obj, data.size()), data);
    const uint64_t r1 = ZioReads();
    EXPECT_EQ(ReadAll(obj, data.size()), data);
    EXPECT_GE(ZioReads() - r1, 6u + 1u);  // data and the indirect block again
    EXPECT_EQ(arc_.Stats().size, 0u);
  }
  {
    const uint64_t obj = MakeObject(data, Opts(BlockCachePolicy::kMetadata));
    EXPECT_EQ(ReadAll(obj, data.size()), data);
    const uint64_t r1 = ZioReads();
    EXPECT_EQ(ReadAll(obj, data.size()), data);
    EXPECT_EQ(ZioReads() - r1, 6u);  // data only: the indirect block is cached
    EXPECT_EQ(arc_.Stats().data_size, 0u);
    EXPECT_GT(arc_.Stats().metadata_size, 0u);
    // Switched to all at run time: cached from now on.
    w_->SetCachePolicy(BlockCachePolicy::kAll);
    EXPECT_EQ(ReadAll(obj, data.size()), data);
    const uint64_t r2 = ZioReads();
    EXPECT_EQ(ReadAll(obj, data.size()), data);
    EXPECT_EQ(ZioReads(), r2);
  }
}

TEST_F(ArcReadPathTest, CorruptedBlockIsDetectedOnAMissAndNeverCached) {
  const auto data = Random(2 * kBlk, 13);
  const uint64_t obj = MakeObject(data, Opts());
  const BlockPtr bp = DataPtr(obj, 1);
  target_.Corrupt(bp.dva[0].vdev, bp.dva[0].offset + 77);
  std::vector<uint8_t> out(data.size());
  Status s = w_->Read(obj, 0, out);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  s = w_->Read(obj, kBlk, std::span<uint8_t>(out).first(kBlk));
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();  // not cached by the failed read
  auto key = ArcKey::FromBlockPtr(1234, bp);
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(arc_.StateOf(*key), "");
  // Block 0 was fine and is cached.
  ASSERT_UZFS_OK(w_->Read(obj, 0, std::span<uint8_t>(out).first(kBlk)));
  EXPECT_EQ(0, std::memcmp(out.data(), data.data(), kBlk));
}

TEST_F(ArcReadPathTest, PrefetchReadsAheadAndIsCountedAsPrefetch) {
  const auto data = Random(8 * kBlk, 17);
  const uint64_t obj = MakeObject(data, Opts());
  ASSERT_TRUE(w_->Caches());
  std::vector<uint64_t> ids = {0, 1, 2, 3, 4, 5, 6, 7, 100};  // 100: past the end, skipped
  w_->Prefetch(obj, ids);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (arc_.Stats().prefetch_data_misses < 8 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  while (reader_->stats().prefetch_issued < 8 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  // Wait for the prefetch reads to land.
  while (arc_.Stats().data_size < 8 * kBlk && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(arc_.Stats().prefetch_data_misses, 8u);
  EXPECT_EQ(reader_->stats().prefetch_issued, 8u);
  EXPECT_EQ(reader_->stats().prefetch_batches, 1u);  // the eight blocks read together
  const uint64_t reads = ZioReads();
  EXPECT_EQ(ReadAll(obj, data.size()), data);
  EXPECT_EQ(ZioReads(), reads);
  const ArcStats s = arc_.Stats();
  EXPECT_EQ(s.demand_hit_predictive_prefetch, 8u);
  EXPECT_EQ(s.demand_data_misses, 0u);
}

TEST_F(ArcReadPathTest, UncachedWriterDoesNotPrefetch) {
  ObjsetWriterOptions o;
  auto w = ObjsetWriter::Create(zio_, ObjsetType::kZfs, o);
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE((*w)->Caches());
}

// Reads run their block I/O outside the writer's lock while other threads
// write and sync: every read returns exactly one synced or written state.
TEST_F(ArcReadPathTest, UnlockedReadsRacingSyncs) {
  const char* env = std::getenv("UZFS_STRESS_ITERATIONS");
  const int iters = env ? std::atoi(env) : 40;
  std::vector<std::vector<uint8_t>> states;
  for (int i = 0; i < 4; i++) states.push_back(std::vector<uint8_t>(4 * kBlk, static_cast<uint8_t>(i + 1)));
  const uint64_t obj = MakeObject(states[0], Opts());
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0}, reads{0};
  std::thread reader([&] {
    std::vector<uint8_t> out(4 * kBlk);
    while (!stop.load()) {
      Status s = w_->Read(obj, 0, out);
      if (!s.ok()) {
        bad++;
        continue;
      }
      // Each block is whole one state (blocks are written whole).
      for (size_t b = 0; b < 4; b++) {
        const uint8_t v = out[b * kBlk];
        if (v < 1 || v > 4 ||
            std::any_of(out.begin() + b * kBlk, out.begin() + (b + 1) * kBlk, [&](uint8_t x) { return x != v; }))
          bad++;
      }
      reads++;
    }
  });
  for (int i = 0; i < iters; i++) {
    const uint64_t txg = 2 + i;
    ASSERT_UZFS_OK(w_->Write(obj, 0, states[(i + 1) % 4], Txg{txg}));
    ASSERT_TRUE(w_->Sync(Txg{txg}).ok());
  }
  stop = true;
  reader.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(reads.load(), 0);
}

// A multi-pass writer (what the pool makes of the MOS) rewrites a block of
// txg T in place in pass 2: same DVA and birth, new bytes. Read between
// the passes, the block must not stay cached under that key; once T is
// settled its blocks are cached like any other.
TEST_F(ArcReadPathTest, SettledReaderNeverServesABlockRewrittenInPlace) {
  SettledBlockReader settled(*reader_, zio_, 0);
  ObjsetWriterOptions o = Opts();
  o.multi_pass = true;
  o.reader = &settled;
  auto w = ObjsetWriter::Create(zio_, ObjsetType::kMeta, o);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ObjectProps props;
  props.block_size = kBlk;
  auto obj = (*w)->AllocateObject(props, 1);
  ASSERT_TRUE(obj.ok());
  const auto pass1 = Random(kBlk, 11), pass2 = Random(kBlk, 12);
  ASSERT_UZFS_OK((*w)->Write(*obj, 0, pass1, 1));
  ASSERT_TRUE((*w)->Sync(1).ok());
  std::vector<uint8_t> out(kBlk);
  ASSERT_UZFS_OK((*w)->Read(*obj, 0, out));
  EXPECT_EQ(out, pass1);
  // Pass 2 of txg 1 overwrites the block where it lies.
  ASSERT_UZFS_OK((*w)->Write(*obj, 0, pass2, 1));
  ASSERT_TRUE((*w)->Sync(1).ok());
  ASSERT_GT((*w)->LastSyncStats().rewritten_blocks, 0u);
  ASSERT_UZFS_OK((*w)->Read(*obj, 0, out));
  EXPECT_EQ(out, pass2);
  // Txg 1 done: its blocks are read once, then served by the ARC.
  settled.Settle(1);
  ASSERT_UZFS_OK((*w)->Read(*obj, 0, out));
  EXPECT_EQ(out, pass2);
  const uint64_t reads = ZioReads();
  ASSERT_UZFS_OK((*w)->Read(*obj, 0, out));
  EXPECT_EQ(out, pass2);
  EXPECT_EQ(ZioReads(), reads);
}

}  // namespace
}  // namespace uzfs
