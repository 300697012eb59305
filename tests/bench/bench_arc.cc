// ARC throughput (cache/arc.h), 4 KiB blocks:
//   BM_ArcHit            lookups of cached blocks (random keys, every one a
//                        hit), 64 shards; at 1 and 2 threads
//   BM_ArcHitOneShard    the same with a single shard: what a global lock
//                        would cost (the contention the shards remove)
//   BM_ArcInsertEvict    miss + insert of new blocks into a full cache, so
//                        every insert evicts one (allocation, hashing,
//                        ghost bookkeeping); at 1 and 2 threads
//   BM_ArcReadZipf       Read() with a fill over a Zipf(0.9) key space of
//                        4x the cache: the realistic mix of hits and misses
// items_per_second is lookups (or inserts) per second over all threads.
// Allocators: run the binary with LD_PRELOAD=libmimalloc.so.2 or
// libjemalloc.so.2 to compare (docs/PERFORMANCE.md has the figures).
#include <benchmark/benchmark.h>

#include <atomic>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "cache/arc.h"

namespace {

using namespace uzfs;

constexpr uint64_t kBlock = 4096;
constexpr uint64_t kCached = 16384;  // 64 MiB of blocks

ArcKey Key(uint64_t i) { return ArcKey{1, 0, i * kBlock, 7}; }

ArcBlock Block() {
  ArcBlock b;
  b.phys.assign(kBlock, 0x5a);
  b.lsize = kBlock;
  return b;
}

std::unique_ptr<Arc> MakeFilled(unsigned shards) {
  ArcOptions o;
  o.c_max = 2 * kCached * kBlock;
  o.c_min = o.c_max / 4;
  o.shards = shards;
  auto arc = std::make_unique<Arc>(o);
  for (uint64_t k = 0; k < kCached; k++) ArcRef r = arc->Insert(Key(k), Block(), {});
  return arc;
}

std::unique_ptr<Arc> g_arc;

void HitLoop(benchmark::State& state, unsigned shards) {
  if (state.thread_index() == 0) g_arc = MakeFilled(shards);
  std::mt19937_64 rng(state.thread_index() + 1);
  uint64_t misses = 0;
  for (auto _ : state) {
    for (int i = 0; i < 64; i++) {
      ArcRef r = g_arc->Lookup(Key(rng() % kCached), {});
      misses += !r;
      benchmark::DoNotOptimize(r);
    }
  }
  state.SetItemsProcessed(state.iterations() * 64);
  state.counters["misses"] = static_cast<double>(misses);
  if (state.thread_index() == 0) g_arc.reset();
}

void BM_ArcHit(benchmark::State& state) { HitLoop(state, 64); }
void BM_ArcHitOneShard(benchmark::State& state) { HitLoop(state, 1); }

void BM_ArcInsertEvict(benchmark::State& state) {
  if (state.thread_index() == 0) {
    ArcOptions o;
    o.c_max = 4096 * kBlock;  // 16 MiB: full after the first round
    o.c_min = o.c_max / 4;
    g_arc = std::make_unique<Arc>(o);
  }
  uint64_t next = static_cast<uint64_t>(state.thread_index()) << 40;
  for (auto _ : state) {
    for (int i = 0; i < 64; i++) {
      const ArcKey k = Key(next++);
      if (!g_arc->Lookup(k, {})) ArcRef r = g_arc->Insert(k, Block(), {});
    }
  }
  state.SetItemsProcessed(state.iterations() * 64);
  if (state.thread_index() == 0) {
    state.counters["evict_skip"] = static_cast<double>(g_arc->Stats().evict_skip);
    g_arc.reset();
  }
}

void BM_ArcReadZipf(benchmark::State& state) {
  static std::vector<double> cdf;
  constexpr uint64_t kKeys = 4 * 4096;
  if (state.thread_index() == 0) {
    ArcOptions o;
    o.c_max = 4096 * kBlock;
    o.c_min = o.c_max / 4;
    g_arc = std::make_unique<Arc>(o);
    if (cdf.empty()) {
      double sum = 0;
      for (uint64_t k = 0; k < kKeys; k++) sum += 1.0 / std::pow(double(k + 1), 0.9);
      double acc = 0;
      for (uint64_t k = 0; k < kKeys; k++) {
        acc += 1.0 / std::pow(double(k + 1), 0.9) / sum;
        cdf.push_back(acc);
      }
    }
  }
  std::mt19937_64 rng(state.thread_index() + 11);
  std::uniform_real_distribution<double> u(0, 1);
  for (auto _ : state) {
    for (int i = 0; i < 64; i++) {
      const uint64_t k = static_cast<uint64_t>(std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin());
      auto r = g_arc->Read(Key(k), {}, []() -> Result<ArcBlock> { return Block(); });
      benchmark::DoNotOptimize(r);
    }
  }
  state.SetItemsProcessed(state.iterations() * 64);
  if (state.thread_index() == 0) {
    state.counters["hit_ratio"] = g_arc->Stats().HitRatio();
    g_arc.reset();
  }
}

BENCHMARK(BM_ArcHit)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_ArcHitOneShard)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_ArcInsertEvict)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_ArcReadZipf)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
