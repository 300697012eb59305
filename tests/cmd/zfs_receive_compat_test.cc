// `zfs receive` of zfs-fuse's streams, judged by zfs-fuse: it makes a
// version-23 pool with a file system of small and large files, a sparse
// file, a link and a directory of fifty entries, changed twice with a
// snapshot after each, and sends it (full, -i, -I). uzfs receives the full
// stream and the -i stream into one file system and the full and the -I
// package into another. Back in zfs-fuse, the received file systems must
// hold the trees it sent (diff against its own, every mode, size and link
// included), their snapshots its snapshots' guids, and its zdb must find
// no leak in the pool uzfs wrote.
//
// Replication streams both ways: zfs-fuse sends -R a tree with a child
// (compressed, a user property), a clone, and an incremental -R -I after
// it; uzfs receives both and sends its copy back with -R; zfs-fuse's
// zstreamdump reads that stream and zfs-fuse receives it. Every copy must
// hold zfs-fuse's trees, names, origins and properties.
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

TEST(ZfsReceiveCompat, ReplicationStreamsGoBothWays) {
  CliEnv env;
  env.Dev("z0", 256ull << 20);
  const std::string d = env.devdir();
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox(
                "set -e\nd=" + d + "\n"
                "zpool create -o version=23 -m $d/mnt zs $d/z0\n"
                "zfs create -o atime=off zs/fs\n"
                "zfs create -o compression=on -o com.example:note=hello zs/fs/child\n"
                "for i in $(seq 1 100); do mountpoint -q $d/mnt/fs/child && break; sleep 0.1; done\n"
                "head -c 2000000 /dev/urandom > $d/mnt/fs/big; echo a > $d/mnt/fs/a\n"
                "mkdir $d/mnt/fs/dir; for i in $(seq 1 30); do echo $i > $d/mnt/fs/dir/f$i; done\n"
                "head -c 300000 /dev/urandom > $d/mnt/fs/child/c\n"
                "zfs snapshot -r zs/fs@s1\n"
                "zfs clone zs/fs@s1 zs/fs/cl\n"
                "for i in $(seq 1 100); do mountpoint -q $d/mnt/fs/cl && break; sleep 0.1; done\n"
                "echo own > $d/mnt/fs/cl/own; echo more >> $d/mnt/fs/a\n"
                "zfs snapshot -r zs/fs@s2\n"
                "zfs send -R zs/fs@s2 > $d/R.zs\n"
                "rm $d/mnt/fs/dir/f3; echo new > $d/mnt/fs/child/n\n"
                "zfs snapshot -r zs/fs@s3\n"
                "zfs send -R -I @s2 zs/fs@s3 > $d/RI.zs\n"
                "zpool export zs\n",
                &out),
            0)
      << out;
  Ran r = env.Zpool("import -d " + d + " zs");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zfs("receive zs/copy < " + d + "/R.zs");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zfs("receive -F zs/copy < " + d + "/RI.zs");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.Zfs("list -H -o name -r zs/copy").out, "zs/copy\nzs/copy/child\nzs/copy/cl\n");
  EXPECT_EQ(env.Zfs("get -H -o value origin zs/copy/cl").out, "zs/copy@s1\n");
  EXPECT_EQ(env.Zfs("get -H -o value compression,com.example:note zs/copy/child").out, "on\nhello\n");
  EXPECT_EQ(env.Zfs("get -Hp -o value guid zs/copy/child@s3").out, env.Zfs("get -Hp -o value guid zs/fs/child@s3").out);
  r = env.Zfs("send -R zs/copy@s3 > " + d + "/ours.zs");
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env.Zpool("export zs").rc, 0);

  ASSERT_EQ(test::RunInZfsFuseSandbox(
                "set -e\nd=" + d + "\n"
                "zstreamdump < $d/ours.zs > $d/dump.txt\n"
                "zpool import -d $d zs\n"
                "zfs receive zs/back < $d/ours.zs\n"
                "for m in fs fs/child fs/cl copy copy/child copy/cl back back/child back/cl; do\n"
                "  for i in $(seq 1 100); do mountpoint -q $d/mnt/$m && break; sleep 0.1; done\n"
                "done\n"
                "for c in copy back; do\n"
                "  diff -r --no-dereference -x child -x cl $d/mnt/fs $d/mnt/$c >> $d/diff.txt 2>&1 || true\n"
                "  diff -r --no-dereference $d/mnt/fs/child $d/mnt/$c/child >> $d/diff.txt 2>&1 || true\n"
                "  diff -r --no-dereference $d/mnt/fs/cl $d/mnt/$c/cl >> $d/diff.txt 2>&1 || true\n"
                "done\n"
                "zfs list -H -o name -t all -r zs/back > $d/back.txt\n"
                "zfs get -H -o value origin,compression,com.example:note zs/back/cl zs/back/child > $d/props.txt\n"
                "zpool export zs\n"
                "zdb -e -p $d -bcc zs > $d/zdb.txt 2>&1 || true\n",
                &out),
            0)
      << out;
  EXPECT_EQ(test::ReadText(d + "/diff.txt"), "");
  EXPECT_EQ(test::ReadText(d + "/back.txt"),
            "zs/back\nzs/back@s1\nzs/back@s2\nzs/back@s3\nzs/back/child\nzs/back/child@s1\nzs/back/child@s2\n"
            "zs/back/child@s3\nzs/back/cl\nzs/back/cl@s2\nzs/back/cl@s3\n");
  EXPECT_EQ(test::ReadText(d + "/props.txt"), "-\non\nhello\nzs/back@s1\noff\n-\n");  // (child, then cl)
  const std::string zdb = test::ReadText(d + "/zdb.txt");
  EXPECT_NE(zdb.find("No leaks"), std::string::npos) << zdb;
}

}  // namespace
}  // namespace uzfs
