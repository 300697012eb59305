// ZAP write side on the in-memory object (MemZapObject), directory-like:
// random names of 6 to 24 bytes, u64 values (object numbers).
//   BM_ZapInsert/<n>  create an empty ZAP and add n names (micro ZAP up to
//                     2047 entries, as ZFS grows it, then fat with splits)
//   BM_ZapLookup/<n>  look up each of the n names of a built ZAP, in random
//                     order
// The counter per_entry is the cost of one insert or lookup; the claim
// under test is that it stays flat from 1,000 to 1,000,000 entries (leaf
// splits and pointer-table doubling are amortized, lookups are one pointer
// table entry and one leaf chain). blocks_per_entry counts the blocks each
// operation asks the object for: the work, free of cache effects. Past
// ~10^5 entries the ZAP (16 KiB leaves, ~110 MB at 10^6) outgrows the CPU
// caches, and random lookups pay DRAM and TLB misses on the leaf; that, not
// more work, is what time per entry shows at 10^6.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "zfs/zap/zap_writer.h"

namespace {

using namespace uzfs;

const std::vector<std::string>& Names(size_t n) {
  static std::map<size_t, std::vector<std::string>> cache;
  auto& v = cache[n];
  if (!v.empty()) return v;
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
  std::mt19937_64 rng(n);
  v.reserve(n);
  for (size_t i = 0; i < n; i++) {
    std::string s(6 + rng() % 19, 'a');
    for (char& c : s) c = kChars[rng() % (sizeof(kChars) - 1)];
    s += std::to_string(i);  // unique
    v.push_back(std::move(s));
  }
  return v;
}

// per_entry: time per insert or lookup (printed as e.g. "350ns");
// blocks_per_entry: block requests per operation (cache-independent work).
void SetCounters(benchmark::State& state, size_t n, uint64_t requests) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
  state.counters["per_entry"] = benchmark::Counter(
      static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["blocks_per_entry"] =
      static_cast<double>(requests) / static_cast<double>(n * std::max<uint64_t>(1, state.iterations()));
}

void BM_ZapInsert(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const auto& names = Names(n);
  uint64_t requests = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto obj = std::make_unique<MemZapObject>();
    auto z = ZapWriter::Create(*obj, ZapWriteOptions{.salt = 0x3fd3be8f27});
    if (!z.ok()) state.SkipWithError("create");
    state.ResumeTiming();
    for (size_t i = 0; i < n; i++) {
      if (!z->Add(names[i], i + 100).ok()) {
        state.SkipWithError("add");
        break;
      }
    }
    state.PauseTiming();
    requests += obj->block_requests();
    obj.reset();
    state.ResumeTiming();
  }
  SetCounters(state, n, requests);
}

void BM_ZapLookup(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const auto& names = Names(n);
  MemZapObject obj;
  auto z = ZapWriter::Create(obj, ZapWriteOptions{.salt = 0x3fd3be8f27});
  for (size_t i = 0; i < n; i++) {
    if (!z->Add(names[i], i + 100).ok()) state.SkipWithError("add");
  }
  // Random order, but the names themselves copied into that order, so the
  // benchmark's own reads of them are sequential and only the ZAP misses.
  std::vector<uint32_t> order(n);
  for (size_t i = 0; i < n; i++) order[i] = static_cast<uint32_t>(i);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(1));
  std::vector<std::pair<std::string, uint64_t>> queries;
  queries.reserve(n);
  for (uint32_t i : order) queries.emplace_back(names[i], i + 100);
  const uint64_t before = obj.block_requests();
  for (auto _ : state) {
    for (const auto& [name, want] : queries) {
      auto v = z->LookupUint64(name);
      if (!v.ok() || *v != want) {
        state.SkipWithError("lookup");
        break;
      }
      benchmark::DoNotOptimize(*v);
    }
  }
  SetCounters(state, n, obj.block_requests() - before);
}

BENCHMARK(BM_ZapInsert)->RangeMultiplier(10)->Range(1000, 1000000)->Unit(benchmark::kMillisecond)->MinTime(0.3);
BENCHMARK(BM_ZapLookup)->RangeMultiplier(10)->Range(1000, 1000000)->Unit(benchmark::kMillisecond)->MinTime(0.3);

}  // namespace

BENCHMARK_MAIN();
