// RAID-Z map arithmetic on hand-worked examples (the real-pool fixtures are
// in raidz_layout_test.cc).
#include "raidz/raidz_map.h"

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"

namespace uzfs::raidz {
namespace {

TEST(RaidzMapTest, FullStripeRaidz2) {
  // 5 children, raidz2, ashift 12, 12 KiB = 3 sectors at sector 7 (f=2, o=1).
  auto m = MapBlock(7 << 12, 3 << 12, {5, 2, 12});
  ASSERT_UZFS_OK(m.status());
  // s=3, q=1, r=0: all 5 columns one sector, tot 5, asize roundup(5,3)=6.
  ASSERT_EQ(m->cols.size(), 5u);
  EXPECT_EQ(m->bigcols, 0u);
  EXPECT_EQ(m->asize, 6u << 12);
  EXPECT_EQ(m->nskip, 1u);
  const uint32_t child[5] = {2, 3, 4, 0, 1};
  const uint64_t off[5] = {1, 1, 1, 2, 2};
  for (int c = 0; c < 5; c++) {
    EXPECT_EQ(m->cols[c].child, child[c]) << c;
    EXPECT_EQ(m->cols[c].offset, off[c] << 12) << c;
    EXPECT_EQ(m->cols[c].size, 1u << 12) << c;
  }
  EXPECT_EQ(m->skip[0].child, 2u);  // starts at column bc = 0
  EXPECT_EQ(m->skip[0].offset, 2u << 12);
}

TEST(RaidzMapTest, ShortColumnsAndSmallBlocks) {
  // raidz3 on 7 children, 5 sectors: q=1, r=1, bc=4 -> columns 0..3 have 2.
  auto m = MapBlock(0, 5 << 9, {7, 3, 9});
  ASSERT_UZFS_OK(m.status());
  ASSERT_EQ(m->cols.size(), 7u);
  EXPECT_EQ(m->bigcols, 4u);
  for (int c = 0; c < 7; c++) EXPECT_EQ(m->cols[c].size, (c < 4 ? 2u : 1u) << 9) << c;
  // tot = 5 + 3*2 = 11, asize = 12 sectors, one skip sector after column 4.
  EXPECT_EQ(m->asize, 12u << 9);
  ASSERT_EQ(m->skip.size(), 1u);
  EXPECT_EQ(m->skip[0].child, 4u);
  EXPECT_EQ(m->skip[0].offset, 1u << 9);

  // One sector on raidz2: q=0 -> only bc = 3 columns exist.
  auto s = MapBlock(0, 512, {6, 2, 9});
  ASSERT_UZFS_OK(s.status());
  EXPECT_EQ(s->cols.size(), 3u);
  EXPECT_EQ(s->ndata(), 1u);
  EXPECT_EQ(s->asize, 3u << 9);
  EXPECT_EQ(s->nskip, 0u);
}

TEST(RaidzMapTest, Raidz1SwapsFirstTwoColumnsOnOddMegabytes) {
  const Geometry g{4, 1, 9};
  auto a = MapBlock(0x0ff000, 4 << 9, g);  // bit 20 clear
  auto b = MapBlock(0x1ff000, 4 << 9, g);  // bit 20 set
  ASSERT_UZFS_OK(a.status());
  ASSERT_UZFS_OK(b.status());
  // Same starting child for both offsets (0x7f8 % 4 == 0xff8 % 4 == 0).
  EXPECT_EQ(a->cols[0].child, 0u);
  EXPECT_EQ(a->cols[1].child, 1u);
  EXPECT_EQ(b->cols[0].child, 1u);
  EXPECT_EQ(b->cols[1].child, 0u);
  EXPECT_EQ(b->cols[2].child, 2u);
  // raidz2 never swaps.
  auto c = MapBlock(0x1ff000, 4 << 9, {4, 2, 9});
  ASSERT_UZFS_OK(c.status());
  EXPECT_EQ(c->cols[0].child, 0u);
}

TEST(RaidzMapTest, AsizeIsMultipleOfParityPlusOneAndMatchesMap) {
  for (uint32_t p = 1; p <= 3; p++) {
    for (uint32_t n = p + 1; n <= 24; n++) {
      for (uint32_t ashift : {9u, 12u}) {
        const Geometry g{n, p, ashift};
        for (uint64_t s = 1; s <= 300; s += (s < 64 ? 1 : 37)) {
          const uint64_t a = RaidzAsize(s << ashift, g);
          EXPECT_EQ((a >> ashift) % (p + 1), 0u);
          auto m = MapBlock(s << ashift << 3, s << ashift, g);
          ASSERT_UZFS_OK(m.status());
          EXPECT_EQ(m->asize, a);
          uint64_t sum = 0;
          for (const auto& c : m->cols) sum += c.size;
          EXPECT_EQ(sum + (uint64_t{m->nskip} << ashift), a);
          EXPECT_LT(m->nskip, p + 1);
        }
      }
    }
  }
  // A psize that is not a sector multiple is padded, as zio pads it.
  EXPECT_EQ(RaidzAsize(1536, {3, 1, 12}), RaidzAsize(4096, {3, 1, 12}));
}

TEST(RaidzMapTest, RejectsBadArguments) {
  EXPECT_FALSE(MapBlock(0, 512, {3, 0, 9}).ok());
  EXPECT_FALSE(MapBlock(0, 512, {3, 3, 9}).ok());
  EXPECT_FALSE(MapBlock(0, 512, {3, 4, 9}).ok());
  EXPECT_FALSE(MapBlock(0, 512, {3, 1, 8}).ok());
  EXPECT_FALSE(MapBlock(0, 0, {3, 1, 9}).ok());
  EXPECT_FALSE(MapBlock(100, 512, {3, 1, 9}).ok());
}

}  // namespace
}  // namespace uzfs::raidz
