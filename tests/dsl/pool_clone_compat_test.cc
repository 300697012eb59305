// Clones, holds and snapshot renames uzfs makes are ZFS's. On a version-23
// pool uzfs clones a snapshot and writes into the clone, holds and renames
// another snapshot; zfs-fuse then sees the clone's origin and the hold,
// reads the clone's files, refuses to destroy the held snapshot and the
// clone's origin, sees the mark of a deferred destroy uzfs made and
// destroys that snapshot at the release, destroys everything, and its zdb -bcc
// finds no leak before or after. uzfs in turn writes to and destroys a
// clone zfs-fuse made, and zfs-fuse reads and destroys what a rollback
// kept. On versions 28 and 5000 OpenZFS's zdb -bcc judges a
// clone with writes and a snapshot of its own, before and after uzfs
// destroys the origin's older snapshot (whose key leaves the clones'
// deadlists), after a rollback that keeps the later state as a clone, and
// then everything.
#include <fcntl.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
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

void Save(const std::filesystem::path& dir, const std::string& name, const std::vector<uint8_t>& data) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(data.data()),
                                                    static_cast<std::streamsize>(data.size()));
}

// Files in fs, @s1, changes, @s2; a clone `clone` of @s2 with a file
// overwritten and one added (their bytes in dir/expect/clone), and a
// snapshot of the clone; then the origin's file system changes again.
void CloneHistory(Pool& p, const std::string& fs_name, const std::string& clone, const std::filesystem::path& dir) {
  {
    auto m = ZplFs::Mount(p, fs_name);
    ASSERT_TRUE(m.ok());
    ASSERT_NO_FATAL_FAILURE(Put(**m, "a", test::RandomBytes(2 << 20, 1)));
    ASSERT_NO_FATAL_FAILURE(Put(**m, "b", test::RandomBytes(700000, 2)));
    ASSERT_UZFS_OK(p.Snapshot({fs_name + "@s1"}));
    ASSERT_NO_FATAL_FAILURE(Put(**m, "a", test::RandomBytes(1 << 20, 3)));
    ASSERT_UZFS_OK(p.Snapshot({fs_name + "@s2"}));
    ASSERT_TRUE((*m)->Unmount().ok());
  }
  ASSERT_UZFS_OK(p.Clone(fs_name + "@s2", clone, {}));
  {
    auto m = ZplFs::Mount(p, clone);
    ASSERT_TRUE(m.ok());
    const auto b = test::RandomBytes(300000, 4), c = test::RandomBytes(500000, 5);
    ASSERT_NO_FATAL_FAILURE(Put(**m, "b", b));
    ASSERT_NO_FATAL_FAILURE(Put(**m, "c", c));
    Save(dir / "expect/clone", "a", test::RandomBytes(1 << 20, 3));
    Save(dir / "expect/clone", "b", b);
    Save(dir / "expect/clone", "c", c);
    ASSERT_UZFS_OK(p.Snapshot({clone + "@cs"}));
    ASSERT_NO_FATAL_FAILURE(Put(**m, "c", test::RandomBytes(200000, 6)));
    Save(dir / "expect/clone", "c", test::RandomBytes(200000, 6));
    ASSERT_TRUE((*m)->Unmount().ok());
  }
  auto m = ZplFs::Mount(p, fs_name);
  ASSERT_TRUE(m.ok());
  ASSERT_NO_FATAL_FAILURE(Put(**m, "a", test::RandomBytes(1 << 20, 7)));
  ASSERT_TRUE((*m)->Unmount().ok());
}

void ExpectNoLeak(const std::filesystem::path& file) {
  const std::string zdb = test::ReadText(file);
  EXPECT_NE(zdb.find("No leaks"), std::string::npos) << file << "\n" << zdb;
  EXPECT_EQ(zdb.find("error"), std::string::npos) << file << "\n" << zdb;
}

TEST(PoolCloneCompat, ZfsFuseSeesUzfsClonesHoldsAndRenames) {
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
    ASSERT_NO_FATAL_FAILURE(CloneHistory(**p, "zs/fs", "zs/c", d.path()));
    ASSERT_UZFS_OK((*p)->Hold({"zs/fs@s1"}, "keep"));
    ASSERT_UZFS_OK((*p)->RenameSnapshot("zs/fs@s1", "zs/fs@first", false));
    ASSERT_UZFS_OK((*p)->DeferDestroySnapshots({"zs/fs@first"}));  // marked: the hold keeps it
    ASSERT_UZFS_OK((*p)->Export());
  }
  pooltest::ExpectConsistent(d.path() / "dev", "zs");
  std::string out;
  const int rc = test::RunInZfsFuseSandbox(
      "d=" + dir + "\n"
      "zpool import -d $d/dev -R $d/alt zs || exit 1\n"
      "zfs list -H -o name -t snapshot > $d/snaps.txt\n"
      "zfs get -H -o value origin zs/c > $d/origin.txt\n"
      // (zfs-fuse's zfs holds needs pyzfs, which Debian does not ship.)
      "zfs get -H -o value userrefs zs/fs@first > $d/holds.txt\n"
      "zfs get -H -o value defer_destroy zs/fs@first > $d/defer.txt\n"
      "m=$(zfs get -H -o value mountpoint zs/c)\n"
      "for i in $(seq 1 100); do mountpoint -q $m && break; sleep 0.1; done\n"
      "(cd $m && ls) > $d/c.ls\n"
      "for f in a b c; do cmp $d/expect/clone/$f $m/$f || exit 3; done\n"
      "zfs destroy zs/fs@first 2> $d/held.err && exit 4\n"
      "zfs destroy zs/fs@s2 2> $d/origin.err && exit 5\n"
      "zpool scrub zs\n"
      "for i in $(seq 1 300); do zpool status zs | grep -q 'scrub in progress' || break; sleep 0.1; done\n"
      "zpool status -v zs > $d/status.txt\n"
      "zpool export zs || exit 6\n"
      "zdb -e -p $d/dev -bcc zs > $d/zdb1.txt 2>&1\n"
      "zpool import -d $d/dev -R $d/alt zs || exit 7\n"
      "zfs release keep zs/fs@first || exit 8\n"
      "zfs list -t snapshot zs/fs@first > /dev/null 2>&1 && exit 12\n"  // the release destroyed it
      "zfs destroy zs/c@cs || exit 9\n"
      "for i in 1 2 3 4 5; do zfs destroy -f zs/c && break; sleep 1; done\n"
      "zfs destroy zs/fs@s2 || exit 10\n"
      "zpool export zs || exit 11\n"
      "zdb -e -p $d/dev -bcc zs > $d/zdb2.txt 2>&1\n",
      &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(test::ReadText(d.path() / "snaps.txt"), "zs/c@cs\nzs/fs@first\nzs/fs@s2\n");
  EXPECT_EQ(test::ReadText(d.path() / "origin.txt"), "zs/fs@s2\n");
  EXPECT_EQ(test::ReadText(d.path() / "holds.txt"), "1\n");
  EXPECT_EQ(test::ReadText(d.path() / "defer.txt"), "on\n");
  EXPECT_EQ(test::ReadText(d.path() / "c.ls"), "a\nb\nc\n");
  EXPECT_NE(test::ReadText(d.path() / "held.err").find("busy"), std::string::npos);
  EXPECT_NE(test::ReadText(d.path() / "origin.err").find("dependent clones"), std::string::npos);
  const std::string status = test::ReadText(d.path() / "status.txt");
  EXPECT_NE(status.find("with 0 errors"), std::string::npos) << status;
  ExpectNoLeak(d.path() / "zdb1.txt");
  ExpectNoLeak(d.path() / "zdb2.txt");
  pooltest::ExpectConsistent(d.path() / "dev", "zs");
}

// A snapshot zfs-fuse marked with zfs destroy -d while a hold kept it:
// uzfs sees the mark and destroys the snapshot when it releases the hold;
// zfs-fuse's zdb -bcc finds no leak after.
TEST(PoolCloneCompat, UzfsFinishesAZfsFuseDeferredDestroy) {
  test::TempDir d;
  const std::string dir = d.path().string();
  std::filesystem::create_directories(d.path() / "dev");
  pooltest::MakeFile(d.path() / "dev", "z0");
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox("set -e\nd=" + dir + "\n"
                                      "zpool create -o version=23 -o ashift=9 -m $d/mnt zs $d/dev/z0\n"
                                      "zfs create zs/fs\n"
                                      "for i in $(seq 1 100); do mountpoint -q $d/mnt/fs && break; sleep 0.1; done\n"
                                      "head -c 1M /dev/urandom > $d/mnt/fs/a\n"
                                      "zfs snapshot zs/fs@s1\n"
                                      "head -c 1M /dev/urandom > $d/mnt/fs/a\n"
                                      "zfs hold keep zs/fs@s1\n"
                                      "zfs destroy -d zs/fs@s1\n"
                                      "zpool export zs\n",
                                      &out),
            0)
      << out;
  {
    auto p = pooltest::ImportFrom(d.path() / "dev", "zs");
    ASSERT_UZFS_OK(p.status());
    auto l = (*p)->ListDatasets(true);
    ASSERT_UZFS_OK(l.status());
    bool marked = false;
    for (const DatasetInfo& i : *l) marked = marked || (i.name == "zs/fs@s1" && (i.ds.flags & kDsFlagDeferDestroy));
    EXPECT_TRUE(marked) << "zfs-fuse's mark";
    ASSERT_UZFS_OK((*p)->Release({"zs/fs@s1"}, "keep"));
    l = (*p)->ListDatasets(true);
    ASSERT_UZFS_OK(l.status());
    for (const DatasetInfo& i : *l) EXPECT_NE(i.name, "zs/fs@s1") << "the release destroys it";
    ASSERT_UZFS_OK((*p)->Export());
  }
  pooltest::ExpectConsistent(d.path() / "dev", "zs");
  ASSERT_EQ(test::RunInZfsFuseSandbox("d=" + dir + "\nzdb -e -p $d/dev -bcc zs > $d/zdb.txt 2>&1\n", &out), 0)
      << out;
  ExpectNoLeak(d.path() / "zdb.txt");
}

// zfs rollback -k on a version-23 pool: zfs-fuse sees the kept file
// system as a clone of the snapshot rolled back to, with the later
// snapshot (and the clone made of it) moved along, reads both trees,
// destroys them all, and its zdb -bcc finds no leak before or after.
TEST(PoolCloneCompat, ZfsFuseSeesARollbackThatKeptTheLaterState) {
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
    ASSERT_NO_FATAL_FAILURE(CloneHistory(**p, "zs/fs", "zs/c", d.path()));
    auto kept = (*p)->RollbackKeep("zs/fs@s1", "zs/k");
    ASSERT_UZFS_OK(kept.status());
    ASSERT_UZFS_OK((*p)->Export());
  }
  Save(d.path() / "expect/fs", "a", test::RandomBytes(2 << 20, 1));
  Save(d.path() / "expect/k", "a", test::RandomBytes(1 << 20, 7));
  pooltest::ExpectConsistent(d.path() / "dev", "zs");
  std::string out;
  const int rc = test::RunInZfsFuseSandbox(
      "d=" + dir + "\n"
      "zpool import -d $d/dev -R $d/alt zs || exit 1\n"
      "zfs list -H -o name -t snapshot > $d/snaps.txt\n"
      "zfs get -H -o name,value origin zs/k zs/c > $d/origin.txt\n"
      "for ds in fs k; do\n"
      "  m=$(zfs get -H -o value mountpoint zs/$ds)\n"
      "  for i in $(seq 1 100); do mountpoint -q $m && break; sleep 0.1; done\n"
      "  cmp $d/expect/$ds/a $m/a || exit 2\n"
      "done\n"
      "zpool export zs || exit 3\n"
      "zdb -e -p $d/dev -bcc zs > $d/zdb1.txt 2>&1\n"
      "zpool import -d $d/dev -R $d/alt zs || exit 4\n"
      "for i in 1 2 3 4 5; do zfs destroy -r zs/c && break; sleep 1; done\n"
      "for i in 1 2 3 4 5; do zfs destroy -r zs/k && break; sleep 1; done\n"
      "zfs destroy zs/fs@s1 || exit 5\n"
      "zpool export zs || exit 6\n"
      "zdb -e -p $d/dev -bcc zs > $d/zdb2.txt 2>&1\n",
      &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(test::ReadText(d.path() / "snaps.txt"), "zs/c@cs\nzs/fs@s1\nzs/k@s2\n");
  EXPECT_EQ(test::ReadText(d.path() / "origin.txt"), "zs/c\tzs/k@s2\nzs/k\tzs/fs@s1\n");
  ExpectNoLeak(d.path() / "zdb1.txt");
  ExpectNoLeak(d.path() / "zdb2.txt");
  pooltest::ExpectConsistent(d.path() / "dev", "zs");
}

// A clone zfs-fuse made: uzfs reads it, writes to it, snapshots and
// destroys it, and the origin after; zfs-fuse's zdb finds no leak.
TEST(PoolCloneCompat, UzfsWritesAndDestroysAZfsFuseClone) {
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
                "head -c 2M /dev/urandom > a; seq 1 200000 > b\n"
                "md5sum * > $d/s.md5\n"
                "zfs snapshot zs/fs@s\n"
                "head -c 1M /dev/urandom > a\n"
                "zfs clone zs/fs@s zs/c\n"
                "cd /; zpool export zs\n",
                &out),
            0)
      << out;
  {
    PoolImportOptions io;
    io.fs_init = InitNewFilesystem;
    auto p = pooltest::ImportFrom(d.path() / "dev", "zs", io);
    ASSERT_UZFS_OK(p.status());
    auto l = (*p)->ListDatasets(true);
    ASSERT_UZFS_OK(l.status());
    bool found = false;
    for (const DatasetInfo& i : *l) {
      if (i.name == "zs/c") {
        found = true;
        EXPECT_EQ(i.origin, "zs/fs@s");
      }
      if (i.name == "zs/fs@s") {
        EXPECT_EQ(i.clones, std::vector<std::string>{"zs/c"});
      }
    }
    EXPECT_TRUE(found);
    auto m = ZplFs::Mount(**p, "zs/c");
    ASSERT_TRUE(m.ok());
    ASSERT_NO_FATAL_FAILURE(Put(**m, "a", test::RandomBytes(3 << 20, 9)));
    ASSERT_UZFS_OK((*p)->Snapshot({"zs/c@mine"}));
    ASSERT_NO_FATAL_FAILURE(Put(**m, "b", test::RandomBytes(100000, 10)));
    ASSERT_TRUE((*m)->Unmount().ok());
    m->reset();
    EXPECT_EQ((*p)->DestroySnapshots({"zs/fs@s"}).code(), Code::kExists);
    ASSERT_UZFS_OK((*p)->Export());
  }
  pooltest::ExpectConsistent(d.path() / "dev", "zs");
  ASSERT_EQ(test::RunInZfsFuseSandbox("d=" + dir + "\nzdb -e -p $d/dev -bcc zs > $d/zdb1.txt 2>&1\n", &out), 0)
      << out;
  ExpectNoLeak(d.path() / "zdb1.txt");
  {
    auto p = pooltest::ImportFrom(d.path() / "dev", "zs");
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->DestroySnapshots({"zs/c@mine"}));
    ASSERT_UZFS_OK((*p)->DestroyDataset("zs/c"));
    ASSERT_UZFS_OK((*p)->DestroySnapshots({"zs/fs@s"}));
    ASSERT_UZFS_OK((*p)->Export());
  }
  pooltest::ExpectConsistent(d.path() / "dev", "zs");
  ASSERT_EQ(test::RunInZfsFuseSandbox("d=" + dir + "\nzdb -e -p $d/dev -bcc zs > $d/zdb2.txt 2>&1\n", &out), 0)
      << out;
  ExpectNoLeak(d.path() / "zdb2.txt");
}

// The same pool promoted twice: a copy by zfs-fuse, a copy by uzfs. zfs-fuse
// then shows the same names, origins and space for both (every dataset's
// used, referenced, usedbysnapshots, usedbydataset), the records hold the
// same numbers to the byte, and zfs-fuse's zdb finds no leak in ours.
TEST(PoolCloneCompat, PromoteMatchesZfsFuse) {
  test::TempDir d;
  const std::string dir = d.path().string();
  for (const char* sub : {"a", "b"}) std::filesystem::create_directories(d.path() / sub);
  pooltest::MakeFile(d.path() / "a", "z0");
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox(
                "set -e\nd=" + dir + "\n"
                "zpool create -o version=23 -o ashift=9 -m $d/mnt zs $d/a/z0\n"
                "zfs create zs/fs; zfs create zs/other\n"
                "for i in $(seq 1 100); do mountpoint -q $d/mnt/fs && break; sleep 0.1; done\n"
                "cd $d/mnt/fs\n"
                "for f in a b c d e; do head -c 700K /dev/urandom > $f; done\n"
                "zfs snapshot zs/fs@s1\n"
                "head -c 700K /dev/urandom > a; rm b\n"
                "zfs snapshot zs/fs@s2\n"
                "head -c 700K /dev/urandom > c\n"
                "zfs snapshot zs/fs@s3\n"
                "head -c 300K /dev/urandom > d\n"
                "zfs clone zs/fs@s2 zs/other/c\n"
                "m=$(zfs get -H -o value mountpoint zs/other/c)\n"
                "for i in $(seq 1 100); do mountpoint -q $m && break; sleep 0.1; done\n"
                "head -c 500K /dev/urandom > $m/a; head -c 200K /dev/urandom > $m/f; rm $m/e\n"
                "zfs snapshot zs/other/c@cs\n"
                "head -c 400K /dev/urandom > $m/c\n"
                "cd /; zpool export zs\n"
                "cp --sparse=always $d/a/z0 $d/b/z0\n"
                "zpool import -d $d/a zs; zfs promote zs/other/c; zpool export zs\n",
                &out),
            0)
      << out;
  {
    auto p = pooltest::ImportFrom(d.path() / "b", "zs");
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->Promote("zs/other/c"));
    ASSERT_UZFS_OK((*p)->Export());
  }
  pooltest::ExpectConsistent(d.path() / "b", "zs");
  const std::string list =
      "zfs list -H -t all -o name,origin,used,referenced,usedbysnapshots,usedbydataset,usedbychildren -r zs";
  ASSERT_EQ(test::RunInZfsFuseSandbox("d=" + dir + "\n"
                                      "zpool import -R $d/alt -d $d/a zs && " + list + " > $d/a.txt; zpool export zs\n"
                                      "zpool import -R $d/alt -d $d/b zs && " + list + " > $d/b.txt; zpool export zs\n"
                                      "zdb -e -p $d/b -bcc zs > $d/zdb.txt 2>&1\n",
                                      &out),
            0)
      << out;
  const std::string a = test::ReadText(d.path() / "a.txt");
  EXPECT_NE(a.find("zs/other/c@s1\t"), std::string::npos) << a;
  EXPECT_NE(a.find("zs/fs\tzs/other/c@s2\t"), std::string::npos) << a;
  // (The pool's own row counts the MOS, which the two wrote differently,
  // and zs/other's own bytes may change as zfs-fuse mounts it; the rows
  // that promote changes must agree.)
  auto promoted_rows = [](const std::string& t) {
    std::string out;
    std::istringstream in(t);
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with("zs/fs") || line.starts_with("zs/other/")) out += line + "\n";
    }
    return out;
  };
  EXPECT_EQ(promoted_rows(test::ReadText(d.path() / "b.txt")), promoted_rows(a));
  ExpectNoLeak(d.path() / "zdb.txt");
  // To the byte (zfs-fuse's list rounds): every directory's and dataset's
  // space in the two pools, as their records hold it.
  auto records = [&](const char* sub) {
    std::map<std::string, std::vector<uint64_t>> out;
    PoolImportOptions ro;
    ro.readonly = true;
    auto p = pooltest::ImportFrom(d.path() / sub, "zs", ro);
    EXPECT_UZFS_OK(p.status());
    if (!p.ok()) return out;
    auto l = (*p)->ListDatasets(true);
    EXPECT_UZFS_OK(l.status());
    if (!l.ok()) return out;
    for (const DatasetInfo& i : *l) {
      std::vector<uint64_t>& v = out[i.name];
      v = {i.ds.referenced_bytes, i.ds.compressed_bytes, i.ds.unique_bytes, i.ds.num_children};
      if (!i.snapshot) {
        v.insert(v.end(), {i.dir.used_bytes, i.dir.compressed_bytes, i.dir.uncompressed_bytes});
        v.insert(v.end(), i.dir.used_breakdown.begin(), i.dir.used_breakdown.end());
      }
    }
    out.erase("zs");
    // (zs/other: only what its children use; breakdown from index 7.)
    const size_t child = 7 + static_cast<size_t>(DdUsed::kChild);
    out["zs/other"] = {out["zs/other"].size() > child ? out["zs/other"][child] : 0};
    return out;
  };
  EXPECT_EQ(records("b"), records("a"));
}

class PoolCloneOpenZfs : public ::testing::TestWithParam<uint64_t> {};

TEST_P(PoolCloneOpenZfs, OpenZfsZdbFindsNoLeakWithClones) {
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
    ASSERT_NO_FATAL_FAILURE(CloneHistory(**p, "zs/fs", "zs/c", d.path()));
    ASSERT_UZFS_OK((*p)->Export());
  }
  auto judge = [&](const std::string& when) {
    std::string out;
    const int rc = test::RunOpenZfsZdb("-U /dev/null -e -p " + d.path().string() + " -bcc zs", &out);
    EXPECT_EQ(rc, 0) << when << "\n" << out;
    EXPECT_NE(out.find("No leaks"), std::string::npos) << when << "\n" << out;
    EXPECT_EQ(out.find("error"), std::string::npos) << when << "\n" << out;
    EXPECT_EQ(out.find("ASSERT"), std::string::npos) << when << "\n" << out;
    pooltest::ExpectConsistent(d.path(), "zs");
  };
  judge("with the clone");
  std::string dump;
  ASSERT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + d.path().string() + " -d zs", &dump), 0) << dump;
  EXPECT_NE(dump.find("Dataset zs/c "), std::string::npos) << dump;
  EXPECT_NE(dump.find("Dataset zs/c@cs "), std::string::npos) << dump;
  {
    auto p = pooltest::ImportFrom(d.path(), "zs");
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->DestroySnapshots({"zs/fs@s1"}));
    ASSERT_UZFS_OK((*p)->Export());
  }
  judge("the origin's older snapshot destroyed");
  {
    auto p = pooltest::ImportFrom(d.path(), "zs");
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->Promote("zs/c"));
    ASSERT_UZFS_OK((*p)->Export());
  }
  judge("the clone promoted");
  {
    auto p = pooltest::ImportFrom(d.path(), "zs");
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->Promote("zs/fs"));
    ASSERT_UZFS_OK((*p)->Export());
  }
  judge("promoted back");
  {
    // The file system's state since @s2 and a snapshot of it kept as zs/k.
    auto p = pooltest::ImportFrom(d.path(), "zs");
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->Snapshot({"zs/fs@s3"}));
    ASSERT_UZFS_OK((*p)->RollbackKeep("zs/fs@s2", "zs/k").status());
    ASSERT_UZFS_OK((*p)->Export());
  }
  judge("rolled back keeping the later state");
  {
    auto p = pooltest::ImportFrom(d.path(), "zs");
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->DestroySnapshots({"zs/c@cs"}));
    ASSERT_UZFS_OK((*p)->DestroyDataset("zs/c"));
    ASSERT_UZFS_OK((*p)->DestroySnapshots({"zs/k@s3"}));
    ASSERT_UZFS_OK((*p)->DestroyDataset("zs/k"));
    ASSERT_UZFS_OK((*p)->DestroySnapshots({"zs/fs@s2"}));
    ASSERT_UZFS_OK((*p)->DestroyDataset("zs/fs"));
    ASSERT_UZFS_OK((*p)->Export());
  }
  judge("everything destroyed");
}

INSTANTIATE_TEST_SUITE_P(Versions, PoolCloneOpenZfs, ::testing::Values(28, 5000),
                         [](const ::testing::TestParamInfo<uint64_t>& i) { return "v" + std::to_string(i.param); });

}  // namespace
}  // namespace uzfs
