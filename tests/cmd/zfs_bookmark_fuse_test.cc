// Bookmarks through the commands: zfs bookmark (fs#name and #name), zfs
// list -t bookmark, zfs get of a bookmark, an incremental send from a
// bookmark whose snapshot was destroyed, received into an identical tree,
// zfs destroy fs#name, the refusals; OpenZFS's zdb finds the pool sound
// with bookmarks in it.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/cmd/cli_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs::clitest {
namespace {

class ZfsBookmarkFuse : public MountingCliTest {
 protected:
  std::string File(const std::string& name) { return (env_.tmp() / name).string(); }
  std::string Get(const std::string& what, const std::string& ds) {
    return env_.Zfs("get -Hp -o value " + what + " " + ds).out;
  }
};

TEST_F(ZfsBookmarkFuse, AnIncrementalFromABookmarkOutlivesItsSnapshot) {
  UZFS_REQUIRE_FUSE();
  Ran r = env_.Zpool("create -o version=5000 -m " + root_ + " tank " + env_.Dev("d0", 512ull << 20));
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env_.Zfs("create -o atime=off tank/src").rc, 0);
  ASSERT_TRUE(Mounted("src"));
  MakeSampleTree(root_ + "/src", 20, 1 << 20);
  ASSERT_EQ(env_.Zfs("snapshot tank/src@mon").rc, 0);
  r = env_.Zfs("bookmark tank/src@mon tank/src#mon");
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env_.Zfs("bookmark tank/src@mon '#copy'").rc, 0);
  EXPECT_EQ(env_.Zpool("get -H -o value feature@bookmarks tank").out, "active\n");
  EXPECT_EQ(env_.Zfs("list -H -o name -t bookmark").out, "tank/src#copy\ntank/src#mon\n");
  EXPECT_EQ(env_.Zfs("list -H -o name,used,mountpoint tank/src#mon").out, "tank/src#mon\t-\t-\n");
  EXPECT_EQ(Get("guid", "tank/src#mon"), Get("guid", "tank/src@mon"));
  EXPECT_EQ(Get("createtxg", "tank/src#mon"), Get("createtxg", "tank/src@mon"));
  EXPECT_EQ(Get("type", "tank/src#mon"), "bookmark\n");

  // The backup takes the snapshot; the sender keeps only the bookmark.
  ASSERT_EQ(env_.Zfs("send tank/src@mon > " + File("full.zs")).rc, 0);
  ASSERT_EQ(env_.Zfs("receive -u tank/dst < " + File("full.zs")).rc, 0);
  ASSERT_EQ(env_.Zfs("destroy tank/src@mon").rc, 0);
  PutFile(root_ + "/src/new", test::RandomBytes(700000, 3));
  ASSERT_EQ(std::system(("rm -f " + root_ + "/src/small").c_str()), 0);
  ASSERT_EQ(env_.Zfs("snapshot tank/src@tue").rc, 0);
  r = env_.Zfs("send -i '#mon' tank/src@tue > " + File("inc.zs"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_LT(std::filesystem::file_size(File("inc.zs")), std::filesystem::file_size(File("full.zs")));
  r = env_.Zfs("receive tank/dst < " + File("inc.zs"));
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env_.Zfs("mount tank/dst").rc, 0);
  ASSERT_TRUE(Mounted("dst"));
  EXPECT_EQ(Tree(root_ + "/dst"), Tree(root_ + "/src"));
  EXPECT_EQ(Get("guid", "tank/dst@tue"), Get("guid", "tank/src@tue"));

  // OpenZFS's zdb: no leak, the feature's count right.
  ASSERT_EQ(env_.Zpool("export tank").rc, 0);
  std::string out;
  ASSERT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + env_.devdir() + " -bcc tank", &out), 0) << out;
  EXPECT_NE(out.find("No leaks"), std::string::npos) << out;
  EXPECT_EQ(out.find("mismatch"), std::string::npos) << out;
  ASSERT_EQ(env_.Zpool("import -d " + env_.devdir() + " tank").rc, 0);

  r = env_.Zfs("destroy -v tank/src#copy");
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env_.Zfs("destroy tank/src#mon").rc, 0);
  EXPECT_EQ(env_.Zfs("list -H -o name -t bookmark").out, "");
  EXPECT_EQ(env_.Zpool("get -H -o value feature@bookmarks tank").out, "enabled\n");
}

TEST_F(ZfsBookmarkFuse, BadBookmarksAreRefused) {
  UZFS_REQUIRE_FUSE();
  Ran r = env_.Zpool("create -o version=5000 -m " + root_ + " tank " + env_.Dev("d0", 256ull << 20));
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env_.Zfs("create tank/a").rc, 0);
  ASSERT_EQ(env_.Zfs("create tank/b").rc, 0);
  ASSERT_EQ(env_.Zfs("snapshot tank/a@s").rc, 0);
  ASSERT_EQ(env_.Zfs("bookmark tank/a@s tank/a#m").rc, 0);
  r = env_.Zfs("bookmark tank/a@s tank/a#m");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot create bookmark 'tank/a#m': bookmark exists\n");
  r = env_.Zfs("bookmark tank/a@s tank/b#m");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("same file system"), std::string::npos) << r.err;
  r = env_.Zfs("bookmark tank/a tank/a#x");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("neither a snapshot"), std::string::npos) << r.err;
  r = env_.Zfs("bookmark tank/a@s");
  EXPECT_EQ(r.rc, 2);
  r = env_.Zfs("destroy tank/a#nope");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot destroy 'tank/a#nope': bookmark does not exist\n");
  r = env_.Zfs("destroy -r tank/a#m");
  EXPECT_EQ(r.rc, 2);
  r = env_.Zfs("send -i tank/b#m tank/a@s > " + File("x.zs"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(env_.Zfs("list -H -o name -t bookmark").out, "tank/a#m\n") << "nothing changed";

  r = env_.Zpool("create -o version=28 -m " + root_ + "/old old " + env_.Dev("o0", 128ull << 20));
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env_.Zfs("snapshot old@s").rc, 0);
  r = env_.Zfs("bookmark old@s old#m");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("bookmark feature not enabled"), std::string::npos) << r.err;
  env_.Zpool("destroy -f old");
}

}  // namespace
}  // namespace uzfs::clitest
