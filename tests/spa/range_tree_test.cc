// RangeTree against a bitmap model: random adds/removes (strict and
// clipping), with every query compared to the model after each step.
#include "zfs/spa/range_tree.h"

#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

// Bitmap model over [0, N).
struct Model {
  explicit Model(size_t n) : bits(n, false) {}
  std::vector<bool> bits;
  bool All(uint64_t s, uint64_t n, bool v) const {
    for (uint64_t i = s; i < s + n; i++) if (bits[i] != v) return false;
    return true;
  }
  void Set(uint64_t s, uint64_t n, bool v) { for (uint64_t i = s; i < s + n; i++) bits[i] = v; }
  uint64_t Count() const { uint64_t c = 0; for (bool b : bits) c += b; return c; }
  std::vector<Segment> Segs() const {
    std::vector<Segment> out;
    for (uint64_t i = 0; i < bits.size();) {
      if (!bits[i]) { i++; continue; }
      uint64_t j = i;
      while (j < bits.size() && bits[j]) j++;
      out.push_back({i, j});
      i = j;
    }
    return out;
  }
};

void ExpectSame(const RangeTree& t, const Model& m) {
  std::vector<Segment> got;
  for (const auto& [s, e] : t.segments()) got.push_back({s, e});
  const auto want = m.Segs();
  ASSERT_EQ(got, want);
  ASSERT_EQ(t.space(), m.Count());
  uint64_t largest = 0;
  for (const auto& s : want) largest = std::max(largest, s.size());
  ASSERT_EQ(t.largest_size(), largest);
}

TEST(RangeTreeTest, AddMergesRemoveSplits) {
  RangeTree t;
  ASSERT_UZFS_OK(t.Add(0, 10));
  ASSERT_UZFS_OK(t.Add(20, 10));
  ASSERT_UZFS_OK(t.Add(10, 10));  // bridges both
  EXPECT_EQ(t.num_segments(), 1u);
  EXPECT_EQ(t.space(), 30u);
  ASSERT_UZFS_OK(t.Remove(5, 10));
  EXPECT_EQ(t.num_segments(), 2u);
  EXPECT_TRUE(t.Contains(0, 5));
  EXPECT_FALSE(t.Contains(0, 6));
  EXPECT_TRUE(t.Intersects(4, 2));
  EXPECT_FALSE(t.Intersects(5, 10));
  EXPECT_EQ(t.Add(14, 2).code(), Code::kInvalidArgument);  // overlaps [15,30)
  EXPECT_EQ(t.Remove(4, 2).code(), Code::kInvalidArgument);
  EXPECT_EQ(t.space(), 20u);  // failed calls changed nothing
  EXPECT_EQ(t.Add(UINT64_MAX - 1, 4).code(), Code::kInvalidArgument);
}

TEST(RangeTreeTest, FitQueries) {
  RangeTree t;
  ASSERT_UZFS_OK(t.Add(0, 4));
  ASSERT_UZFS_OK(t.Add(10, 8));
  ASSERT_UZFS_OK(t.Add(30, 6));
  ASSERT_UZFS_OK(t.Add(50, 8));
  EXPECT_EQ(t.FirstFit(0, 5), 10u);
  EXPECT_EQ(t.FirstFit(12, 5), 12u);   // inside a segment with room
  EXPECT_EQ(t.FirstFit(14, 5), 30u);   // [14,18) too short
  EXPECT_EQ(t.FirstFit(31, 7), 50u);
  EXPECT_EQ(t.FirstFit(51, 8), std::nullopt);
  EXPECT_EQ(t.FirstFit(19, 8, /*max_scan=*/1), std::nullopt);  // looked at [30,36) only
  EXPECT_EQ(t.FirstFit(19, 8, /*max_scan=*/2), 50u);
  EXPECT_EQ(t.BestFit(5), 30u);
  EXPECT_EQ(t.BestFit(8), 10u);        // lowest address among equals
  EXPECT_EQ(t.BestFit(9), std::nullopt);
  EXPECT_EQ(t.Largest(), (Segment{10, 18}));
}

TEST(RangeTreeTest, RandomAgainstBitmap) {
  constexpr uint64_t kN = 4096;
  std::mt19937_64 rng(42);
  RangeTree t;
  Model m(kN);
  for (int step = 0; step < 20000; step++) {
    const uint64_t s = rng() % kN;
    const uint64_t n = 1 + rng() % std::min<uint64_t>(64, kN - s);
    switch (rng() % 6) {
      case 0:
      case 1: {
        const Status st = t.Add(s, n);
        ASSERT_EQ(st.ok(), m.All(s, n, false)) << step;
        if (st.ok()) m.Set(s, n, true);
        break;
      }
      case 2: {
        const Status st = t.Remove(s, n);
        ASSERT_EQ(st.ok(), m.All(s, n, true)) << step;
        if (st.ok()) m.Set(s, n, false);
        break;
      }
      case 3: {
        uint64_t absent = 0;
        for (uint64_t i = s; i < s + n; i++) absent += !m.bits[i];
        ASSERT_EQ(t.AddOverlapping(s, n), absent);
        m.Set(s, n, true);
        break;
      }
      case 4: {
        uint64_t present = 0;
        for (uint64_t i = s; i < s + n; i++) present += m.bits[i];
        ASSERT_EQ(t.RemoveOverlapping(s, n), present);
        m.Set(s, n, false);
        break;
      }
      case 5: {
        ASSERT_EQ(t.Contains(s, n), m.All(s, n, true));
        bool any = false;
        for (uint64_t i = s; i < s + n; i++) any |= m.bits[i];
        ASSERT_EQ(t.Intersects(s, n), any);
        // FirstFit: the model's lowest o >= s with n set bits from o.
        std::optional<uint64_t> want;
        for (uint64_t o = s; o + n <= kN && !want; o++) {
          if (m.All(o, n, true)) want = o;
        }
        ASSERT_EQ(t.FirstFit(s, n), want) << step;
        std::optional<uint64_t> best;
        uint64_t best_len = UINT64_MAX;
        for (const auto& seg : m.Segs()) {
          if (seg.size() >= n && seg.size() < best_len) { best = seg.start; best_len = seg.size(); }
        }
        ASSERT_EQ(t.BestFit(n), best);
        break;
      }
    }
    if (step % 97 == 0) ExpectSame(t, m);
  }
  ExpectSame(t, m);
}

TEST(RangeTreeTest, MoveToIsAllOrNothing) {
  RangeTree a, b;
  ASSERT_UZFS_OK(a.Add(0, 10));
  ASSERT_UZFS_OK(a.Add(20, 10));
  ASSERT_UZFS_OK(b.Add(25, 1));
  EXPECT_FALSE(a.MoveTo(&b).ok());
  EXPECT_EQ(a.space(), 20u);
  EXPECT_EQ(b.space(), 1u);
  ASSERT_UZFS_OK(b.Remove(25, 1));
  ASSERT_UZFS_OK(a.MoveTo(&b));
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(b.space(), 20u);
}

TEST(RangeTreeTest, ManySegmentsStayFast) {
  // 10^6 segments: every other 8-byte unit free, then fits and removes.
  RangeTree t;
  constexpr uint64_t kSegs = 1000000;
  for (uint64_t i = 0; i < kSegs; i++) ASSERT_TRUE(t.Add(i * 16, 8).ok());
  EXPECT_EQ(t.num_segments(), kSegs);
  ASSERT_UZFS_OK(t.Add(kSegs * 16 + 100, 4096));
  EXPECT_EQ(t.FirstFit(0, 16, 64), std::nullopt);  // bounded scan gives up
  EXPECT_EQ(t.BestFit(16), kSegs * 16 + 100);
  for (uint64_t i = 0; i < kSegs; i += 2) ASSERT_TRUE(t.Remove(i * 16, 8).ok());
  EXPECT_EQ(t.num_segments(), kSegs / 2 + 1);
}

}  // namespace
}  // namespace uzfs
