// zinject through the real binaries, without FUSE: listing,
// adding and clearing handlers, the messages and exit codes of bad input,
// injected write errors on one side of a mirror (the pool keeps working,
// `zpool status` counts WRITE errors on that leaf only), a vanished (nxio)
// side leaving the pool DEGRADED with that leaf UNAVAIL, latency slowing a
// txg sync, and handlers ending with their pool's export. The read-side
// faults (io, checksum) through a mount: zinject_fuse_test.cc. Pool import
// and export delays (-P), overlapping under `zpool import -a`.
#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using namespace clitest;

class ZinjectCli : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = env_.Dev("a");
    b_ = env_.Dev("b");
    Ran r = env_.Zpool("create tank mirror " + a_ + " " + b_);
    ASSERT_EQ(r.rc, 0) << r.err;
  }
  void TearDown() override {
    env_.Zpool("destroy -f tank");
    env_.StopDaemon();
  }
  Ran Zinject(const std::string& args) { return env_.Run("zinject", args); }

  CliEnv env_;
  std::string a_, b_;
};

TEST_F(ZinjectCli, ListAddAndClearHandlers) {
  Ran r = Zinject("");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "No handlers registered.\n");

  r = Zinject("-d " + a_ + " -e io -T read -f 50 tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("Added handler 1"), std::string::npos) << r.out;
  // By file name too.
  r = Zinject("-d b -D 5:2 tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("Added handler 2"), std::string::npos) << r.out;

  r = Zinject("");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<std::string> lines = clitest::Lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0].substr(0, 16), "ID  POOL  DEVICE") << r.out;
  EXPECT_NE(lines[0].find("TYPE"), std::string::npos);
  EXPECT_NE(lines[1].find(" 1  tank  " + a_), std::string::npos) << r.out;
  EXPECT_NE(lines[1].find(" io "), std::string::npos) << r.out;
  EXPECT_NE(lines[1].find(" read "), std::string::npos) << r.out;
  EXPECT_NE(lines[1].find(" 50 "), std::string::npos) << r.out;
  EXPECT_NE(lines[2].find(" 2  tank  " + b_), std::string::npos) << r.out;
  EXPECT_NE(lines[2].find(" delay "), std::string::npos) << r.out;

  r = Zinject("-c 1");
  EXPECT_EQ(r.rc, 0) << r.err;
  r = Zinject("");
  lines = clitest::Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_NE(lines[1].find(" 2  tank  " + b_), std::string::npos) << r.out;

  r = Zinject("-c 1");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("no such handler 1"), std::string::npos) << r.err;
  r = Zinject("-c all");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Zinject("").out, "No handlers registered.\n");
}

TEST_F(ZinjectCli, BadInputSaysWhatIsWrong) {
  struct Case {
    std::string args;
    int rc;
    std::string msg;
  };
  const std::vector<Case> cases = {
      {"-d a -e io nosuchpool", 1, "cannot open 'nosuchpool': no such pool"},
      {"-d nosuchdev -e io tank", 1, "cannot find device 'nosuchdev' in pool 'tank'"},
      {"-d a -e bogus tank", 2, "invalid error type 'bogus'"},
      {"-d a -e io -T sideways tank", 2, "invalid I/O type 'sideways'"},
      {"-d a -e io -f 0 tank", 2, "invalid frequency '0'"},
      {"-d a -e io -f 101 tank", 2, "invalid frequency '101'"},
      {"-d a -e checksum -T write tank", 2, "only be injected into reads"},
      {"-d a -D 5 tank", 2, "invalid latency '5'"},
      {"-d a -D x:1 tank", 2, "invalid latency 'x:1'"},
      {"-d a -D 5:0 tank", 2, "invalid latency '5:0'"},
      {"-d a -D 5:1 -e io tank", 2, "cannot be combined"},
      {"-d a tank", 2, "missing -e or -D"},
      {"-d a -e io", 2, "missing pool name"},
      {"-e io tank", 2, "missing -d device"},
      {"-c", 2, ""},
      {"-c seven", 2, "invalid handler id 'seven'"},
      {"-Q", 2, ""},
  };
  for (const Case& c : cases) {
    Ran r = Zinject(c.args);
    EXPECT_EQ(r.rc, c.rc) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.msg), std::string::npos) << c.args << ": " << r.err;
    if (c.rc == 2) {
      EXPECT_NE(r.err.find("usage:"), std::string::npos) << c.args << ": " << r.err;
    }
    EXPECT_TRUE(r.out.empty()) << c.args << ": " << r.out;
  }
  EXPECT_EQ(Zinject("").out, "No handlers registered.\n");
}

TEST_F(ZinjectCli, WriteErrorsOnOneMirrorSideAreCountedThere) {
  Ran r = Zinject("-d " + a_ + " -e io -T write tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env_.Zfs("create tank/fs");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env_.Zpool("status tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::vector<long> ea = clitest::LeafErrors(r.out, a_);
  const std::vector<long> eb = clitest::LeafErrors(r.out, b_);
  ASSERT_EQ(ea.size(), 3u) << r.out;
  ASSERT_EQ(eb.size(), 3u) << r.out;
  EXPECT_GT(ea[1], 0) << r.out;  // WRITE
  EXPECT_EQ(eb, (std::vector<long>{0, 0, 0})) << r.out;
  // The pool serves on: a side that fails every write may already be
  // faulted for its errors (ten within ten minutes) by the txgs and the
  // resilver those writes started, but b is untouched.
  const bool online = r.out.find("state: ONLINE") != std::string::npos;
  const bool a_faulted = r.out.find("state: DEGRADED") != std::string::npos &&
                         clitest::LeafState(r.out, a_) == "FAULTED";
  EXPECT_TRUE(online || a_faulted) << r.out;
  EXPECT_EQ(clitest::LeafState(r.out, b_), "ONLINE") << r.out;

  // Cleared, the pool writes to both sides again; the dataset survives an
  // export and import, and the handlers do not.
  // (Not read errors on b: a missed the writes above, so b holds the only
  // good copy of those blocks.)
  ASSERT_EQ(Zinject("-d " + b_ + " -D 1:4 tank").rc, 0);
  ASSERT_EQ(Zinject("-c 1").rc, 0);
  r = env_.Zpool("export tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Zinject("").out, "No handlers registered.\n");
  r = env_.Zpool("import -d " + env_.devdir() + " tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env_.Zfs("list -H -o name tank/fs").out, "tank/fs\n");
  EXPECT_EQ(Zinject("").out, "No handlers registered.\n");
  // The re-imported pool is injectable again.
  EXPECT_EQ(Zinject("-d a -e io tank").rc, 0);
  EXPECT_EQ(Zinject("-c all").rc, 0);
}

TEST_F(ZinjectCli, AVanishedMirrorSideLeavesThePoolDegraded) {
  Ran r = Zinject("-d a -e nxio tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("vanished"), std::string::npos) << r.out;
  r = env_.Zfs("create tank/fs");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env_.Zpool("status tank");
  EXPECT_NE(r.out.find("state: DEGRADED"), std::string::npos) << r.out;
  bool a_unavail = false;
  for (const std::string& line : clitest::Lines(r.out)) {
    if (line.find(a_) != std::string::npos && line.find("UNAVAIL") != std::string::npos) a_unavail = true;
  }
  EXPECT_TRUE(a_unavail) << r.out;
  EXPECT_EQ(clitest::LeafErrors(r.out, b_), (std::vector<long>{0, 0, 0})) << r.out;
  EXPECT_EQ(env_.Zfs("list -H -o name tank/fs").out, "tank/fs\n");
}

TEST_F(ZinjectCli, LatencySlowsTheLeafsIo) {
  constexpr int kDelayMs = 10;
  ASSERT_EQ(Zinject("-d " + b_ + " -D " + std::to_string(kDelayMs) + ":1 tank").rc, 0);
  const auto t0 = std::chrono::steady_clock::now();
  Ran r = env_.Zfs("create tank/slow");  // waits for a txg sync, which writes to b
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_GE(took, std::chrono::milliseconds(kDelayMs));
  ASSERT_EQ(Zinject("-c all").rc, 0);
  EXPECT_EQ(env_.Zfs("create tank/fast").rc, 0);
}

}  // namespace
}  // namespace uzfs

namespace uzfs {
namespace {

using namespace clitest;

// zinject -P: delays of the next import or export of a pool, used up by
// it; `zpool import -a` opens its pools in parallel, so two pools' import
// delays overlap instead of adding up.
TEST(ZinjectPoolDelay, ImportDelaysOverlapUnderImportAllAndExportDelaysHold) {
  CliEnv env;
  for (const char* p : {"p1", "p2"}) ASSERT_EQ(env.Zpool(std::string("create -m none ") + p + " " + env.Dev(p)).rc, 0);
  Ran r = env.Run("zinject", "-P import -s 3 p1");
  EXPECT_EQ(r.rc, 1);  // p1 is imported
  EXPECT_EQ(r.err, "cannot inject an import delay: pool 'p1' is already imported\n");
  ASSERT_EQ(env.Zpool("export p1 p2").rc, 0);
  r = env.Run("zinject", "-P import -s 5 p1");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "Added handler 1: import delay of 5 s, pool p1\n");
  ASSERT_EQ(env.Run("zinject", "-P import -s 5 p2").rc, 0);
  r = env.Run("zinject", "");
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_NE(lines[1].find(" 1  p1 "), std::string::npos) << r.out;
  EXPECT_NE(lines[1].find(" import "), std::string::npos) << r.out;
  EXPECT_NE(lines[1].find(" 5000 "), std::string::npos) << r.out;

  auto t0 = std::chrono::steady_clock::now();
  r = env.Zpool("import -a -d " + env.devdir());
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.rc, 0) << r.err;
  // Serially they would take 10 s and more.
  EXPECT_GE(took, 5.0);
  EXPECT_LT(took, 9.5) << "the two 5 s import delays did not overlap";
  EXPECT_EQ(env.Run("zinject", "").out, "No handlers registered.\n");  // used up
  EXPECT_EQ(env.Zpool("list -H -o name").out, "p1\np2\n");

  r = env.Run("zinject", "-P export -s 2 p2");
  ASSERT_EQ(r.rc, 0) << r.err;
  t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(env.Zpool("export p2").rc, 0);
  EXPECT_GE(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  EXPECT_EQ(env.Run("zinject", "").out, "No handlers registered.\n");
  // Cleared before use: the import is not slowed down.
  ASSERT_EQ(env.Run("zinject", "-P import -s 30 p2").rc, 0);
  ASSERT_EQ(env.Run("zinject", "-c all").rc, 0);
  t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(env.Zpool("import -d " + env.devdir() + " p2").rc, 0);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20.0);
}

TEST(ZinjectPoolDelay, BadInputIsAUsageError) {
  CliEnv env;
  ASSERT_EQ(env.Zpool("create -m none p1 " + env.Dev("p1")).rc, 0);
  for (const char* args : {"-P import p1", "-P scrub -s 1 p1", "-P export -s 0 p1", "-P export -s x p1",
                           "-P export -s 3601 p1", "-P export -s 1", "-P export -s 1 -d a p1", "-s 1 p1"}) {
    Ran r = env.Run("zinject", args);
    EXPECT_EQ(r.rc, 2) << args;
    EXPECT_NE(r.err.find("usage:"), std::string::npos) << args << ": " << r.err;
  }
  Ran r = env.Run("zinject", "-P export -s 1 nosuch");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'nosuch': no such pool\n");
  EXPECT_EQ(env.Run("zinject", "").out, "No handlers registered.\n");
}

}  // namespace
}  // namespace uzfs
