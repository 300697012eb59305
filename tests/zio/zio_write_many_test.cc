// Zio::WriteMany over a real vdev tree (VdevTreeTarget): every top-level
// vdev of a batch is written at the same time, each one's blocks merged
// into one leaf write; a mirror's sides each get one merged write; the
// blocks read back; a failing top-level vdev fails only the blocks it
// holds every copy of.
#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"
#include "tests/vdev/vdev_tree_test_util.h"
#include "tests/zio/zio_test_util.h"
#include "zfs/zio/vdev_target.h"
#include "zfs/zio/zio.h"

namespace uzfs {
namespace {

constexpr uint64_t kLeafSize = 64ull << 20;
constexpr size_t kBlock = 64 << 10;

std::vector<std::vector<uint8_t>> Datas(int n, uint64_t seed) {
  std::vector<std::vector<uint8_t>> d;
  for (int i = 0; i < n; i++) d.push_back(test::RandomBytes(kBlock, seed + i));
  return d;
}

std::vector<Zio::BatchWrite> Batch(const std::vector<std::vector<uint8_t>>& datas, int copies) {
  std::vector<Zio::BatchWrite> w(datas.size());
  for (size_t i = 0; i < datas.size(); i++) {
    w[i].data = datas[i];
    w[i].props.compress = CompressType::kOff;
    w[i].props.copies = copies;
  }
  return w;
}

void ExpectReadsBack(Zio& zio, const std::vector<Zio::BatchWrite>& w,
                     const std::vector<std::vector<uint8_t>>& datas) {
  for (size_t i = 0; i < w.size(); i++) {
    ASSERT_UZFS_OK(w[i].status);
    std::vector<uint8_t> out(kBlock);
    ASSERT_UZFS_OK(zio.Read(w[i].bp, out));
    EXPECT_EQ(out, datas[i]) << i;
  }
}

TEST(ZioWriteMany, TopLevelVdevsAreWrittenTogether) {
  // Two single-leaf top-level vdevs whose writes each wait (up to 5 s)
  // until both are in progress: written one vdev after the other, each
  // write waits the whole timeout and at most one is in progress.
  auto io = test::TestEngine();
  {
    test::InFlight f;
    std::vector<test::RendezvousDevice*> devs;
    auto tops = test::MakeRendezvousLeaves(*io, 2, kLeafSize, &f, &devs, 400);
    auto root = MakeRootVdev(std::move(tops));
    ASSERT_UZFS_OK(root.status());
    VdevTreeTarget target(**root);
    test::SectorAllocator alloc(2, LeafAsize(kLeafSize));
    Zio zio(target, alloc);
    // copies=2: every block on both vdevs, eight blocks back to back on
    // each (512 KiB: one merged write per leaf).
    const auto datas = Datas(8, 11);
    auto w = Batch(datas, 2);
    const auto t0 = std::chrono::steady_clock::now();
    zio.WriteMany(w, 4);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ExpectReadsBack(zio, w, datas);
    for (const auto& b : w) {
      EXPECT_NE(b.bp.dva[0].vdev, b.bp.dva[1].vdev);
      EXPECT_EQ(b.bp.dva[1].asize, kBlock);
    }
    EXPECT_EQ(devs[0]->writes(), 1u);
    EXPECT_EQ(devs[1]->writes(), 1u);
    {
      MutexLock l(&f.mu);
      EXPECT_EQ(f.most, 2) << "the top-level vdevs were written one after the other";
    }
    EXPECT_LT(secs, 4.0);
  }
  io->Shutdown(ShutdownMode::kDrain);
}

TEST(ZioWriteMany, MirrorSidesGetOneMergedWriteEach) {
  auto io = test::TestEngine();
  {
    auto t = test::MakeLeaves(*io, 2, kLeafSize, 12);
    auto mirror = MakeMirrorVdev(std::move(t.leaves), 7, 12);
    ASSERT_UZFS_OK(mirror.status());
    std::vector<std::unique_ptr<Vdev>> tops;
    tops.push_back(std::move(mirror).value());
    auto root = MakeRootVdev(std::move(tops));
    ASSERT_UZFS_OK(root.status());
    VdevTreeTarget target(**root);
    test::SectorAllocator alloc(1, (*root)->child(0)->asize());
    Zio zio(target, alloc);
    const auto datas = Datas(12, 21);  // 768 KiB: under the 1 MiB limit
    auto w = Batch(datas, 1);
    const uint64_t before0 = t.faults[0]->stats().ios, before1 = t.faults[1]->stats().ios;
    zio.WriteMany(w, 4);
    EXPECT_EQ(t.faults[0]->stats().ios - before0, 1u);
    EXPECT_EQ(t.faults[1]->stats().ios - before1, 1u);
    ExpectReadsBack(zio, w, datas);
    // A side that fails its writes: the blocks still land (the other side).
    t.faults[1]->FailWrites(FaultTrigger::Always(), test::DataArea());
    const auto more = Datas(4, 51);
    auto w2 = Batch(more, 1);
    zio.WriteMany(w2, 5);
    EXPECT_EQ(t.faults[1]->stats().injected_write_errors, 1u);
    t.faults[1]->ClearFaults();
    ExpectReadsBack(zio, w2, more);
  }
  io->Shutdown(ShutdownMode::kDrain);
}

TEST(ZioWriteMany, FailingVdevFailsOnlyItsBlocks) {
  // Two leaf vdevs, copies=1 blocks spread over both by the allocator's
  // first fit after vdev 0 filled a gap: a failing vdev 1 fails the
  // blocks placed there, their space comes back, the others stand.
  auto io = test::TestEngine();
  {
    auto t = test::MakeLeaves(*io, 2, kLeafSize, 12);
    auto root = MakeRootVdev(std::move(t.leaves));
    ASSERT_UZFS_OK(root.status());
    VdevTreeTarget target(**root);
    const uint64_t asize = LeafAsize(kLeafSize);
    test::SectorAllocator alloc(2, asize);
    Zio zio(target, alloc);
    // Vdev 0 full but for four blocks' room: blocks 0-3 there, 4-7 on vdev 1.
    std::vector<uint8_t> filler(asize - 4 * kBlock, 1);
    ASSERT_TRUE(alloc.Allocate(filler.size(), 1, 3).ok());
    const auto datas = Datas(8, 31);
    auto w = Batch(datas, 1);
    t.faults[1]->FailWrites(FaultTrigger::Always(), test::DataArea());
    const uint64_t allocated = alloc.allocated();
    zio.WriteMany(w, 4);
    t.faults[1]->ClearFaults();
    int ok = 0;
    for (size_t i = 0; i < w.size(); i++) {
      if (w[i].status.ok()) {
        ok++;
        EXPECT_EQ(w[i].bp.dva[0].vdev, 0u);
        std::vector<uint8_t> out(kBlock);
        ASSERT_UZFS_OK(zio.Read(w[i].bp, out));
        EXPECT_EQ(out, datas[i]);
      } else {
        EXPECT_TRUE(w[i].status.IsIoError()) << w[i].status.ToString();
      }
    }
    EXPECT_EQ(ok, 4);
    EXPECT_EQ(alloc.allocated(), allocated + 4 * kBlock) << "the failed blocks' space came back";
  }
  io->Shutdown(ShutdownMode::kDrain);
}

}  // namespace
}  // namespace uzfs
