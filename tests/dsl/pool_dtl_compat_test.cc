// DTLs judged by the peers. A pool on which uzfs offlined a mirror side,
// kept writing and exported, with that side's uberblocks then made to look
// current (so only its DTL says what it misses): zfs-fuse's zdb shows the
// DTL uzfs wrote; zfs-fuse resilvers the side by itself at import, scrubs
// clean with no checksum error on it, and its zdb -bcc finds no leak.
// OpenZFS 2.1's zdb shows the same DTL of a version-5000 pool and finds
// no leak. And the other way: the DTL zfs-fuse wrote for a side it
// offlined is read by uzfs, which resilvers those txgs when the side comes
// back; that side alone then scrubs clean.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/zpl/zpl_create.h"

namespace uzfs {
namespace {

constexpr size_t kObjBytes = 128 * 1024;

// Mirror m0/m1 of pool "dc": m1 offline (temporarily) while objects are
// written, exported, its uberblocks copied from m0. The DTL's span.
TxgSpan BuildPool(const std::filesystem::path& dir, uint64_t version) {
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir, "m", VdevSpec::Type::kMirror, 2));
  PoolCreateOptions o = pooltest::V23();
  o.version = version;
  o.fs_init = InitNewFilesystem;
  std::vector<uint64_t> objs;
  TxgSpan span;
  {
    auto p = Pool::Create("dc", layout, o);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (!p.ok()) return span;
    pooltest::WriteObjects(**p, "dc", 8, kObjBytes, 10, &objs);
    EXPECT_TRUE((*p)->Sync().ok());
    EXPECT_TRUE((*p)->OfflineDevice(layout.data[0].children[1].path, true).ok());
    pooltest::WriteObjects(**p, "dc", 8, kObjBytes, 500, &objs);
    EXPECT_TRUE((*p)->Export().ok());
  }
  pooltest::CopyUberblockRings(layout.data[0].children[0].path, layout.data[0].children[1].path);
  // What the map says, as uzfs reads it back.
  PoolImportOptions ro;
  ro.readonly = true;
  auto p = pooltest::ImportFrom(dir, "dc", ro);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  if (!p.ok()) return span;
  const Pool::ConfigView c = (*p)->Config();
  for (const VdevNode& side : c.tree.children[0].children) {
    const std::vector<TxgSpan> d = (*p)->SyncedDtl(side.guid);
    if (side.path == layout.data[0].children[1].path && d.size() == 1) span = d[0];
  }
  EXPECT_GT(span.to, span.from);
  return span;
}

TEST(PoolDtlCompat, ZfsFuseResilversWhatTheDtlSaysAndScrubsClean) {
  test::TempDir d;
  const TxgSpan span = BuildPool(d.path(), 23);
  ASSERT_GT(span.to, span.from);
  const std::string dir = d.path().string();
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox("d=" + dir + "\n"
                                      "zdb -e -p $d -dddd dc > $d/zdb-dtl.txt 2>&1\n"
                                      "zpool import -d $d -R $d/alt dc || exit 1\n"
                                      "for i in $(seq 1 300); do zpool status dc | grep -q 'in progress' || break; sleep 0.1; done\n"
                                      "zpool status -v dc > $d/resilver.txt\n",
                                      &out),
            0)
      << out;
  const std::string zdb = test::ReadText(d.path() / "zdb-dtl.txt");
  const std::string missing = "missing [" + std::to_string(span.from) + "," + std::to_string(span.to) + ")";
  EXPECT_NE(zdb.find(missing), std::string::npos) << missing << "\n" << zdb.substr(0, 4000);
  const std::string resilver = test::ReadText(d.path() / "resilver.txt");
  EXPECT_NE(resilver.find("resilver completed"), std::string::npos) << resilver;
  ASSERT_EQ(test::RunInZfsFuseSandbox(pooltest::ZfsFuseJudgeScript(dir, "dc"), &out), 0) << out;
  pooltest::CheckZfsFuseVerdict(d.path());
  const std::string status = test::ReadText(d.path() / "status.txt");
  // Nothing was wrong on m1: no checksum error counted against it.
  const size_t row = status.find("/m1 ");
  ASSERT_NE(row, std::string::npos) << status;
  const std::string line = status.substr(row, status.find('\n', row) - row);
  EXPECT_NE(line.find("ONLINE       0     0     0"), std::string::npos) << line;
}

TEST(PoolDtlCompat, OpenZfsZdbReadsTheDtl) {
  test::TempDir d;
  const TxgSpan span = BuildPool(d.path(), 5000);
  ASSERT_GT(span.to, span.from);
  std::string out;
  EXPECT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + d.path().string() + " -dddd dc", &out), 0) << out;
  const std::string missing = "missing [" + std::to_string(span.from) + "," + std::to_string(span.to) + ")";
  EXPECT_NE(out.find(missing), std::string::npos) << missing << "\n" << out.substr(0, 4000);
  EXPECT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + d.path().string() + " -bcc dc", &out), 0) << out;
  EXPECT_NE(out.find("No leaks (block sum matches space maps exactly)"), std::string::npos) << out;
}

TEST(PoolDtlCompat, UzfsReadsTheDtlZfsFuseWrote) {
  test::TempDir d;
  const std::string dir = d.path().string();
  const std::string z0 = pooltest::MakeFile(d.path(), "z0");
  const std::string z1 = pooltest::MakeFile(d.path(), "z1");
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox(
                "d=" + dir + "\n"
                "zpool create -o version=23 -o ashift=9 -m $d/mnt zd mirror $d/z0 $d/z1 || exit 1\n"
                "dd if=/dev/urandom of=$d/mnt/before bs=128k count=8 status=none\n"
                "zpool offline zd $d/z1 || exit 1\n"
                "dd if=/dev/urandom of=$d/mnt/after bs=128k count=8 status=none\n"
                "zpool export zd\n"
                "zdb -e -p $d -dddd zd > $d/zdb-dtl.txt 2>&1\n",
                &out),
            0)
      << out;
  // zdb's "missing [a,b)" lines: what zfs-fuse says z1 misses.
  const std::string zdb = test::ReadText(d.path() / "zdb-dtl.txt");
  std::vector<TxgSpan> said;
  for (size_t at = zdb.find("missing ["); at != std::string::npos; at = zdb.find("missing [", at + 1)) {
    TxgSpan s;
    ASSERT_EQ(std::sscanf(zdb.c_str() + at, "missing [%lu,%lu)", &s.from, &s.to), 2) << zdb.substr(at, 80);
    said.push_back(s);
  }
  ASSERT_FALSE(said.empty()) << zdb.substr(0, 4000);
  auto p = pooltest::ImportFrom(d.path(), "zd");
  ASSERT_UZFS_OK(p.status());
  uint64_t guid1 = 0;
  const Pool::ConfigView c = (*p)->Config();
  for (const VdevNode& side : c.tree.children[0].children)
    if (side.path == z1) guid1 = side.guid;
  const std::vector<TxgSpan> read = (*p)->SyncedDtl(guid1);
  ASSERT_FALSE(read.empty());
  for (const TxgSpan& s : said) {
    bool covered = false;
    for (const TxgSpan& r : read) covered = covered || (r.from <= s.from && s.to <= r.to);
    EXPECT_TRUE(covered) << "zdb says [" << s.from << "," << s.to << ") is missing";
  }
  ASSERT_UZFS_OK((*p)->OnlineDevice(z1));
  (*p)->WaitScan();
  EXPECT_EQ((*p)->scan_progress().phys.func, ScanFunc::kResilver);
  EXPECT_EQ((*p)->scan_progress().phys.state, ScanState::kFinished);
  EXPECT_GE((*p)->scan_progress().phys.min_txg, said.front().from - 1) << "only what it missed";
  ASSERT_UZFS_OK((*p)->OfflineDevice(z0, true));
  ASSERT_UZFS_OK((*p)->StartScrub());
  (*p)->WaitScan();
  EXPECT_EQ((*p)->scan_progress().phys.state, ScanState::kFinished);
  EXPECT_EQ((*p)->scan_progress().phys.errors, 0u) << "z1 alone holds every block";
  ASSERT_UZFS_OK((*p)->OnlineDevice(z0));
  ASSERT_UZFS_OK((*p)->Export());
}

}  // namespace
}  // namespace uzfs
