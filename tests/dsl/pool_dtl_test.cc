// DTLs kept on disk (pool_dtl.cc, dtl_map.h): an offline leaf gets a map
// naming the txgs it misses, growing with each txg, kept across export and
// import, emptied (not freed) once its resilver ends; a leaf whose
// uberblocks look current but whose DTL names txgs is found stale at import
// and resilvered, so every block reads right from it alone; a leaf that
// vanishes while the pool is open gets a DTL from then on; a leaf found
// behind at an import that resumes a resilver is resilvered for the txgs
// that resilver cannot reach before it counts as whole.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_build.h"

namespace uzfs {
namespace {

constexpr size_t kObjBytes = 128 * 1024;

const VdevNode* LeafAt(const Pool::ConfigView& c, const std::string& path) {
  std::vector<const VdevNode*> leaves;
  CollectLeafNodes(c.tree, &leaves);
  for (const VdevNode* n : leaves)
    if (n->path == path) return n;
  return nullptr;
}

TEST(PoolDtl, AnOfflineLeafKeepsItsMissedTxgsOnDiskUntilResilvered) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "m", VdevSpec::Type::kMirror, 2));
  const std::string side0 = layout.data[0].children[0].path;
  const std::string side1 = layout.data[0].children[1].path;
  std::vector<uint64_t> before, missed;
  auto p = Pool::Create("dp", layout, pooltest::V23());
  ASSERT_UZFS_OK(p.status());
  pooltest::WriteObjects(**p, "dp", 8, kObjBytes, 10, &before);
  ASSERT_UZFS_OK((*p)->Sync());
  const uint64_t guid1 = LeafAt((*p)->Config(), side1)->guid;
  EXPECT_EQ(LeafAt((*p)->Config(), side1)->dtl, 0u) << "no map before it misses anything";
  const uint64_t offline_at = (*p)->open_txg().number();
  ASSERT_UZFS_OK((*p)->OfflineDevice(side1, false));
  pooltest::WriteObjects(**p, "dp", 4, kObjBytes, 500, &missed);
  ASSERT_UZFS_OK((*p)->Sync());
  const std::vector<TxgSpan> first = (*p)->SyncedDtl(guid1);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_GE(first[0].from, offline_at - 1);
  EXPECT_LE(first[0].from, offline_at);
  EXPECT_EQ(first[0].to, (*p)->open_txg().number()) << "through the last synced txg";
  EXPECT_NE(LeafAt((*p)->Config(), side1)->dtl, 0u);
  EXPECT_EQ(LeafAt((*p)->Config(), side0)->dtl, 0u) << "the side that got every write has no map";
  pooltest::WriteObjects(**p, "dp", 1, kObjBytes, 700, &missed);
  ASSERT_UZFS_OK((*p)->Sync());
  const std::vector<TxgSpan> grown = (*p)->SyncedDtl(guid1);
  ASSERT_EQ(grown.size(), 1u);
  EXPECT_EQ(grown[0].from, first[0].from);
  EXPECT_GT(grown[0].to, first[0].to);
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "dp");

  p = pooltest::ImportFrom(dir.path(), "dp");
  ASSERT_UZFS_OK(p.status());
  const std::vector<TxgSpan> imported = (*p)->SyncedDtl(guid1);
  ASSERT_EQ(imported.size(), 1u) << "read back at import";
  EXPECT_EQ(imported[0].from, grown[0].from);
  EXPECT_GE(imported[0].to, grown[0].to) << "and the export's own txgs";
  const uint64_t map = LeafAt((*p)->Config(), side1)->dtl;
  ASSERT_UZFS_OK((*p)->OnlineDevice(side1));
  (*p)->WaitScan();
  EXPECT_EQ((*p)->scan_progress().phys.state, ScanState::kFinished);
  ASSERT_UZFS_OK((*p)->Sync());
  EXPECT_TRUE((*p)->SyncedDtl(guid1).empty()) << "whole again";
  EXPECT_EQ(LeafAt((*p)->Config(), side1)->dtl, map) << "the map stays, empty";
  ASSERT_UZFS_OK((*p)->OfflineDevice(side0, true));
  pooltest::ExpectObjects(**p, "dp", before, kObjBytes, 10);
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "dp");
}

TEST(PoolDtl, ALeafOnlyItsDtlCallsStaleIsResilveredAtImport) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "m", VdevSpec::Type::kMirror, 2));
  const std::string side0 = layout.data[0].children[0].path;
  const std::string side1 = layout.data[0].children[1].path;
  std::vector<uint64_t> before, missed;
  {
    auto p = Pool::Create("dp", layout, pooltest::V23());
    ASSERT_UZFS_OK(p.status());
    pooltest::WriteObjects(**p, "dp", 8, kObjBytes, 10, &before);
    ASSERT_UZFS_OK((*p)->Sync());
    ASSERT_UZFS_OK((*p)->OfflineDevice(side1, /*temporary=*/true));
    pooltest::WriteObjects(**p, "dp", 6, kObjBytes, 500, &missed);
    ASSERT_UZFS_OK((*p)->Export());
  }
  // side1's labels now look as current as side0's: only its DTL tells.
  ASSERT_NO_FATAL_FAILURE(pooltest::CopyUberblockRings(side0, side1));
  auto p = pooltest::ImportFrom(dir.path(), "dp");
  ASSERT_UZFS_OK(p.status());
  (*p)->WaitScan();
  const Pool::ScanProgress done = (*p)->scan_progress();
  EXPECT_EQ(done.phys.func, ScanFunc::kResilver);
  EXPECT_EQ(done.phys.state, ScanState::kFinished);
  EXPECT_GT(done.phys.min_txg, 0u) << "only the txgs its DTL names";
  EXPECT_GE(done.phys.processed, missed.size() * kObjBytes);
  // side1 alone: what it missed must be there now.
  ASSERT_UZFS_OK((*p)->OfflineDevice(side0, true));
  pooltest::ExpectObjects(**p, "dp", before, kObjBytes, 10);
  pooltest::ExpectObjects(**p, "dp", missed, kObjBytes, 500);
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "dp");
}

TEST(PoolDtl, ALeafThatVanishesGetsADtlFromThen) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "m", VdevSpec::Type::kMirror, 2));
  const std::string side1 = layout.data[0].children[1].path;
  std::vector<uint64_t> objs;
  {
    auto p = Pool::Create("dp", layout, pooltest::V23());
    ASSERT_UZFS_OK(p.status());
    pooltest::WriteObjects(**p, "dp", 4, kObjBytes, 10, &objs);
    ASSERT_UZFS_OK((*p)->Export());
  }
  PoolImportOptions o;
  o.fault_injectable = true;
  auto p = pooltest::ImportFrom(dir.path(), "dp", o);
  ASSERT_UZFS_OK(p.status());
  const uint64_t guid1 = LeafAt((*p)->Config(), side1)->guid;
  const uint64_t gone_at = (*p)->open_txg().number();
  (*p)->LeafFaults(side1)->Vanish();
  pooltest::WriteObjects(**p, "dp", 4, kObjBytes, 500, &objs);
  ASSERT_UZFS_OK((*p)->Sync());
  pooltest::WriteObjects(**p, "dp", 1, kObjBytes, 900, &objs);
  ASSERT_UZFS_OK((*p)->Sync());
  const std::vector<TxgSpan> dtl = (*p)->SyncedDtl(guid1);
  ASSERT_EQ(dtl.size(), 1u);
  EXPECT_LE(dtl[0].from, gone_at);
  EXPECT_EQ(dtl[0].to, (*p)->open_txg().number()) << "through the last synced txg";
  ASSERT_UZFS_OK((*p)->Export());
}

TEST(PoolDtl, ALeafBehindPastAResumedResilverIsResilveredBeforeItIsWhole) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "d", VdevSpec::Type::kRaidz, 5, 2));
  std::vector<uint64_t> objs, late;
  {
    auto p = Pool::Create("dp", layout, pooltest::V23());
    ASSERT_UZFS_OK(p.status());
    for (int round = 0; round < 8; round++) pooltest::WriteObjects(**p, "dp", 16, kObjBytes, 1000 + 16 * round, &objs);
    ASSERT_UZFS_OK((*p)->Export());
  }
  const std::string dead = layout.data[0].children[1].path;
  const std::string later_behind = layout.data[0].children[3].path;
  std::filesystem::remove(dead);
  auto p = pooltest::ImportFrom(dir.path(), "dp");
  ASSERT_UZFS_OK(p.status());
  (*p)->SetScanSlice(std::chrono::milliseconds(1));
  const std::string fresh = pooltest::MakeFile(dir.path(), "new1");
  ASSERT_UZFS_OK((*p)->ReplaceDevice(dead, fresh, false));
  for (int i = 0; i < 2000 && (*p)->scan_progress().phys.examined == 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // A second disk steps out while the resilver runs; what is written now
  // is born after the resilver's last txg.
  ASSERT_UZFS_OK((*p)->OfflineDevice(later_behind, /*temporary=*/true));
  pooltest::WriteObjects(**p, "dp", 4, kObjBytes, 5000, &late);
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  p = pooltest::ImportFrom(dir.path(), "dp");
  ASSERT_UZFS_OK(p.status());
  ASSERT_EQ((*p)->scan_progress().phys.state, ScanState::kScanning) << "the resilver ended before the export";
  // The resumed resilver, then the one for what it cannot reach.
  Vdev* behind = nullptr;
  std::vector<Vdev*> leaves;
  (*p)->root_vdev().CollectLeaves(&leaves);
  for (Vdev* v : leaves)
    if (v->name() == later_behind) behind = v;
  ASSERT_NE(behind, nullptr);
  for (int i = 0; i < 600 && (behind->stale() || (*p)->scan_progress().phys.scanning()); i++) {
    (*p)->WaitScan();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(behind->stale());
  EXPECT_EQ((*p)->scan_progress().phys.state, ScanState::kFinished);
  EXPECT_EQ((*p)->scan_progress().phys.errors, 0u);
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  // Two other disks go: the new disk and the one that was behind must hold
  // their shares of everything, the late objects too.
  std::filesystem::remove(layout.data[0].children[0].path);
  std::filesystem::remove(layout.data[0].children[2].path);
  p = pooltest::ImportFrom(dir.path(), "dp");
  ASSERT_UZFS_OK(p.status());
  pooltest::ExpectObjects(**p, "dp", objs, kObjBytes, 1000);
  pooltest::ExpectObjects(**p, "dp", late, kObjBytes, 5000);
  ASSERT_UZFS_OK((*p)->Export());
}

}  // namespace
}  // namespace uzfs
