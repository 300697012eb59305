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

// WriteDurable on a leaf (write, then flush): the block survives a power
// loss, counts as a write, and fails as Write does on a bad range or an
// unusable leaf. On a mirror and a raidz (one durable write per child) it
// survives with no child flushed.
TEST(Vdev, WriteDurableIsDurableWithoutAFlush) {
  auto io = test::TestEngine();
  // Memory with a volatile write cache under an idle FaultDevice.
  std::vector<MemDevice*> mems;
  std::vector<FaultDevice*> faults;
  std::vector<std::unique_ptr<Vdev>> leaves;
  for (int i = 0; i < 6; i++) {
    auto mem = std::move(MemDevice::Create(8ull << 20, {.name = "mem" + std::to_string(i)})).value();
    mems.push_back(mem.get());
    auto fd = std::make_unique<FaultDevice>(std::move(mem), FaultDeviceOptions{.volatile_cache = false});
    faults.push_back(fd.get());
    leaves.push_back(MakeLeafVdev(std::move(fd), *io, 100 + i, 12));
  }
  Vdev& leaf = *leaves[0];
  const auto data = test::RandomBytes(1536, 2);
  std::vector<uint8_t> got(data.size());
  ASSERT_UZFS_OK(leaf.Write(8192, data));  // a plain write is lost in a power loss
  mems[0]->DropUnflushed();
  EXPECT_TRUE(leaf.Read(8192, got, Exactly(data)).IsCorruption());
  const auto before = leaf.io_counters();
  ASSERT_UZFS_OK(leaf.WriteDurable(8192, data));
  EXPECT_EQ(leaf.io_counters().write_ops, before.write_ops + 1);
  mems[0]->DropUnflushed();
  ASSERT_UZFS_OK(leaf.Read(8192, got, Exactly(data)));
  EXPECT_EQ(got, data);
  EXPECT_EQ(mems[0]->flush_count(), 1u);  // a leaf: write, then flush (vdev_leaf.cc)
  EXPECT_EQ(leaf.WriteDurable(leaf.asize(), data).code(), Code::kInvalidArgument);
  EXPECT_EQ(leaf.WriteDurable(100, data).code(), Code::kInvalidArgument);
  faults[0]->FailWrites(FaultTrigger::NextN(1), test::DataArea());
  EXPECT_TRUE(leaf.WriteDurable(8192, data).IsIoError());
  EXPECT_EQ(leaf.counters().write_errors, 1u);
  EXPECT_EQ(leaf.state(), VdevState::kOnline);  // the probe finds it working
  ASSERT_UZFS_OK(leaf.Offline());
  EXPECT_TRUE(leaf.WriteDurable(8192, data).IsIoError());
  ASSERT_UZFS_OK(leaf.Online());

  // A mirror: every side has it, durable, and no side was flushed.
  std::vector<std::unique_ptr<Vdev>> sides;
  sides.push_back(std::move(leaves[1]));
  sides.push_back(std::move(leaves[2]));
  auto m = MakeMirrorVdev(std::move(sides), 77);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_UZFS_OK((*m)->WriteDurable(4096, data));
  for (int i : {1, 2}) {
    mems[i]->DropUnflushed();
    std::vector<uint8_t> raw(data.size());
    ASSERT_UZFS_OK(mems[i]->Read(kLeafFrontReserve + 4096, raw));
    EXPECT_EQ(raw, data) << "side " << i;
    EXPECT_EQ(mems[i]->flush_count(), 0u);
  }
  m->reset();
  // A raidz1 of three: the block reads back after a power loss on every
  // child, and none was flushed.
  std::vector<std::unique_ptr<Vdev>> cols;
  for (int i = 3; i < 6; i++) cols.push_back(std::move(leaves[i]));
  auto rz = MakeRaidzVdev(std::move(cols), 1, 78);
  ASSERT_TRUE(rz.ok()) << rz.status().ToString();
  const auto big = test::RandomBytes(12288, 3);
  ASSERT_UZFS_OK((*rz)->WriteDurable(0, big));
  for (int i = 3; i < 6; i++) {
    mems[i]->DropUnflushed();
    EXPECT_EQ(mems[i]->flush_count(), 0u);
  }
  std::vector<uint8_t> back(big.size());
  ASSERT_UZFS_OK((*rz)->Read(0, back, Exactly(big)));
  EXPECT_EQ(back, big);
  rz->reset();
  leaves.clear();
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
