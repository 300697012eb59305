// Stream prefetch: forward, backward, strided and interleaved streams are
// found and read ahead with a growing, capped distance; random reads
// start nothing.
#include "cache/prefetch.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace uzfs {
namespace {

PrefetchOptions Opts() {
  PrefetchOptions o;
  o.max_streams = 4;
  o.min_distance = 2;
  o.max_distance = 16;
  o.max_stride = 64;
  return o;
}

TEST(PrefetchTest, ForwardStreamGrowsToTheCap) {
  StreamPrefetcher pf(Opts());
  EXPECT_TRUE(pf.OnRead(100).empty());
  // The second read starts a stream: two blocks ahead.
  EXPECT_EQ(pf.OnRead(101), (std::vector<uint64_t>{102, 103}));
  // Each hit doubles the distance: 4, 8, 16 (cap).
  EXPECT_EQ(pf.OnRead(102), (std::vector<uint64_t>{104, 105, 106}));
  auto r = pf.OnRead(103);
  EXPECT_EQ(r.front(), 107u);
  EXPECT_EQ(r.back(), 111u);
  std::set<uint64_t> issued(r.begin(), r.end());
  uint64_t max_ahead = 0;
  for (uint64_t b = 104; b < 400; b++) {
    for (uint64_t x : pf.OnRead(b)) {
      EXPECT_TRUE(issued.insert(x).second) << "block " << x << " issued twice";
      EXPECT_GT(x, b);
      max_ahead = std::max(max_ahead, x - b);
    }
  }
  EXPECT_EQ(max_ahead, 16u);  // the cap
  // Everything up to the reader plus the distance was issued, nothing skipped.
  for (uint64_t b = 107; b <= 399 + 16; b++) EXPECT_TRUE(issued.count(b)) << b;
  PrefetchStats s = pf.stats();
  EXPECT_EQ(s.streams_created, 1u);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.hits, 399u - 101u);
}

TEST(PrefetchTest, BackwardStream) {
  StreamPrefetcher pf(Opts());
  EXPECT_TRUE(pf.OnRead(1000).empty());
  EXPECT_EQ(pf.OnRead(999), (std::vector<uint64_t>{998, 997}));
  EXPECT_EQ(pf.OnRead(998), (std::vector<uint64_t>{996, 995, 994}));
  // Runs into block 0 and stops there.
  std::set<uint64_t> issued;
  for (int64_t b = 997; b >= 0; b--) {
    for (uint64_t x : pf.OnRead(static_cast<uint64_t>(b))) {
      EXPECT_LT(x, static_cast<uint64_t>(b));
      issued.insert(x);
    }
  }
  EXPECT_TRUE(issued.count(0));
  EXPECT_EQ(pf.stats().streams_created, 1u);
}

TEST(PrefetchTest, StridedStream) {
  StreamPrefetcher pf(Opts());
  EXPECT_TRUE(pf.OnRead(10).empty());
  EXPECT_TRUE(pf.OnRead(18).empty());  // one step is not a stride yet
  EXPECT_EQ(pf.OnRead(26), (std::vector<uint64_t>{34, 42}));
  EXPECT_EQ(pf.OnRead(34), (std::vector<uint64_t>{50, 58, 66}));  // distance 4 strides
  auto r = pf.OnRead(42);
  EXPECT_EQ(r, (std::vector<uint64_t>{74, 82, 90, 98, 106}));  // 8 strides
  // Backward strides too.
  StreamPrefetcher back(Opts());
  back.OnRead(500);
  back.OnRead(495);
  EXPECT_EQ(back.OnRead(490), (std::vector<uint64_t>{485, 480}));
}

TEST(PrefetchTest, InterleavedStreams) {
  StreamPrefetcher pf(Opts());
  // Three readers of one file: forward at 0, forward at 5000, backward at 9000.
  std::set<uint64_t> issued;
  uint64_t a = 0, b = 5000, c = 9000;
  for (int i = 0; i < 100; i++) {
    for (uint64_t x : pf.OnRead(a++)) issued.insert(x);
    for (uint64_t x : pf.OnRead(b++)) issued.insert(x);
    for (uint64_t x : pf.OnRead(c--)) issued.insert(x);
  }
  EXPECT_EQ(pf.stream_count(), 3u);
  EXPECT_EQ(pf.stats().streams_created, 3u);
  EXPECT_GT(pf.stats().hits, 290u);
  EXPECT_TRUE(issued.count(a + 5));
  EXPECT_TRUE(issued.count(b + 5));
  EXPECT_TRUE(issued.count(c - 5));
}

TEST(PrefetchTest, StreamsAreCappedAndReplacedLru) {
  StreamPrefetcher pf(Opts());  // 4 streams
  for (uint64_t s = 0; s < 6; s++) {
    pf.OnRead(s * 10000);
    pf.OnRead(s * 10000 + 1);
  }
  EXPECT_EQ(pf.stream_count(), 4u);
  EXPECT_EQ(pf.stats().streams_created, 6u);
  EXPECT_EQ(pf.stats().streams_replaced, 2u);
  // The newest streams survive.
  EXPECT_FALSE(pf.OnRead(50002).empty());
}

TEST(PrefetchTest, RandomReadsPrefetchNothing) {
  StreamPrefetcher pf(Opts());
  std::mt19937_64 rng(3);
  uint64_t issued = 0;
  for (int i = 0; i < 5000; i++) issued += pf.OnRead(rng() % 10000000).size();
  EXPECT_EQ(issued, 0u);
  EXPECT_EQ(pf.stats().streams_created, 0u);
}

TEST(PrefetchTest, EndOfFileAndMultiBlockReads) {
  StreamPrefetcher pf(Opts());
  pf.OnRead(0, 4, 20);
  auto r = pf.OnRead(4, 4, 20);  // continues: reads of 4 blocks
  EXPECT_EQ(r, (std::vector<uint64_t>{8, 9}));
  std::set<uint64_t> issued(r.begin(), r.end());
  for (uint64_t b = 8; b < 20; b += 4) {
    for (uint64_t x : pf.OnRead(b, 4, 20)) {
      EXPECT_LT(x, 20u);
      issued.insert(x);
    }
  }
  EXPECT_TRUE(issued.count(19));
}

// A stream grown by a sequential pass (4K records: a distance of thousands
// of blocks) must not take the random reads that follow for continuations:
// the L2ARC bench saw ~14 read-aheads per random 4K read that way.
TEST(PrefetchTest, RandomReadsAfterASequentialPassIssueAlmostNothing) {
  const uint64_t kBlocks = 65536;  // a 256 MiB file of 4K blocks
  StreamPrefetcher pf(PrefetchOptionsForBlockSize(4096, 4 << 20, 64 << 20, 8, 64));
  for (uint64_t b = 0; b < 8192; b += 32) pf.OnRead(b, 32, kBlocks);  // 128K reads
  std::mt19937_64 rng(5);
  uint64_t issued = 0;
  const int kReads = 20000;
  for (int i = 0; i < kReads; i++) issued += pf.OnRead(rng() % kBlocks, 1, kBlocks).size();
  EXPECT_LT(static_cast<double>(issued) / kReads, 0.05) << issued << " blocks read ahead";
}

// Requests reordered on the way (FUSE's async reads) still continue a stream.
TEST(PrefetchTest, SlightlyReorderedReadsKeepTheStream) {
  StreamPrefetcher pf(Opts());
  pf.OnRead(0, 1, 1000);
  pf.OnRead(1, 1, 1000);
  const uint64_t hits = pf.stats().hits;
  pf.OnRead(3, 1, 1000);  // 2 arrives after 3
  pf.OnRead(2, 1, 1000);
  pf.OnRead(4, 1, 1000);
  EXPECT_GE(pf.stats().hits, hits + 2);
  EXPECT_EQ(pf.stream_count(), 1u);
}

TEST(PrefetchTest, OptionsFromByteDistances) {
  PrefetchOptions o = PrefetchOptionsForBlockSize(128 * 1024, 4 << 20, 64 << 20, 8, 64);
  EXPECT_EQ(o.min_distance, 32u);
  EXPECT_EQ(o.max_distance, 512u);
  EXPECT_EQ(o.max_streams, 8u);
}

}  // namespace
}  // namespace uzfs
