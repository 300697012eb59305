// Hot spares taking over by themselves (pool_spares.cc): a raidz disk that
// vanishes, or keeps failing its I/O until the pool faults it, is stood in
// for by the pool's spare at the next txg, with no command: a spare vdev
// in its place, a resilver, the events that say so; afterwards the spare
// alone holds the failed disk's share (another disk can go). Detaching
// the failed disk keeps the spare for good; replacing it gives the spare
// back once the new disk is resilvered. A pool without a free spare just
// stays degraded.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_build.h"
#include "zfs/spa/label_io.h"
#include "zfs/vdev/file_device.h"

namespace uzfs {
namespace {

constexpr size_t kObjBytes = 256 * 1024;


bool HasEvent(Pool& p, const std::string& cls) {
  const auto events = p.Events();
  return std::any_of(events.begin(), events.end(), [&](const Pool::Event& e) { return e.cls == cls; });
}

const VdevNode* FindType(const VdevNode& n, const std::string& type) {
  if (n.type == type) return &n;
  for (const VdevNode& c : n.children)
    if (const VdevNode* f = FindType(c, type)) return f;
  return nullptr;
}

bool InTree(const VdevNode& tree, const std::string& path) {
  std::vector<const VdevNode*> leaves;
  CollectLeafNodes(tree, &leaves);
  return std::any_of(leaves.begin(), leaves.end(), [&](const VdevNode* n) { return n->path == path; });
}

// A raidz1 of four disks and one spare, with objects, imported with fault
// injection.
struct SparePool {
  test::TempDir dir;
  PoolLayout layout;
  std::vector<uint64_t> objs;
  std::unique_ptr<Pool> pool;

  explicit SparePool(bool with_spare = true) {
    layout.data.push_back(pooltest::Group(dir.path(), "d", VdevSpec::Type::kRaidz, 4, 1));
    if (with_spare) layout.spares.push_back(pooltest::Leaf(dir.path(), "spare"));
    {
      auto p = Pool::Create("sp", layout, pooltest::V23());
      EXPECT_TRUE(p.ok()) << p.status().ToString();
      pooltest::WriteObjects(**p, "sp", 24, kObjBytes, 60, &objs);
      EXPECT_TRUE((*p)->Export().ok());
    }
    PoolImportOptions o;
    o.fault_injectable = true;
    auto p = pooltest::ImportFrom(dir.path(), "sp", o);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    pool = std::move(p).value();
  }
  std::string disk(int i) const { return layout.data[0].children[static_cast<size_t>(i)].path; }
  std::string spare() const { return layout.spares[0].path; }
};

TEST(PoolSpare, AVanishedDiskIsStoodInForByTheSpare) {
  SparePool t;
  Pool& p = *t.pool;
  FaultDevice* d1 = p.LeafFaults(t.disk(1));
  ASSERT_NE(d1, nullptr);
  d1->Vanish();
  pooltest::ExpectObjects(p, "sp", t.objs, kObjBytes, 60);  // from parity; the reads find it gone
  ASSERT_UZFS_OK(p.Sync());       // the txg that brings the spare in
  p.WaitScan();
  const Pool::ConfigView c = p.Config();
  const VdevNode* g = FindType(c.tree, "spare");
  ASSERT_NE(g, nullptr) << "no spare vdev";
  ASSERT_EQ(g->children.size(), 2u);
  EXPECT_EQ(g->children[0].path, t.disk(1));
  EXPECT_EQ(g->children[1].path, t.spare());
  EXPECT_TRUE(g->children[1].is_spare);
  EXPECT_TRUE(HasEvent(p, "sysevent.fs.zfs.vdev_spare"));
  EXPECT_EQ(p.scan_progress().phys.func, ScanFunc::kResilver);
  EXPECT_EQ(p.scan_progress().phys.state, ScanState::kFinished);
  EXPECT_EQ(p.scan_progress().phys.errors, 0u);
  // The spare holds disk 1's share: another disk goes, all still reads.
  ASSERT_UZFS_OK(p.OfflineDevice(t.disk(3), true));
  pooltest::ExpectObjects(p, "sp", t.objs, kObjBytes, 60);
  ASSERT_UZFS_OK(p.OnlineDevice(t.disk(3)));
  p.WaitScan();
  // Detaching the failed disk keeps the spare for good.
  ASSERT_UZFS_OK(p.DetachDevice(t.disk(1)));
  const Pool::ConfigView after = p.Config();
  EXPECT_EQ(FindType(after.tree, "spare"), nullptr);
  EXPECT_TRUE(InTree(after.tree, t.spare()));
  EXPECT_TRUE(after.spares.empty());
  ASSERT_UZFS_OK(p.Export());
  t.pool.reset();
  pooltest::ExpectConsistent(t.dir.path(), "sp");
  auto again = pooltest::ImportFrom(t.dir.path(), "sp");
  ASSERT_UZFS_OK(again.status());
  pooltest::ExpectObjects(**again, "sp", t.objs, kObjBytes, 60);
  ASSERT_UZFS_OK((*again)->Export());
}

TEST(PoolSpare, ADiskThatKeepsFailingIsFaultedAndSparedThenReplaced) {
  SparePool t;
  Pool& p = *t.pool;
  FaultDevice* d2 = p.LeafFaults(t.disk(2));
  ASSERT_NE(d2, nullptr);
  // Every read of its data area fails; its label area still reads, so the
  // probe keeps it ONLINE: only the error count can take it out.
  d2->FailReads(FaultTrigger::Always(), FaultRange{4ull << 20, UINT64_MAX / 2});
  pooltest::ExpectObjects(p, "sp", t.objs, kObjBytes, 60);
  ASSERT_UZFS_OK(p.Sync());
  p.WaitScan();
  std::vector<Vdev*> leaves;
  p.root_vdev().CollectLeaves(&leaves);
  Vdev* faulted = nullptr;
  for (Vdev* v : leaves) {
    if (v->name() == t.disk(2)) faulted = v;
  }
  ASSERT_NE(faulted, nullptr);
  EXPECT_EQ(faulted->state(), VdevState::kFaulted);
  EXPECT_NE(FindType(p.Config().tree, "spare"), nullptr);
  EXPECT_EQ(p.scan_progress().phys.state, ScanState::kFinished);
  // The failed disk is replaced: the new one is resilvered, the spare
  // goes back to the list.
  const std::string fresh = pooltest::MakeFile(t.dir.path(), "n2");
  ASSERT_UZFS_OK(p.ReplaceDevice(t.disk(2), fresh, false));
  p.WaitScan();
  const Pool::ConfigView c = p.Config();
  EXPECT_EQ(FindType(c.tree, "spare"), nullptr);
  EXPECT_TRUE(InTree(c.tree, fresh));
  EXPECT_FALSE(InTree(c.tree, t.spare()));
  ASSERT_EQ(c.spares.size(), 1u);
  // Once that is on disk, the spare's label says it is a spare again (not
  // a member of the tree, which an import or another pool would believe).
  ASSERT_UZFS_OK(p.Sync());
  {
    auto dev = FileDevice::Open(t.spare(), FileDeviceOptions{.read_only = true, .exclusive = false});
    ASSERT_UZFS_OK(dev.status());
    auto labels = ReadDeviceLabels(**dev, 9);
    ASSERT_UZFS_OK(labels.status());
    auto state = labels->config.GetUint64("state");
    ASSERT_UZFS_OK(state.status());
    EXPECT_EQ(*state, kPoolStateSpare);
    EXPECT_FALSE(labels->config.GetNvList("vdev_tree").ok()) << "still a tree member's label";
    // Still the pool's, ready to stand in: no one else may take it.
    auto other = FileDevice::Open(t.spare(), FileDeviceOptions{.read_only = false, .exclusive = true});
    EXPECT_EQ(other.status().code(), Code::kBusy) << other.status().ToString();
  }
  ASSERT_UZFS_OK(p.OfflineDevice(t.disk(0), true));
  pooltest::ExpectObjects(p, "sp", t.objs, kObjBytes, 60);
  ASSERT_UZFS_OK(p.OnlineDevice(t.disk(0)));
  p.WaitScan();
  // And the spare, given back, stands in again when the next disk goes.
  p.LeafFaults(t.disk(3))->Vanish();
  pooltest::ExpectObjects(p, "sp", t.objs, kObjBytes, 60);
  ASSERT_UZFS_OK(p.Sync());
  p.WaitScan();
  EXPECT_TRUE(InTree(p.Config().tree, t.spare()));
  ASSERT_UZFS_OK(p.Export());
}

TEST(PoolSpare, OfflineWithFaultBringsTheSpareInAndStaysAcrossImport) {
  SparePool t;
  Pool& p = *t.pool;
  ASSERT_UZFS_OK(p.OfflineDevice(t.disk(0), /*temporary=*/false, /*fault=*/true));
  ASSERT_UZFS_OK(p.Sync());
  p.WaitScan();
  EXPECT_NE(FindType(p.Config().tree, "spare"), nullptr);
  ASSERT_UZFS_OK(p.Export());
  t.pool.reset();
  auto again = pooltest::ImportFrom(t.dir.path(), "sp");
  ASSERT_UZFS_OK(again.status());
  std::vector<Vdev*> leaves;
  (*again)->root_vdev().CollectLeaves(&leaves);
  EXPECT_EQ(leaves[0]->state(), VdevState::kFaulted);
  pooltest::ExpectObjects(**again, "sp", t.objs, kObjBytes, 60);
  ASSERT_UZFS_OK((*again)->Export());
}

TEST(PoolSpare, WithoutASpareThePoolStaysDegraded) {
  SparePool t(/*with_spare=*/false);
  Pool& p = *t.pool;
  p.LeafFaults(t.disk(0))->Vanish();
  pooltest::ExpectObjects(p, "sp", t.objs, kObjBytes, 60);
  ASSERT_UZFS_OK(p.Sync());
  EXPECT_EQ(p.root_vdev().state(), VdevState::kDegraded);
  EXPECT_EQ(FindType(p.Config().tree, "spare"), nullptr);
  EXPECT_FALSE(HasEvent(p, "sysevent.fs.zfs.vdev_spare"));
  ASSERT_UZFS_OK(p.Export());
}

TEST(PoolSpare, ClearBringsAFaultedDiskBack) {
  SparePool t(/*with_spare=*/false);
  Pool& p = *t.pool;
  FaultDevice* d1 = p.LeafFaults(t.disk(1));
  ASSERT_NE(d1, nullptr);
  d1->FailReads(FaultTrigger::Always(), FaultRange{4ull << 20, UINT64_MAX / 2});
  pooltest::ExpectObjects(p, "sp", t.objs, kObjBytes, 60);
  ASSERT_UZFS_OK(p.Sync());
  std::vector<Vdev*> leaves;
  p.root_vdev().CollectLeaves(&leaves);
  EXPECT_EQ(leaves[1]->state(), VdevState::kFaulted);
  EXPECT_EQ(p.root_vdev().state(), VdevState::kDegraded);
  // Faulting another would leave too little: it stays in service.
  p.LeafFaults(t.disk(2))->FailReads(FaultTrigger::Always(), FaultRange{4ull << 20, UINT64_MAX / 2});
  (void)p.ObjsetForRead("sp");
  d1->ClearFaults();
  p.LeafFaults(t.disk(2))->ClearFaults();
  ASSERT_UZFS_OK(p.ClearErrors(t.disk(1)));
  p.WaitScan();
  EXPECT_EQ(leaves[1]->state(), VdevState::kOnline);
  EXPECT_EQ(p.root_vdev().state(), VdevState::kOnline);
  ASSERT_UZFS_OK(p.OfflineDevice(t.disk(0), true));
  pooltest::ExpectObjects(p, "sp", t.objs, kObjBytes, 60);
  ASSERT_UZFS_OK(p.Export());
}

TEST(PoolSpare, AutoreplaceTakesANewDiskAtTheSamePath) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "d", VdevSpec::Type::kRaidz, 3, 1));
  std::vector<uint64_t> objs;
  {
    auto p = Pool::Create("sp", layout, pooltest::V23());
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->SetPoolProps({{"autoreplace", "on"}}));
    pooltest::WriteObjects(**p, "sp", 12, kObjBytes, 80, &objs);
    ASSERT_UZFS_OK((*p)->Export());
  }
  const std::string d1 = layout.data[0].children[1].path;
  std::filesystem::remove(d1);
  auto p = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  EXPECT_EQ((*p)->root_vdev().state(), VdevState::kDegraded);
  pooltest::MakeFile(dir.path(), "d1");  // a new, blank disk in its bay
  // Within a few seconds, with no command, it is replaced and resilvered.
  bool whole = false;
  for (int i = 0; i < 300 && !whole; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const ScanPhys s = (*p)->scan_progress().phys;
    whole = (*p)->root_vdev().state() == VdevState::kOnline && s.func == ScanFunc::kResilver &&
            s.state == ScanState::kFinished;
  }
  ASSERT_TRUE(whole) << "not replaced by itself";
  EXPECT_EQ(FindType((*p)->Config().tree, "replacing"), nullptr);
  EXPECT_TRUE(InTree((*p)->Config().tree, d1));
  ASSERT_UZFS_OK((*p)->OfflineDevice(layout.data[0].children[0].path, true));
  pooltest::ExpectObjects(**p, "sp", objs, kObjBytes, 80);
  ASSERT_UZFS_OK((*p)->Export());
}

TEST(PoolSpare, WithoutAutoreplaceANewDiskWaitsForTheAdmin) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "d", VdevSpec::Type::kRaidz, 3, 1));
  std::vector<uint64_t> objs;
  {
    auto p = Pool::Create("sp", layout, pooltest::V23());
    ASSERT_UZFS_OK(p.status());
    pooltest::WriteObjects(**p, "sp", 4, kObjBytes, 90, &objs);
    ASSERT_UZFS_OK((*p)->Export());
  }
  std::filesystem::remove(layout.data[0].children[1].path);
  auto p = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  pooltest::MakeFile(dir.path(), "d1");
  std::this_thread::sleep_for(std::chrono::seconds(3));  // past one look (every 2 s)
  EXPECT_EQ((*p)->root_vdev().state(), VdevState::kDegraded);
  EXPECT_EQ((*p)->scan_progress().phys.func, ScanFunc::kNone);
  ASSERT_UZFS_OK((*p)->Export());
}

}  // namespace
}  // namespace uzfs
