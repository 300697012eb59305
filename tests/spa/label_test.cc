// Vdev label config regions: a real zfs-fuse label verifies, decodes to what
// `zdb -l` prints and re-encodes to the very same 112 KiB; damage, a wrong
// place and an oversized config are refused.
#include "zfs/spa/label.h"

#include <gtest/gtest.h>


#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

class RealLabel : public ::testing::TestWithParam<const char*> {};

TEST_P(RealLabel, VerifiesDecodesAndReencodesIdentically) {
  const std::string name = GetParam();
  const auto region = test::ReadFile(test::FixturePath("uberblock/" + name + ".vdev_phys.bin"));
  ASSERT_EQ(region.size(), kVdevPhysSize);
  auto config = DecodeLabelConfig(region, kVdevPhysOffset);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  const std::string zdb = test::ReadText(test::FixturePath("uberblock/" + name + ".zdb-l.txt"));
  EXPECT_NE(zdb.find("name: '" + std::string(*config->GetString("name")) + "'"),
            std::string::npos);
  EXPECT_NE(zdb.find("pool_guid: " + std::to_string(*config->GetUint64("pool_guid"))),
            std::string::npos);
  EXPECT_NE(zdb.find("txg: " + std::to_string(*config->GetUint64("txg"))), std::string::npos);
  EXPECT_EQ(*config->GetUint64("version"), 23u);
  // The label as zdb prints it is our dump of the same list.
  EXPECT_NE(zdb.find(config->Dump(4)), std::string::npos) << config->Dump(4);

  auto again = EncodeLabelConfig(*config, kVdevPhysOffset);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, region) << "re-encoded label differs from zfs-fuse's bytes";

  // The same region is not valid as label 1's (a misplaced copy).
  EXPECT_TRUE(DecodeLabelConfig(region, 256 * 1024 + kVdevPhysOffset).status().IsCorruption());
  auto bad = region;
  bad[200] ^= 1;
  EXPECT_TRUE(DecodeLabelConfig(bad, kVdevPhysOffset).status().IsCorruption());
}

INSTANTIATE_TEST_SUITE_P(ZfsFusePools, RealLabel, ::testing::Values("ubstripe", "ubmirror"));

TEST(LabelTest, OversizedConfigIsRefused) {
  NvList big;
  ASSERT_UZFS_OK(big.AddString("blob", std::string(120 * 1024, 'x')));
  auto r = EncodeLabelConfig(big, kVdevPhysOffset);
  EXPECT_EQ(r.status().code(), Code::kOverflow);
}

TEST(LabelTest, ZeroedRegionIsCorruption) {
  std::vector<uint8_t> zeros(kVdevPhysSize, 0);
  EXPECT_TRUE(DecodeLabelConfig(zeros, kVdevPhysOffset).status().IsCorruption());
}

}  // namespace
}  // namespace uzfs
