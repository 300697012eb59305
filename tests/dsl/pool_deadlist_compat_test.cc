// Snapshots zfs-fuse took survive what uzfs does to their file system. A
// version-23 pool where zfs-fuse wrote files and took two snapshots is
// imported by uzfs, which overwrites a file both snapshots hold, removes
// one only the first holds and one only the second holds, and writes and
// removes a file no snapshot holds (and refuses to destroy the file
// system while its snapshots stay). uzfs's deadlist entries and space
// accounting are then judged by zfs-fuse: every snapshot file reads back
// as it was (through a clone: zfs-fuse has no .zfs directory), the pool scrubs clean, zdb -bcc finds no leak; zfs-fuse then
// destroys both snapshots (which frees from the deadlist uzfs appended to)
// and zdb -bcc still finds no leak, and the pool's space is what its one
// file system holds.
#include <fcntl.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs {
namespace {

const ZplCred kRoot{};

std::span<const uint8_t> Bytes(const std::vector<uint8_t>& v) { return v; }

// Writes `data` at offset 0 of dir/name (created when missing), fsynced.
void Put(ZplFs& fs, const std::string& name, const std::vector<uint8_t>& data) {
  auto c = fs.Create(kRoot, fs.root_ino(), name, S_IFREG | 0644, O_CREAT | O_RDWR);
  ASSERT_TRUE(c.ok()) << name;
  ASSERT_TRUE(fs.Write(c->second, 0, Bytes(data)).ok()) << name;
  ASSERT_TRUE(fs.Fsync(c->second, false).ok()) << name;
  ASSERT_TRUE(fs.Release(c->second).ok()) << name;
}

TEST(PoolDeadlistCompat, ZfsFuseSnapshotsSurviveUzfsWritesAndDestroyWithoutLeaks) {
  test::TempDir d;
  const std::string dir = d.path().string();
  std::filesystem::create_directories(d.path() / "dev");
  pooltest::MakeFile(d.path() / "dev", "z0");
  pooltest::MakeFile(d.path() / "dev", "z1");
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox(
                "set -e\nd=" + dir + "\n"
                "zpool create -o version=23 -o ashift=9 -m $d/mnt zs $d/dev/z0 $d/dev/z1\n"
                "zfs create zs/fs\n"
                "for i in $(seq 1 100); do mountpoint -q $d/mnt/fs && break; sleep 0.1; done\n"
                "cd $d/mnt/fs\n"
                "head -c 2M /dev/urandom > both; head -c 1M /dev/urandom > first; seq 1 300000 > text\n"
                "md5sum * > $d/s1.md5\n"
                "zfs snapshot zs/fs@s1\n"
                "head -c 1536K /dev/urandom > second; rm first\n"
                "md5sum * > $d/s2.md5\n"
                "zfs snapshot zs/fs@s2\n"
                "cd /; zpool export zs\n",
                &out),
            0)
      << out;
  {
    PoolImportOptions io;
    io.fs_init = InitNewFilesystem;
    auto p = pooltest::ImportFrom(d.path() / "dev", "zs", io);
    ASSERT_UZFS_OK(p.status());
    auto m = ZplFs::Mount(**p, "zs/fs");
    ASSERT_TRUE(m.ok());
    ZplFs& fs = **m;
    ASSERT_NO_FATAL_FAILURE(Put(fs, "both", test::RandomBytes(2 << 20, 1)));  // held by s1 and s2
    ASSERT_TRUE(fs.Unlink(kRoot, fs.root_ino(), "second").ok());                // s2's alone
    ASSERT_NO_FATAL_FAILURE(Put(fs, "mine", test::RandomBytes(1 << 20, 2)));    // no snapshot's
    ASSERT_UZFS_OK((*p)->Sync());
    ASSERT_TRUE(fs.Unlink(kRoot, fs.root_ino(), "mine").ok());
    ASSERT_TRUE(fs.Unmount().ok());
    m->reset();
    // Its snapshots are children: without -r the file system stays, with a
    // message naming them.
    const Status refused = (*p)->DestroyDataset("zs/fs");
    EXPECT_EQ(refused.code(), Code::kBusy);
    EXPECT_EQ(refused.message(),
              "cannot destroy 'zs/fs': filesystem has children\nuse '-r' to destroy the following datasets:\n"
              "zs/fs@s1\nzs/fs@s2");
    ASSERT_UZFS_OK((*p)->Export());
  }
  ASSERT_EQ(test::RunInZfsFuseSandbox(
                "d=" + dir + "\n"
                "zpool import -d $d/dev zs || exit 1\n"
                "for i in $(seq 1 100); do mountpoint -q $d/mnt/fs && break; sleep 0.1; done\n"
                // (zfs-fuse has no .zfs directory: a snapshot is read
                // through a clone, destroyed after.)
                "for s in s1 s2; do\n"
                "  zfs clone zs/fs@$s zs/c$s || exit 3\n"
                "  for i in $(seq 1 100); do mountpoint -q $d/mnt/c$s && break; sleep 0.1; done\n"
                "  (cd $d/mnt/c$s && md5sum -c --quiet $d/$s.md5) > $d/$s.check 2>&1; echo rc=$? >> $d/$s.check\n"
                "  for i in $(seq 1 50); do zfs destroy -f zs/c$s 2>/dev/null && break; sleep 0.2; done\n"
                "  zfs list zs/c$s >/dev/null 2>&1 && exit 4\n"
                "done\n"
                "zpool scrub zs\n"
                "for i in $(seq 1 300); do zpool status zs | grep -q 'scrub in progress' || break; sleep 0.1; done\n"
                "zpool status -v zs > $d/status.txt\n"
                "zfs list -H -t all -o name,used,refer,usedsnap -r zs > $d/list.txt\n"
                "zpool export zs\n"
                "zdb -e -p $d/dev -bcc zs > $d/zdb.txt 2>&1\n"
                "zpool import -d $d/dev zs || exit 1\n"
                "zfs destroy zs/fs@s1 && zfs destroy zs/fs@s2 || exit 2\n"
                "zfs list -H -o name,used,refer,usedsnap -r zs > $d/list-after.txt\n"
                "zpool export zs\n"
                "zdb -e -p $d/dev -bcc zs > $d/zdb-after.txt 2>&1\n",
                &out),
            0)
      << out;
  for (const char* f : {"s1.check", "s2.check"}) {
    EXPECT_EQ(test::ReadText(d.path() / f), "rc=0\n") << f << ": a snapshot's file changed";
  }
  const std::string status = test::ReadText(d.path() / "status.txt");
  EXPECT_NE(status.find("with 0 errors"), std::string::npos) << status;
  EXPECT_NE(status.find("No known data errors"), std::string::npos) << status;
  for (const char* f : {"zdb.txt", "zdb-after.txt"}) {
    const std::string zdb = test::ReadText(d.path() / f);
    EXPECT_NE(zdb.find("No leaks"), std::string::npos) << f << "\n" << zdb;
    EXPECT_EQ(zdb.find("leaked space"), std::string::npos) << f << "\n" << zdb;
    EXPECT_EQ(zdb.find("error"), std::string::npos) << f << "\n" << zdb;
  }
  std::cout << test::ReadText(d.path() / "list.txt") << test::ReadText(d.path() / "list-after.txt");
  // With the snapshots gone the file system holds only "both" (uzfs's 2
  // MiB) and "text": no snapshot space is left.
  const std::string after = test::ReadText(d.path() / "list-after.txt");
  EXPECT_NE(after.find("zs/fs\t"), std::string::npos) << after;
  size_t at = after.find("zs/fs\t");
  if (at != std::string::npos) {
    const std::string line = after.substr(at, after.find('\n', at) - at);
    EXPECT_TRUE(line.ends_with("\t0")) << "usedbysnapshots left: " << line;
  }
}

}  // namespace
}  // namespace uzfs
