// File reads through a real pool with an Arc and an L2ARC on a cache
// device: a file four times the ARC is read once (cold: from the pool,
// buffers fed to the cache device as they leave the ARC), then again in
// another order — now served by the cache device (arcstats l2_hits, the
// pool's ZIO reads stay low) — and again after export + import, from the
// index rebuilt on the device (persistent L2ARC); the secondarycache
// property decides what may go there. Every read is checked.
#include <fcntl.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "cache/arc.h"
#include "cache/l2arc.h"
#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs {
namespace {

const ZplCred kRoot{};
constexpr uint64_t kArcBytes = 16ull << 20;
constexpr size_t kFile = 4 * kArcBytes;
constexpr size_t kRec = 128 << 10;

ArcOptions ArcOpts() {
  ArcOptions o;
  o.c_max = o.c_min = kArcBytes;
  o.shards = 8;
  return o;
}

L2ArcOptions L2Opts() {
  L2ArcOptions o;
  o.feed_thread = false;  // fed by the test, between reads
  o.write_max = 4ull << 20;
  o.write_boost = 4ull << 20;
  return o;
}

class ZplL2ArcTest : public ::testing::Test {
 protected:
  ZplL2ArcTest() : arc_(ArcOpts()), l2_(arc_, L2Opts()) {}
  ~ZplL2ArcTest() override {
    if (fs_) {
      EXPECT_TRUE(fs_->Unmount().ok());
    }
    fs_.reset();
    if (pool_) {
      EXPECT_UZFS_OK(pool_->Export());
    }
    pool_.reset();
  }
  void Create() {
    PoolCreateOptions o = pooltest::V23();
    o.fs_init = InitNewFilesystem;
    o.arc = &arc_;
    o.l2arc = &l2_;
    PoolLayout l;
    l.data.push_back(pooltest::Leaf(dir_.path(), "d0", 256ull << 20));
    l.cache.push_back(pooltest::Leaf(dir_.path(), "c0", 256ull << 20));
    auto p = Pool::Create("tp", l, o);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pool_ = std::move(*p);
    Mount();
  }
  void Mount() {
    auto f = ZplFs::Mount(*pool_, "tp");
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    fs_ = std::move(*f);
  }
  void Reimport() {
    ASSERT_TRUE(fs_->Unmount().ok());
    fs_.reset();
    ASSERT_UZFS_OK(pool_->Export());
    pool_.reset();
    EXPECT_TRUE(l2_.Devices().empty());
    PoolImportOptions io;
    io.fs_init = InitNewFilesystem;
    io.arc = &arc_;
    io.l2arc = &l2_;
    auto p = pooltest::ImportFrom(dir_.path(), "tp", io);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pool_ = std::move(*p);
    Mount();
  }
  uint64_t ZioReads() { return pool_->zio().stats().blocks_read.load(); }
  // Reads the file's records in `order`, checking each; feeds the L2ARC
  // every 8 records (what the feed thread does every interval).
  void ReadRecords(uint64_t ino, const std::vector<uint8_t>& data, const std::vector<size_t>& order) {
    auto h = fs_->Open(kRoot, ino, O_RDONLY);
    ASSERT_TRUE(h.ok());
    std::vector<uint8_t> buf(kRec);
    for (size_t i = 0; i < order.size(); i++) {
      const size_t off = order[i] * kRec;
      auto n = fs_->Read(*h, off, buf);
      ASSERT_TRUE(n.ok());
      ASSERT_TRUE(std::equal(buf.begin(), buf.end(), data.begin() + static_cast<std::ptrdiff_t>(off))) << off;
      if (i % 8 == 7) (void)l2_.FeedOnce();
    }
    EXPECT_TRUE(fs_->Release(*h).ok());
  }

  test::TempDir dir_;
  Arc arc_;
  L2Arc l2_;
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<ZplFs> fs_;
};

TEST_F(ZplL2ArcTest, WorkingSetLargerThanTheArcIsServedFromTheCacheDevice) {
  Create();
  std::vector<uint8_t> data(kFile);
  std::mt19937_64 rng(9);
  for (size_t i = 0; i < data.size(); i += 8) {
    const uint64_t v = rng();
    std::memcpy(&data[i], &v, 8);
  }
  uint64_t ino = 0;
  {
    auto r = fs_->Create(kRoot, fs_->root_ino(), "big", S_IFREG | 0644, O_CREAT | O_RDWR);
    ASSERT_TRUE(r.ok());
    ino = r->first.ino;
    ASSERT_TRUE(fs_->Write(r->second, 0, data).ok());
    ASSERT_TRUE(fs_->Release(r->second).ok());
  }
  Reimport();
  const size_t records = kFile / kRec;
  std::vector<size_t> seq(records), shuffled(records);
  for (size_t i = 0; i < records; i++) seq[i] = shuffled[i] = i;
  std::shuffle(shuffled.begin(), shuffled.end(), rng);

  ReadRecords(ino, data, seq);  // cold
  for (int i = 0; i < 8; i++) (void)l2_.FeedOnce();
  ASSERT_FALSE(pool_->CacheDevices().empty());
  EXPECT_GT(pool_->CacheDevices()[0].alloc, kArcBytes);

  const ArcStats s1 = arc_.Stats();
  const uint64_t zr1 = ZioReads();
  ReadRecords(ino, data, shuffled);  // warm: ARC misses are L2ARC hits
  const ArcStats s2 = arc_.Stats();
  const uint64_t l2hits = s2.l2_hits - s1.l2_hits;
  EXPECT_GT(l2hits, records / 2) << "l2 hits " << l2hits << " of " << records << " records";
  EXPECT_LT(ZioReads() - zr1, records / 2);
  EXPECT_EQ(s2.l2_cksum_bad, 0u);
  EXPECT_EQ(s2.l2_io_error, 0u);

  Reimport();  // the ARC loses the pool's buffers; the cache device keeps its index
  const ArcStats s3 = arc_.Stats();
  EXPECT_GT(s3.l2_rebuild_bufs, records / 2);
  const uint64_t zr3 = ZioReads();
  ReadRecords(ino, data, shuffled);
  const ArcStats s4 = arc_.Stats();
  EXPECT_GT(s4.l2_hits - s3.l2_hits, records / 2);
  EXPECT_LT(ZioReads() - zr3, records / 2);
  std::printf("records %zu: warm: ARC misses %llu (data %llu, metadata %llu, prefetch %llu), l2 hits %llu; "
              "after import: l2 hits %llu of %llu rebuilt\n",
              records, static_cast<unsigned long long>(s2.misses - s1.misses),
              static_cast<unsigned long long>(s2.demand_data_misses - s1.demand_data_misses),
              static_cast<unsigned long long>(s2.demand_metadata_misses - s1.demand_metadata_misses),
              static_cast<unsigned long long>(s2.prefetch_data_misses - s1.prefetch_data_misses),
              static_cast<unsigned long long>(l2hits), static_cast<unsigned long long>(s4.l2_hits - s3.l2_hits),
              static_cast<unsigned long long>(s3.l2_rebuild_bufs));
}

TEST_F(ZplL2ArcTest, SecondarycacheDecidesWhatGoesToTheCacheDevice) {
  Create();
  const size_t size = 2 * kArcBytes;
  std::vector<uint8_t> data(size);
  std::mt19937_64 rng(3);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  uint64_t ino = 0;
  {
    auto r = fs_->Create(kRoot, fs_->root_ino(), "f", S_IFREG | 0644, O_CREAT | O_RDWR);
    ASSERT_TRUE(r.ok());
    ino = r->first.ino;
    ASSERT_TRUE(fs_->Write(r->second, 0, data).ok());
    ASSERT_TRUE(fs_->Release(r->second).ok());
  }
  std::vector<size_t> seq(size / kRec);
  for (size_t i = 0; i < seq.size(); i++) seq[i] = i;
  ASSERT_UZFS_OK(pool_->SetProp("tp", "secondarycache", "none"));
  Reimport();
  // The pool's own metadata (the MOS, read through the ARC like any
  // metadata of secondarycache=all) may go to the cache device; none of
  // the file system's blocks may.
  for (int i = 0; i < 8; i++) (void)l2_.FeedOnce();
  const uint64_t pool_meta = pool_->CacheDevices()[0].alloc;
  EXPECT_LT(pool_meta, 1ull << 20);
  ReadRecords(ino, data, seq);
  for (int i = 0; i < 8; i++) (void)l2_.FeedOnce();
  EXPECT_EQ(pool_->CacheDevices()[0].alloc, pool_meta);
  ASSERT_UZFS_OK(pool_->SetProp("tp", "secondarycache", "metadata"));
  arc_.ForgetPool(pool_->guid());
  ReadRecords(ino, data, seq);
  for (int i = 0; i < 8; i++) (void)l2_.FeedOnce();
  EXPECT_LT(pool_->CacheDevices()[0].alloc, 1ull << 20);  // a few indirect/dnode blocks at most
  ASSERT_UZFS_OK(pool_->InheritProp("tp", "secondarycache"));  // all
  arc_.ForgetPool(pool_->guid());
  ReadRecords(ino, data, seq);
  for (int i = 0; i < 8; i++) (void)l2_.FeedOnce();
  EXPECT_GT(pool_->CacheDevices()[0].alloc, kArcBytes / 2);
}

}  // namespace
}  // namespace uzfs
