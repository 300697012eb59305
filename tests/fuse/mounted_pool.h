// MountedPool: a one-file pool with datasets mounted through FuseMount
// (the adapter uzfsd uses), torn down in order; and RunChains, which runs
// synchronous request chains from several threads at once. Shared by the
// FUSE tests that drive a mount with syscalls.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "fuse/fuse_mount.h"
#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs {

// Runs chain(<prefix><t>_<i>, i) from `threads` threads at once, i < iters
// in each; how many chains failed.
inline int RunChains(const std::string& prefix, int threads, int iters,
              const std::function<bool(const std::string&, int)>& chain) {
  std::vector<std::thread> users;
  std::atomic<int> failures{0};
  for (int t = 0; t < threads; ++t) {
    users.emplace_back([&, t] {
      for (int i = 0; i < iters; ++i) {
        if (!chain(prefix + std::to_string(t) + "_" + std::to_string(i), i)) failures.fetch_add(1);
      }
    });
  }
  for (std::thread& u : users) u.join();
  return failures.load();
}

// A pool with datasets mounted through FUSE; everything torn down in order.
class MountedPool {
 public:
  explicit MountedPool(const std::filesystem::path& dir, uint64_t version = 23) : dir_(dir) {
    PoolLayout layout;
    layout.data.push_back(pooltest::Leaf(dir, "d0", 512ull << 20));
    PoolCreateOptions o = pooltest::V23("zpool create fusetest");
    o.version = version;
    o.fs_init = InitNewFilesystem;
    o.txg.timeout = std::chrono::milliseconds(200);
    auto p = Pool::Create("fusetest", layout, o);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (p.ok()) pool_ = std::move(*p);
  }
  ~MountedPool() { Close(); }

  Pool* pool() { return pool_.get(); }

  // Mounts dataset ds at dir/<mnt>; the mount's path.
  std::string Mount(const std::string& ds, const std::string& mnt, FuseMountOptions fo = {}) {
    std::filesystem::create_directories(dir_ / mnt);
    auto z = ZplFs::Mount(*pool_, ds);
    EXPECT_TRUE(z.ok()) << z.status().ToString();
    if (!z.ok()) return "";
    fo.fsname = ds;
    auto m = FuseMount::Start(**z, (dir_ / mnt).string(), fo);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    if (!m.ok()) return "";
    std::string path = (*m)->mountpoint();
    mounts_.push_back({std::move(*z), std::move(*m)});
    return path;
  }

  // Unmounts everything (files must be closed).
  void UnmountAll() {
    for (auto& e : mounts_) {
      if (e.fuse) EXPECT_UZFS_OK(e.fuse->Stop(true));
      e.fuse.reset();
      if (e.zpl) {
        ZplStatus s = e.zpl->Unmount();
        EXPECT_TRUE(s.ok()) << s.ToString();
      }
      e.zpl.reset();
    }
    mounts_.clear();
  }

  FuseMount& fuse(size_t i) { return *mounts_[i].fuse; }

  void Export() {
    UnmountAll();
    if (pool_) EXPECT_UZFS_OK(pool_->Export());
    pool_.reset();
  }

  void Import() {
    PoolImportOptions o;
    o.fs_init = InitNewFilesystem;
    o.txg.timeout = std::chrono::milliseconds(200);
    auto p = pooltest::ImportFrom(dir_, "fusetest", o);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pool_ = std::move(*p);
  }

  void Close() {
    UnmountAll();
    if (pool_) (void)pool_->Export();
    pool_.reset();
  }

 private:
  struct Entry {
    std::unique_ptr<ZplFs> zpl;
    std::unique_ptr<FuseMount> fuse;
  };
  std::filesystem::path dir_;
  std::unique_ptr<Pool> pool_;
  std::vector<Entry> mounts_;
};

}  // namespace uzfs
