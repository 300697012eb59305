// Replication streams (zfs send -R, -p; zfs receive of them), through the
// mounts: a tree of file systems with a child, a clone and local
// properties is sent whole and received as the same tree (names, trees of
// every snapshot, guids, the clone's origin, the properties); an
// incremental -R stream with -F then brings a new file system and removes
// the one the sender destroyed, and a snapshot destroyed there goes here
// too. --exclude, a child without the snapshot,
// -p alone, -x, -w, and a damaged header (refused, nothing made). The received
// pool passes OpenZFS's zdb leak check.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/cmd/cli_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs::clitest {
namespace {

class ZfsReplicationFuse : public MountingCliTest {
 protected:
  std::string SnapTree(const std::string& fs_dir, const std::string& snap) {
    return Tree(root_ + "/" + fs_dir + "/.zfs/snapshot/" + snap);
  }
  std::string Get(const std::string& what, const std::string& ds) {
    return env_.Zfs("get -Hp -o value " + what + " " + ds).out;
  }
  std::string File(const std::string& name) { return (env_.tmp() / name).string(); }
};

TEST_F(ZfsReplicationFuse, TreesOfFileSystemsTravelWhole) {
  UZFS_REQUIRE_FUSE();
  Ran r = env_.Zpool("create -o version=5000 -m " + root_ + " tank " + env_.Dev("d0", 512ull << 20));
  ASSERT_EQ(r.rc, 0) << r.err;
  // tank/src (atime off), tank/src/kid (compressed, a user property), a
  // clone tank/src/cl of src@s1; snapshots s1 and s2 of all.
  ASSERT_EQ(env_.Zfs("create -o atime=off tank/src").rc, 0);
  ASSERT_EQ(env_.Zfs("create -o compression=on -o com.example:note=hello tank/src/kid").rc, 0);
  ASSERT_TRUE(Mounted("src/kid"));
  MakeSampleTree(root_ + "/src", 20, 1 << 20);
  MakeSampleTree(root_ + "/src/kid", 5, 300000);
  ASSERT_EQ(env_.Zfs("snapshot -r tank/src@s1").rc, 0);
  ASSERT_EQ(env_.Zfs("set com.example:snap=first tank/src@s1").rc, 0);
  ASSERT_EQ(env_.Zfs("clone tank/src@s1 tank/src/cl").rc, 0);
  ASSERT_TRUE(Mounted("src/cl"));
  PutFile(root_ + "/src/cl/own", test::RandomBytes(100000, 5));
  PutFile(root_ + "/src/more", test::RandomBytes(200000, 6));
  PutFile(root_ + "/src/kid/more", test::RandomBytes(50000, 7));
  ASSERT_EQ(env_.Zfs("snapshot tank/src@mid").rc, 0);
  ASSERT_EQ(env_.Zfs("snapshot -r tank/src@s2").rc, 0);

  r = env_.Zfs("send -R tank/src@s2 > " + File("r.zs"));
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env_.Zfs("receive -v tank/dst < " + File("r.zs"));
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_EQ(env_.Zfs("list -H -o name -r tank/dst").out, "tank/dst\ntank/dst/cl\ntank/dst/kid\n");
  EXPECT_EQ(env_.Zfs("list -H -o name -t snapshot -r tank/dst").out,
            "tank/dst@s1\ntank/dst@mid\ntank/dst@s2\ntank/dst/cl@s2\ntank/dst/kid@s1\ntank/dst/kid@s2\n");
  for (const char* ds : {"@s1", "@mid", "@s2", "/kid@s1", "/kid@s2", "/cl@s2"}) {
    EXPECT_EQ(Get("guid", std::string("tank/dst") + ds), Get("guid", std::string("tank/src") + ds)) << ds;
  }
  EXPECT_EQ(Get("origin", "tank/dst/cl"), "tank/dst@s1\n");
  EXPECT_EQ(env_.Zfs("get -H -o value,source compression tank/dst/kid").out, "on\tlocal\n");
  EXPECT_EQ(Get("com.example:note", "tank/dst/kid"), "hello\n");
  EXPECT_EQ(Get("atime", "tank/dst"), "off\n");
  EXPECT_EQ(Get("com.example:snap", "tank/dst@s1"), "first\n");
  ASSERT_TRUE(Mounted("dst/kid"));
  ASSERT_TRUE(Mounted("dst/cl"));
  for (const char* snap : {"s1", "s2"}) {
    EXPECT_EQ(SnapTree("dst", snap), SnapTree("src", snap)) << snap;
    EXPECT_EQ(SnapTree("dst/kid", snap), SnapTree("src/kid", snap)) << snap;
  }
  EXPECT_EQ(SnapTree("dst/cl", "s2"), SnapTree("src/cl", "s2"));
  EXPECT_EQ(Tree(root_ + "/dst/cl"), Tree(root_ + "/src/cl"));

  // The sender moves on: a new file system, one destroyed, a snapshot
  // destroyed; -R -I with -F brings all of it.
  ASSERT_EQ(env_.Zfs("create tank/src/new").rc, 0);
  ASSERT_TRUE(Mounted("src/new"));
  PutFile(root_ + "/src/new/n", test::RandomBytes(30000, 8));
  ASSERT_EQ(env_.Zfs("destroy -r tank/src/kid").rc, 0);
  ASSERT_EQ(env_.Zfs("snapshot -r tank/src@s3").rc, 0);
  ASSERT_EQ(env_.Zfs("destroy tank/src@mid").rc, 0);
  r = env_.Zfs("send -R -I @s2 tank/src@s3 > " + File("ri.zs"));
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env_.Zfs("receive -F tank/dst < " + File("ri.zs"));
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_EQ(env_.Zfs("list -H -o name -r tank/dst").out, "tank/dst\ntank/dst/cl\ntank/dst/new\n");
  EXPECT_EQ(env_.Zfs("list -H -o name -t snapshot -r tank/dst").out,
            "tank/dst@s1\ntank/dst@s2\ntank/dst@s3\ntank/dst/cl@s2\ntank/dst/cl@s3\ntank/dst/new@s3\n");
  EXPECT_EQ(SnapTree("dst", "s3"), SnapTree("src", "s3"));
  ASSERT_TRUE(Mounted("dst/new"));
  EXPECT_EQ(Tree(root_ + "/dst/new"), Tree(root_ + "/src/new"));

  // A child without the snapshot refuses -R, naming it; --exclude leaves it out.
  ASSERT_EQ(env_.Zfs("create tank/src/late").rc, 0);
  r = env_.Zfs("send -R tank/src@s3 > " + File("no.zs"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot send 'tank/src@s3': 'tank/src/late' has no snapshot 's3' (snapshot with -r, or leave it "
                   "out with --exclude tank/src/late)\n");
  r = env_.Zfs("send -R --exclude tank/src/late -X tank/src/new tank/src@s3 > " + File("x.zs"));
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env_.Zfs("receive -u -x atime tank/xcopy < " + File("x.zs"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env_.Zfs("list -H -o name -r tank/xcopy").out, "tank/xcopy\ntank/xcopy/cl\n");
  EXPECT_EQ(env_.Zfs("get -H -o value,source atime tank/xcopy").out, "on\tdefault\n");
  r = env_.Zfs("send --exclude tank/src/late tank/src@s3 > " + File("x2.zs"));
  EXPECT_EQ(r.rc, 2);

  // -p alone: one file system with its properties.
  ASSERT_EQ(env_.Zfs("send -p tank/dst@s3 > " + File("p.zs")).rc, 0);
  r = env_.Zfs("receive -u tank/pcopy < " + File("p.zs"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env_.Zfs("list -H -o name -r tank/pcopy").out, "tank/pcopy\n");
  EXPECT_EQ(Get("atime", "tank/pcopy"), "off\n");

  // A damaged header: refused in one line, nothing made.
  std::vector<uint8_t> bytes = test::ReadFile(File("r.zs"));
  ASSERT_GT(bytes.size(), 400u);
  for (size_t off : {size_t{330}, size_t{360}, size_t{400}}) {
    std::vector<uint8_t> bad = bytes;
    bad[off] ^= 0x5a;
    PutFile(File("bad.zs"), bad);
    r = env_.Zfs("receive tank/bad < " + File("bad.zs"));
    EXPECT_EQ(r.rc, 1) << off;
    EXPECT_TRUE(r.err.starts_with("cannot receive: invalid stream: ")) << off << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(env_.Zfs("list tank/bad").rc, 0) << off;
  }
  // A stream fed twice: the second refused, the tree as it was.
  r = env_.Zfs("receive tank/dst < " + File("ri.zs"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(env_.Zfs("list -H -o name -r tank/dst").out, "tank/dst\ntank/dst/cl\ntank/dst/new\n");

  // -w: nothing here is encrypted, so a raw stream is the -Lec one.
  ASSERT_EQ(env_.Zfs("send -w tank/src@s3 > " + File("w.zs")).rc, 0);
  ASSERT_EQ(env_.Zfs("send -Lec tank/src@s3 > " + File("lec.zs")).rc, 0);
  EXPECT_EQ(test::ReadFile(File("w.zs")), test::ReadFile(File("lec.zs")));

  ASSERT_EQ(env_.Zpool("export tank").rc, 0);
  std::string zdb;
  EXPECT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + env_.devdir() + " -bcc tank", &zdb), 0) << zdb;
  EXPECT_TRUE(Contains(zdb, "No leaks")) << zdb;
  ASSERT_EQ(env_.Zpool("import -d " + env_.devdir() + " tank").rc, 0);
}

}  // namespace
}  // namespace uzfs::clitest
