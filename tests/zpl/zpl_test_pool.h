// ZplTestPool: a one-device pool in a test's temporary directory with its
// root dataset mounted through ZplFs, for tests of the POSIX layer: open,
// remount (unmount, export, import, mount), close (unmount and export).
// Header-only, in uzfs::zpltest.
#pragma once

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "tests/zpl/zpl_pool_util.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs::zpltest {

class ZplTestPool {
 public:
  // What every Mount here uses (set before Open).
  void set_mount_options(const ZplMountOptions& mo) { mount_opts_ = mo; }
  // Creates pool `name` (one device of `device_bytes`) and mounts it.
  void Open(const std::string& name, uint64_t device_bytes, PoolCreateOptions opts = pooltest::V23()) {
    name_ = name;
    PoolLayout l;
    l.data.push_back(pooltest::Leaf(dir_.path(), "d0", device_bytes));
    opts.fs_init = InitNewFilesystem;
    auto p = Pool::Create(name, l, opts);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pool_ = std::move(*p);
    Mount();
  }
  void Mount() {
    auto f = ZplFs::Mount(*pool_, name_, mount_opts_);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    fs_ = std::move(*f);
  }
  // Unmount, export, import, mount: what reaches the disks, and only that.
  void Remount() {
    Close();
    auto p = ImportWithZpl(dir_.path(), name_);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pool_ = std::move(*p);
    Mount();
  }
  // Unmounts and exports (nothing when already closed).
  void Close() {
    if (fs_) {
      EXPECT_TRUE(fs_->Unmount().ok());
    }
    fs_.reset();
    if (pool_) {
      EXPECT_TRUE(pool_->Export().ok());
    }
    pool_.reset();
  }
  ~ZplTestPool() { Close(); }

  ZplFs& fs() { return *fs_; }
  Pool& pool() { return *pool_; }
  const std::filesystem::path& dir() const { return dir_.path(); }

 private:
  test::TempDir dir_;
  std::string name_;
  ZplMountOptions mount_opts_;
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<ZplFs> fs_;
};

}  // namespace uzfs::zpltest
