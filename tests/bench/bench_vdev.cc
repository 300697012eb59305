// Leaf-device I/O through each IoEngine on a temporary file, in bytes per
// second and I/Os per second (items_per_second = IOPS):
//   BM_SeqWrite128K/<engine>/qd<N>/<cache>   128 KiB writes, ascending offsets
//   BM_SeqRead128K/<engine>/qd<N>/<cache>    128 KiB reads, ascending offsets
//   BM_RandRead4K/<engine>/qd<N>/<cache>     4 KiB reads at random aligned offsets
// engine: uring (io_uring) or threads (pread/pwrite pool, one thread per
// queue slot); N: requests kept in flight (1 or 32); cache: "buffered" goes
// through the page cache (the file default: reads are memory copies once the
// file is cached, writes stop at the page cache), "direct" uses O_DIRECT and
// measures the disk under the temp directory (TMPDIR). Each iteration issues
// 64 requests and waits for them; the file is 128 MiB and filled first.
#include <benchmark/benchmark.h>

#include <fcntl.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/testutil/testutil.h"
#include "zfs/util/aligned_bytes.h"
#include "zfs/vdev/file_device.h"
#include "zfs/vdev/io_engine.h"
#include "zfs/util/mutex.h"

namespace uzfs {
namespace {

constexpr uint64_t kFileSize = 128ull << 20;
constexpr size_t kPerIteration = 64;

enum class Pattern { kSeqWrite, kSeqRead, kRandRead };

// Keeps `qd` requests in flight until `total` have completed.
class QueueDriver {
 public:
  QueueDriver(IoEngine* engine, BlockDevice* dev, Pattern pattern, size_t io_size, size_t qd)
      : engine_(engine), dev_(dev), pattern_(pattern), io_size_(io_size) {
    for (size_t i = 0; i < qd; i++) {
      slots_.emplace_back(io_size);
      std::vector<uint8_t> fill = test::RandomBytes(io_size, i + 1);
      std::copy(fill.begin(), fill.end(), slots_.back().data());
    }
  }

  // Runs `total` I/Os; returns the first error.
  Status Run(size_t total) {
    {
      MutexLock l(&mu_);
      total_ = total;
      issued_ = 0;
      completed_ = 0;
    }
    std::vector<IoRequest> first;
    for (size_t s = 0; s < slots_.size() && s < total; s++) first.push_back(Next(s));
    engine_->Submit(std::move(first));
    MutexLock l(&mu_);
    while (completed_ < total_) cv_.Wait(&mu_);
    return error_;
  }

 private:
  IoRequest Next(size_t slot) {
    uint64_t seq;
    {
      MutexLock l(&mu_);
      seq = cursor_ + issued_++;
    }
    uint64_t off;
    if (pattern_ == Pattern::kRandRead) {
      uint64_t x = seq * 0x9E3779B97F4A7C15ull;
      x ^= x >> 31;
      off = (x % (kFileSize / io_size_)) * io_size_;
    } else {
      off = (seq * io_size_) % kFileSize;
    }
    return {dev_, pattern_ == Pattern::kSeqWrite ? IoOp::kWrite : IoOp::kRead, off,
            slots_[slot].span(), [this, slot](Status s) { Done(slot, std::move(s)); }};
  }

  void Done(size_t slot, Status s) {
    bool more;
    {
      MutexLock l(&mu_);
      if (!s.ok() && error_.ok()) error_ = std::move(s);
      completed_++;
      more = issued_ < total_;
      if (completed_ == total_) {
        cursor_ += total_;
        cv_.SignalAll();
      }
    }
    if (more) engine_->Submit(Next(slot));
  }

  IoEngine* const engine_;
  BlockDevice* const dev_;
  const Pattern pattern_;
  const size_t io_size_;
  std::vector<AlignedBuffer> slots_;
  Mutex mu_;
  CondVar cv_;
  uint64_t total_ UZFS_GUARDED_BY(mu_) = 0;
  uint64_t issued_ UZFS_GUARDED_BY(mu_) = 0;
  uint64_t completed_ UZFS_GUARDED_BY(mu_) = 0;
  uint64_t cursor_ UZFS_GUARDED_BY(mu_) = 0;  // I/Os done by earlier runs
  Status error_ UZFS_GUARDED_BY(mu_);
};

std::string* g_path = nullptr;

void RunIo(benchmark::State& state, IoEngineKind kind, Pattern pattern, size_t io_size, size_t qd,
           bool direct) {
  FileDeviceOptions fo;
  fo.direct_io = direct ? DirectIo::kOn : DirectIo::kOff;
  auto dev = FileDevice::Open(*g_path, fo);
  if (!dev.ok()) {
    state.SkipWithError(dev.status().ToString().c_str());
    return;
  }
  IoEngineOptions eo;
  eo.kind = kind;
  eo.queue_depth = static_cast<uint32_t>(qd);
  eo.threads = static_cast<uint32_t>(qd);
  auto engine = IoEngine::Create(eo);
  if (!engine.ok()) {
    state.SkipWithError(engine.status().ToString().c_str());
    return;
  }
  QueueDriver driver(engine->get(), dev->get(), pattern, io_size, qd);
  for (auto _ : state) {
    Status s = driver.Run(kPerIteration);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      break;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kPerIteration * io_size));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kPerIteration));
}

bool FillFile(const std::string& path) {
  FileDeviceOptions o;
  o.create_size = kFileSize;
  auto dev = FileDevice::Open(path, o);
  if (!dev.ok()) return false;
  auto chunk = test::RandomBytes(1 << 20, 99);
  for (uint64_t off = 0; off < kFileSize; off += chunk.size()) {
    if (!(*dev)->Write(off, chunk).ok()) return false;
  }
  return (*dev)->Flush().ok();
}

}  // namespace
}  // namespace uzfs

int main(int argc, char** argv) {
  using namespace uzfs;  // NOLINT: a benchmark main
  test::TempDir dir;
  std::string path = (dir.path() / "bench-disk").string();
  g_path = &path;
  if (!FillFile(path)) {
    std::fprintf(stderr, "cannot create %s\n", path.c_str());
    return 1;
  }
  struct Workload {
    const char* name;
    Pattern pattern;
    size_t size;
  };
  const Workload workloads[] = {{"BM_SeqWrite128K", Pattern::kSeqWrite, 128 * 1024},
                                {"BM_SeqRead128K", Pattern::kSeqRead, 128 * 1024},
                                {"BM_RandRead4K", Pattern::kRandRead, 4096}};
  for (const Workload& w : workloads) {
    for (IoEngineKind kind : {IoEngineKind::kUring, IoEngineKind::kThreads}) {
      for (size_t qd : {1, 32}) {
        for (bool direct : {false, true}) {
          const std::string name = std::string(w.name) + "/" + std::string(IoEngineKindName(kind)) +
                                   "/qd" + std::to_string(qd) + (direct ? "/direct" : "/buffered");
          benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) {
            RunIo(s, kind, w.pattern, w.size, qd, direct);
          })->UseRealTime()->MinTime(0.3);
        }
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
