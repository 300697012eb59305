// zinject's read-side faults seen through a FUSE mount: a file is
// written through the mount, the pool exported and imported again (so no
// cache holds its blocks), a fault injected into one leaf, and the file read
// back through the mount:
//  - io read errors on one side of a mirror: the file reads correctly and
//    `zpool status` counts READ errors on that leaf only;
//  - checksum corruption on one raidz leaf: the file reads correctly and
//    CKSUM errors are counted on that leaf only;
//  - latency on the only leaf: reading the file's start takes at least the
//    set latency.
//
// Needs /dev/fuse: skips without it unless UZFS_REQUIRE_FUSE=1 (CI).
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

using namespace clitest;

class ZinjectFuse : public MountingCliTest {
 protected:
  void SetUp() override {
    MountingCliTest::SetUp();
    const std::vector<uint8_t> bytes = test::RandomBytes(4 << 20, 7);
    data_.assign(bytes.begin(), bytes.end());
  }
  void TearDown() override {
    env_.Run("zinject", "-c all");
    MountingCliTest::TearDown();
  }
  // Creates tank over `vdevs` mounted at root_, writes the file, and
  // exports and imports the pool so that reading it goes to the leaves.
  void PoolWithFile(const std::string& vdevs) {
    ASSERT_NO_FATAL_FAILURE(CreateMountedPool(vdevs));
    {
      std::ofstream out(root_ + "/file", std::ios::binary);
      out.write(data_.data(), static_cast<std::streamsize>(data_.size()));
      ASSERT_TRUE(out.good());
    }
    Ran r = env_.Zpool("export tank");
    ASSERT_EQ(r.rc, 0) << r.err;
    r = env_.Zpool("import -d " + env_.devdir() + " tank");
    ASSERT_EQ(r.rc, 0) << r.err;
  }
  Ran Zinject(const std::string& args) { return env_.Run("zinject", args); }

  std::string data_;
};

TEST_F(ZinjectFuse, ReadErrorsOnOneMirrorSideAreCountedAndReadAround) {
  UZFS_REQUIRE_FUSE();
  const std::string a = env_.Dev("a"), b = env_.Dev("b");
  PoolWithFile("mirror " + a + " " + b);
  Ran r = Zinject("-d " + a + " -e io -T read tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  // The mirror reads each MiB region from one side, alternating: the file
  // spans several, so some of its reads go to a first and fail over to b.
  EXPECT_TRUE(test::ReadText(root_ + "/file") == data_);
  r = env_.Zpool("status tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::vector<long> ea = clitest::LeafErrors(r.out, a), eb = clitest::LeafErrors(r.out, b);
  ASSERT_EQ(ea.size(), 3u) << r.out;
  EXPECT_GT(ea[0], 0) << r.out;
  EXPECT_EQ(ea[1], 0) << r.out;
  EXPECT_EQ(eb, (std::vector<long>{0, 0, 0})) << r.out;
  EXPECT_NE(r.out.find("state: ONLINE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("No known data errors"), std::string::npos) << r.out;
}

TEST_F(ZinjectFuse, ChecksumCorruptionOnOneRaidzLeafIsCountedAndRepairedInFlight) {
  UZFS_REQUIRE_FUSE();
  const std::string a = env_.Dev("a"), b = env_.Dev("b"), c = env_.Dev("c");
  PoolWithFile("raidz " + a + " " + b + " " + c);
  Ran r = Zinject("-d " + b + " -e checksum tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(test::ReadText(root_ + "/file") == data_);
  r = env_.Zpool("status tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::vector<long> ea = clitest::LeafErrors(r.out, a), eb = clitest::LeafErrors(r.out, b), ec = clitest::LeafErrors(r.out, c);
  ASSERT_EQ(eb.size(), 3u) << r.out;
  EXPECT_EQ(eb[0], 0) << r.out;
  EXPECT_GT(eb[2], 0) << r.out;
  EXPECT_EQ(ea, (std::vector<long>{0, 0, 0})) << r.out;
  EXPECT_EQ(ec, (std::vector<long>{0, 0, 0})) << r.out;
  EXPECT_NE(r.out.find("No known data errors"), std::string::npos) << r.out;
}

TEST_F(ZinjectFuse, LatencyMakesAReadSlower) {
  UZFS_REQUIRE_FUSE();
  const std::string a = env_.Dev("a");
  PoolWithFile(a);
  constexpr int kDelayMs = 100;
  Ran r = Zinject("-d " + a + " -D " + std::to_string(kDelayMs) + ":1 tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  // The file's first bytes only: each I/O of the leaf now takes 100 ms.
  const auto t0 = std::chrono::steady_clock::now();
  std::string head(4096, '\0');
  {
    std::ifstream in(root_ + "/file", std::ios::binary);
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    EXPECT_TRUE(in.good());
  }
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_TRUE(head == data_.substr(0, head.size()));
  // At least one read reached the leaf; no upper bound (shared machines).
  EXPECT_GE(took, std::chrono::milliseconds(kDelayMs));
  ASSERT_EQ(Zinject("-c all").rc, 0);
}

}  // namespace
}  // namespace uzfs
