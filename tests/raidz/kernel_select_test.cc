// UZFS_RAIDZ_IMPL picks the kernel at first use (its own process, so no
// other test has triggered the selection yet).
#include <cstdlib>

#include <gtest/gtest.h>

#include "raidz/parity.h"
#include "zfs/util/cpu.h"

namespace uzfs::raidz {
namespace {

TEST(KernelSelectTest, EnvironmentOverridesTheSelfBenchmark) {
  const char* want = cpu::HasSsse3() ? "ssse3" : "scalar";
  ASSERT_EQ(setenv("UZFS_RAIDZ_IMPL", want, 1), 0);
  EXPECT_STREQ(ActiveKernel().name, want);
  // The measurements are still there for every supported kernel.
  for (const KernelStats& s : KernelReport()) {
    EXPECT_EQ(s.active, s.name == want) << s.name;
    if (s.supported) {
      EXPECT_GT(s.gen_gbps, 0) << s.name;
    }
  }
}

}  // namespace
}  // namespace uzfs::raidz
