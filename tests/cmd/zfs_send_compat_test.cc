// `zfs send` judged by zfs-fuse on a version-23 pool it made: a file
// system of small and large files (indirect blocks), a sparse file, a
// symbolic link and a directory of fifty entries (a fat ZAP), then two
// rounds of changes, a snapshot after each. uzfs's streams (full, -i and
// -I) must be byte for byte the ones zfs-fuse sends; zfs-fuse's
// zstreamdump reads them, zfs-fuse receives the full and the -I streams
// into a tree identical to the original, with every snapshot, and its zdb
// then finds no leak. Also: the
// estimate (-nvP), what is refused (not a snapshot, no such snapshot), and
// a send whose reader stops reading: the pool refuses export and the
// snapshot destroy while it blocks, and the send ends with the broken
// pipe once the reader is gone.
#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using namespace clitest;

TEST(ZfsSendCompat, FullStreamOfAVersion23PoolIsZfsFusesOwn) {
  CliEnv env;
  env.Dev("z0", 256ull << 20);
  const std::string d = env.devdir();
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox(ZfsFuseStreamsScript(d), &out), 0) << out;
  Ran r = env.Zpool("import -d " + d + " -R " + (env.tmp() / "alt").string() + " zs");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zfs("send zs/fs@s1 > " + d + "/ours.zs");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(test::ReadFile(d + "/ours.zs"), test::ReadFile(d + "/theirs.zs")) << "not zfs-fuse's stream";
  // Incremental: one step, and every step from s1 to s3.
  r = env.Zfs("send -i @s1 zs/fs@s2 > " + d + "/ours_i.zs");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(test::ReadFile(d + "/ours_i.zs"), test::ReadFile(d + "/theirs_i.zs")) << "not zfs-fuse's -i stream";
  r = env.Zfs("send -I zs/fs@s1 zs/fs@s3 > " + d + "/ours_I.zs");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(test::ReadFile(d + "/ours_I.zs"), test::ReadFile(d + "/theirs_I.zs")) << "not zfs-fuse's -I stream";
  // The incremental carries only what changed: far less than the full one.
  EXPECT_LT(test::ReadFile(d + "/ours_i.zs").size() * 5, test::ReadFile(d + "/ours.zs").size());

  // The estimate: what the snapshot references, uncompressed.
  r = env.Zfs("send -nvP zs/fs@s1");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::vector<std::string> est = Lines(r.err);
  ASSERT_EQ(est.size(), 2u) << r.err;
  EXPECT_EQ(Fields(est[0])[0], "full");
  EXPECT_EQ(Fields(est[0])[1], "zs/fs@s1");
  const uint64_t bytes = std::stoull(Fields(est[1])[1]);
  EXPECT_GT(bytes, 3000000u);
  EXPECT_LT(bytes, 3500000u);
  EXPECT_EQ(r.out, "") << "-n sends nothing";

  // Refused, one line each.
  r = env.Zfs("send zs/fs > /dev/null");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot send 'zs/fs': not a snapshot (name it as fs@snap)\n");
  r = env.Zfs("send zs/fs@nope > /dev/null");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'zs/fs@nope': dataset does not exist\n");
  r = env.Zfs("send -x zs/fs@s1 > /dev/null");
  EXPECT_EQ(r.rc, 2);
  r = env.Zfs("send -i @s3 zs/fs@s2 > /dev/null");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot send 'zs/fs@s2': incremental source (zs/fs@s3) is not earlier than it\n");
  r = env.Zfs("send -i @gone zs/fs@s2 > /dev/null");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'zs/fs@gone': dataset does not exist\n");
  r = env.Zfs("send -nvP -I @s1 zs/fs@s3");
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(Lines(r.err).size(), 3u) << r.err;
  EXPECT_EQ(Fields(Lines(r.err)[0])[0], "incremental");
  EXPECT_EQ(Fields(Lines(r.err)[0])[1], "s1");
  EXPECT_EQ(Fields(Lines(r.err)[0])[2], "zs/fs@s2");
  EXPECT_EQ(Fields(Lines(r.err)[1])[2], "zs/fs@s3");

  // A reader that stops: the send blocks on the full pipe, holding the
  // pool and the snapshot; once the reader is gone it fails.
  const std::string env_vars = "UZFS_RUNDIR=" + env.rundir() + " UZFS_AUTOMOUNT=0 ";
  r = RunShell("{ cd " + d + " && ((" + env_vars + Bin("zfs") + " send zs/fs@s1 2>send.err; echo $? > send.rc) | sleep 4) & "
               "sleep 2; " + env_vars + Bin("zpool") + " export zs 2>&1; " + env_vars + Bin("zfs") +
               " destroy zs/fs@s1 2>&1; wait; cat " + d + "/send.rc " + d + "/send.err; } 2>" + d + "/shell.err",
               d + "/shell.err");
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out << r.err;
  EXPECT_EQ(lines[0], "cannot export 'zs': pool is busy (a zfs send is reading it)");
  EXPECT_TRUE(Contains(lines[1], "cannot destroy snapshot zs/fs@s1: dataset is busy")) << lines[1];
  EXPECT_EQ(lines[2], "1");
  EXPECT_EQ(lines[3], "cannot send 'zs/fs@s1': Broken pipe");

  // zfs-fuse reads our stream and receives it into the same tree.
  ASSERT_EQ(env.Zpool("export zs").rc, 0);
  ASSERT_EQ(test::RunInZfsFuseSandbox("set -e\nd=" + d + "\n"
                                      "zstreamdump < $d/ours.zs > $d/dump.txt\n"
                                      "zpool import -d $d zs\n"
                                      "zfs receive zs/copy < $d/ours.zs\n"
                                      "zfs receive -F zs/copy < $d/ours_I.zs\n"
                                      "zfs list -H -o name -t snapshot -r zs/copy > $d/snaps.txt\n"
                                      "for i in $(seq 1 100); do mountpoint -q $d/mnt/copy && break; sleep 0.1; done\n"
                                      "diff -r --no-dereference $d/mnt/fs $d/mnt/copy > $d/diff.txt 2>&1 || true\n"
                                      "(cd $d/mnt/fs && find . -printf '%p %m %s %l\\n' | sort) > $d/a.txt\n"
                                      "(cd $d/mnt/copy && find . -printf '%p %m %s %l\\n' | sort) > $d/b.txt\n"
                                      "zpool export zs\n"
                                      "zdb -e -p $d -bcc zs > $d/zdb.txt 2>&1 || true\n",
                                      &out),
            0)
      << out;
  EXPECT_NE(test::ReadText(d + "/dump.txt").find("Total DRR_END records = 1"), std::string::npos);
  EXPECT_EQ(test::ReadText(d + "/snaps.txt"), "zs/copy@s1\nzs/copy@s2\nzs/copy@s3\n");
  EXPECT_EQ(test::ReadText(d + "/diff.txt"), "");
  EXPECT_EQ(test::ReadText(d + "/a.txt"), test::ReadText(d + "/b.txt"));
  EXPECT_NE(test::ReadText(d + "/a.txt").find("./dir2/y"), std::string::npos);
  EXPECT_EQ(test::ReadText(d + "/a.txt").find("./sparse"), std::string::npos);
  const std::string zdb = test::ReadText(d + "/zdb.txt");
  EXPECT_NE(zdb.find("No leaks"), std::string::npos) << zdb;
}

}  // namespace
}  // namespace uzfs
