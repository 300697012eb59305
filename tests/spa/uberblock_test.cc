// Uberblocks: round trips, the embedded checksum's offset binding, torn
// newest slots falling back to the previous txg, rewind, label offsets.
#include "zfs/spa/uberblock.h"

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"
#include "zfs/util/endian.h"

namespace uzfs {
namespace {

Uberblock Sample(uint64_t txg) {
  Uberblock ub;
  ub.version = 5000;
  ub.txg = txg;
  ub.guid_sum = 0x1234567890abcdefull;
  ub.timestamp = 1700000000 + txg;
  ub.rootbp.dva[0] = Dva{.vdev = 0, .asize = 0x1000, .offset = 0x20000 + txg * 0x1000};
  ub.rootbp.lsize = 0x1000;
  ub.rootbp.psize = 0x200;
  ub.rootbp.checksum = 7;
  ub.rootbp.compression = 15;
  ub.rootbp.type = 11;
  ub.rootbp.birth = txg;
  ub.rootbp.fill = 40;
  ub.software_version = 5000;
  return ub;
}

// A ring (ashift 12: 32 slots of 4 KiB) with txgs first..last written where
// a pool would write them.
std::vector<uint8_t> Ring(uint64_t first, uint64_t last, uint32_t ashift = 12) {
  const uint64_t slot = UberblockSlotSize(ashift);
  std::vector<uint8_t> ring(kUberblockRingSize);
  const uint64_t slots = kUberblockRingSize / slot;
  for (uint64_t t = first; t <= last; t++) {
    const uint64_t off = (t % slots) * slot;
    EncodeUberblock(Sample(t), kUberblockRingOffset + off, std::span(ring).subspan(off, slot));
  }
  return ring;
}

TEST(UberblockTest, SlotSizes) {
  EXPECT_EQ(UberblockSlotSize(9), 1024u);
  EXPECT_EQ(UberblockSlotSize(12), 4096u);
  EXPECT_EQ(UberblockSlotSize(13), 8192u);
  EXPECT_EQ(UberblockSlotSize(16), 8192u);
}

TEST(UberblockTest, LabelOffsets) {
  const uint64_t size = 100 * 1024 * 1024 + 12345;  // not a 256 KiB multiple
  const uint64_t aligned = 100 * 1024 * 1024;
  EXPECT_EQ(LabelOffset(size, 0), 0u);
  EXPECT_EQ(LabelOffset(size, 1), 256u * 1024);
  EXPECT_EQ(LabelOffset(size, 2), aligned - 512 * 1024);
  EXPECT_EQ(LabelOffset(size, 3), aligned - 256 * 1024);
}

TEST(UberblockTest, RoundTrip) {
  std::vector<uint8_t> slot(4096);
  const Uberblock ub = Sample(77);
  EncodeUberblock(ub, 0x21000, slot);
  auto got = DecodeUberblock(slot, 0x21000);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->txg, 77u);
  EXPECT_EQ(got->guid_sum, ub.guid_sum);
  EXPECT_EQ(got->rootbp, ub.rootbp);
  EXPECT_EQ(got->software_version, 5000u);
  EXPECT_EQ(LoadLE64(slot.data()), kUberblockMagic);
}

TEST(UberblockTest, ChecksumBindsTheOffset) {
  std::vector<uint8_t> slot(4096);
  EncodeUberblock(Sample(5), 0x21000, slot);
  // The same bytes read from another slot (misdirected write) do not verify.
  EXPECT_TRUE(DecodeUberblock(slot, 0x22000).status().IsCorruption());
  slot[100] ^= 4;
  EXPECT_TRUE(DecodeUberblock(slot, 0x21000).status().IsCorruption());
}

TEST(UberblockTest, NewestValidWins) {
  auto ring = Ring(10, 50);  // wraps the 32-slot ring
  auto ub = FindActiveUberblock(ring, kUberblockRingOffset, 12);
  ASSERT_TRUE(ub.ok());
  EXPECT_EQ(ub->txg, 50u);
}

TEST(UberblockTest, TornNewestFallsBackToPrevious) {
  auto ring = Ring(10, 50);
  const uint64_t slot = 4096, newest = (50 % 32) * slot;
  // A torn write: the first half of the slot is new garbage.
  for (uint64_t i = 0; i < slot / 2; i++) ring[newest + i] ^= 0x5a;
  auto ub = FindActiveUberblock(ring, kUberblockRingOffset, 12);
  ASSERT_TRUE(ub.ok());
  EXPECT_EQ(ub->txg, 49u);
}

TEST(UberblockTest, RewindIgnoresNewer) {
  auto ring = Ring(10, 50);
  auto ub = FindActiveUberblock(ring, kUberblockRingOffset, 12, 45);
  ASSERT_TRUE(ub.ok());
  EXPECT_EQ(ub->txg, 45u);
  // Older than anything kept: nothing to rewind to.
  EXPECT_TRUE(FindActiveUberblock(ring, kUberblockRingOffset, 12, 5).status().IsNotFound());
}

TEST(UberblockTest, EmptyOrZeroedRingHasNone) {
  std::vector<uint8_t> ring(kUberblockRingSize, 0);
  EXPECT_TRUE(FindActiveUberblock(ring, kUberblockRingOffset, 12).status().IsNotFound());
  auto junk = test::RandomBytes(kUberblockRingSize, 3);
  EXPECT_TRUE(FindActiveUberblock(junk, kUberblockRingOffset, 12).status().IsNotFound());
}

TEST(UberblockTest, Ashift9Ring) {
  auto ring = Ring(1, 200, 9);  // 128 slots of 1 KiB
  auto ub = FindActiveUberblock(ring, kUberblockRingOffset, 9);
  ASSERT_TRUE(ub.ok());
  EXPECT_EQ(ub->txg, 200u);
}

}  // namespace
}  // namespace uzfs
