// Checksums: every fletcher4 kernel against the scalar reference (and the
// reference against a from-the-definition sum), fletcher2 and sha256 against
// known answers, and the byteswap forms against byte-reversed input.
#include "zfs/util/checksum.h"

#include <gtest/gtest.h>

#include <cstring>

#include "tests/testutil/testutil.h"
#include "zfs/util/endian.h"

namespace uzfs {
namespace {

// fletcher4 straight from its definition, with wide intermediate sums that
// wrap mod 2^64 the same way.
Checksum256 Fletcher4ByDefinition(const std::vector<uint8_t>& buf, bool big_endian) {
  Checksum256 ck;
  const size_t n = buf.size() / 4;
  for (size_t j = 0; j < n; j++) {
    const uint64_t w = big_endian ? LoadBE32(&buf[4 * j]) : LoadLE32(&buf[4 * j]);
    const uint64_t t = n - j;  // how many times the word enters b
    ck.word[0] += w;
    ck.word[1] += t * w;
    ck.word[2] += (t * (t + 1) / 2) * w;
    ck.word[3] += (t * (t + 1) * (t + 2) / 6) * w;
  }
  return ck;
}

TEST(Fletcher4Test, ScalarMatchesDefinition) {
  for (size_t size : {0, 4, 60, 512, 4096, 131072 + 12}) {
    auto buf = test::RandomBytes(size, size + 1);
    Checksum256 ck;
    Fletcher4Impls()[0].native(buf.data(), buf.size(), &ck);
    EXPECT_EQ(ck, Fletcher4ByDefinition(buf, false)) << size;
    Fletcher4Impls()[0].byteswap(buf.data(), buf.size(), &ck);
    EXPECT_EQ(ck, Fletcher4ByDefinition(buf, true)) << size;
  }
}

TEST(Fletcher4Test, KnownAnswer) {
  // Words 1, 2, 3, 4 (little-endian): a = 10, b = 1*4+2*3+3*2+4*1 = 20,
  // c = 1*10+2*6+3*3+4*1 = 35, d = 1*20+2*10+3*4+4*1 = 56.
  const uint8_t buf[16] = {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0};
  Checksum256 ck;
  Fletcher4Native(buf, sizeof buf, &ck);
  EXPECT_EQ(ck, (Checksum256{{10, 20, 35, 56}}));
}

class Fletcher4ImplTest : public ::testing::TestWithParam<size_t> {};

TEST_P(Fletcher4ImplTest, MatchesScalar) {
  const auto& impl = Fletcher4Impls()[GetParam()];
  if (!impl.supported()) GTEST_SKIP() << impl.name << " not supported on this CPU";
  // Sizes around every lane/round boundary, odd tails, and big blocks; also
  // all-ones words so the 64-bit sums wrap.
  std::vector<size_t> sizes = {0, 4, 8, 12, 16, 28, 32, 60, 64, 68, 124, 128, 132, 508,
                               512, 4096, 4100, 65536, 131072, 1048576};
  for (size_t size : sizes) {
    for (int pattern = 0; pattern < 2; pattern++) {
      auto buf = pattern == 0 ? test::RandomBytes(size, size * 7 + 3)
                              : std::vector<uint8_t>(size, 0xff);
      Checksum256 want, got;
      Fletcher4Impls()[0].native(buf.data(), size, &want);
      impl.native(buf.data(), size, &got);
      EXPECT_EQ(got, want) << impl.name << " native size " << size;
      Fletcher4Impls()[0].byteswap(buf.data(), size, &want);
      impl.byteswap(buf.data(), size, &got);
      EXPECT_EQ(got, want) << impl.name << " byteswap size " << size;
    }
  }
  // Unaligned start.
  auto buf = test::RandomBytes(8192 + 3, 99);
  Checksum256 want, got;
  Fletcher4Impls()[0].native(buf.data() + 3, 8192, &want);
  impl.native(buf.data() + 3, 8192, &got);
  EXPECT_EQ(got, want) << impl.name << " unaligned";
}

TEST_P(Fletcher4ImplTest, DetectsAnyFlippedBit) {
  // Test the test: a kernel that ignored part of the buffer would pass the
  // comparison above only by accident; a flip anywhere must change the sum.
  const auto& impl = Fletcher4Impls()[GetParam()];
  if (!impl.supported()) GTEST_SKIP() << impl.name << " not supported on this CPU";
  auto buf = test::RandomBytes(4096, 5);
  Checksum256 base, ck;
  impl.native(buf.data(), buf.size(), &base);
  for (size_t byte = 0; byte < buf.size(); byte += 97) {
    buf[byte] ^= 0x10;
    impl.native(buf.data(), buf.size(), &ck);
    EXPECT_NE(ck, base) << impl.name << " missed a flip at byte " << byte;
    buf[byte] ^= 0x10;
  }
}

INSTANTIATE_TEST_SUITE_P(AllImpls, Fletcher4ImplTest,
                         ::testing::Range<size_t>(0, Fletcher4Impls().size()),
                         [](const auto& info) {
                           return std::string(Fletcher4Impls()[info.param].name);
                         });

TEST(Fletcher4Test, ByteswapEqualsNativeOfSwappedWords) {
  auto buf = test::RandomBytes(65536, 11);
  auto swapped = buf;
  for (size_t i = 0; i < swapped.size(); i += 4)
    StoreLE32(&swapped[i], ByteSwap32(LoadLE32(&swapped[i])));
  Checksum256 a, b;
  Fletcher4Byteswap(buf.data(), buf.size(), &a);
  Fletcher4Native(swapped.data(), swapped.size(), &b);
  EXPECT_EQ(a, b);
}

TEST(Fletcher4Test, SelectedIsSupported) {
  EXPECT_TRUE(Fletcher4Selected().supported());
}

TEST(Fletcher2Test, KnownAnswer) {
  // 64-bit words 1,2,3,4: a0 = 1+3, a1 = 2+4, b0 = 1 + (1+3), b1 = 2 + (2+4).
  uint8_t buf[32];
  for (int i = 0; i < 4; i++) StoreLE64(buf + 8 * i, i + 1);
  Checksum256 ck;
  Fletcher2Native(buf, sizeof buf, &ck);
  EXPECT_EQ(ck, (Checksum256{{4, 6, 5, 8}}));
  uint8_t be[32];
  for (int i = 0; i < 4; i++) StoreBE64(be + 8 * i, i + 1);
  Fletcher2Byteswap(be, sizeof be, &ck);
  EXPECT_EQ(ck, (Checksum256{{4, 6, 5, 8}}));
}

TEST(Sha256Test, KnownAnswerWordsAreBigEndian) {
  // SHA-256("abc") = ba7816bf8f01cfea 414140de5dae2223 b00361a396177a9c b410ff61f20015ad
  Checksum256 ck;
  Sha256("abc", 3, &ck);
  EXPECT_EQ(ck.word[0], 0xba7816bf8f01cfeaull);
  EXPECT_EQ(ck.word[1], 0x414140de5dae2223ull);
  EXPECT_EQ(ck.word[2], 0xb00361a396177a9cull);
  EXPECT_EQ(ck.word[3], 0xb410ff61f20015adull);
}

TEST(ChecksumTest, Names) {
  EXPECT_EQ(ChecksumName(ChecksumType::kFletcher4), "fletcher4");
  EXPECT_EQ(ChecksumName(ChecksumType::kSha256), "sha256");
  EXPECT_EQ(static_cast<int>(ChecksumType::kSha256), 8);
}

}  // namespace
}  // namespace uzfs

namespace uzfs {
namespace {

TEST(BlockChecksumTest, DispatchesByTypeAndByteOrder) {
  auto buf = test::RandomBytes(8192, 77);
  Checksum256 want;
  Fletcher4Native(buf.data(), buf.size(), &want);
  EXPECT_EQ(*BlockChecksum(ChecksumType::kFletcher4, buf, false), want);
  Fletcher4Byteswap(buf.data(), buf.size(), &want);
  EXPECT_EQ(*BlockChecksum(ChecksumType::kFletcher4, buf, true), want);
  Fletcher2Native(buf.data(), buf.size(), &want);
  EXPECT_EQ(*BlockChecksum(ChecksumType::kFletcher2, buf, false), want);
  Sha256(buf.data(), buf.size(), &want);
  EXPECT_EQ(*BlockChecksum(ChecksumType::kSha256, buf, true), want);
  EXPECT_EQ(*BlockChecksum(ChecksumType::kOff, buf, false), Checksum256{});
  EXPECT_EQ(BlockChecksum(ChecksumType::kSkein, buf, false).status().code(), Code::kNotSupported);
  EXPECT_EQ(BlockChecksum(ChecksumType::kLabel, buf, false).status().code(),
            Code::kInvalidArgument);
}

}  // namespace
}  // namespace uzfs
