// The POSIX layer through the library API (ZplFs, no FUSE), on a real pool:
// raidz2 over six sparse files in the temporary directory, pool version
// 5000 (for lz4), ashift 12, one dataset with compression=lz4.
//   BM_ZplCreateSmall  batches of 1000 files of 4 KiB (Create + Write +
//                      Release) in a fresh directory, then SyncFs: files
//                      per second, durable at the end of each batch.
//   BM_ZplStatSmall    Lookup + GetAttr of those files (items per second).
//   BM_ZplUnlinkSmall  Unlink of a batch of 1000 (created untimed), then
//                      SyncFs: files per second.
//   BM_ZplSeqWrite     one file of UZFS_BENCH_FILE_MB MiB (default 1024)
//                      in 1 MiB writes, then Fsync: bytes per second.
//   BM_ZplSeqReadCold  the same file read in 1 MiB calls after Unmount,
//                      export, import and Mount, so every block comes from
//                      the devices (there is no ARC yet either, and the
//                      device files' pages are dropped from the host's
//                      page cache with POSIX_FADV_DONTNEED); the data is
//                      compared with what was written.
//   BM_ZplRandWrite4K  4 KiB writes at random 4 KiB-aligned offsets of a
//                      file of UZFS_BENCH_RAND_MB MiB (default 256; laid
//                      out untimed with random bytes, 128 KiB records) in
//                      a dataset with default properties (compression
//                      off), as fio's rand-write job does through FUSE;
//                      each iteration is 8192 writes then SyncFs, so the
//                      txg syncs they cause are in the time: writes per
//                      second, `cpu_us` = process CPU microseconds per write.
// Data: each 1 MiB chunk is 3/4 text-like records (bench_rig.h) and 1/4
// random bytes, so lz4 halves it roughly, as on a real mixed workload.
// Counter `cores` = process CPU time / wall time.
//   UZFS_BENCH_FILE_MB=64 build/tests/bench_zpl    a quick check
#include <benchmark/benchmark.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tests/bench/bench_rig.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/spa/vdev_config.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs.h"

namespace {

using namespace uzfs;

constexpr int kBatch = 1000;
constexpr size_t kSmall = 4096;
constexpr size_t kChunk = 1 << 20;

uint64_t FileBytes() {
  const char* e = std::getenv("UZFS_BENCH_FILE_MB");
  const uint64_t mb = e && std::atoll(e) > 0 ? static_cast<uint64_t>(std::atoll(e)) : 1024;
  return mb << 20;
}

// prefix + i (snprintf: GCC 12's -Wrestrict misfires on "lit" + std::string).
std::string Name(const char* prefix, int i) {
  char b[64];
  std::snprintf(b, sizeof b, "%s%d", prefix, i);
  return b;
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "bench_zpl: %s\n", what.c_str());
  std::abort();
}
void Check(const Status& s, const char* what) {
  if (!s.ok()) Die(std::string(what) + ": " + s.ToString());
}
void Check(const ZplStatus& s, const char* what) {
  if (!s.ok()) Die(std::string(what) + ": " + s.ToString());
}

// 64 distinct 1 MiB chunks, cycled.
const std::vector<std::vector<uint8_t>>& Chunks() {
  static const auto chunks = [] {
    std::vector<std::vector<uint8_t>> out;
    const auto text = bench::TextRecords(64 * 6, 128 * 1024);
    for (int c = 0; c < 64; c++) {
      std::vector<uint8_t> v;
      v.reserve(kChunk);
      for (int r = 0; r < 8; r++) {
        if (r % 4 == 3) {
          const auto rnd = test::RandomBytes(128 * 1024, 1000 * c + r);
          v.insert(v.end(), rnd.begin(), rnd.end());
        } else {
          const auto& t = text[(c * 6 + r) % text.size()];
          v.insert(v.end(), t.begin(), t.end());
        }
      }
      out.push_back(std::move(v));
    }
    return out;
  }();
  return chunks;
}

// The pool and the mounted file system, shared by the benchmarks in order.
struct Rig {
  std::filesystem::path dir;
  std::unique_ptr<Pool> pool;
  std::unique_ptr<ZplFs> fs;
  ZplCred root;
  int batches = 0;
  uint64_t big_ino = 0;
  int big_files = 0;  // big0, big1, ... (one per BM_ZplSeqWrite iteration)
  std::unique_ptr<ZplFs> raw;  // bench/raw (BM_ZplRandWrite4K), default properties
  ZplHandle raw_h = 0;         // its file "rand", open

  Rig() {
    char name[64];
    std::snprintf(name, sizeof name, "uzfs-bench-zpl-%d", static_cast<int>(getpid()));
    dir = std::filesystem::temp_directory_path() / name;
    std::filesystem::create_directories(dir);
    const uint64_t child = std::max<uint64_t>(1ull << 30, FileBytes() / 2);
    PoolLayout l;
    VdevSpec g;
    g.type = VdevSpec::Type::kRaidz;
    g.nparity = 2;
    for (int i = 0; i < 6; i++) {
      VdevSpec leaf;
      leaf.path = (dir / Name("d", i)).string();
      std::FILE* f = std::fopen(leaf.path.c_str(), "w");
      if (!f) Die("cannot create " + leaf.path);
      std::fclose(f);
      std::filesystem::resize_file(leaf.path, child);
      g.children.push_back(leaf);
    }
    l.data = {g};
    PoolCreateOptions o;
    o.version = 5000;
    o.ashift = 12;
    o.fs_init = InitNewFilesystem;
    o.history = "zpool create bench raidz2 d0 d1 d2 d3 d4 d5";
    auto p = Pool::Create("bench", l, o);
    Check(p.status(), "Pool::Create");
    pool = std::move(*p);
    Check(pool->CreateDataset("bench/fs", {{"compression", "lz4"}}), "CreateDataset");
    Mount();
  }
  ~Rig() {
    if (raw) {
      raw->Release(raw_h).ok();
      raw->Unmount().ok();
      raw.reset();
    }
    if (fs) fs->Unmount().ok();
    fs.reset();
    if (pool) pool->Export().ok();
    pool.reset();
    std::filesystem::remove_all(dir);
  }
  void Mount() {
    auto m = ZplFs::Mount(*pool, "bench/fs");
    Check(m.status(), "Mount");
    fs = std::move(*m);
  }
  // Unmount, export, import, mount: nothing of the file system is cached.
  void Cycle() {
    Check(fs->Unmount(), "Unmount");
    fs.reset();
    Check(pool->Export(), "Export");
    pool.reset();
    // Drop the device files' pages from the host's page cache too, so the
    // reads come from the disk under them.
    for (int i = 0; i < 6; i++) {
      const int fd = open((dir / Name("d", i)).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) Die("cannot open a device file");
      fdatasync(fd);
      posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      close(fd);
    }
    auto devs = ScanDeviceDir(dir.string());
    Check(devs.status(), "ScanDeviceDir");
    PoolImportOptions io;
    io.fs_init = InitNewFilesystem;
    auto p = Pool::Import(*devs, "bench", io);
    Check(p.status(), "Pool::Import");
    pool = std::move(*p);
    Mount();
  }
  // A fresh directory holding `kBatch` 4 KiB files f0..f999.
  uint64_t MakeBatch() {
    const std::string dn = Name("batch", batches++);
    auto d = fs->Mkdir(root, fs->root_ino(), dn, 0755);
    Check(d.status(), "Mkdir");
    const auto& data = Chunks()[batches % 64];
    for (int i = 0; i < kBatch; i++) {
      auto c = fs->Create(root, d->ino, Name("f", i), S_IFREG | 0644, O_CREAT | O_EXCL | O_RDWR);
      Check(c.status(), "Create");
      auto w = fs->Write(c->second, 0, std::span<const uint8_t>(data.data() + 4096 * i % (kChunk - kSmall), kSmall));
      Check(w.status(), "Write");
      Check(fs->Release(c->second), "Release");
    }
    return d->ino;
  }
};

Rig* g_rig = nullptr;  // made on first use, destroyed at the end of main
Rig& TheRig() {
  if (!g_rig) g_rig = new Rig();
  return *g_rig;
}
uint64_t g_last_batch = 0;

void Counters(benchmark::State& state, double cpu0, std::chrono::steady_clock::time_point t0) {
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  state.counters["cores"] = (bench::CpuSeconds() - cpu0) / wall;
}

void BM_ZplCreateSmall(benchmark::State& state) {
  Rig& r = TheRig();
  const double cpu0 = bench::CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    g_last_batch = r.MakeBatch();
    Check(r.fs->SyncFs(), "SyncFs");
  }
  Counters(state, cpu0, t0);
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void BM_ZplStatSmall(benchmark::State& state) {
  Rig& r = TheRig();
  if (g_last_batch == 0) g_last_batch = r.MakeBatch();
  const double cpu0 = bench::CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    for (int i = 0; i < kBatch; i++) {
      auto a = r.fs->Lookup(r.root, g_last_batch, Name("f", i));
      Check(a.status(), "Lookup");
      auto g = r.fs->GetAttr(a->ino);
      Check(g.status(), "GetAttr");
      if (g->size != kSmall) Die("wrong size");
    }
  }
  Counters(state, cpu0, t0);
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void BM_ZplUnlinkSmall(benchmark::State& state) {
  Rig& r = TheRig();
  const double cpu0 = bench::CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    state.PauseTiming();
    const uint64_t d = r.MakeBatch();
    Check(r.fs->SyncFs(), "SyncFs");
    state.ResumeTiming();
    for (int i = 0; i < kBatch; i++) Check(r.fs->Unlink(r.root, d, Name("f", i)), "Unlink");
    Check(r.fs->SyncFs(), "SyncFs");
  }
  Counters(state, cpu0, t0);
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void BM_ZplSeqWrite(benchmark::State& state) {
  Rig& r = TheRig();
  const uint64_t size = FileBytes();
  const auto& chunks = Chunks();
  const double cpu0 = bench::CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    auto c = r.fs->Create(r.root, r.fs->root_ino(), Name("big", r.big_files++), S_IFREG | 0644,
                          O_CREAT | O_EXCL | O_RDWR);
    Check(c.status(), "Create big");
    for (uint64_t off = 0; off < size; off += kChunk) {
      auto w = r.fs->Write(c->second, off, chunks[(off / kChunk) % chunks.size()]);
      Check(w.status(), "Write big");
    }
    Check(r.fs->Fsync(c->second, false), "Fsync");
    Check(r.fs->Release(c->second), "Release");
    r.big_ino = c->first.ino;
  }
  Counters(state, cpu0, t0);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
}

void BM_ZplRandWrite4K(benchmark::State& state) {
  Rig& r = TheRig();
  const char* e = std::getenv("UZFS_BENCH_RAND_MB");
  const uint64_t size = (e && std::atoll(e) > 0 ? static_cast<uint64_t>(std::atoll(e)) : 256) << 20;
  constexpr int kWrites = 8192;
  std::unique_ptr<ZplFs>& raw = r.raw;
  ZplHandle& h = r.raw_h;
  if (!raw) {
    Check(r.pool->CreateDataset("bench/raw", {}), "CreateDataset raw");
    auto m = ZplFs::Mount(*r.pool, "bench/raw");
    Check(m.status(), "Mount raw");
    raw = std::move(*m);
    auto c = raw->Create(r.root, raw->root_ino(), "rand", S_IFREG | 0644, O_CREAT | O_EXCL | O_RDWR);
    Check(c.status(), "Create rand");
    h = c->second;
    for (uint64_t off = 0; off < size; off += kChunk) {
      const auto rnd = test::RandomBytes(kChunk, 77 + off / kChunk);
      auto w = raw->Write(h, off, rnd);
      Check(w.status(), "Write rand layout");
    }
    Check(raw->SyncFs(), "SyncFs raw");
  }
  const auto block = test::RandomBytes(kSmall, 5);
  uint64_t x = 88172645463325252ull;  // xorshift: the same offsets every run
  const double cpu0 = bench::CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    for (int i = 0; i < kWrites; i++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      const uint64_t off = (x % (size / kSmall)) * kSmall;
      auto w = raw->Write(h, off, block);
      Check(w.status(), "Write 4K");
    }
    Check(raw->SyncFs(), "SyncFs");
  }
  Counters(state, cpu0, t0);
  const double n = static_cast<double>(state.iterations()) * kWrites;
  state.counters["cpu_us"] = (bench::CpuSeconds() - cpu0) * 1e6 / n;
  state.SetItemsProcessed(static_cast<int64_t>(n));
}

void BM_ZplSeqReadCold(benchmark::State& state) {
  Rig& r = TheRig();
  const uint64_t size = FileBytes();
  const auto& chunks = Chunks();
  std::vector<uint8_t> buf(kChunk);
  double cpu = 0, wall = 0;
  for (auto _ : state) {
    state.PauseTiming();
    r.Cycle();
    auto a = r.fs->Lookup(r.root, r.fs->root_ino(), "big0");
    Check(a.status(), "Lookup big0");
    auto h = r.fs->Open(r.root, a->ino, O_RDONLY);
    Check(h.status(), "Open big0");
    const double cpu0 = bench::CpuSeconds();
    const auto t0 = std::chrono::steady_clock::now();
    state.ResumeTiming();
    for (uint64_t off = 0; off < size; off += kChunk) {
      auto n = r.fs->Read(*h, off, buf);
      Check(n.status(), "Read big0");
      if (*n != kChunk || std::memcmp(buf.data(), chunks[(off / kChunk) % chunks.size()].data(), kChunk) != 0)
        Die("read back differs");
    }
    state.PauseTiming();
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    cpu += bench::CpuSeconds() - cpu0;
    Check(r.fs->Release(*h), "Release big0");
    state.ResumeTiming();
  }
  state.counters["cores"] = wall > 0 ? cpu / wall : 0;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
}

BENCHMARK(BM_ZplCreateSmall)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3.0);
BENCHMARK(BM_ZplStatSmall)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
// Fixed iterations: each one first makes its batch untimed.
BENCHMARK(BM_ZplUnlinkSmall)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);
BENCHMARK(BM_ZplSeqWrite)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_ZplRandWrite4K)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5.0);
BENCHMARK(BM_ZplSeqReadCold)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  delete g_rig;  // unmount, export, remove the device files
  return 0;
}
