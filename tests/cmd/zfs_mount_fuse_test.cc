// Mounts through the commands: the daemon mounts every dataset
// with a mountpoint when a pool is created or imported and when a dataset
// is created, `zfs mount`/`zfs unmount` (by name or path, -a, -f), a
// changed mountpoint or a rename moves the mount, `zfs get mounted`,
// export refusing while a file is open, a SIGTERM shutdown and the next
// daemon bringing the pools back mounted, and a SIGKILLed daemon's dead
// FUSE mounts cleared by the next import without the user's help.
//
// Needs /dev/fuse: skips without it unless UZFS_REQUIRE_FUSE=1 (CI).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

namespace fs = std::filesystem;
using namespace clitest;

int CountMounts(const std::string& path) {
  std::ifstream in("/proc/self/mounts");
  std::string dev, mnt, rest;
  int n = 0;
  while (in >> dev >> mnt && std::getline(in, rest)) n += mnt == path;
  return n;
}

bool IsMounted(const std::string& path) { return CountMounts(path) > 0; }

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

std::string ReadText(const std::string& path) { return test::ReadText(path); }

class MountCli : public MountingCliTest {
 protected:
  void CreatePool() { CreateMountedPool("mirror " + env_.Dev("a") + " " + env_.Dev("b")); }
};

TEST_F(MountCli, CreateMountsAndDatasetsFollowTheirMountpoints) {
  UZFS_REQUIRE_FUSE();
  CreatePool();
  EXPECT_TRUE(IsMounted(root_));
  Ran r = env_.Zfs("create -o compression=lz4 tank/home");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(IsMounted(root_ + "/home"));
  WriteText(root_ + "/home/f", "hello\n");
  EXPECT_EQ(ReadText(root_ + "/home/f"), "hello\n");

  r = env_.Zfs("mount");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, "tank\t" + root_ + "\ntank/home\t" + root_ + "/home\n");
  r = env_.Zfs("get -H -o value mounted tank/home");
  EXPECT_EQ(r.out, "yes\n");

  // Unmount by path, mount by name.
  r = env_.Zfs("unmount " + root_ + "/home");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(IsMounted(root_ + "/home"));
  EXPECT_EQ(env_.Zfs("get -H -o value mounted tank/home").out, "no\n");
  r = env_.Zfs("unmount tank/home");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("not currently mounted"), std::string::npos) << r.err;
  ASSERT_EQ(env_.Zfs("mount tank/home").rc, 0);
  EXPECT_EQ(ReadText(root_ + "/home/f"), "hello\n");
  r = env_.Zfs("mount tank/home");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("already mounted"), std::string::npos) << r.err;

  // A new mountpoint moves the mount; a rename moves it with the name.
  const std::string elsewhere = (env_.tmp() / "elsewhere").string();
  ASSERT_EQ(env_.Zfs("set mountpoint=" + elsewhere + " tank/home").rc, 0);
  EXPECT_FALSE(IsMounted(root_ + "/home"));
  EXPECT_TRUE(IsMounted(elsewhere));
  EXPECT_EQ(ReadText(elsewhere + "/f"), "hello\n");
  ASSERT_EQ(env_.Zfs("inherit mountpoint tank/home").rc, 0);
  EXPECT_TRUE(IsMounted(root_ + "/home"));
  r = env_.Zfs("rename tank/home tank/house");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(IsMounted(root_ + "/home"));
  EXPECT_TRUE(IsMounted(root_ + "/house"));
  EXPECT_EQ(ReadText(root_ + "/house/f"), "hello\n");

  // mountpoint=none and canmount=noauto do not mount automatically.
  ASSERT_EQ(env_.Zfs("create -o mountpoint=none tank/hidden").rc, 0);
  ASSERT_EQ(env_.Zfs("create -o canmount=noauto tank/manual").rc, 0);
  EXPECT_FALSE(IsMounted(root_ + "/manual"));
  r = env_.Zfs("mount tank/hidden");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("no mountpoint"), std::string::npos) << r.err;
  ASSERT_EQ(env_.Zfs("mount tank/manual").rc, 0);
  EXPECT_TRUE(IsMounted(root_ + "/manual"));

  // Destroy unmounts first.
  ASSERT_EQ(env_.Zfs("destroy tank/manual").rc, 0);
  EXPECT_FALSE(IsMounted(root_ + "/manual"));

  // create -p mounts every file system it creates.
  r = env_.Zfs("create -p tank/deep/er");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(IsMounted(root_ + "/deep"));
  EXPECT_TRUE(IsMounted(root_ + "/deep/er"));

  // A dataset that cannot mount (its mountpoint is a file) is created, says
  // why it is not mounted, and never fails a later, unrelated create.
  const std::string file = (env_.tmp() / "a-file").string();
  WriteText(file, "x");
  r = env_.Zfs("create -o mountpoint=" + file + " tank/bad");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("cannot mount 'tank/bad'"), std::string::npos) << r.err;
  EXPECT_EQ(env_.Zfs("list -H -o name tank/bad").out, "tank/bad\n");
  r = env_.Zfs("create tank/fine");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(IsMounted(root_ + "/fine"));
}

TEST_F(MountCli, ExportRefusesWhileAFileIsOpenAndImportMountsAgain) {
  UZFS_REQUIRE_FUSE();
  CreatePool();
  ASSERT_EQ(env_.Zfs("create tank/data").rc, 0);
  WriteText(root_ + "/data/kept", "kept across export\n");
  int fd = open((root_ + "/data/kept").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  Ran r = env_.Zpool("export tank");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("busy"), std::string::npos) << r.err;
  EXPECT_TRUE(IsMounted(root_ + "/data"));
  close(fd);
  r = env_.Zpool("export tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(IsMounted(root_ + "/data"));
  EXPECT_FALSE(IsMounted(root_));
  r = env_.Zpool("import -d " + env_.devdir() + " tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(IsMounted(root_ + "/data"));
  EXPECT_EQ(ReadText(root_ + "/data/kept"), "kept across export\n");
  // -N imports without mounting; zfs mount -a mounts what should be.
  ASSERT_EQ(env_.Zpool("export tank").rc, 0);
  r = env_.Zpool("import -N -d " + env_.devdir() + " tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(IsMounted(root_));
  EXPECT_EQ(env_.Zfs("mount").out, "");
  ASSERT_EQ(env_.Zfs("mount -a").rc, 0);
  EXPECT_TRUE(IsMounted(root_ + "/data"));
  EXPECT_EQ(ReadText(root_ + "/data/kept"), "kept across export\n");
}

TEST_F(MountCli, DaemonRestartsRemountAndDeadMountsAreCleared) {
  UZFS_REQUIRE_FUSE();
  CreatePool();
  ASSERT_EQ(env_.Zfs("create tank/data").rc, 0);
  WriteText(root_ + "/data/f", "one\n");
  ASSERT_EQ(env_.Zpool("list -H -o name").rc, 0);

  // SIGTERM: exported, unmounted; the next daemon imports and mounts.
  ASSERT_TRUE(env_.StopDaemon());
  EXPECT_FALSE(IsMounted(root_ + "/data"));
  Ran r = env_.Zfs("mount");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("tank/data\t" + root_ + "/data"), std::string::npos) << r.out;
  EXPECT_EQ(ReadText(root_ + "/data/f"), "one\n");

  // SIGKILL: the kernel keeps dead FUSE mounts ("Transport endpoint is not
  // connected" or ECONNABORTED); the next daemon's import clears them and mounts again.
  WriteText(root_ + "/data/g", "two\n");
  ASSERT_EQ(env_.Zpool("export tank").rc, 0);  // everything on disk
  ASSERT_EQ(env_.Zpool("import -d " + env_.devdir() + " tank").rc, 0);
  const pid_t pid = env_.DaemonPid();
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  for (int i = 0; i < 500 && CliEnv::Alive(pid); i++) usleep(10000);
  struct stat st;
  EXPECT_NE(stat((root_ + "/data").c_str(), &st), 0);
  EXPECT_TRUE(errno == ENOTCONN || errno == ECONNABORTED) << errno;
  r = env_.Zpool("import -f -d " + env_.devdir() + " tank");  // the cache file imports it at start
  r = env_.Zfs("mount");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("tank/data\t" + root_ + "/data"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(ReadText(root_ + "/data/g"), "two\n");
  // The dead mounts are gone, not stacked under the new ones.
  EXPECT_EQ(CountMounts(root_), 1);
  EXPECT_EQ(CountMounts(root_ + "/data"), 1);
}

// zpool sync: what was written through the mount, never fsync'd (so still
// in the kernel's writeback cache or the open txg), is on the disks when it
// returns: a SIGKILLed daemon's pool, imported again, has all of it, and the
// space figures count it. Bad names and flags are refused.
TEST_F(MountCli, ZpoolSyncPutsUnsyncedWritesOnTheDisks) {
  UZFS_REQUIRE_FUSE();
  CreatePool();
  const std::vector<uint8_t> bytes = test::RandomBytes(6u << 20, 7);
  const std::string data(bytes.begin(), bytes.end());
  {
    std::ofstream out(root_ + "/f", std::ios::binary);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
  }
  Ran r = env_.Zpool("sync tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env_.Zfs("get -Hp -o value used tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_GE(std::stoull(r.out), 6ull << 20) << r.out;
  EXPECT_EQ(env_.Zpool("sync").rc, 0);  // every pool
  r = env_.Zpool("sync nosuch");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'nosuch': no such pool\n");
  r = env_.Zpool("sync -x tank");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("sync [pool] ..."), std::string::npos) << r.err;

  const pid_t pid = env_.DaemonPid();
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  for (int i = 0; i < 500 && CliEnv::Alive(pid); i++) usleep(10000);
  env_.Zpool("import -f -d " + env_.devdir() + " tank");  // the cache file imports it at start
  r = env_.Zfs("mount");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(ReadText(root_ + "/f") == data) << "the synced file did not survive the kill";
}

// The requests a mount served, from the line uzfsd logs when it unmounts
// `path` ("unmounted tank from <path>: N requests, ..."); -1 when none.
long UnmountedRequests(const std::string& log, const std::string& path) {
  const std::string key = " from " + path + ": ";
  const size_t at = log.rfind(key);
  if (at == std::string::npos) return -1;
  return std::stol(log.substr(at + key.size()));
}

// 300 one-byte write(2)s through the mount, then zfs unmount. The pool has
// room enough (sparse 2 GiB devices) that files are not opened direct, as
// they are near a full pool.
long RequestsFor300TinyWrites(CliEnv& env, const std::string& root) {
  Ran r = env.Zpool("create -m " + root + " tank mirror " + env.Dev("a", 2ull << 30) + " " + env.Dev("b", 2ull << 30));
  EXPECT_EQ(r.rc, 0) << r.err;
  const int fd = ::open((root + "/f").c_str(), O_WRONLY | O_CREAT, 0644);
  EXPECT_GE(fd, 0) << std::strerror(errno);
  for (int i = 0; i < 300; i++) EXPECT_EQ(::write(fd, "x", 1), 1);
  EXPECT_EQ(::close(fd), 0);
  EXPECT_EQ(test::ReadText(root + "/f"), std::string(300, 'x'));
  r = env.Zfs("unmount tank");
  EXPECT_EQ(r.rc, 0) << r.err;
  const long n = UnmountedRequests(test::ReadText(env.rundir() + "/uzfsd.log"), root);
  env.Zpool("destroy -f tank");
  return n;
}

// UZFS_FUSE_WRITEBACK=0 (man/uzfsd.8) turns the kernel's writeback cache
// off: every write(2) is a request. With it (the default) the kernel
// gathers the 300 bytes into a page and hands it over once; any other value
// is logged and leaves the cache on. The counts come from the FUSE loop's
// counters that uzfsd logs at each unmount.
TEST_F(MountCli, WritebackCacheGathersTinyWritesAndCanBeTurnedOff) {
  UZFS_REQUIRE_FUSE();
  const long cached = RequestsFor300TinyWrites(env_, root_);
  EXPECT_GT(cached, 0);
  EXPECT_LT(cached, 150);
  ASSERT_TRUE(env_.StopDaemon());
  env_.extra_env = "UZFS_FUSE_WRITEBACK=0";
  const long through = RequestsFor300TinyWrites(env_, root_);
  EXPECT_GE(through, 300);
  std::string log = test::ReadText(env_.rundir() + "/uzfsd.log");
  EXPECT_NE(log.find("spins ("), std::string::npos) << log;

  // A value that is neither 0 nor 1 is said in the log, and the cache stays.
  ASSERT_TRUE(env_.StopDaemon());
  env_.extra_env = "UZFS_FUSE_WRITEBACK=off";
  EXPECT_LT(RequestsFor300TinyWrites(env_, root_), 150);
  log = test::ReadText(env_.rundir() + "/uzfsd.log");
  EXPECT_NE(log.find("UZFS_FUSE_WRITEBACK='off' is not 0 or 1"), std::string::npos) << log;
}

// The unmount log line of the mount at `path`, or "" when none.
std::string UnmountLine(const std::string& log, const std::string& path) {
  const size_t at = log.rfind(" from " + path + ": ");
  if (at == std::string::npos) return "";
  const size_t end = log.find('\n', at);
  return log.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// FUSE over io_uring is asked for by the user property uzfs:fuse_uring
// (inherited) or, without it, by UZFS_FUSE_URING; a mount that asked says
// in its unmount line how many requests came over the ring, or that the
// kernel did not offer it (the fuse module's enable_uring is off here
// unless a test turned it on: either answer shows the request reached the
// mount). Files read back the same either way.
TEST_F(MountCli, FuseUringIsAskedForByPropertyOrVariable) {
  UZFS_REQUIRE_FUSE();
  Ran r = env_.Zpool("create -m " + root_ + " tank " + env_.Dev("a", 256ull << 20));
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env_.Zfs("create -o uzfs:fuse_uring=on tank/ring").rc, 0);
  ASSERT_EQ(env_.Zfs("create tank/ring/child").rc, 0);  // inherits on
  // Only on and off: anything else is refused, one line, nothing changed.
  r = env_.Zfs("set uzfs:fuse_uring=yes tank/ring");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot set property for 'tank/ring': 'uzfs:fuse_uring' must be one of 'on | off'\n");
  r = env_.Zfs("create -o uzfs:fuse_uring=1 tank/bad");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("'uzfs:fuse_uring' must be one of 'on | off'"), std::string::npos) << r.err;
  EXPECT_NE(env_.Zfs("list tank/bad").rc, 0);
  r = env_.Zfs("get -H -o value uzfs:fuse_uring tank/ring tank/ring/child");
  EXPECT_EQ(r.out, "on\non\n");
  for (const std::string d : {"", "/ring", "/ring/child"}) WriteText(root_ + d + "/f", "data" + d);
  ASSERT_EQ(env_.Zfs("unmount -a").rc, 0);
  std::string log = test::ReadText(env_.rundir() + "/uzfsd.log");
  EXPECT_EQ(UnmountLine(log, root_).find("io_uring"), std::string::npos) << log;
  EXPECT_NE(UnmountLine(log, root_ + "/ring").find("io_uring"), std::string::npos) << log;
  EXPECT_NE(UnmountLine(log, root_ + "/ring/child").find("io_uring"), std::string::npos) << log;

  // The variable asks for every mount; the property, set off, wins (from
  // the next mount on: the restarted daemon's import mounts them).
  ASSERT_EQ(env_.Zfs("set uzfs:fuse_uring=off tank/ring/child").rc, 0);
  ASSERT_TRUE(env_.StopDaemon());
  env_.extra_env = "UZFS_FUSE_URING=1";
  ASSERT_EQ(env_.Zfs("mount -a").rc, 0);
  for (const std::string d : {"", "/ring", "/ring/child"}) EXPECT_EQ(ReadText(root_ + d + "/f"), "data" + d);
  ASSERT_EQ(env_.Zfs("unmount -a").rc, 0);
  log = test::ReadText(env_.rundir() + "/uzfsd.log");
  EXPECT_NE(UnmountLine(log, root_).find("io_uring"), std::string::npos) << log;
  EXPECT_EQ(UnmountLine(log, root_ + "/ring/child").find("io_uring"), std::string::npos) << log;

  // Any other value is said in the log and taken as 0.
  ASSERT_TRUE(env_.StopDaemon());
  env_.extra_env = "UZFS_FUSE_URING=yes";
  ASSERT_EQ(env_.Zfs("mount -a").rc, 0);
  ASSERT_EQ(env_.Zfs("unmount -a").rc, 0);
  log = test::ReadText(env_.rundir() + "/uzfsd.log");
  EXPECT_NE(log.find("UZFS_FUSE_URING='yes' is not 0 or 1"), std::string::npos) << log;
  EXPECT_EQ(UnmountLine(log, root_).find("io_uring"), std::string::npos) << log;
}

// After an export no cache of the daemon's holds the pool's blocks: a file
// read (into the ARC, and fed to a cache device) before the export, whose
// data is then damaged on the only data disk while exported, reads as EIO
// after the import, and the disk's checksum errors show. A cache that
// survived the export would serve the old bytes and hide the damage.
TEST_F(MountCli, ExportImportReadsTheDisksAgain) {
  UZFS_REQUIRE_FUSE();
  const std::string d0 = env_.Dev("d0", 256ull << 20);
  Ran r = env_.Zpool("create -m " + root_ + " tank " + d0 + " cache " + env_.Dev("c0", 128ull << 20));
  ASSERT_EQ(r.rc, 0) << r.err;
  std::string pattern;
  for (int i = 0; i < 100000; i++) pattern += "DAMAGEDATA";
  WriteText(root_ + "/f", pattern);
  for (int i = 0; i < 3; i++) ASSERT_EQ(ReadText(root_ + "/f"), pattern);
  ASSERT_EQ(env_.Zpool("export tank").rc, 0);
  // Overwrite every copy of the pattern on the disk (uncompressed data).
  ASSERT_GT(test::OverwriteAll(d0, pattern.substr(0, 100)), 1000) << "the file's data was not found on the disk";
  r = env_.Zpool("import -d " + env_.devdir() + " tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  const int fd = ::open((root_ + "/f").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  std::string back(pattern.size() + 1, '\0');
  ssize_t n = 0, got = 0;
  while ((n = ::read(fd, back.data() + got, back.size() - static_cast<size_t>(got))) > 0) got += n;
  const int err = n < 0 ? errno : 0;
  ::close(fd);
  EXPECT_EQ(err, EIO) << "the damaged file read back whole: a cache served it";
  r = env_.Zpool("status tank");
  std::string cksum;
  for (const std::string& l : clitest::Lines(r.out)) {
    if (l.find(d0) != std::string::npos) cksum = clitest::Fields(l).back();
  }
  EXPECT_NE(cksum, "0") << r.out;
  EXPECT_NE(cksum, "") << r.out;
}

// errno of reading the whole file (0: it read).
int ReadErrno(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return errno;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) {
  }
  const int err = n < 0 ? errno : 0;
  ::close(fd);
  return err;
}

bool Has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// Damage no copy can repair is told, and kept: the read fails, `zpool
// status` says how many blocks and -v which files (by path while mounted,
// by object number when not), -x lists the pool, -j counts them, the
// daemon logs it, and all of it survives export/import with no read.
TEST_F(MountCli, UnrecoverableDamageIsReportedAndKept) {
  UZFS_REQUIRE_FUSE();
  const std::string d0 = env_.Dev("d0", 256ull << 20);
  Ran r = env_.Zpool("create -m " + root_ + " tank " + d0);
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env_.Zpool("status -x").out, "all pools are healthy\n");
  fs::create_directories(root_ + "/dir");
  std::string pattern;
  for (int i = 0; i < 10000; i++) pattern += "ROTTENDATA";  // one 100K block
  WriteText(root_ + "/dir/f", pattern);
  WriteText(root_ + "/good", "fine\n");
  ASSERT_EQ(env_.Zpool("export tank").rc, 0);
  ASSERT_GT(test::OverwriteAll(d0, pattern.substr(0, 100)), 0);
  ASSERT_EQ(env_.Zpool("import -d " + env_.devdir() + " tank").rc, 0);
  EXPECT_EQ(ReadText(root_ + "/good"), "fine\n");
  EXPECT_EQ(ReadErrno(root_ + "/dir/f"), EIO);

  r = env_.Zpool("status tank");
  EXPECT_TRUE(Has(r.out, "ZFS-8000-8A")) << r.out;
  EXPECT_TRUE(Has(r.out, "errors: 1 data error, use '-v' for a list\n")) << r.out;
  r = env_.Zpool("status -v tank");
  EXPECT_TRUE(Has(r.out, "errors: Permanent errors have been detected in the following files:\n\n        " +
                             root_ + "/dir/f\n"))
      << r.out;
  EXPECT_FALSE(Has(r.out, "good")) << r.out;
  r = env_.Zpool("status -x");
  EXPECT_TRUE(Has(r.out, "  pool: tank\n")) << r.out;
  r = env_.Zpool("status -j tank");
  EXPECT_TRUE(Has(r.out, "\"error_count\": \"1\"")) << r.out;
  EXPECT_TRUE(Has(test::ReadText(env_.rundir() + "/uzfsd.log"), "pool 'tank': permanent error in dataset"));

  // Kept on disk: listed after export/import before anything reads it, and
  // by object number once the file system is not mounted.
  ASSERT_EQ(env_.Zpool("export tank").rc, 0);
  ASSERT_EQ(env_.Zpool("import -d " + env_.devdir() + " tank").rc, 0);
  r = env_.Zpool("status -v tank");
  EXPECT_TRUE(Has(r.out, "        " + root_ + "/dir/f\n")) << r.out;
  ASSERT_EQ(env_.Zfs("unmount tank").rc, 0);
  r = env_.Zpool("status -v tank");
  EXPECT_TRUE(Has(r.out, "        tank:<0x")) << r.out;
}

// Damage the pool's redundancy repaired: the data reads, no data error is
// listed, but the device's checksum errors are explained (ZFS-8000-9P) and
// -x lists the pool.
TEST_F(MountCli, RepairedDamageIsExplained) {
  UZFS_REQUIRE_FUSE();
  const std::string a = env_.Dev("a", 256ull << 20), b = env_.Dev("b", 256ull << 20);
  Ran r = env_.Zpool("create -m " + root_ + " tank mirror " + a + " " + b);
  ASSERT_EQ(r.rc, 0) << r.err;
  std::string pattern;
  for (int i = 0; i < 30000; i++) pattern += "HEALEDDATA";
  WriteText(root_ + "/f", pattern);
  ASSERT_EQ(env_.Zpool("export tank").rc, 0);
  ASSERT_GT(test::OverwriteAll(a, pattern.substr(0, 100)), 0);
  ASSERT_EQ(env_.Zpool("import -d " + env_.devdir() + " tank").rc, 0);
  EXPECT_EQ(ReadText(root_ + "/f"), pattern);
  r = env_.Zpool("status -x");
  EXPECT_TRUE(Has(r.out, "ZFS-8000-9P")) << r.out;
  EXPECT_TRUE(Has(r.out, "errors: No known data errors\n")) << r.out;
}

// Writes 1 MiB blocks of `seed`-derived bytes to a new file until write(2)
// fails or `max_mib` are written; the errno of the failed write (0: none),
// the bytes write(2) acknowledged, and close's result.
struct FillResult {
  int write_errno = 0;
  uint64_t acked = 0;
  int close_rc = 0;
};
FillResult Fill(const std::string& path, int max_mib, uint64_t seed) {
  FillResult r;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    r.write_errno = errno;
    return r;
  }
  for (int i = 0; i < max_mib; i++) {
    const std::vector<uint8_t> block = test::RandomBytes(1 << 20, seed + static_cast<uint64_t>(i));
    const ssize_t n = ::write(fd, block.data(), block.size());
    if (n < 0) {
      r.write_errno = errno;
      break;
    }
    r.acked += static_cast<uint64_t>(n);
    if (n != static_cast<ssize_t>(block.size())) continue;  // short: the next write fails
  }
  r.close_rc = ::close(fd);
  return r;
}

// The first `n` bytes Fill(seed) wrote.
std::vector<uint8_t> FillBytes(uint64_t n, uint64_t seed) {
  std::vector<uint8_t> out;
  for (uint64_t i = 0; out.size() < n; i++) {
    const std::vector<uint8_t> b = test::RandomBytes(1 << 20, seed + i);
    out.insert(out.end(), b.begin(), b.end());
  }
  out.resize(n);
  return out;
}

// A full pool and a quota fail write(2) itself (ENOSPC, EDQUOT), close
// succeeds, and after export/import the file holds exactly the bytes that
// were acknowledged. Deleting on the full pool works.
TEST_F(MountCli, FullPoolAndQuotaFailTheWriteItself) {
  UZFS_REQUIRE_FUSE();
  Ran r = env_.Zpool("create -m " + root_ + " tank " + env_.Dev("d0", 256ull << 20));
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env_.Zfs("create -o quota=40M tank/q").rc, 0);
  const FillResult q = Fill(root_ + "/q/f", 100, 100);
  EXPECT_EQ(q.write_errno, EDQUOT);
  EXPECT_EQ(q.close_rc, 0);
  EXPECT_GT(q.acked, 20ull << 20);
  WriteText(root_ + "/spare", std::string(100000, 's'));
  const FillResult p = Fill(root_ + "/f", 400, 1000);
  EXPECT_EQ(p.write_errno, ENOSPC);
  EXPECT_EQ(p.close_rc, 0);
  EXPECT_GT(p.acked, 50ull << 20);
  // The full pool still takes deletes.
  ASSERT_EQ(::unlink((root_ + "/spare").c_str()), 0);
  const FillResult more = Fill(root_ + "/g", 1, 5);
  EXPECT_EQ(more.write_errno, ENOSPC) << "the pool was not full";

  ASSERT_EQ(env_.Zpool("export tank").rc, 0);
  ASSERT_EQ(env_.Zpool("import -d " + env_.devdir() + " tank").rc, 0);
  EXPECT_EQ(test::ReadFile(root_ + "/q/f"), FillBytes(q.acked, 100));
  EXPECT_EQ(test::ReadFile(root_ + "/f"), FillBytes(p.acked, 1000));
  EXPECT_FALSE(fs::exists(root_ + "/spare"));
  ASSERT_EQ(::unlink((root_ + "/f").c_str()), 0);
  ASSERT_EQ(::unlink((root_ + "/g").c_str()), 0);
  EXPECT_EQ(env_.Zpool("status -x").out, "all pools are healthy\n");
}

}  // namespace
}  // namespace uzfs
