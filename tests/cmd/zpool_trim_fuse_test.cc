// zpool trim through the real commands, on pools of sparse files and of
// NBD exports, with data written through the mount:
//  - the space a deleted file held goes back to the files under the pool
//    (their allocated blocks shrink), `zpool status -t` says each leaf was
//    trimmed, and every block left reads back and scrubs clean after an
//    export and import;
//  - on nbdkit file exports the discards reach the server (NBD TRIM): the
//    files behind the exports shrink;
//  - -c cancels a trim under way (slowed down with -r), `zpool wait -t trim`
//    returns once nothing is trimmed;
//  - a daemon killed in the middle of a trim leaves a pool that imports,
//    reads back everything and scrubs clean;
//  - with autotrim=on a deleted file's space goes back by itself;
//  - bad pools, devices and flags are refused in one line.
//
// Needs /dev/fuse: skips without it unless UZFS_REQUIRE_FUSE=1 (CI).
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/cmd/cli_test_util.h"
#include "tests/testutil/nbdkit_server.h"
#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

using namespace clitest;

// Bytes the file system gives the files (st_blocks), summed.
uint64_t AllocatedBytes(const std::vector<std::string>& files) {
  uint64_t sum = 0;
  for (const std::string& f : files) {
    struct stat st;
    if (::stat(f.c_str(), &st) == 0) sum += static_cast<uint64_t>(st.st_blocks) * 512;
  }
  return sum;
}

void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

class ZpoolTrimFuse : public MountingCliTest {
 protected:
  // A raidz2 of six sparse files with `keep` (4 MiB) and a 48 MiB file
  // written, then the big file deleted and its space released (a few
  // txgs, past the deferral of frees).
  void FillAndFree(const std::string& vdevs) {
    CreateMountedPool(vdevs);
    keep_ = test::RandomBytes(4u << 20, 11);
    WriteBytes(root_ + "/keep", keep_);
    WriteBytes(root_ + "/big", test::RandomBytes(48u << 20, 12));
    ASSERT_EQ(env_.Zpool("sync tank").rc, 0);
    ASSERT_EQ(::unlink((root_ + "/big").c_str()), 0);
    for (int i = 0; i < 4; i++) ASSERT_EQ(env_.Zpool("sync tank").rc, 0);
  }
  // The pool reads `keep` back after an export and import, and scrubs clean.
  void ExpectIntact() {
    ASSERT_EQ(env_.Zpool("export tank").rc, 0);
    Ran r = env_.Zpool("import -d " + env_.devdir() + " tank");
    ASSERT_EQ(r.rc, 0) << r.err;
    ASSERT_TRUE(Mounted("")) << "tank is not mounted again";
    EXPECT_TRUE(test::ReadText(root_ + "/keep") == std::string(keep_.begin(), keep_.end()));
    ASSERT_EQ(env_.Zpool("scrub -w tank").rc, 0);
    r = env_.Zpool("status -x tank");
    EXPECT_EQ(r.out, "pool 'tank' is healthy\n") << env_.Zpool("status tank").out;
  }
  std::vector<std::string> Devs(int n) {
    std::vector<std::string> d;
    for (int i = 0; i < n; i++) d.push_back(env_.Dev("d" + std::to_string(i), 256ull << 20));
    return d;
  }
  static std::string Join(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += " '" + x + "'";
    return s;
  }
  std::vector<uint8_t> keep_;
};

TEST_F(ZpoolTrimFuse, FreeSpaceGoesBackToTheFilesUnderThePool) {
  UZFS_REQUIRE_FUSE();
  const std::vector<std::string> devs = Devs(6);
  FillAndFree("raidz2" + Join(devs));
  Ran r = env_.Zpool("status -t tank");
  for (const std::string& d : devs) EXPECT_TRUE(Contains(r.out, d + "  ONLINE       0     0     0  (untrimmed)")) << r.out;
  const uint64_t before = AllocatedBytes(devs);
  r = env_.Zpool("trim -w tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "");
  const uint64_t after = AllocatedBytes(devs);
  // 48 MiB of data is 72 MiB with raidz2's parity over six leaves; most of
  // it (not the metadata nor what is still deferred) is given back.
  EXPECT_GT(before, after + (48ull << 20)) << before << " -> " << after;
  r = env_.Zpool("status -t tank");
  for (const std::string& d : devs) EXPECT_TRUE(Contains(r.out, d + "  ONLINE       0     0     0  (100% trimmed, completed at ")) << r.out;
  EXPECT_FALSE(Contains(env_.Zpool("status tank").out, "trimmed")) << "only -t shows trims";
  r = env_.Zpool("status -tj tank");
  EXPECT_TRUE(Contains(r.out, "\"trim_state\": \"COMPLETE\"")) << r.out;
  // One leaf again, by name: only it is trimmed this time.
  r = env_.Zpool("trim -w tank '" + devs[2] + "'");
  ASSERT_EQ(r.rc, 0) << r.err;
  ExpectIntact();
  r = env_.Zpool("history tank");
  EXPECT_TRUE(Contains(r.out, "zpool trim -w tank")) << r.out;
}

TEST_F(ZpoolTrimFuse, DiscardsReachTheFilesBehindNbdExports) {
  UZFS_REQUIRE_FUSE();
  std::vector<std::unique_ptr<test::NbdkitServer>> servers;
  std::vector<std::string> files;
  std::string uris;
  for (int i = 0; i < 3; i++) {
    files.push_back(env_.Dev("n" + std::to_string(i), 256ull << 20));
    servers.push_back(std::make_unique<test::NbdkitServer>((env_.tmp() / ("s" + std::to_string(i))).string(),
                                                           std::vector<std::string>{"file", files.back()}));
    uris += " '" + servers.back()->uri() + "'";
  }
  CreateMountedPool("raidz1" + uris);
  WriteBytes(root_ + "/big", test::RandomBytes(32u << 20, 13));
  ASSERT_EQ(env_.Zpool("sync tank").rc, 0);
  ASSERT_EQ(::unlink((root_ + "/big").c_str()), 0);
  for (int i = 0; i < 4; i++) ASSERT_EQ(env_.Zpool("sync tank").rc, 0);
  const uint64_t before = AllocatedBytes(files);
  Ran r = env_.Zpool("trim -w tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  const uint64_t after = AllocatedBytes(files);
  EXPECT_GT(before, after + (32ull << 20)) << before << " -> " << after;
  r = env_.Zpool("status -t tank");
  for (const auto& s : servers) EXPECT_TRUE(Contains(r.out, s->uri() + "  ONLINE       0     0     0  (100% trimmed")) << r.out;
  ASSERT_EQ(env_.Zpool("scrub -w tank").rc, 0);
  EXPECT_EQ(env_.Zpool("status -x tank").out, "pool 'tank' is healthy\n");
  ASSERT_EQ(env_.Zpool("destroy tank").rc, 0);
}

TEST_F(ZpoolTrimFuse, CancelAndWait) {
  UZFS_REQUIRE_FUSE();
  const std::vector<std::string> devs = Devs(6);
  FillAndFree("raidz2" + Join(devs));
  // 64 KiB/s per leaf: the free space takes minutes, so it is under way.
  Ran r = env_.Zpool("trim -r 64K tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env_.Zpool("status -t tank");
  EXPECT_TRUE(Contains(r.out, "% trimmed, started at ")) << r.out;
  r = env_.Zpool("trim tank");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
  EXPECT_TRUE(Contains(r.err, "currently trimming")) << r.err;
  r = env_.Zpool("trim -c tank");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = env_.Zpool("wait -t trim tank");
  EXPECT_EQ(r.rc, 0) << r.err;
  r = env_.Zpool("status -t tank");
  EXPECT_TRUE(Contains(r.out, "% trimmed, canceled at ")) << r.out;
  r = env_.Zpool("trim -c tank");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot cancel trimming 'tank': there is no active trim\n");
  ExpectIntact();
}

TEST_F(ZpoolTrimFuse, ADaemonKilledMidTrimLeavesAnIntactPool) {
  UZFS_REQUIRE_FUSE();
  const std::vector<std::string> devs = Devs(6);
  FillAndFree("raidz2" + Join(devs));
  ASSERT_EQ(env_.Zpool("trim -r 1M tank").rc, 0);
  usleep(300000);  // some batches discarded, most of the space still to go
  const pid_t pid = env_.DaemonPid();
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  for (int i = 0; i < 500 && CliEnv::Alive(pid); i++) usleep(10000);
  env_.Zpool("import -f -d " + env_.devdir() + " tank");  // the cache file imports it at start
  ASSERT_EQ(env_.Zpool("get -H -o value health tank").out, "ONLINE\n");
  ASSERT_EQ(env_.Zfs("mount").rc, 0);
  EXPECT_TRUE(test::ReadText(root_ + "/keep") == std::string(keep_.begin(), keep_.end()));
  // Progress is not kept: the new daemon has trimmed nothing.
  Ran r = env_.Zpool("status -t tank");
  EXPECT_TRUE(Contains(r.out, "(untrimmed)")) << r.out;
  ASSERT_EQ(env_.Zpool("trim -w tank").rc, 0);
  ExpectIntact();
}

TEST_F(ZpoolTrimFuse, AutotrimGivesADeletedFilesSpaceBack) {
  UZFS_REQUIRE_FUSE();
  const std::vector<std::string> devs = Devs(3);
  Ran r = env_.Zpool("create -o autotrim=on -m " + root_ + " tank raidz1" + Join(devs));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(env_.Zpool("get -H -o value autotrim tank").out, "on\n");
  WriteBytes(root_ + "/big", test::RandomBytes(32u << 20, 14));
  ASSERT_EQ(env_.Zpool("sync tank").rc, 0);
  const uint64_t before = AllocatedBytes(devs);
  ASSERT_EQ(::unlink((root_ + "/big").c_str()), 0);
  for (int i = 0; i < 4; i++) ASSERT_EQ(env_.Zpool("sync tank").rc, 0);
  uint64_t after = before;
  for (int i = 0; i < 100 && before < after + (32ull << 20); i++) {
    usleep(100000);
    after = AllocatedBytes(devs);
  }
  EXPECT_GT(before, after + (32ull << 20)) << before << " -> " << after;
  ASSERT_EQ(env_.Zpool("scrub -w tank").rc, 0);
  EXPECT_EQ(env_.Zpool("status -x tank").out, "pool 'tank' is healthy\n");
}

TEST_F(ZpoolTrimFuse, BadInputIsRefusedInOneLine) {
  UZFS_REQUIRE_FUSE();
  const std::vector<std::string> devs = Devs(3);
  CreateMountedPool("raidz1" + Join(devs));
  Ran r = env_.Zpool("trim nosuch");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot open 'nosuch': no such pool\n");
  r = env_.Zpool("trim tank /no/such/dev");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "cannot trim '/no/such/dev': no such device in pool\n");
  r = env_.Zpool("trim -x tank");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(r.err, "trim [-w] [-r <rate>] [-c] <pool> [<device> ...]")) << r.err;
  r = env_.Zpool("trim -r fast tank");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(Contains(Lines(r.err)[0], "invalid value 'fast' for -r")) << r.err;
  r = env_.Zpool("trim");
  EXPECT_EQ(r.rc, 2);
  r = env_.Zpool("trim -c -w tank");
  EXPECT_EQ(r.rc, 2);
  r = env_.Zpool("wait -t trim tank");
  EXPECT_EQ(r.rc, 0) << r.err;
  // Nothing was started by any of them.
  EXPECT_TRUE(Contains(env_.Zpool("status -t tank").out, "(untrimmed)"));
}

}  // namespace
}  // namespace uzfs
