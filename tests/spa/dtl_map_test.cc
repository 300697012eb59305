// DTL maps (dtl_map.h): spans round-trip through the space map words and a
// storage's header; a run longer than one entry can say is split and read
// back whole; FREE entries take txgs back out; bad spans and undecodable
// or contradictory maps are refused.
#include "zfs/spa/dtl_map.h"

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

TEST(DtlMap, SpansRoundTripThroughAStorage) {
  MemSpaceMapStorage sm(/*object=*/77);
  const std::vector<TxgSpan> spans{{5, 6}, {9, 40}, {100, 100 + 70000}};
  ASSERT_UZFS_OK(WriteDtl(sm, spans, 123));
  auto back = ReadDtl(sm);
  ASSERT_UZFS_OK(back.status());
  EXPECT_EQ(*back, spans);
  auto h = sm.ReadHeader();
  ASSERT_UZFS_OK(h.status());
  EXPECT_EQ(h->object, 77u);
  EXPECT_EQ(h->length, sm.Length());
  EXPECT_EQ(h->alloc, 1 + 31 + 70000);
  // The words: a debug word naming the txg, then ALLOC entries at the txgs
  // (unit 1), the long span in runs of at most 32768.
  auto words = sm.ReadAll();
  ASSERT_UZFS_OK(words.status());
  auto recs = DecodeSpaceMapRecords(*words);
  ASSERT_UZFS_OK(recs.status());
  ASSERT_EQ(recs->size(), 1u + 2 + 3);
  EXPECT_TRUE((*recs)[0].debug);
  EXPECT_EQ((*recs)[0].txg, 123u);
  EXPECT_EQ((*recs)[1].offset, 5u);
  EXPECT_EQ((*recs)[1].run, 1u);
  EXPECT_EQ((*recs)[2].offset, 9u);
  EXPECT_EQ((*recs)[2].run, 31u);
  EXPECT_EQ((*recs)[3].run, 32768u);
}

TEST(DtlMap, ARewriteReplacesAndAnEmptyMapMissesNothing) {
  MemSpaceMapStorage sm(3);
  ASSERT_UZFS_OK(WriteDtl(sm, std::vector<TxgSpan>{{10, 20}}, 30));
  ASSERT_UZFS_OK(WriteDtl(sm, std::vector<TxgSpan>{{12, 13}}, 31));
  EXPECT_EQ(*ReadDtl(sm), (std::vector<TxgSpan>{{12, 13}}));
  ASSERT_UZFS_OK(WriteDtl(sm, {}, 32));
  EXPECT_EQ(sm.Length(), 0u);
  EXPECT_TRUE(ReadDtl(sm)->empty());
  EXPECT_EQ(sm.ReadHeader()->alloc, 0);
}

TEST(DtlMap, FreeEntriesTakeTxgsBackOut) {
  SpaceMapEncoder enc(0, false);
  enc.Debug(SpaceMapType::kAlloc, 1, 50);
  ASSERT_UZFS_OK(enc.Entry(SpaceMapType::kAlloc, 10, 20));
  ASSERT_UZFS_OK(enc.Entry(SpaceMapType::kAlloc, 25, 10));  // overlaps: merged
  ASSERT_UZFS_OK(enc.Entry(SpaceMapType::kFree, 15, 5));
  auto spans = DecodeDtl(enc.words());
  ASSERT_UZFS_OK(spans.status());
  EXPECT_EQ(*spans, (std::vector<TxgSpan>{{10, 15}, {20, 35}}));
}

TEST(DtlMap, BadSpansAndContradictoryMapsAreRefused) {
  MemSpaceMapStorage sm(4);
  ASSERT_UZFS_OK(WriteDtl(sm, std::vector<TxgSpan>{{10, 20}}, 30));
  for (const std::vector<TxgSpan>& bad :
       {std::vector<TxgSpan>{{5, 5}}, std::vector<TxgSpan>{{9, 8}}, std::vector<TxgSpan>{{10, 20}, {15, 30}},
        std::vector<TxgSpan>{{40, 50}, {10, 20}}}) {
    EXPECT_EQ(WriteDtl(sm, bad, 31).code(), Code::kInvalidArgument);
  }
  EXPECT_EQ(*ReadDtl(sm), (std::vector<TxgSpan>{{10, 20}})) << "a refused write left the map as it was";
  SpaceMapEncoder enc(0, false);
  ASSERT_UZFS_OK(enc.Entry(SpaceMapType::kFree, 15, 5));
  EXPECT_EQ(DecodeDtl(enc.words()).status().code(), Code::kCorruption);
  const uint64_t cut_two_word = uint64_t{3} << 62;  // first word of a two-word entry, no second
  EXPECT_EQ(DecodeDtl(std::vector<uint64_t>{cut_two_word}).status().code(), Code::kCorruption);
}

}  // namespace
}  // namespace uzfs
