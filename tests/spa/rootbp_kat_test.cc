// Known answers from real pools written by zfs-fuse (fixtures made by
// tests/fixtures/uberblock/make-uberblock-fixtures.sh): our ring search finds
// the uberblock zdb calls active (embedded sha256 verified), and it carries the root block pointer that `zdb -u` prints; our
// decoder must recover every field of it, our fletcher4 must reproduce its
// checksum over the raw MOS block at each DVA, and our lzjb must inflate that
// block to its logical size. Ties block pointer, checksum and compression to
// bytes a real ZFS wrote.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "tests/testutil/testutil.h"
#include "zfs/util/checksum.h"
#include "zfs/util/compress/compress.h"
#include "zfs/util/endian.h"
#include "zfs/spa/block_ptr.h"
#include "zfs/spa/uberblock.h"

namespace uzfs {
namespace {

uint64_t Field(const std::string& text, const std::string& name) {
  std::smatch m;
  const std::regex re("\\b" + name + " = ([0-9]+)");
  EXPECT_TRUE(std::regex_search(text, m, re)) << name;
  return std::stoull(m[1]);
}

class RootBpKat : public ::testing::TestWithParam<const char*> {};

TEST_P(RootBpKat, MatchesZdb) {
  const std::string name = GetParam();
  const std::string zdb = test::ReadText(test::FixturePath("uberblock/" + name + ".zdb-u.txt"));
  const auto ring = test::ReadFile(test::FixturePath("uberblock/" + name + ".ring.bin"));
  const int ashift = std::stoi(test::ReadText(test::FixturePath("uberblock/" + name + ".ashift")));
  ASSERT_EQ(ring.size(), 128u * 1024);
  const size_t slot = UberblockSlotSize(ashift);

  // The active uberblock: valid magic and embedded sha256, highest txg.
  auto active = FindActiveUberblock(ring, kUberblockRingOffset, ashift);
  ASSERT_TRUE(active.ok()) << active.status().ToString();
  EXPECT_FALSE(active->byteswapped);
  EXPECT_EQ(active->version, Field(zdb, "version"));
  EXPECT_EQ(active->txg, Field(zdb, "txg"));
  EXPECT_EQ(active->guid_sum, Field(zdb, "guid_sum"));
  EXPECT_EQ(active->timestamp, Field(zdb, "timestamp"));
  // Every slot zfs-fuse filled verifies; there is more than one (a history
  // of txgs to fall back to).
  int valid = 0;
  for (uint64_t off = 0; off < ring.size(); off += slot)
    valid += DecodeUberblock(std::span(ring).subspan(off, slot), kUberblockRingOffset + off).ok();
  EXPECT_GT(valid, 1);

  const BlockPtr& bp = active->rootbp;
  EXPECT_UZFS_OK(ValidateBlockPtr(bp, {}));
  EXPECT_EQ(bp.type, 11);  // DMU objset
  EXPECT_EQ(bp.level, 0);
  EXPECT_EQ(bp.checksum, static_cast<uint8_t>(ChecksumType::kFletcher4));
  EXPECT_EQ(bp.compression, static_cast<uint8_t>(CompressType::kLzjb));
  EXPECT_TRUE(bp.little_endian);

  // zdb's own rendering of the same pointer.
  std::smatch m;
  const std::regex dva_re("DVA\\[(\\d)\\]=<(\\d+):([0-9a-f]+):([0-9a-f]+)>");
  std::string rest = zdb.substr(zdb.find("rootbp = "));
  int ndva = 0;
  while (std::regex_search(rest, m, dva_re)) {
    const int i = std::stoi(m[1]);
    EXPECT_EQ(bp.dva[i].vdev, std::stoul(m[2]));
    EXPECT_EQ(bp.dva[i].offset, std::stoull(m[3], nullptr, 16));
    EXPECT_EQ(bp.dva[i].asize, std::stoull(m[4], nullptr, 16));
    ndva++;
    rest = m.suffix();
  }
  EXPECT_EQ(bp.NumDvas(), ndva);
  ASSERT_TRUE(std::regex_search(zdb, m,
                                std::regex("size=([0-9a-f]+)L/([0-9a-f]+)P birth=(\\d+)L/(\\d+)P "
                                           "fill=(\\d+) cksum=([0-9a-f]+):([0-9a-f]+):([0-9a-f]+):"
                                           "([0-9a-f]+)")));
  EXPECT_EQ(bp.lsize, std::stoull(m[1], nullptr, 16));
  EXPECT_EQ(bp.psize, std::stoull(m[2], nullptr, 16));
  EXPECT_EQ(bp.birth, std::stoull(m[3]));
  EXPECT_EQ(bp.PhysBirth(), std::stoull(m[4]));
  EXPECT_EQ(bp.fill, std::stoull(m[5]));
  for (int w = 0; w < 4; w++) EXPECT_EQ(bp.cksum.word[w], std::stoull(m[6 + w], nullptr, 16));

  // Every copy of the MOS block checksums to the pointer's value and inflates.
  for (int i = 0; i < bp.NumDvas(); i++) {
    const auto raw =
        test::ReadFile(test::FixturePath("uberblock/" + name + ".mos.dva" + std::to_string(i)));
    ASSERT_EQ(raw.size(), bp.psize);
    Checksum256 ck;
    Fletcher4Native(raw.data(), raw.size(), &ck);
    EXPECT_EQ(ck, bp.cksum) << "DVA " << i;
    std::vector<uint8_t> logical(bp.lsize);
    EXPECT_UZFS_OK(Decompress(CompressType::kLzjb, raw, logical));
    // An objset_phys starts with the meta-dnode: type 10 (DMU_OT_DNODE).
    EXPECT_EQ(logical[0], 10) << "meta-dnode type";
    // Test the test: one flipped byte must break the checksum.
    auto bad = raw;
    bad[bad.size() / 2] ^= 1;
    Fletcher4Native(bad.data(), bad.size(), &ck);
    EXPECT_NE(ck, bp.cksum);
  }
}

INSTANTIATE_TEST_SUITE_P(ZfsFusePools, RootBpKat, ::testing::Values("ubstripe", "ubmirror"));

}  // namespace
}  // namespace uzfs
