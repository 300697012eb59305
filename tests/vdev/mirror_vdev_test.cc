// MirrorVdev: 2..4-way round trips; reads spread over the sides by offset;
// survives all but one failed or silently corrupt side (repairing the others
// and counting checksum errors on exactly them); all sides bad gives
// IoError/Corruption; writes need one side; DEGRADED/UNAVAIL states;
// offline refuses to take the last side.
#include <random>

#include <gtest/gtest.h>

#include "tests/vdev/vdev_tree_test_util.h"

namespace uzfs {
namespace {

using test::Exactly;

constexpr uint64_t kSideSize = 12ull << 20;

struct Mirror {
  std::unique_ptr<IoEngine> io = test::TestEngine();
  std::vector<FaultDevice*> faults;
  std::unique_ptr<Vdev> vdev;

  Mirror(uint32_t n, uint32_t ashift) {
    auto t = test::MakeLeaves(*io, n, kSideSize, ashift);
    faults = t.faults;
    auto v = MakeMirrorVdev(std::move(t.leaves), 7);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    vdev = std::move(v).value();
  }
  ~Mirror() {
    vdev.reset();
    io->Shutdown(ShutdownMode::kDrain);
  }
};

using Block = test::TestBlock;

std::vector<Block> WriteBlocks(Vdev& v, int count, uint64_t seed) {
  return test::WriteRandomBlocks(v, count, seed, 64);
}

void ExpectClean(Vdev& v, const std::vector<Block>& blocks, ReadMode mode) {
  for (const Block& b : blocks) {
    std::vector<uint8_t> got(b.data.size());
    ReadOutcome o;
    ASSERT_UZFS_OK(v.Read(b.offset, got, Exactly(b.data), &o, mode));
    EXPECT_EQ(got, b.data);
    EXPECT_EQ(o.repaired_children, 0);
    EXPECT_FALSE(o.reconstructed);
  }
}

TEST(MirrorVdev, RoundTripsTwoToFourWays) {
  for (uint32_t n = 2; n <= 4; n++) {
    for (uint32_t ashift : {9u, 12u}) {
      Mirror m(n, ashift);
      EXPECT_EQ(m.vdev->asize(), LeafAsize(kSideSize));
      EXPECT_EQ(m.vdev->name(), "mirror-0");
      EXPECT_EQ(m.vdev->AllocatedSize(1536), ashift == 9 ? 1536u : 4096u);
      const auto blocks = WriteBlocks(*m.vdev, 60, n * 100 + ashift);
      ASSERT_GE(blocks.size(), 30u);
      ExpectClean(*m.vdev, blocks, ReadMode::kNormal);
      ExpectClean(*m.vdev, blocks, ReadMode::kScrub);
      for (uint32_t s = 0; s < n; s++) {  // every side holds every block
        for (const Block& b : blocks) {
          std::vector<uint8_t> got(b.data.size());
          ASSERT_UZFS_OK(m.vdev->child(s)->Read(b.offset, got, Exactly(b.data)));
        }
      }
      EXPECT_EQ(m.vdev->state(), VdevState::kOnline);
    }
  }
}

// Trim: a free range of the mirror is the same range (past the front
// reserve) on every usable side; an offline side gets none.
TEST(MirrorVdev, TrimRangesAreTheRangeOnEveryUsableSide) {
  Mirror m(3, 12);
  std::vector<LeafTrim> ranges;
  m.vdev->TrimRanges(1 << 20, 256 << 10, &ranges);
  ASSERT_EQ(ranges.size(), 3u);
  for (uint32_t s = 0; s < 3; s++) {
    EXPECT_EQ(ranges[s].leaf, m.vdev->child(s));
    EXPECT_EQ(ranges[s].offset, kLeafFrontReserve + (1 << 20));
    EXPECT_EQ(ranges[s].len, 256u << 10);
  }
  ASSERT_UZFS_OK(m.vdev->child(1)->Offline());
  ranges.clear();
  m.vdev->TrimRanges(0, 4096, &ranges);
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[1].leaf, m.vdev->child(2));
}

TEST(MirrorVdev, ReadsSpreadOverTheSides) {
  Mirror m(3, 12);
  std::vector<uint8_t> b(128 * 1024, 7);
  const uint64_t step = uint64_t{1} << 20;
  for (uint64_t off = 0; off + b.size() <= 6 * step; off += step) ASSERT_UZFS_OK(m.vdev->Write(off, b));
  std::vector<uint64_t> before;
  for (auto* f : m.faults) before.push_back(f->stats().ios);
  for (uint64_t off = 0; off + b.size() <= 6 * step; off += step) {
    std::vector<uint8_t> got(b.size());
    ASSERT_UZFS_OK(m.vdev->Read(off, got, Exactly(b)));
  }
  for (size_t s = 0; s < m.faults.size(); s++) EXPECT_EQ(m.faults[s]->stats().ios - before[s], 2u) << s;
}

TEST(MirrorVdev, SurvivesAllButOneFailedSide) {
  for (uint32_t n = 2; n <= 4; n++) {
    Mirror m(n, 9);
    const auto blocks = WriteBlocks(*m.vdev, 40, n);
    for (uint32_t s = 0; s + 1 < n; s++) m.faults[s]->FailReads(FaultTrigger::Always(), test::DataArea());
    for (const Block& b : blocks) {
      std::vector<uint8_t> got(b.data.size());
      ReadOutcome o;
      ASSERT_UZFS_OK(m.vdev->Read(b.offset, got, Exactly(b.data), &o));
      ASSERT_EQ(got, b.data);
      // Sides tried before the good one failed and were rewritten.
      const uint32_t start = (b.offset >> kMirrorSpreadShift) % n;
      EXPECT_EQ(o.repaired_children, static_cast<int>((n - 1 - start) % n)) << start;
      EXPECT_EQ(o.reconstructed, o.repaired_children > 0);
    }
    for (uint32_t s = 0; s < n; s++) EXPECT_EQ(m.vdev->child(s)->state(), VdevState::kOnline);
    for (uint32_t s = 0; s + 1 < n; s++) m.faults[s]->ClearFaults();
    ExpectClean(*m.vdev, blocks, ReadMode::kScrub);
    // Every side failing: IoError, counted on the mirror.
    for (uint32_t s = 0; s < n; s++) m.faults[s]->FailReads(FaultTrigger::Always(), test::DataArea());
    std::vector<uint8_t> got(blocks[0].data.size());
    EXPECT_TRUE(m.vdev->Read(blocks[0].offset, got, Exactly(blocks[0].data)).IsIoError());
    EXPECT_EQ(m.vdev->counters().read_errors, 1u);
  }
}

TEST(MirrorVdev, RepairsSilentlyCorruptSides) {
  for (uint32_t n = 2; n <= 4; n++) {
    Mirror m(n, 12);
    const auto blocks = WriteBlocks(*m.vdev, 30, 10 + n);
    std::vector<uint64_t> want(n, 0);
    std::mt19937_64 rng(n);
    for (const Block& b : blocks) {
      const uint32_t good = rng() % n;
      for (uint32_t s = 0; s < n; s++) {
        if (s != good) test::CorruptOnMedia(m.faults[s], b.offset, b.data.size());
      }
      // Scrub reads every side: all n-1 wrong ones are found and fixed.
      std::vector<uint8_t> got(b.data.size());
      ReadOutcome o;
      ASSERT_UZFS_OK(m.vdev->Read(b.offset, got, Exactly(b.data), &o, ReadMode::kScrub));
      ASSERT_EQ(got, b.data);
      EXPECT_EQ(o.repaired_children, static_cast<int>(n - 1));
      EXPECT_EQ(o.checksum_errors, static_cast<int>(n - 1));
      for (uint32_t s = 0; s < n; s++) want[s] += s != good;
    }
    for (uint32_t s = 0; s < n; s++) EXPECT_EQ(m.vdev->child(s)->counters().checksum_errors, want[s]);
    ExpectClean(*m.vdev, blocks, ReadMode::kScrub);
    // Normal reads: one wrong side on the way is fixed too.
    test::CorruptOnMedia(m.faults[(blocks[0].offset >> 20) % n], blocks[0].offset, 512);
    std::vector<uint8_t> got(blocks[0].data.size());
    ReadOutcome o;
    ASSERT_UZFS_OK(m.vdev->Read(blocks[0].offset, got, Exactly(blocks[0].data), &o));
    EXPECT_EQ(o.repaired_children, 1);
    ExpectClean(*m.vdev, blocks, ReadMode::kScrub);
    // Every side wrong: Corruption, never the wrong bytes as OK.
    for (uint32_t s = 0; s < n; s++) test::CorruptOnMedia(m.faults[s], blocks[1].offset, 512);
    EXPECT_TRUE(m.vdev->Read(blocks[1].offset, got = std::vector<uint8_t>(blocks[1].data.size()),
                             Exactly(blocks[1].data)).IsCorruption());
    EXPECT_EQ(m.vdev->counters().checksum_errors, 1u);
  }
}

TEST(MirrorVdev, WritesNeedOneSideAndStatesFollow) {
  Mirror m(3, 12);
  m.faults[0]->FailWrites(FaultTrigger::Always());
  m.faults[1]->FailWrites(FaultTrigger::Always());
  const auto blocks = WriteBlocks(*m.vdev, 10, 3);
  ASSERT_EQ(blocks.size(), 10u);
  EXPECT_GT(m.vdev->child(0)->counters().write_errors, 0u);
  EXPECT_EQ(m.vdev->child(0)->state(), VdevState::kUnavail);
  EXPECT_EQ(m.vdev->child(1)->state(), VdevState::kUnavail);
  EXPECT_EQ(m.vdev->state(), VdevState::kDegraded);
  ExpectClean(*m.vdev, blocks, ReadMode::kNormal);
  EXPECT_EQ(m.vdev->child(2)->Offline().code(), Code::kBusy);  // the last good side
  m.faults[2]->FailWrites(FaultTrigger::Always());
  std::vector<uint8_t> b(4096, 1);
  EXPECT_TRUE(m.vdev->Write(0, b).IsIoError());
  EXPECT_EQ(m.vdev->counters().write_errors, 1u);
  EXPECT_EQ(m.vdev->state(), VdevState::kUnavail);
  for (auto* f : m.faults) f->ClearFaults();
  for (uint32_t s = 0; s < 3; s++) ASSERT_UZFS_OK(m.vdev->child(s)->Online());
  EXPECT_EQ(m.vdev->state(), VdevState::kOnline);
  ASSERT_UZFS_OK(m.vdev->child(0)->Offline());
  ASSERT_UZFS_OK(m.vdev->child(1)->Offline());
  EXPECT_EQ(m.vdev->child(2)->Offline().code(), Code::kBusy);
  EXPECT_EQ(m.vdev->state(), VdevState::kDegraded);
  // zpool clear
  m.vdev->ResetCounters();
  EXPECT_EQ(m.vdev->child(0)->counters(), Vdev::Counters{});
  EXPECT_EQ(m.vdev->counters(), Vdev::Counters{});
}

TEST(MirrorVdev, FlushNeedsOneSide) {
  Mirror m(2, 12);
  ASSERT_UZFS_OK(m.vdev->Flush());
  m.faults[0]->FailFlushes(FaultTrigger::Always());
  ASSERT_UZFS_OK(m.vdev->Flush());
  m.faults[1]->FailFlushes(FaultTrigger::Always());
  EXPECT_FALSE(m.vdev->Flush().ok());
}

}  // namespace
}  // namespace uzfs
