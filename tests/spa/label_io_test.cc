// Label I/O on devices: round trips; a damaged or torn label falls back to
// another; a crash during a config rewrite (unflushed writes dropped) leaves
// a readable config; the newest uberblock across rings wins, and a torn one
// falls back a txg; bad devices get clear errors.
#include "zfs/spa/label_io.h"

#include <gtest/gtest.h>

#include "tests/spa/label_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/vdev/fault_device.h"
#include "zfs/vdev/mem_device.h"

namespace uzfs {
namespace {

constexpr uint64_t kSize = 100ull << 20;

using labeltest::Config;
using labeltest::Ub;

std::unique_ptr<MemDevice> Dev(bool volatile_cache = false) {
  MemDeviceOptions o;
  o.volatile_cache = volatile_cache;
  auto d = MemDevice::Create(kSize, o);
  EXPECT_TRUE(d.ok());
  return std::move(d).value();
}

TEST(LabelIoTest, RoundTrip) {
  auto dev = Dev();
  ASSERT_UZFS_OK(InitDeviceLabels(*dev));
  ASSERT_UZFS_OK(WriteDeviceConfig(*dev, Config(4)));
  for (uint64_t t = 4; t <= 40; t++) ASSERT_UZFS_OK(WriteDeviceUberblock(*dev, Ub(t), 12));
  auto labels = ReadDeviceLabels(*dev, 12);
  ASSERT_TRUE(labels.ok()) << labels.status().ToString();
  EXPECT_EQ(labels->config, Config(4));
  EXPECT_EQ(labels->valid, (std::array<bool, 4>{true, true, true, true}));
  ASSERT_TRUE(labels->uberblock);
  EXPECT_EQ(labels->uberblock->txg, 40u);
  auto rewound = ReadDeviceLabels(*dev, 12, 30);
  EXPECT_EQ(rewound->uberblock->txg, 30u);
}

TEST(LabelIoTest, DamagedLabelsFallBack) {
  auto dev = Dev();
  ASSERT_UZFS_OK(InitDeviceLabels(*dev));
  ASSERT_UZFS_OK(WriteDeviceConfig(*dev, Config(4)));
  ASSERT_UZFS_OK(WriteDeviceUberblock(*dev, Ub(9), 12));
  // Wipe labels 0, 1 and 2 entirely (front overwritten, say, by a partitioner).
  const std::vector<uint8_t> junk = test::RandomBytes(kLabelSize, 1);
  for (int l = 0; l < 3; l++) ASSERT_UZFS_OK(dev->Write(LabelOffset(kSize, l), junk));
  auto labels = ReadDeviceLabels(*dev, 12);
  ASSERT_TRUE(labels.ok()) << labels.status().ToString();
  EXPECT_EQ(labels->valid, (std::array<bool, 4>{false, false, false, true}));
  EXPECT_EQ(labels->config, Config(4));
  EXPECT_EQ(labels->uberblock->txg, 9u);
  EXPECT_EQ(labels->uberblock_label, 3);
  ASSERT_UZFS_OK(dev->Write(LabelOffset(kSize, 3), junk));
  auto none = ReadDeviceLabels(*dev, 12);
  EXPECT_TRUE(none.status().IsCorruption());
  EXPECT_NE(none.status().message().find("no valid label"), std::string::npos);
}

TEST(LabelIoTest, CrashDuringConfigRewriteKeepsAConfig) {
  // Try every crash point: after each label write, drop what was not flushed.
  for (int crash_after = 0; crash_after <= 4; crash_after++) {
    auto mem = Dev(/*volatile_cache=*/true);
    MemDevice* raw = mem.get();
    ASSERT_UZFS_OK(InitDeviceLabels(*raw));
    ASSERT_UZFS_OK(WriteDeviceConfig(*raw, Config(4)));
    // Rewrite with a newer config, "crashing" part way: write labels by hand
    // in the same order WriteDeviceConfig uses, without the final flushes.
    const int order[] = {0, 2, 1, 3};
    for (int i = 0; i < crash_after; i++) {
      const uint64_t off = LabelOffset(kSize, order[i]) + kVdevPhysOffset;
      auto region = EncodeLabelConfig(Config(8), off);
      ASSERT_UZFS_OK(raw->Write(off, *region));
      if (i == 1) ASSERT_UZFS_OK(raw->Flush());  // the half-way flush
    }
    raw->DropUnflushed();
    auto labels = ReadDeviceLabels(*raw, 12);
    ASSERT_TRUE(labels.ok()) << "crash after " << crash_after;
    const uint64_t txg = *labels->config.GetUint64("txg");
    EXPECT_TRUE(txg == 4 || txg == 8) << txg;
    EXPECT_EQ(txg, crash_after >= 2 ? 8u : 4u) << "crash after " << crash_after;
  }
}

TEST(LabelIoTest, TornNewestUberblockFallsBackOneTxg) {
  auto dev = Dev();
  ASSERT_UZFS_OK(InitDeviceLabels(*dev));
  ASSERT_UZFS_OK(WriteDeviceConfig(*dev, Config(4)));
  for (uint64_t t = 4; t <= 20; t++) ASSERT_UZFS_OK(WriteDeviceUberblock(*dev, Ub(t), 12));
  // Tear txg 20's slot in every label (a crash mid-write of all four).
  const uint64_t slot = 4096, slots = 32;
  for (int l = 0; l < 4; l++) {
    const uint64_t off = LabelOffset(kSize, l) + kUberblockRingOffset + (20 % slots) * slot;
    ASSERT_UZFS_OK(dev->Write(off + 1024, test::RandomBytes(1024, l)));
  }
  auto labels = ReadDeviceLabels(*dev, 12);
  ASSERT_TRUE(labels.ok());
  EXPECT_EQ(labels->uberblock->txg, 19u);
}

TEST(LabelIoTest, BadDevices) {
  auto small = MemDevice::Create(16ull << 20);
  ASSERT_TRUE(small.ok());
  Status s = InitDeviceLabels(**small);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("too small"), std::string::npos) << s.ToString();
  EXPECT_TRUE(ReadDeviceLabels(**small, 12).status().IsCorruption());
  // A blank device: no label, a clear message.
  auto blank = Dev();
  auto r = ReadDeviceLabels(*blank, 12);
  EXPECT_TRUE(r.status().IsCorruption());
  // A device that fails every read: IoError, not "no label".
  FaultDevice faulty(Dev());
  faulty.Vanish();
  EXPECT_TRUE(ReadDeviceLabels(faulty, 12).status().IsIoError());
}

}  // namespace
}  // namespace uzfs
