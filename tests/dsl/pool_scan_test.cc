// The pool's scrub (Pool::StartScrub and friends, pool_scan.cc): it finds
// and repairs damage on a redundant pool, counts what it cannot repair and
// lists it as a data error, refuses what makes no sense with ZFS's words,
// and goes on from where it was after the pool is closed mid-scan (less is
// read the second time), ending with a pool every check finds whole.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/vdev/fault_device.h"

namespace uzfs {
namespace {

constexpr size_t kRecord = 128 * 1024;

// The first 512 bytes of record `r` of object seed `seed` (what OverwriteAll
// looks for on a device).
std::vector<uint8_t> Needle(uint64_t seed, size_t r = 0) {
  const std::vector<uint8_t> data = test::RandomBytes(2 * kRecord, seed);
  return std::vector<uint8_t>(data.begin() + r * kRecord, data.begin() + r * kRecord + 512);
}

// How many times `needle` occurs in the file (reads it whole; test devices
// are small).
int Count(const std::string& file, const std::vector<uint8_t>& needle) {
  const std::string text = test::ReadText(file);
  int n = 0;
  const std::string_view hay(text);
  const std::string_view pin(reinterpret_cast<const char*>(needle.data()), needle.size());
  for (size_t at = hay.find(pin); at != std::string_view::npos; at = hay.find(pin, at + 1)) n++;
  return n;
}

void ExpectObjectsIntact(Pool& p, const std::string& ds, const std::vector<uint64_t>& objs, uint64_t seed) {
  auto os = p.ObjsetForRead(ds);
  ASSERT_UZFS_OK(os.status());
  for (size_t i = 0; i < objs.size(); i++) {
    std::vector<uint8_t> got(2 * kRecord);
    ASSERT_UZFS_OK((*os)->Read(objs[i], 0, got));
    EXPECT_EQ(got, test::RandomBytes(2 * kRecord, seed + i)) << "object " << objs[i];
  }
}

// A version-23 pool "sp" over `layout` holding `n` objects of two records
// (seeds seed, seed + 1, ...), exported.
void MakeExportedPool(const PoolLayout& layout, int n, uint64_t seed, std::vector<uint64_t>* objs) {
  auto p = Pool::Create("sp", layout, pooltest::V23());
  ASSERT_UZFS_OK(p.status());
  pooltest::WriteObjects(**p, "sp", n, 2 * kRecord, seed, objs);
  ASSERT_UZFS_OK((*p)->Export());
}

TEST(PoolScrub, RepairsADamagedMirrorSide) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "m", VdevSpec::Type::kMirror, 2));
  const std::string side0 = layout.data[0].children[0].path;
  std::vector<uint64_t> objs;
  ASSERT_NO_FATAL_FAILURE(MakeExportedPool(layout, 12, 100, &objs));
  // Five records damaged on one side only.
  for (uint64_t s : {100, 102, 105, 107, 111}) ASSERT_EQ(test::OverwriteAll(side0, Needle(s, 1)), 1);
  auto p = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  EXPECT_EQ((*p)->scan_progress().phys.state, ScanState::kNone);
  ASSERT_UZFS_OK((*p)->StartScrub());
  (*p)->WaitScan();
  const Pool::ScanProgress done = (*p)->scan_progress();
  EXPECT_EQ(done.phys.func, ScanFunc::kScrub);
  EXPECT_EQ(done.phys.state, ScanState::kFinished);
  EXPECT_EQ(done.phys.errors, 0u);
  EXPECT_GE(done.phys.processed, 5 * kRecord) << "repaired bytes";
  EXPECT_GE(done.phys.examined, 12 * 2 * kRecord) << "every record (a mirror block counts once)";
  EXPECT_GE(done.phys.end_time, done.phys.start_time);
  // The damaged side holds the data again.
  for (uint64_t s : {100, 102, 105, 107, 111}) EXPECT_EQ(Count(side0, Needle(s, 1)), 1);
  ExpectObjectsIntact(**p, "sp", objs, 100);  // read from the repaired side
  // A second scrub finds nothing to repair.
  ASSERT_UZFS_OK((*p)->StartScrub());
  (*p)->WaitScan();
  EXPECT_EQ((*p)->scan_progress().phys.errors, 0u);
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  // The finished scrub's record survives the export.
  auto again = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(again.status());
  EXPECT_EQ((*again)->scan_progress().phys.state, ScanState::kFinished);
  ASSERT_UZFS_OK((*again)->Export());
  pooltest::ExpectConsistent(dir.path(), "sp");
}

TEST(PoolScrub, CountsAndListsWhatItCannotRepair) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(dir.path(), "d0"));
  std::vector<uint64_t> objs;
  ASSERT_NO_FATAL_FAILURE(MakeExportedPool(layout, 3, 200, &objs));
  ASSERT_EQ(test::OverwriteAll(layout.data[0].path, Needle(201)), 1);
  auto p = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  ASSERT_UZFS_OK((*p)->StartScrub());
  (*p)->WaitScan();
  const Pool::ScanProgress done = (*p)->scan_progress();
  EXPECT_EQ(done.phys.state, ScanState::kFinished);
  EXPECT_EQ(done.phys.errors, 1u);
  auto errs = (*p)->DataErrors();
  ASSERT_UZFS_OK(errs.status());
  ASSERT_EQ(errs->size(), 1u);
  EXPECT_EQ((*errs)[0].object, objs[1]);
  EXPECT_EQ((*errs)[0].level, 0);
  EXPECT_EQ((*errs)[0].blkid, 0u);
  // The damaged record written anew: still listed until a scrub finds the
  // object whole, then the list is empty, also after an import.
  {
    auto os = (*p)->Objset("sp");
    ASSERT_UZFS_OK(os.status());
    auto tx = (*p)->Begin(2 * kRecord);
    ASSERT_UZFS_OK(tx.status());
    ASSERT_UZFS_OK((*os)->Write(objs[1], 0, test::RandomBytes(2 * kRecord, 999), tx->txg()));
    tx->Commit();
    ASSERT_UZFS_OK((*p)->Sync());
  }
  errs = (*p)->DataErrors();
  ASSERT_UZFS_OK(errs.status());
  EXPECT_EQ(errs->size(), 1u);
  ASSERT_UZFS_OK((*p)->StartScrub());
  (*p)->WaitScan();
  EXPECT_EQ((*p)->scan_progress().phys.errors, 0u);
  ASSERT_UZFS_OK((*p)->Sync());
  errs = (*p)->DataErrors();
  ASSERT_UZFS_OK(errs.status());
  EXPECT_TRUE(errs->empty()) << errs->size() << " still listed after a clean scrub";
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  auto again = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(again.status());
  errs = (*again)->DataErrors();
  ASSERT_UZFS_OK(errs.status());
  EXPECT_TRUE(errs->empty());
  ASSERT_UZFS_OK((*again)->Export());
  again->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
}

TEST(PoolScrub, RefusesWhatMakesNoSense) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(dir.path(), "d0"));
  std::vector<uint64_t> objs;
  auto p = Pool::Create("sp", layout, pooltest::V23());
  ASSERT_UZFS_OK(p.status());
  pooltest::WriteObjects(**p, "sp", 40, 2 * kRecord, 300, &objs);
  ASSERT_UZFS_OK((*p)->Sync());
  Status none = (*p)->PauseScrub();
  EXPECT_EQ(none.code(), Code::kNotFound);
  EXPECT_EQ(none.message(), "there is no active scrub");
  EXPECT_EQ((*p)->CancelScrub().code(), Code::kNotFound);
  // A scrub slow enough to be caught running: each slice visits one
  // position and stops.
  (*p)->SetScanSlice(std::chrono::milliseconds(0));
  ASSERT_UZFS_OK((*p)->StartScrub());
  const uint64_t started = (*p)->scan_progress().phys.start_time;
  ASSERT_UZFS_OK((*p)->PauseScrub());
  EXPECT_TRUE((*p)->scan_progress().phys.paused());
  (*p)->WaitScan();  // returns: a paused scrub is not running
  const uint64_t at_pause = (*p)->scan_progress().phys.examined;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ((*p)->scan_progress().phys.examined, at_pause) << "a paused scrub reads nothing";
  ASSERT_UZFS_OK((*p)->StartScrub());  // resumes the paused one
  EXPECT_FALSE((*p)->scan_progress().phys.paused());
  EXPECT_EQ((*p)->scan_progress().phys.start_time, started) << "resumed, not started again";
  Status twice = (*p)->StartScrub();
  EXPECT_EQ(twice.code(), Code::kBusy);
  EXPECT_EQ(twice.message(), "currently scrubbing; use 'zpool scrub -s' to cancel current scrub");
  ASSERT_UZFS_OK((*p)->CancelScrub());
  EXPECT_EQ((*p)->scan_progress().phys.state, ScanState::kCanceled);
  (*p)->WaitScan();
  EXPECT_EQ((*p)->CancelScrub().code(), Code::kNotFound);
  ASSERT_UZFS_OK((*p)->Export());
  // Read-only: nothing can be started.
  PoolImportOptions ro;
  ro.readonly = true;
  auto r = pooltest::ImportFrom(dir.path(), "sp", ro);
  ASSERT_UZFS_OK(r.status());
  EXPECT_EQ((*r)->StartScrub().code(), Code::kNotSupported);
}

TEST(PoolScrub, GoesOnAfterACloseFromWhereItWas) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "m", VdevSpec::Type::kMirror, 2));
  std::vector<uint64_t> objs;
  uint64_t first_run = 0;
  {
    auto p = Pool::Create("sp", layout, pooltest::V23());
    ASSERT_UZFS_OK(p.status());
    for (int i = 0; i < 4; i++) pooltest::WriteObjects(**p, "sp", 50, 2 * kRecord, 1000 + 50 * i, &objs);
    ASSERT_UZFS_OK((*p)->Sync());
    (*p)->SetScanSlice(std::chrono::milliseconds(0));
    ASSERT_UZFS_OK((*p)->StartScrub());
    // Close (as a crash would, without export) once part of it is done.
    const uint64_t to_examine = (*p)->scan_progress().phys.to_examine;
    for (int i = 0; i < 5000; i++) {
      const Pool::ScanProgress now = (*p)->scan_progress();
      if (now.phys.examined > to_examine / 4 || !now.phys.scanning()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    first_run = (*p)->scan_progress().phys.examined;
    ASSERT_TRUE((*p)->scan_progress().phys.scanning()) << "finished before it could be interrupted";
  }
  ASSERT_GT(first_run, 0u);
  {
    // Read-only, the record says scanning but nothing runs it: waiting
    // returns at once instead of forever.
    PoolImportOptions ro;
    ro.readonly = true;
    auto r = pooltest::ImportFrom(dir.path(), "sp", ro);
    ASSERT_UZFS_OK(r.status());
    EXPECT_TRUE((*r)->scan_progress().phys.scanning());
    (*r)->WaitScan();
  }
  auto p = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(p.status());
  const Pool::ScanProgress resumed = (*p)->scan_progress();
  EXPECT_TRUE(resumed.phys.scanning());
  EXPECT_NE(resumed.phys.bookmark, ScanBookmark{}) << "it must go on from its place, not from the start";
  EXPECT_GT(resumed.phys.examined, 0u);
  (*p)->WaitScan();
  const Pool::ScanProgress done = (*p)->scan_progress();
  EXPECT_EQ(done.phys.state, ScanState::kFinished);
  EXPECT_EQ(done.phys.errors, 0u);
  // Less was read after the import than the whole pool holds.
  EXPECT_LT(done.pass_examined, done.phys.examined);
  EXPECT_GT(done.pass_examined, 0u);
  ExpectObjectsIntact(**p, "sp", objs, 1000);
  ASSERT_UZFS_OK((*p)->Export());
  pooltest::ExpectConsistent(dir.path(), "sp");
}

TEST(PoolScrub, ADeviceThatDiesMidScrubLosesNothingOnRaidz2) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "r", VdevSpec::Type::kRaidz, 6, 2));
  PoolCreateOptions o = pooltest::V23();
  o.fault_injectable = true;
  auto p = Pool::Create("sp", layout, o);
  ASSERT_UZFS_OK(p.status());
  std::vector<uint64_t> objs;
  pooltest::WriteObjects(**p, "sp", 60, 2 * kRecord, 400, &objs);
  ASSERT_UZFS_OK((*p)->Sync());
  // A second device returns garbage for everything it reads: with one
  // gone and one lying, raidz2 still has what it needs.
  FaultDevice* liar = (*p)->LeafFaults(layout.data[0].children[4].path);
  ASSERT_NE(liar, nullptr);
  liar->CorruptReads(FaultTrigger::Always(), {}, 0xA5);
  (*p)->SetScanSlice(std::chrono::milliseconds(0));
  ASSERT_UZFS_OK((*p)->StartScrub());
  for (int i = 0; i < 5000 && (*p)->scan_progress().phys.examined < (*p)->scan_progress().phys.to_examine / 3; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE((*p)->scan_progress().phys.scanning()) << "finished before the device could die";
  FaultDevice* dying = (*p)->LeafFaults(layout.data[0].children[1].path);
  ASSERT_NE(dying, nullptr);
  dying->Vanish();
  (*p)->SetScanSlice(std::chrono::milliseconds(50));
  (*p)->WaitScan();
  const Pool::ScanProgress done = (*p)->scan_progress();
  EXPECT_EQ(done.phys.state, ScanState::kFinished);
  EXPECT_EQ(done.phys.errors, 0u) << "no block was lost";
  auto errs = (*p)->DataErrors();
  ASSERT_UZFS_OK(errs.status());
  EXPECT_TRUE(errs->empty());
  ExpectObjectsIntact(**p, "sp", objs, 400);
}

// The sorted scan gathers a window of block pointers before it reads
// them: blocks freed in between, their space taken by new blocks, must be
// neither read as damaged nor "repaired" over the new data.
TEST(PoolScrub, BlocksFreedAndReusedWhileQueuedAreLeftAlone) {
  test::TempDir dir;
  PoolLayout layout;
  // Small enough that the second set of objects must reuse the first's space.
  layout.data.push_back(pooltest::Group(dir.path(), "m", VdevSpec::Type::kMirror, 2, 0, 64ull << 20));
  auto p = Pool::Create("sp", layout, pooltest::V23());
  ASSERT_UZFS_OK(p.status());
  Pool& pool = **p;
  std::vector<uint64_t> first, second;
  pooltest::WriteObjects(pool, "sp", 140, 2 * kRecord, 100, &first);  // 35 MiB of 60
  ASSERT_UZFS_OK(pool.Sync());
  int windows = 0;
  pool.SetScanWindowHook([&] {
    if (windows++ > 0) return;
    // Everything the window holds is freed, and new objects fill the space.
    auto os = pool.Objset("sp");
    ASSERT_UZFS_OK(os.status());
    {
      auto tx = pool.Begin(0);
      ASSERT_UZFS_OK(tx.status());
      for (uint64_t obj : first) ASSERT_UZFS_OK((*os)->FreeObject(obj, tx->txg()));
      tx->Commit();
    }
    for (int i = 0; i < 4; i++) ASSERT_UZFS_OK(pool.Sync());  // past the deferred frees
    pooltest::WriteObjects(pool, "sp", 140, 2 * kRecord, 900, &second);
    ASSERT_UZFS_OK(pool.Sync());
  });
  ASSERT_UZFS_OK(pool.StartScrub());
  pool.WaitScan();
  EXPECT_GE(windows, 1);
  ASSERT_EQ(second.size(), 140u);
  const Pool::ScanProgress done = pool.scan_progress();
  EXPECT_EQ(done.phys.state, ScanState::kFinished);
  EXPECT_EQ(done.phys.errors, 0u);
  auto errs = pool.DataErrors();
  ASSERT_UZFS_OK(errs.status());
  EXPECT_TRUE(errs->empty());
  pooltest::ExpectObjects(pool, "sp", second, 2 * kRecord, 900);
  // And a scrub of the pool as it is now finds nothing wrong.
  pool.SetScanWindowHook(nullptr);
  ASSERT_UZFS_OK(pool.StartScrub());
  pool.WaitScan();
  EXPECT_EQ(pool.scan_progress().phys.errors, 0u);
  ASSERT_UZFS_OK(pool.Export());
}

}  // namespace
}  // namespace uzfs
