// Mount-related options as OpenZFS has them: zfs create -u creates without
// mounting; zfs set -u records a new mountpoint without moving the mount;
// unmount, export and destroy remove the (empty) mount-point directories
// that came from the default or a parent, and keep those set locally; a
// mount point already in use is mounted over; zfs mount -o takes
// temporary options, remount changes them.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using clitest::Contains;
using clitest::Ran;

bool MountedAt(const std::string& path) {
  std::ifstream m("/proc/self/mounts");
  std::string dev, where, rest;
  while (m >> dev >> where && std::getline(m, rest)) {
    if (where == path) return true;
  }
  return false;
}

class ZfsMountOptionsTest : public clitest::MountingCliTest {};

TEST_F(ZfsMountOptionsTest, CreateDashUDoesNotMount) {
  CreateMountedPool(env_.Dev("d0"));
  ASSERT_TRUE(Mounted(""));
  Ran r = env_.Zfs("create -u tank/quiet");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(MountedAt(root_ + "/quiet"));
  EXPECT_EQ(env_.Zfs("get -H -o value mounted tank/quiet").out, "no\n");
  r = env_.Zfs("create -u -p tank/p/q");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(MountedAt(root_ + "/p"));
  EXPECT_FALSE(MountedAt(root_ + "/p/q"));
  // Mounted when asked.
  ASSERT_EQ(env_.Zfs("mount tank/quiet").rc, 0);
  EXPECT_TRUE(Mounted("quiet"));
  // Without -u, at once.
  ASSERT_EQ(env_.Zfs("create tank/loud").rc, 0);
  EXPECT_TRUE(Mounted("loud"));
}

TEST_F(ZfsMountOptionsTest, SetDashURecordsTheMountpointWithoutMoving) {
  CreateMountedPool(env_.Dev("d0"));
  ASSERT_EQ(env_.Zfs("create tank/fs").rc, 0);
  ASSERT_TRUE(Mounted("fs"));
  const std::string elsewhere = (env_.tmp() / "elsewhere").string();
  Ran r = env_.Zfs("set -u mountpoint=" + elsewhere + " tank/fs");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env_.Zfs("get -H -o value mountpoint tank/fs").out, elsewhere + "\n");
  EXPECT_TRUE(MountedAt(root_ + "/fs"));
  EXPECT_FALSE(MountedAt(elsewhere));
  // The next mount uses it.
  ASSERT_EQ(env_.Zfs("unmount tank/fs").rc, 0);
  ASSERT_EQ(env_.Zfs("mount tank/fs").rc, 0);
  EXPECT_TRUE(MountedAt(elsewhere));
  // Without -u the mount moves at once.
  ASSERT_EQ(env_.Zfs("set mountpoint=" + root_ + "/back tank/fs").rc, 0);
  EXPECT_TRUE(MountedAt(root_ + "/back"));
  EXPECT_FALSE(MountedAt(elsewhere));
}

TEST_F(ZfsMountOptionsTest, DirectoriesMadeForMountsGoAwayWithThem) {
  CreateMountedPool(env_.Dev("d0"));
  ASSERT_EQ(env_.Zfs("create tank/inherited").rc, 0);
  const std::string own = (env_.tmp() / "own").string();
  ASSERT_EQ(env_.Zfs("create -o mountpoint=" + own + " tank/own").rc, 0);
  ASSERT_TRUE(Mounted("inherited"));
  ASSERT_TRUE(MountedAt(own));
  // zfs unmount: the inherited mount point goes, the local one stays.
  ASSERT_EQ(env_.Zfs("unmount tank/inherited").rc, 0);
  EXPECT_FALSE(std::filesystem::exists(root_ + "/inherited"));
  ASSERT_EQ(env_.Zfs("unmount tank/own").rc, 0);
  EXPECT_TRUE(std::filesystem::is_directory(own));
  // A directory holding files is never removed.
  ASSERT_EQ(env_.Zfs("mount tank/inherited").rc, 0);
  ASSERT_EQ(env_.Zfs("create tank/inherited/kid").rc, 0);
  ASSERT_TRUE(Mounted("inherited/kid"));
  // zpool destroy: every default or inherited one (the root's -m is local).
  ASSERT_EQ(env_.Zpool("destroy tank").rc, 0);
  EXPECT_FALSE(std::filesystem::exists(root_ + "/inherited/kid"));
  EXPECT_FALSE(std::filesystem::exists(root_ + "/inherited"));
  EXPECT_TRUE(std::filesystem::is_directory(root_));
  EXPECT_TRUE(std::filesystem::is_directory(own));

  // Export too; the pool's default /POOL under an altroot.
  const std::string alt = (env_.tmp() / "alt").string();
  Ran r = env_.Zpool("create -R " + alt + " tank " + env_.Dev("d1"));
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env_.Zfs("create tank/fs").rc, 0);
  for (int i = 0; i < 100 && !MountedAt(alt + "/tank/fs"); i++) usleep(100000);
  ASSERT_TRUE(MountedAt(alt + "/tank/fs"));
  std::ofstream(alt + "/tank/fs/file") << "data";
  ASSERT_EQ(env_.Zpool("export tank").rc, 0);
  EXPECT_FALSE(std::filesystem::exists(alt + "/tank"));
  EXPECT_TRUE(std::filesystem::is_directory(alt));
}

// zfs set mountpoint= sets the property even when the new place cannot be
// mounted (a regular file given to an unmounted legacy file system): the
// mount error is reported, the exit status is 0, as in OpenZFS.
TEST_F(ZfsMountOptionsTest, SetMountpointToAFileSetsIt) {
  CreateMountedPool(env_.Dev("d0"));
  ASSERT_EQ(env_.Zfs("create -o mountpoint=legacy tank/leg").rc, 0);
  const std::string file = (env_.tmp() / "afile").string();
  std::ofstream(file) << "x";
  Ran r = env_.Zfs("set mountpoint=" + file + " tank/leg");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env_.Zfs("get -H -o value,source mountpoint tank/leg").out, file + "\tlocal\n");
  EXPECT_FALSE(MountedAt(file));
  // A busy file system still stops the change.
  ASSERT_EQ(env_.Zfs("create tank/busy").rc, 0);
  ASSERT_TRUE(Mounted("busy"));
  {
    std::ofstream open_file(root_ + "/busy/held");
    open_file << "x";
    open_file.flush();
    r = env_.Zfs("set mountpoint=" + root_ + "/moved tank/busy");
    EXPECT_EQ(r.rc, 1);
    EXPECT_TRUE(Contains(r.err, "busy")) << r.err;
  }
}

// The options of the mount that /proc/self/mounts shows at `path` ("" when
// nothing is mounted there).
std::string MountOptionsAt(const std::string& path) {
  std::ifstream m("/proc/self/mounts");
  std::string dev, where, type, opts, rest, found;
  while (m >> dev >> where >> type >> opts && std::getline(m, rest)) {
    if (where == path) found = opts;
  }
  return "," + found + ",";
}

// zfs mount -o: temporary options for one mount (ro, noexec, nosuid,
// nodev), remount changes them on a mounted file system, the properties
// stay as they were.
TEST_F(ZfsMountOptionsTest, TemporaryMountOptions) {
  CreateMountedPool(env_.Dev("d0"));
  ASSERT_EQ(env_.Zfs("create -u tank/fs").rc, 0);
  const std::string at = root_ + "/fs";
  Ran r = env_.Zfs("mount -o ro,noexec tank/fs");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(MountOptionsAt(at), ",ro,")) << MountOptionsAt(at);
  EXPECT_TRUE(Contains(MountOptionsAt(at), ",noexec,")) << MountOptionsAt(at);
  EXPECT_FALSE(std::ofstream(at + "/file").good());  // read-only
  EXPECT_EQ(env_.Zfs("get -H -o value,source readonly,exec tank/fs").out, "off\tdefault\non\tdefault\n");
  // remount: rw again, nosuid; exec stays off (it was an option).
  r = env_.Zfs("mount -o remount,rw,nosuid tank/fs");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(MountOptionsAt(at), ",rw,")) << MountOptionsAt(at);
  EXPECT_TRUE(Contains(MountOptionsAt(at), ",nosuid,")) << MountOptionsAt(at);
  EXPECT_TRUE(Contains(MountOptionsAt(at), ",noexec,")) << MountOptionsAt(at);
  {
    std::ofstream f(at + "/file");
    f << "written";
    EXPECT_TRUE(f.good());
  }
  r = env_.Zfs("mount -o remount,exec tank/fs");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(Contains(MountOptionsAt(at), ",noexec,")) << MountOptionsAt(at);
  // Refusals: an unknown option, remount of what is not mounted, -o
  // without a file system.
  r = env_.Zfs("mount -o remount,bogus tank/fs");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot mount 'tank/fs': unsupported mount option 'bogus'\n");
  ASSERT_EQ(env_.Zfs("unmount tank/fs").rc, 0);
  r = env_.Zfs("mount -o remount,ro tank/fs");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "not currently mounted")) << r.err;
  r = env_.Zfs("mount -o ro");
  EXPECT_EQ(r.rc, 1);
  // Mounted again without options: as the properties say.
  ASSERT_EQ(env_.Zfs("mount tank/fs").rc, 0);
  EXPECT_TRUE(Contains(MountOptionsAt(at), ",rw,")) << MountOptionsAt(at);
  EXPECT_EQ(test::ReadText(at + "/file"), "written");
}

// A mount point that is already a mount point is mounted over (Linux's
// and OpenZFS's overlay=on default); unmounting uncovers it again.
TEST_F(ZfsMountOptionsTest, AMountPointInUseIsMountedOver) {
  CreateMountedPool(env_.Dev("d0"));
  const std::string under = (env_.tmp() / "under").string();
  std::filesystem::create_directories(under);
  std::ofstream(under + "/below") << "below";
  // A bind mount of the directory onto itself: a mount point, as a busy one.
  const std::string err = (env_.tmp() / "bind.err").string();
  ASSERT_EQ(clitest::RunShell("mount --bind " + under + " " + under + " 2>" + err, err).rc, 0);
  struct Unbind {
    std::string path;
    ~Unbind() { std::system(("umount -l '" + path + "' 2>/dev/null").c_str()); }
  } unbind{under};
  Ran r = env_.Zfs("create -o mountpoint=" + under + " tank/over");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(under + "/below"));  // covered
  std::ofstream(under + "/above") << "above";
  ASSERT_EQ(env_.Zfs("unmount tank/over").rc, 0);
  EXPECT_TRUE(std::filesystem::exists(under + "/below"));
  EXPECT_FALSE(std::filesystem::exists(under + "/above"));
  EXPECT_TRUE(MountedAt(under));  // the bind mount is still there
  ASSERT_EQ(env_.Zfs("mount tank/over").rc, 0);
  EXPECT_TRUE(std::filesystem::exists(under + "/above"));
  ASSERT_EQ(env_.Zfs("unmount tank/over").rc, 0);
}

}  // namespace
}  // namespace uzfs
