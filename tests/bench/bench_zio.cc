// The ZIO pipeline end to end on a raidz2 vdev of six children, lz4 +
// fletcher4, 128 KiB records of text-like data (about 2:1 with lz4):
//   BM_ZioWrite/<mem|file>  compress, checksum, allocate, parity, write
//   BM_ZioRead/<mem|file>   read columns, verify, decompress
// "mem" children are in-memory devices (the pipeline alone); "file"
// children are sparse files in /tmp through the I/O engine (page cache).
// Bytes processed are logical bytes. The counter `cores` is process CPU
// time over wall time: how many cores the pipeline kept busy (2 is all of
// this machine). Blocks are issued asynchronously, 64 in flight.
#include <benchmark/benchmark.h>

#include <chrono>
#include <thread>

#include "tests/bench/bench_rig.h"

namespace {

using namespace uzfs;

constexpr size_t kRecord = 128 * 1024;
constexpr int kInFlight = 64;
constexpr uint64_t kChildSize = 1ull << 30;

using bench::Rig;

std::unique_ptr<Rig> MakeRig(bool files) { return bench::MakeRaidzRig(6, 2, kChildSize, files); }

void WriteBatch(Rig& rig, const std::vector<std::vector<uint8_t>>& recs,
                std::vector<BlockPtr>* bps) {
  std::atomic<int> done{0}, failed{0};
  for (size_t i = 0; i < recs.size(); i++) {
    rig.zio->WriteAsync(recs[i], WriteProps{}, 1, [&, i](Result<BlockPtr> r) {
      if (r.ok()) (*bps)[i] = *r; else failed++;
      done++;
    });
  }
  while (done.load() < static_cast<int>(recs.size())) std::this_thread::sleep_for(std::chrono::microseconds(50));
  if (failed) std::abort();
}

void BM_ZioWrite(benchmark::State& state, bool files) {
  auto rig = MakeRig(files);
  const auto recs = bench::TextRecords(kInFlight, kRecord);
  std::vector<BlockPtr> bps(recs.size());
  const double cpu0 = bench::CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    rig->alloc->Reset();
    WriteBatch(*rig, recs, &bps);
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  state.counters["cores"] = (bench::CpuSeconds() - cpu0) / wall;
  state.counters["ratio"] = double(kRecord) / bps[0].psize;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * recs.size() * kRecord);
}

void BM_ZioRead(benchmark::State& state, bool files) {
  auto rig = MakeRig(files);
  const auto recs = bench::TextRecords(kInFlight, kRecord);
  std::vector<BlockPtr> bps(recs.size());
  WriteBatch(*rig, recs, &bps);
  std::vector<std::vector<uint8_t>> out(recs.size(), std::vector<uint8_t>(kRecord));
  const double cpu0 = bench::CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    std::atomic<int> done{0}, failed{0};
    for (size_t i = 0; i < bps.size(); i++) {
      rig->zio->ReadAsync(bps[i], out[i], [&](Status s) {
        if (!s.ok()) failed++;
        done++;
      });
    }
    while (done.load() < static_cast<int>(bps.size())) std::this_thread::sleep_for(std::chrono::microseconds(50));
    if (failed) std::abort();
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  state.counters["cores"] = (bench::CpuSeconds() - cpu0) / wall;
  if (out[3] != recs[3]) std::abort();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bps.size() * kRecord);
}

BENCHMARK_CAPTURE(BM_ZioWrite, mem, false)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK_CAPTURE(BM_ZioWrite, file, true)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK_CAPTURE(BM_ZioRead, mem, false)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK_CAPTURE(BM_ZioRead, file, true)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
