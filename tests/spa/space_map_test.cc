// Space map codec: round trips (v1, v2), exact bit layouts of each word
// kind, entry boundaries (max run, last encodable offset, long runs split),
// two-word entries never straddling a block, the header, and replay.
#include "zfs/spa/space_map.h"

#include <random>

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

std::vector<SpaceMapRecord> Decode(const std::vector<uint64_t>& w) {
  auto r = DecodeSpaceMapRecords(w);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::vector<SpaceMapRecord>{};
}

TEST(SpaceMapTest, OneWordLayout) {
  SpaceMapEncoder e(9, /*v2=*/false);
  ASSERT_UZFS_OK(e.Entry(SpaceMapType::kFree, 3 << 9, 5 << 9));
  ASSERT_EQ(e.words().size(), 1u);
  EXPECT_EQ(e.words()[0], (uint64_t{3} << 16) | (uint64_t{1} << 15) | 4);
  e.Debug(SpaceMapType::kFree, 2, 77);
  EXPECT_EQ(e.words()[1], (uint64_t{2} << 62) | (uint64_t{1} << 60) | (uint64_t{2} << 50) | 77);
}

TEST(SpaceMapTest, TwoWordLayout) {
  SpaceMapEncoder e(12, /*v2=*/true);
  ASSERT_UZFS_OK(e.Entry(SpaceMapType::kAlloc, uint64_t{5} << 12, uint64_t{40000} << 12));
  ASSERT_EQ(e.words().size(), 2u);
  EXPECT_EQ(e.words()[0], (uint64_t{3} << 62) | (uint64_t{39999} << 24) | 0xffffff);
  EXPECT_EQ(e.words()[1], 5u);
  SpaceMapEncoder f(12, true);
  ASSERT_UZFS_OK(f.Entry(SpaceMapType::kFree, 0, 4096, /*vdev=*/7));
  EXPECT_EQ(f.words()[0], (uint64_t{3} << 62) | 7);
  EXPECT_EQ(f.words()[1], uint64_t{1} << 63);
  auto recs = Decode(f.words());
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_TRUE(recs[0].two_word);
  EXPECT_EQ(recs[0].vdev, 7u);
  EXPECT_EQ(recs[0].type, SpaceMapType::kFree);
  EXPECT_EQ(recs[0].run, 1u);
  // v1 cannot carry a vdev id.
  SpaceMapEncoder g(12, false);
  EXPECT_FALSE(g.Entry(SpaceMapType::kFree, 0, 4096, 7).ok());
}

TEST(SpaceMapTest, RunBoundariesAndSplitting) {
  // Exactly the max run is one word; one more unit is two words (v1).
  SpaceMapEncoder a(9, false);
  ASSERT_UZFS_OK(a.Entry(SpaceMapType::kAlloc, 0, kSpaceMapRunMaxV1 << 9));
  ASSERT_EQ(a.words().size(), 1u);
  EXPECT_EQ(a.words()[0] & 0x7fff, 0x7fffu);
  ASSERT_UZFS_OK(a.Entry(SpaceMapType::kAlloc, 0, (kSpaceMapRunMaxV1 + 1) << 9));
  ASSERT_EQ(a.words().size(), 3u);
  auto r = Decode(a.words());
  EXPECT_EQ(r[1].offset, 0u);
  EXPECT_EQ(r[1].run, kSpaceMapRunMaxV1);
  EXPECT_EQ(r[2].offset, kSpaceMapRunMaxV1);
  EXPECT_EQ(r[2].run, 1u);
  // A 100000-unit run: 4 one-word entries in v1, one two-word entry in v2.
  SpaceMapEncoder b(9, false), c(9, true);
  ASSERT_UZFS_OK(b.Entry(SpaceMapType::kFree, 512, 100000 << 9));
  ASSERT_UZFS_OK(c.Entry(SpaceMapType::kFree, 512, 100000 << 9));
  EXPECT_EQ(b.words().size(), 4u);
  EXPECT_EQ(c.words().size(), 2u);
  uint64_t sum = 0;
  for (const auto& rec : Decode(b.words())) sum += rec.run;
  EXPECT_EQ(sum, 100000u);
  // v2: a run longer than 2^36 units splits into two-word entries.
  SpaceMapEncoder d(0, true);
  ASSERT_UZFS_OK(d.Entry(SpaceMapType::kAlloc, 0, kSpaceMapRunMaxV2 + 5));
  auto rd = Decode(d.words());
  ASSERT_EQ(rd.size(), 2u);
  EXPECT_EQ(rd[0].run, kSpaceMapRunMaxV2);
  EXPECT_EQ(rd[1].offset, kSpaceMapRunMaxV2);
  EXPECT_EQ(rd[1].run, 5u);
}

TEST(SpaceMapTest, OffsetLimits) {
  // The last unit a one-word entry can name, and one past it.
  SpaceMapEncoder a(0, false);
  ASSERT_UZFS_OK(a.Entry(SpaceMapType::kAlloc, kSpaceMapOffsetLimitV1 - 1, 1));
  auto r = Decode(a.words());
  EXPECT_EQ(r[0].offset, kSpaceMapOffsetLimitV1 - 1);
  EXPECT_FALSE(a.Entry(SpaceMapType::kAlloc, kSpaceMapOffsetLimitV1, 1).ok());
  // v2 takes it with a two-word entry.
  SpaceMapEncoder b(0, true);
  ASSERT_UZFS_OK(b.Entry(SpaceMapType::kAlloc, kSpaceMapOffsetLimitV1, 1));
  auto rb = Decode(b.words());
  ASSERT_EQ(rb.size(), 1u);
  EXPECT_TRUE(rb[0].two_word);
  EXPECT_EQ(rb[0].offset, kSpaceMapOffsetLimitV1);
  // Misaligned input is refused.
  SpaceMapEncoder c(9, true);
  EXPECT_EQ(c.Entry(SpaceMapType::kAlloc, 100, 512).code(), Code::kInvalidArgument);
}

TEST(SpaceMapTest, TwoWordEntryNeverStraddlesABlock) {
  // Block of 8 words; start at word 6 of the object: one debug word puts
  // the next two-word entry at word 7, which must be padded.
  SpaceMapEncoder e(9, true, /*start_word=*/6, /*block_words=*/8);
  e.Debug(SpaceMapType::kAlloc, 1, 9);
  ASSERT_UZFS_OK(e.Entry(SpaceMapType::kAlloc, 0, 100000 << 9));
  ASSERT_EQ(e.words().size(), 4u);
  EXPECT_EQ(e.words()[1], kSpaceMapPadWord);
  EXPECT_EQ(e.words()[2] >> 62, 3u);
  auto r = Decode(e.words());
  ASSERT_EQ(r.size(), 3u);
  EXPECT_TRUE(r[1].debug);
  EXPECT_EQ(r[1].txg, 0u);
  EXPECT_EQ(r[2].txg, 9u);  // the pad does not reset the txg context
  // A cut-off two-word entry is Corruption.
  std::vector<uint64_t> cut = {e.words()[2]};
  EXPECT_TRUE(DecodeSpaceMapRecords(cut).status().IsCorruption());
}

TEST(SpaceMapTest, RandomRoundTrip) {
  for (bool v2 : {false, true}) {
    std::mt19937_64 rng(v2 ? 2 : 1);
    RangeTree alloc, free;
    uint64_t pos = 0;
    for (int i = 0; i < 2000; i++) {
      pos += (1 + rng() % 100) << 12;
      const uint64_t len = (1 + (rng() % 4 == 0 ? rng() % 200000 : rng() % 50)) << 12;
      ASSERT_UZFS_OK((i % 3 ? alloc : free).Add(pos, len));
      pos += len;
    }
    SpaceMapEncoder e(12, v2);
    ASSERT_UZFS_OK(e.Tree(SpaceMapType::kAlloc, alloc, 0, 1, 100, true));
    ASSERT_UZFS_OK(e.Tree(SpaceMapType::kFree, free, 0, 1, 100, true));
    RangeTree got_alloc, got_free;
    ASSERT_UZFS_OK(DecodeSpaceMap(e.words(), [&](const SpaceMapRecord& r) {
      if (r.debug) {
        EXPECT_EQ(r.txg, 100u);
        return Status::Ok();
      }
      return (r.type == SpaceMapType::kAlloc ? got_alloc : got_free)
          .Add(r.offset << 12, r.run << 12);
    }));
    EXPECT_EQ(got_alloc, alloc) << v2;
    EXPECT_EQ(got_free, free) << v2;
    // Words survive the byte encoding.
    auto bytes = SpaceMapWordsToBytes(e.words());
    EXPECT_EQ(SpaceMapWordsFromBytes(bytes), e.words());
  }
}

TEST(SpaceMapTest, HeaderRoundTrip) {
  SpaceMapHeader h{.object = 26, .length = 200, .alloc = -4096, .histogram = std::nullopt};
  auto b = EncodeSpaceMapHeader(h);
  ASSERT_EQ(b.size(), 24u);
  auto d = DecodeSpaceMapHeader(b);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, h);
  h.histogram.emplace();
  for (int i = 0; i < kSpaceMapHistogramSize; i++) (*h.histogram)[i] = i * 3;
  b = EncodeSpaceMapHeader(h);
  ASSERT_EQ(b.size(), 320u);
  EXPECT_EQ(b[64 + 8], 3);
  d = DecodeSpaceMapHeader(b);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, h);
  EXPECT_TRUE(DecodeSpaceMapHeader(std::span(b).first(16)).status().IsCorruption());
}

TEST(SpaceMapTest, HistogramBuckets) {
  RangeTree t;
  ASSERT_UZFS_OK(t.Add(0, 512));          // 1 unit -> bucket 0
  ASSERT_UZFS_OK(t.Add(4096, 3 * 512));   // 3 units -> bucket 1
  ASSERT_UZFS_OK(t.Add(65536, 4 * 512));  // 4 units -> bucket 2
  auto h = SpaceMapHistogram(t, 9);
  EXPECT_EQ(h[0], 1u);
  EXPECT_EQ(h[1], 1u);
  EXPECT_EQ(h[2], 1u);
}

TEST(SpaceMapTest, ReplayChecksState) {
  SpaceMapEncoder e(9, false);
  ASSERT_UZFS_OK(e.Entry(SpaceMapType::kAlloc, 0, 4096));
  ASSERT_UZFS_OK(e.Entry(SpaceMapType::kFree, 1024, 512));
  RangeTree free;
  ASSERT_UZFS_OK(free.Add(1 << 20, 1 << 20));
  int64_t delta = 0;
  ASSERT_UZFS_OK(ReplaySpaceMap(e.words(), 9, 1 << 20, 1 << 20, &free, &delta));
  EXPECT_EQ(delta, 4096 - 512);
  EXPECT_EQ(free.space(), (1u << 20) - 4096 + 512);
  // Freeing free space, or running past the metaslab, is Corruption.
  RangeTree full;
  ASSERT_UZFS_OK(full.Add(0, 1 << 20));
  SpaceMapEncoder bad(9, false);
  ASSERT_UZFS_OK(bad.Entry(SpaceMapType::kFree, 0, 512));
  EXPECT_TRUE(ReplaySpaceMap(bad.words(), 9, 0, 1 << 20, &full).IsCorruption());
  SpaceMapEncoder past(9, false);
  ASSERT_UZFS_OK(past.Entry(SpaceMapType::kAlloc, (1 << 20) - 512, 1024));
  EXPECT_TRUE(ReplaySpaceMap(past.words(), 9, 0, 1 << 20, &full).IsCorruption());
}

}  // namespace
}  // namespace uzfs
