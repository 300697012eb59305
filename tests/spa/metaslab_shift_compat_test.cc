// metaslab_shift judged by zfs-fuse: for pools on files of several sizes,
// MetaslabShift(asize, kLegacy) must equal the metaslab_shift zfs-fuse put
// in the label, and asize >> shift the number of metaslabs zdb -m lists.
// Fails (never skips) without root or zfs-fuse, like every compat test.
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"
#include "zfs/spa/allocator.h"
#include "zfs/spa/metaslab.h"

namespace uzfs {
namespace {

TEST(MetaslabShiftCompat, MatchesZfsFuseForSeveralSizes) {
  test::TempDir dir;
  const std::string d = dir.path().string();
  std::string script = "set -e\n";
  for (const char* size : {"64M", "128M", "1G", "3G", "10G"}) {
    const std::string f = d + "/f" + size, p = std::string("ms") + size;
    script += "truncate -s " + std::string(size) + " " + f + "\n" +
              "zpool create -o version=23 " + p + " " + f + " 2>/dev/null\n" +
              "zpool export " + p + "\n" +
              "echo \"POOL " + size + " $(zdb -l " + f +
              " | sed -n 's/^ *metaslab_shift: //p;s/^ *asize: //p' | head -2 | tr '\\n' ' ')"
              "$(zdb -e -p " + d + " -m " + p + " | grep -c '^\\s*metaslab ')\"\n";
  }
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox(script, &out), 0) << out;
  const std::regex re(R"(POOL (\S+) (\d+) (\d+) (\d+))");
  int seen = 0;
  for (std::sregex_iterator it(out.begin(), out.end(), re), end; it != end; ++it) {
    const auto& m = *it;
    const uint32_t shift = static_cast<uint32_t>(std::stoul(m[2]));
    const uint64_t asize = std::stoull(m[3]);
    const uint64_t count = std::stoull(m[4]);
    SCOPED_TRACE(m[1].str());
    EXPECT_EQ(MetaslabShift(asize, MetaslabShiftRule::kLegacy), shift);
    EXPECT_EQ(MetaslabCount(asize, shift), count);
    // The allocator built for this vdev has the same geometry.
    TopVdevSpace v;
    v.asize = asize;
    v.ashift = 12;
    auto a = Allocator::Create({v}, {.shift_rule = MetaslabShiftRule::kLegacy});
    ASSERT_TRUE(a.ok());
    EXPECT_EQ((*a)->VdevStats()[0].metaslab_count, count);
    seen++;
  }
  EXPECT_EQ(seen, 5) << out;
}

}  // namespace
}  // namespace uzfs
