// Snapshots uzfs takes are ZFS's snapshots. On a version-23 pool uzfs
// writes files, takes two snapshots with changes between and after them
// (overwrite, remove, add); zfs-fuse then lists both snapshots, clones
// each (it has no .zfs directory) and finds every file as it was when the
// snapshot was taken and the user property uzfs set on one, scrubs clean
// and its zdb -bcc finds no leak; it
// destroys the clones and the snapshots (freeing from the deadlists uzfs
// wrote) and zdb -bcc still finds none, and uzfs's own zdb agrees after.
// uzfs reads a snapshot property zfs-fuse set and destroys snapshots
// zfs-fuse took, and zfs-fuse finds no leak. On
// versions 28 and 5000 (keyed deadlists) OpenZFS's zdb -bcc judges the
// same history, before and after uzfs destroys some of the snapshots.
#include <fcntl.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs {
namespace {

const ZplCred kRoot{};

void Put(ZplFs& fs, const std::string& name, const std::vector<uint8_t>& data) {
  auto c = fs.Create(kRoot, fs.root_ino(), name, S_IFREG | 0644, O_CREAT | O_RDWR | O_TRUNC);
  ASSERT_TRUE(c.ok()) << name;
  ASSERT_TRUE(fs.Write(c->second, 0, std::span<const uint8_t>(data)).ok()) << name;
  ASSERT_TRUE(fs.Release(c->second).ok()) << name;
}

void Expect(const std::filesystem::path& dir, const std::string& name, const std::vector<uint8_t>& data) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(data.data()),
                                                    static_cast<std::streamsize>(data.size()));
}

// What both tests do to file system `fs`: files, @s1, changes, @s2, more
// changes. Expected snapshot contents go to dir/expect/s1 and s2.
void History(Pool& p, const std::string& fs_name, const std::filesystem::path& dir) {
  auto m = ZplFs::Mount(p, fs_name);
  ASSERT_TRUE(m.ok());
  ZplFs& fs = **m;
  const auto a1 = test::RandomBytes(2 << 20, 1), b1 = test::RandomBytes(700000, 2), c1 = test::RandomBytes(5000, 3);
  ASSERT_NO_FATAL_FAILURE(Put(fs, "a", a1));
  ASSERT_NO_FATAL_FAILURE(Put(fs, "b", b1));
  ASSERT_NO_FATAL_FAILURE(Put(fs, "c", c1));
  for (const auto& [n, d] : {std::pair{"a", a1}, {"b", b1}, {"c", c1}}) Expect(dir / "expect/s1", n, d);
  ASSERT_UZFS_OK(p.Snapshot({fs_name + "@s1"}));
  const auto a2 = test::RandomBytes(2 << 20, 4), d2 = test::RandomBytes(300000, 5);
  ASSERT_NO_FATAL_FAILURE(Put(fs, "a", a2));
  ASSERT_TRUE(fs.Unlink(kRoot, fs.root_ino(), "b").ok());
  ASSERT_NO_FATAL_FAILURE(Put(fs, "d", d2));
  for (const auto& [n, d] : {std::pair{"a", a2}, {"c", c1}, {"d", d2}}) Expect(dir / "expect/s2", n, d);
  ASSERT_UZFS_OK(p.Snapshot({fs_name + "@s2"}));
  ASSERT_NO_FATAL_FAILURE(Put(fs, "a", test::RandomBytes(1 << 20, 6)));
  ASSERT_TRUE(fs.Unlink(kRoot, fs.root_ino(), "d").ok());
  ASSERT_NO_FATAL_FAILURE(Put(fs, "e", test::RandomBytes(400000, 7)));
  ASSERT_TRUE(fs.Unmount().ok());
}

TEST(PoolSnapshotCompat, ZfsFuseReadsUzfsSnapshotsAndDestroysThemWithoutLeaks) {
  test::TempDir d;
  const std::string dir = d.path().string();
  std::filesystem::create_directories(d.path() / "dev");
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(d.path() / "dev", "z0"));
  PoolCreateOptions o = pooltest::V23();
  o.fs_init = InitNewFilesystem;
  {
    auto p = Pool::Create("zs", layout, o);
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->CreateDataset("zs/fs", {}));
    ASSERT_NO_FATAL_FAILURE(History(**p, "zs/fs", d.path()));
    ASSERT_UZFS_OK((*p)->SetProp("zs/fs@s1", "com.example:tag", "ours"));
    ASSERT_UZFS_OK((*p)->Export());
  }
  std::string out;
  const int rc = test::RunInZfsFuseSandbox(
      "d=" + dir + "\n"
      "zpool import -d $d/dev -R $d/alt zs || exit 1\n"
      "zfs list -H -o name -t snapshot > $d/snaps.txt\n"
      "zfs get -H -o name,value,source com.example:tag zs/fs@s1 zs/fs@s2 > $d/props.txt\n"
      "zfs clone zs/fs@s1 zs/c1 && zfs clone zs/fs@s2 zs/c2 || exit 2\n"
      "for i in $(seq 1 100); do mountpoint -q $d/alt/zs/c2 && break; sleep 0.1; done\n"
      "(cd $d/alt/zs/c1 && ls) > $d/c1.ls; (cd $d/alt/zs/c2 && ls) > $d/c2.ls\n"
      "for f in a b c; do cmp $d/expect/s1/$f $d/alt/zs/c1/$f || exit 3; done\n"
      "for f in a c d; do cmp $d/expect/s2/$f $d/alt/zs/c2/$f || exit 4; done\n"
      "zpool scrub zs\n"
      "for i in $(seq 1 300); do zpool status zs | grep -q 'scrub in progress' || break; sleep 0.1; done\n"
      "zpool status -v zs > $d/status.txt\n"
      "zpool export zs || exit 5\n"
      "zdb -e -p $d/dev -bcc zs > $d/zdb1.txt 2>&1\n"
      "zpool import -d $d/dev -R $d/alt zs || exit 6\n"
      "for i in 1 2 3 4 5; do zfs destroy -f zs/c1 && break; sleep 1; done\n"
      "for i in 1 2 3 4 5; do zfs destroy -f zs/c2 && break; sleep 1; done\n"
      "zfs destroy zs/fs@s1 && zfs destroy zs/fs@s2 || exit 7\n"
      "zfs list -H -o name -t snapshot > $d/snaps-after.txt\n"
      "zpool export zs || exit 8\n"
      "zdb -e -p $d/dev -bcc zs > $d/zdb2.txt 2>&1\n",
      &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(test::ReadText(d.path() / "snaps.txt"), "zs/fs@s1\nzs/fs@s2\n");
  EXPECT_EQ(test::ReadText(d.path() / "props.txt"), "zs/fs@s1\tours\tlocal\nzs/fs@s2\t-\t-\n");
  EXPECT_EQ(test::ReadText(d.path() / "c1.ls"), "a\nb\nc\n");
  EXPECT_EQ(test::ReadText(d.path() / "c2.ls"), "a\nc\nd\n");
  EXPECT_EQ(test::ReadText(d.path() / "snaps-after.txt"), "");
  const std::string status = test::ReadText(d.path() / "status.txt");
  EXPECT_NE(status.find("with 0 errors"), std::string::npos) << status;
  for (const char* z : {"zdb1.txt", "zdb2.txt"}) {
    const std::string zdb = test::ReadText(d.path() / z);
    EXPECT_NE(zdb.find("No leaks"), std::string::npos) << z << "\n" << zdb;
    EXPECT_EQ(zdb.find("error"), std::string::npos) << z << "\n" << zdb;
  }
  pooltest::ExpectConsistent(d.path() / "dev", "zs");
}

// uzfs destroys snapshots zfs-fuse took, after writing to their file
// system itself: the middle one, then the oldest; then it rolls the file
// system back to the last one. zfs-fuse then finds that snapshot and the
// file system as the snapshot was taken, scrubs clean, zdb -bcc finds no
// leak, and it destroys that last snapshot without a leak either.
TEST(PoolSnapshotCompat, UzfsDestroysZfsFuseSnapshotsWithoutLeaks) {
  test::TempDir d;
  const std::string dir = d.path().string();
  std::filesystem::create_directories(d.path() / "dev");
  pooltest::MakeFile(d.path() / "dev", "z0");
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox(
                "set -e\nd=" + dir + "\n"
                "zpool create -o version=23 -o ashift=9 -m $d/mnt zs $d/dev/z0\n"
                "zfs create zs/fs\n"
                "for i in $(seq 1 100); do mountpoint -q $d/mnt/fs && break; sleep 0.1; done\n"
                "cd $d/mnt/fs\n"
                "head -c 2M /dev/urandom > a; head -c 1M /dev/urandom > b; seq 1 200000 > c\n"
                "zfs snapshot zs/fs@s1\n"
                "zfs set com.example:tag=theirs zs/fs@s1\n"
                "head -c 1M /dev/urandom > a; rm b; head -c 700K /dev/urandom > d\n"
                "zfs snapshot zs/fs@s2\n"
                "head -c 3M /dev/urandom > a; rm d; seq 1 100 > e\n"
                "md5sum * > $d/s3.md5\n"
                "zfs snapshot zs/fs@s3\n"
                "head -c 500K /dev/urandom > a\n"
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
    ASSERT_NO_FATAL_FAILURE(Put(**m, "c", test::RandomBytes(400000, 9)));  // kills s1..s3's c
    ASSERT_TRUE((*m)->Unmount().ok());
    m->reset();
    ASSERT_UZFS_OK((*p)->DestroySnapshots({"zs/fs@s2"}));
    auto tag = (*p)->LocalProps("zs/fs@s1");
    ASSERT_UZFS_OK(tag.status());
    EXPECT_EQ((*tag)["com.example:tag"], "theirs") << "zfs-fuse's snapshot property";
    ASSERT_UZFS_OK((*p)->DestroySnapshots({"zs/fs@s1"}));  // and its props ZAP
    ASSERT_UZFS_OK((*p)->Rollback("zs/fs@s3"));  // undoes uzfs's own write
    ASSERT_UZFS_OK((*p)->Export());
  }
  pooltest::ExpectConsistent(d.path() / "dev", "zs");
  ASSERT_EQ(test::RunInZfsFuseSandbox(
                "d=" + dir + "\n"
                "zpool import -d $d/dev -R $d/alt zs || exit 1\n"
                "zfs list -H -o name -t snapshot > $d/snaps.txt\n"
                "zfs clone zs/fs@s3 zs/c3 || exit 2\n"
                "m=$(zfs get -H -o value mountpoint zs/c3)\n"
                "for i in $(seq 1 100); do mountpoint -q $m && break; sleep 0.1; done\n"
                "(cd $m && md5sum -c --quiet $d/s3.md5) || exit 3\n"
                "(cd $(zfs get -H -o value mountpoint zs/fs) && md5sum -c --quiet $d/s3.md5) || exit 8\n"
                "zpool scrub zs\n"
                "for i in $(seq 1 300); do zpool status zs | grep -q 'scrub in progress' || break; sleep 0.1; done\n"
                "zpool status -v zs > $d/status.txt\n"
                "for i in 1 2 3 4 5; do zfs destroy -f zs/c3 && break; sleep 1; done\n"
                "zpool export zs || exit 4\n"
                "zdb -e -p $d/dev -bcc zs > $d/zdb1.txt 2>&1\n"
                "zpool import -d $d/dev -R $d/alt zs || exit 5\n"
                "zfs destroy zs/fs@s3 || exit 6\n"
                "zpool export zs || exit 7\n"
                "zdb -e -p $d/dev -bcc zs > $d/zdb2.txt 2>&1\n",
                &out),
            0)
      << out;
  EXPECT_EQ(test::ReadText(d.path() / "snaps.txt"), "zs/fs@s3\n");
  const std::string status = test::ReadText(d.path() / "status.txt");
  EXPECT_NE(status.find("with 0 errors"), std::string::npos) << status;
  for (const char* z : {"zdb1.txt", "zdb2.txt"}) {
    const std::string zdb = test::ReadText(d.path() / z);
    EXPECT_NE(zdb.find("No leaks"), std::string::npos) << z << "\n" << zdb;
    EXPECT_EQ(zdb.find("error"), std::string::npos) << z << "\n" << zdb;
  }
}

class PoolSnapshotOpenZfs : public ::testing::TestWithParam<uint64_t> {};

TEST_P(PoolSnapshotOpenZfs, OpenZfsZdbFindsNoLeakAfterSnapshotsAndChanges) {
  test::TempDir d;
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(d.path(), "z0"));
  PoolCreateOptions o = pooltest::V23();
  o.version = GetParam();
  o.fs_init = InitNewFilesystem;
  {
    auto p = Pool::Create("zs", layout, o);
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->CreateDataset("zs/fs", {}));
    ASSERT_NO_FATAL_FAILURE(History(**p, "zs/fs", d.path()));
    ASSERT_NO_FATAL_FAILURE(History(**p, "zs", d.path()));
    ASSERT_UZFS_OK((*p)->SetProp("zs/fs@s1", "com.example:tag", "ours"));  // a props ZAP of its own
    ASSERT_UZFS_OK((*p)->Export());
  }
  std::string out;
  const int rc = test::RunOpenZfsZdb("-U /dev/null -e -p " + d.path().string() + " -bcc zs", &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("No leaks"), std::string::npos) << out;
  EXPECT_EQ(out.find("error"), std::string::npos) << out;
  EXPECT_EQ(out.find("ASSERT"), std::string::npos) << out;
  std::string dump;
  ASSERT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + d.path().string() + " -d zs", &dump), 0) << dump;
  for (const char* n : {"zs/fs@s1", "zs/fs@s2", "zs@s1", "zs@s2"}) {
    EXPECT_NE(dump.find(std::string("Dataset ") + n + " "), std::string::npos) << n << "\n" << dump;
  }
  pooltest::ExpectConsistent(d.path(), "zs");
  // uzfs destroys some (the oldest of one file system, the newest of the
  // other) and rolls one back: still no leak.
  {
    PoolImportOptions io;
    io.fs_init = InitNewFilesystem;
    auto p = pooltest::ImportFrom(d.path(), "zs", io);
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->DestroySnapshots({"zs/fs@s1", "zs@s2"}));
    ASSERT_UZFS_OK((*p)->Rollback("zs/fs@s2"));
    ASSERT_UZFS_OK((*p)->Export());
  }
  out.clear();
  const int rc2 = test::RunOpenZfsZdb("-U /dev/null -e -p " + d.path().string() + " -bcc zs", &out);
  EXPECT_EQ(rc2, 0) << out;
  EXPECT_NE(out.find("No leaks"), std::string::npos) << out;
  EXPECT_EQ(out.find("error"), std::string::npos) << out;
  EXPECT_EQ(out.find("ASSERT"), std::string::npos) << out;
  pooltest::ExpectConsistent(d.path(), "zs");
}

INSTANTIATE_TEST_SUITE_P(Versions, PoolSnapshotOpenZfs, ::testing::Values(28, 5000),
                         [](const ::testing::TestParamInfo<uint64_t>& i) { return "v" + std::to_string(i.param); });

}  // namespace
}  // namespace uzfs
