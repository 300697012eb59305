// `zpool iostat -l -q -w -r` through the real binaries: the columns,
// headers and histogram rows laid out as OpenZFS prints them (the header
// lines below are OpenZFS's, character for character), the numbers
// consistent with each other (a leaf's requests in a mirror's sums, a
// request's total wait never below its disk wait), -H/-p forms a script
// can parse, and the flag combinations OpenZFS refuses refused the same way.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "tests/cmd/cli_test_util.h"

namespace uzfs {
namespace {

using namespace clitest;

std::string Devs(CliEnv& env, const std::string& prefix, int n, uint64_t size = 128ull << 20) {
  std::string s;
  for (int i = 0; i < n; i++) s += " " + env.Dev(prefix + std::to_string(i), size);
  return s;
}

// A mirror pool with datasets written by txgs, exported and imported
// again (reads), so reads and writes both have I/O to show.
void MakeBusyPool(CliEnv& env) {
  ASSERT_EQ(env.Zpool("create tank mirror" + Devs(env, "m", 2)).rc, 0);
  for (int i = 0; i < 4; i++) ASSERT_EQ(env.Zfs("create tank/fs" + std::to_string(i)).rc, 0);
  ASSERT_EQ(env.Zpool("export tank").rc, 0);
  ASSERT_EQ(env.Zpool("import -d " + env.devdir() + " tank").rc, 0);
  for (int i = 0; i < 4; i++) ASSERT_EQ(env.Zfs("snapshot tank/fs" + std::to_string(i) + "@s").rc, 0);
}

uint64_t U(const std::string& s) { return s == "-" ? 0 : std::stoull(s); }

TEST(ZpoolIostatCli, LatencyAndQueueColumns) {
  CliEnv env;
  MakeBusyPool(env);
  Ran r = env.Zpool("iostat -lq");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<std::string> l = Lines(r.out);
  ASSERT_EQ(l.size(), 4u) << r.out;
  EXPECT_EQ(l[0],
            "              capacity     operations     bandwidth    total_wait     disk_wait    syncq_wait    "
            "asyncq_wait  scrub   trim  rebuild   syncq_read    syncq_write   asyncq_read  asyncq_write   "
            "scrubq_read   trimq_write  rebuildq_write");
  EXPECT_EQ(l[1],
            "pool        alloc   free   read  write   read  write   read  write   read  write   read  write   "
            "read  write   wait   wait   wait   pend  activ   pend  activ   pend  activ   pend  activ   pend  "
            "activ   pend  activ   pend  activ");
  EXPECT_EQ(l[2], "----------" + [] {
    std::string d;
    for (int i = 0; i < 6 + 11 + 14; i++) d += "  -----";
    return d;
  }());
  // Times as OpenZFS shows them: a whole number and a unit, or "-".
  std::vector<std::string> cells;
  {
    std::istringstream in(l[3]);
    std::string c;
    while (in >> c) cells.push_back(c);
  }
  ASSERT_EQ(cells.size(), 1u + 6 + 11 + 14) << l[3];
  EXPECT_EQ(cells[0], "tank");
  const std::regex time("^(-|[0-9]+(ns|us|ms|s))$");
  for (size_t i = 7; i < 18; i++) EXPECT_TRUE(std::regex_match(cells[i], time)) << cells[i];
  EXPECT_NE(cells[8], "-") << l[3];   // total wait, writes
  EXPECT_NE(cells[7], "-") << l[3];   // total wait, reads (the import read)
  EXPECT_EQ(cells[15], "-") << l[3];  // trim: none
  EXPECT_EQ(cells[17], "-") << l[3];  // rebuild: none

  // -Hp: exact nanoseconds; a request's total wait includes its disk wait.
  r = env.Zpool("iostat -Hpvl tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  int rows = 0;
  std::vector<std::string> names;
  for (const std::string& line : Lines(r.out)) {
    const std::vector<std::string> f = Fields(line);
    ASSERT_EQ(f.size(), 1u + 6 + 11) << line;
    rows++;
    names.push_back(f[0]);
    if (f[0].find("/m") != std::string::npos) {
      EXPECT_EQ(f[1], "0") << line;  // -p: a leaf has no capacity of its own
    }
    EXPECT_GE(U(f[8]), U(f[10])) << line;  // writes: total >= disk
    EXPECT_GT(U(f[8]), 0u) << line;
  }
  EXPECT_EQ(rows, 4) << r.out;  // the pool, mirror-0, two leaves
  // -H: names as they are, not indented (OpenZFS's scripted form).
  EXPECT_EQ(names, (std::vector<std::string>{"tank", "mirror-0", env.devdir() + "/m0", env.devdir() + "/m1"}));

  // -q -Hp: queue depths, whole numbers (an idle pool: nothing queued).
  r = env.Zpool("iostat -Hpq tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::vector<std::string> q = Fields(Lines(r.out)[0]);
  ASSERT_EQ(q.size(), 1u + 6 + 14) << r.out;
  for (size_t i = 7; i < q.size(); i++) EXPECT_EQ(q[i], "0") << r.out;
}

TEST(ZpoolIostatCli, LatencyHistogram) {
  CliEnv env;
  MakeBusyPool(env);
  Ran r = env.Zpool("iostat -w tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<std::string> l = Lines(r.out);
  ASSERT_EQ(l.size(), 1u + 3 + 37 + 1) << r.out;
  EXPECT_EQ(l[0], "");
  EXPECT_EQ(l[1], "tank         total_wait     disk_wait    syncq_wait    asyncq_wait");
  EXPECT_EQ(l[2], "latency      read  write   read  write   read  write   read  write  scrub   trim  rebuild");
  const std::vector<std::string> labels = {
      "1ns",  "3ns",  "7ns",  "15ns", "31ns",  "63ns",  "127ns", "255ns", "511ns", "1us",
      "2us",  "4us",  "8us",  "16us", "32us",  "65us",  "131us", "262us", "524us", "1ms",
      "2ms",  "4ms",  "8ms",  "16ms", "33ms",  "67ms",  "134ms", "268ms", "536ms", "1s",
      "2s",   "4s",   "8s",   "17s",  "34s",   "68s",   "137s"};
  for (size_t j = 0; j < labels.size(); j++) EXPECT_EQ(l[4 + j].substr(0, labels[j].size() + 1), labels[j] + " ");
  EXPECT_EQ(l.back(), std::string(10 + 11 * 7, '-'));

  // -Hpv: a table per vdev; the leaves' counts add up to the mirror's.
  r = env.Zpool("iostat -Hpvw tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto pool = IostatTable(r.out, "tank"), mirror = IostatTable(r.out, "mirror-0");
  const auto leaf0 = IostatTable(r.out, env.devdir() + "/m0"), leaf1 = IostatTable(r.out, env.devdir() + "/m1");
  ASSERT_EQ(pool.size(), 37u) << r.out;
  ASSERT_EQ(leaf0.size(), 37u) << r.out;
  ASSERT_EQ(leaf1.size(), 37u) << r.out;
  ASSERT_EQ(mirror.size(), 37u) << r.out;
  uint64_t total_w = 0, disk_w = 0;
  for (size_t j = 0; j < 37; j++) {
    ASSERT_EQ(pool[j].size(), 12u);
    EXPECT_EQ(U(pool[j][0]), (uint64_t{2} << j) - 1);
    for (size_t k = 1; k < 12; k++) EXPECT_EQ(U(mirror[j][k]), U(leaf0[j][k]) + U(leaf1[j][k])) << j << " " << k;
    total_w += U(pool[j][2]);
    disk_w += U(pool[j][4]);
  }
  EXPECT_GT(total_w, 0u);
  EXPECT_EQ(total_w, disk_w);  // the same requests, each in both
}

TEST(ZpoolIostatCli, RequestSizeHistogram) {
  CliEnv env;
  MakeBusyPool(env);
  Ran r = env.Zpool("iostat -r tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<std::string> l = Lines(r.out);
  ASSERT_EQ(l.size(), 1u + 3 + 16 + 1) << r.out;
  EXPECT_EQ(l[1], "tank          sync_read    sync_write    async_read    async_write      scrub         trim         "
                  "rebuild  ");
  EXPECT_EQ(l[2], "req_size      ind    agg    ind    agg    ind    agg    ind    agg    ind    agg    ind    agg    "
                  "ind    agg");
  const std::vector<std::string> labels = {"512", "1K",   "2K",   "4K",   "8K", "16K", "32K", "64K",
                                           "128K", "256K", "512K", "1M", "2M", "4M",  "8M",  "16M"};
  for (size_t j = 0; j < labels.size(); j++) EXPECT_EQ(l[4 + j].substr(0, labels[j].size() + 1), labels[j] + " ");

  r = env.Zpool("iostat -Hpr tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto rows = IostatTable(r.out, "tank");
  ASSERT_EQ(rows.size(), 16u) << r.out;
  uint64_t async_writes = 0, sync_reads = 0, trims = 0;
  for (size_t j = 0; j < rows.size(); j++) {
    ASSERT_EQ(rows[j].size(), 15u);
    EXPECT_EQ(U(rows[j][0]), uint64_t{512} << j);
    sync_reads += U(rows[j][1]) + U(rows[j][2]);
    async_writes += U(rows[j][7]) + U(rows[j][8]);
    trims += U(rows[j][11]) + U(rows[j][12]);
  }
  EXPECT_GT(async_writes, 0u) << r.out;
  EXPECT_GT(sync_reads, 0u) << r.out;  // the import's reads
  EXPECT_EQ(trims, 0u);

  // A scrub's reads of the blocks it verifies count in the scrub columns;
  // its traversal's reads of metadata in the async read ones.
  auto scrub_and_async_reads = [&] {
    Ran s = env.Zpool("iostat -Hpr tank");
    uint64_t scrub = 0, async = 0;
    for (const auto& row : IostatTable(s.out, "tank")) {
      scrub += U(row[9]) + U(row[10]);
      async += U(row[5]) + U(row[6]);
    }
    return std::make_pair(scrub, async);
  };
  const auto before = scrub_and_async_reads();
  EXPECT_EQ(before.first, 0u);
  ASSERT_EQ(env.Zpool("scrub -w tank").rc, 0);
  const auto after = scrub_and_async_reads();
  EXPECT_GT(after.first, 0u);
  EXPECT_GT(after.second, before.second);
}

// An interval report counts what happened in the interval: an idle pool's
// second report has no latencies and no histogram counts.
TEST(ZpoolIostatCli, IntervalReportsCountTheInterval) {
  CliEnv env;
  MakeBusyPool(env);
  Ran r = env.Zpool("iostat -Hpl tank 1 2");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<std::string> l = Lines(r.out);
  ASSERT_EQ(l.size(), 2u) << r.out;
  EXPECT_NE(Fields(l[0])[8], "-") << r.out;
  const std::vector<std::string> second = Fields(l[1]);
  for (size_t i = 7; i < second.size(); i++) EXPECT_EQ(second[i], "-") << l[1];
  r = env.Zpool("iostat -y -T u -Hpw tank 1 1");
  ASSERT_EQ(r.rc, 0) << r.err;
  l = Lines(r.out);
  ASSERT_FALSE(l.empty());
  EXPECT_TRUE(std::regex_match(l[0], std::regex("^[0-9]{10,}$"))) << r.out;  // -T u: the epoch's seconds
  for (const auto& row : IostatTable(r.out, "tank")) {
    for (size_t k = 1; k < row.size(); k++) EXPECT_EQ(row[k], "0") << r.out;
  }
}

TEST(ZpoolIostatCli, RefusesWhatOpenZfsRefuses) {
  CliEnv env;
  ASSERT_EQ(env.Zpool("create tank" + Devs(env, "d", 1)).rc, 0);
  struct Case {
    const char* args;
    const char* first_line;
  } cases[] = {
      {"iostat -w -r", "Only one of [-r|-w] can be passed at a time"},
      {"iostat -w -l", "[-r|-w] isn't allowed with [-c|-l|-q]"},
      {"iostat -r -q tank", "[-r|-w] isn't allowed with [-c|-l|-q]"},
      {"iostat -T x", "invalid timestamp format 'x'"},
      {"iostat -Z", "invalid option 'Z'"},
      {"iostat -l tank 0", "interval cannot be zero"},
  };
  for (const Case& k : cases) {
    Ran r = env.Zpool(k.args);
    EXPECT_EQ(r.rc, 2) << k.args;
    EXPECT_EQ(Lines(r.err).at(0), k.first_line) << k.args << "\n" << r.err;
    EXPECT_EQ(r.out, "") << k.args;
  }
  EXPECT_EQ(env.Zpool("iostat -l nosuchpool").rc, 1);
}

}  // namespace
}  // namespace uzfs
