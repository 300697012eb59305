// SyncedBlockCache: hits and misses, taking a buffer over only when the
// cache holds the last reference, dropping ranges of one object, LRU
// eviction to the byte limit (what Trim hands back), and the counters.
#include "zfs/dmu/synced_block_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace uzfs {
namespace {

std::shared_ptr<AlignedBytes> Buf(size_t n, uint8_t fill) { return std::make_shared<AlignedBytes>(n, fill); }

BlockPtr Bp(uint64_t birth) {
  BlockPtr bp;
  bp.birth = birth;
  return bp;
}

TEST(SyncedBlockCache, CopyOutHitsOnlyWithTheSameSize) {
  SyncedBlockCache c(1 << 20);
  c.Put(5, 1, Buf(512, 0xab), Bp(7));
  std::vector<uint8_t> out(512, 0);
  EXPECT_TRUE(c.CopyOut(5, 1, out));
  EXPECT_EQ(out[0], 0xab);
  EXPECT_EQ(out[511], 0xab);
  std::vector<uint8_t> other(1024, 0);
  EXPECT_FALSE(c.CopyOut(5, 1, other));  // size differs
  EXPECT_FALSE(c.CopyOut(5, 2, out));    // no entry
  EXPECT_FALSE(c.CopyOut(6, 1, out));    // another object
  EXPECT_EQ(c.stats().hits, 1u);
  EXPECT_EQ(c.stats().misses, 3u);
  EXPECT_EQ(c.stats().blocks, 1u);
  EXPECT_EQ(c.stats().bytes, 512u);
}

TEST(SyncedBlockCache, TakeNeedsTheLastReferenceAndTheSize) {
  SyncedBlockCache c(1 << 20);
  auto b = Buf(512, 1);
  c.Put(1, 0, b, Bp(1));
  EXPECT_EQ(c.Take(1, 0, 512), nullptr);  // b still holds it
  EXPECT_TRUE(c.Contains(1, 0));
  const AlignedBytes* raw = b.get();
  b.reset();
  EXPECT_EQ(c.Take(1, 0, 1024), nullptr);  // size differs
  EXPECT_EQ(c.stats().hits, 0u);
  auto t = c.Take(1, 0, 512);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t.get(), raw);  // the buffer itself, not a copy
  EXPECT_FALSE(c.Contains(1, 0));
  EXPECT_EQ(c.stats().hits, 1u);
  EXPECT_EQ(c.stats().blocks, 0u);
  EXPECT_EQ(c.stats().bytes, 0u);
  EXPECT_EQ(c.Take(1, 0, 512), nullptr);
}

TEST(SyncedBlockCache, PutReplacesAndCountsBytesOnce) {
  SyncedBlockCache c(1 << 20);
  c.Put(1, 3, Buf(512, 1), Bp(1));
  c.Put(1, 3, Buf(1024, 2), Bp(2));
  EXPECT_EQ(c.stats().blocks, 1u);
  EXPECT_EQ(c.stats().bytes, 1024u);
  std::vector<uint8_t> out(1024);
  ASSERT_TRUE(c.CopyOut(1, 3, out));
  EXPECT_EQ(out[0], 2);
}

TEST(SyncedBlockCache, DropRemovesOneObjectsRange) {
  SyncedBlockCache c(1 << 20);
  for (uint64_t b = 0; b < 6; b++) c.Put(1, b, Buf(512, 0), Bp(1));
  c.Put(2, 0, Buf(512, 0), Bp(1));
  c.Drop(1, 2, 4);
  EXPECT_TRUE(c.Contains(1, 1));
  EXPECT_FALSE(c.Contains(1, 2));
  EXPECT_FALSE(c.Contains(1, 3));
  EXPECT_TRUE(c.Contains(1, 4));
  c.Drop(1, 0, UINT64_MAX);
  for (uint64_t b = 0; b < 6; b++) EXPECT_FALSE(c.Contains(1, b));
  EXPECT_TRUE(c.Contains(2, 0));  // another object keeps its entries
  EXPECT_EQ(c.stats().blocks, 1u);
  EXPECT_EQ(c.stats().bytes, 512u);
}

TEST(SyncedBlockCache, TrimEvictsLeastRecentlyUsedFirst) {
  SyncedBlockCache c(3 * 512);
  c.Put(1, 0, Buf(512, 0), Bp(10));
  c.Put(1, 1, Buf(512, 0), Bp(11));
  c.Put(1, 2, Buf(512, 0), Bp(12));
  std::vector<uint8_t> out(512);
  ASSERT_TRUE(c.CopyOut(1, 0, out));  // block 0 becomes the most recent
  c.Put(1, 3, Buf(512, 0), Bp(13));
  SyncedBlockCache::Evicted ev;
  c.Trim(&ev);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].first.birth, 11u);  // block 1: least recently used
  ASSERT_NE(ev[0].second, nullptr);
  EXPECT_FALSE(c.Contains(1, 1));
  EXPECT_TRUE(c.Contains(1, 0));
  EXPECT_EQ(c.stats().bytes, 3u * 512);
  c.Trim(&ev);  // within the limit: nothing more
  EXPECT_EQ(ev.size(), 1u);
}

TEST(SyncedBlockCache, SetLimitZeroEmptiesInOrder) {
  SyncedBlockCache c(1 << 20);
  c.Put(3, 0, Buf(512, 0), Bp(1));
  c.Put(2, 0, Buf(512, 0), Bp(2));
  SyncedBlockCache::Evicted ev;
  c.SetLimit(0, &ev);
  EXPECT_EQ(c.limit(), 0u);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].first.birth, 1u);
  EXPECT_EQ(ev[1].first.birth, 2u);
  EXPECT_EQ(c.stats().blocks, 0u);
  EXPECT_EQ(c.stats().bytes, 0u);
}

}  // namespace
}  // namespace uzfs
