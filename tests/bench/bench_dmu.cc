// The DMU write side end to end on a raidz2 vdev of six in-memory children:
//   BM_DmuWriteSync  a 256 MiB object written in 128 KiB blocks into one
//                    txg (dirty buffers), then Sync: lz4 + fletcher4 data
//                    blocks in parallel on the ZIO workers, the L1 and L2
//                    indirect blocks, the dnode block, the meta-dnode tree
//                    and the objset block (two copies each).
//   BM_DmuRead       the same 256 MiB read back through ObjsetWriter::Read
//                    in 1 MiB calls from the synced tree (one thread,
//                    blocking reads: what a single reader gets before the
//                    ARC and prefetch exist).
// Data is text-like, about 2:1 with lz4. Bytes processed are logical bytes.
// The counter `cores` is process CPU time over wall time.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <vector>

#include "zfs/dmu/objset_writer.h"
#include "zfs/vdev/io_engine.h"
#include "zfs/vdev/mem_device.h"
#include "zfs/vdev/vdev.h"
#include "zfs/zio/vdev_target.h"
#include "zfs/zio/zio.h"

namespace {

using namespace uzfs;

constexpr size_t kRecord = 128 * 1024;
constexpr uint64_t kObjectSize = 256ull << 20;
constexpr uint64_t kChildSize = 192ull << 20;

// Front-to-back allocation; Reset() reuses the space for the next round.
class BumpAllocator : public BlockAllocator {
 public:
  explicit BumpAllocator(const Vdev& top) : top_(top) {}
  Result<std::vector<Dva>> Allocate(uint64_t psize, int copies, uint64_t) override {
    const uint64_t asize = top_.AllocatedSize(psize);
    std::vector<Dva> out;
    for (int c = 0; c < copies; c++) {
      const uint64_t off = next_.fetch_add(asize);
      if (off + asize > top_.asize()) return Status::NoSpace("benchmark vdev full");
      out.push_back(Dva{.vdev = 0, .asize = asize, .offset = off});
    }
    return out;
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
  ~Rig() {
    zio.reset();
    root.reset();
    io.reset();
  }
};

std::unique_ptr<Rig> MakeRig() {
  auto rig = std::make_unique<Rig>();
  rig->io = std::move(IoEngine::Create()).value();
  std::vector<std::unique_ptr<Vdev>> kids;
  for (int i = 0; i < 6; i++) {
    MemDeviceOptions o;
    o.volatile_cache = false;
    kids.push_back(MakeLeafVdev(std::move(MemDevice::Create(kChildSize, o)).value(), *rig->io, 100 + i, 12));
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
      if (x % 5 == 0) r.push_back(static_cast<uint8_t>(x >> 40));
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

// Writes the object into txg 1 of a fresh set and syncs; the root.
BlockPtr WriteObject(Rig& rig, const std::vector<std::vector<uint8_t>>& recs, uint64_t* obj) {
  auto w = std::move(ObjsetWriter::Create(*rig.zio, ObjsetType::kZfs, {})).value();
  ObjectProps p;  // 128 KiB blocks, 128 KiB indirect blocks, lz4 (inherit)
  *obj = w->AllocateObject(p, 1).value();
  for (uint64_t off = 0, i = 0; off < kObjectSize; off += kRecord, i++) {
    if (!w->Write(*obj, off, recs[i % recs.size()], 1).ok()) std::abort();
  }
  auto root = w->Sync(1);
  if (!root.ok()) std::abort();
  return *root;
}

void BM_DmuWriteSync(benchmark::State& state) {
  auto rig = MakeRig();
  const auto recs = Records(64);
  const double cpu0 = CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t obj = 0;
  for (auto _ : state) {
    rig->alloc->Reset();
    benchmark::DoNotOptimize(WriteObject(*rig, recs, &obj));
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  state.counters["cores"] = (CpuSeconds() - cpu0) / wall;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kObjectSize));
}

void BM_DmuRead(benchmark::State& state) {
  auto rig = MakeRig();
  const auto recs = Records(64);
  uint64_t obj = 0;
  const BlockPtr root = WriteObject(*rig, recs, &obj);
  auto w = std::move(ObjsetWriter::Open(*rig->zio, root, {})).value();
  std::vector<uint8_t> buf(1 << 20);
  const double cpu0 = CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    for (uint64_t off = 0; off < kObjectSize; off += buf.size()) {
      if (!w->Read(obj, off, buf).ok()) std::abort();
    }
    if (std::memcmp(buf.data() + buf.size() - kRecord, recs[(kObjectSize / kRecord - 1) % recs.size()].data(),
                    kRecord) != 0)
      std::abort();
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  state.counters["cores"] = (CpuSeconds() - cpu0) / wall;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kObjectSize));
}

BENCHMARK(BM_DmuWriteSync)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK(BM_DmuRead)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
