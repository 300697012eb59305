// zfs clone, zfs hold/release/holds and zfs rename of snapshots through the
// daemon: the origin and clones properties, a snapshot with clones or
// holds refusing destroy with ZFS's words, the holds table, short and
// recursive snapshot renames, and bad input refused with one line and
// exit 1 (2 for usage) with nothing changed.
#include <gtest/gtest.h>

#include <regex>

#include "tests/cmd/cli_test_util.h"

namespace uzfs::clitest {
namespace {

class ZfsCloneCli : public ::testing::Test {
 protected:
  void SetUp() override {
    Ran r = env_.Zpool("create -m none tank " + env_.Dev("d0"));
    ASSERT_EQ(r.rc, 0) << r.err;
    ASSERT_EQ(env_.Zfs("create tank/fs").rc, 0);
    ASSERT_EQ(env_.Zfs("create tank/fs/kid").rc, 0);
    ASSERT_EQ(env_.Zfs("snapshot -r tank/fs@s").rc, 0);
  }
  void TearDown() override {
    env_.Zpool("destroy -f tank");
    env_.StopDaemon();
  }
  std::string Names(const std::string& args) { return env_.Zfs("list -H -o name " + args).out; }
  CliEnv env_;
};

TEST_F(ZfsCloneCli, ClonesShowTheirOriginAndKeepIt) {
  Ran r = env_.Zfs("clone -o com.uzfs:note=hi tank/fs@s tank/c");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "");
  r = env_.Zfs("clone -p tank/fs/kid@s tank/deep/er/c2");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Names(""), "tank\ntank/c\ntank/deep\ntank/deep/er\ntank/deep/er/c2\ntank/fs\ntank/fs/kid\n");
  EXPECT_EQ(env_.Zfs("get -H -o value origin tank/c").out, "tank/fs@s\n");
  EXPECT_EQ(env_.Zfs("get -H -o value origin tank/fs").out, "-\n");
  EXPECT_EQ(env_.Zfs("get -H -o value com.uzfs:note tank/c").out, "hi\n");
  EXPECT_EQ(env_.Zfs("list -H -o name,origin tank/deep/er/c2").out, "tank/deep/er/c2\ttank/fs/kid@s\n");
  EXPECT_EQ(env_.Zfs("get -H -o value clones,numclones tank/fs@s").out, "tank/c\n1\n");
  EXPECT_EQ(env_.Zfs("get -Hp -o value used tank/c").out, "0\n") << "a new clone costs nothing";

  r = env_.Zfs("destroy tank/fs@s");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot destroy 'tank/fs@s': snapshot has dependent clones\n"
                   "use '-R' to destroy the following datasets:\ntank/c\n");
  ASSERT_EQ(env_.Zfs("destroy tank/c").rc, 0);
  EXPECT_EQ(env_.Zfs("get -H -o value clones tank/fs@s").out, "-\n") << "none left";
  ASSERT_EQ(env_.Zfs("destroy tank/fs@s").rc, 0);
  EXPECT_TRUE(Contains(env_.Zpool("history tank").out, "zfs clone -o com.uzfs:note=hi tank/fs@s tank/c"));
}

TEST_F(ZfsCloneCli, DestroyCapitalRTakesTheClonesAlong) {
  // A chain: tank/c of fs@s, tank/c@cs, tank/c2 of it; tank/k of kid@s.
  ASSERT_EQ(env_.Zfs("clone tank/fs@s tank/c").rc, 0);
  ASSERT_EQ(env_.Zfs("snapshot tank/c@cs").rc, 0);
  ASSERT_EQ(env_.Zfs("clone tank/c@cs tank/c2").rc, 0);
  ASSERT_EQ(env_.Zfs("clone tank/fs/kid@s tank/k").rc, 0);
  const std::string everything =
      "tank\ntank/c\ntank/c@cs\ntank/c2\ntank/fs\ntank/fs@s\ntank/fs/kid\ntank/fs/kid@s\ntank/k\n";
  // A held snapshot among those -R would destroy stops it before anything goes.
  ASSERT_EQ(env_.Zfs("hold keep tank/c@cs").rc, 0);
  Ran r = env_.Zfs("destroy -R tank/fs@s");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot destroy snapshot tank/c@cs: dataset is busy\n");
  EXPECT_EQ(Names("-t all"), everything);
  ASSERT_EQ(env_.Zfs("release keep tank/c@cs").rc, 0);
  r = env_.Zfs("destroy -r tank/fs");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot destroy 'tank/fs': filesystem has dependent clones\n"
                   "use '-R' to destroy the following datasets:\ntank/c\ntank/c2\ntank/k\n");
  r = env_.Zfs("rollback -r tank/fs@s");
  EXPECT_EQ(r.rc, 0) << "nothing newer: " << r.err;
  EXPECT_EQ(Names("-t all"), everything) << "nothing destroyed";
  // -R on a snapshot: the same snapshot below too, and all their clones.
  r = env_.Zfs("destroy -Rnv tank/fs@s");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "would destroy tank/c2\nwould destroy tank/c\nwould destroy tank/k\nwould destroy tank/fs@s\n"
                   "would destroy tank/fs/kid@s\n");
  EXPECT_EQ(Names("-t all"), everything) << "a dry run";
  r = env_.Zfs("destroy -Rv tank/fs/kid@s");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "will destroy tank/k\nwill destroy tank/fs/kid@s\nwill reclaim 0B\n");
  // Rollback -R takes the clones of the newer snapshots.
  ASSERT_EQ(env_.Zfs("snapshot tank/fs/kid@t").rc, 0);
  ASSERT_EQ(env_.Zfs("snapshot tank/fs/kid@u").rc, 0);
  ASSERT_EQ(env_.Zfs("clone tank/fs/kid@u tank/k2").rc, 0);
  r = env_.Zfs("rollback -r tank/fs/kid@t");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot rollback to 'tank/fs/kid@t': clones of previous snapshots exist\n"
                   "use '-R' to force deletion of the following clones and dependents:\ntank/k2\n");
  r = env_.Zfs("rollback -R tank/fs/kid@t");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Names("-t all"), "tank\ntank/c\ntank/c@cs\ntank/c2\ntank/fs\ntank/fs@s\ntank/fs/kid\ntank/fs/kid@t\n");
  // A clone inside the tree goes with it under -r; -R takes the rest.
  ASSERT_EQ(env_.Zfs("clone tank/fs/kid@t tank/fs/inner").rc, 0);
  r = env_.Zfs("destroy -r tank/fs/kid");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "filesystem has dependent clones")) << "tank/fs/inner is outside tank/fs/kid";
  ASSERT_EQ(env_.Zfs("destroy tank/c2").rc, 0);
  ASSERT_EQ(env_.Zfs("destroy -r tank/c").rc, 0);
  r = env_.Zfs("destroy -r tank/fs");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Names("-t all"), "tank\n");
}

TEST_F(ZfsCloneCli, PromoteTurnsTheOriginRound) {
  ASSERT_EQ(env_.Zfs("clone tank/fs@s tank/c").rc, 0);
  Ran r = env_.Zfs("promote tank/fs");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot promote 'tank/fs': not a cloned filesystem\n");
  EXPECT_EQ(env_.Zfs("promote").rc, 2);
  r = env_.Zfs("promote tank/c");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env_.Zfs("list -H -o name,origin -t all tank/c tank/fs").out, "tank/c\t-\ntank/fs\ttank/c@s\n");
  EXPECT_EQ(Names("-t snapshot"), "tank/c@s\ntank/fs/kid@s\n");
  r = env_.Zfs("destroy tank/c@s");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot destroy 'tank/c@s': snapshot has dependent clones\n"
                   "use '-R' to destroy the following datasets:\ntank/fs\n");
  ASSERT_EQ(env_.Zfs("promote tank/fs").rc, 0);
  EXPECT_EQ(env_.Zfs("get -H -o value origin tank/c").out, "tank/fs@s\n");
  EXPECT_TRUE(Contains(env_.Zpool("history tank").out, "zfs promote tank/fs"));
}

TEST_F(ZfsCloneCli, WrittenAtASnapshot) {
  // Nothing written since: 0; the short and the full names agree.
  EXPECT_EQ(env_.Zfs("get -Hp -o value written@s tank/fs").out, "0\n");
  EXPECT_EQ(env_.Zfs("get -Hp -o value written@tank/fs@s tank/fs").out, "0\n");
  EXPECT_EQ(env_.Zfs("list -H -o name,written@s tank/fs tank/fs/kid").out, "tank/fs\t0B\ntank/fs/kid\t0B\n");
  Ran r = env_.Zfs("get -H -o property,value,source written@nope tank/fs");
  EXPECT_EQ(r.out, "written@nope\t-\t-\n") << r.err;
  r = env_.Zfs("list -o name,written@s tank/fs");
  EXPECT_EQ(r.out, "NAME     WRITTEN@S\ntank/fs         0B\n");
}

TEST_F(ZfsCloneCli, HoldsKeepSnapshotsUntilReleased) {
  Ran r = env_.Zfs("hold -r keep tank/fs@s");
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env_.Zfs("hold backup tank/fs@s").rc, 0);
  EXPECT_EQ(env_.Zfs("get -H -o value userrefs tank/fs@s").out, "2\n");
  r = env_.Zfs("holds tank/fs@s tank/fs/kid@s");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::regex table(
      "NAME           TAG     TIMESTAMP\n"
      "tank/fs@s      backup  \\w{3} \\w{3} [ 0-9]\\d \\d\\d:\\d\\d \\d{4}\n"
      "tank/fs@s      keep    \\w{3} \\w{3} [ 0-9]\\d \\d\\d:\\d\\d \\d{4}\n"
      "tank/fs/kid@s  keep    \\w{3} \\w{3} [ 0-9]\\d \\d\\d:\\d\\d \\d{4}\n");
  EXPECT_TRUE(std::regex_match(r.out, table)) << r.out;
  r = env_.Zfs("holds -rHp tank/fs@s");
  EXPECT_TRUE(std::regex_match(r.out, std::regex("tank/fs@s\tbackup\t\\d+\ntank/fs@s\tkeep\t\\d+\n"
                                                 "tank/fs/kid@s\tkeep\t\\d+\n")))
      << r.out;

  r = env_.Zfs("destroy tank/fs/kid@s");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot destroy snapshot tank/fs/kid@s: dataset is busy\n");
  r = env_.Zfs("hold keep tank/fs@s");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot hold snapshot 'tank/fs@s': tag already exists on this dataset\n");
  r = env_.Zfs("release nope tank/fs@s");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot release hold from snapshot 'tank/fs@s': no such tag on this dataset\n");
  r = env_.Zfs("hold keep tank/fs");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "'tank/fs' is not a snapshot\n");
  EXPECT_EQ(env_.Zfs("hold keep").rc, 2);
  ASSERT_EQ(env_.Zfs("release -r keep tank/fs@s").rc, 0);
  ASSERT_EQ(env_.Zfs("destroy tank/fs/kid@s").rc, 0);
  ASSERT_EQ(env_.Zfs("release backup tank/fs@s").rc, 0);
  EXPECT_EQ(env_.Zfs("holds tank/fs@s").out, "NAME       TAG  TIMESTAMP\n") << "no hold left";
  ASSERT_EQ(env_.Zfs("destroy tank/fs@s").rc, 0);
}

// zfs destroy -d: a held snapshot and a cloned one are marked
// (defer_destroy on) and go with the last release and the clone's destroy;
// a free one in the same command goes at once; -nv counts what goes now.
TEST_F(ZfsCloneCli, DeferredDestroyWaitsForHoldsAndClones) {
  ASSERT_EQ(env_.Zfs("snapshot tank/fs@free").rc, 0);
  ASSERT_EQ(env_.Zfs("hold keep tank/fs@s").rc, 0);
  ASSERT_EQ(env_.Zfs("clone tank/fs/kid@s tank/c").rc, 0);
  Ran r = env_.Zfs("destroy -dnv tank/fs@s,free");
  ASSERT_EQ(r.rc, 0) << r.err;
  // What it would reclaim is what @free alone frees: @s is only marked.
  const std::string free_alone = env_.Zfs("destroy -nvp tank/fs@free").out;
  EXPECT_EQ(env_.Zfs("destroy -dnvp tank/fs@s,free").out, "destroy\ttank/fs@s\n" + free_alone);
  EXPECT_TRUE(r.out.starts_with("would destroy tank/fs@s\nwould destroy tank/fs@free\nwould reclaim ")) << r.out;
  EXPECT_EQ(Names("-t snapshot tank/fs"), "tank/fs@s\ntank/fs@free\n") << "-n destroys nothing";
  r = env_.Zfs("destroy -d tank/fs@s,free");
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env_.Zfs("destroy -d tank/fs/kid@s").rc, 0);
  EXPECT_EQ(Names("-t snapshot -r tank/fs"), "tank/fs@s\ntank/fs/kid@s\n");
  EXPECT_EQ(env_.Zfs("get -H -o name,value defer_destroy tank/fs@s tank/fs/kid@s").out,
            "tank/fs@s\ton\ntank/fs/kid@s\ton\n");
  r = env_.Zfs("destroy tank/fs@s");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot destroy snapshot tank/fs@s: dataset is busy\n");
  ASSERT_EQ(env_.Zfs("release keep tank/fs@s").rc, 0);
  ASSERT_EQ(env_.Zfs("destroy tank/c").rc, 0);
  EXPECT_EQ(Names("-t snapshot -r tank/fs"), "") << "both went when nothing kept them";
  r = env_.Zfs("destroy -d tank/fs@nope");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'tank/fs@nope': dataset does not exist\n");
  // -Rd: the clones go now, the held snapshot is marked.
  ASSERT_EQ(env_.Zfs("snapshot tank/fs@t").rc, 0);
  ASSERT_EQ(env_.Zfs("hold keep tank/fs@t").rc, 0);
  ASSERT_EQ(env_.Zfs("clone tank/fs@t tank/ct").rc, 0);
  r = env_.Zfs("destroy -Rd tank/fs@t");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Names("tank/ct"), "");
  EXPECT_EQ(env_.Zfs("get -H -o value defer_destroy tank/fs@t").out, "on\n");
  ASSERT_EQ(env_.Zfs("release keep tank/fs@t").rc, 0);
  EXPECT_EQ(Names("-t snapshot tank/fs"), "");
}

TEST_F(ZfsCloneCli, SnapshotRenames) {
  Ran r = env_.Zfs("rename tank/fs@s tank/fs@t");
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env_.Zfs("rename tank/fs@t u").rc, 0) << "the short form";
  ASSERT_EQ(env_.Zfs("rename tank/fs@u @v").rc, 0);
  EXPECT_EQ(Names("-t snapshot"), "tank/fs@v\ntank/fs/kid@s\n");
  ASSERT_EQ(env_.Zfs("snapshot tank/fs@s").rc, 0);
  ASSERT_EQ(env_.Zfs("rename -r tank/fs@s tank/fs@w").rc, 0);
  EXPECT_EQ(Names("-t snapshot"), "tank/fs@v\ntank/fs@w\ntank/fs/kid@w\n");

  r = env_.Zfs("rename tank/fs@w tank/fs/kid@x");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot rename to 'tank/fs/kid@x': snapshots must be part of same dataset\n");
  r = env_.Zfs("rename tank/fs@w tank/fs@v");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot rename to 'tank/fs@v': dataset already exists\n");
  r = env_.Zfs("rename tank/fs@nope tank/fs@x");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'tank/fs@nope': dataset does not exist\n");
  r = env_.Zfs("rename -r tank/fs tank/other");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "source dataset for recursive rename must be a snapshot")) << r.err;
  EXPECT_EQ(Names("-t snapshot"), "tank/fs@v\ntank/fs@w\ntank/fs/kid@w\n");
}

TEST_F(ZfsCloneCli, BadClonesAreRefused) {
  struct Case {
    std::string args;
    int rc;
    std::string err;
  };
  const Case cases[] = {
      {"clone tank/fs@nope tank/c", 1, "cannot open 'tank/fs@nope': dataset does not exist\n"},
      {"clone tank/fs tank/c", 1, "cannot open 'tank/fs': missing '@' delimiter in snapshot name\n"},
      {"clone tank/fs@s tank/fs/kid", 1, "cannot create 'tank/fs/kid': dataset already exists\n"},
      {"clone tank/fs@s tank/no/c", 1, "cannot create 'tank/no/c': parent does not exist\n"},
      {"clone tank/fs@s other/c", 1, "cannot create 'other/c': no such pool 'other'\n"},
      {"clone -o compression=bogus tank/fs@s tank/c", 1, ""},
      {"clone tank/fs@s", 2, ""},
      {"clone -x tank/fs@s tank/c", 2, ""},
  };
  for (const Case& k : cases) {
    Ran r = env_.Zfs(k.args);
    EXPECT_EQ(r.rc, k.rc) << k.args << ": " << r.err;
    if (!k.err.empty()) {
      EXPECT_EQ(r.err, k.err) << k.args;
    }
    if (k.rc == 1) {
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << k.args << ": " << r.err;
    }
  }
  EXPECT_EQ(Names(""), "tank\ntank/fs\ntank/fs/kid\n");
  EXPECT_EQ(env_.Zfs("get -H -o value numclones tank/fs@s").out, "0\n");
}

}  // namespace
}  // namespace uzfs::clitest
