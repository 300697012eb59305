// zpool import POOL NEWNAME: a pool whose name clashes with an imported one
// comes in under a new name, which its labels and config keep (it imports
// by that name afterwards, its datasets are renamed with it); bad new names
// and read-only renames are refused without touching the pool.
#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using namespace clitest;

TEST(ZpoolImportRenameCli, ClashingPoolComesInUnderANewName) {
  CliEnv env;
  const std::string d0 = env.Dev("d0"), d1 = env.Dev("d1");
  ASSERT_EQ(env.Zpool("create tank " + d0).rc, 0);
  ASSERT_EQ(env.Zfs("create tank/data").rc, 0);
  ASSERT_EQ(env.Zfs("set com.uzfs:mark=first tank/data").rc, 0);
  Ran r = env.Zpool("get -H -o value guid tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string guid = r.out.substr(0, r.out.find('\n'));
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  ASSERT_EQ(env.Zpool("create tank " + d1).rc, 0);

  r = env.Zpool("import -d " + env.devdir() + " " + guid);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "use 'zpool import " + guid + " <newpool>' to give it a new name")) << r.err;
  r = env.Zpool("import -d " + env.devdir() + " " + guid + " 9bad");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "invalid pool name")) << r.err;
  r = env.Zpool("import -o readonly=on -d " + env.devdir() + " " + guid + " old");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "read-only import cannot rename")) << r.err;
  r = env.Zpool("import -d " + env.devdir() + " " + guid + " tank");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "a pool with that name is already imported")) << r.err;

  r = env.Zpool("import -d " + env.devdir() + " " + guid + " old");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zfs("list -H -o name -r old");
  EXPECT_EQ(r.out, "old\nold/data\n");
  r = env.Zfs("get -H -o value com.uzfs:mark old/data");
  EXPECT_EQ(r.out, "first\n");
  r = env.Zpool("list -H -o name");
  EXPECT_EQ(r.out, "old\ntank\n");
  // The new name is the pool's own now.
  ASSERT_EQ(env.Zpool("export old").rc, 0);
  r = env.Zpool("import -d " + env.devdir());
  EXPECT_TRUE(Contains(r.out, "pool: old")) << r.out;
  r = env.Zpool("import -d " + env.devdir() + " old");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("history old");
  EXPECT_TRUE(Contains(r.out, "zpool import -d " + env.devdir() + " " + guid + " old")) << r.out;
}

}  // namespace
}  // namespace uzfs
