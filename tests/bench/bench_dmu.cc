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

#include <atomic>
#include <chrono>
#include <cstring>
#include <vector>

#include "zfs/dmu/objset_writer.h"
#include "tests/bench/bench_rig.h"

namespace {

using namespace uzfs;

constexpr size_t kRecord = 128 * 1024;
constexpr uint64_t kObjectSize = 256ull << 20;
constexpr uint64_t kChildSize = 192ull << 20;

using bench::Rig;

std::unique_ptr<Rig> MakeRig() { return bench::MakeRaidzRig(6, 2, kChildSize, false); }

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
  const auto recs = bench::TextRecords(64, kRecord);
  const double cpu0 = bench::CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t obj = 0;
  for (auto _ : state) {
    rig->alloc->Reset();
    benchmark::DoNotOptimize(WriteObject(*rig, recs, &obj));
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  state.counters["cores"] = (bench::CpuSeconds() - cpu0) / wall;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kObjectSize));
}

void BM_DmuRead(benchmark::State& state) {
  auto rig = MakeRig();
  const auto recs = bench::TextRecords(64, kRecord);
  uint64_t obj = 0;
  const BlockPtr root = WriteObject(*rig, recs, &obj);
  auto w = std::move(ObjsetWriter::Open(*rig->zio, root, {})).value();
  std::vector<uint8_t> buf(1 << 20);
  const double cpu0 = bench::CpuSeconds();
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
  state.counters["cores"] = (bench::CpuSeconds() - cpu0) / wall;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kObjectSize));
}

BENCHMARK(BM_DmuWriteSync)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK(BM_DmuRead)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
