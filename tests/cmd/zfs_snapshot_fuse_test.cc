// zfs snapshot and rollback through a mount. A snapshot of a mounted file
// system holds what was written through
// the mount before the command, pages the kernel's writeback cache had
// not handed to the daemon yet included; and a file written and fsync'd
// after the snapshot survives a SIGKILL of the daemon (the intent log the
// snapshot closed starts again). Rollback, plain and keeping the later
// state (-k), shows through the mount at once.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/cmd/cli_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs::clitest {
namespace {

class ZfsSnapshotFuse : public MountingCliTest {};

uint64_t Number(const Ran& r) { return std::strtoull(r.out.c_str(), nullptr, 10); }

TEST_F(ZfsSnapshotFuse, TheSnapshotHoldsWhatTheKernelStillCached) {
  UZFS_REQUIRE_FUSE();
  ASSERT_NO_FATAL_FAILURE(CreateMountedPool(env_.Dev("d0", 256ull << 20)));
  ASSERT_EQ(env_.Zfs("create tank/fs").rc, 0);
  const std::vector<uint8_t> data = test::RandomBytes(512 << 10, 1);
  // Written, neither fsync'd nor closed (a close would flush it): the pages
  // sit in the kernel's writeback cache.
  const int fd = ::open((root_ + "/fs/file").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  Ran r = env_.Zfs("snapshot tank/fs@now");
  ::close(fd);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_GE(Number(env_.Zfs("get -Hp -o value referenced tank/fs@now")), data.size());
  EXPECT_GE(Number(env_.Zfs("get -Hp -o value written tank/fs@now")), data.size());
  // Overwritten through the mount: the snapshot alone holds the old data.
  const std::vector<uint8_t> other = test::RandomBytes(8 << 20, 2);
  {
    std::ofstream f(root_ + "/fs/file", std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(other.data()), static_cast<std::streamsize>(other.size()));
  }
  ASSERT_EQ(env_.Zpool("sync tank").rc, 0);
  EXPECT_GE(Number(env_.Zfs("get -Hp -o value used tank/fs@now")), data.size());
  EXPECT_GE(Number(env_.Zfs("get -Hp -o value usedbysnapshots tank/fs")), data.size());
}

TEST_F(ZfsSnapshotFuse, AnFsyncAfterTheSnapshotSurvivesAKill) {
  UZFS_REQUIRE_FUSE();
  env_.extra_env = "UZFS_TXG_TIMEOUT=600";
  ASSERT_NO_FATAL_FAILURE(CreateMountedPool(env_.Dev("d0", 256ull << 20)));
  const std::string path = root_ + "/after";
  auto put = [&](const std::string& p, uint64_t seed) {
    const std::vector<uint8_t> d = test::RandomBytes(300000, seed);
    const int fd = ::open(p.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, d.data(), d.size()), static_cast<ssize_t>(d.size()));
    ASSERT_EQ(::fsync(fd), 0);
    ::close(fd);
  };
  ASSERT_NO_FATAL_FAILURE(put(root_ + "/before", 1));
  ASSERT_EQ(env_.Zfs("snapshot tank@s").rc, 0);
  ASSERT_NO_FATAL_FAILURE(put(path, 2));
  const pid_t pid = env_.DaemonPid();
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  for (int i = 0; i < 500 && CliEnv::Alive(pid); i++) ::usleep(10000);
  env_.Zpool("import -f -d " + env_.devdir() + " tank");  // the cache file imports it at start
  Ran r = env_.Zfs("mount");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::vector<uint8_t> want = test::RandomBytes(300000, 2);
  EXPECT_TRUE(test::ReadText(path) == std::string(want.begin(), want.end())) << "the fsync'd file did not survive";
  EXPECT_EQ(env_.Zfs("list -H -o name -t snapshot").out, "tank@s\n");
}

// zfs rollback of a mounted file system: the files read as the snapshot
// has them through the same mountpoint at once (nothing the kernel cached
// of the rolled-back state is seen), a file created since is gone, newer
// snapshots are refused without -r and destroyed with it.
TEST_F(ZfsSnapshotFuse, RollbackThroughTheMountShowsTheSnapshotAtOnce) {
  UZFS_REQUIRE_FUSE();
  ASSERT_NO_FATAL_FAILURE(CreateMountedPool(env_.Dev("d0", 256ull << 20)));
  ASSERT_EQ(env_.Zfs("create tank/fs").rc, 0);
  const std::string dir = root_ + "/fs";
  {
    std::ofstream(dir + "/keep") << "snapshot text\n";
  }
  ASSERT_EQ(env_.Zfs("snapshot tank/fs@one").rc, 0);
  {
    std::ofstream(dir + "/keep") << "changed after\n";
    std::ofstream(dir + "/new") << "made after\n";
  }
  EXPECT_EQ(test::ReadText(dir + "/keep"), "changed after\n");  // cached by the kernel now
  ASSERT_EQ(env_.Zfs("snapshot tank/fs@two").rc, 0);
  Ran r = env_.Zfs("rollback tank/fs@one");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot rollback to 'tank/fs@one': more recent snapshots or bookmarks exist\n"
                   "use '-r' to force deletion of the following snapshots and bookmarks:\ntank/fs@two\n");
  r = env_.Zfs("rollback -r tank/fs@one");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(test::ReadText(dir + "/keep"), "snapshot text\n");
  EXPECT_FALSE(std::filesystem::exists(dir + "/new"));
  EXPECT_EQ(env_.Zfs("list -H -o name -t snapshot").out, "tank/fs@one\n");
  // Writing goes on from there.
  {
    std::ofstream(dir + "/later") << "x\n";
  }
  ASSERT_EQ(env_.Zpool("sync tank").rc, 0);
  EXPECT_EQ(test::ReadText(dir + "/later"), "x\n");
  r = env_.Zfs("rollback tank/fs@nope");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'tank/fs@nope': dataset does not exist\n");
  r = env_.Zfs("rollback tank/fs");
  EXPECT_EQ(r.rc, 1);
}

// zfs rollback -k: the file system reads as the snapshot at once, while
// the later snapshot and everything written before the command (pages
// the kernel still cached included) are a new file system, a clone of
// the snapshot, mounted where a new file system would be; its name is
// printed when the command chose it. Bad combinations change nothing.
TEST_F(ZfsSnapshotFuse, RollbackKeepSavesTheLaterStateAsAClone) {
  UZFS_REQUIRE_FUSE();
  ASSERT_NO_FATAL_FAILURE(CreateMountedPool(env_.Dev("d0", 256ull << 20)));
  ASSERT_EQ(env_.Zfs("create tank/fs").rc, 0);
  const std::string dir = root_ + "/fs";
  {
    std::ofstream(dir + "/keep") << "snapshot text\n";
  }
  ASSERT_EQ(env_.Zfs("snapshot tank/fs@one").rc, 0);
  {
    std::ofstream(dir + "/keep") << "changed after\n";
  }
  ASSERT_EQ(env_.Zfs("snapshot tank/fs@two").rc, 0);
  {
    std::ofstream(dir + "/late") << "written last\n";  // in the kernel's cache only
  }
  Ran r = env_.Zfs("rollback -k -r tank/fs@one");
  EXPECT_EQ(r.rc, 2);
  r = env_.Zfs("rollback -k tank/fs@one tank/fs/inside");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("inside 'tank/fs'"), std::string::npos) << r.err;
  EXPECT_EQ(test::ReadText(dir + "/late"), "written last\n");
  r = env_.Zfs("rollback -k tank/fs@one");
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_TRUE(r.out.starts_with("tank/fs-rollback-")) << r.out;
  const std::string kept = r.out.substr(0, r.out.size() - 1);
  const std::string kept_dir = root_ + "/" + kept.substr(5);
  EXPECT_EQ(test::ReadText(dir + "/keep"), "snapshot text\n");
  EXPECT_FALSE(std::filesystem::exists(dir + "/late"));
  EXPECT_EQ(test::ReadText(kept_dir + "/keep"), "changed after\n");
  EXPECT_EQ(test::ReadText(kept_dir + "/late"), "written last\n");
  EXPECT_EQ(env_.Zfs("list -H -o name -t snapshot").out, "tank/fs@one\n" + kept + "@two\n");
  EXPECT_EQ(env_.Zfs("get -H -o value origin " + kept).out, "tank/fs@one\n");
  EXPECT_EQ(env_.Zfs("get -H -o value clones tank/fs@one").out, kept + "\n");
  // A name given: nothing printed.
  {
    std::ofstream(dir + "/keep") << "second change\n";
  }
  r = env_.Zfs("rollback -k tank/fs@one tank/mine");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(test::ReadText(root_ + "/mine/keep"), "second change\n");
  EXPECT_EQ(test::ReadText(dir + "/keep"), "snapshot text\n");
  r = env_.Zfs("rollback -k tank/fs@one tank/mine");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot create 'tank/mine': dataset already exists\n");
}

}  // namespace
}  // namespace uzfs::clitest
