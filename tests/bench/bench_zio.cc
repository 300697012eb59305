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
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "zfs/vdev/file_device.h"
#include "zfs/vdev/io_engine.h"
#include "zfs/vdev/mem_device.h"
#include "zfs/vdev/vdev.h"
#include "zfs/zio/vdev_target.h"
#include "zfs/zio/zio.h"

namespace {

using namespace uzfs;

constexpr size_t kRecord = 128 * 1024;
constexpr int kInFlight = 64;
constexpr uint64_t kChildSize = 1ull << 30;

// Hands out space front to back; Reset() starts over (the benchmark reuses
// the space every batch, which is what it measures the pipeline against).
class BumpAllocator : public BlockAllocator {
 public:
  explicit BumpAllocator(const Vdev& top) : top_(top) {}
  Result<std::vector<Dva>> Allocate(uint64_t psize, int copies, uint64_t) override {
    const uint64_t asize = top_.AllocatedSize(psize);
    const uint64_t off = next_.fetch_add(asize);
    if (off + asize > top_.asize()) return Status::NoSpace("benchmark vdev full");
    return std::vector<Dva>{Dva{.vdev = 0, .asize = asize, .offset = off}};
  }
  Status Free(const Dva&, uint64_t) override { return Status::Ok(); }
  void Reset() { next_ = 0; }

 private:
  const Vdev& top_;
  std::atomic<uint64_t> next_{0};
};

struct Rig {
  std::unique_ptr<IoEngine> io;
  std::unique_ptr<Vdev> root;
  std::unique_ptr<VdevTreeTarget> target;
  std::unique_ptr<BumpAllocator> alloc;
  std::unique_ptr<Zio> zio;
  std::filesystem::path dir;
  ~Rig() {
    zio.reset();
    root.reset();
    io.reset();
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }
};

std::unique_ptr<Rig> MakeRig(bool files) {
  auto rig = std::make_unique<Rig>();
  rig->io = std::move(IoEngine::Create()).value();
  std::vector<std::unique_ptr<Vdev>> kids;
  if (files) {
    char name[64];  // snprintf: GCC 12's -Wrestrict misfires on "lit" + std::string
    std::snprintf(name, sizeof name, "uzfs-bench-zio-%d", static_cast<int>(getpid()));
    rig->dir = std::filesystem::temp_directory_path() / name;
    std::filesystem::create_directories(rig->dir);
  }
  for (int i = 0; i < 6; i++) {
    std::unique_ptr<BlockDevice> dev;
    if (files) {
      FileDeviceOptions o;
      o.create_size = kChildSize;
      char leaf[16];
      std::snprintf(leaf, sizeof leaf, "d%d", i);
      dev = std::move(FileDevice::Open((rig->dir / leaf).string(), o)).value();
    } else {
      MemDeviceOptions o;
      o.volatile_cache = false;
      dev = std::move(MemDevice::Create(kChildSize, o)).value();
    }
    kids.push_back(MakeLeafVdev(std::move(dev), *rig->io, 100 + i, 12));
  }
  std::vector<std::unique_ptr<Vdev>> tops;
  tops.push_back(std::move(MakeRaidzVdev(std::move(kids), 2, 7, 12)).value());
  rig->root = std::move(MakeRootVdev(std::move(tops))).value();
  rig->target = std::make_unique<VdevTreeTarget>(*rig->root);
  rig->alloc = std::make_unique<BumpAllocator>(*rig->root->child(0));
  rig->zio = std::make_unique<Zio>(*rig->target, *rig->alloc);
  return rig;
}

std::vector<std::vector<uint8_t>> Records(int n) {
  static const char* words[] = {"the ", "pool ", "raidz2 ", "checksum ", "of ", "block ",
                                "txg ", "scrub ", "resilver ", "\n", "0123456789 "};
  std::vector<std::vector<uint8_t>> out(n);
  uint64_t x = 88172645463325252ull;
  for (auto& r : out) {
    r.reserve(kRecord);
    while (r.size() < kRecord) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      const char* w = words[x % 11];
      if (x % 5 == 0) r.push_back(static_cast<uint8_t>(x >> 40));  // some entropy
      r.insert(r.end(), w, w + std::strlen(w));
    }
    r.resize(kRecord);
  }
  return out;
}

double CpuSeconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + 1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

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
  const auto recs = Records(kInFlight);
  std::vector<BlockPtr> bps(recs.size());
  const double cpu0 = CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    rig->alloc->Reset();
    WriteBatch(*rig, recs, &bps);
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  state.counters["cores"] = (CpuSeconds() - cpu0) / wall;
  state.counters["ratio"] = double(kRecord) / bps[0].psize;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * recs.size() * kRecord);
}

void BM_ZioRead(benchmark::State& state, bool files) {
  auto rig = MakeRig(files);
  const auto recs = Records(kInFlight);
  std::vector<BlockPtr> bps(recs.size());
  WriteBatch(*rig, recs, &bps);
  std::vector<std::vector<uint8_t>> out(recs.size(), std::vector<uint8_t>(kRecord));
  const double cpu0 = CpuSeconds();
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
  state.counters["cores"] = (CpuSeconds() - cpu0) / wall;
  if (out[3] != recs[3]) std::abort();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bps.size() * kRecord);
}

BENCHMARK_CAPTURE(BM_ZioWrite, mem, false)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK_CAPTURE(BM_ZioWrite, file, true)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK_CAPTURE(BM_ZioRead, mem, false)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK_CAPTURE(BM_ZioRead, file, true)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
