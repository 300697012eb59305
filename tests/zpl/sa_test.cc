// The SA format (zfs/zpl/sa.h): registry values, header sizes, exact bytes
// of encoded buffers (header, lengths, 8-byte alignment, no tail padding),
// decoding in both byte orders, and rejection of malformed buffers and
// registries.
#include "zfs/zpl/sa.h"

#include <gtest/gtest.h>

#include "zfs/util/endian.h"

namespace uzfs {
namespace {

std::vector<uint8_t> U64(uint64_t v) {
  std::vector<uint8_t> b(8);
  StoreLE64(b.data(), v);
  return b;
}

TEST(SaRegistryValue, PacksNumberBswapLength) {
  const auto& t = ZplSaAttrTable();
  ASSERT_EQ(t.size(), 22u);
  EXPECT_EQ(t[sa_attr::kDaclCount].name, "ZPL_DACL_COUNT");
  // What zdb prints for OpenZFS file systems: "ZPL_DACL_COUNT = 8000010 : [8:0:16]".
  EXPECT_EQ(EncodeSaRegistryValue(t[sa_attr::kDaclCount]), 0x8000010u);
  EXPECT_EQ(EncodeSaRegistryValue(t[sa_attr::kZnodeAcl]), 0x5803000fu);   // [88:3:15]
  EXPECT_EQ(EncodeSaRegistryValue(t[sa_attr::kDaclAces]), 0x40013u);      // [0:4:19]
  EXPECT_EQ(EncodeSaRegistryValue(t[sa_attr::kAtime]), 0x10000000u);      // [16:0:0]
  EXPECT_EQ(EncodeSaRegistryValue(t[sa_attr::kSymlink]), 0x30011u);       // [0:3:17]
  EXPECT_EQ(EncodeSaRegistryValue(t[sa_attr::kProjid]), 0x8000015u);      // [8:0:21]
  for (const SaAttrDef& d : t) {
    auto back = DecodeSaRegistryValue(d.name, EncodeSaRegistryValue(d));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, d);
  }
  EXPECT_TRUE(DecodeSaRegistryValue("X", 0x50000).status().IsCorruption());  // bswap kind 5
}

TEST(SaHeader, SizeFollowsVariableAttributes) {
  EXPECT_EQ(SaHeaderSize(0), 8u);
  EXPECT_EQ(SaHeaderSize(1), 8u);
  EXPECT_EQ(SaHeaderSize(2), 16u);
  EXPECT_EQ(SaHeaderSize(5), 16u);
  EXPECT_EQ(SaHeaderSize(6), 24u);
}

// A layout with a variable attribute in the middle (5-byte symlink, then
// 8-byte fixed ones) and one at the end.
class SaBufferTest : public ::testing::Test {
 protected:
  SaBufferTest() : reg_(SaRegistry::NewZpl()) {
    EXPECT_TRUE(reg_.AddLayout(2, {sa_attr::kMode, sa_attr::kSymlink, sa_attr::kAtime, sa_attr::kDaclAces}).ok());
    EXPECT_TRUE(reg_.AddLayout(3, {sa_attr::kMode, sa_attr::kSize}).ok());
    values_ = {{sa_attr::kMode, U64(0120777)},
               {sa_attr::kSymlink, {'a', 'b', 'c', 'd', 'e'}},
               {sa_attr::kAtime, {}},
               {sa_attr::kDaclAces, {1, 0, 0, 0x10, 0x20, 0, 0, 0, 0, 0, 0, 0x40, 0xa9, 0, 0x12, 0}}};
    values_[2].bytes = U64(1700000000);
    const std::vector<uint8_t> ns = U64(5);
    values_[2].bytes.insert(values_[2].bytes.end(), ns.begin(), ns.end());
  }
  SaRegistry reg_;
  std::vector<SaValue> values_;
};

TEST_F(SaBufferTest, EncodesExactBytes) {
  auto b = EncodeSaBuffer(reg_, 2, values_);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  // header 16 (two lengths), mode 16..24, symlink 24..29, pad, atime 32..48, aces 48..64
  ASSERT_EQ(b->size(), 64u);
  EXPECT_EQ(LoadLE32(b->data()), kSaMagic);
  EXPECT_EQ(LoadLE16(b->data() + 4), 2 | (2 << 10));
  EXPECT_EQ(LoadLE16(b->data() + 6), 5);
  EXPECT_EQ(LoadLE16(b->data() + 8), 16);
  EXPECT_EQ(LoadLE64(b->data() + 16), 0120777u);
  EXPECT_EQ(std::string(b->begin() + 24, b->begin() + 29), "abcde");
  EXPECT_EQ((*b)[29] | (*b)[30] | (*b)[31], 0);
  EXPECT_EQ(LoadLE64(b->data() + 32), 1700000000u);
  EXPECT_EQ(LoadLE64(b->data() + 40), 5u);
  EXPECT_EQ((*b)[48], 1);
  EXPECT_EQ(SaBufferSize(reg_, values_).value(), 64u);

  // A buffer ends right after its last attribute, unpadded.
  std::vector<SaValue> two = {values_[0], {sa_attr::kSize, U64(3)}};
  auto c = EncodeSaBuffer(reg_, 3, two);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->size(), 24u);
  EXPECT_EQ(LoadLE16(c->data() + 4), 3 | (1 << 10));

  auto d = DecodeSaBuffer(reg_, *b);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->layout, 2u);
  EXPECT_FALSE(d->byteswapped);
  EXPECT_EQ(d->values, values_);
}

TEST_F(SaBufferTest, RejectsValuesNotMatchingTheLayout) {
  EXPECT_FALSE(EncodeSaBuffer(reg_, 3, values_).ok());                  // count
  std::vector<SaValue> wrong = {{sa_attr::kSize, U64(1)}, {sa_attr::kMode, U64(1)}};
  EXPECT_FALSE(EncodeSaBuffer(reg_, 3, wrong).ok());                    // order
  std::vector<SaValue> short_mode = {{sa_attr::kMode, {1, 2}}, {sa_attr::kSize, U64(1)}};
  EXPECT_FALSE(EncodeSaBuffer(reg_, 3, short_mode).ok());               // fixed length
  EXPECT_FALSE(EncodeSaBuffer(reg_, 9, values_).ok());                  // unknown layout
  EXPECT_FALSE(EncodeSaBuffer(reg_, 1, {}).ok());                       // reserved
  std::vector<SaValue> huge = values_;
  huge[1].bytes.assign(70000, 'x');
  EXPECT_FALSE(EncodeSaBuffer(reg_, 2, huge).ok());
}

TEST_F(SaBufferTest, DecodesBigEndianBuffers) {
  auto le = EncodeSaBuffer(reg_, 2, values_);
  ASSERT_TRUE(le.ok());
  // The same buffer as a big-endian machine writes it: header fields and
  // each attribute swapped by its kind (u64 arrays per u64; ACEs per field;
  // the symlink's bytes as they are).
  std::vector<uint8_t> be = *le;
  StoreBE32(be.data(), kSaMagic);
  StoreBE16(be.data() + 4, LoadLE16(le->data() + 4));
  StoreBE16(be.data() + 6, 5);
  StoreBE16(be.data() + 8, 16);
  StoreBE64(be.data() + 16, 0120777);
  StoreBE64(be.data() + 32, 1700000000);
  StoreBE64(be.data() + 40, 5);
  StoreBE16(be.data() + 48, 1);
  StoreBE16(be.data() + 50, 0x1000);
  StoreBE32(be.data() + 52, 0x20);
  StoreBE16(be.data() + 56, 0);
  StoreBE16(be.data() + 58, 0x4000);
  StoreBE32(be.data() + 60, 0x1200a9);
  auto d = DecodeSaBuffer(reg_, be);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(d->byteswapped);
  ASSERT_EQ(d->values.size(), values_.size());
  for (size_t i = 0; i < values_.size(); i++) {
    EXPECT_EQ(d->values[i].attr, values_[i].attr) << i;
    EXPECT_EQ(d->values[i].bytes, values_[i].bytes) << i;
  }
}

TEST_F(SaBufferTest, RejectsMalformedBuffers) {
  auto good = EncodeSaBuffer(reg_, 2, values_);
  ASSERT_TRUE(good.ok());
  std::vector<uint8_t> b = *good;
  b[0] ^= 1;
  EXPECT_TRUE(DecodeSaBuffer(reg_, b).status().IsCorruption());           // magic
  b = *good;
  StoreLE16(b.data() + 4, 7 | (2 << 10));
  EXPECT_TRUE(DecodeSaBuffer(reg_, b).status().IsCorruption());           // unknown layout
  b = *good;
  StoreLE16(b.data() + 4, 2 | (1 << 10));
  EXPECT_TRUE(DecodeSaBuffer(reg_, b).status().IsCorruption());           // header size
  b = *good;
  b.resize(60);
  EXPECT_TRUE(DecodeSaBuffer(reg_, b).status().IsCorruption());           // truncated
  b = *good;
  StoreLE16(b.data() + 6, 4000);
  EXPECT_TRUE(DecodeSaBuffer(reg_, b).status().IsCorruption());           // length past the end
  EXPECT_TRUE(DecodeSaBuffer(reg_, std::vector<uint8_t>(4)).status().IsCorruption());
  // Layout 0 in an SA buffer is the empty layout 1.
  b.assign(8, 0);
  StoreLE32(b.data(), kSaMagic);
  auto e = DecodeSaBuffer(reg_, b);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->layout, 1u);
  EXPECT_TRUE(e->values.empty());
}

// SaFixedOffsets finds fixed attributes where DecodeSaBuffer reads them,
// past variable ones too (the symlink before atime), and refuses what it
// cannot patch in place: a variable attribute, one the layout lacks, a
// byte-swapped or malformed buffer.
TEST_F(SaBufferTest, FixedOffsetsAreWhereTheDecoderReads) {
  auto good = EncodeSaBuffer(reg_, 2, values_);
  ASSERT_TRUE(good.ok());
  const uint16_t want[2] = {sa_attr::kAtime, sa_attr::kMode};
  size_t off[2] = {0, 0};
  ASSERT_TRUE(SaFixedOffsets(reg_, *good, want, off));
  EXPECT_EQ(off[0], 32u);  // header 16, mode 8, symlink 5 rounded to 8
  EXPECT_EQ(off[1], 16u);
  // Patched there, the decoder sees the new values and nothing else moved.
  std::vector<uint8_t> b = *good;
  StoreLE64(b.data() + off[0], 1800000000);
  StoreLE64(b.data() + off[1], 0100644);
  auto d = DecodeSaBuffer(reg_, b);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(LoadLE64(d->values[2].bytes.data()), 1800000000u);
  EXPECT_EQ(LoadLE64(d->values[2].bytes.data() + 8), 5u);
  EXPECT_EQ(LoadLE64(d->values[0].bytes.data()), 0100644u);
  EXPECT_EQ(d->values[1].bytes, values_[1].bytes);
  EXPECT_EQ(d->values[3].bytes, values_[3].bytes);

  const uint16_t var[1] = {sa_attr::kSymlink};
  const uint16_t absent[1] = {sa_attr::kSize};
  size_t one[1];
  EXPECT_FALSE(SaFixedOffsets(reg_, *good, var, one));
  EXPECT_FALSE(SaFixedOffsets(reg_, *good, absent, one));
  b = *good;
  StoreBE32(b.data(), kSaMagic);  // byte-swapped: the caller must unpack it
  EXPECT_FALSE(SaFixedOffsets(reg_, b, want, off));
  b = *good;
  StoreLE16(b.data() + 4, 2 | (1 << 10));  // header size
  EXPECT_FALSE(SaFixedOffsets(reg_, b, want, off));
  b = *good;
  StoreLE16(b.data() + 6, 4000);  // the symlink's length runs past the end
  EXPECT_FALSE(SaFixedOffsets(reg_, b, want, off));
  b = *good;
  b.resize(40);  // atime cut short
  EXPECT_FALSE(SaFixedOffsets(reg_, b, want, off));
  EXPECT_FALSE(SaFixedOffsets(reg_, std::vector<uint8_t>(4), want, off));
}

TEST(SaRegistryBuild, FromZapEntries) {
  std::vector<std::pair<std::string, uint64_t>> reg;
  for (const SaAttrDef& d : ZplSaAttrTable()) reg.emplace_back(d.name, EncodeSaRegistryValue(d));
  std::vector<std::pair<std::string, std::vector<uint16_t>>> layouts = {
      {"2", {5, 6, 4, 12, 13, 7, 11, 0, 1, 2, 3, 8, 16, 19}}, {"3", {5, 6, 4, 12, 13, 7, 11, 0, 1, 2, 3, 8, 16, 19, 17}}};
  auto r = SaRegistry::Build(reg, layouts);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->attrs().size(), 22u);
  EXPECT_EQ(r->AttrNum("ZPL_SYMLINK").value(), 17u);
  EXPECT_TRUE(r->AttrNum("NOPE").status().IsNotFound());
  EXPECT_EQ(r->FindLayout(layouts[1].second), std::optional<uint64_t>(3));
  EXPECT_EQ(r->NextLayoutNumber(), 4u);
  EXPECT_EQ(SaRegistry::NewZpl().NextLayoutNumber(), 2u);

  auto bad = layouts;
  bad.push_back({"x1", {5}});
  EXPECT_TRUE(SaRegistry::Build(reg, bad).status().IsCorruption());
  bad = layouts;
  bad.push_back({"1", {5}});
  EXPECT_TRUE(SaRegistry::Build(reg, bad).status().IsCorruption());
  bad = layouts;
  bad.push_back({"9", {5, 99}});
  EXPECT_TRUE(SaRegistry::Build(reg, bad).status().IsCorruption());
  auto dup = reg;
  dup.emplace_back("ZPL_OTHER", 5);
  EXPECT_TRUE(SaRegistry::Build(dup, layouts).status().IsCorruption());
}

}  // namespace
}  // namespace uzfs
