// The daemon's ARC through the real binaries: `uzfsd -o name=value` and
// UZFS_<NAME> size it, `zpool tunable` lists/shows/sets tunables (a set
// reaches the running ARC: c_max in `zpool arcstats` follows), `zpool
// arcstats [-j]` prints the kstat text or JSON, `zpool arcstats interval
// [count]` a row per interval, and bad input gets ZFS-style errors.
// In a memory cgroup the RAM-sized defaults follow the cgroup's limit.
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"
#include "zfs/util/cgroup_memory.h"

namespace uzfs {
namespace {

using namespace clitest;

// The value of row `name` in arcstats text ("name  4  value").
uint64_t Stat(const std::string& text, const std::string& name) {
  for (const std::string& l : clitest::Lines(text)) {
    if (l.rfind(name + " ", 0) == 0) return std::stoull(l.substr(l.find_last_of(' ') + 1));
  }
  ADD_FAILURE() << "no row " << name << " in\n" << text;
  return 0;
}

TEST(ZpoolArcCli, TunablesArcstatsAndReads) {
  CliEnv env;
  Ran r = env.Run("uzfsd", "-o arc_max=200M -o zfetch_max_distance=8M");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("tunable arc_max zfetch_max_distance");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto lines = clitest::Lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0].substr(0, 4), "NAME");
  EXPECT_NE(lines[1].find("200M"), std::string::npos) << r.out;
  EXPECT_NE(lines[2].find("8M"), std::string::npos) << r.out;
  r = env.Zpool("tunable -H arc_max");
  EXPECT_EQ(r.out.substr(0, 13), "arc_max\t200M\t") << r.out;

  r = env.Zpool("arcstats");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(clitest::Lines(r.out)[1].substr(0, 4), "name") << r.out;
  EXPECT_EQ(Stat(r.out, "c_max"), 200ull << 20);

  // Set at run time: the ARC follows at once.
  r = env.Zpool("tunable arc_max=100M");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "");
  r = env.Zpool("arcstats -j");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["output_version"]["command"], "zpool arcstats");
  EXPECT_EQ(j["arcstats"]["c_max"].get<uint64_t>(), 100ull << 20);
  EXPECT_EQ(j["arcstats"]["size"].get<uint64_t>(), Stat(env.Zpool("arcstats").out, "size"));
  r = env.Zpool("tunable -j arc_max");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["tunables"]["arc_max"]["value"], "100M");

  // Bad input.
  r = env.Zpool("tunable arc_max=1K");  // below the minimum
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("cannot set tunable 'arc_max'"), std::string::npos) << r.err;
  r = env.Zpool("tunable nope");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("cannot get tunable 'nope': no such tunable"), std::string::npos) << r.err;
  r = env.Zpool("tunable zfetch_disable=maybe");
  EXPECT_EQ(r.rc, 1);
  r = env.Zpool("arcstats -x");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("arcstats [-j]"), std::string::npos) << r.err;

  // Pools made by the daemon get its ARC: an export drops their buffers
  // (what a mounted file system reads is covered by zpl_arc_test and the
  // fio runs of docs/PERFORMANCE.md).
  const std::string d = env.Dev("d0");
  ASSERT_EQ(env.Zpool("create -m none tank " + d).rc, 0);
  ASSERT_EQ(env.Zfs("create tank/a").rc, 0);
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  EXPECT_EQ(Stat(env.Zpool("arcstats").out, "size"), 0u);
  env.StopDaemon();
}

// The rolling view: a header and COUNT rows, the first counting every
// read since the daemon started (a pool's blocks read through the ARC),
// later ones only their own interval's; -Hp: tab-separated exact numbers
// that add up; bad intervals, counts and combinations refused.
TEST(ZpoolArcCli, RollingRowsPerInterval) {
  CliEnv env;
  const std::string d = env.Dev("d0");
  ASSERT_EQ(env.Zpool("create -m none tank " + d).rc, 0);
  ASSERT_EQ(env.Zfs("create tank/a").rc, 0);
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  ASSERT_EQ(env.Zpool("import -d " + env.devdir() + " tank").rc, 0);  // its metadata read again
  Ran r = env.Zpool("arcstats 1 2");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<std::string> lines = clitest::Lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_NE(lines[0].find("time    read    hits    miss  hit%   arcsz       c  l2read"), std::string::npos) << r.out;

  r = env.Zpool("arcstats -Hp 1 2");
  ASSERT_EQ(r.rc, 0) << r.err;
  lines = clitest::Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  std::vector<std::vector<std::string>> rows;
  for (const std::string& l : lines) {
    std::vector<std::string> f;
    std::istringstream in(l);
    std::string x;
    while (std::getline(in, x, '\t')) f.push_back(x);
    ASSERT_EQ(f.size(), 11u) << l;
    rows.push_back(f);
  }
  const uint64_t read = std::stoull(rows[0][1]), hits = std::stoull(rows[0][2]), miss = std::stoull(rows[0][3]);
  EXPECT_GT(read, 0u) << r.out;  // the import read the pool's metadata
  EXPECT_EQ(read, hits + miss);
  EXPECT_EQ(rows[0][4], std::to_string(hits * 100 / read));
  // The second row counts only its own second (an idle pool reads little
  // or nothing; never the first row's total again).
  const uint64_t read2 = std::stoull(rows[1][1]);
  EXPECT_LT(read2, read) << r.out;
  EXPECT_EQ(read2, std::stoull(rows[1][2]) + std::stoull(rows[1][3]));
  EXPECT_EQ(rows[1][4], read2 == 0 ? std::string("-") : std::to_string(std::stoull(rows[1][2]) * 100 / read2));
  EXPECT_GT(std::stoull(rows[0][6]), 0u);  // c
  EXPECT_EQ(rows[0][6], rows[1][6]);

  for (const char* bad : {"arcstats 0", "arcstats x", "arcstats 1 0", "arcstats 1 2 3", "arcstats -j 1", "arcstats -H",
                          "arcstats -p"}) {
    r = env.Zpool(bad);
    EXPECT_EQ(r.rc, 2) << bad;
    EXPECT_NE(r.err.find("arcstats [-Hp] interval [count]"), std::string::npos) << bad << ": " << r.err;
    EXPECT_EQ(clitest::Lines(r.err).size(), 4u) << bad << ": " << r.err;  // one line, then the usage
  }
  env.Zpool("destroy tank");
  env.StopDaemon();
}

TEST(ZpoolArcCli, BadDaemonOptionsAndEnvironment) {
  CliEnv env;
  Ran r = env.Run("uzfsd", "-o arc_max=lots");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("bad tunable"), std::string::npos) << r.err;
  r = env.Run("uzfsd", "-o nosuch=1");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("nosuch"), std::string::npos) << r.err;
  r = env.Run("uzfsd", "-o arc_max");
  EXPECT_EQ(r.rc, 2);
  r = env.Run("uzfsd", "-o help");
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("arc_max"), std::string::npos);
  EXPECT_NE(r.out.find("zfetch_max_distance"), std::string::npos);
  // UZFS_<NAME> reaches the daemon the client starts.
  const std::string errfile = (env.tmp() / "err").string();
  r = clitest::RunShell("UZFS_RUNDIR=" + env.rundir() + " UZFS_ARC_MAX=150M " + clitest::Bin("zpool") +
                            " tunable -H arc_max 2>" + errfile,
                        errfile);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, 13), "arc_max\t150M\t") << r.out;
  env.StopDaemon();
}

// The txg engine's and the synced-block cache's rows: listed with their
// defaults, refused out of range, and `-o` values shown back.
TEST(ZpoolArcCli, TxgAndDbufTunables) {
  CliEnv env;
  Ran r = env.Run("uzfsd", "-o dirty_data_sync_percent=0");
  EXPECT_EQ(r.rc, 1) << r.out;
  r = env.Run("uzfsd", "-o dirty_data_max=512M -o txg_timeout=2 -o dbuf_cache_max=64M");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env.Zpool("tunable -H dirty_data_max dirty_data_sync_percent delay_min_dirty_percent txg_timeout dbuf_cache_max");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto lines = clitest::Lines(r.out);
  ASSERT_EQ(lines.size(), 5u) << r.out;
  EXPECT_EQ(lines[0].substr(0, 20), "dirty_data_max\t512M\t") << r.out;
  EXPECT_EQ(lines[1].substr(0, 27), "dirty_data_sync_percent\t20\t") << r.out;
  EXPECT_EQ(lines[2].substr(0, 27), "delay_min_dirty_percent\t60\t") << r.out;
  EXPECT_EQ(lines[3].substr(0, 14), "txg_timeout\t2\t") << r.out;
  EXPECT_EQ(lines[4].substr(0, 19), "dbuf_cache_max\t64M\t") << r.out;
  env.StopDaemon();
}

// In a cgroup with a 1 GiB memory limit (a container's), the defaults
// sized from RAM follow the limit, not the host: arc_max is half of it and
// the synced-block cache 1/32. Needs root to make the cgroup.
TEST(ZpoolArcCli, DefaultsFollowTheCgroupMemoryLimit) {
  if (geteuid() != 0) GTEST_SKIP() << "making a cgroup needs root";
  const std::vector<uint8_t> self = test::ReadFile("/proc/self/cgroup");
  const std::vector<uint8_t> mi = test::ReadFile("/proc/self/mountinfo");
  std::string limit_file;
  std::filesystem::path cg;
  for (const std::string& d : CgroupMemoryDirs(std::string(self.begin(), self.end()), std::string(mi.begin(), mi.end()))) {
    for (const char* f : {"memory.max", "memory.limit_in_bytes"}) {
      if (limit_file.empty() && std::filesystem::exists(std::filesystem::path(d) / f)) {
        limit_file = f;
        cg = std::filesystem::path(d) / ("uzfs-test-" + std::to_string(getpid()));
      }
    }
  }
  ASSERT_FALSE(limit_file.empty()) << "no memory cgroup hierarchy found";
  std::error_code ec;
  ASSERT_TRUE(std::filesystem::create_directory(cg, ec)) << cg << ": " << ec.message();
  { std::ofstream(cg / limit_file) << (1ull << 30) << "\n"; }
  CliEnv env;
  const std::string errfile = (env.tmp() / "cg.err").string();
  Ran r = clitest::RunShell("echo $$ > " + (cg / "cgroup.procs").string() + " && exec env UZFS_RUNDIR=" + env.rundir() +
                                " " + clitest::Bin("zpool") + " tunable -H arc_max dbuf_cache_max 2>" + errfile,
                            errfile);
  env.StopDaemon();
  for (int i = 0; i < 50 && !std::filesystem::remove(cg, ec); i++) usleep(100000);  // empty once the daemon is gone
  EXPECT_FALSE(std::filesystem::exists(cg)) << "cgroup left behind: " << cg;
  ASSERT_EQ(r.rc, 0) << r.err;
  auto lines = clitest::Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_EQ(lines[0].substr(0, 13), "arc_max\t512M\t") << r.out;
  EXPECT_EQ(lines[1].substr(0, 19), "dbuf_cache_max\t32M\t") << r.out;
}

}  // namespace
}  // namespace uzfs
