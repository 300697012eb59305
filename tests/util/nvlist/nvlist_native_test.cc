// NvList's native codec (nvlist_native.cc), judged by lists OpenZFS's own
// libnvpair packed (tests/fixtures/nvlist/make-native-fixtures.py): uzfs
// writes them byte for byte and reads them back as the same lists; the
// other byte order reads too; damaged input is refused, never overread.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "tests/testutil/testutil.h"
#include "tests/util/nvlist/nvlist_test_util.h"
#include "zfs/util/nvlist/nvlist.h"

namespace uzfs {
namespace {

std::vector<uint8_t> Fixture(const std::string& name) {
  return test::ReadFile(test::FixturePath("nvlist/" + name));
}

NvList ResumeLike() {
  NvList l;
  EXPECT_UZFS_OK(l.AddUint64("object", 0x1234));
  EXPECT_UZFS_OK(l.AddUint64("offset", 0x20000));
  EXPECT_UZFS_OK(l.AddUint64("bytes", 0x5000));
  EXPECT_UZFS_OK(l.AddUint64("toguid", 0xfedcba9876543210ull));
  EXPECT_UZFS_OK(l.AddString("toname", "pool/fs@snap"));
  EXPECT_UZFS_OK(l.AddBoolean("embedok"));
  return l;
}

TEST(NvListNativeTest, WritesWhatLibnvpairWrites) {
  for (const auto& [name, list] : {std::pair{"every-type-native.bin", EveryType()},
                                   std::pair{"resume-like-native.bin", ResumeLike()}}) {
    auto ours = list.EncodeNative();
    ASSERT_UZFS_OK(ours.status());
    EXPECT_EQ(*ours, Fixture(name)) << name;
  }
}

TEST(NvListNativeTest, ReadsWhatLibnvpairWrites) {
  for (const auto& [name, list] : {std::pair{"every-type-native.bin", EveryType()},
                                   std::pair{"resume-like-native.bin", ResumeLike()}}) {
    const std::vector<uint8_t> bytes = Fixture(name);
    NvDecodeInfo info;
    auto back = NvList::DecodeNative(bytes, {}, &info);
    ASSERT_UZFS_OK(back.status());
    EXPECT_EQ(*back, list) << name;
    EXPECT_EQ(info.bytes_used, bytes.size());
    // Decode takes either encoding; DecodeXdr only its own.
    auto either = NvList::Decode(bytes);
    ASSERT_UZFS_OK(either.status());
    EXPECT_EQ(*either, list);
    EXPECT_EQ(NvList::DecodeXdr(bytes).status().code(), Code::kNotSupported);
    auto xdr = list.EncodeXdr();
    ASSERT_UZFS_OK(xdr.status());
    auto from_xdr = NvList::Decode(*xdr);
    ASSERT_UZFS_OK(from_xdr.status());
    EXPECT_EQ(*from_xdr, list);
  }
}

// The fixture turned into the other byte order, field by field.
std::vector<uint8_t> Swapped(const std::vector<uint8_t>& le) {
  std::vector<uint8_t> be = le;
  be[1] = 0;
  size_t pos = 4;
  auto swap = [&](size_t at, size_t width) { std::reverse(be.begin() + at, be.begin() + at + width); };
  swap(pos, 4);
  swap(pos + 4, 4);
  pos += 8;
  // ResumeLike: six pairs of known layout, then the terminator.
  for (int i = 0; i < 6; i++) {
    uint32_t size;
    std::memcpy(&size, &le[pos], 4);
    uint16_t name_sz;
    std::memcpy(&name_sz, &le[pos + 4], 2);
    uint32_t type;
    std::memcpy(&type, &le[pos + 12], 4);
    swap(pos, 4);
    swap(pos + 4, 2);
    swap(pos + 8, 4);
    swap(pos + 12, 4);
    if (type == 8) swap(pos + 16 + ((name_sz + 7) & ~7u), 8);  // a uint64 value
    pos += size;
  }
  return be;
}

TEST(NvListNativeTest, ReadsTheOtherByteOrder) {
  const std::vector<uint8_t> be = Swapped(Fixture("resume-like-native.bin"));
  auto back = NvList::DecodeNative(be);
  ASSERT_UZFS_OK(back.status());
  EXPECT_EQ(*back, ResumeLike());
}

TEST(NvListNativeTest, DamageIsRefusedNeverOverread) {
  const std::vector<uint8_t> good = Fixture("every-type-native.bin");
  // Every truncation is refused.
  for (size_t n = 0; n < good.size(); n++) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<long>(n));
    auto r = NvList::DecodeNative(cut);
    EXPECT_FALSE(r.ok()) << n;
  }
  // Random damage: refused or read as some list, never a crash (the
  // sanitizer builds watch the reads).
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; i++) {
    std::vector<uint8_t> bad = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; f++) bad[rng() % bad.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    auto r = NvList::DecodeNative(bad);
    if (!r.ok()) {
      EXPECT_TRUE(r.status().code() == Code::kCorruption || r.status().code() == Code::kNotSupported)
          << r.status().ToString();
    }
  }
  // A size that promises more than there is; a pair count beyond the bytes.
  std::vector<uint8_t> big = Fixture("resume-like-native.bin");
  big[12] = 0xff;
  big[13] = 0xff;
  EXPECT_EQ(NvList::DecodeNative(big).status().code(), Code::kCorruption);
}

}  // namespace
}  // namespace uzfs
