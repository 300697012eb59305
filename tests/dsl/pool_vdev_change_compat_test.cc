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

using pooltest::CheckZfsFuseVerdict;
using pooltest::ZfsFuseJudgeScript;

void WriteSome(Pool& p, uint64_t seed) {
  std::vector<uint64_t> objs;
  pooltest::WriteObjects(p, p.name(), 16, 200 << 10, seed, &objs);
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
  ASSERT_EQ(test::RunInZfsFuseSandbox(ZfsFuseJudgeScript(d.path().string(), "grow"), &out), 0) << out;
  CheckZfsFuseVerdict(d.path());
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
  ASSERT_EQ(test::RunInZfsFuseSandbox(ZfsFuseJudgeScript(dir, "zh"), &out), 0) << out;
  CheckZfsFuseVerdict(d.path());
  const std::string cfg = test::ReadText(d.path() / "config.txt");
  EXPECT_NE(cfg.find("hole_array[1]: 2"), std::string::npos) << cfg;
}

}  // namespace
}  // namespace uzfs
