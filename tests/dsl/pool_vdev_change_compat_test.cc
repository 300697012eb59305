// zpool add / remove judged by zfs-fuse: a uzfs pool that grew a top-level
// vdev and lost a log device (a hole) imports, scrubs clean and passes
// `zdb -bcc` under zfs-fuse; and a zfs-fuse pool with a hole and an added
// vdev imports under uzfs, takes writes and goes back clean.
#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_create.h"

namespace uzfs {
namespace {

namespace fs = std::filesystem;
using pooltest::ExpectConsistent;
using pooltest::ImportFrom;
using pooltest::Leaf;
using pooltest::MakeFile;
using pooltest::V23;

std::string Judge(const std::string& dir, const std::string& pool) {
  return "d=" + dir + "\n"
         "zpool import -d $d " + pool + " || { zpool import -d $d; exit 1; }\n"
         "zpool scrub " + pool + "\n"
         "for i in $(seq 1 300); do zpool status " + pool +
         " | grep -q 'scrub in progress' || break; sleep 0.1; done\n"
         "zpool status -v " + pool + " > $d/status.txt\n"
         "zpool export " + pool + "\n"
         "zdb -e -p $d -bcc " + pool + " > $d/zdb.txt 2>&1\n"
         "zdb -e -p $d -C " + pool + " > $d/config.txt 2>&1\n";
}

void CheckVerdict(const fs::path& d) {
  const std::string status = test::ReadText(d / "status.txt");
  EXPECT_NE(status.find("with 0 errors"), std::string::npos) << status;
  EXPECT_NE(status.find("No known data errors"), std::string::npos) << status;
  EXPECT_EQ(status.find("DEGRADED"), std::string::npos) << status;
  const std::string zdb = test::ReadText(d / "zdb.txt");
  EXPECT_NE(zdb.find("No leaks"), std::string::npos) << zdb;
  EXPECT_EQ(zdb.find("error"), std::string::npos) << zdb;
}

void WriteSome(Pool& p, uint64_t seed) {
  auto os = p.Objset(p.name());
  ASSERT_UZFS_OK(os.status());
  auto tx = p.Begin(4 << 20);
  ASSERT_UZFS_OK(tx.status());
  for (int i = 0; i < 16; i++) {
    ObjectProps op;
    auto obj = (*os)->AllocateObject(op, tx->txg());
    ASSERT_UZFS_OK(obj.status());
    ASSERT_UZFS_OK((*os)->Write(*obj, 0, test::RandomBytes(200 << 10, seed + i), tx->txg()));
  }
  tx->Commit();
}

TEST(PoolVdevChangeCompat, UzfsAddAndLogRemovalJudgedByZfsFuse) {
  test::TempDir d;
  {
    PoolLayout l;
    l.data = {Leaf(d.path(), "a")};
    l.logs = {Leaf(d.path(), "log0"), Leaf(d.path(), "log1")};
    PoolCreateOptions o = V23();
    o.fs_init = InitNewFilesystem;
    auto p = Pool::Create("grow", l, o);
    ASSERT_UZFS_OK(p.status());
    WriteSome(**p, 1);
    PoolLayout add;
    add.data = {Leaf(d.path(), "b")};
    ASSERT_UZFS_OK((*p)->AddVdevs(add, false));
    WriteSome(**p, 100);
    ASSERT_UZFS_OK((*p)->RemoveVdev((d.path() / "log0").string()));
    ASSERT_UZFS_OK((*p)->CreateDataset("grow/fs", {}));
    ASSERT_UZFS_OK((*p)->Export());
  }
  ExpectConsistent(d.path(), "grow");
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox(Judge(d.path().string(), "grow"), &out), 0) << out;
  CheckVerdict(d.path());
  const std::string status = test::ReadText(d.path() / "status.txt");
  EXPECT_NE(status.find((d.path() / "b").string()), std::string::npos) << status;
  EXPECT_NE(status.find((d.path() / "log1").string()), std::string::npos) << status;
  EXPECT_EQ(status.find((d.path() / "log0").string()), std::string::npos) << status;
  const std::string cfg = test::ReadText(d.path() / "config.txt");
  EXPECT_NE(cfg.find("type: 'hole'"), std::string::npos) << cfg;
  EXPECT_NE(cfg.find("hole_array[0]: 1"), std::string::npos) << cfg;
}

TEST(PoolVdevChangeCompat, ZfsFusePoolWithHoleImportsUnderUzfs) {
  test::TempDir d;
  for (const char* f : {"a", "b", "l1", "l2"}) MakeFile(d.path(), f);
  const std::string dir = d.path().string();
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox("d=" + dir + "\n"
                                      "zpool create -o version=23 -o ashift=9 -m none zh $d/a log $d/l1 $d/l2\n"
                                      "zpool add zh $d/b\n"
                                      "zpool remove zh $d/l1\n"
                                      "zpool export zh\n",
                                      &out),
            0)
      << out;
  ExpectConsistent(d.path(), "zh", /*check_allocated_total=*/false);
  {
    PoolImportOptions io;
    io.fs_init = InitNewFilesystem;
    auto p = ImportFrom(d.path(), "zh", io);
    ASSERT_UZFS_OK(p.status());
    Pool::ConfigView c = (*p)->Config();
    ASSERT_EQ(c.tree.children.size(), 4u);
    EXPECT_TRUE(c.tree.children[1].IsHole());
    EXPECT_TRUE(c.tree.children[2].is_log);
    EXPECT_EQ(c.tree.children[3].path, (d.path() / "b").string());
    WriteSome(**p, 7);
    // And a second removal, by uzfs this time.
    ASSERT_UZFS_OK((*p)->RemoveVdev((d.path() / "l2").string()));
    ASSERT_UZFS_OK((*p)->Export());
  }
  ExpectConsistent(d.path(), "zh", /*check_allocated_total=*/false);
  ASSERT_EQ(test::RunInZfsFuseSandbox(Judge(dir, "zh"), &out), 0) << out;
  CheckVerdict(d.path());
  const std::string cfg = test::ReadText(d.path() / "config.txt");
  EXPECT_NE(cfg.find("hole_array[1]: 2"), std::string::npos) << cfg;
}

}  // namespace
}  // namespace uzfs
