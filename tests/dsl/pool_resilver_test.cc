// Replacing a device and resilvering (Pool::ReplaceDevice, OfflineDevice,
// OnlineDevice, pool_device_state.cc): a dead raidz2 disk is replaced and
// rebuilt, after which the new disk alone holds its share (two other disks
// can go and every object still reads); an offlined mirror side that
// missed writes is resilvered for only those txgs; a disk swapped at the
// same path is replaced by itself; an export mid-resilver resumes at
// import; bad requests change nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_build.h"
#include "zfs/vdev/fault_device.h"

namespace uzfs {
namespace {

constexpr size_t kObjBytes = 256 * 1024;


// The leaf config nodes of the pool now.
std::vector<VdevNode> LeafNodes(Pool& p) {
  const Pool::ConfigView c = p.Config();
  std::vector<const VdevNode*> leaves;
  CollectLeafNodes(c.tree, &leaves);
  std::vector<VdevNode> out;
  for (const VdevNode* n : leaves) out.push_back(*n);
  return out;
}

bool HasReplacing(const VdevNode& n) {
  if (n.type == "replacing") return true;
  for (const VdevNode& c : n.children)
    if (HasReplacing(c)) return true;
  return false;
}

// A blank file standing in for a new disk.
std::string NewDisk(const std::filesystem::path& dir, const std::string& name,
                    uint64_t size = pooltest::kDefaultDeviceSize) {
  return pooltest::MakeFile(dir, name, size);
}

TEST(PoolResilver, ReplacesADeadRaidz2DiskAndTheNewDiskHoldsItsShare) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "d", VdevSpec::Type::kRaidz, 6, 2));
  std::vector<uint64_t> objs;
  {
    auto p = Pool::Create("sp", layout, pooltest::V23());
    ASSERT_UZFS_OK(p.status());
    pooltest::WriteObjects(**p, "sp", 24, kObjBytes, 10, &objs);
    ASSERT_UZFS_OK((*p)->Export());
  }
  const std::string dead = layout.data[0].children[3].path;
  std::filesystem::remove(dead);  // the disk died
  auto p = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  EXPECT_EQ((*p)->root_vdev().state(), VdevState::kDegraded);
  const std::string fresh = NewDisk(dir.path(), "new3");
  ASSERT_UZFS_OK((*p)->ReplaceDevice(dead, fresh, false));
  // While it runs: a replacing vdev in the config, the new leaf stale.
  (*p)->WaitScan();
  const Pool::ScanProgress done = (*p)->scan_progress();
  EXPECT_EQ(done.phys.func, ScanFunc::kResilver);
  EXPECT_EQ(done.phys.state, ScanState::kFinished);
  EXPECT_EQ(done.phys.errors, 0u);
  EXPECT_GT(done.phys.processed, 0u) << "resilvered bytes";
  // Done: the new disk took the old one's place.
  const Pool::ConfigView c = (*p)->Config();
  EXPECT_FALSE(HasReplacing(c.tree));
  ASSERT_EQ(c.tree.children[0].children.size(), 6u);
  EXPECT_EQ(c.tree.children[0].children[3].path, fresh);
  EXPECT_EQ(c.tree.children[0].children[3].id, 3u);
  EXPECT_EQ((*p)->root_vdev().state(), VdevState::kOnline);
  pooltest::ExpectObjects(**p, "sp", objs, kObjBytes, 10);
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
  // Two other disks go: the new one must hold its columns.
  std::filesystem::remove(layout.data[0].children[0].path);
  std::filesystem::remove(layout.data[0].children[5].path);
  auto again = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(again.status());
  pooltest::ExpectObjects(**again, "sp", objs, kObjBytes, 10);
  ASSERT_UZFS_OK((*again)->Export());
}

TEST(PoolResilver, OnlineResilversOnlyTheTxgsTheDeviceMissed) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "m", VdevSpec::Type::kMirror, 2));
  const std::string side0 = layout.data[0].children[0].path;
  const std::string side1 = layout.data[0].children[1].path;
  std::vector<uint64_t> before, missed;
  auto p = Pool::Create("sp", layout, pooltest::V23());
  ASSERT_UZFS_OK(p.status());
  pooltest::WriteObjects(**p, "sp", 40, kObjBytes, 100, &before);
  ASSERT_UZFS_OK((*p)->Sync());
  ASSERT_UZFS_OK((*p)->OfflineDevice(side1, false));
  EXPECT_EQ((*p)->root_vdev().state(), VdevState::kDegraded);
  pooltest::WriteObjects(**p, "sp", 4, kObjBytes, 500, &missed);
  ASSERT_UZFS_OK((*p)->Sync());
  // Offline is kept across export and import.
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  p = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  bool offline = false;
  for (const VdevNode& n : LeafNodes(**p)) offline = offline || (n.path == side1 && n.offline);
  EXPECT_TRUE(offline);
  EXPECT_EQ((*p)->root_vdev().state(), VdevState::kDegraded);
  ASSERT_UZFS_OK((*p)->OnlineDevice(side1));
  (*p)->WaitScan();
  const Pool::ScanProgress done = (*p)->scan_progress();
  EXPECT_EQ(done.phys.func, ScanFunc::kResilver);
  EXPECT_EQ(done.phys.state, ScanState::kFinished);
  EXPECT_GT(done.phys.min_txg, 0u);
  // Only the blocks born since it went away: well under half of the data.
  EXPECT_LT(done.phys.examined, 40 * kObjBytes / 2);
  EXPECT_GE(done.phys.examined, 4 * kObjBytes);
  EXPECT_EQ((*p)->root_vdev().state(), VdevState::kOnline);
  // The other side goes: side1 alone has everything.
  ASSERT_UZFS_OK((*p)->OfflineDevice(side0, true));
  pooltest::ExpectObjects(**p, "sp", before, kObjBytes, 100);
  pooltest::ExpectObjects(**p, "sp", missed, kObjBytes, 500);
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
}

TEST(PoolResilver, ADiskSwappedInPlaceIsReplacedByItself) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "m", VdevSpec::Type::kMirror, 2));
  const std::string side1 = layout.data[0].children[1].path;
  std::vector<uint64_t> objs;
  {
    auto p = Pool::Create("sp", layout, pooltest::V23());
    ASSERT_UZFS_OK(p.status());
    pooltest::WriteObjects(**p, "sp", 8, kObjBytes, 700, &objs);
    ASSERT_UZFS_OK((*p)->Export());
  }
  std::filesystem::remove(side1);
  NewDisk(dir.path(), "m1");  // a blank disk in the same place
  auto p = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  EXPECT_EQ((*p)->root_vdev().state(), VdevState::kDegraded);
  ASSERT_UZFS_OK((*p)->ReplaceDevice(side1, "", false));
  (*p)->WaitScan();
  EXPECT_EQ((*p)->scan_progress().phys.state, ScanState::kFinished);
  EXPECT_EQ((*p)->root_vdev().state(), VdevState::kOnline);
  ASSERT_UZFS_OK((*p)->OfflineDevice(layout.data[0].children[0].path, true));
  pooltest::ExpectObjects(**p, "sp", objs, kObjBytes, 700);
  ASSERT_UZFS_OK((*p)->Export());
}

TEST(PoolResilver, AnExportMidResilverResumesAtImport) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "d", VdevSpec::Type::kRaidz, 4, 1));
  std::vector<uint64_t> objs;
  {
    auto p = Pool::Create("sp", layout, pooltest::V23());
    ASSERT_UZFS_OK(p.status());
    for (int round = 0; round < 8; round++) pooltest::WriteObjects(**p, "sp", 16, kObjBytes, 1000 + 16 * round, &objs);
    ASSERT_UZFS_OK((*p)->Export());
  }
  std::filesystem::remove(layout.data[0].children[1].path);
  auto p = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  (*p)->SetScanSlice(std::chrono::milliseconds(1));
  const std::string fresh = NewDisk(dir.path(), "new1");
  ASSERT_UZFS_OK((*p)->ReplaceDevice(layout.data[0].children[1].path, fresh, false));
  // Export as soon as the resilver has recorded some progress.
  for (int i = 0; i < 2000 && (*p)->scan_progress().phys.examined == 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  p = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  const Pool::ScanProgress resumed = (*p)->scan_progress();
  ASSERT_EQ(resumed.phys.state, ScanState::kScanning) << "the resilver ended before the export: nothing tested";
  EXPECT_EQ(resumed.phys.func, ScanFunc::kResilver);
  EXPECT_TRUE(HasReplacing((*p)->Config().tree));
  (*p)->WaitScan();
  EXPECT_EQ((*p)->scan_progress().phys.state, ScanState::kFinished);
  EXPECT_FALSE(HasReplacing((*p)->Config().tree));
  // The old disk is gone for good and another fails: the new one serves.
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  std::filesystem::remove(layout.data[0].children[2].path);
  p = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  pooltest::ExpectObjects(**p, "sp", objs, kObjBytes, 1000);
  ASSERT_UZFS_OK((*p)->Export());
}

TEST(PoolResilver, BadRequestsChangeNothing) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "d", VdevSpec::Type::kRaidz, 3, 1));
  auto p = Pool::Create("sp", layout, pooltest::V23());
  ASSERT_UZFS_OK(p.status());
  const std::string d0 = layout.data[0].children[0].path;
  const std::string d1 = layout.data[0].children[1].path;
  const Pool::ConfigView before = (*p)->Config();
  const std::string small = NewDisk(dir.path(), "small", 80ull << 20);
  EXPECT_EQ((*p)->ReplaceDevice(d0, small, false).code(), Code::kInvalidArgument);
  EXPECT_EQ((*p)->ReplaceDevice(d0, d1, false).code(), Code::kInvalidArgument);
  EXPECT_EQ((*p)->ReplaceDevice(dir.path() / "nope", NewDisk(dir.path(), "x"), false).code(), Code::kNotFound);
  EXPECT_EQ((*p)->ReplaceDevice(d0, "relative", false).code(), Code::kInvalidArgument);
  EXPECT_EQ((*p)->ReplaceDevice(d0, d0, false).code(), Code::kBusy);  // still ONLINE
  // A disk of another pool.
  PoolLayout other;
  other.data.push_back(pooltest::Leaf(dir.path(), "other0"));
  {
    auto o = Pool::Create("op", other, pooltest::V23());
    ASSERT_UZFS_OK(o.status());
    ASSERT_UZFS_OK((*o)->Export());
  }
  EXPECT_FALSE((*p)->ReplaceDevice(d0, other.data[0].path, false).ok());
  // Offlining beyond the parity.
  ASSERT_UZFS_OK((*p)->OfflineDevice(d0, true));
  EXPECT_EQ((*p)->OfflineDevice(d1, false).code(), Code::kBusy);
  EXPECT_EQ((*p)->OfflineDevice("/no/such", false).code(), Code::kNotFound);
  ASSERT_UZFS_OK((*p)->OnlineDevice(d0));
  (*p)->WaitScan();
  const Pool::ConfigView after = (*p)->Config();
  std::vector<const VdevNode*> a, b;
  CollectLeafNodes(before.tree, &a);
  CollectLeafNodes(after.tree, &b);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); i++) {
    EXPECT_EQ(a[i]->path, b[i]->path);
    EXPECT_FALSE(b[i]->offline);
  }
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
}

TEST(PoolResilver, RemovingALogAfterAReplaceLeavesTheNewDiskAlone) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "d", VdevSpec::Type::kRaidz, 3, 1));
  layout.logs.push_back(pooltest::Leaf(dir.path(), "log"));
  auto p = Pool::Create("sp", layout, pooltest::V23());
  ASSERT_UZFS_OK(p.status());
  std::vector<uint64_t> objs;
  pooltest::WriteObjects(**p, "sp", 8, kObjBytes, 900, &objs);
  const std::string fresh = NewDisk(dir.path(), "n0");
  ASSERT_UZFS_OK((*p)->ReplaceDevice(layout.data[0].children[0].path, fresh, false));
  (*p)->WaitScan();
  ASSERT_FALSE(HasReplacing((*p)->Config().tree));
  ASSERT_UZFS_OK((*p)->RemoveVdev(layout.logs[0].path));
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  // The new disk still has its labels and its share: with another disk
  // gone, every object reads.
  std::filesystem::remove(layout.data[0].children[0].path);
  std::filesystem::remove(layout.data[0].children[2].path);
  p = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  pooltest::ExpectObjects(**p, "sp", objs, kObjBytes, 900);
  ASSERT_UZFS_OK((*p)->Export());
}

TEST(PoolResilver, TwoReplacesBackToBackBothEndWhole) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "d", VdevSpec::Type::kRaidz, 5, 2));
  auto p = Pool::Create("sp", layout, pooltest::V23());
  ASSERT_UZFS_OK(p.status());
  std::vector<uint64_t> objs;
  pooltest::WriteObjects(**p, "sp", 40, kObjBytes, 1500, &objs);
  (*p)->SetScanSlice(std::chrono::milliseconds(1));
  const std::string n0 = NewDisk(dir.path(), "n0"), n1 = NewDisk(dir.path(), "n1");
  ASSERT_UZFS_OK((*p)->ReplaceDevice(layout.data[0].children[0].path, n0, false));
  ASSERT_UZFS_OK((*p)->ReplaceDevice(layout.data[0].children[1].path, n1, false));
  (*p)->WaitScan();
  EXPECT_EQ((*p)->scan_progress().phys.state, ScanState::kFinished);
  EXPECT_FALSE(HasReplacing((*p)->Config().tree));
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  // Only the two new disks and one old one left: everything must read.
  for (int i : {0, 1, 3, 4}) std::filesystem::remove(layout.data[0].children[static_cast<size_t>(i)].path);
  p = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  pooltest::ExpectObjects(**p, "sp", objs, kObjBytes, 1500);
  ASSERT_UZFS_OK((*p)->Export());
}

// A two-way mirror pool whose side 1 was offline (until import, -t) while
// `missed` was written, after `before`.
struct MirrorThatMissed {
  test::TempDir dir;
  PoolLayout layout;
  std::string side0, side1;
  std::vector<uint64_t> before, missed;
  std::unique_ptr<Pool> pool;

  MirrorThatMissed(int n_before, int n_missed, uint64_t seed) {
    layout.data.push_back(pooltest::Group(dir.path(), "m", VdevSpec::Type::kMirror, 2));
    side0 = layout.data[0].children[0].path;
    side1 = layout.data[0].children[1].path;
    auto p = Pool::Create("sp", layout, pooltest::V23());
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    pool = std::move(p).value();
    pooltest::WriteObjects(*pool, "sp", n_before, kObjBytes, seed, &before);
    EXPECT_TRUE(pool->OfflineDevice(side1, true).ok());
    pooltest::WriteObjects(*pool, "sp", n_missed, kObjBytes, seed + 100, &missed);
    EXPECT_TRUE(pool->Sync().ok());
  }
};

TEST(PoolResilver, AnExportRightAfterOnlineStillResilversWhatWasMissed) {
  MirrorThatMissed t(8, 16, 2000);
  std::unique_ptr<Pool>& p = t.pool;
  // Online, and out at once: the resilver has had no time.
  p->SetScanSlice(std::chrono::milliseconds(1));
  ASSERT_UZFS_OK(p->OnlineDevice(t.side1));
  ASSERT_UZFS_OK(p->Export());
  p.reset();
  auto again = pooltest::ImportFrom(t.dir.path(), "sp");
  ASSERT_UZFS_OK(again.status());
  (*again)->WaitScan();
  EXPECT_EQ((*again)->scan_progress().phys.func, ScanFunc::kResilver);
  EXPECT_EQ((*again)->scan_progress().phys.state, ScanState::kFinished);
  ASSERT_UZFS_OK((*again)->OfflineDevice(t.side0, true));
  pooltest::ExpectObjects(**again, "sp", t.before, kObjBytes, 2000);
  pooltest::ExpectObjects(**again, "sp", t.missed, kObjBytes, 2100);
  ASSERT_UZFS_OK((*again)->Export());
}

TEST(PoolResilver, AStaleDeviceOfflinedAndOnlinedMidResilverIsResilveredAgain) {
  MirrorThatMissed t(8, 40, 3000);
  Pool* p = t.pool.get();
  p->SetScanSlice(std::chrono::milliseconds(1));
  ASSERT_UZFS_OK(p->OnlineDevice(t.side1));
  // Away again while the resilver runs, back in the same txg.
  ASSERT_UZFS_OK(p->OfflineDevice(t.side1, true));
  ASSERT_UZFS_OK(p->OnlineDevice(t.side1));
  p->WaitScan();
  EXPECT_EQ(p->scan_progress().phys.state, ScanState::kFinished);
  EXPECT_FALSE(p->root_vdev().child(0)->child(1)->stale());
  ASSERT_UZFS_OK(p->OfflineDevice(t.side0, true));
  pooltest::ExpectObjects(*p, "sp", t.before, kObjBytes, 3000);
  pooltest::ExpectObjects(*p, "sp", t.missed, kObjBytes, 3100);
  ASSERT_UZFS_OK(p->Export());
}

TEST(PoolResilver, ASecondDiskFailingMidResilverOfRaidz2LosesNothing) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "d", VdevSpec::Type::kRaidz, 6, 2));
  std::vector<uint64_t> objs;
  {
    auto p = Pool::Create("sp", layout, pooltest::V23());
    ASSERT_UZFS_OK(p.status());
    pooltest::WriteObjects(**p, "sp", 64, kObjBytes, 4000, &objs);
    ASSERT_UZFS_OK((*p)->Export());
  }
  std::filesystem::remove(layout.data[0].children[3].path);
  PoolImportOptions o;
  o.fault_injectable = true;
  auto p = pooltest::ImportFrom(dir.path(), "sp", o);
  ASSERT_UZFS_OK(p.status());
  (*p)->SetScanSlice(std::chrono::milliseconds(1));
  const std::string fresh = NewDisk(dir.path(), "n3");
  ASSERT_UZFS_OK((*p)->ReplaceDevice(layout.data[0].children[3].path, fresh, false));
  for (int i = 0; i < 5000 && (*p)->scan_progress().phys.examined < (*p)->scan_progress().phys.to_examine / 4; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE((*p)->scan_progress().phys.scanning()) << "finished before the second disk could fail";
  FaultDevice* second = (*p)->LeafFaults(layout.data[0].children[1].path);
  ASSERT_NE(second, nullptr);
  second->Vanish();
  (*p)->SetScanSlice(std::chrono::milliseconds(50));
  (*p)->WaitScan();
  EXPECT_EQ((*p)->scan_progress().phys.state, ScanState::kFinished);
  EXPECT_EQ((*p)->scan_progress().phys.errors, 0u) << "a block was lost";
  EXPECT_FALSE(HasReplacing((*p)->Config().tree));
  pooltest::ExpectObjects(**p, "sp", objs, kObjBytes, 4000);
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  // Still two gone (d1, d3's place now holds n3): one more is within parity.
  std::filesystem::remove(layout.data[0].children[5].path);
  p = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  pooltest::ExpectObjects(**p, "sp", objs, kObjBytes, 4000);
  ASSERT_UZFS_OK((*p)->Export());
}

TEST(PoolResilver, Raidz3WithThreeDisksGoneReadsEveryBlock) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "d", VdevSpec::Type::kRaidz, 7, 3));
  std::vector<uint64_t> objs;
  {
    auto p = Pool::Create("sp", layout, pooltest::V23());
    ASSERT_UZFS_OK(p.status());
    pooltest::WriteObjects(**p, "sp", 24, kObjBytes, 5000, &objs);
    ASSERT_UZFS_OK((*p)->Export());
  }
  for (int i : {0, 3, 6}) std::filesystem::remove(layout.data[0].children[static_cast<size_t>(i)].path);
  auto p = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  EXPECT_EQ((*p)->root_vdev().state(), VdevState::kDegraded);
  pooltest::ExpectObjects(**p, "sp", objs, kObjBytes, 5000);
  ASSERT_UZFS_OK((*p)->StartScrub());
  (*p)->WaitScan();
  EXPECT_EQ((*p)->scan_progress().phys.errors, 0u);
  ASSERT_UZFS_OK((*p)->Export());
}

}  // namespace
}  // namespace uzfs
