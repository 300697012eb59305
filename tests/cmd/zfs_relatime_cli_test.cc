// `zfs get/set/inherit relatime` as a user runs them against a version 23
// pool (tests/cmd/cli_test_util.h): OpenZFS's relatime is gettable by name
// with its default and inheritance sources, settable at version 23 (it is
// only a ZAP entry), and absent from `get all`, which stays zfs-fuse's list.
#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using namespace clitest;

TEST(ZfsRelatimeCli, GetSetInherit) {
  CliEnv env;
  Ran r = env.Zpool("create -o version=23 tank " + env.Dev("d0", 256ull << 20));
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env.Zfs("create tank/a").rc, 0);
  r = env.Zfs("get relatime tank/a");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out,
            "NAME    PROPERTY  VALUE  SOURCE\n"
            "tank/a  relatime  off    default\n");
  r = env.Zfs("set relatime=on tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zfs("get -H -o name,value,source -r relatime tank");
  EXPECT_EQ(r.out, "tank\ton\tlocal\ntank/a\ton\tinherited from tank\n");
  r = env.Zfs("set relatime=sometimes tank/a");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("'relatime' must be one of 'on | off'"), std::string::npos) << r.err;
  ASSERT_EQ(env.Zfs("set relatime=off tank/a").rc, 0);
  r = env.Zfs("get -H -o value,source relatime tank/a");
  EXPECT_EQ(r.out, "off\tlocal\n");
  ASSERT_EQ(env.Zfs("inherit relatime tank/a").rc, 0);
  r = env.Zfs("get -H -o value,source relatime tank/a");
  EXPECT_EQ(r.out, "on\tinherited from tank\n");
  r = env.Zfs("get -H -o property all tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("atime\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("relatime"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace uzfs
