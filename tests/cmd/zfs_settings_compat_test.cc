// A pool made by zfs-fuse whose datasets already have values uzfs refuses
// to set (dedup=verify, aclinherit=passthrough, aclmode=discard),
// snapdir=visible and exec=off: uzfs imports it, mounts the datasets
// (exec=off as noexec), shows the values with `zfs get`, reads and writes
// files; setting such a value again is refused, while inherit and the
// accepted value work. Runs zfs-fuse and mounts through FUSE: needs root
// and /dev/fuse.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/cmd/cli_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

using namespace clitest;

bool HasMountOption(const std::string& path, const std::string& opt) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  bool found = false;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string id, parent, dev, root, mnt, opts;
    ls >> id >> parent >> dev >> root >> mnt >> opts;
    if (mnt == path) found = ("," + opts + ",").find("," + opt + ",") != std::string::npos;
  }
  return found;
}

TEST(SettingsCompat, ForeignValuesImportAndMount) {
  UZFS_REQUIRE_FUSE();
  CliEnv env;
  env.automount = true;
  const std::string d = env.devdir();
  env.Dev("z0");
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox(
                "d=" + d + "\n"
                "zpool create -o version=23 -m none fp $d/z0\n"
                "zfs create -o dedup=verify -o snapdir=visible -o aclinherit=passthrough fp/a\n"
                "zfs set aclmode=discard fp\n"
                "zfs create -o exec=off fp/a/b\n"
                "zpool export fp\n",
                &out),
            0)
      << out;
  const std::string mnt = (env.tmp() / "mnt").string();
  Ran r = env.Zpool("import -d " + d + " fp");
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env.Zfs("set mountpoint=" + mnt + " fp").rc, 0);
  EXPECT_EQ(env.Zfs("get -H -o value mounted fp/a fp/a/b").out, "yes\nyes\n");
  r = env.Zfs("get -H -o property,value,source dedup,snapdir,aclinherit,aclmode fp/a");
  EXPECT_EQ(r.out,
            "dedup\tverify\tlocal\nsnapdir\tvisible\tlocal\naclinherit\tpassthrough\tlocal\n"
            "aclmode\tdiscard\tinherited from fp\n");
  EXPECT_TRUE(HasMountOption(mnt + "/a/b", "noexec"));
  EXPECT_FALSE(HasMountOption(mnt + "/a", "noexec"));
  {
    std::ofstream(mnt + "/a/f") << "written by uzfs\n";
  }
  EXPECT_EQ(test::ReadText(mnt + "/a/f"), "written by uzfs\n");

  r = env.Zfs("set dedup=verify fp/a");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("dedup=verify is not supported by uzfs yet"), std::string::npos) << r.err;
  EXPECT_EQ(env.Zfs("set snapdir=hidden fp/a").rc, 0);
  EXPECT_EQ(env.Zfs("inherit dedup fp/a").rc, 0);
  EXPECT_EQ(env.Zfs("get -H -o value,source dedup,snapdir fp/a").out, "off\tdefault\nhidden\tlocal\n");
  EXPECT_EQ(env.Zfs("set exec=on fp/a/b").rc, 0);
  EXPECT_FALSE(HasMountOption(mnt + "/a/b", "noexec"));
  ASSERT_EQ(env.Zpool("export fp").rc, 0);
}

}  // namespace
}  // namespace uzfs
