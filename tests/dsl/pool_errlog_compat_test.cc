// The persistent error log travels both ways between uzfs and zfs-fuse
// (the judge): damage uzfs recorded is listed by zfs-fuse's
// `zpool status -v`, and damage zfs-fuse recorded is listed by uzfs's
// Pool::DataErrors, both from the MOS's errlog objects alone (nothing
// reads the damaged block again).
#include <gtest/gtest.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/error_log.h"
#include "zfs/dsl/pool.h"

namespace uzfs {
namespace {

TEST(ErrorLogCompat, UzfsFindingsListedByZfsFuse) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(dir.path(), "d0"));
  constexpr size_t kSize = 256 * 1024;
  std::vector<uint64_t> objs;
  {
    auto p = Pool::Create("ep", layout, pooltest::V23());
    ASSERT_UZFS_OK(p.status());
    pooltest::WriteObjects(**p, "ep", 1, kSize, 11, &objs);
    ASSERT_UZFS_OK((*p)->Export());
  }
  const std::vector<uint8_t> data = test::RandomBytes(kSize, 11);
  ASSERT_EQ(test::OverwriteAll(layout.data[0].path, std::vector<uint8_t>(data.begin() + 1000, data.begin() + 1512)), 1);
  {
    auto p = pooltest::ImportFrom(dir.path(), "ep");
    ASSERT_UZFS_OK(p.status());
    auto os = (*p)->Objset("ep");
    ASSERT_UZFS_OK(os.status());
    std::vector<uint8_t> buf(4096);
    EXPECT_FALSE((*os)->Read(objs[0], 0, buf).ok());
    ASSERT_EQ((*p)->DataErrors()->size(), 1u);
    ASSERT_UZFS_OK((*p)->Export());
  }
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox("d=" + dir.path().string() +
                                          "\nzpool import -d $d ep || true  # the root has no file system to mount\nzpool status -v ep\nzpool export ep\n",
                                      &out),
            0)
      << out;
  char obj[32];
  std::snprintf(obj, sizeof obj, "<0x%" PRIx64 ">", objs[0]);
  EXPECT_NE(out.find("Permanent errors have been detected"), std::string::npos) << out;
  EXPECT_NE(out.find(obj), std::string::npos) << out;
}

TEST(ErrorLogCompat, ZfsFuseFindingsListedByUzfs) {
  test::TempDir dir;
  const std::string d = dir.path().string();
  pooltest::MakeFile(dir.path(), "z0");
  std::string pattern;
  for (int i = 0; i < 30000; i++) pattern += "ZFSFUSEDAT";
  { std::ofstream(dir.path() / "pattern") << pattern; }
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox("d=" + d +
                                          "\nzpool create -o version=23 -o ashift=9 -m $d/mnt zq $d/z0\n"
                                          "for i in $(seq 1 100); do mountpoint -q $d/mnt && break; sleep 0.1; done\n"
                                          "cp $d/pattern $d/mnt/f\nls -i $d/mnt/f\nzpool export zq\n",
                                      &out),
            0)
      << out;
  const uint64_t ino = std::strtoull(out.substr(out.find_first_of("0123456789")).c_str(), nullptr, 10);
  ASSERT_GT(test::OverwriteAll((dir.path() / "z0").string(), std::vector<uint8_t>(pattern.begin(), pattern.begin() + 200)), 0);
  ASSERT_EQ(test::RunInZfsFuseSandbox("d=" + d +
                                          "\nzpool import -d $d zq\n"
                                          "for i in $(seq 1 100); do mountpoint -q $d/mnt && break; sleep 0.1; done\n"
                                          "cat $d/mnt/f > /dev/null 2>&1 && echo READ-OK\n"
                                          "zpool status -v zq\nzpool export zq\n",
                                      &out),
            0)
      << out;
  ASSERT_EQ(out.find("READ-OK"), std::string::npos) << out;
  PoolImportOptions o;
  o.readonly = true;
  auto p = pooltest::ImportFrom(dir.path(), "zq", o);
  ASSERT_UZFS_OK(p.status());
  auto errs = (*p)->DataErrors();
  ASSERT_UZFS_OK(errs.status());
  ASSERT_FALSE(errs->empty()) << out;
  for (const DataErrorBookmark& b : *errs) {
    EXPECT_EQ(b.object, ino) << ErrorLogName(b);
    auto name = (*p)->DatasetNameOf(b.objset);
    ASSERT_UZFS_OK(name.status());
    EXPECT_EQ(*name, "zq");
  }
  ASSERT_UZFS_OK((*p)->Export());
}

}  // namespace
}  // namespace uzfs
