// NvList API and XDR codec: round trips of every type, exact bytes of small
// lists, uniqueness rules, and hostile inputs.
#include "zfs/util/nvlist/nvlist.h"

#include <bit>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"
#include "tests/util/nvlist/nvlist_test_util.h"
#include "zfs/util/endian.h"

namespace uzfs {
namespace {

// Builds XDR by hand, to write both good and malformed streams.
class Xdr {
 public:
  Xdr& Header(uint8_t enc = 1, uint8_t endian = 1) {
    b_.insert(b_.end(), {enc, endian, 0, 0});
    return *this;
  }
  Xdr& U32(uint32_t v) {
    uint8_t x[4];
    StoreBE32(x, v);
    b_.insert(b_.end(), x, x + 4);
    return *this;
  }
  Xdr& U64(uint64_t v) {
    uint8_t x[8];
    StoreBE64(x, v);
    b_.insert(b_.end(), x, x + 8);
    return *this;
  }
  Xdr& Str(const std::string& s, uint8_t pad = 0) {
    U32(static_cast<uint32_t>(s.size()));
    b_.insert(b_.end(), s.begin(), s.end());
    while (b_.size() % 4) b_.push_back(pad);
    return *this;
  }
  Xdr& ListHead(uint32_t flags = kNvUniqueName, uint32_t version = 0) {
    return U32(version).U32(flags);
  }
  Xdr& End() { return U32(0).U32(0); }
  // A uint64 pair with correct sizes (64-bit writer).
  Xdr& PairU64(const std::string& name, uint64_t v) {
    uint32_t namepad = (name.size() + 3) & ~3u;
    uint32_t enc = 4 + 4 + 4 + namepad + 4 + 4 + 8;
    uint32_t dec = ((16 + name.size() + 1 + 7) & ~7u) + 8;
    return U32(enc).U32(dec).Str(name).U32(8).U32(1).U64(v);
  }
  std::vector<uint8_t>& bytes() { return b_; }

 private:
  std::vector<uint8_t> b_;
};

Result<NvList> Decode(const std::vector<uint8_t>& b) { return NvList::DecodeXdr(b); }

NvList RoundTrip(const NvList& l) {
  auto enc = l.EncodeXdr();
  EXPECT_UZFS_OK(enc.status());
  if (!enc.ok()) return NvList();
  NvDecodeInfo info;
  auto dec = NvList::DecodeXdr(*enc, {}, &info);
  EXPECT_UZFS_OK(dec.status());
  EXPECT_EQ(info.bytes_used, enc->size());
  return dec.ok() ? std::move(dec).value() : NvList();
}


TEST(NvListTest, EveryTypeRoundTrips) {
  NvList l = EveryType();
  NvList back = RoundTrip(l);
  EXPECT_EQ(back, l);
  EXPECT_EQ(back.Dump(), l.Dump());
  // Re-encoding the decoded list gives the same bytes.
  EXPECT_EQ(*back.EncodeXdr(), *l.EncodeXdr());

  EXPECT_UZFS_OK(back.GetBoolean("flag"));
  EXPECT_EQ(*back.GetBooleanValue("bv"), true);
  EXPECT_EQ(*back.GetByte("byte"), 0xfe);
  EXPECT_EQ(*back.GetInt8("i8"), -128);
  EXPECT_EQ(*back.GetUint8("u8"), 255);
  EXPECT_EQ(*back.GetInt16("i16"), -32768);
  EXPECT_EQ(*back.GetUint16("u16"), 65535);
  EXPECT_EQ(*back.GetInt32("i32"), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(*back.GetUint32("u32"), 0xffffffffu);
  EXPECT_EQ(*back.GetInt64("i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(*back.GetUint64("u64"), 0xfedcba9876543210ull);
  EXPECT_EQ(*back.GetHrtime("hr"), 123456789012345);
  EXPECT_EQ(*back.GetDouble("dbl"), -2.5);
  EXPECT_EQ(*back.GetString("str"), "odd");
  EXPECT_EQ(*back.GetString("empty_str"), "");
  EXPECT_EQ(*(*back.GetNvList("nested"))->GetUint64("x"), 1u);
  EXPECT_TRUE((*back.GetNvList("empty_nested"))->empty());
  ASSERT_EQ(back.GetNvListArray("lists")->size(), 3u);
  EXPECT_TRUE((*back.GetNvListArray("lists"))[1].empty());
  EXPECT_TRUE(back.GetNvListArray("no_lists")->empty());
  EXPECT_EQ(std::vector<uint64_t>(back.GetUint64Array("u64s")->begin(),
                                  back.GetUint64Array("u64s")->end()),
            (std::vector<uint64_t>{0, 1, ~0ull}));
  EXPECT_TRUE(back.GetUint64Array("no_u64s")->empty());
  auto strs = *back.GetStringArray("strs");
  EXPECT_EQ(std::vector<std::string>(strs.begin(), strs.end()),
            (std::vector<std::string>{"a", "bb", "ccc", "dddd", ""}));
  EXPECT_EQ(*back.GetIntArray("bytes", NvType::kByteArray),
            (std::vector<int64_t>{0, 1, 2, 255, 128}));
  EXPECT_TRUE(back.GetIntArray("no_bytes", NvType::kByteArray)->empty());
  EXPECT_EQ(*back.GetIntArray("i8s", NvType::kInt8Array), (std::vector<int64_t>{-1, 0, 1}));
  EXPECT_EQ(*back.GetIntArray("u8s", NvType::kUint8Array),
            (std::vector<int64_t>{0, 1, 2, 255, 128}));
  EXPECT_EQ(*back.GetIntArray("i16s", NvType::kInt16Array), (std::vector<int64_t>{-1, 0, 1}));
  EXPECT_EQ(*back.GetIntArray("i32s", NvType::kInt32Array), (std::vector<int64_t>{-1, 0, 1}));
  EXPECT_EQ(*back.GetIntArray("u32s", NvType::kUint32Array),
            (std::vector<int64_t>{0, 1, 2, 255, 128}));
  EXPECT_EQ(*back.GetIntArray("i64s", NvType::kInt64Array), (std::vector<int64_t>{-1, 0, 1}));
  EXPECT_EQ(*back.GetIntArray("bools", NvType::kBooleanArray),
            (std::vector<int64_t>{1, 0, 1}));
}

TEST(NvListTest, DeepNestingRoundTrips) {
  NvList l;
  ASSERT_UZFS_OK(l.AddString("leaf", "bottom"));
  for (int i = 0; i < 12; i++) {
    NvList outer;
    ASSERT_UZFS_OK(outer.AddUint32("level", static_cast<uint32_t>(i)));
    ASSERT_UZFS_OK(outer.AddNvListArray("kids", {l, l}));
    l = std::move(outer);
  }
  // 12 levels of nesting fit the default limit; 4096 leaves.
  NvList back = RoundTrip(l);
  EXPECT_EQ(back, l);
  const NvList* p = &back;
  for (int i = 11; i >= 0; i--) {
    EXPECT_EQ(*p->GetUint32("level"), static_cast<uint32_t>(i));
    p = &(*p->GetNvListArray("kids"))[1];
  }
  EXPECT_EQ(*p->GetString("leaf"), "bottom");
}

// Exact bytes of a small list, worked out from the format by hand:
// odd-length name and string padding, the size fields and the terminator.
TEST(NvListTest, ExactBytesOfSmallList) {
  NvList l;
  ASSERT_UZFS_OK(l.AddString("abc", "hello"));
  ASSERT_UZFS_OK(l.AddUint64("n", 7));
  ASSERT_UZFS_OK(l.AddBoolean("f"));
  auto enc = l.EncodeXdr();
  ASSERT_UZFS_OK(enc.status());
  auto want = test::FromHex(
      "01010000"                  // XDR, little-endian writer, reserved
      "00000000 00000001"         // version 0, NV_UNIQUE_NAME
      "00000024 00000020"         // encoded 36, decoded 24 + 8
      "00000003 61626300"         // "abc" + 1 byte padding
      "00000009 00000001"         // string, 1 element
      "00000005 68656c6c 6f000000"  // "hello" + 3 bytes padding
      "00000020 00000020"         // encoded 32, decoded 24 + 8
      "00000001 6e000000"         // "n"
      "00000008 00000001"         // uint64, 1 element
      "00000000 00000007"
      "00000018 00000018"         // encoded 24, decoded 24 + 0
      "00000001 66000000"         // "f"
      "00000001 00000000"         // boolean, no elements, no value
      "00000000 00000000");       // end of list
  EXPECT_EQ(*enc, want);
  auto back = Decode(want);
  ASSERT_UZFS_OK(back.status());
  EXPECT_EQ(*back, l);
}

TEST(NvListTest, ArrayEncodingsCarryACount) {
  NvList l(0);
  const uint64_t v[] = {5, 6};
  ASSERT_UZFS_OK(l.AddUint64Array("a", v));
  auto want = test::FromHex(
      "01010000 00000000 00000000"
      "0000002c 00000028"  // 8+8+8+ count 4 + 16 = 44; decoded 24 + 16
      "00000001 61000000 00000010 00000002"
      "00000002 00000000 00000005 00000000 00000006"
      "00000000 00000000");
  EXPECT_EQ(*l.EncodeXdr(), want);
  NvList s(0);
  ASSERT_UZFS_OK(s.AddStringArray("s", {"x", "yz"}));
  auto want_s = test::FromHex(
      "01010000 00000000 00000000"
      "00000028 00000030"  // 24 + 2 strings of 8 = 40; decoded 24 + align8(16 + 5)
      "00000001 73000000 00000011 00000002"
      "00000001 78000000 00000002 797a0000"
      "00000000 00000000");
  EXPECT_EQ(*s.EncodeXdr(), want_s);
}

TEST(NvListTest, LookupByNameAndType) {
  NvList l = EveryType();
  EXPECT_TRUE(l.GetUint64("missing").status().IsNotFound());
  auto wrong = l.GetUint64("str");
  EXPECT_TRUE(wrong.status().IsNotFound());
  EXPECT_NE(wrong.status().message().find("string"), std::string_view::npos)
      << wrong.status().message();
  EXPECT_TRUE(l.GetBoolean("bv").IsNotFound());
  EXPECT_TRUE(l.GetNvList("lists").status().IsNotFound());
  EXPECT_TRUE(l.GetIntArray("str", NvType::kString).status().code() == Code::kInvalidArgument);
  ASSERT_NE(l.Find("u64"), nullptr);
  EXPECT_EQ(l.Find("u64")->type(), NvType::kUint64);
  EXPECT_EQ(l.Find("u64s")->count(), 3u);
  EXPECT_EQ(l.Find("flag")->count(), 0u);
  EXPECT_FALSE(l.Has("nope"));
}

TEST(NvListTest, IterationKeepsInsertionOrder) {
  NvList l;
  for (const char* n : {"zeta", "alpha", "mid"}) ASSERT_UZFS_OK(l.AddUint64(n, 1));
  std::vector<std::string> names;
  for (const NvPair& p : l) names.push_back(p.name());
  EXPECT_EQ(names, (std::vector<std::string>{"zeta", "alpha", "mid"}));
  NvList back = RoundTrip(l);
  EXPECT_EQ(back[0].name(), "zeta");
  EXPECT_EQ(back[2].name(), "mid");
}

TEST(NvListTest, UniqueNameReplacesAndMovesToEnd) {
  NvList l(kNvUniqueName);
  ASSERT_UZFS_OK(l.AddUint64("a", 1));
  ASSERT_UZFS_OK(l.AddUint64("b", 2));
  ASSERT_UZFS_OK(l.AddString("a", "now a string"));
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].name(), "b");
  EXPECT_EQ(l[1].name(), "a");
  EXPECT_EQ(*l.GetString("a"), "now a string");
  EXPECT_TRUE(l.GetUint64("a").status().IsNotFound());
}

TEST(NvListTest, UniqueNameTypeKeepsOtherTypes) {
  NvList l(kNvUniqueNameType);
  ASSERT_UZFS_OK(l.AddUint64("a", 1));
  ASSERT_UZFS_OK(l.AddString("a", "s"));
  ASSERT_UZFS_OK(l.AddUint64("a", 2));
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(*l.GetUint64("a"), 2u);
  EXPECT_EQ(*l.GetString("a"), "s");
  EXPECT_EQ(RoundTrip(l), l);
}

TEST(NvListTest, NonUniqueListKeepsDuplicates) {
  NvList l(0);
  ASSERT_UZFS_OK(l.AddUint64("a", 1));
  ASSERT_UZFS_OK(l.AddUint64("a", 2));
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(*l.GetUint64("a"), 1u);  // the first one
  NvList back = RoundTrip(l);
  EXPECT_EQ(back, l);
  EXPECT_EQ(back.size(), 2u);
}

TEST(NvListTest, DecodeRejectsDuplicatesUnderUniqueName) {
  Xdr x;
  x.Header().ListHead(kNvUniqueName).PairU64("a", 1).PairU64("a", 2).End();
  auto r = Decode(x.bytes());
  ASSERT_TRUE(r.status().IsCorruption());
  EXPECT_NE(r.status().message().find("duplicate"), std::string_view::npos);
  // The same bytes with nvflags 0 are a valid two-pair list.
  Xdr y;
  y.Header().ListHead(0).PairU64("a", 1).PairU64("a", 2).End();
  auto ok = Decode(y.bytes());
  ASSERT_UZFS_OK(ok.status());
  EXPECT_EQ(ok->size(), 2u);
  EXPECT_EQ(*ok->EncodeXdr(), y.bytes());
}

TEST(NvListTest, RemoveAndEquality) {
  NvList a = EveryType();
  NvList b = EveryType();
  EXPECT_EQ(a, b);
  ASSERT_UZFS_OK(b.Remove("u64"));
  EXPECT_FALSE(a == b);
  EXPECT_FALSE(b.Has("u64"));
  EXPECT_TRUE(b.Remove("u64").IsNotFound());
  EXPECT_TRUE(a.Remove("str", NvType::kUint64).IsNotFound());
  ASSERT_UZFS_OK(a.Remove("str", NvType::kString));
  EXPECT_FALSE(a.Has("str"));
  EXPECT_FALSE(NvList(0) == NvList(kNvUniqueName));  // flags count
  NvList c, d;
  ASSERT_UZFS_OK(c.AddDouble("x", 0.0));
  ASSERT_UZFS_OK(d.AddDouble("x", -0.0));
  EXPECT_FALSE(c == d);  // doubles compare by bits
}

TEST(NvListTest, AddersRejectBadNamesAndValues) {
  NvList l;
  EXPECT_EQ(l.AddUint64("", 1).code(), Code::kInvalidArgument);
  EXPECT_EQ(l.AddUint64(std::string_view("a\0b", 3), 1).code(), Code::kInvalidArgument);
  EXPECT_EQ(l.AddString("s", std::string_view("x\0", 2)).code(), Code::kInvalidArgument);
  EXPECT_EQ(l.AddStringArray("s", {"ok", std::string("n\0", 2)}).code(), Code::kInvalidArgument);
  const int64_t big[] = {256};
  EXPECT_EQ(l.AddIntArray("b", NvType::kUint8Array, big).code(), Code::kInvalidArgument);
  const int64_t two[] = {2};
  EXPECT_EQ(l.AddIntArray("b", NvType::kBooleanArray, two).code(), Code::kInvalidArgument);
  EXPECT_EQ(l.AddIntArray("b", NvType::kString, {}).code(), Code::kInvalidArgument);
  EXPECT_TRUE(l.empty());
}

TEST(NvListTest, DumpLooksLikeZdb) {
  NvList l;
  ASSERT_UZFS_OK(l.AddUint64("version", 5000));
  ASSERT_UZFS_OK(l.AddString("name", "tank"));
  NvList tree;
  ASSERT_UZFS_OK(tree.AddString("type", "mirror"));
  NvList kid;
  ASSERT_UZFS_OK(kid.AddString("path", "/dev/sda"));
  ASSERT_UZFS_OK(tree.AddNvListArray("children", {kid, kid}));
  ASSERT_UZFS_OK(l.AddNvList("vdev_tree", tree));
  NvList features;
  ASSERT_UZFS_OK(features.AddBoolean("com.delphix:hole_birth"));
  ASSERT_UZFS_OK(features.AddBoolean("com.delphix:embedded_data"));
  ASSERT_UZFS_OK(l.AddNvList("features_for_read", features));
  const uint64_t arr[] = {1, 2, 3};
  ASSERT_UZFS_OK(l.AddUint64Array("arr", arr));
  ASSERT_UZFS_OK(l.AddInt32("neg", -5));
  ASSERT_UZFS_OK(l.AddBooleanValue("bv", false));
  EXPECT_EQ(l.Dump(4),
            "    version: 5000\n"
            "    name: 'tank'\n"
            "    vdev_tree:\n"
            "        type: 'mirror'\n"
            "        children[0]:\n"
            "            path: '/dev/sda'\n"
            "        children[1]:\n"
            "            path: '/dev/sda'\n"
            "    features_for_read:\n"
            "        com.delphix:hole_birth\n"
            "        com.delphix:embedded_data\n"
            "    arr: 1 2 3\n"
            "    neg: -5\n"
            "    bv: false\n");
  // features_for_read as a pool config carries it: flags survive the codec.
  NvList back = RoundTrip(l);
  auto f = back.GetNvList("features_for_read");
  ASSERT_UZFS_OK(f.status());
  EXPECT_UZFS_OK((*f)->GetBoolean("com.delphix:hole_birth"));
  EXPECT_UZFS_OK((*f)->GetBoolean("com.delphix:embedded_data"));
  EXPECT_EQ((*f)->size(), 2u);
}

// ---- hostile input ----

void ExpectCorruption(const std::vector<uint8_t>& b, const char* what) {
  auto r = Decode(b);
  ASSERT_FALSE(r.ok()) << what;
  EXPECT_TRUE(r.status().IsCorruption()) << what << ": " << r.status().ToString();
  EXPECT_NE(r.status().message().find("at byte"), std::string_view::npos) << what;
}

TEST(NvListDecodeTest, NativeEncodingIsNotSupported) {
  Xdr x;
  x.Header(0).ListHead().End();
  auto r = Decode(x.bytes());
  EXPECT_EQ(r.status().code(), Code::kNotSupported);
}

TEST(NvListDecodeTest, BadHeaders) {
  ExpectCorruption({}, "empty");
  ExpectCorruption({1, 1, 0}, "short header");
  Xdr enc2;
  enc2.Header(2).ListHead().End();
  ExpectCorruption(enc2.bytes(), "unknown encoding");
  Xdr endian;
  endian.Header(1, 7).ListHead().End();
  ExpectCorruption(endian.bytes(), "bad endianness");
  Xdr version;
  version.Header().ListHead(kNvUniqueName, 1).End();
  EXPECT_EQ(Decode(version.bytes()).status().code(), Code::kNotSupported);
  Xdr be;
  be.Header(1, 0).ListHead().PairU64("x", 9).End();
  NvDecodeInfo info;
  auto r = NvList::DecodeXdr(be.bytes(), {}, &info);
  ASSERT_UZFS_OK(r.status());
  EXPECT_EQ(info.host_endian, 0);
  EXPECT_EQ(*r->EncodeXdr({0}), be.bytes());  // big-endian writers round-trip too
}

TEST(NvListDecodeTest, TrailingBytesAreIgnored) {
  Xdr x;
  x.Header().ListHead().PairU64("x", 9).End();
  size_t len = x.bytes().size();
  x.U32(0xdeadbeef);
  NvDecodeInfo info;
  auto r = NvList::DecodeXdr(x.bytes(), {}, &info);
  ASSERT_UZFS_OK(r.status());
  EXPECT_EQ(info.bytes_used, len);
}

TEST(NvListDecodeTest, SizeFieldsMustMatch) {
  Xdr enc;  // encoded size one unit too big
  enc.Header().ListHead().U32(36).U32(32).Str("x").U32(8).U32(1).U64(1).U64(0).End();
  ExpectCorruption(enc.bytes(), "encoded size");
  Xdr dec;  // decoded size wrong
  dec.Header().ListHead().U32(32).U32(40).Str("x").U32(8).U32(1).U64(1).End();
  ExpectCorruption(dec.bytes(), "decoded size");
  Xdr half;  // encoded size zero, decoded not: not a terminator
  half.Header().ListHead().U32(0).U32(24).End();
  ExpectCorruption(half.bytes(), "half terminator");
  Xdr huge;
  huge.Header().ListHead().U32(0x7fffffff).U32(24).Str("x").U32(8).U32(1).U64(1).End();
  ExpectCorruption(huge.bytes(), "encoded size beyond input");
}

TEST(NvListDecodeTest, ThirtyTwoBitWriterSizesAccepted) {
  // A string array's decoded size with 4-byte pointers: 24 + align8(4 + 2)
  // (a 64-bit writer says 24 + align8(8 + 2)).
  Xdr x;
  x.Header().ListHead().U32(32).U32(24 + 8).Str("s").U32(17).U32(1).U32(1).U32(0x41000000).End();
  auto r = Decode(x.bytes());
  ASSERT_UZFS_OK(r.status());
  EXPECT_EQ((*r->GetStringArray("s"))[0], "A");
}

TEST(NvListDecodeTest, BadPairsAreCorruption) {
  Xdr unknown;
  unknown.Header().ListHead().U32(24).U32(24).Str("x").U32(99).U32(0).End();
  ExpectCorruption(unknown.bytes(), "unknown type");
  Xdr nelem;
  nelem.Header().ListHead().U32(28).U32(32).Str("x").U32(8).U32(2).U64(1).End();
  ExpectCorruption(nelem.bytes(), "scalar with 2 elements");
  Xdr empty_name;
  empty_name.Header().ListHead().U32(28).U32(32).Str("").U32(8).U32(1).U64(1).End();
  ExpectCorruption(empty_name.bytes(), "empty name");
  Xdr pad;
  pad.Header().ListHead().U32(28).U32(32).Str("x", 0xff).U32(8).U32(1).U64(1).End();
  ExpectCorruption(pad.bytes(), "non-zero padding");
  Xdr nul;
  nul.Header().ListHead().U32(28).U32(32).Str(std::string("x\0", 2)).U32(8).U32(1).U64(1).End();
  ExpectCorruption(nul.bytes(), "NUL in name");
  Xdr boolv;
  boolv.Header().ListHead().U32(28).U32(32).Str("x").U32(21).U32(1).U32(2).End();
  ExpectCorruption(boolv.bytes(), "boolean_value 2");
  Xdr u16;
  u16.Header().ListHead().U32(28).U32(32).Str("x").U32(4).U32(1).U32(0x10000).End();
  ExpectCorruption(u16.bytes(), "uint16 out of range");
  Xdr count;
  count.Header().ListHead().U32(36).U32(32).Str("x").U32(16).U32(1).U32(2).U64(1).End();
  ExpectCorruption(count.bytes(), "array count differs from nelem");
  Xdr strlen;
  strlen.Header().ListHead().U32(28).U32(32).Str("x").U32(9).U32(1).U32(0xfffffff0).End();
  ExpectCorruption(strlen.bytes(), "string longer than input");
}

TEST(NvListDecodeTest, EightBitValuesInEitherSignForm) {
  // Writers with a signed C char sign-extend bytes; others do not. Both decode.
  for (uint32_t raw : {0xffffffffu, 0x000000ffu}) {
    Xdr x;
    x.Header().ListHead().U32(28).U32(32).Str("b").U32(2).U32(1).U32(raw).End();
    auto r = Decode(x.bytes());
    ASSERT_UZFS_OK(r.status());
    EXPECT_EQ(*r->GetByte("b"), 0xff);
  }
  Xdr bad;
  bad.Header().ListHead().U32(28).U32(32).Str("b").U32(2).U32(1).U32(0x100).End();
  ExpectCorruption(bad.bytes(), "byte 256");
}

TEST(NvListDecodeTest, HugeCountsDoNotAllocate) {
  // Claims of 2^32-1 elements in a tiny input fail before any allocation.
  for (uint32_t type : {16u /*uint64 array*/, 17u /*string array*/, 20u /*nvlist array*/,
                        10u /*byte array*/, 13u /*int32 array*/}) {
    Xdr x;
    x.Header().ListHead().U32(28).U32(32).Str("x").U32(type).U32(0xffffffff);
    if (type != 17 && type != 20 && type != 10) x.U32(0xffffffff);
    x.U64(0).End();
    ExpectCorruption(x.bytes(), "huge count");
  }
}

TEST(NvListDecodeTest, NestingDepthIsLimited) {
  // 100 nested nvlists: over the default limit of 64, and within a lower one.
  const int kDepth = 100;
  Xdr x;
  x.Header().ListHead();
  for (int i = 0; i < kDepth; i++) x.U32(8).U32(48).Str("n").U32(19).U32(1).ListHead();
  for (int i = 0; i <= kDepth; i++) x.End();
  auto r = Decode(x.bytes());
  ASSERT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("nested"), std::string_view::npos);
  NvList deep;
  for (int i = 0; i < 10; i++) {
    NvList outer;
    ASSERT_UZFS_OK(outer.AddNvList("n", std::move(deep)));
    deep = std::move(outer);
  }
  auto enc = deep.EncodeXdr();
  ASSERT_UZFS_OK(enc.status());
  EXPECT_UZFS_OK(NvList::DecodeXdr(*enc, {.max_depth = 10}).status());
  EXPECT_TRUE(NvList::DecodeXdr(*enc, {.max_depth = 9}).status().IsCorruption());
}

TEST(NvListDecodeTest, RandomGarbageNeverCrashes) {
  NvList l = EveryType();
  auto enc = *l.EncodeXdr();
  for (uint64_t seed = 1; seed <= 300; seed++) {
    auto noise = test::RandomBytes(64, seed);
    std::vector<uint8_t> buf = enc;
    // Overwrite a random window of the valid stream with noise.
    size_t at = (seed * 7919) % (buf.size() - 8);
    for (size_t i = 0; i < noise.size() && at + i < buf.size(); i++) buf[at + i] = noise[i];
    auto r = NvList::DecodeXdr(buf);
    if (r.ok()) {
      auto again = NvList::DecodeXdr(*r->EncodeXdr());
      ASSERT_UZFS_OK(again.status());
      EXPECT_EQ(*again, *r);
    } else {
      EXPECT_TRUE(r.status().IsCorruption() || r.status().code() == Code::kNotSupported);
    }
  }
  for (size_t n = 0; n < enc.size(); n++)
    ASSERT_FALSE(NvList::DecodeXdr(std::span<const uint8_t>(enc.data(), n)).ok()) << n;
}

}  // namespace
}  // namespace uzfs
