// The ZIO pipeline end to end on a raidz2 vdev of six children, lz4 +
// fletcher4, 128 KiB records of text-like data (about 2:1 with lz4):
//   BM_ZioWrite/<mem|file>  compress, checksum, allocate, parity, write
//   BM_ZioRead/<mem|file>   read columns, verify, decompress
// "mem" children are in-memory devices (the pipeline alone); "file"
// children are sparse files in /tmp through the I/O engine (page cache).
// Bytes processed are logical bytes. The counter `cores` is process CPU
// time over wall time: how many cores the pipeline kept busy (2 is all of
// this machine). Blocks are issued asynchronously, 64 in flight.
//
// The txg sync's batched write below the pipeline (Zio::WriteMany's vdev
// half), the two ways of issuing one batch of 32 blocks of 128 KiB, back
// to back on each top-level vdev (split evenly between them):
//   BM_BatchWrite/<layout>/<dev>/serial   each top-level vdev's batch
//       (Vdev::Submit) in turn, a mirror block by block (one Write, all
//       sides in parallel, per block)
//   BM_BatchWrite/<layout>/<dev>/batched  one batch on the root
//       (Vdev::Submit): every leaf write of every vdev issued together,
//       adjacent ones merged per leaf
// layout: mirror2 (one 2-way mirror), 2xmirror2, raidz2x6, 2xraidz2x6.
// dev: "lat" leaves are in-memory devices behind a FaultDevice that holds
// every I/O 1 ms (4 at once: a disk with a short queue; the time does not
// grow with the size, so it models per-I/O cost only); "file" leaves are
// sparse files in /tmp through the I/O engine (page cache). Counters per
// batch: leaf_writes (leaf write requests), cpu_ms (process CPU time, the
// engine's threads included).
#include <benchmark/benchmark.h>

#include <chrono>
#include <random>
#include <thread>

#include "tests/bench/bench_rig.h"
#include "zfs/vdev/fault_device.h"

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

struct BatchRig {
  std::unique_ptr<IoEngine> io;
  std::unique_ptr<Vdev> root;
  std::filesystem::path dir;
  ~BatchRig() {
    root.reset();
    io.reset();
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }
};

// `tops` top-level vdevs: 2-way mirrors (raidz false) or raidz2 of six.
std::unique_ptr<BatchRig> MakeBatchRig(int tops, bool raidz, bool files) {
  auto rig = std::make_unique<BatchRig>();
  rig->io = std::move(IoEngine::Create()).value();
  if (files) {
    char name[64];
    std::snprintf(name, sizeof name, "uzfs-bench-batch-%d", static_cast<int>(getpid()));
    rig->dir = std::filesystem::temp_directory_path() / name;
    std::filesystem::create_directories(rig->dir);
  }
  const uint32_t width = raidz ? 6 : 2;
  std::vector<std::unique_ptr<Vdev>> top_vdevs;
  for (int t = 0; t < tops; t++) {
    std::vector<std::unique_ptr<Vdev>> kids;
    for (uint32_t i = 0; i < width; i++) {
      std::unique_ptr<BlockDevice> dev;
      if (files) {
        FileDeviceOptions o;
        o.create_size = 256ull << 20;
        char leaf[32];
        std::snprintf(leaf, sizeof leaf, "t%dd%u", t, i);
        dev = std::move(FileDevice::Open((rig->dir / leaf).string(), o)).value();
      } else {
        MemDeviceOptions o;
        o.volatile_cache = false;
        auto fd = std::make_unique<FaultDevice>(std::move(MemDevice::Create(256ull << 20, o)).value(),
                                                FaultDeviceOptions{false, 1});
        fd->SetLatency(std::chrono::microseconds(1000), 4);
        dev = std::move(fd);
      }
      kids.push_back(MakeLeafVdev(std::move(dev), *rig->io, 100 + t * 10 + i, 12));
    }
    top_vdevs.push_back(raidz ? std::move(MakeRaidzVdev(std::move(kids), 2, 7 + t, 12)).value()
                              : std::move(MakeMirrorVdev(std::move(kids), 7 + t, 12)).value());
  }
  rig->root = std::move(MakeRootVdev(std::move(top_vdevs))).value();
  return rig;
}

void BM_BatchWrite(benchmark::State& state, int tops, bool raidz, bool files, bool batched) {
  auto rig = MakeBatchRig(tops, raidz, files);
  constexpr int kBlocks = 32;
  std::vector<std::vector<uint8_t>> data(kBlocks, std::vector<uint8_t>(kRecord));
  std::mt19937_64 rng(1);
  for (auto& d : data)
    for (auto& b : d) b = static_cast<uint8_t>(rng());
  // Block i on top-level vdev i % tops, back to back on each: `all` in
  // block order (one batch on the root), `writes` per top-level vdev.
  std::vector<BlockIo> all;
  std::vector<std::vector<BlockIo>> writes(tops);
  std::vector<uint64_t> next(tops, 0);
  for (int i = 0; i < kBlocks; i++) {
    const uint32_t t = static_cast<uint32_t>(i % tops);
    all.push_back(BlockIo::Write(t, next[t], data[i]));
    writes[t].push_back(all.back());
    next[t] += rig->root->child(t)->AllocatedSize(kRecord);
  }
  std::vector<Vdev*> leaves;
  rig->root->CollectLeaves(&leaves);
  auto leaf_writes = [&] {
    uint64_t n = 0;
    for (Vdev* l : leaves) n += l->io_counters().write_ops;
    return n;
  };
  const uint64_t w0 = leaf_writes();
  const double cpu0 = bench::CpuSeconds();
  for (auto _ : state) {
    if (batched) {
      rig->root->Submit(all);
      for (const BlockIo& w : all)
        if (!w.status.ok()) std::abort();
    } else {
      for (int t = 0; t < tops; t++) {
        Vdev* top = rig->root->child(static_cast<uint32_t>(t));
        if (raidz) {
          top->Submit(writes[t]);
          for (const BlockIo& w : writes[t])
            if (!w.status.ok()) std::abort();
        } else {
          for (const BlockIo& w : writes[t])  // block by block
            if (!top->Write(w.offset, w.buf).ok()) std::abort();
        }
      }
    }
  }
  state.counters["cpu_ms"] = (bench::CpuSeconds() - cpu0) * 1e3 / static_cast<double>(state.iterations());
  state.counters["leaf_writes"] =
      static_cast<double>(leaf_writes() - w0) / static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kBlocks * kRecord);
}

void RegisterBatchWrites() {
  struct Layout {
    const char* name;
    int tops;
    bool raidz;
  };
  for (const Layout& l : {Layout{"mirror2", 1, false}, Layout{"2xmirror2", 2, false},
                          Layout{"raidz2x6", 1, true}, Layout{"2xraidz2x6", 2, true}}) {
    for (bool files : {false, true}) {
      for (bool batched : {false, true}) {
        const std::string name = std::string("BM_BatchWrite/") + l.name + (files ? "/file" : "/lat") +
                                 (batched ? "/batched" : "/serial");
        benchmark::RegisterBenchmark(name.c_str(), BM_BatchWrite, l.tops, l.raidz, files, batched)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime()
            ->MinTime(0.5);
      }
    }
  }
}

const bool kBatchRegistered = (RegisterBatchWrites(), true);

BENCHMARK_CAPTURE(BM_ZioWrite, mem, false)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK_CAPTURE(BM_ZioWrite, file, true)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK_CAPTURE(BM_ZioRead, mem, false)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK_CAPTURE(BM_ZioRead, file, true)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
