// `zfs destroy` of a file system whose snapshots zfs-fuse took: uzfs does
// not destroy snapshots yet, so the file system stays, and a recursive
// destroy (or its dry run) is refused before it takes anything, its
// children included, naming the snapshots.
#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using namespace clitest;

TEST(ZfsDestroyCompat, AFileSystemWithSnapshotsIsRefusedWholeEvenRecursively) {
  CliEnv env;
  env.Dev("z0");
  const std::string d = env.devdir();
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox("set -e\nd=" + d + "\n"
                                      "zpool create -o version=23 -m $d/mnt zs $d/z0\n"
                                      "zfs create zs/fs; zfs create zs/fs/child\n"
                                      "zfs snapshot zs/fs@s1\n"
                                      "zpool export zs\n",
                                      &out),
            0)
      << out;
  Ran r = env.Zpool("import -d " + d + " -R " + (env.tmp() / "alt").string() + " zs");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string refused =
      "cannot destroy 'zs/fs': filesystem has children\nuse '-r' to destroy the following datasets:\nzs/fs@s1\n";
  r = env.Zfs("destroy zs/fs");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(r.err.starts_with("cannot destroy 'zs/fs': filesystem has children\n")) << r.err;
  for (const char* flags : {"-r ", "-rnv "}) {
    r = env.Zfs(std::string("destroy ") + flags + "zs/fs");
    EXPECT_EQ(r.rc, 1) << flags;
    EXPECT_EQ(r.err, refused) << flags;
    EXPECT_EQ(r.out, "") << flags;
  }
  r = env.Zfs("list -H -o name -r zs");
  EXPECT_EQ(r.out, "zs\nzs/fs\nzs/fs/child\n") << "nothing was destroyed";
  // The child alone has no snapshot: it goes.
  EXPECT_EQ(env.Zfs("destroy zs/fs/child").rc, 0);
  EXPECT_EQ(env.Zpool("export zs").rc, 0);
}

}  // namespace
}  // namespace uzfs
