// Edge cases of each framing, hand-built streams with known meanings, and
// rejection of corrupt or truncated input (never a crash: run these under
// ASan/UBSan too).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"
#include "zfs/util/compress/compress.h"
#include "zfs/util/endian.h"

namespace uzfs {
namespace {

std::vector<uint8_t> Bytes(std::string_view s) { return {s.begin(), s.end()}; }

std::vector<uint8_t> Zle(std::span<const uint8_t> src) {
  std::vector<uint8_t> dst(2 * src.size() + 200);  // zle wants 64 bytes of slack
  auto r = ZleCompress(src, dst);
  EXPECT_TRUE(r.ok());
  dst.resize(r.ok() ? *r : 0);
  return dst;
}

TEST(ZleTest, RunEncoding) {
  using V = std::vector<uint8_t>;
  EXPECT_EQ(Zle(Bytes("abc")), (V{2, 'a', 'b', 'c'}));
  // A lone zero stays inside a literal; a pair of zeros ends it.
  EXPECT_EQ(Zle(V{'a', 0, 'b'}), (V{2, 'a', 0, 'b'}));
  EXPECT_EQ(Zle(V{'a', 'b', 0, 0, 'c'}), (V{1, 'a', 'b', 64 + 1, 0, 'c'}));
  // A trailing zero is a zero run of its own.
  EXPECT_EQ(Zle(V{'a', 'b', 0}), (V{1, 'a', 'b', 64}));
  EXPECT_EQ(Zle(V{0}), (V{64}));
  // Zero runs hold at most 192, literal runs at most 64.
  EXPECT_EQ(Zle(V(192, 0)), (V{255}));
  EXPECT_EQ(Zle(V(200, 0)), (V{255, 64 + 7}));
  V lit(100, 'x'), want = {63};
  want.insert(want.end(), 64, 'x');
  want.push_back(35);
  want.insert(want.end(), 36, 'x');
  EXPECT_EQ(Zle(lit), want);
  // A zero in the literal window's last slot is left for a zero run.
  V edge(64, 'y');
  edge[63] = 0;
  edge.push_back('z');
  V e = {62};
  e.insert(e.end(), 63, 'y');
  e.push_back(64);
  e.push_back(0);
  e.push_back('z');
  EXPECT_EQ(Zle(edge), e);
  EXPECT_TRUE(Zle({}).empty());
}

TEST(ZleTest, DecodeChecksBothBuffers) {
  std::vector<uint8_t> out(8);
  // 3 literal bytes promised, 2 present.
  EXPECT_TRUE(ZleDecompress(std::vector<uint8_t>{2, 'a', 'b'}, out).IsCorruption());
  // Zero run of 10 into 8 bytes.
  EXPECT_TRUE(ZleDecompress(std::vector<uint8_t>{64 + 9}, out).IsCorruption());
  // Literal run of 9 into 8 bytes.
  std::vector<uint8_t> lit = {8, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_TRUE(ZleDecompress(lit, out).IsCorruption());
  // Stream ends early.
  EXPECT_TRUE(ZleDecompress(std::vector<uint8_t>{64 + 3}, out).IsCorruption());
  EXPECT_TRUE(ZleDecompress({}, out).IsCorruption());
  // Exactly full, with padding after: fine.
  ASSERT_UZFS_OK(ZleDecompress(std::vector<uint8_t>{64 + 3, 3, 1, 2, 3, 4, 0, 0, 0}, out));
  EXPECT_EQ(out, (std::vector<uint8_t>{0, 0, 0, 0, 1, 2, 3, 4}));
  EXPECT_EQ(ZleCompress(Bytes("a"), out, 0).status().code(), Code::kInvalidArgument);
}

TEST(ZleTest, GivesUpLikeZfs) {
  // 10 nonzero bytes need 11 bytes, but ZFS refuses to start a literal run
  // with fewer than 64 bytes of room after its length byte.
  std::vector<uint8_t> src(10, 7), dst(64);
  EXPECT_EQ(ZleCompress(src, dst).status().code(), Code::kOverflow);
  std::vector<uint8_t> dst65(65);
  auto r = ZleCompress(src, dst65);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 11u);
}

std::vector<uint8_t> Lzjb(std::span<const uint8_t> src) {
  std::vector<uint8_t> dst(2 * src.size() + 64);
  auto r = LzjbCompress(src, dst);
  EXPECT_TRUE(r.ok());
  dst.resize(r.ok() ? *r : 0);
  return dst;
}

TEST(LzjbTest, HandBuiltStreams) {
  // 'a', then a reference of length 66 at distance 1: an overlapping run.
  std::vector<uint8_t> s = {0x02, 'a', (66 - 3) << 2, 0x01};
  std::vector<uint8_t> out(67);
  ASSERT_UZFS_OK(LzjbDecompress(s, out));
  EXPECT_EQ(out, std::vector<uint8_t>(67, 'a'));
  // The same reference cut short at lsize, as ZFS does.
  std::vector<uint8_t> out10(10);
  ASSERT_UZFS_OK(LzjbDecompress(s, out10));
  EXPECT_EQ(out10, std::vector<uint8_t>(10, 'a'));
  // Distance 1023 (all 10 bits).
  std::vector<uint8_t> big(1024 + 3);
  std::vector<uint8_t> st;
  for (int i = 0; i < 1024; i++) {
    if (i % 8 == 0) st.push_back(0);
    st.push_back(static_cast<uint8_t>(i * 13));
  }
  st.push_back(0x01);                 // new group: item 0 is a reference
  st.push_back(0x03);                 // length 3, distance high bits 3
  st.push_back(0xFF);                 // distance 1023
  ASSERT_UZFS_OK(LzjbDecompress(st, big));
  for (int k = 0; k < 3; k++) EXPECT_EQ(big[1024 + k], static_cast<uint8_t>((1 + k) * 13));
}

TEST(LzjbTest, RejectsBadReferences) {
  std::vector<uint8_t> out(16);
  // Reference before the block start.
  EXPECT_TRUE(LzjbDecompress(std::vector<uint8_t>{0x02, 'a', 0x00, 0x05}, out).IsCorruption());
  // Distance zero.
  EXPECT_TRUE(LzjbDecompress(std::vector<uint8_t>{0x02, 'a', 0x00, 0x00}, out).IsCorruption());
  // Half a reference.
  EXPECT_TRUE(LzjbDecompress(std::vector<uint8_t>{0x02, 'a', 0x00}, out).IsCorruption());
  // Ends before the block is full.
  EXPECT_TRUE(LzjbDecompress(std::vector<uint8_t>{0x00, 'a', 'b'}, out).IsCorruption());
  EXPECT_TRUE(LzjbDecompress({}, out).IsCorruption());
  std::vector<uint8_t> none;
  ASSERT_UZFS_OK(LzjbDecompress({}, none));
}

TEST(LzjbTest, EncoderShapes) {
  // Short blocks (under 66 bytes) are all literals: a control byte per 8.
  auto lit = Lzjb(Bytes("abcabcabcabc"));
  EXPECT_EQ(lit.size(), 12u + 2);
  EXPECT_EQ(lit[0], 0);
  // A long run compresses to references of 66 bytes each.
  std::vector<uint8_t> run(4096, 'q');
  auto r = Lzjb(run);
  EXPECT_LT(r.size(), 4096u / 66 * 3);
  std::vector<uint8_t> back(4096);
  ASSERT_UZFS_OK(LzjbDecompress(r, back));
  EXPECT_EQ(back, run);
  EXPECT_TRUE(Lzjb({}).empty());
  // Out of room: Overflow, and never a write past dst.
  auto rnd = test::RandomBytes(4096, 5);
  std::vector<uint8_t> small(100);
  EXPECT_EQ(LzjbCompress(rnd, small).status().code(), Code::kOverflow);
  std::vector<uint8_t> tiny(17);
  EXPECT_EQ(LzjbCompress(Bytes("x"), tiny).status().code(), Code::kOverflow);
}

TEST(ZstdTest, HeaderLayoutAndLevels) {
  std::vector<uint8_t> src(8192);
  for (size_t i = 0; i < src.size(); i++) src[i] = static_cast<uint8_t>(i / 64);
  std::vector<uint8_t> dst(9000);
  auto n = ZstdCompress(src, dst, 3);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(LoadBE32(dst.data()), *n - kZstdHeaderSize);
  EXPECT_EQ(dst[4], 3);   // level first
  EXPECT_EQ(dst[5], 0);   // version's high byte (zstd < 6.55.35)
  auto h = ParseZstdHeader(dst);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->level, 3);
  EXPECT_GE(h->version, 10400u);
  EXPECT_EQ(h->version, (uint32_t{dst[6]} << 8) | dst[7]);
  // The frame is magicless: no 0xFD2FB528 after the header.
  EXPECT_NE(LoadLE32(dst.data() + 8), 0xFD2FB528u);
  // The old big-endian layout (version, then level) parses to the same.
  std::vector<uint8_t> be(dst.begin(), dst.begin() + *n);
  be[4] = 0;
  be[5] = dst[6];
  be[6] = dst[7];
  be[7] = 3;
  auto hb = ParseZstdHeader(be);
  ASSERT_TRUE(hb.ok());
  EXPECT_EQ(hb->level, 3);
  EXPECT_EQ(hb->version, h->version);
  std::vector<uint8_t> out(8192);
  ASSERT_UZFS_OK(ZstdDecompress(be, out));
  EXPECT_EQ(out, src);
  // Fast levels live at 102 + k.
  EXPECT_EQ(*ZstdLevelToEnum(-1), 103);
  EXPECT_EQ(*ZstdLevelToEnum(-10), 112);
  EXPECT_EQ(*ZstdLevelToEnum(-20), 113);
  EXPECT_EQ(*ZstdLevelToEnum(-100), 121);
  EXPECT_EQ(*ZstdLevelToEnum(-500), 122);
  EXPECT_EQ(*ZstdLevelToEnum(-1000), 123);
  EXPECT_EQ(*ZstdLevelToEnum(0), 3);
  EXPECT_FALSE(ZstdLevelToEnum(-11).ok());
  EXPECT_FALSE(ZstdLevelToEnum(20).ok());
  for (int e = 0; e < 256; e++) {
    auto l = ZstdEnumToLevel(static_cast<uint8_t>(e));
    EXPECT_EQ(l.ok(), (e >= 1 && e <= 19) || (e >= 103 && e <= 123)) << e;
    if (l.ok()) {
      EXPECT_EQ(*ZstdLevelToEnum(*l), e);
    }
  }
  auto f = ZstdCompress(src, dst, -500);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(dst[4], 122);
  // A header naming no valid level is refused, as ZFS does.
  std::vector<uint8_t> bad(dst.begin(), dst.begin() + *f);
  bad[4] = 50;
  EXPECT_TRUE(ZstdDecompress(bad, out).IsCorruption());
}

// Every algorithm: strict prefixes fail, a wrong lsize fails where the
// framing knows its length, and random damage never crashes.
struct Codec {
  CompressType type;
  int level;
};
class CorruptionTest : public ::testing::TestWithParam<Codec> {};

TEST_P(CorruptionTest, TruncationAndDamage) {
  const Codec c = GetParam();
  std::vector<uint8_t> src(32768);
  auto r = test::RandomBytes(src.size(), 77);
  for (size_t i = 0; i < src.size(); i++) src[i] = (i % 5000 < 1200) ? 0 : static_cast<uint8_t>('a' + r[i] % 6);
  std::vector<uint8_t> enc(2 * src.size());
  Result<size_t> n = Status::InvalidArgument("");
  switch (c.type) {
    case CompressType::kLzjb: n = LzjbCompress(src, enc); break;
    case CompressType::kZle: n = ZleCompress(src, enc); break;
    case CompressType::kLz4: n = Lz4Compress(src, enc); break;
    case CompressType::kZstd: n = ZstdCompress(src, enc, c.level); break;
    default: n = GzipCompress(src, enc, GzipLevel(c.type)); break;
  }
  ASSERT_TRUE(n.ok());
  enc.resize(*n);
  std::vector<uint8_t> out(src.size());
  ASSERT_UZFS_OK(Decompress(c.type, enc, out));
  ASSERT_EQ(out, src);
  for (size_t cut : {size_t{0}, size_t{1}, size_t{3}, size_t{4}, size_t{8}, enc.size() / 2, enc.size() - 1}) {
    SCOPED_TRACE(cut);
    EXPECT_TRUE(Decompress(c.type, std::span(enc).first(cut), out).IsCorruption());
  }
  std::vector<uint8_t> longer(src.size() + 1);
  EXPECT_TRUE(Decompress(c.type, enc, longer).IsCorruption());
  if (c.type != CompressType::kLzjb && c.type != CompressType::kZle) {
    std::vector<uint8_t> shorter(src.size() - 1);
    EXPECT_TRUE(Decompress(c.type, enc, shorter).IsCorruption());
  }
  // Random damage: either Corruption or a successful decode, never a crash.
  auto noise = test::RandomBytes(4096, 99);
  int detected = 0;
  for (int t = 0; t < 200; t++) {
    auto bad = enc;
    size_t pos = (noise[t] * 256u + noise[t + 1000]) % bad.size();
    bad[pos] ^= static_cast<uint8_t>(noise[t + 2000] | 1);
    Status s = Decompress(c.type, bad, out);
    EXPECT_TRUE(s.ok() || s.IsCorruption()) << s.ToString();
    detected += !s.ok();
  }
  if (IsGzip(c.type)) {
    EXPECT_GT(detected, 150);  // Adler-32 catches nearly all
  }
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, CorruptionTest,
                         ::testing::Values(Codec{CompressType::kLzjb, 0}, Codec{CompressType::kZle, 0},
                                           Codec{CompressType::kLz4, 0}, Codec{CompressType::kGzip1, 0},
                                           Codec{CompressType::kGzip9, 0}, Codec{CompressType::kZstd, 3},
                                           Codec{CompressType::kZstd, -1}),
                         [](const auto& info) {
                           std::string s(CompressName(info.param.type));
                           for (char& ch : s) if (ch == '-') ch = '_';
                           return s + (info.param.level < 0 ? "_fast" : "");
                         });

TEST(Lz4Test, HeaderChecks) {
  std::vector<uint8_t> out(100);
  std::vector<uint8_t> blk = {0, 0, 0, 10, 1, 2};  // claims 10 bytes, has 2
  EXPECT_TRUE(Lz4Decompress(blk, out).IsCorruption());
  std::vector<uint8_t> huge = {0xFF, 0xFF, 0xFF, 0xFF, 0};
  EXPECT_TRUE(Lz4Decompress(huge, out).IsCorruption());
  std::vector<uint8_t> small(4);
  EXPECT_EQ(Lz4Compress(std::vector<uint8_t>(100, 1), small).status().code(), Code::kOverflow);
}

}  // namespace
}  // namespace uzfs
