// The vdev tree's common parts: leaf geometry (agrees with zfs/spa/label.h
// and with the asize zfs-fuse's zdb printed for 64 MiB files), leaf I/O at
// 4 MiB on the device, a top-level leaf's lack of redundancy, the root
// vdev, names, state names, flush and builder errors.
#include <gtest/gtest.h>

#include "tests/vdev/vdev_tree_test_util.h"
#include "zfs/spa/label.h"

namespace uzfs {
namespace {

using test::Exactly;

TEST(Vdev, LeafGeometryMatchesLabelsAndZdb) {
  static_assert(kLeafFrontReserve == kVdevDataOffset);
  static_assert(kLeafBackReserve == kVdevLabelEndSize);
  // zdb -l asize of pools on files of these sizes (zfs-fuse 0.7; the
  // 64 MiB one is tests/fixtures/labels/single-single0.zdb; the compat test
  // re-checks odd sizes live).
  EXPECT_EQ(LeafAsize(64ull << 20), 62390272u);
  EXPECT_EQ(LeafAsize(67408864), 62652416u);
  EXPECT_EQ(LeafAsize(67371007), 62390272u);
  EXPECT_EQ(LeafAsize(4ull << 20), 0u);
  EXPECT_EQ(VdevStateName(VdevState::kDegraded), "DEGRADED");
  EXPECT_EQ(VdevStateName(VdevState::kUnavail), "UNAVAIL");
  EXPECT_EQ(VdevKindName(VdevKind::kRaidz), "raidz");
}

TEST(Vdev, LeafWritesAfterTheFrontReserveAndHasNoRedundancy) {
  auto io = test::TestEngine();
  auto t = test::MakeLeaves(*io, 1, 8ull << 20, 12);
  Vdev& leaf = *t.leaves[0];
  EXPECT_EQ(leaf.kind(), VdevKind::kLeaf);
  EXPECT_EQ(leaf.name(), "mem0");
  EXPECT_EQ(leaf.asize(), (8ull << 20) - (4ull << 20) - (512 << 10));
  EXPECT_EQ(leaf.AllocatedSize(1), 4096u);
  const auto data = test::RandomBytes(1536, 1);  // padded to a sector on the device
  ASSERT_UZFS_OK(leaf.Write(8192, data));
  std::vector<uint8_t> raw(4096);
  ASSERT_UZFS_OK(t.faults[0]->Read(kLeafFrontReserve + 8192, raw));
  EXPECT_TRUE(std::equal(data.begin(), data.end(), raw.begin()));
  std::vector<uint8_t> got(data.size());
  ReadOutcome o;
  ASSERT_UZFS_OK(leaf.Read(8192, got, Exactly(data), &o));
  EXPECT_EQ(got, data);
  test::CorruptOnMedia(t.faults[0], 8192, 16);
  EXPECT_TRUE(leaf.Read(8192, got, Exactly(data)).IsCorruption());
  EXPECT_EQ(leaf.counters().checksum_errors, 1u);
  EXPECT_EQ(leaf.Read(1024, got, nullptr).code(), Code::kInvalidArgument);
  EXPECT_EQ(leaf.Write(leaf.asize(), data).code(), Code::kInvalidArgument);
  t.faults[0]->FailReads(FaultTrigger::Always(), test::DataArea());
  EXPECT_TRUE(leaf.Read(8192, got, nullptr).IsIoError());
  EXPECT_EQ(leaf.counters().read_errors, 1u);
  EXPECT_EQ(leaf.state(), VdevState::kOnline);  // the probe at the start works
  t.faults[0]->Vanish();
  EXPECT_TRUE(leaf.Read(8192, got, nullptr).IsIoError());
  EXPECT_EQ(leaf.state(), VdevState::kUnavail);
  EXPECT_FALSE(leaf.Online().ok());
  t.faults[0]->Reappear();
  t.faults[0]->ClearFaults();
  ASSERT_UZFS_OK(leaf.Online());
  ASSERT_UZFS_OK(leaf.Offline());  // no parent: nothing to protect
  EXPECT_EQ(leaf.state(), VdevState::kOffline);
  t.leaves.clear();
  io->Shutdown(ShutdownMode::kDrain);
}

TEST(Vdev, RootHoldsTopLevelsAndFlushesEveryLeaf) {
  auto io = test::TestEngine();
  auto a = test::MakeLeaves(*io, 6, 16ull << 20, 9, 10);
  auto b = test::MakeLeaves(*io, 2, 16ull << 20, 9, 20);
  auto c = test::MakeLeaves(*io, 1, 16ull << 20, 9, 30);
  std::vector<FaultDevice*> all(a.faults);
  all.insert(all.end(), b.faults.begin(), b.faults.end());
  all.insert(all.end(), c.faults.begin(), c.faults.end());
  std::vector<std::unique_ptr<Vdev>> tops;
  tops.push_back(std::move(MakeRaidzVdev(std::move(a.leaves), 2, 1)).value());
  tops.push_back(std::move(MakeMirrorVdev(std::move(b.leaves), 2)).value());
  tops.push_back(std::move(c.leaves[0]));
  auto root_or = MakeRootVdev(std::move(tops), 99);
  ASSERT_TRUE(root_or.ok());
  Vdev& root = **root_or;
  EXPECT_EQ(root.kind(), VdevKind::kRoot);
  ASSERT_EQ(root.children().size(), 3u);
  EXPECT_EQ(root.child(0)->name(), "raidz2-0");
  EXPECT_EQ(root.child(1)->name(), "mirror-1");
  EXPECT_EQ(root.child(2)->id(), 2u);
  EXPECT_EQ(root.child(1)->child(1)->guid(), 21u);
  EXPECT_EQ(root.child(1)->child(1)->parent(), root.child(1));
  EXPECT_EQ(root.asize(), 6 * LeafAsize(16ull << 20) + 2 * LeafAsize(16ull << 20));
  std::vector<uint8_t> buf(4096);
  EXPECT_EQ(root.Read(0, buf, nullptr).code(), Code::kInvalidArgument);
  EXPECT_EQ(root.Write(0, buf).code(), Code::kInvalidArgument);
  std::vector<Vdev*> leaves;
  root.CollectLeaves(&leaves);
  EXPECT_EQ(leaves.size(), 9u);
  ASSERT_UZFS_OK(root.Flush());
  for (FaultDevice* f : all) EXPECT_EQ(f->stats().ios, 1u);
  EXPECT_EQ(root.state(), VdevState::kOnline);
  ASSERT_UZFS_OK(root.child(1)->child(0)->Offline());
  EXPECT_EQ(root.state(), VdevState::kDegraded);
  // A single-disk top-level vdev cannot be offlined: the pool would lose it.
  EXPECT_EQ(root.child(2)->Offline().code(), Code::kBusy);
  root.child(2)->MarkRemoved();
  EXPECT_EQ(root.state(), VdevState::kUnavail);
  EXPECT_FALSE(root.Flush().ok());
  root_or = Status::InvalidArgument("drop the tree before the engine");
  io->Shutdown(ShutdownMode::kDrain);
  EXPECT_FALSE(MakeRootVdev({}).ok());
}

}  // namespace
}  // namespace uzfs
