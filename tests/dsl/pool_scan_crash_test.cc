// A scrub killed with SIGKILL, again and again, while the pool is being
// written: each child process imports the pool, scrubs it (going on from
// the record the last one left) and writes and syncs new objects until it
// is killed at a random moment. After each kill the scan record on disk
// shows the scrub further on, never back at the start; at the end the
// scrub completes with no error (a block freed and reused under it would
// show up as one), every object whose sync returned reads back whole, and
// the pool's blocks and space maps agree.
//
// The same for a resilver: a raidz1 disk dies, the first child starts
// replacing it, and every child is killed mid-resilver while writing; the
// resilver goes on from its record after each import (the new disk's DTL
// on disk naming what it misses meanwhile), and at the end the new disk
// alone (with one other) serves every synced object and its DTL is empty.
//
// UZFS_STRESS_OPS sets the number of kills (default 4).
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <random>
#include <thread>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"

namespace uzfs {
namespace {

constexpr size_t kSize = 192 * 1024;

struct Synced {
  uint64_t object = 0, seed = 0;
};

// The child: never returns into gtest. Reports each object whose sync
// returned on `fd`.
// With `replace_old` set, the child replaces that device by `replace_new`
// unless an earlier child did, instead of starting a scrub.
int ChildMain(const std::filesystem::path& dir, uint64_t seed, int fd, const std::string& replace_old = "",
              const std::string& replace_new = "") {
  // A slow scan, its place recorded at every position, from its first
  // slice on.
  PoolImportOptions slow;
  slow.scan_slice = std::chrono::milliseconds(1);
  slow.scan_window_blocks = 1;
  auto p = pooltest::ImportFrom(dir, "sk", slow);
  if (!p.ok()) return 10;
  const ScanPhys s = (*p)->scan_progress().phys;
  if (!replace_old.empty()) {
    bool replaced = false;
    std::vector<Vdev*> leaves;
    (*p)->root_vdev().CollectLeaves(&leaves);
    for (Vdev* v : leaves) replaced = replaced || v->name() == replace_new;
    if (!replaced && !(*p)->ReplaceDevice(replace_old, replace_new, false).ok()) return 18;
  } else if (!s.running() && !(*p)->StartScrub().ok()) {
    // (A resilver import found needed runs instead: a kill between the
    // uberblock writes of a txg left a leaf one txg behind.)
    return 11;
  }
  const Synced ready{0, 0};  // the scan is on disk: the kill may come
  if (::write(fd, &ready, sizeof ready) != static_cast<ssize_t>(sizeof ready)) return 17;
  auto os = (*p)->Objset("sk");
  if (!os.ok()) return 12;
  for (uint64_t i = 0;; i++) {
    auto tx = (*p)->Begin(kSize);
    if (!tx.ok()) return 13;
    ObjectProps op;
    op.indblkshift = 14;
    auto obj = (*os)->AllocateObject(op, tx->txg());
    if (!obj.ok()) return 14;
    if (!(*os)->Write(*obj, 0, test::RandomBytes(kSize, seed + i), tx->txg()).ok()) return 15;
    tx->Commit();
    if (!(*p)->Sync().ok()) return 16;
    const Synced rec{*obj, seed + i};
    if (::write(fd, &rec, sizeof rec) != static_cast<ssize_t>(sizeof rec)) return 17;
  }
}


// Runs `child` (which reports on the fd it gets) in a forked process, waits
// until it says its scan runs and then that `after_syncs` objects are
// synced (so the scan's record has reached the disk with some progress;
// at most a minute), lets it go on a random 10 .. 10 + spread_ms more,
// kills it with SIGKILL and appends every object it reported synced to
// *durable. Returns the child's wait status.
int RunAndKill(const std::function<int(int)>& child, std::mt19937_64& rng, int spread_ms, size_t after_syncs,
               std::vector<Synced>* durable) {
  const test::KilledChild k = test::RunAndKill(
      child, (1 + after_syncs) * sizeof(Synced),
      std::chrono::milliseconds(10 + static_cast<int>(rng() % static_cast<unsigned>(spread_ms))));
  for (size_t at = 0; at + sizeof(Synced) <= k.output.size(); at += sizeof(Synced)) {
    Synced rec;
    std::memcpy(&rec, k.output.data() + at, sizeof rec);
    if (rec.object != 0) durable->push_back(rec);  // (0: the "scan runs" record)
  }
  return k.status;
}

TEST(PoolScanCrash, KilledMidScrubGoesOnAndLosesNothing) {
  const char* ops = std::getenv("UZFS_STRESS_OPS");
  const int kills = ops ? std::max(1, std::atoi(ops) / 100) : 4;
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "m", VdevSpec::Type::kMirror, 2));
  std::vector<Synced> durable;
  {
    auto p = Pool::Create("sk", layout, pooltest::V23());
    ASSERT_UZFS_OK(p.status());
    std::vector<uint64_t> objs;
    pooltest::WriteObjects(**p, "sk", 120, kSize, 5000, &objs);
    for (size_t i = 0; i < objs.size(); i++) durable.push_back({objs[i], 5000 + i});
    ASSERT_UZFS_OK((*p)->Export());
  }
  std::mt19937_64 rng(11);
  uint64_t last_examined = 0, start_time = 0, to_examine = 0;
  // A finished scrub is followed by a new one, which may start within the
  // same second (the child starts one when none runs after its import,
  // and the scan thread may have finished the old one by then): a scrub is
  // known by its start time and its to_examine.
  bool last_scanning = false;
  int resumed_mid_scan = 0;  // kills that left a scrub part way with its place on disk
  for (int k = 0; k < kills; k++) {
    // Once two txgs have carried the scrub's record (its place moves a
    // window at a time; a sanitizer build syncs slowly), a random while.
    const int status = RunAndKill([&](int fd) { return ChildMain(dir.path(), 100000 * (k + 1), fd); }, rng, 400,
                                  /*after_syncs=*/2, &durable);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the child ended by itself with " << WEXITSTATUS(status);
    // What the record on disk says now (a read-only look changes nothing).
    PoolImportOptions ro;
    ro.readonly = true;
    auto look = pooltest::ImportFrom(dir.path(), "sk", ro);
    ASSERT_UZFS_OK(look.status());
    const ScanPhys s = (*look)->scan_progress().phys;
    if (s.func == ScanFunc::kResilver) {
      // The scrub ended and the resilver import found needed followed it.
      EXPECT_EQ(s.errors, 0u) << "kill " << k;
      last_scanning = false;
      continue;
    }
    ASSERT_EQ(s.func, ScanFunc::kScrub) << "kill " << k;
    if (s.start_time == start_time && s.to_examine == to_examine && s.scanning() && last_scanning) {
      EXPECT_GE(s.examined, last_examined) << "the scrub went back after kill " << k;
    }
    std::cout << "after kill " << k << ": " << (s.scanning() ? "scanning" : "finished") << ", examined "
              << s.examined << " of " << s.to_examine << ", bookmark " << s.bookmark.objset << ":"
              << s.bookmark.object << ":" << s.bookmark.blkid << ", " << durable.size() << " objects synced\n";
    if (s.scanning() && s.examined > 0 && s.bookmark != ScanBookmark{}) resumed_mid_scan++;
    start_time = s.start_time;
    to_examine = s.to_examine;
    last_examined = s.examined;
    last_scanning = s.scanning();
    EXPECT_EQ(s.errors, 0u) << "kill " << k;
  }
  EXPECT_GT(resumed_mid_scan, 0) << "no kill caught a scrub part way: the test proved nothing";
  auto p = pooltest::ImportFrom(dir.path(), "sk");
  ASSERT_UZFS_OK(p.status());
  if ((*p)->scan_progress().phys.scanning()) (*p)->WaitScan();
  EXPECT_EQ((*p)->scan_progress().phys.errors, 0u);
  // One more, whole, on the final pool.
  ASSERT_UZFS_OK((*p)->StartScrub());
  (*p)->WaitScan();
  EXPECT_EQ((*p)->scan_progress().phys.state, ScanState::kFinished);
  EXPECT_EQ((*p)->scan_progress().phys.errors, 0u);
  auto os = (*p)->ObjsetForRead("sk");
  ASSERT_UZFS_OK(os.status());
  for (const Synced& s : durable) {
    std::vector<uint8_t> got(kSize);
    ASSERT_UZFS_OK((*os)->Read(s.object, 0, got));
    ASSERT_EQ(got, test::RandomBytes(kSize, s.seed)) << "object " << s.object;
  }
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "sk", /*check_allocated_total=*/false);
}

TEST(PoolScanCrash, KilledMidResilverGoesOnAndTheNewDiskEndsWhole) {
  const char* ops = std::getenv("UZFS_STRESS_OPS");
  const int kills = ops ? std::max(1, std::atoi(ops) / 100) : 4;
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "r", VdevSpec::Type::kRaidz, 3, 1));
  std::vector<Synced> durable;
  {
    auto p = Pool::Create("sk", layout, pooltest::V23());
    ASSERT_UZFS_OK(p.status());
    std::vector<uint64_t> objs;
    pooltest::WriteObjects(**p, "sk", 320, kSize, 7000, &objs);
    for (size_t i = 0; i < objs.size(); i++) durable.push_back({objs[i], 7000 + i});
    ASSERT_UZFS_OK((*p)->Export());
  }
  const std::string dead = layout.data[0].children[1].path;
  std::filesystem::remove(dead);
  const std::string fresh = pooltest::MakeFile(dir.path(), "n1");
  std::mt19937_64 rng(12);
  uint64_t last_examined = 0, start_time = 0;
  bool last_scanning = false;
  int resumed_mid_scan = 0;
  for (int k = 0; k < kills; k++) {
    // Once two txgs have carried the resilver's record, a short random
    // while: the resilver is fast (and a sanitizer build slow to sync).
    const int status = RunAndKill(
        [&](int fd) { return ChildMain(dir.path(), 200000 * (k + 1), fd, dead, fresh); }, rng, 150,
        /*after_syncs=*/2, &durable);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the child ended by itself with " << WEXITSTATUS(status);
    PoolImportOptions ro;
    ro.readonly = true;
    auto look = pooltest::ImportFrom(dir.path(), "sk", ro);
    ASSERT_UZFS_OK(look.status());
    const ScanPhys s = (*look)->scan_progress().phys;
    if (s.func == ScanFunc::kNone) continue;  // killed before the replace landed
    ASSERT_EQ(s.func, ScanFunc::kResilver) << "kill " << k;
    if (s.start_time == start_time && s.scanning() && last_scanning) {
      EXPECT_GE(s.examined, last_examined) << "the resilver went back after kill " << k;
    }
    std::cout << "after kill " << k << ": " << (s.scanning() ? "resilvering" : "finished") << ", examined "
              << s.examined << " of " << s.to_examine << ", bookmark " << s.bookmark.objset << ":"
              << s.bookmark.object << ":" << s.bookmark.blkid << ", " << durable.size() << " objects synced\n";
    if (s.scanning() && s.examined > 0 && s.bookmark != ScanBookmark{}) resumed_mid_scan++;
    // While it resilvers, the new disk's DTL on disk says it misses txgs.
    std::vector<Vdev*> now;
    (*look)->root_vdev().CollectLeaves(&now);
    for (Vdev* v : now) {
      if (v->name() == fresh && s.scanning()) {
        EXPECT_FALSE((*look)->SyncedDtl(v->guid()).empty()) << "kill " << k;
      }
    }
    start_time = s.start_time;
    last_examined = s.examined;
    last_scanning = s.scanning();
    EXPECT_EQ(s.errors, 0u) << "kill " << k;
  }
  EXPECT_GT(resumed_mid_scan, 0) << "no kill caught a resilver part way: the test proved nothing";
  {
    auto p = pooltest::ImportFrom(dir.path(), "sk");
    ASSERT_UZFS_OK(p.status());
    if ((*p)->scan_progress().phys.scanning()) (*p)->WaitScan();
    EXPECT_EQ((*p)->scan_progress().phys.func, ScanFunc::kResilver);
    EXPECT_EQ((*p)->scan_progress().phys.state, ScanState::kFinished);
    EXPECT_EQ((*p)->scan_progress().phys.errors, 0u);
    std::vector<Vdev*> leaves;
    (*p)->root_vdev().CollectLeaves(&leaves);
    ASSERT_EQ(leaves.size(), 3u);
    EXPECT_EQ(leaves[1]->name(), fresh);
    ASSERT_UZFS_OK((*p)->Sync());
    EXPECT_TRUE((*p)->SyncedDtl(leaves[1]->guid()).empty()) << "whole: its DTL emptied";
    ASSERT_UZFS_OK((*p)->Export());
  }
  pooltest::ExpectConsistent(dir.path(), "sk");
  // Another disk goes: the new one must hold its share of every object.
  std::filesystem::remove(layout.data[0].children[2].path);
  auto p = pooltest::ImportFrom(dir.path(), "sk");
  ASSERT_UZFS_OK(p.status());
  auto os = (*p)->ObjsetForRead("sk");
  ASSERT_UZFS_OK(os.status());
  for (const Synced& s : durable) {
    std::vector<uint8_t> got(kSize);
    ASSERT_UZFS_OK((*os)->Read(s.object, 0, got));
    ASSERT_EQ(got, test::RandomBytes(kSize, s.seed)) << "object " << s.object;
  }
  ASSERT_UZFS_OK((*p)->Export());
}

}  // namespace
}  // namespace uzfs
