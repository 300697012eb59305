// Vdev::Submit of reads: a batch of block reads gives each block what Read
// gives it — the right bytes, the same errors, the same checksum-error
// counts on the same children and the same repairs written back — for
// raidz (one batch of data-column reads, Read for the blocks that need
// more), leaves (one batch) and mirrors (Read each, after the batch).
// Blocks that do not fill whole sectors take Read's own path.
#include <algorithm>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "raidz/raidz_map.h"
#include "tests/vdev/vdev_tree_test_util.h"

namespace uzfs {
namespace {

using test::Exactly;

constexpr uint64_t kChildSize = 16ull << 20;

using Block = test::TestBlock;

std::vector<Block> WriteBlocks(Vdev& v, int count, uint64_t seed) {
  return test::WriteRandomBlocks(v, count, seed, 4);
}

// A raidz of `n` fault-injectable leaves (ashift 9) and their devices.
struct TestRaidz {
  std::unique_ptr<Vdev> vdev;
  std::vector<FaultDevice*> faults;
};
TestRaidz MakeTestRaidz(IoEngine& io, uint32_t n, uint32_t p) {
  auto t = test::MakeLeaves(io, n, kChildSize, 9);
  TestRaidz r;
  r.faults = t.faults;
  auto v = MakeRaidzVdev(std::move(t.leaves), p, 42, 9);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  if (v.ok()) r.vdev = std::move(v).value();
  return r;
}

// A batch reading every block into fresh buffers, each verified exactly.
struct Batch {
  std::vector<std::vector<uint8_t>> got;
  std::vector<BlockVerifier> verify;
  std::vector<BlockIo> reads;
  explicit Batch(const std::vector<Block>& blocks) {
    got.resize(blocks.size());
    verify.resize(blocks.size());
    for (size_t i = 0; i < blocks.size(); i++) {
      got[i].assign(blocks[i].data.size(), 0);
      verify[i] = Exactly(blocks[i].data);
    }
    for (size_t i = 0; i < blocks.size(); i++)
      reads.push_back(BlockIo::Read(0, blocks[i].offset, got[i], &verify[i]));
  }
};

// A batch reading every block in `mode`; each must come back OK with its
// bytes. Returns the batch (its outcomes).
Batch ExpectBatchReadsAll(Vdev& v, const std::vector<Block>& blocks, ReadMode mode = ReadMode::kNormal) {
  Batch b(blocks);
  for (BlockIo& r : b.reads) r.mode = mode;
  v.Submit(b.reads);
  for (size_t i = 0; i < blocks.size(); i++) {
    EXPECT_TRUE(b.reads[i].status.ok()) << i << ": " << b.reads[i].status.ToString();
    EXPECT_EQ(b.got[i], blocks[i].data) << i;
  }
  return b;
}

// Wipes every column of `blocks` that lies on `child` of a raidz of
// geometry `g` (a new disk: nothing there yet); returns, per block,
// whether it has a column there.
std::vector<bool> WipeColumnsOn(FaultDevice* dev, uint32_t child, const std::vector<Block>& blocks,
                                const raidz::Geometry& g) {
  std::vector<bool> touches(blocks.size(), false);
  for (size_t i = 0; i < blocks.size(); i++) {
    const auto m = *raidz::MapBlock(blocks[i].offset, blocks[i].data.size(), g);
    for (const auto& col : m.cols) {
      if (col.child != child) continue;
      touches[i] = true;
      test::CorruptOnMedia(dev, col.offset, col.size);
    }
  }
  return touches;
}

// Every block but `skip` read alone must come back with its bytes.
void ExpectEachReadAlone(Vdev& v, const std::vector<Block>& blocks, size_t skip = SIZE_MAX) {
  for (size_t i = 0; i < blocks.size(); i++) {
    if (i == skip) continue;
    std::vector<uint8_t> got(blocks[i].data.size());
    ASSERT_UZFS_OK(v.Read(blocks[i].offset, got, Exactly(blocks[i].data)));
    EXPECT_EQ(got, blocks[i].data) << i;
  }
}

TEST(VdevReadMany, RaidzHealthyBatchReadsEveryBlockOnce) {
  for (auto [n, p] : std::vector<std::pair<uint32_t, uint32_t>>{{3, 1}, {6, 2}, {9, 3}}) {
    SCOPED_TRACE("raidz" + std::to_string(p) + " width " + std::to_string(n));
    auto io = test::TestEngine();
    {
      TestRaidz rz = MakeTestRaidz(*io, n, p);
      ASSERT_NE(rz.vdev, nullptr);
      Vdev& vd = *rz.vdev;
      const auto blocks = WriteBlocks(vd, 40, n * 10 + p);
      uint64_t data_cols = 0;
      for (const Block& blk : blocks) {
        auto m = raidz::MapBlock(blk.offset, blk.data.size(), raidz::Geometry{n, p, 9});
        ASSERT_TRUE(m.ok());
        data_cols += m->cols.size() - p;
      }
      // Unmerged: one leaf read per data column (a healthy read never
      // needs parity).
      const uint64_t saved = VdevAggregationLimit();
      SetVdevAggregationLimit(0);
      uint64_t ios_before = io->stats().submitted;
      uint64_t ops_before = vd.io_counters().read_ops;
      ExpectBatchReadsAll(vd, blocks);
      EXPECT_EQ(vd.io_counters().read_ops - ops_before, blocks.size());
      EXPECT_EQ(io->stats().submitted - ios_before, data_cols);
      // Merged (the default): the columns of blocks written back to back
      // are near each other on each leaf and go as a few large reads.
      SetVdevAggregationLimit(saved);
      ios_before = io->stats().submitted;
      ops_before = vd.io_counters().read_ops;
      ExpectBatchReadsAll(vd, blocks);
      EXPECT_EQ(vd.io_counters().read_ops - ops_before, blocks.size());
      EXPECT_LE(io->stats().submitted - ios_before, data_cols / 4);
    }
    io->Shutdown(ShutdownMode::kDrain);
  }
}

TEST(VdevReadMany, RaidzDamageInsideABatchIsRepairedAsByRead) {
  for (auto [n, p] : std::vector<std::pair<uint32_t, uint32_t>>{{4, 1}, {6, 2}, {7, 3}}) {
    SCOPED_TRACE("raidz" + std::to_string(p) + " width " + std::to_string(n));
    auto io = test::TestEngine();
    {
      TestRaidz rz = MakeTestRaidz(*io, n, p);
      ASSERT_NE(rz.vdev, nullptr);
      std::vector<FaultDevice*> faults = rz.faults;
      Vdev& vd = *rz.vdev;
      const auto blocks = WriteBlocks(vd, 30, n * 7 + p);
      const raidz::Geometry g{n, p, 9};
      std::mt19937_64 rng(n + p);
      std::vector<uint64_t> want_cksum(n, 0);
      // Every third block gets p of its data columns corrupted on the medium.
      for (size_t i = 0; i < blocks.size(); i += 3) {
        auto m = *raidz::MapBlock(blocks[i].offset, blocks[i].data.size(), g);
        std::vector<uint32_t> cols;
        for (uint32_t c = p; c < m.cols.size(); c++) cols.push_back(c);
        std::shuffle(cols.begin(), cols.end(), rng);
        cols.resize(std::min<size_t>(p, cols.size()));
        for (uint32_t c : cols) {
          test::CorruptOnMedia(faults[m.cols[c].child], m.cols[c].offset, m.cols[c].size);
          want_cksum[m.cols[c].child]++;
        }
      }
      ExpectBatchReadsAll(vd, blocks);
      for (uint32_t c = 0; c < n; c++) EXPECT_EQ(vd.child(c)->counters().checksum_errors, want_cksum[c]) << c;
      // Repaired on the medium: a second batch finds nothing to do.
      ExpectBatchReadsAll(vd, blocks);
      for (uint32_t c = 0; c < n; c++) EXPECT_EQ(vd.child(c)->counters().checksum_errors, want_cksum[c]) << c;
    }
    io->Shutdown(ShutdownMode::kDrain);
  }
}

// A batch of scrub reads (the scan's): every column read in one batch,
// wrong data and wrong parity found and rewritten as a scrub Read does,
// and a stale leaf's columns rebuilt and written to it (the resilver).
TEST(VdevReadMany, RaidzScrubBatchRepairsAndResilversAsRead) {
  auto io = test::TestEngine();
  {
    TestRaidz rz = MakeTestRaidz(*io, 6, 2);
    ASSERT_NE(rz.vdev, nullptr);
    std::vector<FaultDevice*> faults = rz.faults;
    Vdev& vd = *rz.vdev;
    const auto blocks = WriteBlocks(vd, 40, 91);
    const raidz::Geometry g{6, 2, 9};
    // Parity of block 0 and a data column of block 5 wrong on the medium;
    // child 3 stale (its content of every block wiped: a new disk).
    auto m0 = *raidz::MapBlock(blocks[0].offset, blocks[0].data.size(), g);
    auto m5 = *raidz::MapBlock(blocks[5].offset, blocks[5].data.size(), g);
    uint32_t c5 = 2;
    while (m5.cols[c5].child == 3 || m5.cols[c5].child == m0.cols[0].child) c5++;
    test::CorruptOnMedia(faults[m0.cols[0].child], m0.cols[0].offset, m0.cols[0].size);
    test::CorruptOnMedia(faults[m5.cols[c5].child], m5.cols[c5].offset, m5.cols[c5].size);
    WipeColumnsOn(faults[3], 3, blocks, g);
    vd.child(3)->SetStale(true);
    const uint64_t reads_before = io->stats().submitted;
    ExpectBatchReadsAll(vd, blocks, ReadMode::kScrub);
    // Merged: far fewer leaf requests than columns.
    EXPECT_LT(io->stats().submitted - reads_before, blocks.size() * 6 / 2);
    EXPECT_EQ(vd.child(m0.cols[0].child)->counters().checksum_errors, 1u);
    EXPECT_EQ(vd.child(m5.cols[c5].child)->counters().checksum_errors, 1u);
    EXPECT_EQ(vd.child(3)->counters().checksum_errors, 0u);  // stale: expected
    EXPECT_GT(vd.child(3)->counters().repaired_bytes, 0u);
    // Everything is whole again, the stale leaf too: with it trusted and
    // two other children gone, every block still reads right.
    vd.child(3)->SetStale(false);
    faults[0]->FailReads(FaultTrigger::Always(), test::DataArea());
    faults[1]->FailReads(FaultTrigger::Always(), test::DataArea());
    ExpectEachReadAlone(vd, blocks);
    EXPECT_EQ(vd.child(m0.cols[0].child)->counters().checksum_errors, 1u);
  }
  io->Shutdown(ShutdownMode::kDrain);
}

// One bad sector under a merged read fails only the block that lies on
// it: the merged read is read again member by member.
TEST(VdevReadMany, OneBadSectorInAMergedReadReachesOneBlock) {
  auto io = test::TestEngine();
  {
    TestRaidz rz = MakeTestRaidz(*io, 6, 2);
    ASSERT_NE(rz.vdev, nullptr);
    Vdev& vd = *rz.vdev;
    const auto blocks = WriteBlocks(vd, 40, 29);
    ASSERT_GE(blocks.size(), 10u);
    auto m = *raidz::MapBlock(blocks[7].offset, blocks[7].data.size(), raidz::Geometry{6, 2, 9});
    const auto& col = m.cols[2];  // a data column
    rz.faults[col.child]->FailReads(FaultTrigger::Always(), FaultRange{kLeafFrontReserve + col.offset, 512});
    for (ReadMode mode : {ReadMode::kNormal, ReadMode::kScrub}) {
      const Batch b = ExpectBatchReadsAll(vd, blocks, mode);
      for (size_t i = 0; i < blocks.size(); i++)
        EXPECT_EQ(b.reads[i].outcome.reconstructed, i == 7) << "block " << i;
    }
  }
  io->Shutdown(ShutdownMode::kDrain);
}

// A resilver batch (ReadMode::kResilver): blocks with no column on the
// stale leaf are not read at all; the others are rebuilt onto it, and
// wrong parity elsewhere is left for a scrub to find.
TEST(VdevReadMany, RaidzResilverBatchFillsOnlyTheStaleLeaf) {
  auto io = test::TestEngine();
  {
    TestRaidz rz = MakeTestRaidz(*io, 6, 2);
    ASSERT_NE(rz.vdev, nullptr);
    std::vector<FaultDevice*> faults = rz.faults;
    Vdev& vd = *rz.vdev;
    // Blocks of 1 to 8 sectors: the small ones have columns on only some
    // children.
    std::vector<Block> blocks;
    for (uint64_t i = 0, off = 0; i < 60; i++) {
      Block b{off, test::RandomBytes((1 + i % 8) * 512, 500 + i)};
      ASSERT_UZFS_OK(vd.Write(b.offset, b.data));
      off += vd.AllocatedSize(b.data.size());
      blocks.push_back(std::move(b));
    }
    const raidz::Geometry g{6, 2, 9};
    const std::vector<bool> touches = WipeColumnsOn(faults[4], 4, blocks, g);
    ASSERT_GT(std::count(touches.begin(), touches.end(), false), 0) << "every block touches child 4: the test shows nothing";
    // Wrong second parity (Q) on a block whose stale column is data: the
    // rebuild uses P only, and Q is not looked at.
    uint32_t q_child = UINT32_MAX;
    size_t q_block = 0;
    for (size_t i = 0; i < blocks.size() && q_child == UINT32_MAX; i++) {
      auto m = *raidz::MapBlock(blocks[i].offset, blocks[i].data.size(), g);
      if (!touches[i] || m.cols[0].child == 4 || m.cols[1].child == 4) continue;
      q_child = m.cols[1].child;
      q_block = i;
      test::CorruptOnMedia(faults[q_child], m.cols[1].offset, m.cols[1].size);
    }
    ASSERT_NE(q_child, UINT32_MAX);
    vd.child(4)->SetStale(true);
    Batch b(blocks);
    for (BlockIo& r : b.reads) r.mode = ReadMode::kResilver;
    vd.Submit(b.reads);
    for (size_t i = 0; i < blocks.size(); i++) {
      ASSERT_UZFS_OK(b.reads[i].status);
      EXPECT_EQ(b.reads[i].outcome.untouched, !touches[i]) << i;
      if (touches[i]) {
        EXPECT_EQ(b.got[i], blocks[i].data) << i;
      }
    }
    EXPECT_EQ(vd.child(q_child)->counters().checksum_errors, 0u) << "a resilver does not check parity";
    EXPECT_GT(vd.child(4)->counters().repaired_bytes, 0u);
    // Child 4 holds its columns now: with two others gone, every block
    // reads (but the one whose Q is still wrong: three faults).
    vd.child(4)->SetStale(false);
    for (uint32_t c = 0, gone = 0; c < 6 && gone < 2; c++) {
      if (c == 4) continue;
      faults[c]->FailReads(FaultTrigger::Always(), test::DataArea());
      gone++;
    }
    ExpectEachReadAlone(vd, blocks, q_block);
  }
  io->Shutdown(ShutdownMode::kDrain);
}

// A resilver reads only what the rebuild uses: with a data column on the
// stale leaf, P rebuilds it and Q is not read at all (here Q's child fails
// every read, and none reaches it).
TEST(VdevReadMany, RaidzResilverReadsNoParityTheRebuildDoesNotUse) {
  auto io = test::TestEngine();
  {
    TestRaidz rz = MakeTestRaidz(*io, 6, 2);
    ASSERT_NE(rz.vdev, nullptr);
    Vdev& vd = *rz.vdev;
    const raidz::Geometry g{6, 2, 9};
    constexpr uint32_t kStale = 4, kQChild = 1;
    // Full-width blocks (four data sectors); those with Q on kQChild and
    // a data column on kStale make the batch.
    std::vector<Block> blocks;
    for (uint64_t i = 0, off = 0; i < 120; i++) {
      Block b{off, test::RandomBytes(4 * 512, 900 + i)};
      ASSERT_UZFS_OK(vd.Write(b.offset, b.data));
      off += vd.AllocatedSize(b.data.size());
      auto m = *raidz::MapBlock(b.offset, b.data.size(), g);
      if (m.cols[1].child == kQChild && m.cols[0].child != kStale) blocks.push_back(std::move(b));
    }
    ASSERT_GE(blocks.size(), 5u);
    WipeColumnsOn(rz.faults[kStale], kStale, blocks, g);
    vd.child(kStale)->SetStale(true);
    rz.faults[kQChild]->FailReads(FaultTrigger::Always(), test::DataArea());
    ExpectBatchReadsAll(vd, blocks, ReadMode::kResilver);
    EXPECT_EQ(rz.faults[kQChild]->stats().injected_read_errors, 0u) << "Q was read";
    // The stale leaf holds its columns now.
    rz.faults[kQChild]->ClearFaults();
    vd.child(kStale)->SetStale(false);
    rz.faults[0]->FailReads(FaultTrigger::Always(), test::DataArea());
    rz.faults[2]->FailReads(FaultTrigger::Always(), test::DataArea());
    ExpectEachReadAlone(vd, blocks);
  }
  io->Shutdown(ShutdownMode::kDrain);
}

// The same for a three-way mirror: wrong sides repaired, a stale side
// filled, every side read in one batch.
TEST(VdevReadMany, MirrorScrubBatchRepairsAndResilversAsRead) {
  auto io = test::TestEngine();
  {
    auto t = test::MakeLeaves(*io, 3, kChildSize, 9, 300);
    std::vector<FaultDevice*> faults = t.faults;
    auto v = MakeMirrorVdev(std::move(t.leaves), 44);
    ASSERT_UZFS_OK(v.status());
    Vdev& vd = **v;
    const auto blocks = WriteBlocks(vd, 30, 17);
    for (size_t i = 0; i < blocks.size(); i += 5) test::CorruptOnMedia(faults[0], blocks[i].offset, 512);
    for (const Block& blk : blocks) test::CorruptOnMedia(faults[2], blk.offset, 512);
    vd.child(2)->SetStale(true);
    const uint64_t before = io->stats().submitted;
    ExpectBatchReadsAll(vd, blocks, ReadMode::kScrub);
    EXPECT_EQ(vd.child(0)->counters().checksum_errors, (blocks.size() + 4) / 5);
    EXPECT_EQ(vd.child(2)->counters().checksum_errors, 0u);
    EXPECT_GT(vd.child(2)->counters().repaired_bytes, 0u);
    EXPECT_LT(io->stats().submitted - before, blocks.size() * 2);
    // Side 2 alone now holds every block, side 0 is whole again.
    vd.child(2)->SetStale(false);
    for (uint32_t only : {0u, 2u}) {
      for (uint32_t s = 0; s < 3; s++) {
        if (s == only) {
          faults[s]->ClearFaults();
        } else {
          faults[s]->FailReads(FaultTrigger::Always(), test::DataArea());
        }
      }
      ExpectEachReadAlone(vd, blocks);
    }
  }
  io->Shutdown(ShutdownMode::kDrain);
}

TEST(VdevReadMany, RaidzFailedChildAndUnrecoverableBlockInOneBatch) {
  auto io = test::TestEngine();
  {
    TestRaidz rz = MakeTestRaidz(*io, 6, 2);
    ASSERT_NE(rz.vdev, nullptr);
    std::vector<FaultDevice*> faults = rz.faults;
    Vdev& vd = *rz.vdev;
    const auto blocks = WriteBlocks(vd, 12, 77);
    ASSERT_GE(blocks.size(), 4u);
    // Block 1: three data columns corrupt (more than nparity): Corruption.
    const raidz::Geometry g{6, 2, 9};
    auto m = *raidz::MapBlock(blocks[1].offset, blocks[1].data.size(), g);
    int bad = 0;
    for (uint32_t c = 2; c < m.cols.size() && bad < 3; c++, bad++)
      test::CorruptOnMedia(faults[m.cols[c].child], m.cols[c].offset, m.cols[c].size);
    // Every read of child 4's data area fails: rebuilt from parity.
    faults[4]->FailReads(FaultTrigger::Always(), test::DataArea());
    Batch b(blocks);
    vd.Submit(b.reads);
    for (size_t i = 0; i < blocks.size(); i++) {
      if (i == 1 && bad == 3) {
        EXPECT_EQ(b.reads[i].status.code(), Code::kCorruption) << b.reads[i].status.ToString();
        continue;
      }
      ASSERT_UZFS_OK(b.reads[i].status);
      EXPECT_EQ(b.got[i], blocks[i].data) << i;
    }
    EXPECT_GT(vd.child(4)->counters().read_errors, 0u);
  }
  io->Shutdown(ShutdownMode::kDrain);
}

TEST(VdevReadMany, LeafBatchAndMirrorReadsMatchRead) {
  auto io = test::TestEngine();
  {
    auto t = test::MakeLeaves(*io, 1, kChildSize, 9);
    FaultDevice* fault = t.faults[0];
    Vdev& leaf = *t.leaves[0];
    const auto blocks = WriteBlocks(leaf, 10, 5);
    test::CorruptOnMedia(fault, blocks[3].offset, 512);
    Batch b(blocks);
    leaf.Submit(b.reads);
    for (size_t i = 0; i < blocks.size(); i++) {
      if (i == 3) {
        EXPECT_EQ(b.reads[i].status.code(), Code::kCorruption);
        continue;
      }
      ASSERT_UZFS_OK(b.reads[i].status);
      EXPECT_EQ(b.got[i], blocks[i].data);
    }
    EXPECT_EQ(fault->errors().checksum.load(), 1u);
  }
  {
    auto t = test::MakeLeaves(*io, 2, kChildSize, 9, 200);
    std::vector<FaultDevice*> faults = t.faults;
    auto v = MakeMirrorVdev(std::move(t.leaves), 43);
    ASSERT_UZFS_OK(v.status());
    const auto blocks = WriteBlocks(**v, 10, 6);
    for (const Block& blk : blocks) test::CorruptOnMedia(faults[0], blk.offset, 512);
    ExpectBatchReadsAll(**v, blocks);
  }
  io->Shutdown(ShutdownMode::kDrain);
}

}  // namespace
}  // namespace uzfs
