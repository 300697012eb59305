// `zfs receive` of zfs-fuse's streams, judged by zfs-fuse: it makes a
// version-23 pool with a file system of small and large files, a sparse
// file, a link and a directory of fifty entries, changed twice with a
// snapshot after each, and sends it (full, -i, -I). uzfs receives the full
// stream and the -i stream into one file system and the full and the -I
// package into another. Back in zfs-fuse, the received file systems must
// hold the trees it sent (diff against its own, every mode, size and link
// included), their snapshots its snapshots' guids, and its zdb must find
// no leak in the pool uzfs wrote.
#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using namespace clitest;

TEST(ZfsReceiveCompat, ZfsFusesStreamsMakeItsOwnTrees) {
  CliEnv env;
  env.Dev("z0", 256ull << 20);
  const std::string d = env.devdir();
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox(ZfsFuseStreamsScript(d), &out), 0) << out;
  Ran r = env.Zpool("import -d " + d + " zs");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zfs("receive zs/copy < " + d + "/theirs.zs");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zfs("receive zs/copy < " + d + "/theirs_i.zs");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zfs("receive zs/copy2 < " + d + "/theirs.zs");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zfs("receive zs/copy2 < " + d + "/theirs_I.zs");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.Zfs("list -H -o name -t snapshot -r zs/copy2").out, "zs/copy2@s1\nzs/copy2@s2\nzs/copy2@s3\n");
  // The snapshots are the sender's (an incremental after them finds its source).
  EXPECT_EQ(env.Zfs("get -Hp -o value guid zs/copy@s2").out, env.Zfs("get -Hp -o value guid zs/fs@s2").out);
  ASSERT_EQ(env.Zpool("export zs").rc, 0);

  ASSERT_EQ(test::RunInZfsFuseSandbox("set -e\nd=" + d + "\n"
                                      "zpool import -d $d zs\n"
                                      "zfs clone zs/fs@s2 zs/at2\n"
                                      "for m in fs copy copy2 at2; do\n"
                                      "  for i in $(seq 1 100); do mountpoint -q $d/mnt/$m && break; sleep 0.1; done\n"
                                      "done\n"
                                      "diff -r --no-dereference $d/mnt/at2 $d/mnt/copy > $d/diff2.txt 2>&1 || true\n"
                                      "diff -r --no-dereference $d/mnt/fs $d/mnt/copy2 > $d/diff3.txt 2>&1 || true\n"
                                      "(cd $d/mnt/at2 && find . -printf '%p %m %s %l\\n' | sort) > $d/a2.txt\n"
                                      "(cd $d/mnt/copy && find . -printf '%p %m %s %l\\n' | sort) > $d/b2.txt\n"
                                      "(cd $d/mnt/fs && find . -printf '%p %m %s %l\\n' | sort) > $d/a3.txt\n"
                                      "(cd $d/mnt/copy2 && find . -printf '%p %m %s %l\\n' | sort) > $d/b3.txt\n"
                                      "zfs get -H -o value guid zs/fs@s3 zs/copy2@s3 > $d/guids.txt\n"
                                      "zpool export zs\n"
                                      "zdb -e -p $d -bcc zs > $d/zdb.txt 2>&1 || true\n",
                                      &out),
            0)
      << out;
  EXPECT_EQ(test::ReadText(d + "/diff2.txt"), "");
  EXPECT_EQ(test::ReadText(d + "/diff3.txt"), "");
  EXPECT_EQ(test::ReadText(d + "/a2.txt"), test::ReadText(d + "/b2.txt"));
  EXPECT_EQ(test::ReadText(d + "/a3.txt"), test::ReadText(d + "/b3.txt"));
  EXPECT_NE(test::ReadText(d + "/a2.txt").find("./dir/g1 600"), std::string::npos);
  EXPECT_NE(test::ReadText(d + "/a3.txt").find("./dir2/y"), std::string::npos);
  const std::vector<std::string> guids = Lines(test::ReadText(d + "/guids.txt"));
  ASSERT_EQ(guids.size(), 2u);
  EXPECT_EQ(guids[0], guids[1]);
  const std::string zdb = test::ReadText(d + "/zdb.txt");
  EXPECT_NE(zdb.find("No leaks"), std::string::npos) << zdb;
}

}  // namespace
}  // namespace uzfs
