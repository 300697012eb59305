// Embedded (trailer) checksums: each type round-trips, the verifier binds
// the block to its place, a trailer written in the other byte order is
// accepted, and damage anywhere (data, magic, checksum) is refused.
#include "zfs/util/embedded_checksum.h"

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"
#include "zfs/util/endian.h"

namespace uzfs {
namespace {

class EmbeddedChecksumTest : public ::testing::TestWithParam<ChecksumType> {};

TEST_P(EmbeddedChecksumTest, RoundTripAndDamage) {
  auto buf = test::RandomBytes(4096, 1);
  WriteEmbeddedChecksum(GetParam(), buf, OffsetVerifier(0x4000));
  EXPECT_EQ(LoadLE64(&buf[4096 - 40]), kEmbeddedChecksumMagic);
  bool swapped = true;
  EXPECT_UZFS_OK(VerifyEmbeddedChecksum(GetParam(), buf, OffsetVerifier(0x4000), &swapped));
  EXPECT_FALSE(swapped);
  EXPECT_TRUE(VerifyEmbeddedChecksum(GetParam(), buf, OffsetVerifier(0x5000)).IsCorruption());
  for (size_t pos : {size_t{0}, size_t{2000}, size_t{4096 - 40}, size_t{4096 - 1}}) {
    auto bad = buf;
    bad[pos] ^= 0x80;
    EXPECT_TRUE(VerifyEmbeddedChecksum(GetParam(), bad, OffsetVerifier(0x4000)).IsCorruption())
        << "damage at " << pos << " went unnoticed";
  }
}

INSTANTIATE_TEST_SUITE_P(Types, EmbeddedChecksumTest,
                         ::testing::Values(ChecksumType::kLabel, ChecksumType::kGangHeader,
                                           ChecksumType::kZilog, ChecksumType::kZilog2));

TEST(EmbeddedChecksumTest, AcceptsBigEndianWriter) {
  // Build by hand what a big-endian host writes for a sha256 trailer: magic
  // and verifier words big-endian, digest words stored big-endian too.
  auto buf = test::RandomBytes(1024, 9);
  const size_t t = 1024 - 40;
  StoreBE64(&buf[t], kEmbeddedChecksumMagic);
  StoreBE64(&buf[t + 8], 0x1400);
  for (int i = 1; i < 4; i++) StoreBE64(&buf[t + 8 + 8 * i], 0);
  Checksum256 ck;
  Sha256(buf.data(), buf.size(), &ck);
  for (int i = 0; i < 4; i++) StoreBE64(&buf[t + 8 + 8 * i], ck.word[i]);
  bool swapped = false;
  EXPECT_UZFS_OK(
      VerifyEmbeddedChecksum(ChecksumType::kLabel, buf, OffsetVerifier(0x1400), &swapped));
  EXPECT_TRUE(swapped);
}

TEST(EmbeddedChecksumTest, RefusesBadMagicAndTinyBuffers) {
  std::vector<uint8_t> zeros(512, 0);
  EXPECT_TRUE(VerifyEmbeddedChecksum(ChecksumType::kLabel, zeros, OffsetVerifier(0)).IsCorruption());
  std::vector<uint8_t> tiny(16, 0);
  EXPECT_TRUE(VerifyEmbeddedChecksum(ChecksumType::kLabel, tiny, OffsetVerifier(0)).IsCorruption());
}

}  // namespace
}  // namespace uzfs
