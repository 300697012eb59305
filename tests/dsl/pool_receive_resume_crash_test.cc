// Crash consistency of resumable receives (zfs receive -s): a child process
// imports the pool and loops: it receives a full stream of rp/src@s1 into
// rp/dst resumably (going on with a saved receive when one is there, as
// zfs receive -s does with the same stream), then destroys rp/dst again,
// until the parent kills it (SIGKILL) at a random moment: in the records,
// in a txg's sync, in the end's txg, in the destroy. After every kill the
// parent checks the pool as the kill left it:
//   - our zdb -b (ExpectConsistent): nothing leaked or doubly allocated;
//   - after an import, DestroyStaleReceives keeps a saved receive;
//   - a saved receive's position is one the disk backs: the rest of the
//     stream from there (as zfs send -t sends it; every other iteration
//     the whole stream again) finishes rp/dst@s1 with exactly the sent
//     bytes;
//   - rp/dst@s1, when there, holds exactly the sent bytes; after "E+" it
//     is there.
// Stress mode: UZFS_STRESS_ITERATIONS=100 build/tests/pool_receive_resume_crash_test
#include <unistd.h>

#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "tests/dsl/crash_test_util.h"
#include "tests/dsl/pool_test_util.h"
#include "tests/dsl/receive_test_util.h"
#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

constexpr size_t kBytes = 300000;
constexpr int kObjects = 24;

int Iterations() {
  if (const char* e = std::getenv("UZFS_STRESS_ITERATIONS"); e && *e) return std::max(1, std::atoi(e));
  return 8;
}

bool Holds(Pool& p, const std::string& snap, const std::vector<uint64_t>& objs) {
  auto os = p.OpenSnapshot(snap);
  if (!os.ok()) return false;
  for (size_t i = 0; i < objs.size(); i++) {
    std::vector<uint8_t> got(kBytes);
    if (!(*os)->Read(objs[i], 0, got).ok() || got != test::RandomBytes(kBytes, 1 + i)) return false;
  }
  return true;
}

TEST(PoolReceiveResumeCrash, KilledWhileReceivingResumably) {
  test::TempDir dir;
  std::vector<uint64_t> objs;
  std::vector<uint8_t> full;
  {
    PoolLayout layout;
    layout.data.push_back(pooltest::Leaf(dir.path(), "d0", 256ull << 20));
    PoolCreateOptions o = pooltest::V23();
    o.version = 5000;
    auto p = Pool::Create("rp", layout, o);
    ASSERT_UZFS_OK(p.status());
    Pool& pool = **p;
    ASSERT_UZFS_OK(pool.CreateDataset("rp/src", {}));
    pooltest::WriteObjects(pool, "rp/src", kObjects, kBytes, 1, &objs);
    ASSERT_UZFS_OK(pool.Snapshot({"rp/src@s1"}));
    auto f = receivetest::SnapshotStream(pool, "rp/src@s1");
    ASSERT_UZFS_OK(f.status());
    full = *f;
    ASSERT_UZFS_OK(pool.Export());
  }

  const uint64_t base = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  int saved_seen = 0;
  for (int iter = 0; iter < Iterations(); iter++) {
    SCOPED_TRACE("iteration " + std::to_string(iter) + ", seed " + std::to_string(base));
    std::mt19937_64 rng(base + static_cast<uint64_t>(iter));
    auto child = [&](int report) {
      auto p = pooltest::ImportFrom(dir.path(), "rp");
      if (!p.ok() || !(*p)->DestroyStaleReceives().ok()) _exit(2);
      Pool& pool = **p;
      while (true) {
        if (receivetest::SnapshotGuid(pool, "rp/dst@s1") != 0) {
          crashtest::Report(report, "D");
          if (!pool.DestroySnapshots({"rp/dst@s1"}).ok() || !pool.DestroyDataset("rp/dst").ok()) _exit(2);
          crashtest::Report(report, "D+");
        } else if (auto saved = pool.SavedReceiveOf("rp/dst"); saved.ok() && !*saved && pool.LocalProps("rp/dst").ok()) {
          // (A kill between the two destroys left it without its snapshot.)
          if (!pool.DestroyDataset("rp/dst").ok()) _exit(2);
        }
        crashtest::Report(report, "R");
        auto first_write = [report](uint64_t n) {
          if (n == 1) crashtest::Report(report, "W");
        };
        if (!receivetest::ReceiveResumable(pool, "rp/dst", full, first_write).ok()) _exit(2);
        crashtest::Report(report, "E+");
      }
    };
    // (The last iteration, if no kill has caught a receive yet, kills one
    // right after its first write: however slow the machine, one does.)
    std::string text, last;
    const bool wait = iter == Iterations() - 1 && saved_seen == 0;
    ASSERT_NO_FATAL_FAILURE(crashtest::RunAndKill(child, wait ? 0 : 20 + static_cast<int>(rng() % 500), wait ? "W" : "",
                                                  &text, &last));

    ASSERT_NO_FATAL_FAILURE(pooltest::ExpectConsistent(dir.path(), "rp"));
    auto p = pooltest::ImportFrom(dir.path(), "rp");
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->DestroyStaleReceives().status());
    const bool has_s1 = receivetest::SnapshotGuid(**p, "rp/dst@s1") != 0;
    if (last == "E+") {
      EXPECT_TRUE(has_s1) << "the receive ended, its snapshot is gone";
    }
    auto saved = (*p)->SavedReceiveOf("rp/dst");
    ASSERT_UZFS_OK(saved.status());
    if (*saved) {
      saved_seen++;
      EXPECT_FALSE(has_s1) << "a finished receive keeps no saved state";
      EXPECT_EQ((*saved)->to_guid, receivetest::SnapshotGuid(**p, "rp/src@s1"));
      std::vector<uint8_t> rest = full;
      if (iter % 2 == 0) {
        auto r = receivetest::SnapshotStream(**p, "rp/src@s1", "", (*saved)->object, (*saved)->offset);
        ASSERT_UZFS_OK(r.status());
        rest = *r;
      }
      SCOPED_TRACE("resumed at object " + std::to_string((*saved)->object) + " offset " +
                   std::to_string((*saved)->offset));
      ASSERT_UZFS_OK(receivetest::ReceiveResumable(**p, "rp/dst", rest));
      EXPECT_TRUE(Holds(**p, "rp/dst@s1", objs)) << "resumed at object " << (*saved)->object << " offset "
                                                 << (*saved)->offset << " (last report: " << last << ")";
    } else if (has_s1) {
      EXPECT_TRUE(Holds(**p, "rp/dst@s1", objs)) << "last report: " << last;
    }
    ASSERT_UZFS_OK((*p)->Export());
    p->reset();
    ASSERT_NO_FATAL_FAILURE(pooltest::ExpectConsistent(dir.path(), "rp"));
  }
  // (Most kills land inside the records; at least one must have.)
  EXPECT_GT(saved_seen, 0);
}

}  // namespace
}  // namespace uzfs
