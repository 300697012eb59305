// The block layer assembled: the ZIO pipeline over a real vdev tree (raidz2
// of six and a 2-way mirror, on fault-injecting in-memory devices) with the
// metaslab allocator. Blocks survive what each vdev promises to survive,
// silent damage is repaired and counted, ditto copies span both vdevs, and
// frees come back only after their txg syncs.
#include <gtest/gtest.h>

#include <map>

#include "tests/testutil/testutil.h"
#include "zfs/spa/allocator.h"
#include "zfs/vdev/fault_device.h"
#include "zfs/vdev/io_engine.h"
#include "zfs/vdev/mem_device.h"
#include "zfs/vdev/vdev.h"
#include "zfs/zio/spa_allocator.h"
#include "zfs/zio/vdev_target.h"
#include "zfs/zio/zio.h"

namespace uzfs {
namespace {

constexpr uint64_t kDevSize = 256ull << 20;

class ZioPoolTest : public ::testing::Test {
 protected:
  virtual uint64_t DevSize() const { return kDevSize; }
  void SetUp() override {
    io_ = std::move(IoEngine::Create()).value();
    std::vector<std::unique_ptr<Vdev>> rz, mirror;
    for (int i = 0; i < 8; i++) {
      MemDeviceOptions o;
      o.volatile_cache = false;
      auto fd = std::make_unique<FaultDevice>(std::move(MemDevice::Create(DevSize(), o)).value());
      faults_.push_back(fd.get());
      auto leaf = MakeLeafVdev(std::move(fd), *io_, 1000 + i, 12);
      (i < 6 ? rz : mirror).push_back(std::move(leaf));
    }
    std::vector<std::unique_ptr<Vdev>> tops;
    tops.push_back(std::move(MakeRaidzVdev(std::move(rz), 2, 1, 12)).value());
    tops.push_back(std::move(MakeMirrorVdev(std::move(mirror), 2, 12)).value());
    root_ = std::move(MakeRootVdev(std::move(tops))).value();
    std::vector<TopVdevSpace> spaces;
    for (uint32_t v = 0; v < 2; v++) {
      Vdev* top = root_->child(v);
      spaces.push_back(TopVdevSpace{v, top->asize(), top->ashift(),
                                    [top](uint64_t p) { return top->AllocatedSize(p); }, 0});
    }
    alloc_ = std::move(Allocator::Create(spaces, AllocatorOptions{})).value();
    target_ = std::make_unique<VdevTreeTarget>(*root_);
    shim_ = std::make_unique<SpaAllocator>(*alloc_);
    zio_ = std::make_unique<Zio>(*target_, *shim_);
  }
  void TearDown() override {
    zio_.reset();
    root_.reset();
  }

  std::vector<uint8_t> Data(size_t n, uint64_t seed) {
    auto d = test::RandomBytes(n, seed);
    for (size_t i = 0; i < n; i += 3) d[i] = 'a';  // compressible, not trivially
    return d;
  }

  std::unique_ptr<IoEngine> io_;
  std::vector<FaultDevice*> faults_;  // 0-5 raidz2, 6-7 mirror
  std::unique_ptr<Vdev> root_;
  std::unique_ptr<Allocator> alloc_;
  std::unique_ptr<VdevTreeTarget> target_;
  std::unique_ptr<SpaAllocator> shim_;
  std::unique_ptr<Zio> zio_;
};

TEST_F(ZioPoolTest, SurvivesWhatEachVdevPromises) {
  WriteProps p;
  p.copies = 1;
  std::map<uint32_t, std::vector<std::pair<BlockPtr, std::vector<uint8_t>>>> by_vdev;
  for (int i = 0; i < 120; i++) {
    auto data = Data(512 * (1 + (i * 37) % 256), i);
    auto bp = zio_->Write(data, p, 5);
    ASSERT_TRUE(bp.ok()) << bp.status().ToString();
    by_vdev[bp->dva[0].vdev].push_back({*bp, data});
  }
  ASSERT_FALSE(by_vdev[0].empty());
  ASSERT_FALSE(by_vdev[1].empty());
  // raidz2 loses two children, the mirror one side: everything still reads.
  faults_[1]->Vanish();
  faults_[4]->Vanish();
  faults_[7]->Vanish();
  for (auto& [v, blocks] : by_vdev) {
    for (auto& [bp, data] : blocks) {
      std::vector<uint8_t> out(bp.lsize);
      ASSERT_UZFS_OK(zio_->Read(bp, out));
      EXPECT_EQ(out, data);
    }
  }
  // A third raidz child gone: raidz2 blocks touching all three are lost, and
  // reads say so instead of returning wrong data.
  faults_[0]->Vanish();
  int lost = 0;
  for (auto& [bp, data] : by_vdev[0]) {
    std::vector<uint8_t> out(bp.lsize);
    Status s = zio_->Read(bp, out);
    if (s.ok()) EXPECT_EQ(out, data); else lost++;
  }
  EXPECT_GT(lost, 0);
}

TEST_F(ZioPoolTest, SilentDamageIsRepairedAndCounted) {
  WriteProps p;
  std::vector<std::pair<BlockPtr, std::vector<uint8_t>>> blocks;
  for (int i = 0; i < 60; i++) {
    auto data = Data(131072, 100 + i);
    auto bp = zio_->Write(data, p, 6);
    ASSERT_TRUE(bp.ok());
    blocks.push_back({*bp, data});
  }
  // Children 2 and 5 of the raidz and side 6 of the mirror return rotten
  // bytes on every read; no device reports an error.
  for (int c : {2, 5, 6}) faults_[c]->CorruptReads(FaultTrigger::Always(), {}, 0x40);
  for (auto& [bp, data] : blocks) {
    std::vector<uint8_t> out(bp.lsize);
    ASSERT_UZFS_OK(zio_->Read(bp, out));
    EXPECT_EQ(out, data);
  }
  uint64_t cksum = 0;
  for (Vdev* top : root_->children())
    for (Vdev* leaf : top->children()) cksum += leaf->counters().checksum_errors;
  EXPECT_GT(cksum, 0u);
}

TEST_F(ZioPoolTest, DittoCopiesSpanVdevsAndFreesWaitForSync) {
  WriteProps p;
  p.copies = 2;
  auto data = Data(65536, 7);
  auto bp = zio_->Write(data, p, 10);
  ASSERT_TRUE(bp.ok());
  EXPECT_NE(bp->dva[0].vdev, bp->dva[1].vdev);
  // Lose the whole mirror: the raidz copy still serves.
  faults_[6]->Vanish();
  faults_[7]->Vanish();
  std::vector<uint8_t> out(data.size());
  ASSERT_UZFS_OK(zio_->Read(*bp, out));
  EXPECT_EQ(out, data);
  faults_[6]->Reappear();
  faults_[7]->Reappear();

  const uint64_t used = alloc_->allocated();
  EXPECT_GT(used, 0u);
  ASSERT_UZFS_OK(zio_->Free(*bp, 11));
  MemSpaceMapProvider maps;
  ASSERT_UZFS_OK(alloc_->SyncTxg(10, maps));
  ASSERT_UZFS_OK(alloc_->SyncTxg(11, maps));
  alloc_->SyncDone(11);
  EXPECT_GT(alloc_->deferred(), 0u) << "freed space must wait out the defer txgs";
  for (uint64_t t = 12; t <= 14; t++) {
    ASSERT_UZFS_OK(alloc_->SyncTxg(t, maps));
    alloc_->SyncDone(t);
  }
  EXPECT_EQ(alloc_->deferred(), 0u);
  EXPECT_EQ(alloc_->allocated(), 0u);
}

// The smallest devices uzfs accepts, so filling the pool is quick.
class SmallZioPoolTest : public ZioPoolTest {
 protected:
  uint64_t DevSize() const override { return 64ull << 20; }
};

TEST_F(SmallZioPoolTest, GangsWhenSpaceIsFragmented) {
  // Fill the pool with 64 KiB blocks, free every other one: a 128 KiB
  // incompressible block must gang (its pieces fit the holes), and read back.
  WriteProps small;
  std::vector<BlockPtr> fill;
  const auto chunk = test::RandomBytes(65536, 5);
  for (;;) {
    auto bp = zio_->Write(chunk, small, 20);
    if (!bp.ok()) {
      ASSERT_TRUE(bp.status().IsNoSpace()) << bp.status().ToString();
      break;
    }
    fill.push_back(*bp);
    if (fill.size() > 200000) FAIL() << "pool never filled";
  }
  for (size_t i = 0; i < fill.size(); i += 2) ASSERT_UZFS_OK(zio_->Free(fill[i], 21));
  MemSpaceMapProvider maps;
  for (uint64_t t = 20; t <= 24; t++) {
    ASSERT_UZFS_OK(alloc_->SyncTxg(t, maps));
    alloc_->SyncDone(t);
  }
  auto big = test::RandomBytes(131072, 99);
  auto bp = zio_->Write(big, small, 25);
  ASSERT_TRUE(bp.ok()) << bp.status().ToString();
  EXPECT_TRUE(bp->dva[0].gang);
  std::vector<uint8_t> out(big.size());
  ASSERT_UZFS_OK(zio_->Read(*bp, out));
  EXPECT_EQ(out, big);
}

}  // namespace
}  // namespace uzfs

namespace uzfs {
namespace {

TEST_F(ZioPoolTest, ScrubFindsRotThatReadsDoNotNeed) {
  // Children 0 and 1 return rotten bytes. Blocks whose parity columns sit on
  // exactly those two read fine without noticing (only data columns are
  // needed); a scrub checks parity too, so it finds more.
  WriteProps p;
  p.copies = 1;
  std::vector<BlockPtr> bps;
  for (int i = 0; i < 30; i++) {
    auto bp = zio_->Write(Data(131072, 500 + i), p, 30);
    ASSERT_TRUE(bp.ok());
    if (bp->dva[0].vdev == 0) bps.push_back(*bp);
  }
  ASSERT_FALSE(bps.empty());
  faults_[0]->CorruptReads(FaultTrigger::Always(), {}, 0x08);
  faults_[1]->CorruptReads(FaultTrigger::Always(), {}, 0x08);
  auto cksum_errors = [&] {
    uint64_t n = 0;
    for (Vdev* leaf : root_->child(0)->children()) n += leaf->counters().checksum_errors;
    return n;
  };
  const uint64_t start = cksum_errors();
  for (const auto& bp : bps) {
    std::vector<uint8_t> out(bp.lsize);
    ASSERT_UZFS_OK(zio_->Read(bp, out));
  }
  const uint64_t by_reads = cksum_errors() - start;
  for (const auto& bp : bps) {
    ScrubResult r;
    ASSERT_UZFS_OK(zio_->Scrub(bp, &r));
    EXPECT_EQ(r.copies_checked, 1);
  }
  const uint64_t by_scrub = cksum_errors() - start - by_reads;
  // Reads only notice rot in data columns; a scrub also checks parity.
  EXPECT_GT(by_scrub, by_reads);
}

}  // namespace
}  // namespace uzfs
