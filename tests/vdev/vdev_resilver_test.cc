// Stale leaves and replacing / spare vdevs (vdev.h): a new disk in a
// replacing vdev takes writes but serves no read until a scrub-mode read
// (the resilver) has written every block to it; then it alone holds the
// data. A stale leaf (one that missed writes) is read around while other
// copies can serve, read when they cannot, and filled by scrub reads.
#include <gtest/gtest.h>

#include "tests/vdev/vdev_tree_test_util.h"

namespace uzfs {
namespace {

using test::Exactly;
using Block = test::TestBlock;

constexpr uint64_t kSize = 16ull << 20;

void ExpectAll(Vdev& v, const std::vector<Block>& blocks, ReadMode mode = ReadMode::kNormal) {
  for (const Block& b : blocks) {
    std::vector<uint8_t> got(b.data.size());
    ASSERT_UZFS_OK(v.Read(b.offset, got, Exactly(b.data), nullptr, mode));
    ASSERT_EQ(got, b.data) << "offset " << b.offset;
  }
}

// A blank leaf (no data yet), as a new disk is.
std::unique_ptr<Vdev> BlankLeaf(IoEngine& io, uint64_t guid, FaultDevice** fault) {
  auto t = test::MakeLeaves(io, 1, kSize, 9, guid);
  *fault = t.faults[0];
  return std::move(t.leaves[0]);
}

// Puts a replacing vdev [old, new] in raidz child slot `id`.
void StartReplace(Vdev& raidz, uint32_t id, std::unique_ptr<Vdev> fresh, std::unique_ptr<Vdev>* old_holder) {
  fresh->SetStale(true);
  // The slot's old leaf moves into the group; the raidz keeps a retired
  // pointer to nothing else.
  std::vector<std::unique_ptr<Vdev>> members;
  members.push_back(raidz.ReleaseChild(id));
  members.push_back(std::move(fresh));
  auto group = MakeGroupVdev(VdevKind::kReplacing, std::move(members), 900, 9);
  ASSERT_UZFS_OK(group.status());
  auto old = raidz.ReplaceChild(id, std::move(group).value());
  ASSERT_UZFS_OK(old.status());
  *old_holder = std::move(old).value();  // null: its leaf moved into the group
}

TEST(VdevResilver, ReplacingVdevNeverReadsTheNewDiskUntilResilvered) {
  auto io = test::TestEngine();
  auto t = test::MakeLeaves(*io, 6, kSize, 9);
  auto rz = std::move(MakeRaidzVdev(std::move(t.leaves), 2, 42, 9)).value();
  std::vector<Block> blocks = test::WriteRandomBlocks(*rz, 60, 7, 3);
  ASSERT_FALSE(blocks.empty());

  FaultDevice* fresh_fault = nullptr;
  std::unique_ptr<Vdev> retired;
  StartReplace(*rz, 2, BlankLeaf(*io, 500, &fresh_fault), &retired);
  Vdev* group = rz->child(2);
  ASSERT_EQ(group->kind(), VdevKind::kReplacing);
  EXPECT_EQ(group->name(), "replacing-2");
  Vdev* fresh = group->child(1);

  // Ordinary reads: right data, nothing read from the blank disk.
  ExpectAll(*rz, blocks);
  EXPECT_EQ(fresh->io_counters().read_ops, 0u);
  // New writes reach both members.
  std::vector<Block> later = test::WriteRandomBlocks(*rz, 10, 8, 3, blocks.back().offset + (1 << 20));
  EXPECT_GT(fresh->io_counters().write_ops, 0u);

  // The resilver: scrub reads of the old blocks fill the new disk.
  ExpectAll(*rz, blocks, ReadMode::kScrub);
  EXPECT_GT(fresh->counters().repaired_bytes, 0u);
  EXPECT_EQ(fresh->counters().checksum_errors, 0u);

  // Done: the new leaf takes the slot, the old one leaves.
  fresh->SetStale(false);
  auto taken = group->ReleaseChild(1);
  auto old_group = rz->ReplaceChild(2, std::move(taken));
  ASSERT_UZFS_OK(old_group.status());
  EXPECT_EQ(rz->child(2), fresh);
  // Two other disks fail: every block must now come from the new disk's
  // columns and parity.
  t.faults[0]->FailReads(FaultTrigger::Always(), test::DataArea());
  t.faults[4]->FailReads(FaultTrigger::Always(), test::DataArea());
  ExpectAll(*rz, blocks);
  ExpectAll(*rz, later);
  EXPECT_EQ(fresh->counters().checksum_errors, 0u);
  rz.reset();
  io->Shutdown(ShutdownMode::kDrain);
}

TEST(VdevResilver, ReplacingADeadDiskRebuildsFromParity) {
  auto io = test::TestEngine();
  auto t = test::MakeLeaves(*io, 4, kSize, 9);
  auto rz = std::move(MakeRaidzVdev(std::move(t.leaves), 1, 42, 9)).value();
  std::vector<Block> blocks = test::WriteRandomBlocks(*rz, 40, 9, 3);
  rz->child(1)->MarkUnavail();  // the disk died
  FaultDevice* fresh_fault = nullptr;
  std::unique_ptr<Vdev> retired;
  StartReplace(*rz, 1, BlankLeaf(*io, 500, &fresh_fault), &retired);
  Vdev* fresh = rz->child(1)->child(1);
  EXPECT_EQ(rz->child(1)->state(), VdevState::kDegraded);
  ExpectAll(*rz, blocks);  // from parity
  EXPECT_EQ(fresh->io_counters().read_ops, 0u);
  ExpectAll(*rz, blocks, ReadMode::kScrub);
  fresh->SetStale(false);
  // With the old disk still gone, the new one now serves: a second disk
  // failing is survivable only if the new disk holds its columns.
  EXPECT_TRUE(rz->serves());
  t.faults[3]->FailReads(FaultTrigger::Always(), test::DataArea());
  ExpectAll(*rz, blocks);
  rz.reset();
  io->Shutdown(ShutdownMode::kDrain);
}

TEST(VdevResilver, StaleMirrorSideIsReadLastAndFilledByScrub) {
  auto io = test::TestEngine();
  auto t = test::MakeLeaves(*io, 2, kSize, 9);
  auto m = std::move(MakeMirrorVdev(std::move(t.leaves), 42, 9)).value();
  std::vector<Block> old_blocks = test::WriteRandomBlocks(*m, 20, 3, 3);
  ASSERT_UZFS_OK(m->child(1)->Offline());
  std::vector<Block> missed = test::WriteRandomBlocks(*m, 20, 4, 3, old_blocks.back().offset + (1 << 20));
  ASSERT_UZFS_OK(m->child(1)->Online());
  m->child(1)->SetStale(true);
  const uint64_t reads_before = m->child(1)->io_counters().read_ops;
  ExpectAll(*m, missed);
  EXPECT_EQ(m->child(1)->io_counters().read_ops, reads_before);  // never read while side 0 serves
  // While stale, losing the other side is refused: it alone has every block.
  EXPECT_EQ(m->child(0)->Offline().code(), Code::kBusy);
  // Side 0 failing: the stale side is read after all; what it has (the
  // blocks written before it went away) verifies, what it missed does not.
  t.faults[0]->FailReads(FaultTrigger::Always(), test::DataArea());
  ExpectAll(*m, old_blocks);
  t.faults[0]->ClearFaults();
  ASSERT_UZFS_OK(m->child(0)->Online());
  // The resilver fills it; afterwards it alone serves everything.
  ExpectAll(*m, missed, ReadMode::kScrub);
  m->child(1)->SetStale(false);
  ASSERT_UZFS_OK(m->child(0)->Offline());
  ExpectAll(*m, missed);
  ExpectAll(*m, old_blocks);
  m.reset();
  io->Shutdown(ShutdownMode::kDrain);
}

TEST(VdevResilver, StaleRaidzColumnIsRebuiltThenReadWhenTooFewRemain) {
  auto io = test::TestEngine();
  auto t = test::MakeLeaves(*io, 4, kSize, 9);
  auto rz = std::move(MakeRaidzVdev(std::move(t.leaves), 1, 42, 9)).value();
  std::vector<Block> blocks = test::WriteRandomBlocks(*rz, 30, 5, 3);
  rz->child(2)->SetStale(true);
  EXPECT_FALSE(rz->child(2)->serves());
  const uint64_t reads_before = rz->child(2)->io_counters().read_ops;
  ExpectAll(*rz, blocks);
  EXPECT_EQ(rz->child(2)->io_counters().read_ops, reads_before);
  // One more failed child is beyond raidz1's parity with the stale one
  // left out; its columns (written before it went stale) are read.
  t.faults[0]->FailReads(FaultTrigger::Always(), test::DataArea());
  ExpectAll(*rz, blocks);
  rz.reset();
  io->Shutdown(ShutdownMode::kDrain);
}

TEST(VdevResilver, OfflineInsideAReplacingVdevAsksTheRaidz) {
  auto io = test::TestEngine();
  auto t = test::MakeLeaves(*io, 4, kSize, 9);
  auto rz = std::move(MakeRaidzVdev(std::move(t.leaves), 1, 42, 9)).value();
  FaultDevice* fresh_fault = nullptr;
  std::unique_ptr<Vdev> retired;
  StartReplace(*rz, 0, BlankLeaf(*io, 500, &fresh_fault), &retired);
  // The old disk may go: the raidz can do without the whole slot.
  ASSERT_UZFS_OK(rz->child(0)->child(0)->Offline());
  // Now a second disk may not.
  EXPECT_EQ(rz->child(3)->Offline().code(), Code::kBusy);
  EXPECT_FALSE(MakeGroupVdev(VdevKind::kMirror, {}, 1).ok());
  rz.reset();
  io->Shutdown(ShutdownMode::kDrain);
}

}  // namespace
}  // namespace uzfs
