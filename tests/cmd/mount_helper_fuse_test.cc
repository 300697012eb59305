// mount.fuse.uzfs, the mount(8) helper: a dataset with mountpoint=legacy
// mounts where mount(8) (or an fstab line of type fuse.uzfs) says, honours
// ro, is seen by `zfs get mounted` and `zfs unmount DIR`; a dataset with a
// mountpoint of its own is refused with ZFS's message; bad usage fails.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

namespace fs = std::filesystem;
using namespace clitest;

TEST(MountHelperFuse, LegacyDatasetMountsWhereMountSays) {
  UZFS_REQUIRE_FUSE();
  CliEnv env;
  ASSERT_EQ(env.Zpool("create -m none tank " + env.Dev("d0")).rc, 0);
  ASSERT_EQ(env.Zfs("create -o mountpoint=legacy tank/leg").rc, 0);
  ASSERT_EQ(env.Zfs("create -o mountpoint=/nonexistent/own tank/own").rc, 0);
  const fs::path dir = env.tmp() / "mnt";
  fs::create_directories(dir);

  // mount(8)'s calling convention: spec, dir, then -o.
  Ran r = env.Run("mount.fuse.uzfs", "tank/leg " + dir.string() + " -o rw,noatime,x-systemd.automount");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::ofstream(dir / "hello") << "through the legacy mount\n";
  r = env.Zfs("get -H -o value mounted tank/leg");
  EXPECT_EQ(r.out, "yes\n");
  r = env.Run("mount.fuse.uzfs", "tank/leg " + dir.string());
  EXPECT_NE(r.rc, 0);
  EXPECT_TRUE(Contains(r.err, "already mounted")) << r.err;
  r = env.Zfs("unmount " + dir.string());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(fs::exists(dir / "hello"));

  // ro: the file is there, writes are refused.
  r = env.Run("mount.fuse.uzfs", "-o ro tank/leg " + dir.string());
  ASSERT_EQ(r.rc, 0) << r.err;
  {
    std::ifstream in(dir / "hello");
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "through the legacy mount");
  }
  EXPECT_NE(::access(dir.c_str(), W_OK), 0);
  EXPECT_EQ(errno, EROFS);
  r = env.Zfs("unmount tank/leg");
  ASSERT_EQ(r.rc, 0) << r.err;

  // Not legacy: mount(8) is the wrong tool, as ZFS says.
  r = env.Run("mount.fuse.uzfs", "tank/own " + dir.string());
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "filesystem 'tank/own' cannot be mounted using 'mount'")) << r.err;
  EXPECT_TRUE(Contains(r.err, "Use 'zfs set mountpoint=legacy' or 'zfs mount tank/own'")) << r.err;
  // Bad input.
  r = env.Run("mount.fuse.uzfs", "tank/leg");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "usage: mount.fuse.uzfs")) << r.err;
  r = env.Run("mount.fuse.uzfs", "tank/nosuch " + dir.string());
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "dataset does not exist")) << r.err;
  r = env.Run("mount.fuse.uzfs", "tank/leg " + (env.tmp() / "missing").string());
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "mount point does not exist")) << r.err;
  r = env.Run("mount.fuse.uzfs", "-o frobnicate tank/leg " + dir.string());
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "unsupported mount option 'frobnicate'")) << r.err;
}

// The real mount(8): it finds helpers in /sbin only, so the test puts ours
// there for its duration (CI runs as root) unless one is installed.
TEST(MountHelperFuse, ThroughMountCommand) {
  UZFS_REQUIRE_FUSE();
  ASSERT_EQ(::geteuid(), 0u) << "mount(8) helpers need root";
  const fs::path helper = "/sbin/mount.fuse.uzfs";
  bool placed = false;
  if (!fs::exists(helper)) {
    fs::create_symlink(clitest::Bin("mount.fuse.uzfs"), helper);
    placed = true;
  }
  CliEnv env;
  ASSERT_EQ(env.Zpool("create -m none tank " + env.Dev("d0")).rc, 0);
  ASSERT_EQ(env.Zfs("create -o mountpoint=legacy tank/leg").rc, 0);
  const fs::path dir = env.tmp() / "mnt";
  fs::create_directories(dir);
  const std::string errfile = (env.tmp() / "mount.err").string();
  Ran r = clitest::RunShell("UZFS_RUNDIR=" + env.rundir() + " mount -t fuse.uzfs tank/leg " + dir.string() +
                                " 2>" + errfile,
                            errfile);
  EXPECT_EQ(r.rc, 0) << r.err;
  if (r.rc == 0) {
    std::ofstream(dir / "f") << "x";
    EXPECT_TRUE(fs::exists(dir / "f"));
    Ran m = clitest::RunShell("findmnt -n -o FSTYPE,SOURCE " + dir.string() + " 2>" + errfile, errfile);
    EXPECT_TRUE(Contains(m.out, "fuse.uzfs")) << m.out;
    EXPECT_TRUE(Contains(m.out, "tank/leg")) << m.out;
    EXPECT_EQ(env.Zfs("unmount " + dir.string()).rc, 0);
  }
  if (placed) fs::remove(helper);
}

}  // namespace
}  // namespace uzfs
