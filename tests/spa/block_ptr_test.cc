// Block pointer codec: bit positions pinned by hand-built words, round trips
// of every field, embedded payload placement, and the validator's refusals.
#include "zfs/spa/block_ptr.h"

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"
#include "zfs/util/endian.h"

namespace uzfs {
namespace {

BlockPtr SampleBp() {
  BlockPtr bp;
  bp.dva[0] = Dva{.vdev = 1, .grid = 0, .asize = 0x3000, .offset = 0x4a2000, .gang = false};
  bp.dva[1] = Dva{.vdev = 0, .grid = 0, .asize = 0x1000, .offset = 0x12345600, .gang = true};
  bp.lsize = 0x20000;
  bp.psize = 0x2a00;
  bp.compression = 15;  // lz4
  bp.checksum = 7;      // fletcher4
  bp.type = 19;         // plain file contents
  bp.level = 2;
  bp.dedup = true;
  bp.birth = 1234;
  bp.phys_birth = 1200;
  bp.fill = 77;
  bp.cksum = Checksum256{{1, 2, 3, 0xfedcba9876543210ull}};
  return bp;
}

TEST(BlockPtrTest, WordLayout) {
  uint8_t raw[128];
  EncodeBlockPtr(SampleBp(), std::span<uint8_t, 128>(raw));
  // dva[0]: vdev 1 in the high 32 bits, asize 0x3000 = 24 sectors.
  EXPECT_EQ(LoadLE64(raw + 0), (1ull << 32) | 24);
  EXPECT_EQ(LoadLE64(raw + 8), 0x4a2000ull >> 9);
  EXPECT_EQ(LoadLE64(raw + 24), (1ull << 63) | (0x12345600ull >> 9));
  const uint64_t prop = LoadLE64(raw + 48);
  EXPECT_EQ(prop & 0xffff, 0x20000 / 512 - 1);
  EXPECT_EQ((prop >> 16) & 0xffff, 0x2a00 / 512 - 1);
  EXPECT_EQ((prop >> 32) & 0x7f, 15u);
  EXPECT_EQ((prop >> 39) & 1, 0u);
  EXPECT_EQ((prop >> 40) & 0xff, 7u);
  EXPECT_EQ((prop >> 48) & 0xff, 19u);
  EXPECT_EQ((prop >> 56) & 0x1f, 2u);
  EXPECT_EQ((prop >> 62) & 1, 1u);
  EXPECT_EQ(prop >> 63, 1u);
  EXPECT_EQ(LoadLE64(raw + 72), 1200u);
  EXPECT_EQ(LoadLE64(raw + 80), 1234u);
  EXPECT_EQ(LoadLE64(raw + 88), 77u);
  EXPECT_EQ(LoadLE64(raw + 120), 0xfedcba9876543210ull);
}

TEST(BlockPtrTest, RoundTripBothByteOrders) {
  const BlockPtr bp = SampleBp();
  uint8_t raw[128];
  EncodeBlockPtr(bp, std::span<uint8_t, 128>(raw));
  EXPECT_EQ(DecodeBlockPtr(std::span<const uint8_t, 128>(raw)), bp);
  uint8_t swapped[128];
  for (int i = 0; i < 16; i++) StoreBE64(swapped + 8 * i, LoadLE64(raw + 8 * i));
  EXPECT_EQ(DecodeBlockPtr(std::span<const uint8_t, 128>(swapped), /*swap=*/true), bp);
  EXPECT_EQ(bp.NumDvas(), 2);
  EXPECT_FALSE(bp.IsHole());
}

TEST(BlockPtrTest, RandomRoundTrip) {
  // Any 128 bytes whose reserved bits are clear survive decode/encode.
  for (int seed = 0; seed < 200; seed++) {
    auto raw = test::RandomBytes(128, seed);
    uint64_t prop = LoadLE64(&raw[48]);
    prop &= ~(0x7ull << 61);  // keep crypt/dedup/byteorder defined
    prop &= ~(1ull << 39);    // normal pointer
    StoreLE64(&raw[48], prop);
    for (int d = 0; d < 3; d++) {  // offsets below 2^64 bytes (55 bits of sectors)
      StoreLE64(&raw[16 * d + 8], LoadLE64(&raw[16 * d + 8]) & ~(0xffull << 55));
    }
    BlockPtr bp = DecodeBlockPtr(std::span<const uint8_t, 128>(raw.data(), 128));
    uint8_t again[128];
    EncodeBlockPtr(bp, std::span<uint8_t, 128>(again));
    EXPECT_EQ(std::vector<uint8_t>(again, again + 128), raw) << "seed " << seed;
  }
}

TEST(BlockPtrTest, EmbeddedPayloadSkipsPropAndBirth) {
  BlockPtr bp;
  bp.embedded = true;
  bp.etype = 0;
  bp.lsize = 300;
  bp.psize = 112;
  bp.compression = 3;
  bp.type = 19;
  bp.birth = 99;
  for (size_t i = 0; i < kEmbeddedPayloadMax; i++) bp.payload[i] = static_cast<uint8_t>(i + 1);
  uint8_t raw[128];
  EncodeBlockPtr(bp, std::span<uint8_t, 128>(raw));
  EXPECT_EQ(raw[0], 1);           // payload starts in word 0
  EXPECT_EQ(raw[47], 48);         // ... fills words 0-5
  EXPECT_EQ(raw[56], 49);         // ... resumes in word 7
  EXPECT_EQ(LoadLE64(raw + 80), 99u);  // word 10 is the birth txg
  EXPECT_EQ(raw[88], 73);         // ... and resumes in word 11
  const uint64_t prop = LoadLE64(raw + 48);
  EXPECT_EQ(prop & 0x1ffffff, 299u);
  EXPECT_EQ((prop >> 25) & 0x7f, 111u);
  EXPECT_EQ((prop >> 39) & 1, 1u);
  EXPECT_EQ(DecodeBlockPtr(std::span<const uint8_t, 128>(raw)), bp);
  EXPECT_EQ(bp.NumDvas(), 0);
}

TEST(BlockPtrTest, HoleIsFirstDvaEmpty) {
  BlockPtr hole;
  hole.lsize = 0x20000;
  hole.psize = 512;
  hole.type = 19;
  hole.birth = 5;
  EXPECT_TRUE(hole.IsHole());
  EXPECT_UZFS_OK(ValidateBlockPtr(hole, {}));
  EXPECT_NE(FormatBlockPtr(hole).find("HOLE"), std::string::npos);
}

TEST(BlockPtrTest, ValidatorRejectsImpossiblePointers) {
  BlockPtrLimits limits;
  limits.vdev_asize = {0x100000000ull, 0x100000000ull};
  EXPECT_UZFS_OK(ValidateBlockPtr(SampleBp(), limits));
  auto expect_bad = [&](BlockPtr bp, const char* why) {
    Status s = ValidateBlockPtr(bp, limits);
    EXPECT_TRUE(s.IsCorruption()) << why;
    EXPECT_NE(s.message().find(why), std::string::npos) << s.ToString();
  };
  BlockPtr bp = SampleBp();
  bp.type = 0x80 | 0x1f;  // new-style type with no byteswap function
  expect_bad(bp, "object type");
  bp = SampleBp();
  bp.type = 54;
  expect_bad(bp, "object type");
  bp = SampleBp();
  bp.type = 0x80 | 0x40 | 3;  // new-style metadata type, byteswap func 3: fine
  EXPECT_UZFS_OK(ValidateBlockPtr(bp, limits));
  bp = SampleBp();
  bp.checksum = 40;
  expect_bad(bp, "checksum type");
  bp = SampleBp();
  bp.compression = 99;
  expect_bad(bp, "compression");
  bp = SampleBp();
  bp.dva[0].vdev = 2;
  expect_bad(bp, "does not exist");
  bp = SampleBp();
  bp.dva[0].offset = 0x100000000ull - 0x2000;  // 12 KiB at 8 KiB from the end
  expect_bad(bp, "past the end");
  bp = SampleBp();
  bp.dva[1].offset = 0x100000000ull - 512;  // a gang header: only 512 bytes here
  EXPECT_UZFS_OK(ValidateBlockPtr(bp, limits));
  bp = SampleBp();
  bp.dva[0].asize = 0x2000;  // 8 KiB cannot hold a 10.5 KiB block
  expect_bad(bp, "smaller than the block");
  bp = SampleBp();
  bp.dva[2].offset = 0x1000;  // non-empty DVA with no size
  expect_bad(bp, "allocated size of 0");
  bp = SampleBp();
  bp.embedded = true;
  bp.psize = 113;
  expect_bad(bp, "payload size");
  bp.psize = 100;
  bp.etype = 7;
  expect_bad(bp, "payload type");
}

TEST(BlockPtrTest, FormatLooksLikeZdb) {
  const std::string s = FormatBlockPtr(SampleBp());
  EXPECT_NE(s.find("DVA[0]=<1:4a2000:3000>"), std::string::npos) << s;
  EXPECT_NE(s.find("DVA[1]=<0:12345600:1000:G>"), std::string::npos) << s;
  EXPECT_NE(s.find("size=20000L/2a00P birth=1234L/1200P fill=77"), std::string::npos) << s;
}

}  // namespace
}  // namespace uzfs
