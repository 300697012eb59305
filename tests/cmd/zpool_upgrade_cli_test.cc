// zpool upgrade (man/zpool.8), with OpenZFS 2.1's texts:
//   - without arguments, lists legacy pools (VER  POOL) and feature-flag
//     pools lacking supported features (POOL  FEATURE);
//   - `upgrade POOL` enables exactly what was disabled, once (a second run
//     says all is enabled), and the features stay enabled across export
//     and import; `-a` does every pool;
//   - a legacy pool is refused with one line and exit 1, left at its
//     version; -v lists features and legacy versions; bad flags are usage
//     errors (exit 2).
#include <string>

#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using clitest::CliEnv;
using clitest::Contains;
using clitest::Ran;

TEST(ZpoolUpgrade, EnablesWhatAFeaturePoolLacks) {
  CliEnv env;
  Ran r = env.Zpool("create -m none -o feature@bookmarks=disabled -o feature@async_destroy=disabled tank " +
                    env.Dev("d0"));
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env.Zpool("create -m none full " + env.Dev("d1")).rc, 0);
  r = env.Zpool("upgrade");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out,
            "This system supports ZFS pool feature flags.\n\n"
            "All pools are formatted using feature flags.\n\n"
            "Some supported features are not enabled on the following pools. Once a\n"
            "feature is enabled the pool may become incompatible with software\n"
            "that does not support the feature. See zpool-features(7) for details.\n\n"
            "Note that the pool 'compatibility' feature can be used to inhibit\n"
            "feature upgrades.\n\n"
            "POOL  FEATURE\n"
            "---------------\n"
            "tank\n"
            "      async_destroy\n"
            "      bookmarks\n");
  r = env.Zpool("upgrade tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "Enabled the following features on 'tank':\n  async_destroy\n  bookmarks\n");
  EXPECT_EQ(env.Zpool("get -H -o value feature@bookmarks,feature@async_destroy tank").out, "enabled\nenabled\n");
  r = env.Zpool("upgrade tank");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, "Pool 'tank' already has all supported and requested features enabled.\n");
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  ASSERT_EQ(env.Zpool("import -d " + env.devdir() + " tank").rc, 0);
  EXPECT_EQ(env.Zpool("get -H -o value feature@bookmarks tank").out, "enabled\n");
  r = env.Zpool("upgrade");
  EXPECT_TRUE(Contains(r.out, "Every feature flags pool has all supported and requested features enabled.\n")) << r.out;
  // The bookmark the feature allows now works.
  ASSERT_EQ(env.Zfs("snapshot tank@s").rc, 0);
  r = env.Zfs("bookmark tank@s tank#b");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(env.Zpool("history tank").out, "zpool upgrade tank")) << env.Zpool("history tank").out;
}

TEST(ZpoolUpgrade, ALegacyPoolIsListedAndLeftAlone) {
  CliEnv env;
  ASSERT_EQ(env.Zpool("create -m none -o version=23 old " + env.Dev("d0")).rc, 0);
  ASSERT_EQ(env.Zpool("create -m none -o feature@zilsaxattr=disabled new " + env.Dev("d1")).rc, 0);
  Ran r = env.Zpool("upgrade");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "VER  POOL\n---  ------------\n23   old\n\n"
                              "Use 'zpool upgrade -v' for a list of available legacy versions.\n"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "POOL  FEATURE\n---------------\nnew\n      zilsaxattr\n")) << r.out;
  r = env.Zpool("upgrade old");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot upgrade 'old': uzfs cannot convert a version 23 pool (move its data to a new pool with "
                   "'zfs send -R')\n");
  EXPECT_EQ(env.Zpool("get -H -o value version old").out, "23\n");
  r = env.Zpool("upgrade -V 23 old");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, "Pool 'old' is already formatted using version 23.\n");
  // -a: the feature pool is done, the legacy one refused.
  r = env.Zpool("upgrade -a");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.out, "Enabled the following features on 'new':\n  zilsaxattr\n")) << r.out;
  EXPECT_TRUE(Contains(r.err, "cannot upgrade 'old'")) << r.err;
  r = env.Zpool("upgrade nosuch");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'nosuch': no such pool\n");
}

TEST(ZpoolUpgrade, ListsWhatIsSupportedAndRefusesBadFlags) {
  CliEnv env;
  Ran r = env.Zpool("upgrade -v");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "FEAT DESCRIPTION\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "bookmarks\n     \"zfs bookmark\" command\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, " 23  Slim ZIL\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, " 5   Compression using the gzip algorithm\n")) << r.out;
  for (const char* bad : {"upgrade -v tank", "upgrade -x", "upgrade -a tank", "upgrade -V 23"}) {
    r = env.Zpool(bad);
    EXPECT_EQ(r.rc, 2) << bad;
    EXPECT_TRUE(Contains(r.err, "usage:")) << bad << ": " << r.err;
  }
  r = env.Zpool("upgrade -V 40 -a");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "invalid version '40'\n");
}

}  // namespace
}  // namespace uzfs
