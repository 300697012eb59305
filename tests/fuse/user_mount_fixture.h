// A dataset of a fresh pool mounted through FUSE (writeback cache and
// default_permissions, as uzfsd mounts), with a world-writable root, and
// AsUser to act as an unprivileged user against it: the fixture of the
// tests that check what the kernel and uzfsd together allow a user.
//
// Needs /dev/fuse and root (to act as another user); skips otherwise,
// unless UZFS_REQUIRE_FUSE=1.
#pragma once

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "fuse/fuse_mount.h"
#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs::test {

inline constexpr uid_t kUser = 1000;
inline constexpr gid_t kGroup = 1000;

// Runs fn in a child process as kUser:kGroup (no capabilities left, no
// supplementary groups); its exit status (0 = fn returned true).
inline int AsUser(const std::function<bool()>& fn) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setresgid(kGroup, kGroup, kGroup) != 0 ||
        setresuid(kUser, kUser, kUser) != 0)
      _exit(2);
    _exit(fn() ? 0 : 1);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

// Opens `path` with `flags`, writes 4 KiB, closes; true when all worked.
inline bool WriteSome(const std::string& path, int flags = O_WRONLY) {
  const int fd = open(path.c_str(), flags, 0644);
  if (fd < 0) return false;
  char buf[4096] = {'x'};
  const bool ok = write(fd, buf, sizeof(buf)) == static_cast<ssize_t>(sizeof(buf));
  return close(fd) == 0 && ok;
}

class UserMountTest : public ::testing::Test {
 protected:
  void SetUp() override {
    namespace fs = std::filesystem;
    UZFS_REQUIRE_FUSE();
    if (geteuid() != 0) GTEST_SKIP() << "needs root to act as another user";
    fs::permissions(dir_.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                     fs::perms::others_read | fs::perms::others_exec);
    PoolLayout layout;
    layout.data.push_back(pooltest::Leaf(dir_.path(), "d0", PoolBytes()));
    PoolCreateOptions o = pooltest::V23("zpool create usermount");
    o.version = 5000;
    o.fs_init = InitNewFilesystem;
    auto p = Pool::Create("usermount", layout, o);
    ASSERT_UZFS_OK(p.status());
    pool_ = std::move(*p);
    auto z = ZplFs::Mount(*pool_, "usermount");
    ASSERT_TRUE(z.ok()) << z.status().ToString();
    zpl_ = std::move(*z);
    fs::create_directories(dir_.path() / "mnt");
    FuseMountOptions fo = MountOptions();
    fo.debug = std::getenv("UZFS_FUSE_DEBUG") != nullptr;
    auto m = FuseMount::Start(*zpl_, (dir_.path() / "mnt").string(), fo);
    ASSERT_UZFS_OK(m.status());
    fuse_ = std::move(*m);
    mnt_ = fuse_->mountpoint();
    ASSERT_EQ(chmod(mnt_.c_str(), 0777), 0);
  }
  // The mount's options (a test may change some).
  virtual FuseMountOptions MountOptions() const { return {}; }
  // The pool's one sparse device: large enough by default that files are
  // written through the page cache (near a full pool they are opened direct).
  virtual uint64_t PoolBytes() const { return 2ull << 30; }
  void TearDown() override {
    if (fuse_) {
      EXPECT_UZFS_OK(fuse_->Stop(true));
    }
    fuse_.reset();
    if (zpl_) {
      EXPECT_TRUE(zpl_->Unmount().ok());
    }
    zpl_.reset();
    if (pool_) {
      EXPECT_UZFS_OK(pool_->Export());
    }
  }

  test::TempDir dir_;
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<ZplFs> zpl_;
  std::unique_ptr<FuseMount> fuse_;
  std::string mnt_;
};

}  // namespace uzfs::test
