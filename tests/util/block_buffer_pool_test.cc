// BlockBufferPool: sizes, alignment, reuse of freed buffers, the resident
// limit, thread safety; and AlignedBytes' zero-fill contract over recycled
// buffers.
#include "zfs/util/block_buffer_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "zfs/util/aligned_bytes.h"

namespace uzfs {
namespace {

TEST(BlockBufferPoolTest, PooledSizes) {
  EXPECT_FALSE(BlockBufferPool::Pooled(0));
  EXPECT_FALSE(BlockBufferPool::Pooled(2 << 10));
  EXPECT_TRUE(BlockBufferPool::Pooled(4 << 10));
  EXPECT_TRUE(BlockBufferPool::Pooled(16 << 10));
  EXPECT_FALSE(BlockBufferPool::Pooled(24 << 10));
  EXPECT_TRUE(BlockBufferPool::Pooled(64 << 10));
  EXPECT_TRUE(BlockBufferPool::Pooled(128 << 10));
  EXPECT_FALSE(BlockBufferPool::Pooled((128 << 10) + 512));
  EXPECT_TRUE(BlockBufferPool::Pooled(16 << 20));
  EXPECT_FALSE(BlockBufferPool::Pooled(32 << 20));
}

TEST(BlockBufferPoolTest, AlignedDistinctAndReused) {
  BlockBufferPool pool(1 << 20);
  EXPECT_EQ(pool.Allocate(2048), nullptr);  // not pooled
  std::vector<void*> bufs;
  std::set<uintptr_t> seen;
  for (int i = 0; i < 40; i++) {  // more than one 2 MiB chunk
    void* p = pool.Allocate(128 << 10);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (128 << 10), 0u);
    std::memset(p, i, 128 << 10);
    EXPECT_TRUE(seen.insert(reinterpret_cast<uintptr_t>(p)).second);
    bufs.push_back(p);
  }
  for (int i = 0; i < 40; i++) EXPECT_EQ(static_cast<uint8_t*>(bufs[i])[(128 << 10) - 1], i);
  EXPECT_EQ(pool.stats().chunks, 3u);
  EXPECT_EQ(pool.stats().reused, 0u);
  // 1 MiB stays resident (8 buffers), the rest is released.
  for (void* p : bufs) pool.Free(p, 128 << 10);
  EXPECT_EQ(pool.stats().warm_free_bytes, 1u << 20);
  EXPECT_EQ(pool.stats().released, 32u);
  void* again = pool.Allocate(128 << 10);
  EXPECT_EQ(again, bufs[7]);  // the most recently kept
  EXPECT_EQ(pool.stats().reused, 1u);
  // Then the never-used rest of the last chunk (resident: it was prefaulted),
  // then the released buffers (zero: their pages were dropped).
  for (int i = 0; i < 7; i++) pool.Allocate(128 << 10);
  EXPECT_EQ(pool.stats().fresh_bytes, 1u << 20);
  for (int i = 0; i < 8; i++) EXPECT_FALSE(seen.count(reinterpret_cast<uintptr_t>(pool.Allocate(128 << 10))));
  EXPECT_EQ(pool.stats().fresh_bytes, 0u);
  void* cold = pool.Allocate(128 << 10);
  ASSERT_NE(cold, nullptr);
  EXPECT_TRUE(seen.count(reinterpret_cast<uintptr_t>(cold)));
  EXPECT_EQ(pool.stats().chunks, 3u);
  // A buffer larger than a chunk.
  void* big = pool.Allocate(8 << 20);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big) % (8 << 20), 0u);
  std::memset(big, 1, 8 << 20);
  pool.Free(big, 8 << 20);
}

// SetMaxWarm moves the limit for later frees: raised, freed buffers stay
// resident (reused without a page fault); lowered, later frees are
// released while what is already kept stays.
TEST(BlockBufferPoolTest, SetMaxWarmMovesTheLimitForLaterFrees) {
  BlockBufferPool pool(256 << 10);
  EXPECT_EQ(pool.max_warm(), 256u << 10);
  std::vector<void*> bufs;
  for (int i = 0; i < 8; i++) bufs.push_back(pool.Allocate(128 << 10));
  for (int i = 0; i < 4; i++) pool.Free(bufs[i], 128 << 10);
  EXPECT_EQ(pool.stats().warm_free_bytes, 256u << 10);
  EXPECT_EQ(pool.stats().released, 2u);
  pool.SetMaxWarm(1 << 20);
  EXPECT_EQ(pool.max_warm(), 1u << 20);
  for (int i = 4; i < 8; i++) pool.Free(bufs[i], 128 << 10);
  EXPECT_EQ(pool.stats().warm_free_bytes, 768u << 10);
  EXPECT_EQ(pool.stats().released, 2u);
  pool.SetMaxWarm(128 << 10);
  void* p = pool.Allocate(128 << 10);
  pool.Free(p, 128 << 10);  // over the lowered limit: released
  EXPECT_EQ(pool.stats().released, 3u);
  EXPECT_EQ(pool.stats().warm_free_bytes, 640u << 10);
}

// Resident memory an idle pool holds (freed buffers and the never-used rest
// of a prefaulted chunk) goes back to the system at the second idle call,
// and not while buffers are being handed out.
TEST(BlockBufferPoolTest, ReleaseIfIdleGivesBackOnlyWhenIdle) {
  BlockBufferPool pool(8 << 20);
  std::vector<void*> bufs;
  for (int i = 0; i < 20; i++) {
    void* p = pool.Allocate(128 << 10);
    ASSERT_NE(p, nullptr);
    std::memset(p, 0xAB, 128 << 10);
    bufs.push_back(p);
  }
  EXPECT_EQ(pool.ReleaseIfIdle(), 0u);  // buffers were handed out since the last look
  for (void* p : bufs) pool.Free(p, 128 << 10);
  const BlockBufferPool::Stats before = pool.stats();
  EXPECT_EQ(before.warm_free_bytes, 20u << 17);
  EXPECT_EQ(before.fresh_bytes + before.warm_free_bytes, before.mapped_bytes);
  EXPECT_EQ(pool.ReleaseIfIdle(), before.mapped_bytes);  // nothing handed out since
  EXPECT_EQ(pool.stats().warm_free_bytes, 0u);
  EXPECT_EQ(pool.stats().fresh_bytes, 0u);
  EXPECT_EQ(pool.ReleaseIfIdle(), 0u);  // nothing left resident
  // The addresses are handed out again, their pages dropped (zeros).
  void* again = pool.Allocate(128 << 10);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(static_cast<uint8_t*>(again)[100], 0);
  EXPECT_EQ(pool.stats().chunks, 2u);
  // A busy pool keeps its warm buffers.
  pool.Free(again, 128 << 10);
  EXPECT_EQ(pool.ReleaseIfIdle(), 0u);
  EXPECT_EQ(pool.stats().warm_free_bytes, 128u << 10);
}

TEST(BlockBufferPoolTest, ThreadsNeverShareABuffer) {
  BlockBufferPool pool(4 << 20);
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&pool, &bad, t] {
      for (int i = 0; i < 2000; i++) {
        const size_t n = size_t{64 << 10} << (i % 3);
        auto* p = static_cast<uint8_t*>(pool.Allocate(n));
        if (p == nullptr) {
          bad++;
          continue;
        }
        std::memset(p, t, n);
        std::this_thread::yield();
        if (p[0] != t || p[n - 1] != t) bad++;
        pool.Free(p, n);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(BlockBufferPoolTest, AlignedBytesZeroFillsRecycledBuffers) {
  // A buffer full of old bytes goes back to the pool; AlignedBytes(n, 0)
  // must still hand out zeros (the stale bytes must never reach a file).
  for (int round = 0; round < 4; round++) {
    { AlignedBytes dirty(128 << 10, 0xab); }
    AlignedBytes zeroed(128 << 10, 0);
    for (size_t i = 0; i < zeroed.size(); i += 511) ASSERT_EQ(zeroed[i], 0) << i;
    ASSERT_EQ(zeroed.back(), 0);
    AlignedBytes resized;
    resized.resize(128 << 10, 0);
    ASSERT_EQ(resized[4097], 0);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(resized.data()) % 4096, 0u);
  }
}

}  // namespace
}  // namespace uzfs
