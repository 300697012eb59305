// FreqSketch (cache/freq_sketch.h): estimates only over-count, frequent keys
// stand out, counts fade at each halving, and the table grows from a small
// start to its cap without changing any estimate.
#include "cache/freq_sketch.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace uzfs {
namespace {

// Well-mixed keys, as the ARC's are (ArcKey::Hash).
uint64_t Key(uint64_t i) {
  uint64_t x = i + 0x632be59bd9b4e019ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

TEST(FreqSketchTest, CountsAndNeverUnderCounts) {
  FreqSketch s(1024);
  for (int r = 0; r < 5; r++) s.Increment(Key(1));
  s.Increment(Key(2));
  EXPECT_GE(s.Estimate(Key(1)), 5u);
  EXPECT_GE(s.Estimate(Key(2)), 1u);
  EXPECT_GT(s.Estimate(Key(1)), s.Estimate(Key(3)));
  for (int r = 0; r < 40; r++) s.Increment(Key(1));
  EXPECT_EQ(s.Estimate(Key(1)), 15u);  // 4-bit counters saturate
}

TEST(FreqSketchTest, StartsSmallAndGrowsToItsCapKeepingEstimates) {
  FreqSketch s(4096);
  EXPECT_EQ(s.words(), FreqSketch::kStartWords);
  EXPECT_EQ(s.max_words(), 4096u);
  // Fill just short of the first halving: 10 x 64 increments that add.
  uint64_t i = 0;
  std::vector<uint32_t> before;
  for (; i < 600; i++) s.Increment(Key(i % 50));
  for (uint64_t k = 0; k < 50; k++) before.push_back(s.Estimate(Key(k)));
  EXPECT_EQ(s.words(), FreqSketch::kStartWords);
  // Past it: the table doubles, copied, then every counter is halved.
  while (s.words() == FreqSketch::kStartWords) s.Increment(Key(1000 + i++));
  EXPECT_EQ(s.words(), 2 * FreqSketch::kStartWords);
  for (uint64_t k = 0; k < 50; k++) EXPECT_GE(s.Estimate(Key(k)) + 1, before[k] / 2) << k;
  // Many distinct keys: it keeps growing, never past its cap.
  for (uint64_t n = 0; n < 200000; n++) s.Increment(Key(5000 + n));
  EXPECT_EQ(s.words(), 4096u);
  // Resize starts small again.
  s.Resize(256);
  EXPECT_EQ(s.words(), FreqSketch::kStartWords);
  EXPECT_EQ(s.Estimate(Key(1)), 0u);
}

// The doubling alone keeps every estimate: compare a sketch that grew with
// one that would read the same table through the old mask.
TEST(FreqSketchTest, DoublingChangesNoEstimate) {
  FreqSketch a(128), b(64);
  uint64_t i = 0;
  // Identical histories until just before the first halving.
  for (; i < 639; i++) {
    a.Increment(Key(i % 97));
    b.Increment(Key(i % 97));
  }
  // The 640th increment: a doubles then halves, b only halves.
  a.Increment(Key(7));
  b.Increment(Key(7));
  ASSERT_EQ(a.words(), 128u);
  ASSERT_EQ(b.words(), 64u);
  for (uint64_t k = 0; k < 2000; k++) EXPECT_EQ(a.Estimate(Key(k)), b.Estimate(Key(k))) << k;
}

}  // namespace
}  // namespace uzfs
