// zpool scrub / wait / events / clear through the real binaries, without
// FUSE: a mirror side damaged behind the daemon's back is found and
// repaired by `zpool scrub -w`, `zpool status` says so in OpenZFS's words
// and counts the checksum errors on that side only, `zpool events` lists
// the scrubs, `zpool clear` zeroes the counters, and bad requests get
// ZFS's messages and exit codes with nothing changed.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using namespace clitest;

// Overwrites [offset, offset + len) of a device file with a pattern.
void Scribble(const std::string& dev, uint64_t offset, uint64_t len) {
  std::fstream f(dev, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f.good());
  f.seekp(static_cast<std::streamoff>(offset));
  const std::string junk(len, '\x5a');
  f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
}

TEST(ZpoolScrubCli, RepairsADamagedSideAndSaysSo) {
  CliEnv env;
  const std::string a = env.Dev("a"), b = env.Dev("b");
  Ran r = env.Zpool("create -m none tank mirror " + a + " " + b);
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("status tank");
  EXPECT_TRUE(Contains(r.out, "  scan: none requested\n")) << r.out;
  // The first 8 MiB of side a's allocatable space (the MOS's first blocks).
  Scribble(a, 4ull << 20, 8ull << 20);
  r = env.Zpool("scrub -w tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(r.out.empty() && r.err.empty()) << r.out << r.err;
  r = env.Zpool("status tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "  scan: scrub repaired ")) << r.out;
  EXPECT_FALSE(Contains(r.out, "scrub repaired 0B")) << r.out;
  EXPECT_TRUE(Contains(r.out, " with 0 errors on ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "errors: No known data errors")) << r.out;
  const auto ca = LeafErrors(r.out, a), cb = LeafErrors(r.out, b);
  ASSERT_EQ(ca.size(), 3u) << r.out;
  ASSERT_EQ(cb.size(), 3u) << r.out;
  EXPECT_GT(ca[2], 0) << r.out;
  EXPECT_EQ(cb[2], 0) << r.out;
  // A second scrub finds nothing left to repair.
  r = env.Zpool("scrub -w tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("status tank");
  EXPECT_TRUE(Contains(r.out, "scrub repaired 0B in ")) << r.out;
  r = env.Zpool("status -j tank");
  EXPECT_TRUE(Contains(r.out, "\"function\":\"SCRUB\"") || Contains(r.out, "\"function\": \"SCRUB\"")) << r.out;
  r = env.Zpool("history tank");
  EXPECT_TRUE(Contains(r.out, "zpool scrub -w tank")) << r.out;
  // The events of both scrubs, oldest first, with their payload under -v.
  r = env.Zpool("events tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Lines(r.out).at(0), "TIME                           CLASS") << r.out;
  const size_t start = r.out.find("sysevent.fs.zfs.scrub_start"), finish = r.out.find("sysevent.fs.zfs.scrub_finish");
  EXPECT_NE(start, std::string::npos) << r.out;
  EXPECT_NE(finish, std::string::npos) << r.out;
  EXPECT_LT(start, finish) << r.out;
  r = env.Zpool("events -v tank");
  EXPECT_TRUE(Contains(r.out, "        pool = \"tank\"\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "        class = \"sysevent.fs.zfs.scrub_finish\"\n")) << r.out;
  r = env.Zpool("events -H tank");
  EXPECT_FALSE(Contains(r.out, "TIME")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\tsysevent.fs.zfs.scrub_start\n")) << r.out;
  // -f follows until the client leaves; the daemon carries on.
  r = env.Run("zpool", "events -f tank & sleep 1; kill $!");
  r = env.Zpool("status tank");
  EXPECT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("events -c tank");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "cleared ")) << r.out;
  r = env.Zpool("events -H tank");
  EXPECT_EQ(r.out, "") << r.out;
  // zpool clear: the counters start again from zero.
  r = env.Zpool("clear tank " + a);
  EXPECT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("status tank");
  EXPECT_EQ(LeafErrors(r.out, a), (std::vector<long>{0, 0, 0})) << r.out;
  r = env.Zpool("events -H tank");
  EXPECT_TRUE(Contains(r.out, "sysevent.fs.zfs.vdev_clear")) << r.out;
  r = env.Zpool("export tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("import -d " + env.devdir() + " tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("status tank");
  EXPECT_TRUE(Contains(r.out, "scrub repaired 0B in ")) << "the last scrub survives the export\n" << r.out;
  env.Zpool("destroy -f tank");
}

TEST(ZpoolScrubCli, BadRequests) {
  CliEnv env;
  const std::string a = env.Dev("a");
  Ran r = env.Zpool("create -m none tank " + a);
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("scrub");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "missing pool name argument")) << r.err;
  EXPECT_TRUE(Contains(r.err, "scrub [-s | -p] [-w] <pool> ...")) << r.err;
  r = env.Zpool("scrub -s -p tank");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "-s and -p are mutually exclusive")) << r.err;
  r = env.Zpool("scrub -x tank");
  EXPECT_EQ(r.rc, 2);
  r = env.Zpool("scrub nosuch");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'nosuch': no such pool\n");
  r = env.Zpool("scrub -s tank");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot cancel scrubbing tank: there is no active scrub\n");
  r = env.Zpool("scrub -p tank");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot pause scrubbing tank: there is no active scrub\n");
  r = env.Zpool("wait -t bogus tank");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "invalid activity 'bogus'")) << r.err;
  r = env.Zpool("wait -t scrub,resilver tank");
  EXPECT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("wait nosuch");
  EXPECT_EQ(r.rc, 1);
  r = env.Zpool("clear");
  EXPECT_EQ(r.rc, 2);
  r = env.Zpool("clear tank /no/such/disk");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot clear errors for /no/such/disk: no such device in pool\n");
  r = env.Zpool("clear nosuch");
  EXPECT_EQ(r.rc, 1);
  r = env.Zpool("events -c -v tank");
  EXPECT_EQ(r.rc, 2);
  r = env.Zpool("events nosuch");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'nosuch': no such pool\n");
  // Nothing of this changed the pool: no scan was ever recorded.
  r = env.Zpool("status tank");
  EXPECT_TRUE(Contains(r.out, "  scan: none requested\n")) << r.out;
  env.Zpool("destroy -f tank");
}

}  // namespace
}  // namespace uzfs
