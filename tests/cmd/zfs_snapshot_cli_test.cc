// zfs snapshot and the snapshot rows of zfs list/get through the daemon:
// one or several names (and -r) in one go, ZFS's listing order and
// columns, snapshot properties, and every bad input refused with one line
// and exit 1 (2 for usage) with nothing taken.
#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"

namespace uzfs::clitest {
namespace {

class ZfsSnapshotCli : public ::testing::Test {
 protected:
  void SetUp() override {
    Ran r = env_.Zpool("create -m none tank " + env_.Dev("d0"));
    ASSERT_EQ(r.rc, 0) << r.err;
    ASSERT_EQ(env_.Zfs("create tank/fs").rc, 0);
    ASSERT_EQ(env_.Zfs("create tank/fs/kid").rc, 0);
  }
  void TearDown() override {
    env_.Zpool("destroy -f tank");
    env_.StopDaemon();
  }
  std::string Names(const std::string& args) { return env_.Zfs("list -H -o name " + args).out; }
  CliEnv env_;
};

TEST_F(ZfsSnapshotCli, TakesListsAndShowsSnapshots) {
  Ran r = env_.Zfs("snapshot tank/fs@one");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "");
  r = env_.Zfs("snap -r tank@two");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env_.Zfs("snapshot tank/fs@three tank/fs/kid@three");
  ASSERT_EQ(r.rc, 0) << r.err;
  // Plain list: file systems only.
  EXPECT_EQ(Names(""), "tank\ntank/fs\ntank/fs/kid\n");
  // Each file system, its snapshots oldest first, then the ones below.
  EXPECT_EQ(Names("-t all"),
            "tank\ntank@two\ntank/fs\ntank/fs@one\ntank/fs@two\ntank/fs@three\n"
            "tank/fs/kid\ntank/fs/kid@two\ntank/fs/kid@three\n");
  EXPECT_EQ(Names("-t snapshot"),
            "tank@two\ntank/fs@one\ntank/fs@two\ntank/fs@three\ntank/fs/kid@two\ntank/fs/kid@three\n");
  EXPECT_EQ(Names("-t snapshot tank/fs"), "tank/fs@one\ntank/fs@two\ntank/fs@three\n");
  EXPECT_EQ(Names("-r -t snap tank/fs/kid"), "tank/fs/kid@two\ntank/fs/kid@three\n");
  EXPECT_EQ(Names("tank/fs@two"), "tank/fs@two\n");
  EXPECT_EQ(Names("-d 1 -t all tank/fs"), "tank/fs\ntank/fs@one\ntank/fs@two\ntank/fs@three\ntank/fs/kid\n");
  // Columns: no AVAIL or MOUNTPOINT for a snapshot.
  r = env_.Zfs("list -H -o name,avail,mountpoint,type tank/fs@one");
  EXPECT_EQ(r.out, "tank/fs@one\t-\t-\tsnapshot\n");
  r = env_.Zfs("get -H -o property,value type,used,defer_destroy,userrefs,mountpoint tank/fs@one");
  EXPECT_EQ(r.out, "type\tsnapshot\nused\t0B\ndefer_destroy\toff\nuserrefs\t0\nmountpoint\t-\n");
  // The snapshot refers to what its file system did then.
  const std::string fs_refer = env_.Zfs("get -Hp -o value referenced tank/fs").out;
  EXPECT_EQ(env_.Zfs("get -Hp -o value referenced tank/fs@three").out, fs_refer);
  EXPECT_EQ(env_.Zfs("get -Hp -o value createtxg tank/fs@two").out,
            env_.Zfs("get -Hp -o value createtxg tank/fs/kid@two").out)
      << "-r takes them in one txg";
  // get all of a snapshot: its properties only.
  r = env_.Zfs("get -H -o property all tank/fs@one");
  EXPECT_TRUE(Contains(r.out, "type\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "referenced\n")) << r.out;
  EXPECT_FALSE(Contains(r.out, "mountpoint\n")) << r.out;
  EXPECT_FALSE(Contains(r.out, "quota\n")) << r.out;
  r = env_.Zfs("list -j tank/fs@one");
  EXPECT_TRUE(Contains(r.out, "\"type\": \"SNAPSHOT\"")) << r.out;
  // The history has the command.
  EXPECT_TRUE(Contains(env_.Zpool("history tank").out, "zfs snapshot tank/fs@one")) << env_.Zpool("history tank").out;
}

TEST_F(ZfsSnapshotCli, BadInputIsRefusedAndTakesNothing) {
  ASSERT_EQ(env_.Zfs("snapshot tank/fs@one").rc, 0);
  struct Case {
    std::string args;
    int rc;
    std::string err;
  };
  const Case cases[] = {
      {"snapshot tank/fs@one", 1, "cannot create snapshot 'tank/fs@one': dataset already exists\n"},
      {"snapshot tank@new tank/fs@one", 1, "cannot create snapshot 'tank/fs@one': dataset already exists\n"},
      {"snapshot tank/fs@new tank/fs@two", 1,
       "cannot create snapshot 'tank/fs@two': multiple snapshots of the same file system are not allowed in one "
       "command\n"},
      {"snapshot tank/nope@x", 1, "cannot open 'tank/nope': dataset does not exist\n"},
      {"snapshot nopool/fs@x", 1, "cannot open 'nopool/fs': dataset does not exist\n"},
      {"snapshot -r tank/nope@x", 1, "cannot open 'tank/nope': dataset does not exist\n"},
      {"snapshot tank/fs", 1, "cannot snapshot 'tank/fs': missing '@' delimiter in snapshot name\n"},
      {"snapshot tank/fs@", 1, "cannot snapshot 'tank/fs@': empty component in name\n"},
      {"snapshot 'tank/fs@a*b'", 1, "cannot snapshot 'tank/fs@a*b': invalid character '*' in name\n"},
      {"snapshot -r tank/fs@one", 1, "cannot create snapshot 'tank/fs@one': dataset already exists\n"},
  };
  for (const Case& c : cases) {
    Ran r = env_.Zfs(c.args);
    EXPECT_EQ(r.rc, c.rc) << c.args;
    EXPECT_EQ(r.err, c.err) << c.args;
  }
  Ran r = env_.Zfs("snapshot");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "missing snapshot argument")) << r.err;
  r = env_.Zfs("snapshot -x tank/fs@y");
  EXPECT_EQ(r.rc, 2);
  r = env_.Zfs("list -t bogus");
  EXPECT_EQ(r.rc, 2);
  r = env_.Zfs("snapshot -o compression=off tank/fs@three");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot create snapshot 'tank/fs@three': this property can not be modified for snapshots\n");
  r = env_.Zfs("snapshot -o com.x:y tank/fs@three");
  EXPECT_EQ(r.rc, 2);
  r = env_.Zfs("list tank/fs@nope");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'tank/fs@nope': dataset does not exist\n");
  EXPECT_EQ(Names("-t snapshot"), "tank/fs@one\n") << "nothing else was taken";
  // Its snapshot keeps the file system without -r: destroy names it.
  ASSERT_EQ(env_.Zfs("snapshot tank/fs/kid@k").rc, 0);
  r = env_.Zfs("destroy tank/fs/kid");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot destroy 'tank/fs/kid': filesystem has children\n"
                   "use '-r' to destroy the following datasets:\ntank/fs/kid@k\n");
  EXPECT_EQ(Names("-r tank/fs"), "tank/fs\ntank/fs/kid\n");
}

// User properties on snapshots, as ZFS has them: set with zfs snapshot -o
// or zfs set, local to the snapshot, inherited from its file system when
// not set, listed by zfs get and zfs list, removed by zfs inherit; native
// properties are refused and change nothing.
TEST_F(ZfsSnapshotCli, UserPropertiesOfSnapshots) {
  ASSERT_EQ(env_.Zfs("snapshot tank/fs@one").rc, 0);
  Ran r = env_.Zfs("snapshot -o com.x:note=hello -o com.x:n=2 tank/fs@two");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env_.Zfs("set com.x:y=1 tank/fs@one");
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env_.Zfs("set com.x:inh=parent tank/fs").rc, 0);
  EXPECT_EQ(env_.Zfs("get -H -o name,property,value,source com.x:note,com.x:n tank/fs@two").out,
            "tank/fs@two\tcom.x:note\thello\tlocal\ntank/fs@two\tcom.x:n\t2\tlocal\n");
  EXPECT_EQ(env_.Zfs("get -H -o value,source com.x:inh tank/fs@one").out, "parent\tinherited from tank/fs\n");
  EXPECT_EQ(env_.Zfs("get -H -o value,source com.x:y tank/fs").out, "-\t-\n") << "the file system's own";
  EXPECT_EQ(env_.Zfs("list -H -o name,com.x:note,com.x:y -t snapshot tank/fs").out,
            "tank/fs@one\t-\t1\ntank/fs@two\thello\t-\n");
  r = env_.Zfs("get -H -o property,value all tank/fs@two");
  EXPECT_TRUE(Contains(r.out, "com.x:note\thello\n")) << r.out;
  // Natives are refused; nothing changes.
  r = env_.Zfs("set compression=off tank/fs@one");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot set property for 'tank/fs@one': this property can not be modified for snapshots\n");
  r = env_.Zfs("set com.x:y=2 tank/fs@nope");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'tank/fs@nope': dataset does not exist\n");
  EXPECT_EQ(env_.Zfs("get -H -o value,source compression tank/fs").out, "off\tdefault\n");
  // Several at once: all or none.
  r = env_.Zfs("set com.x:a=1 compression=off tank/fs@one");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(env_.Zfs("get -H -o value com.x:a tank/fs@one").out, "-\n") << "nothing set";
  ASSERT_EQ(env_.Zfs("set com.x:a=1 com.x:b=2 tank/fs@one").rc, 0);
  EXPECT_EQ(env_.Zfs("get -H -o value com.x:a,com.x:b tank/fs@one").out, "1\n2\n");
  r = env_.Zfs("inherit compression tank/fs@one");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot inherit compression for 'tank/fs@one': property does not apply to datasets of this type\n");
  r = env_.Zfs("snapshot -o com.x:a=1 -o com.x:a=2 tank/fs@three");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("property 'com.x:a' specified multiple times"), std::string::npos) << r.err;
  // Inherit removes the snapshot's own value.
  ASSERT_EQ(env_.Zfs("inherit com.x:note tank/fs@two").rc, 0);
  EXPECT_EQ(env_.Zfs("get -H -o value,source com.x:note tank/fs@two").out, "-\t-\n");
  EXPECT_EQ(env_.Zfs("get -H -o value com.x:n tank/fs@two").out, "2\n");
  // A snapshot's properties go with it through a rename.
  ASSERT_EQ(env_.Zfs("rename tank/fs@two tank/fs@renamed").rc, 0);
  EXPECT_EQ(env_.Zfs("get -H -o value com.x:n tank/fs@renamed").out, "2\n");
}

TEST_F(ZfsSnapshotCli, DestroysByNameListRangeAndRecursively) {
  for (const char* s : {"a", "b", "c", "d", "e"}) ASSERT_EQ(env_.Zfs(std::string("snapshot tank/fs@") + s).rc, 0);
  ASSERT_EQ(env_.Zfs("snapshot tank/fs/kid@a").rc, 0);
  ASSERT_EQ(env_.Zfs("snapshot tank/fs/kid@c").rc, 0);
  Ran r = env_.Zfs("destroy -nv tank/fs@b");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "would destroy tank/fs@b\nwould reclaim 0B\n");
  r = env_.Zfs("destroy -np tank/fs@b%d");
  EXPECT_EQ(r.out, "destroy\ttank/fs@b\ndestroy\ttank/fs@c\ndestroy\ttank/fs@d\nreclaim\t0\n");
  EXPECT_EQ(Names("-t snapshot tank/fs"), "tank/fs@a\ntank/fs@b\ntank/fs@c\ntank/fs@d\ntank/fs@e\n") << "-n destroys nothing";
  r = env_.Zfs("destroy tank/fs@b,d");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Names("-t snapshot tank/fs"), "tank/fs@a\ntank/fs@c\ntank/fs@e\n");
  r = env_.Zfs("destroy -r tank/fs@c");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Names("-t snapshot -r tank/fs"), "tank/fs@a\ntank/fs@e\ntank/fs/kid@a\n");
  r = env_.Zfs("destroy -v tank/fs@%a");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "will destroy tank/fs@a\nwill reclaim 0B\n");
  // Names that do not exist destroy nothing.
  r = env_.Zfs("destroy tank/fs@nope");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'tank/fs@nope': dataset does not exist\n");
  r = env_.Zfs("destroy -r tank/fs@zzz");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot destroy 'tank/fs@zzz': dataset does not exist\nno snapshots destroyed\n");
  r = env_.Zfs("destroy tank/fs@e,nope");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(Names("-t snapshot -r tank/fs"), "tank/fs@e\ntank/fs/kid@a\n");
  // -r on a file system takes its snapshots and its children's with it.
  r = env_.Zfs("destroy -nv -r tank/fs");
  EXPECT_EQ(r.out, "would destroy tank/fs@e\nwould destroy tank/fs/kid@a\nwould destroy tank/fs/kid\nwould destroy tank/fs\n");
  r = env_.Zfs("destroy -r tank/fs");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Names("-t all"), "tank\n");
  EXPECT_TRUE(Contains(env_.Zpool("history tank").out, "zfs destroy tank/fs@b,d")) << env_.Zpool("history tank").out;
}

}  // namespace
}  // namespace uzfs::clitest
