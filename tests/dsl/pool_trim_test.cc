// The pool's manual trim (Pool::StartTrim and friends, pool_trim.cc): it
// gives the free space of a raidz back to the files under it while new
// objects are written and synced, touching no block of the pool (every
// object reads back, our zdb -b finds the pool whole and nothing leaked),
// cancels and refuses what makes no sense with ZFS's words. With
// autotrim=on, freed space goes back by itself, and the setting holds
// across an import.
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"

namespace uzfs {
namespace {

uint64_t AllocatedBytes(const VdevSpec& group) {
  uint64_t sum = 0;
  for (const VdevSpec& c : group.children) {
    struct stat st;
    if (::stat(c.path.c_str(), &st) == 0) sum += static_cast<uint64_t>(st.st_blocks) * 512;
  }
  return sum;
}

// Frees objects of dataset "sp" in one transaction.
void FreeObjects(Pool& pool, const std::vector<uint64_t>& objs) {
  auto os = pool.Objset("sp");
  ASSERT_UZFS_OK(os.status());
  auto tx = pool.Begin(0);
  ASSERT_UZFS_OK(tx.status());
  for (uint64_t o : objs) ASSERT_UZFS_OK((*os)->FreeObject(o, tx->txg()));
  tx->Commit();
}

// Waits (up to a minute) until no leaf is being trimmed.
bool WaitTrimmed(Pool& p) {
  for (int i = 0; i < 6000 && p.TrimRunning(); i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return !p.TrimRunning();
}

TEST(PoolTrim, DiscardsFreeSpaceWhileWritesGoOn) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "r", VdevSpec::Type::kRaidz, 3, 1));
  auto p = Pool::Create("sp", layout, pooltest::V23());
  ASSERT_UZFS_OK(p.status());
  Pool& pool = **p;
  std::vector<uint64_t> keep, gone;
  pooltest::WriteObjects(pool, "sp", 8, 256 << 10, 100, &keep);
  pooltest::WriteObjects(pool, "sp", 24, 1 << 20, 500, &gone);
  ASSERT_UZFS_OK(pool.Sync());
  ASSERT_NO_FATAL_FAILURE(FreeObjects(pool, gone));
  for (int i = 0; i < 4; i++) ASSERT_UZFS_OK(pool.Sync());  // past the deferral of frees
  const uint64_t before = AllocatedBytes(layout.data[0]);

  // New objects are written and synced all through the trim: none of their
  // blocks may land where a discard is under way.
  std::atomic<bool> done{false};
  std::vector<uint64_t> fresh;
  std::thread writer([&] {
    for (int round = 0; !done.load() || round < 8; round++) {
      pooltest::WriteObjects(pool, "sp", 2, 128 << 10, 1000 + fresh.size(), &fresh);
      ASSERT_UZFS_OK(pool.Sync());
    }
  });
  ASSERT_UZFS_OK(pool.StartTrim({}));
  EXPECT_EQ(pool.StartTrim({}).code(), Code::kBusy);
  const bool finished = WaitTrimmed(pool);
  done.store(true);
  writer.join();
  ASSERT_TRUE(finished);

  const auto progress = pool.trim_progress();
  ASSERT_EQ(progress.size(), 3u);
  for (const auto& [guid, t] : progress) {
    EXPECT_EQ(t.state, Pool::TrimState::kComplete) << t.error;
    EXPECT_EQ(t.examined, t.total);
    EXPECT_GT(t.trimmed, 8u << 20);
    EXPECT_GE(t.end_time, t.start_time);
  }
  // 24 MiB of data and its parity went back to the files.
  EXPECT_GT(before + (128 << 10) * fresh.size() * 2, AllocatedBytes(layout.data[0]) + (24u << 20));
  pooltest::ExpectObjects(pool, "sp", keep, 256 << 10, 100);
  for (size_t i = 0; i < fresh.size(); i++) {
    pooltest::ExpectObjects(pool, "sp", {fresh[i]}, 128 << 10, 1000 + i);
  }
  EXPECT_EQ(pool.CancelTrim({}).code(), Code::kNotFound);
  ASSERT_UZFS_OK(pool.Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
  auto again = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(again.status());
  pooltest::ExpectObjects(**again, "sp", keep, 256 << 10, 100);
  EXPECT_TRUE((*again)->trim_progress().empty()) << "progress is not kept across an import";
  ASSERT_UZFS_OK((*again)->Export());
}

TEST(PoolTrim, CancelsAndRefusesWhatMakesNoSense) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "m", VdevSpec::Type::kMirror, 2));
  const std::string side0 = layout.data[0].children[0].path;
  auto p = Pool::Create("sp", layout, pooltest::V23());
  ASSERT_UZFS_OK(p.status());
  Pool& pool = **p;
  Status s = pool.StartTrim({"/no/such/dev"});
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.message(), "cannot trim '/no/such/dev': no such device in pool");
  s = pool.CancelTrim({});
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.message(), "cannot cancel trimming 'sp': there is no active trim");
  // One side, slowly (one batch, then a wait of seconds): cancel ends it.
  ASSERT_UZFS_OK(pool.StartTrim({side0}, 4096));
  s = pool.StartTrim({});
  EXPECT_EQ(s.code(), Code::kBusy);
  EXPECT_EQ(s.message(), "cannot trim '" + side0 + "': currently trimming");
  ASSERT_UZFS_OK(pool.CancelTrim({side0}));
  ASSERT_TRUE(WaitTrimmed(pool));
  const auto progress = pool.trim_progress();
  ASSERT_EQ(progress.size(), 1u);
  EXPECT_EQ(progress.begin()->second.state, Pool::TrimState::kCanceled);
  EXPECT_GT(progress.begin()->second.end_time, 0u);
  // A trim under way when the pool is exported just stops.
  ASSERT_UZFS_OK(pool.StartTrim({}, 4096));
  ASSERT_UZFS_OK(pool.Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
  PoolImportOptions ro;
  ro.readonly = true;
  auto r = pooltest::ImportFrom(dir.path(), "sp", ro);
  ASSERT_UZFS_OK(r.status());
  EXPECT_EQ((*r)->StartTrim({}).code(), Code::kNotSupported);
}

// A device offline is not trimmed (named: refused); one detached while its
// trim waits ends that trim as failed, and the thread ends too.
TEST(PoolTrim, UnavailableAndDepartedDevices) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "m", VdevSpec::Type::kMirror, 3));
  const std::string side0 = layout.data[0].children[0].path;
  const std::string side1 = layout.data[0].children[1].path;
  auto p = Pool::Create("sp", layout, pooltest::V23());
  ASSERT_UZFS_OK(p.status());
  Pool& pool = **p;
  ASSERT_UZFS_OK(pool.OfflineDevice(side1, /*temporary=*/true));
  Status s = pool.StartTrim({side1});
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "cannot trim '" + side1 + "': device is unavailable");
  ASSERT_UZFS_OK(pool.StartTrim({}));
  ASSERT_TRUE(WaitTrimmed(pool));
  EXPECT_EQ(pool.trim_progress().size(), 2u) << "the offline side is left out";
  ASSERT_UZFS_OK(pool.OnlineDevice(side1));
  // Slowly (one batch, then a wait of minutes); once its first batch is
  // done the side leaves, and the wait ends.
  ASSERT_UZFS_OK(pool.StartTrim({side0}, 4096));
  auto first_batch_done = [&] {
    for (const auto& [guid, t] : pool.trim_progress()) {
      if (t.state == Pool::TrimState::kActive && t.trimmed > 0) return true;
    }
    return false;
  };
  for (int i = 0; i < 3000 && !first_batch_done(); i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(first_batch_done());
  ASSERT_UZFS_OK(pool.DetachDevice(side0));
  ASSERT_TRUE(WaitTrimmed(pool));
  bool found = false;
  for (const auto& [guid, t] : pool.trim_progress()) {
    if (t.state != Pool::TrimState::kFailed) continue;
    EXPECT_EQ(t.error, "the device left the pool");
    found = true;
  }
  EXPECT_TRUE(found);
  ASSERT_UZFS_OK(pool.Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
}

TEST(PoolTrim, AutotrimGivesFreedSpaceBackByItself) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "r", VdevSpec::Type::kRaidz, 3, 1));
  PoolCreateOptions o = pooltest::V23();
  o.version = kFeatureVersion;
  auto p = Pool::Create("sp", layout, o);
  ASSERT_UZFS_OK(p.status());
  EXPECT_FALSE((*p)->autotrim());
  ASSERT_UZFS_OK((*p)->SetPoolProps({{"autotrim", "on"}}));
  EXPECT_TRUE((*p)->autotrim());
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  auto q = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(q.status());
  Pool& pool = **q;
  EXPECT_TRUE(pool.autotrim()) << "autotrim=on holds across an import";
  std::vector<uint64_t> keep, gone;
  pooltest::WriteObjects(pool, "sp", 4, 256 << 10, 100, &keep);
  pooltest::WriteObjects(pool, "sp", 16, 1 << 20, 500, &gone);
  ASSERT_UZFS_OK(pool.Sync());
  const uint64_t before = AllocatedBytes(layout.data[0]);
  ASSERT_NO_FATAL_FAILURE(FreeObjects(pool, gone));
  // The frees reach the space maps, wait out the deferral (txgs keep
  // coming), and a pass (once a second) discards them. The counter moves
  // per batch and the files shrink as the batch's discards land, so wait
  // for both (a slow sanitizer build once looked between the two).
  auto given_back = [&] {
    return pool.autotrimmed_bytes() >= (16u << 20) && before > AllocatedBytes(layout.data[0]) + (16u << 20);
  };
  for (int i = 0; i < 1000 && !given_back(); i++) {
    ASSERT_UZFS_OK(pool.Sync());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GE(pool.autotrimmed_bytes(), 16u << 20);
  EXPECT_GT(before, AllocatedBytes(layout.data[0]) + (16u << 20));
  EXPECT_TRUE(pool.trim_progress().empty()) << "autotrim is no manual trim";
  pooltest::ExpectObjects(pool, "sp", keep, 256 << 10, 100);
  // Off: nothing more is trimmed.
  ASSERT_UZFS_OK(pool.SetPoolProps({{"autotrim", "off"}}));
  EXPECT_FALSE(pool.autotrim());
  ASSERT_UZFS_OK(pool.Export());
  q->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
}

}  // namespace
}  // namespace uzfs
