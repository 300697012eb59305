// `zfs send` of pools of versions 28 and 5000, judged by OpenZFS 2.1's
// `zstream dump` (scripts/openzfs-zdb.sh): files written through the
// mount (small, large with indirect blocks, sparse, a symbolic link, a
// directory of many entries) are snapshotted and sent; zstream reads the
// whole stream, every record checksum verifying, and counts the data it
// carries. The stream's begin record has OpenZFS's flags and features.
// Compressed, large-block streams (-c -L) are read by zstream and received
// back. A send blocked on a reader that stopped reading ends when the
// daemon shuts down, without holding the shutdown up.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/cmd/cli_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs::clitest {
namespace {

class ZfsSendFuse : public MountingCliTest, public ::testing::WithParamInterface<int> {};

// The number after "<label> = " in zstream's output (`base` 16 for its
// bare hexadecimal fields).
uint64_t After(const std::string& text, const std::string& label, int base = 0) {
  const size_t at = text.find(label + " = ");
  return at == std::string::npos ? UINT64_MAX : std::strtoull(text.c_str() + at + label.size() + 3, nullptr, base);
}

TEST_P(ZfsSendFuse, OpenZfsReadsTheStream) {
  UZFS_REQUIRE_FUSE();
  Ran r = env_.Zpool("create -o version=" + std::to_string(GetParam()) + " -m " + root_ + " tank " +
                     env_.Dev("d0", 256ull << 20));
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env_.Zfs("create tank/fs").rc, 0);
  const std::string fs = root_ + "/fs";
  for (int i = 0; i < 100 && !std::filesystem::exists(fs + "/.zfs"); i++) usleep(100000);
  MakeSampleTree(fs, 200, 10 << 20);
  ASSERT_EQ(env_.Zfs("snapshot tank/fs@s").rc, 0);
  const std::string stream = (env_.tmp() / "s.zs").string();
  r = env_.Zfs("send tank/fs@s > " + stream);
  ASSERT_EQ(r.rc, 0) << r.err;

  std::string out;
  ASSERT_EQ(test::RunOpenZfsZdb("--zstream dump < " + stream, &out), 0) << out;
  EXPECT_EQ(out.find("checksum in record header"), std::string::npos) << out;
  EXPECT_EQ(out.find("invalid checksum"), std::string::npos) << out;
  EXPECT_EQ(After(out, "Total DRR_BEGIN records"), 1u) << out;
  EXPECT_EQ(After(out, "Total DRR_END records"), 1u) << out;
  // 100 + 3,000,000 + the sparse file's last block + 200 small files, in whole
  // blocks; the directories' ZAP blocks on top.
  const uint64_t writes = After(out, "Total DRR_WRITE records");
  EXPECT_GE(writes, 3000000u / 131072 + 3) << out;
  EXPECT_GE(After(out, "Total DRR_OBJECT records"), 200u + 5) << out;
  EXPECT_EQ(After(out, "Total stream length"), std::filesystem::file_size(stream)) << out;
  EXPECT_EQ(After(out, "features"), 4u) << "SA spill, as OpenZFS sets it from version 24 on";
  EXPECT_EQ(After(out, "flags"), 4u) << "free records";
  EXPECT_NE(out.find("toname = tank/fs@s"), std::string::npos) << out;
  EXPECT_EQ(After(out, "toguid", 16), std::stoull(env_.Zfs("get -Hp -o value guid tank/fs@s").out)) << out;
}

INSTANTIATE_TEST_SUITE_P(Versions, ZfsSendFuse, ::testing::Values(28, 5000));

// zfs send -c -L of a version-5000 pool with lz4 and 1 MiB records:
// OpenZFS's zstream reads compressed and large-block records (the blocks
// as stored: lz4, their compressed sizes), and the stream received back
// gives the same files.
class ZfsSendCompressedFuse : public MountingCliTest {};

TEST_F(ZfsSendCompressedFuse, CompressedLargeBlockStreamIsOpenZfsReadable) {
  UZFS_REQUIRE_FUSE();
  Ran r = env_.Zpool("create -o version=5000 -m " + root_ + " tank " + env_.Dev("d0", 256ull << 20));
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(env_.Zfs("create -o compression=lz4 -o recordsize=1M tank/fs").rc, 0);
  const std::string fs = root_ + "/fs";
  for (int i = 0; i < 100 && !std::filesystem::exists(fs + "/.zfs"); i++) usleep(100000);
  std::string text;
  for (int i = 0; i < 60000; i++) text += "line " + std::to_string(i) + " of a file that compresses well\n";
  std::ofstream(fs + "/text") << text;
  PutFile(fs + "/random", test::RandomBytes(3000000, 5));
  ASSERT_EQ(env_.Zfs("snapshot tank/fs@s").rc, 0);
  const std::string stream = (env_.tmp() / "cl.zs").string();
  r = env_.Zfs("send -c -L tank/fs@s > " + stream);
  ASSERT_EQ(r.rc, 0) << r.err;
  const uint64_t plain = std::filesystem::file_size(stream);
  ASSERT_EQ(env_.Zfs("send tank/fs@s > " + stream + ".plain").rc, 0);
  EXPECT_LT(plain + 1000000, std::filesystem::file_size(stream + ".plain")) << "the text went uncompressed";

  std::string out;
  ASSERT_EQ(test::RunOpenZfsZdb("--zstream dump -v < " + stream, &out), 0) << out;
  EXPECT_EQ(out.find("invalid checksum"), std::string::npos) << out;
  // SA spill, lz4, large blocks, compressed.
  EXPECT_EQ(After(out, "features", 16), 0x4a0004u) << out;
  EXPECT_NE(out.find("compression type = 15 flags = 0 offset = 0 logical_size = 1048576 compressed_size = "),
            std::string::npos)
      << out;
  EXPECT_EQ(After(out, "Total stream length"), plain) << out;

  r = env_.Zfs("receive tank/back < " + stream);
  ASSERT_EQ(r.rc, 0) << r.err;
  for (int i = 0; i < 100 && !std::filesystem::exists(root_ + "/back/.zfs"); i++) usleep(100000);
  EXPECT_EQ(test::ReadText(root_ + "/back/text"), text);
  EXPECT_EQ(test::ReadFile(root_ + "/back/random"), test::RandomBytes(3000000, 5));
  // The received file system holds 1 MiB blocks: it counts in the pool's
  // large_blocks feature, which OpenZFS's zdb checks against the datasets.
  ASSERT_EQ(env_.Zfs("destroy -r tank/fs").rc, 0);
  EXPECT_EQ(env_.Zpool("get -H -o value feature@large_blocks tank").out, "active\n");
  ASSERT_EQ(env_.Zpool("export tank").rc, 0);
  ASSERT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + env_.devdir() + " -bcc tank", &out), 0) << out;
  EXPECT_NE(out.find("No leaks"), std::string::npos) << out;
  EXPECT_EQ(out.find("mismatch"), std::string::npos) << out;
  ASSERT_EQ(env_.Zpool("import -d " + env_.devdir() + " tank").rc, 0);
}

// A send whose reader stops reading does not hold up the daemon's
// shutdown: the send ends with an error line and the daemon exits.
class ZfsSendShutdownFuse : public MountingCliTest {};

TEST_F(ZfsSendShutdownFuse, ASendIntoAStuckPipeEndsWhenTheDaemonStops) {
  UZFS_REQUIRE_FUSE();
  ASSERT_NO_FATAL_FAILURE(CreateMountedPool(env_.Dev("d0", 256ull << 20)));
  ASSERT_EQ(env_.Zfs("create tank/fs").rc, 0);
  const std::string fs = root_ + "/fs";
  for (int i = 0; i < 100 && !std::filesystem::exists(fs + "/.zfs"); i++) usleep(100000);
  PutFile(fs + "/big", test::RandomBytes(8 << 20, 1));  // far more than a pipe holds
  ASSERT_EQ(env_.Zfs("snapshot tank/fs@s").rc, 0);
  const std::string d = env_.tmp().string();
  // The reader sleeps without reading; the send blocks on the full pipe.
  const std::string cmd = "cd " + d + " && ((UZFS_RUNDIR=" + env_.rundir() + " " + Bin("zfs") +
                          " send tank/fs@s 2>send.err; echo $? > send.rc) | sh -c 'echo $$ > reader.pid; exec sleep 60') "
                          "> /dev/null 2>&1 &";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(env_.StopDaemon()) << "the daemon waited for the stuck reader";
  // Well short of the reader's 60 s (a daemon stop took 10 s once on a
  // machine running four such tests at once).
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  for (int i = 0; i < 100 && !std::filesystem::exists(d + "/send.rc"); i++) usleep(100000);
  EXPECT_EQ(test::ReadText(d + "/send.rc"), "1\n");
  EXPECT_EQ(test::ReadText(d + "/send.err"), "cannot send 'tank/fs@s': the daemon is shutting down\n");
  const pid_t reader = static_cast<pid_t>(std::strtol(test::ReadText(d + "/reader.pid").c_str(), nullptr, 10));
  if (reader > 0) ::kill(reader, SIGKILL);
}

}  // namespace
}  // namespace uzfs::clitest
