// Pools uzfs scrubbed, judged by the peers: a version-23 raidz2 pool with a
// damaged leaf, repaired by a uzfs scrub, imports in zfs-fuse, scrubs clean
// there and its zdb -bcc finds every block and no leak; a version-5000 pool
// uzfs scrubbed passes OpenZFS 2.1's zdb -bcc, and that zdb reads the scan
// record uzfs left in the pool directory.
#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_create.h"

namespace uzfs {
namespace {

constexpr size_t kRecord = 128 * 1024;

// A raidz2 pool of six leaves with a few objects, exported; one leaf then
// damaged (every record of the second object on it), imported again and
// scrubbed by uzfs, which must repair everything.
void BuildScrubbedPool(const std::filesystem::path& dir, uint64_t version) {
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir, "r", VdevSpec::Type::kRaidz, 6, 2));
  PoolCreateOptions o = pooltest::V23();
  o.version = version;
  o.fs_init = InitNewFilesystem;  // a file system the peers can mount
  std::vector<uint64_t> objs;
  {
    auto p = Pool::Create("sc", layout, o);
    ASSERT_UZFS_OK(p.status());
    pooltest::WriteObjects(**p, "sc", 8, 4 * kRecord, 40, &objs);
    ASSERT_UZFS_OK((*p)->Export());
  }
  // Wreck the middle of one leaf's data area: whatever columns lie there.
  {
    std::fstream f(layout.data[0].children[2].path, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good());
    f.seekp(4 << 20);
    const std::string junk(4 << 20, '\x33');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  PoolImportOptions io;
  io.fs_init = InitNewFilesystem;
  auto p = pooltest::ImportFrom(dir, "sc", io);
  ASSERT_UZFS_OK(p.status());
  ASSERT_UZFS_OK((*p)->StartScrub());
  (*p)->WaitScan();
  const Pool::ScanProgress done = (*p)->scan_progress();
  EXPECT_EQ(done.phys.state, ScanState::kFinished);
  EXPECT_EQ(done.phys.errors, 0u);
  EXPECT_GT(done.phys.processed, 0u) << "the scrub repaired nothing";
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir, "sc", /*check_allocated_total=*/false);
}

TEST(PoolScanCompat, ZfsFuseScrubsAUzfsRepairedPoolClean) {
  test::TempDir d;
  ASSERT_NO_FATAL_FAILURE(BuildScrubbedPool(d.path(), 23));
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox(pooltest::ZfsFuseJudgeScript(d.path().string(), "sc"), &out), 0) << out;
  pooltest::CheckZfsFuseVerdict(d.path());
}

TEST(PoolScanCompat, OpenZfsZdbReadsTheScanRecord) {
  test::TempDir d;
  ASSERT_NO_FATAL_FAILURE(BuildScrubbedPool(d.path(), 5000));
  const std::string where = "-U /dev/null -e -p " + d.path().string() + " ";
  std::string out;
  EXPECT_EQ(test::RunOpenZfsZdb(where + "-bcc sc", &out), 0) << out;
  EXPECT_NE(out.find("No leaks (block sum matches space maps exactly)"), std::string::npos) << out;
  for (const char* bad : {"error", "leaked space", "unreachable", "!= alloc", "ASSERT", "panic"}) {
    EXPECT_EQ(out.find(bad), std::string::npos) << bad << "\n" << out;
  }
  // The MOS object directory lists the record: 24 words, function 1
  // (scrub), state 2 (finished).
  std::string dir_dump;
  EXPECT_EQ(test::RunOpenZfsZdb(where + "-dddd sc 1", &dir_dump), 0) << dir_dump;
  EXPECT_NE(dir_dump.find("scan = 1 2 0 "), std::string::npos) << dir_dump;
}

}  // namespace
}  // namespace uzfs
