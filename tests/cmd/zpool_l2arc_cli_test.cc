// Cache (L2ARC) devices through the real binaries: the l2arc tunables
// (uzfsd -o, zpool tunable), `zpool status` / `zpool iostat -v` rows of a
// cache device, arcstats' l2_* rows, zinject on a cache device, and a
// cache device missing at import shown UNAVAIL without failing the import.
// (Reads served by the cache device through a mount: zpl_l2arc_test and
// scripts/l2arc-bench.sh.)
#include <filesystem>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using namespace clitest;

bool Has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// The line of `text` that mentions `what`.
std::string LineOf(const std::string& text, const std::string& what) {
  for (const std::string& l : clitest::Lines(text)) {
    if (Has(l, what)) return l;
  }
  return "";
}

TEST(ZpoolL2ArcCli, CacheDeviceStatusTunablesAndFaults) {
  CliEnv env;
  Ran r = env.Run("uzfsd", "-o l2arc_write_max=16M");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("tunable -H l2arc_write_max");
  EXPECT_EQ(r.out.substr(0, 20), "l2arc_write_max\t16M\t") << r.out;
  ASSERT_EQ(env.Zpool("tunable l2arc_noprefetch=0").rc, 0);
  EXPECT_EQ(env.Zpool("tunable l2arc_feed_secs=0").rc, 1);  // below the minimum

  const std::string d0 = env.Dev("d0"), c0 = env.Dev("c0");
  r = env.Zpool("create -m none tank " + d0 + " cache " + c0);
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("status tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Has(LineOf(r.out, c0), "ONLINE")) << r.out;
  // iostat -v: the cache device's row has the L2ARC's alloc and free.
  r = env.Zpool("iostat -v tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string row = LineOf(r.out, c0);
  ASSERT_FALSE(row.empty()) << r.out;
  std::istringstream fields(row);
  std::string name, alloc, free;
  fields >> name >> alloc >> free;
  EXPECT_EQ(name, c0);
  EXPECT_NE(alloc, "-") << row;  // the L2ARC's bytes on it
  EXPECT_NE(free, "-") << row;
  r = env.Zpool("arcstats");
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const char* row2 : {"l2_hits", "l2_size", "l2_cksum_bad", "l2_io_error", "l2_rebuild_success"}) {
    EXPECT_TRUE(Has(r.out, std::string("\n") + row2 + " ")) << row2 << "\n" << r.out;
  }
  // zinject knows the cache device.
  r = env.Run("zinject", "-d " + c0 + " -e io tank");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env.Run("zinject", "-c all").rc, 0);

  // Missing at import: UNAVAIL, the pool imports.
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  std::filesystem::remove(c0);
  r = env.Zpool("import -d " + env.devdir() + " tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("status tank");
  EXPECT_TRUE(Has(LineOf(r.out, c0), "UNAVAIL")) << r.out;
  EXPECT_TRUE(Has(r.out, " state: ONLINE")) << r.out;
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  env.StopDaemon();
}

}  // namespace
}  // namespace uzfs
