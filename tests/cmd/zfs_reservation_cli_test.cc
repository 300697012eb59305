// reservation and refreservation through zfs as a user runs it, against
// its own uzfsd (no zfs-fuse, no FUSE): the parent's USED and USEDCHILD
// hold a child's reservation, the siblings' AVAIL lose it; a value that
// does not fit is refused with zfs's message and exit 1 and changes
// nothing; the values and the counters are the same after the daemon is
// killed and after export/import.
// (The numbers against zfs-fuse: zfs_reservation_compat_test.cc.)
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using namespace clitest;

constexpr uint64_t kMiB = 1ull << 20;

struct Row {
  uint64_t used = 0, avail = 0, refer = 0, usedds = 0, usedchild = 0, usedrefreserv = 0;
};

std::map<std::string, Row> List(const CliEnv& env) {
  std::map<std::string, Row> out;
  const Ran r = env.Zfs("list -Hp -o name,used,avail,refer,usedbydataset,usedbychildren,usedbyrefreservation");
  EXPECT_EQ(r.rc, 0) << r.err;
  for (const std::string& l : Lines(r.out)) {
    const std::vector<std::string> f = Fields(l);
    if (f.size() != 7) {
      ADD_FAILURE() << l;
      continue;
    }
    auto n = [&](int i) { return std::strtoull(f[i].c_str(), nullptr, 10); };
    out[f[0]] = Row{n(1), n(2), n(3), n(4), n(5), n(6)};
  }
  return out;
}

TEST(ZfsReservationCli, CountedRefusedAndKept) {
  CliEnv env;
  const std::string dev = env.Dev("d0", 256 * kMiB);
  ASSERT_EQ(env.Zpool("create -o version=23 -m none tank " + dev).rc, 0);
  ASSERT_EQ(env.Zfs("create tank/a").rc, 0);
  ASSERT_EQ(env.Zfs("create tank/b").rc, 0);
  auto before = List(env);
  ASSERT_EQ(before.size(), 3u);
  const uint64_t usable = before["tank"].used + before["tank"].avail;

  ASSERT_EQ(env.Zfs("set reservation=50M tank/a").rc, 0);
  Ran r = env.Zfs("set refreservation=30M tank/b");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto m = List(env);
  const Row& a = m["tank/a"];
  const Row& b = m["tank/b"];
  // The parent's USED holds a's whole reservation and b's refreservation;
  // USEDCHILD says so; its USED + AVAIL stays the pool's usable space.
  EXPECT_GE(m["tank"].usedchild, 50 * kMiB + 30 * kMiB);
  EXPECT_LT(m["tank"].usedchild, 50 * kMiB + 30 * kMiB + 2 * kMiB);
  EXPECT_EQ(m["tank"].used, m["tank"].usedds + m["tank"].usedchild);
  EXPECT_EQ(m["tank"].used + m["tank"].avail, usable);
  // a's USED is its data; b's is its refreservation.
  EXPECT_EQ(a.used, a.refer);
  EXPECT_EQ(b.used, 30 * kMiB);
  EXPECT_EQ(b.usedrefreserv, 30 * kMiB - b.usedds);
  // AVAIL: each keeps its own, loses the other's.
  EXPECT_EQ(a.avail, m["tank"].avail + 50 * kMiB - a.used);
  EXPECT_EQ(b.avail, m["tank"].avail + b.usedrefreserv);
  EXPECT_LE(a.avail, usable);
  // What both hold unused is gone from the pool's AVAIL.
  EXPECT_GE(before["tank"].avail - m["tank"].avail, (50 * kMiB - a.used) + b.usedrefreserv);
  EXPECT_LT(before["tank"].avail - m["tank"].avail, (50 * kMiB - a.used) + b.usedrefreserv + kMiB);

  // Too large: zfs's message, exit 1, nothing changed.
  const std::string big = std::to_string(b.avail + b.used + 1);
  r = env.Zfs("set reservation=" + big + " tank/b");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot set property for 'tank/b': size is greater than available space\n");
  r = env.Zfs("set refreservation=" + big + " tank/b");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot set property for 'tank/b': size is greater than available space\n");
  r = env.Zfs("create -o reservation=" + big + " tank/c");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot create 'tank/c': out of space\n");
  EXPECT_EQ(env.Zfs("list tank/c").rc, 1);
  EXPECT_EQ(env.Zfs("get -Hp -o value reservation,refreservation tank/a tank/b").out,
            std::to_string(50 * kMiB) + "\n0\n0\n" + std::to_string(30 * kMiB) + "\n");
  auto after = List(env);
  for (const char* n : {"tank/a", "tank/b"}) {
    EXPECT_EQ(after[n].used, m[n].used) << n;
    EXPECT_EQ(after[n].usedrefreserv, m[n].usedrefreserv) << n;
  }
  EXPECT_LE(m["tank"].avail - after["tank"].avail, 256u * 1024) << "only the MOS may have grown";

  // The settings and what they count are on disk once `zfs set` returns:
  // the same after the daemon is killed (the next command starts another,
  // which imports the pool from its cache file) and after export/import.
  const pid_t pid = env.DaemonPid();
  ASSERT_TRUE(CliEnv::Alive(pid));
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  for (int i = 0; i < 3000 && CliEnv::Alive(pid); i++) ::usleep(1000);
  ASSERT_FALSE(CliEnv::Alive(pid));
  for (bool exported : {false, true}) {
    SCOPED_TRACE(exported ? "after export/import" : "after SIGKILL");
    if (exported) {
      ASSERT_EQ(env.Zpool("export tank").rc, 0);
      ASSERT_EQ(env.Zpool("import -d " + env.devdir() + " tank").rc, 0);
    }
    EXPECT_EQ(env.Zfs("get -Hp -o value reservation,refreservation tank/a tank/b").out,
              std::to_string(50 * kMiB) + "\n0\n0\n" + std::to_string(30 * kMiB) + "\n");
    auto again = List(env);
    EXPECT_EQ(again["tank/a"].used, m["tank/a"].used);
    EXPECT_EQ(again["tank/b"].used, 30 * kMiB);
    EXPECT_EQ(again["tank/a"].avail, again["tank"].avail + 50 * kMiB - again["tank/a"].used);
    EXPECT_EQ(again["tank/b"].avail, again["tank"].avail + again["tank/b"].usedrefreserv);
    EXPECT_EQ(again["tank"].used + again["tank"].avail, usable);
  }

  // none gives the space back.
  ASSERT_EQ(env.Zfs("set reservation=none tank/a").rc, 0);
  ASSERT_EQ(env.Zfs("set refreservation=none tank/b").rc, 0);
  auto none = List(env);
  EXPECT_EQ(none["tank/a"].avail, none["tank"].avail);
  EXPECT_EQ(none["tank/b"].used, none["tank/b"].refer);
  EXPECT_LT(none["tank"].usedchild, 2 * kMiB);
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
}

}  // namespace
}  // namespace uzfs
