// Shared by the engine benchmarks: a raidz vdev of in-memory or file
// children with the ZIO pipeline on top, a front-to-back allocator that the
// benchmark resets between rounds (it measures the pipeline, not the
// metaslab allocator), text-like records (about 2.5:1 with lz4), and the
// process CPU time used for the `cores` counter (CPU time / wall time).
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "zfs/vdev/file_device.h"
#include "zfs/vdev/io_engine.h"
#include "zfs/vdev/mem_device.h"
#include "zfs/vdev/vdev.h"
#include "zfs/zio/vdev_target.h"
#include "zfs/zio/zio.h"

namespace uzfs::bench {

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
  std::filesystem::path dir;  // file children live here (removed at the end)
  ~Rig() {
    zio.reset();
    root.reset();
    io.reset();
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }
};

// raidz`nparity` of `width` children of `child_size` bytes, ashift 12:
// in memory, or sparse files in the temp directory.
inline std::unique_ptr<Rig> MakeRaidzRig(uint32_t width, uint32_t nparity, uint64_t child_size,
                                         bool files) {
  auto rig = std::make_unique<Rig>();
  rig->io = std::move(IoEngine::Create()).value();
  if (files) {
    char name[64];  // snprintf: GCC 12's -Wrestrict misfires on "lit" + std::string
    std::snprintf(name, sizeof name, "uzfs-bench-%d", static_cast<int>(getpid()));
    rig->dir = std::filesystem::temp_directory_path() / name;
    std::filesystem::create_directories(rig->dir);
  }
  std::vector<std::unique_ptr<Vdev>> kids;
  for (uint32_t i = 0; i < width; i++) {
    std::unique_ptr<BlockDevice> dev;
    if (files) {
      FileDeviceOptions o;
      o.create_size = child_size;
      char leaf[16];
      std::snprintf(leaf, sizeof leaf, "d%u", i);
      dev = std::move(FileDevice::Open((rig->dir / leaf).string(), o)).value();
    } else {
      MemDeviceOptions o;
      o.volatile_cache = false;
      dev = std::move(MemDevice::Create(child_size, o)).value();
    }
    kids.push_back(MakeLeafVdev(std::move(dev), *rig->io, 100 + i, 12));
  }
  std::vector<std::unique_ptr<Vdev>> tops;
  tops.push_back(std::move(MakeRaidzVdev(std::move(kids), nparity, 7, 12)).value());
  rig->root = std::move(MakeRootVdev(std::move(tops))).value();
  rig->target = std::make_unique<VdevTreeTarget>(*rig->root);
  rig->alloc = std::make_unique<BumpAllocator>(*rig->root->child(0));
  rig->zio = std::make_unique<Zio>(*rig->target, *rig->alloc);
  return rig;
}

// n records of `size` bytes of text with some entropy (about 2.5:1 with lz4).
inline std::vector<std::vector<uint8_t>> TextRecords(int n, size_t size) {
  static const char* words[] = {"the ", "pool ", "raidz2 ", "checksum ", "of ", "block ",
                                "txg ", "scrub ", "resilver ", "\n", "0123456789 "};
  std::vector<std::vector<uint8_t>> out(n);
  uint64_t x = 88172645463325252ull;
  for (auto& r : out) {
    r.reserve(size);
    while (r.size() < size) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      const char* w = words[x % 11];
      if (x % 5 == 0) r.push_back(static_cast<uint8_t>(x >> 40));
      r.insert(r.end(), w, w + std::strlen(w));
    }
    r.resize(size);
  }
  return out;
}

inline double CpuSeconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + 1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

}  // namespace uzfs::bench
