// ARC policy on synthetic traces, against a plain LRU of the same size
// (cache/lru_sim.h) and against the ARC without MFU admission (ZFS's rules
// alone). Each test prints the three hit ratios; docs/PERFORMANCE.md
// "ARC policy (hit ratios)" records them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cache/arc.h"
#include "cache/lru_sim.h"
#include "tests/cache/arc_test_util.h"

namespace uzfs {
namespace {

constexpr uint64_t kBlock = 1024;
constexpr uint64_t kBlocks = 1024;  // the cache holds this many blocks

ArcOptions Opts(bool admission) {
  ArcOptions o = arctest::SizedArc(kBlock * kBlocks, kBlock * kBlocks / 4);
  o.meta_limit = o.c_max;
  o.mfu_admission = admission;
  return o;
}

ArcKey Key(uint64_t i) { return ArcKey{7, 0, i * kBlock, 100}; }

uint8_t Tag(uint64_t i) { return static_cast<uint8_t>(i * 131 + 7); }

ArcBlock Block(uint64_t i) {
  ArcBlock b;
  b.phys.assign(kBlock, Tag(i));
  b.lsize = kBlock;
  return b;
}

// One access through the ARC the way a reader uses it: a hit, or a miss
// followed by an insert. Checks the bytes of a hit.
bool ArcAccess(Arc& arc, uint64_t k) {
  ArcRef r = arc.Lookup(Key(k), {});
  if (r) {
    EXPECT_EQ(r.phys().size(), kBlock);
    EXPECT_EQ(r.phys()[0], Tag(k));
    return true;
  }
  ArcRef ins = arc.Insert(Key(k), Block(k), {});
  EXPECT_TRUE(ins);
  return false;
}

struct Ratios {
  double arc = 0, arc_plain = 0, lru = 0;
};

// Runs `trace` through an ARC (admission on and off) and an LRU of the
// same size; ratios count the accesses in [from, trace.size()) only.
Ratios RunTrace(const std::string& name, const std::vector<uint64_t>& trace, size_t from) {
  Ratios r;
  for (int pass = 0; pass < 2; pass++) {
    Arc arc(Opts(pass == 0));
    uint64_t hits = 0, n = 0;
    for (size_t i = 0; i < trace.size(); i++) {
      const bool hit = ArcAccess(arc, trace[i]);
      if (i >= from) {
        hits += hit;
        n++;
      }
    }
    EXPECT_LE(arc.Size(), arc.Target());
    (pass == 0 ? r.arc : r.arc_plain) = n ? double(hits) / double(n) : 0;
  }
  LruSim lru(kBlock * kBlocks);
  uint64_t hits = 0, n = 0;
  for (size_t i = 0; i < trace.size(); i++) {
    const bool hit = lru.Access(trace[i], kBlock);
    if (i >= from) {
      hits += hit;
      n++;
    }
  }
  r.lru = n ? double(hits) / double(n) : 0;
  std::printf("[policy] %-34s ARC %.3f  ARC-without-admission %.3f  LRU %.3f\n", name.c_str(), r.arc,
              r.arc_plain, r.lru);
  return r;
}

TEST(ArcPolicyTest, LoopSlightlyLargerThanCacheKeepsHitting) {
  const uint64_t w = kBlocks + kBlocks / 10;  // 1.1x the cache
  std::vector<uint64_t> trace;
  for (int pass = 0; pass < 20; pass++)
    for (uint64_t k = 0; k < w; k++) trace.push_back(k);
  Ratios r = RunTrace("loop 1.1x cache, 20 passes", trace, 4 * w);
  EXPECT_GE(r.arc, 0.75);
  EXPECT_LE(r.lru, 0.01);
}

TEST(ArcPolicyTest, OneTimeScanDoesNotFlushHotSet) {
  const uint64_t hot = kBlocks / 2;
  std::vector<uint64_t> trace;
  for (int pass = 0; pass < 5; pass++)
    for (uint64_t k = 0; k < hot; k++) trace.push_back(k);
  const size_t from = trace.size();
  // A scan of 10x the cache, with a hot access after every 4 scan blocks.
  uint64_t h = 0;
  for (uint64_t s = 0; s < 10 * kBlocks; s++) {
    trace.push_back(1000000 + s);
    if (s % 4 == 3) trace.push_back(h++ % hot);
  }
  for (uint64_t k = 0; k < hot; k++) trace.push_back(k);
  // Only the hot accesses are measured.
  Ratios all = RunTrace("scan 10x cache + hot set 0.5x (all)", trace, from);
  (void)all;

  double hot_ratio[2] = {0, 0};
  double lru_hot = 0;
  for (int pass = 0; pass < 2; pass++) {
    Arc arc(Opts(pass == 0));
    LruSim lru(kBlock * kBlocks);
    uint64_t ah = 0, lh = 0, n = 0;
    for (size_t i = 0; i < trace.size(); i++) {
      const bool a = ArcAccess(arc, trace[i]);
      const bool l = lru.Access(trace[i], kBlock);
      if (i >= from && trace[i] < hot) {
        ah += a;
        lh += l;
        n++;
      }
    }
    hot_ratio[pass] = double(ah) / double(n);
    lru_hot = double(lh) / double(n);
    int resident = 0;
    for (uint64_t k = 0; k < hot; k++) resident += arc.StateOf(Key(k)) == "mfu";
    EXPECT_GE(resident, static_cast<int>(hot * 95 / 100)) << "admission " << (pass == 0);
  }
  std::printf("[policy] %-34s ARC %.3f  ARC-without-admission %.3f  LRU %.3f\n", "scan 10x: hot-set accesses only",
              hot_ratio[0], hot_ratio[1], lru_hot);
  EXPECT_GE(hot_ratio[0], 0.95);
  EXPECT_GE(hot_ratio[1], 0.95);  // ZFS's rules alone are scan-resistant too
  EXPECT_LE(lru_hot, 0.1);        // LRU only hits the few hot blocks touched last in the scan
}

TEST(ArcPolicyTest, ShiftingWorkingSetIsAdoptedAfterAFewPasses) {
  const uint64_t set = kBlocks * 6 / 10;
  std::vector<uint64_t> trace;
  for (int pass = 0; pass < 5; pass++)
    for (uint64_t k = 0; k < set; k++) trace.push_back(k);
  for (int pass = 0; pass < 30; pass++)
    for (uint64_t k = 0; k < set; k++) trace.push_back(500000 + k);
  Ratios r = RunTrace("working set A then B (0.6x each)", trace, trace.size() - 10 * set);
  EXPECT_GE(r.arc, 0.95);
  EXPECT_GE(r.lru, 0.95);
}

TEST(ArcPolicyTest, SkewedRandomIsNoWorseThanLru) {
  // Zipf(0.9) over 4x the cache.
  const uint64_t keys = 4 * kBlocks;
  std::vector<double> cdf(keys);
  double sum = 0;
  for (uint64_t k = 0; k < keys; k++) sum += 1.0 / std::pow(double(k + 1), 0.9);
  double acc = 0;
  for (uint64_t k = 0; k < keys; k++) {
    acc += 1.0 / std::pow(double(k + 1), 0.9) / sum;
    cdf[k] = acc;
  }
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<uint64_t> trace;
  for (int i = 0; i < 60000; i++) {
    const uint64_t k = static_cast<uint64_t>(std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin());
    trace.push_back((k * 0x9e3779b97f4a7c15ull) >> 40);  // scatter ranks over keys
  }
  Ratios r = RunTrace("zipf 0.9 over 4x cache", trace, 20000);
  EXPECT_GE(r.arc, r.lru - 0.02);
}

TEST(ArcPolicyTest, LoopMixedWithScan) {
  // A hot loop of 0.8x the cache interleaved 1:1 with a long scan.
  const uint64_t loop = kBlocks * 8 / 10;
  std::vector<uint64_t> trace;
  uint64_t s = 0;
  for (int pass = 0; pass < 12; pass++) {
    for (uint64_t k = 0; k < loop; k++) {
      trace.push_back(k);
      trace.push_back(2000000 + s++);
    }
  }
  Ratios r = RunTrace("loop 0.8x + 1:1 scan", trace, trace.size() / 3);
  EXPECT_GE(r.arc, 0.4);  // at most half the accesses can hit
  EXPECT_LE(r.lru, 0.01);
}

}  // namespace
}  // namespace uzfs
