// File reads through a real pool given an Arc (PoolCreate/ImportOptions::arc):
// after export + import (the pool's buffers leave the ARC), a sequential
// read of a file starts read-ahead streams (prefetches counted in
// arcstats, later demand reads hit them), a second read reaches no device
// (the Zio's read counter stays flat), `zfs set primarycache=none` sends
// reads to the devices again, and the pool stays consistent.
#include <fcntl.h>

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "cache/arc.h"
#include "tests/cache/arc_test_util.h"
#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs {
namespace {

const ZplCred kRoot{};

class ZplArcTest : public ::testing::Test {
 protected:
  ZplArcTest() : arc_(ArcOpts()) {}
  ~ZplArcTest() override {
    if (fs_) {
      EXPECT_TRUE(fs_->Unmount().ok());
    }
    fs_.reset();
    if (pool_) {
      EXPECT_UZFS_OK(pool_->Export());
    }
    pool_.reset();
  }
  static ArcOptions ArcOpts() { return arctest::SizedArc(96ull << 20, 16ull << 20, 8); }
  void Create() {
    PoolCreateOptions o = pooltest::V23();
    o.fs_init = InitNewFilesystem;
    o.arc = &arc_;
    PoolLayout l;
    l.data.push_back(pooltest::Leaf(dir_.path(), "d0"));
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
    PoolImportOptions io;
    io.fs_init = InitNewFilesystem;
    io.arc = &arc_;
    auto p = pooltest::ImportFrom(dir_.path(), "tp", io);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pool_ = std::move(*p);
    Mount();
  }
  uint64_t ZioReads() { return pool_->zio().stats().blocks_read.load(); }
  // Reads the whole file in `chunk`-byte reads, in order.
  std::vector<uint8_t> ReadSeq(uint64_t ino, size_t size, size_t chunk) {
    auto h = fs_->Open(kRoot, ino, O_RDONLY);
    EXPECT_TRUE(h.ok());
    std::vector<uint8_t> out(size);
    for (size_t off = 0; off < size; off += chunk) {
      auto n = fs_->Read(*h, off, std::span<uint8_t>(out).subspan(off, std::min(chunk, size - off)));
      EXPECT_TRUE(n.ok());
    }
    EXPECT_TRUE(fs_->Release(*h).ok());
    return out;
  }

  test::TempDir dir_;
  Arc arc_;
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<ZplFs> fs_;
};

TEST_F(ZplArcTest, SequentialReadPrefetchesAndRereadsFromTheArc) {
  Create();
  constexpr size_t kSize = 8 << 20;  // 64 blocks of 128 KiB
  std::vector<uint8_t> data(kSize);
  std::mt19937 rng(5);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  uint64_t ino = 0;
  {
    auto r = fs_->Create(kRoot, fs_->root_ino(), "big", S_IFREG | 0644, O_CREAT | O_RDWR);
    ASSERT_TRUE(r.ok());
    ino = r->first.ino;
    ASSERT_TRUE(fs_->Write(r->second, 0, data).ok());
    ASSERT_TRUE(fs_->Release(r->second).ok());
  }
  Reimport();  // cold: the pool's buffers left the ARC with the export
  EXPECT_EQ(arc_.Stats().data_size, 0u);
  const ArcStats before = arc_.Stats();
  EXPECT_EQ(ReadSeq(ino, kSize, 128 << 10), data);
  const ArcStats after = arc_.Stats();
  // The stream was detected: blocks were read ahead and demand reads found them.
  EXPECT_GT(after.prefetch_data_misses - before.prefetch_data_misses, 16u);
  EXPECT_GT(after.demand_hit_predictive_prefetch - before.demand_hit_predictive_prefetch, 8u);
  // Second pass: nothing reaches the devices.
  const uint64_t reads = ZioReads();
  EXPECT_EQ(ReadSeq(ino, kSize, 128 << 10), data);
  EXPECT_EQ(ReadSeq(ino, kSize, 4096 * 3), data);
  EXPECT_EQ(ZioReads(), reads);
  // primarycache=none: as in ZFS, buffers already cached still serve, but
  // nothing new is cached: with the cache emptied, every pass reads the
  // devices.
  ASSERT_UZFS_OK(pool_->SetProp("tp", "primarycache", "none"));
  arc_.ForgetPool(pool_->guid());
  for (int pass = 0; pass < 2; pass++) {
    const uint64_t r2 = ZioReads();
    EXPECT_EQ(ReadSeq(ino, kSize, 128 << 10), data);
    EXPECT_GE(ZioReads() - r2, 64u);
  }
  EXPECT_EQ(arc_.Stats().data_size, 0u);
  // Inherited again (all): the second pass is cached.
  ASSERT_UZFS_OK(pool_->InheritProp("tp", "primarycache"));
  EXPECT_EQ(ReadSeq(ino, kSize, 128 << 10), data);
  const uint64_t r3 = ZioReads();
  EXPECT_EQ(ReadSeq(ino, kSize, 128 << 10), data);
  EXPECT_EQ(ZioReads(), r3);
}

}  // namespace
}  // namespace uzfs
