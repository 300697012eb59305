// Round trips for every algorithm and level over varied data and sizes, the
// enum values and names, and the write path's 1/8 rule.
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"
#include "zfs/util/compress/compress.h"

namespace uzfs {
namespace {

using Kind = CompressedBlock::Kind;

// Word-salad text: compressible, but not trivially.
std::vector<uint8_t> Text(size_t n, uint64_t seed) {
  static const char* kWords[] = {"pool ",  "vdev ",   "block ",  "pointer ", "checksum ",
                                 "txg ",   "dnode\n", "raidz ",  "the ",     "of ",
                                 "a ",     "spa ",    "zio ",    "arc ",     "snapshot ",
                                 "clone ", "dataset ", "uberblock ", "label ", "copy-on-write "};
  auto r = test::RandomBytes(n, seed);
  std::vector<uint8_t> out;
  out.reserve(n + 16);
  for (size_t i = 0; out.size() < n; i++) {
    const char* w = kWords[r[i % n] % 20];
    while (*w && out.size() < n) out.push_back(static_cast<uint8_t>(*w++));
  }
  return out;
}

// Mostly zeros with short nonzero islands.
std::vector<uint8_t> Sparse(size_t n, uint64_t seed) {
  std::vector<uint8_t> out(n, 0);
  auto r = test::RandomBytes(n, seed);
  for (size_t i = 0; i < n; i += 97 + r[i] % 300)
    for (size_t k = 0; k < 1u + r[i] % 20 && i + k < n; k++) out[i + k] = r[i + k] | 1;
  return out;
}

// Half random, half text: partly compressible.
std::vector<uint8_t> Mixed(size_t n, uint64_t seed) {
  auto out = test::RandomBytes(n, seed);
  auto t = Text(n, seed + 1);
  for (size_t i = 0; i < n; i++)
    if ((i / 4096) % 2) out[i] = t[i];
  return out;
}

struct Algo {
  CompressType type;
  int level;
  std::string Name() const {
    std::string s(CompressName(type));
    for (char& c : s) if (c == '-') c = '_';
    if (type == CompressType::kZstd) s += (level < 0 ? "_fast" : "_") + std::to_string(level < 0 ? -level : level);
    return s;
  }
};

Result<size_t> RawCompress(const Algo& a, std::span<const uint8_t> src, std::span<uint8_t> dst) {
  switch (a.type) {
    case CompressType::kLzjb: return LzjbCompress(src, dst);
    case CompressType::kZle: return ZleCompress(src, dst);
    case CompressType::kLz4: return Lz4Compress(src, dst);
    case CompressType::kZstd: return ZstdCompress(src, dst, a.level);
    default: return GzipCompress(src, dst, GzipLevel(a.type));
  }
}

std::vector<Algo> AllAlgos() {
  std::vector<Algo> v = {{CompressType::kLzjb, 0}, {CompressType::kZle, 0}, {CompressType::kLz4, 0}};
  for (int l = 1; l <= 9; l++) v.push_back({GzipType(l), 0});
  for (int l : {1, 3, 9, 19, -1, -10, -1000}) v.push_back({CompressType::kZstd, l});
  return v;
}

class RoundTripTest : public ::testing::TestWithParam<Algo> {};

TEST_P(RoundTripTest, VariedDataAndSizes) {
  const Algo a = GetParam();
  // The slow levels get the small sizes only, to keep the suite fast.
  const bool slow = (IsGzip(a.type) && GzipLevel(a.type) >= 7) ||
                    (a.type == CompressType::kZstd && a.level >= 9);
  std::vector<size_t> sizes = {1, 511, 512, 1000, 4096, 12345, 131072};
  if (!slow) sizes.push_back(1 << 20);
  uint64_t seed = 1;
  for (size_t n : sizes) {
    for (int kind = 0; kind < 5; kind++) {
      SCOPED_TRACE(testing::Message() << "size " << n << " kind " << kind);
      std::vector<uint8_t> src = kind == 0   ? std::vector<uint8_t>(n, 0)
                                 : kind == 1 ? Text(n, seed)
                                 : kind == 2 ? test::RandomBytes(n, seed)
                                 : kind == 3 ? Sparse(n, seed)
                                             : Mixed(n, seed);
      seed++;
      // Raw codec with ample room always succeeds and round-trips.
      std::vector<uint8_t> dst(2 * n + 1024);
      auto c = RawCompress(a, src, dst);
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      std::vector<uint8_t> back(n, 0x5A);
      ASSERT_UZFS_OK(Decompress(a.type, std::span(dst).first(*c), back));
      ASSERT_TRUE(back == src);
      // The write path: whatever it decides, reading it back gives src.
      std::vector<uint8_t> blk(n);
      auto cb = CompressBlock(a.type, a.level, src, blk);
      ASSERT_TRUE(cb.ok()) << cb.status().ToString();
      if (kind == 0) {
        EXPECT_EQ(cb->kind, Kind::kAllZero);
        continue;
      }
      if (kind == 2 && n >= 512) {
        EXPECT_EQ(cb->kind, Kind::kNotWorthIt);
      }
      if ((kind == 1 || kind == 3) && n >= 4096 && a.type != CompressType::kZle &&
          !(a.type == CompressType::kZstd && a.level <= -100)) {  // zstd-fast-1000 barely tries
        EXPECT_EQ(cb->kind, Kind::kCompressed);
      }
      if (cb->kind == Kind::kCompressed) {
        EXPECT_EQ(cb->psize % kMinBlockSize, 0u);
        EXPECT_LE(cb->psize, MaxCompressedSize(n));
        std::fill(back.begin(), back.end(), 0x5A);
        ASSERT_UZFS_OK(Decompress(a.type, std::span(blk).first(cb->psize), back));
        ASSERT_TRUE(back == src);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, RoundTripTest, ::testing::ValuesIn(AllAlgos()),
                         [](const auto& info) { return info.param.Name(); });

TEST(CompressEnumTest, OnDiskValuesAndNames) {
  EXPECT_EQ(static_cast<int>(CompressType::kInherit), 0);
  EXPECT_EQ(static_cast<int>(CompressType::kOn), 1);
  EXPECT_EQ(static_cast<int>(CompressType::kOff), 2);
  EXPECT_EQ(static_cast<int>(CompressType::kLzjb), 3);
  EXPECT_EQ(static_cast<int>(CompressType::kEmpty), 4);
  for (int l = 1; l <= 9; l++) {
    EXPECT_EQ(static_cast<int>(GzipType(l)), 4 + l);
    EXPECT_EQ(GzipLevel(GzipType(l)), l);
    EXPECT_EQ(CompressName(GzipType(l)), "gzip-" + std::to_string(l));
  }
  EXPECT_EQ(static_cast<int>(CompressType::kZle), 14);
  EXPECT_EQ(static_cast<int>(CompressType::kLz4), 15);
  EXPECT_EQ(static_cast<int>(CompressType::kZstd), 16);
  for (int i = 0; i < kNumCompressTypes; i++) {
    auto t = static_cast<CompressType>(i);
    auto p = ParseCompressName(CompressName(t));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(*p, t);
  }
  EXPECT_EQ(*ParseCompressName("uncompressed"), CompressType::kOff);
  EXPECT_EQ(*ParseCompressName("gzip"), CompressType::kGzip6);
  EXPECT_TRUE(ParseCompressName("gzip-10").status().IsNotFound());
  EXPECT_EQ(CompressName(static_cast<CompressType>(17)), "unknown");
  EXPECT_EQ(ResolveCompressOn(true), CompressType::kLz4);
  EXPECT_EQ(ResolveCompressOn(false), CompressType::kLzjb);
}

// zle output size is exactly predictable: k nonzero bytes then zeros cost
// k + ceil(k/64) + ceil(zeros/192) bytes. Sweep k across the 1/8 boundary.
TEST(CompressRuleTest, OneEighthBoundaryExact) {
  const size_t n = 4096;  // cap = 3584
  int compressed = 0, not_worth = 0;
  for (size_t k = 3400; k <= 3600; k++) {
    std::vector<uint8_t> src(n, 0);
    for (size_t i = 0; i < k; i++) src[i] = static_cast<uint8_t>(i % 251 + 1);
    std::vector<uint8_t> big(2 * n);
    auto raw = ZleCompress(src, big);
    ASSERT_TRUE(raw.ok());
    ASSERT_EQ(*raw, k + (k + 63) / 64 + (n - k + 191) / 192);
    std::vector<uint8_t> dst(n);
    auto cb = CompressBlock(CompressType::kZle, 0, src, dst, /*sector=*/1);
    ASSERT_TRUE(cb.ok());
    // ZFS's zle gives up once fewer than 64 bytes of room remain before a
    // literal run, so near the cap "fits" means "fits with that margin".
    if (*raw + 64 <= MaxCompressedSize(n)) {
      EXPECT_EQ(cb->kind, Kind::kCompressed) << k;
      EXPECT_EQ(cb->psize, *raw);
    }
    if (*raw > MaxCompressedSize(n)) {
      EXPECT_EQ(cb->kind, Kind::kNotWorthIt) << k;
    }
    compressed += cb->kind == Kind::kCompressed;
    not_worth += cb->kind == Kind::kNotWorthIt;
  }
  EXPECT_GT(compressed, 0);
  EXPECT_GT(not_worth, 0);
}

TEST(CompressRuleTest, SectorRoundingAndPadding) {
  // lz4 over text: psize is c_len rounded up to the sector with zero fill.
  auto src = Text(8192, 7);
  std::vector<uint8_t> raw(16384);
  auto c = Lz4Compress(src, raw);
  ASSERT_TRUE(c.ok());
  std::vector<uint8_t> dst(8192, 0xEE);
  auto cb = CompressBlock(CompressType::kLz4, 0, src, dst);
  ASSERT_TRUE(cb.ok());
  ASSERT_EQ(cb->kind, Kind::kCompressed);
  EXPECT_EQ(cb->psize, (*c + 511) / 512 * 512);
  for (size_t i = *c; i < cb->psize; i++) ASSERT_EQ(dst[i], 0) << i;
  EXPECT_TRUE(std::equal(raw.begin(), raw.begin() + *c, dst.begin()));
  // 4 KiB sectors: rounded to 4096, and a block that rounds up past
  // align_down(lsize - lsize/8, 4096) is not worth it.
  auto cb4 = CompressBlock(CompressType::kLz4, 0, src, dst, 4096);
  ASSERT_TRUE(cb4.ok());
  if (*c <= 4096) {
    EXPECT_EQ(cb4->kind, Kind::kCompressed);
    EXPECT_EQ(cb4->psize, 4096u);
  } else {
    EXPECT_EQ(cb4->kind, Kind::kNotWorthIt);
  }
}

TEST(CompressRuleTest, SmallBlocksAndSpecialTypes) {
  auto text = Text(512, 3);
  std::vector<uint8_t> dst(512);
  // 512-byte block: align_down(448, 512) = 0, never worth compressing.
  for (auto t : {CompressType::kLz4, CompressType::kGzip9, CompressType::kLzjb}) {
    auto cb = CompressBlock(t, 0, text, dst);
    ASSERT_TRUE(cb.ok());
    EXPECT_EQ(cb->kind, Kind::kNotWorthIt);
    EXPECT_EQ(cb->psize, 512u);
  }
  // With byte granularity the same block compresses.
  auto cb1 = CompressBlock(CompressType::kGzip6, 0, Text(512, 3), dst, 1);
  ASSERT_TRUE(cb1.ok());
  EXPECT_EQ(cb1->kind, Kind::kCompressed);
  EXPECT_LE(cb1->psize, 448u);
  // off: stored as is, even when all zero.
  std::vector<uint8_t> zeros(4096, 0), zdst(4096);
  auto off = CompressBlock(CompressType::kOff, 0, zeros, zdst);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->kind, Kind::kNotWorthIt);
  auto z = CompressBlock(CompressType::kLz4, 0, zeros, zdst);
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(z->kind, Kind::kAllZero);
  EXPECT_EQ(z->psize, 0u);
  // Bad arguments.
  EXPECT_EQ(CompressBlock(CompressType::kOn, 0, text, dst).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(CompressBlock(CompressType::kInherit, 0, text, dst).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(CompressBlock(CompressType::kEmpty, 0, text, dst).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(CompressBlock(CompressType::kZstd, 20, text, dst).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(CompressBlock(CompressType::kLz4, 0, text, std::span(dst).first(100)).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(CompressBlock(CompressType::kLz4, 0, text, dst, 500).status().code(), Code::kInvalidArgument);
  std::vector<uint8_t> out(16);
  EXPECT_EQ(Decompress(CompressType::kOn, text, out).code(), Code::kInvalidArgument);
  EXPECT_EQ(Decompress(static_cast<CompressType>(40), text, out).code(), Code::kInvalidArgument);
}

TEST(CompressRuleTest, OffAndEmptyDecompress) {
  auto src = Text(1024, 9);
  std::vector<uint8_t> out(1024);
  ASSERT_UZFS_OK(Decompress(CompressType::kOff, src, out));
  EXPECT_TRUE(out == src);
  EXPECT_TRUE(Decompress(CompressType::kOff, src, std::span(out).first(512)).IsCorruption());
  ASSERT_UZFS_OK(Decompress(CompressType::kEmpty, {}, out));
  EXPECT_TRUE(IsAllZero(out));
  EXPECT_FALSE(IsAllZero(src));
  std::vector<uint8_t> almost(1000, 0);
  almost[999] = 1;
  EXPECT_FALSE(IsAllZero(almost));
  almost[999] = 0;
  almost[3] = 1;
  EXPECT_FALSE(IsAllZero(almost));
}

}  // namespace
}  // namespace uzfs
