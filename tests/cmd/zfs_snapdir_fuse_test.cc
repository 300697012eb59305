// .zfs/snapshot through uzfsd's mounts: every snapshot's tree read-only
// under the file system's own mountpoint, with inode numbers of its own
// (hard links, find, tar and cp -a work across it); snapdir=hidden keeps
// .zfs out of the root's listing but not out of reach; mkdir, rmdir and mv
// there take, destroy and rename snapshots (root only); a snapshot with a
// file open in it refuses destroy, and one only browsed does not.
#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "tests/cmd/cli_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs::clitest {
namespace {

namespace fs = std::filesystem;

class ZfsSnapdirFuse : public MountingCliTest {};

int Sh(const std::string& cmd) {
  const int rc = std::system(("set -e; " + cmd).c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

std::set<std::string> Names(const std::string& dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.insert(e.path().filename().string());
  return out;
}

ino_t Ino(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

// errno of an operation that should fail (0 if it succeeded).
int Errno(int rc) { return rc == 0 ? 0 : errno; }
// errno of an open(2) that should fail (0, and the file closed, if it opened).
int OpenErrno(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) return errno;
  ::close(fd);
  return 0;
}

// errno of `op` run as user and group 65534 in a child process (0 when it
// succeeded).
int AsNobody(const std::function<int()>& op) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) _exit(255);
    _exit(op() == 0 ? 0 : errno);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST_F(ZfsSnapdirFuse, SnapshotsReadAsTheyWereUnderDotZfs) {
  UZFS_REQUIRE_FUSE();
  ASSERT_NO_FATAL_FAILURE(CreateMountedPool(env_.Dev("d0", 256ull << 20)));
  ASSERT_EQ(env_.Zfs("create tank/fs").rc, 0);
  const std::string d = root_ + "/fs";
  const std::string big(300000, 'b');
  ASSERT_EQ(Sh("mkdir " + d + "/sub && printf 'one\\n' > " + d + "/file && printf '" + big.substr(0, 10) +
               "' > " + d + "/sub/small && ln " + d + "/file " + d + "/sub/link && ln -s ../file " + d +
               "/sub/sym"),
            0);
  {
    std::ofstream(d + "/big", std::ios::binary) << big;
  }
  ASSERT_EQ(::setxattr((d + "/file").c_str(), "user.k", "v1", 2, 0), 0);
  ASSERT_EQ(env_.Zfs("snapshot tank/fs@one").rc, 0);
  ASSERT_EQ(Sh("printf 'two\\n' > " + d + "/file && rm " + d + "/big && touch " + d + "/after"), 0);
  ASSERT_EQ(env_.Zfs("snapshot tank/fs@two").rc, 0);

  // Hidden by default: not listed, yet there.
  EXPECT_EQ(Names(d).count(".zfs"), 0u);
  const std::string snaps = d + "/.zfs/snapshot";
  EXPECT_EQ(Names(d + "/.zfs"), (std::set<std::string>{"snapshot"}));
  EXPECT_EQ(Names(snaps), (std::set<std::string>{"one", "two"}));
  const std::string one = snaps + "/one", two = snaps + "/two";
  EXPECT_EQ(test::ReadText(one + "/file"), "one\n");
  EXPECT_EQ(test::ReadText(two + "/file"), "two\n");
  EXPECT_EQ(test::ReadText(d + "/file"), "two\n");
  EXPECT_EQ(test::ReadText(one + "/big"), big);
  EXPECT_FALSE(fs::exists(two + "/big"));
  EXPECT_FALSE(fs::exists(one + "/after"));
  EXPECT_TRUE(fs::exists(two + "/after"));
  EXPECT_EQ(fs::read_symlink(one + "/sub/sym"), "../file");
  EXPECT_EQ(test::ReadText(one + "/sub/sym"), "one\n");
  char v[8] = {};
  EXPECT_EQ(::getxattr((one + "/file").c_str(), "user.k", v, sizeof(v)), 2);
  EXPECT_EQ(std::string(v, 2), "v1");

  // Inode numbers: a snapshot's files have their own, links share theirs.
  EXPECT_NE(Ino(one + "/file"), 0u);
  EXPECT_EQ(Ino(one + "/file"), Ino(one + "/sub/link"));
  EXPECT_NE(Ino(one + "/file"), Ino(two + "/file"));
  EXPECT_NE(Ino(one + "/file"), Ino(d + "/file"));
  EXPECT_NE(Ino(one), Ino(two));
  EXPECT_NE(Ino(one), Ino(d));

  // Read-only, whoever asks.
  EXPECT_EQ(OpenErrno(one + "/file", O_WRONLY), EROFS);
  EXPECT_EQ(Errno(::mkdir((one + "/new").c_str(), 0755)), EROFS);
  EXPECT_EQ(Errno(::unlink((one + "/file").c_str())), EROFS);
  EXPECT_EQ(Errno(::rename((one + "/file").c_str(), (one + "/moved").c_str())), EROFS);
  EXPECT_EQ(Errno(::setxattr((one + "/file").c_str(), "user.k", "v2", 2, 0)), EROFS);
  EXPECT_EQ(Errno(::rename((d + "/file").c_str(), (one + "/file").c_str())), EXDEV);
  EXPECT_EQ(Errno(::link((one + "/file").c_str(), (d + "/linked").c_str())), EXDEV);
  EXPECT_EQ(Errno(::mkdir((d + "/.zfs/other").c_str(), 0755)), EROFS);
  EXPECT_EQ(test::ReadText(one + "/file"), "one\n");

  // The ordinary tools across trees: find counts, tar and cp -a copy with
  // the hard link kept.
  const std::string out = (env_.tmp() / "out").string();
  EXPECT_EQ(Sh("test \"$(find " + snaps + " -type f | wc -l)\" = 8"), 0);  // 4 names in each
  EXPECT_EQ(Sh("mkdir -p " + out + "/tar " + out + "/cp && tar -C " + one + " -cf - . | tar -C " + out +
               "/tar -xf - && cp -a " + one + "/. " + out + "/cp"),
            0);
  for (const std::string& copy : {out + "/tar", out + "/cp"}) {
    EXPECT_EQ(test::ReadText(copy + "/file"), "one\n") << copy;
    EXPECT_EQ(test::ReadText(copy + "/big"), big) << copy;
    EXPECT_EQ(Ino(copy + "/file"), Ino(copy + "/sub/link")) << copy;
  }
  EXPECT_EQ(Sh("diff -r " + one + " " + out + "/cp >/dev/null"), 0);

  // snapdir=visible lists .zfs in the root (and only there); hidden again.
  ASSERT_EQ(env_.Zfs("set snapdir=visible tank/fs").rc, 0);
  EXPECT_EQ(Names(d).count(".zfs"), 1u);
  EXPECT_EQ(Names(d + "/sub").count(".zfs"), 0u);
  EXPECT_EQ(Names(root_).count(".zfs"), 0u);  // tank's own stays hidden
  ASSERT_EQ(env_.Zfs("inherit snapdir tank/fs").rc, 0);
  EXPECT_EQ(Names(d).count(".zfs"), 0u);

  // Snapshots taken and destroyed by the commands show at once.
  ASSERT_EQ(env_.Zfs("snapshot tank/fs@three").rc, 0);
  EXPECT_EQ(Names(snaps), (std::set<std::string>{"one", "two", "three"}));
  ASSERT_EQ(env_.Zfs("destroy tank/fs@two").rc, 0);  // browsed above, nothing open: not busy
  EXPECT_EQ(Names(snaps), (std::set<std::string>{"one", "three"}));
  EXPECT_FALSE(fs::exists(two + "/file"));
  ASSERT_EQ(env_.Zfs("rename tank/fs@one tank/fs@first").rc, 0);
  EXPECT_EQ(test::ReadText(snaps + "/first/file"), "one\n");
  EXPECT_FALSE(fs::exists(one));
  // Browsed, not in use: a dry run and a recursive destroy go through.
  Ran r = env_.Zfs("destroy -nv tank/fs@first");
  EXPECT_EQ(r.rc, 0) << r.err;
  r = env_.Zfs("destroy -r tank/fs");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env_.Zfs("list -H -o name -t all").out, "tank\n");
}

TEST_F(ZfsSnapdirFuse, MkdirRmdirAndMvThereTakeDestroyAndRenameSnapshots) {
  UZFS_REQUIRE_FUSE();
  ASSERT_NO_FATAL_FAILURE(CreateMountedPool(env_.Dev("d0", 256ull << 20)));
  const std::string snaps = root_ + "/.zfs/snapshot";
  // Written, not closed: the kernel still caches the pages when mkdir
  // takes the snapshot.
  const std::string data(200000, 'x');
  const int fd = ::open((root_ + "/pending").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  ASSERT_EQ(::mkdir((snaps + "/m").c_str(), 0755), 0) << std::strerror(errno);
  ::close(fd);
  EXPECT_EQ(env_.Zfs("list -H -o name -t snapshot").out, "tank@m\n");
  EXPECT_EQ(test::ReadText(snaps + "/m/pending"), data);

  // Bad names and taken names: the pool's refusals, nothing changed.
  EXPECT_EQ(Errno(::mkdir((snaps + "/m").c_str(), 0755)), EEXIST);
  EXPECT_EQ(Errno(::mkdir((snaps + "/a@b").c_str(), 0755)), EINVAL);
  // Only root: another user is refused by the kernel (the directory is
  // read-only to it), and nothing changes.
  fs::permissions(env_.tmp(), fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  EXPECT_EQ(AsNobody([&] { return ::mkdir((snaps + "/nobody").c_str(), 0755); }), EACCES);
  EXPECT_EQ(AsNobody([&] { return ::rmdir((snaps + "/m").c_str()); }), EACCES);
  EXPECT_EQ(AsNobody([&] { return ::access((snaps + "/m/pending").c_str(), R_OK); }), 0);  // but may read
  EXPECT_EQ(env_.Zfs("list -H -o name -t snapshot").out, "tank@m\n");

  ASSERT_EQ(::rename((snaps + "/m").c_str(), (snaps + "/n").c_str()), 0) << std::strerror(errno);
  EXPECT_EQ(env_.Zfs("list -H -o name -t snapshot").out, "tank@n\n");
  EXPECT_EQ(test::ReadText(snaps + "/n/pending"), data);

  // A file open in it: busy, for rmdir and zfs destroy alike.
  const int held = ::open((snaps + "/n/pending").c_str(), O_RDONLY);
  ASSERT_GE(held, 0);
  EXPECT_EQ(Errno(::rmdir((snaps + "/n").c_str())), EBUSY);
  Ran r = env_.Zfs("destroy tank@n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot destroy snapshot tank@n: dataset is busy\n");
  char buf[16];
  EXPECT_EQ(::pread(held, buf, sizeof(buf), 0), static_cast<ssize_t>(sizeof(buf)));
  ::close(held);
  // Closed: the release reaches uzfsd in the background; rmdir works then.
  int rc = -1;
  for (int i = 0; i < 100 && (rc = ::rmdir((snaps + "/n").c_str())) != 0 && errno == EBUSY; i++) ::usleep(20000);
  EXPECT_EQ(rc, 0) << std::strerror(errno);
  EXPECT_EQ(env_.Zfs("list -H -o name -t snapshot").out, "");
  EXPECT_TRUE(Names(snaps).empty());
  EXPECT_EQ(Errno(::rmdir((snaps + "/n").c_str())), ENOENT);
  // All the space came back: the file system alone holds the file.
  EXPECT_EQ(env_.Zfs("get -Hp -o value usedbysnapshots tank").out, "0\n");
}

}  // namespace
}  // namespace uzfs::clitest
