// The statistics behind `zpool iostat -l -w -r -q` (vdev_io_stats.h): the
// bucket arithmetic, and what a real vdev tree records for its leaves'
// I/O — classes from the operation and from the thread's scope, sizes,
// merged requests as "agg", latencies where a slow device puts them, and
// an interior vdev as the sum of its leaves.
#include <gtest/gtest.h>

#include <numeric>

#include "tests/vdev/vdev_tree_test_util.h"
#include "zfs/vdev/vdev_io_stats.h"

namespace uzfs {
namespace {

constexpr uint64_t kChildSize = 16ull << 20;

uint64_t Sum(std::span<const uint64_t> h) { return std::accumulate(h.begin(), h.end(), uint64_t{0}); }

size_t Cls(IoClass c) { return static_cast<size_t>(c); }

TEST(VdevIoStats, BucketsArePowersOfTwoAsOpenZfsLabelsThem) {
  EXPECT_EQ(LatencyBucket(0), 0u);
  EXPECT_EQ(LatencyBucket(1), 0u);
  EXPECT_EQ(LatencyBucket(3), 1u);
  EXPECT_EQ(LatencyBucket(1023), 9u);  // the "1us" row ends at 1023 ns
  EXPECT_EQ(LatencyBucket(1024), 10u);
  EXPECT_EQ(LatencyBucket(uint64_t{1} << 40), kLatencyBuckets - 1);  // longer: the last row
  EXPECT_EQ(SizeBucket(512), 9u);
  EXPECT_EQ(SizeBucket(4096), 12u);
  EXPECT_EQ(SizeBucket(4097), 12u);
  EXPECT_EQ(SizeBucket(16u << 20), 24u);
  EXPECT_EQ(SizeBucket(64u << 20), kSizeBuckets - 1);
}

TEST(VdevIoStats, AverageCountsEachBucketAtItsMidpoint) {
  IoStatsSnapshot::LatencyHisto h{};
  EXPECT_EQ(HistogramAverage(h), 0u);
  h[10] = 1;  // [1024, 2048): 1536
  EXPECT_EQ(HistogramAverage(h), 1536u);
  h[20] = 1;  // [1 Mi, 2 Mi): 1.5 Mi
  EXPECT_EQ(HistogramAverage(h), (1536u + 1572864u) / 2);
}

TEST(VdevIoStats, QueueDepthsFollowARequestThroughItsThreeMoments) {
  VdevIoStats s;
  s.Queued(IoClass::kAsyncWrite);
  s.Queued(IoClass::kAsyncWrite);
  EXPECT_EQ(s.Snapshot().pending[Cls(IoClass::kAsyncWrite)], 2u);
  s.Dispatched(IoClass::kAsyncWrite);
  IoStatsSnapshot snap = s.Snapshot();
  EXPECT_EQ(snap.pending[Cls(IoClass::kAsyncWrite)], 1u);
  EXPECT_EQ(snap.active[Cls(IoClass::kAsyncWrite)], 1u);
  s.Done(IoClass::kAsyncWrite, true, false, 4096, 1000, 3000, 10000);
  s.Done(IoClass::kAsyncWrite, true, false, 4096, 1000, 0, 5000);  // cancelled in the queue
  snap = s.Snapshot();
  EXPECT_EQ(snap.pending[Cls(IoClass::kAsyncWrite)], 0u);
  EXPECT_EQ(snap.active[Cls(IoClass::kAsyncWrite)], 0u);
  // Only the request that ran is in the histograms: total 9000 ns, disk
  // 7000 ns, queue 2000 ns.
  EXPECT_EQ(Sum(snap.total[1]), 1u);
  EXPECT_EQ(snap.total[1][LatencyBucket(9000)], 1u);
  EXPECT_EQ(snap.disk[1][LatencyBucket(7000)], 1u);
  EXPECT_EQ(snap.queue[Cls(IoClass::kAsyncWrite)][LatencyBucket(2000)], 1u);
  EXPECT_EQ(snap.size_ind[Cls(IoClass::kAsyncWrite)][12], 1u);
  EXPECT_EQ(Sum(snap.total[0]), 0u);
}

TEST(VdevIoStats, SinceSubtractsHistogramsAndKeepsQueueDepths) {
  VdevIoStats s;
  s.Queued(IoClass::kSyncRead);
  s.Dispatched(IoClass::kSyncRead);
  s.Done(IoClass::kSyncRead, false, false, 512, 0, 10, 20);
  const IoStatsSnapshot before = s.Snapshot();
  s.Queued(IoClass::kSyncRead);
  s.Dispatched(IoClass::kSyncRead);
  s.Done(IoClass::kSyncRead, false, true, 8192, 0, 10, 20);
  s.Queued(IoClass::kSyncRead);  // still queued
  const IoStatsSnapshot d = s.Snapshot().Since(before);
  EXPECT_EQ(Sum(d.total[0]), 1u);
  EXPECT_EQ(Sum(d.size_ind[Cls(IoClass::kSyncRead)]), 0u);
  EXPECT_EQ(d.size_agg[Cls(IoClass::kSyncRead)][13], 1u);
  EXPECT_EQ(d.pending[Cls(IoClass::kSyncRead)], 1u);
}

TEST(VdevIoStats, ScopeSetsTheClassAndNests) {
  EXPECT_EQ(CurrentIoClass(), -1);
  {
    const ScopedIoClass a(IoClass::kScrub);
    EXPECT_EQ(CurrentIoClass(), static_cast<int>(IoClass::kScrub));
    {
      const ScopedIoClass b(IoClass::kAsyncRead);
      EXPECT_EQ(CurrentIoClass(), static_cast<int>(IoClass::kAsyncRead));
    }
    EXPECT_EQ(CurrentIoClass(), static_cast<int>(IoClass::kScrub));
  }
  EXPECT_EQ(CurrentIoClass(), -1);
  EXPECT_EQ(IoClassName(IoClass::kSyncWrite), "sync_write");
  EXPECT_EQ(IoClassName(IoClass::kRebuild), "rebuild");
}

// A raidz1 of three leaves: writes and reads through the tree land in the
// leaves' statistics with the right class, size and merge flag, and the
// raidz vdev reports their sum.
TEST(VdevIoStatsTree, LeavesCountTheirRequestsAndTheRaidzSumsThem) {
  auto io = test::TestEngine();
  auto leaves = test::MakeLeaves(*io, 3, kChildSize, 12);
  auto rz = MakeRaidzVdev(std::move(leaves.leaves), 1, 10, 12);
  ASSERT_TRUE(rz.ok()) << rz.status().ToString();
  Vdev& v = **rz;
  // A txg-like write of 8 KiB: two data columns of 4 KiB and a parity
  // column, each one leaf write of 4 KiB (async write: no scope).
  std::vector<uint8_t> block(8192, 0x5a);
  ASSERT_TRUE(v.Write(0, block).ok());
  IoStatsSnapshot s = v.io_stats();
  EXPECT_EQ(Sum(s.size_ind[Cls(IoClass::kAsyncWrite)]), 3u);
  EXPECT_EQ(s.size_ind[Cls(IoClass::kAsyncWrite)][12], 3u);
  EXPECT_EQ(Sum(s.total[1]), 3u);
  EXPECT_EQ(Sum(s.disk[1]), 3u);
  EXPECT_EQ(Sum(s.queue[Cls(IoClass::kAsyncWrite)]), 3u);
  // Each leaf has its own share: one write each.
  uint64_t per_leaf = 0;
  for (Vdev* c : v.children()) {
    const IoStatsSnapshot ls = c->io_stats();
    EXPECT_EQ(Sum(ls.total[1]), 1u) << c->name();
    per_leaf += Sum(ls.total[1]);
  }
  EXPECT_EQ(per_leaf, Sum(s.total[1]));
  // A durable write is a sync write; a read a sync read, or an async read
  // under the prefetcher's scope; a scrub's scope counts its reads as scrub.
  ASSERT_TRUE(v.WriteDurable(1 << 20, block).ok());  // apart: a block takes 12 KiB with parity
  std::vector<uint8_t> back(8192);
  ASSERT_TRUE(v.Read(0, back, test::Exactly(block)).ok());
  {
    const ScopedIoClass prefetch(IoClass::kAsyncRead);
    ASSERT_TRUE(v.Read(0, back, test::Exactly(block)).ok());
    // A write under a read scope keeps its own class.
    ASSERT_TRUE(v.Write(2 << 20, block).ok());
  }
  {
    const ScopedIoClass scrub(IoClass::kScrub);
    ASSERT_TRUE(v.Read(0, back, test::Exactly(block), nullptr, ReadMode::kScrub).ok());
  }
  s = v.io_stats();
  EXPECT_EQ(Sum(s.size_ind[Cls(IoClass::kSyncWrite)]), 3u);
  EXPECT_EQ(Sum(s.size_ind[Cls(IoClass::kSyncRead)]) + Sum(s.size_agg[Cls(IoClass::kSyncRead)]), 2u);
  EXPECT_EQ(Sum(s.size_ind[Cls(IoClass::kAsyncRead)]) + Sum(s.size_agg[Cls(IoClass::kAsyncRead)]), 2u);
  EXPECT_EQ(Sum(s.size_ind[Cls(IoClass::kAsyncWrite)]), 6u);
  EXPECT_EQ(Sum(s.size_ind[Cls(IoClass::kScrub)]) + Sum(s.size_agg[Cls(IoClass::kScrub)]), 3u);  // parity too
  for (size_t c = 0; c < kIoClasses; c++) {
    EXPECT_EQ(s.pending[c], 0u) << c;
    EXPECT_EQ(s.active[c], 0u) << c;
  }
  EXPECT_EQ(Sum(s.size_ind[Cls(IoClass::kTrim)]), 0u);
}

// Writes the batch merges (adjacent blocks of one leaf) count once, as
// "agg", with the merged size.
TEST(VdevIoStatsTree, MergedWritesCountAsAggregated) {
  auto io = test::TestEngine();
  auto leaves = test::MakeLeaves(*io, 1, kChildSize, 12);
  Vdev& leaf = *leaves.leaves[0];
  std::vector<uint8_t> a(4096, 1), b(4096, 2);
  std::vector<BlockIo> reqs{BlockIo::Write(0, 0, a), BlockIo::Write(0, 4096, b)};
  leaf.Submit(reqs);
  ASSERT_TRUE(reqs[0].status.ok()) << reqs[0].status.ToString();
  ASSERT_TRUE(reqs[1].status.ok());
  const IoStatsSnapshot s = leaf.io_stats();
  EXPECT_EQ(Sum(s.size_ind[Cls(IoClass::kAsyncWrite)]), 0u);
  EXPECT_EQ(s.size_agg[Cls(IoClass::kAsyncWrite)][13], 1u);  // one 8 KiB write
}

// A slow device's latency shows in the disk and total histograms of its
// leaf, not in the queue's.
TEST(VdevIoStatsTree, ASlowDevicesLatencyIsDiskTime) {
  auto io = test::TestEngine();
  auto leaves = test::MakeLeaves(*io, 1, kChildSize, 12);
  Vdev& leaf = *leaves.leaves[0];
  leaves.faults[0]->SetLatency(std::chrono::milliseconds(20));
  std::vector<uint8_t> block(4096, 7);
  ASSERT_TRUE(leaf.Write(0, block).ok());
  const IoStatsSnapshot s = leaf.io_stats();
  const uint64_t disk = HistogramAverage(s.disk[1]);
  const uint64_t total = HistogramAverage(s.total[1]);
  // 20 ms is in bucket [16.8 ms, 33.6 ms): its midpoint 25.2 ms; a loaded
  // machine may push it one bucket up, never below.
  EXPECT_GE(disk, 25'000'000u);
  EXPECT_GE(total, disk);
  // The queue holds only the wait for a worker (which a loaded machine,
  // or one under the sanitizers, may take some milliseconds to start):
  // below the device's bucket, whatever the load.
  EXPECT_LT(HistogramAverage(s.queue[Cls(IoClass::kAsyncWrite)]), 16'000'000u);
}

}  // namespace
}  // namespace uzfs
