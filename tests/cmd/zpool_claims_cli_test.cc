// zpool create/add refuse what would destroy someone else's data, as
// OpenZFS does: a device holding a file system or a partition table (real
// ext2, ext4 and xfs file systems and a dos label, on loop devices) without
// -f; one device under two names (two loop devices over one file, a loop
// device over a pool's file, a symlink); a mount point that would hide
// files; a relative alternate root. Each refusal exits 1 with zpool's
// message and leaves the device's bytes as they were.
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using clitest::CliEnv;
using clitest::Contains;
using clitest::Ran;

// A loop device over `file`, detached on destruction.
class Loop {
 public:
  Loop(const std::string& file, const std::string& errfile) {
    Ran r = clitest::RunShell("losetup --find --show '" + file + "' 2>" + errfile, errfile);
    if (r.rc == 0 && !r.out.empty()) dev_ = r.out.substr(0, r.out.find('\n'));
    error_ = r.err;
  }
  ~Loop() {
    if (!dev_.empty()) std::system(("losetup -d '" + dev_ + "' 2>/dev/null").c_str());
  }
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;
  const std::string& dev() const { return dev_; }
  const std::string& error() const { return error_; }

 private:
  std::string dev_, error_;
};

class ZpoolClaimsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "loop devices need root";
  }
  void TearDown() override {
    env_.Zpool("destroy -f tank");
    env_.Zpool("destroy -f other");
    env_.StopDaemon();
  }
  // Runs a shell command in the test's folder; ASSERTs that it worked.
  std::string Sh(const std::string& cmd) {
    const std::string err = (env_.tmp() / "sh.err").string();
    Ran r = clitest::RunShell(cmd + " 2>" + err, err);
    EXPECT_EQ(r.rc, 0) << cmd << ": " << r.err;
    return r.out;
  }
  // The md5 of the first and last MiB of `dev`: what a pool's labels
  // would overwrite.
  std::string Ends(const std::string& dev) {
    return Sh("{ head -c 1048576 '" + dev + "'; tail -c 1048576 '" + dev + "'; } | md5sum");
  }
  std::string Err() const { return (env_.tmp() / "loop.err").string(); }
  CliEnv env_;
};

TEST_F(ZpoolClaimsTest, DevicesHoldingAFileSystemNeedForce) {
  struct Fs {
    const char* type;
    const char* mkfs;
  };
  const std::string mnt = (env_.tmp() / "mnt").string();
  for (const Fs& fs : {Fs{"ext2", "mkfs.ext2 -q -F"}, Fs{"ext4", "mkfs.ext4 -q -F"}, Fs{"xfs", "mkfs.xfs -q -f"}}) {
    SCOPED_TRACE(fs.type);
    const std::string file = env_.Dev(std::string("fs-") + fs.type, 320ull << 20);
    Loop loop(file, Err());
    ASSERT_FALSE(loop.dev().empty()) << loop.error();
    Sh(std::string(fs.mkfs) + " " + loop.dev());
    const std::string before = Ends(loop.dev());

    Ran r = env_.Zpool("create -m " + mnt + " tank " + loop.dev());
    EXPECT_EQ(r.rc, 1);
    EXPECT_EQ(r.err, "invalid vdev specification\nuse '-f' to override the following errors:\n" + loop.dev() +
                         " contains a filesystem of type '" + fs.type + "'\n");
    // As a second data vdev, a log, a cache device, a mirror side:
    // refused alike (the pool is on a disk too: no replication warning).
    Loop o1(env_.Dev("o1", 320ull << 20), Err());
    ASSERT_FALSE(o1.dev().empty()) << o1.error();
    ASSERT_EQ(env_.Zpool("create -m " + mnt + " other " + o1.dev()).rc, 0);
    r = env_.Zpool("add other " + loop.dev());
    EXPECT_EQ(r.rc, 1);
    EXPECT_TRUE(Contains(r.err, "contains a filesystem of type '" + std::string(fs.type) + "'")) << r.err;
    r = env_.Zpool("add other log " + loop.dev());
    EXPECT_EQ(r.rc, 1);
    EXPECT_TRUE(Contains(r.err, "contains a filesystem")) << r.err;
    r = env_.Zpool("add other cache " + loop.dev());
    EXPECT_EQ(r.rc, 1);
    EXPECT_TRUE(Contains(r.err, "contains a filesystem")) << r.err;
    r = env_.Zpool("attach other " + o1.dev() + " " + loop.dev());
    EXPECT_EQ(r.rc, 1);
    EXPECT_TRUE(Contains(r.err, "contains a filesystem")) << r.err;
    ASSERT_EQ(env_.Zpool("destroy other").rc, 0);
    // Nothing was written: the file system is still there, byte for byte.
    EXPECT_EQ(Ends(loop.dev()), before);
    EXPECT_EQ(Sh("blkid -p -o value -s TYPE " + loop.dev()), std::string(fs.type) + "\n");

    // -f takes it, and the pool's labels replace the file system's.
    r = env_.Zpool("create -f -m " + mnt + " tank " + loop.dev());
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(Sh("blkid -p -o value -s TYPE " + loop.dev()), "zfs_member\n");
    ASSERT_EQ(env_.Zpool("destroy tank").rc, 0);
    // A destroyed pool's device is free without -f.
    r = env_.Zpool("create -m " + mnt + " tank " + loop.dev());
    EXPECT_EQ(r.rc, 0) << r.err;
    ASSERT_EQ(env_.Zpool("destroy tank").rc, 0);
  }
}

TEST_F(ZpoolClaimsTest, APartitionTableNeedsForce) {
  const std::string file = env_.Dev("parted", 128ull << 20);
  Sh("echo 'start=2048, size=100000, type=83' | sfdisk -q " + file);
  Loop loop(file, Err());
  ASSERT_FALSE(loop.dev().empty()) << loop.error();
  const std::string before = Ends(loop.dev());
  Ran r = env_.Zpool("create -m " + (env_.tmp() / "mnt").string() + " tank " + loop.dev());
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, loop.dev() + " contains a partition table of type 'dos'")) << r.err;
  EXPECT_EQ(Ends(loop.dev()), before);
  // The file itself, not only the loop device over it.
  r = env_.Zpool("create -m " + (env_.tmp() / "mnt").string() + " tank " + file);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "contains a partition table")) << r.err;
}

TEST_F(ZpoolClaimsTest, OneDeviceUnderTwoNamesIsRefused) {
  const std::string mnt = (env_.tmp() / "mnt").string();
  const std::string file = env_.Dev("shared");
  Loop a(file, Err()), b(file, Err());
  ASSERT_FALSE(a.dev().empty()) << a.error();
  ASSERT_FALSE(b.dev().empty()) << b.error();
  Ran r = env_.Zpool("create -m " + mnt + " tank mirror " + a.dev() + " " + b.dev());
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "invalid vdev specification: " + a.dev() + " and " + b.dev() + " are the same device\n");
  r = env_.Zpool("create -m " + mnt + " tank mirror " + file + " " + a.dev());
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "invalid vdev specification: " + file + " and " + a.dev() + " are the same device\n");
  std::filesystem::create_symlink(file, env_.tmp() / "link");
  r = env_.Zpool("create -m " + mnt + " tank mirror " + file + " " + (env_.tmp() / "link").string());
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "are the same device")) << r.err;
  EXPECT_EQ(env_.Zpool("list tank").rc, 1);

  // A pool's file under another name: part of that pool.
  ASSERT_EQ(env_.Zpool("create -m " + mnt + " tank " + file).rc, 0);
  r = env_.Zpool("create -m " + mnt + "2 other " + a.dev());
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "invalid vdev specification\nthe following errors must be manually repaired:\n" + a.dev() +
                       " is part of active pool 'tank'\n");
  r = env_.Zpool("add -f tank " + b.dev());
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, b.dev() + " is part of active pool 'tank'")) << r.err;
  r = env_.Zpool("add tank " + env_.Dev("x") + " " + env_.devdir() + "/x");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "is listed more than once")) << r.err;
  EXPECT_EQ(env_.Zpool("status -x tank").rc, 0);
}

TEST_F(ZpoolClaimsTest, MountPointsThatWouldHideFilesAndRelativeRootsAreRefused) {
  const std::string dev = env_.Dev("d0");
  const std::string full = (env_.tmp() / "full").string();
  std::filesystem::create_directories(full);
  clitest::PutFile(full + "/keep", {1, 2, 3});

  Ran r = env_.Zpool("create -m " + full + " tank " + dev);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "mountpoint '" + full + "' exists and is not empty\nuse '-m' option to provide a different default\n");
  r = env_.Zpool("create -O mountpoint=" + full + " tank " + dev);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "exists and is not empty")) << r.err;
  // The default mount point under the altroot: ALTROOT/tank.
  const std::string alt = (env_.tmp() / "alt").string();
  std::filesystem::create_directories(alt + "/tank");
  clitest::PutFile(alt + "/tank/keep", {4});
  r = env_.Zpool("create -R " + alt + " tank " + dev);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "mountpoint '" + alt + "/tank' exists and is not empty")) << r.err;
  // Relative alternate roots, by -R and by -o altroot.
  r = env_.Zpool("create -R alt tank " + dev);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "invalid alternate root 'alt': must be an absolute path\n");
  r = env_.Zpool("create -o altroot=alt tank " + dev);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "invalid alternate root 'alt': must be an absolute path\n");
  EXPECT_EQ(env_.Zpool("list tank").rc, 1);
  EXPECT_TRUE(std::filesystem::exists(full + "/keep"));
  EXPECT_TRUE(std::filesystem::exists(alt + "/tank/keep"));

  // An empty directory, a missing one, legacy and none are fine.
  const std::string empty = (env_.tmp() / "empty").string();
  std::filesystem::create_directories(empty);
  ASSERT_EQ(env_.Zpool("create -m " + empty + " tank " + dev).rc, 0);
  ASSERT_EQ(env_.Zpool("destroy tank").rc, 0);
  ASSERT_EQ(env_.Zpool("create -m legacy -R " + alt + " tank " + dev).rc, 0);
  ASSERT_EQ(env_.Zpool("destroy tank").rc, 0);
  r = env_.Zpool("create -R " + alt + " -m /elsewhere tank " + dev);
  EXPECT_EQ(r.rc, 0) << r.err;
}

}  // namespace
}  // namespace uzfs
