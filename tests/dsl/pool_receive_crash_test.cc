// Crash consistency of receives: a child process imports the pool and
// loops: it receives an incremental stream (s1 -> s2 of rp/src) into rp/dst
// with force and a clone stream (rp/cl@c1, a clone of rp/src@s1) into
// rp/dcl as a clone of rp/dst@s1, then destroys rp/dst@s2 and rp/dcl
// again, until the parent kills it
// (SIGKILL) at a random moment, inside the records, inside EndReceive's
// txg or anywhere else. After every kill the parent checks the pool as the
// kill left it:
//   - our zdb -b (ExpectConsistent): no checksum error, nothing leaked,
//     unreachable or doubly allocated, the blocks adding up to the space
//     maps' allocated total;
//   - after an import, DestroyStaleReceives leaves no hidden dataset and
//     the pool is consistent again;
//   - rp/dst@s2 is there when EndReceive returned and its destroy did not
//     begin after, absent when the destroy returned and no receive's end
//     began after; when there, it holds exactly the sent snapshot's bytes;
//   - rp/dst's head holds exactly s1's or s2's bytes, never a mix;
//   - rp/dcl, when there, is whole: its snapshot c1 and s1's and its own
//     bytes; after "C+" it is there, after "X+" it is not.
// The child reports "E" before EndReceive, "E+" after it, "D" / "D+"
// around the destroy, "C" / "C+" around the clone receive, "X" / "X+"
// around the clone's destroy.
// Stress mode: UZFS_STRESS_ITERATIONS=100 build/tests/pool_receive_crash_test
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

constexpr size_t kBytes = 200000;

int Iterations() {
  if (const char* e = std::getenv("UZFS_STRESS_ITERATIONS"); e && *e) return std::max(1, std::atoi(e));
  return 8;
}

// Which version (1: s1, 2: s2) every object of `ds` holds, or 0 for a mix
// or a wrong byte. objs: the objects of s1; s2 rewrote objs[1] and objs[4]
// (seeds 101, 104) and added `later` (seeds 200, 201).
int VersionOf(Pool& p, const std::string& ds, const std::vector<uint64_t>& objs, const std::vector<uint64_t>& later) {
  std::shared_ptr<ObjsetWriter> snap;
  ObjsetWriter* os = nullptr;
  if (ds.find('@') != std::string::npos) {
    auto s = p.OpenSnapshot(ds);
    if (!s.ok()) return 0;
    snap = *s;
    os = snap.get();
  } else {
    auto h = p.ObjsetForRead(ds);
    if (!h.ok()) return 0;
    os = *h;
  }
  auto holds = [&](uint64_t obj, uint64_t seed) {
    std::vector<uint8_t> got(kBytes);
    return os->Read(obj, 0, got).ok() && got == test::RandomBytes(kBytes, seed);
  };
  auto absent = [&](uint64_t obj) {
    auto dn = os->GetDnode(obj);
    return !dn.ok() || dn->IsFree();
  };
  const bool v2 = holds(objs[1], 101);
  for (size_t i = 0; i < objs.size(); i++) {
    const uint64_t seed = v2 && (i == 1 || i == 4) ? 100 + i : 1 + i;
    if (!holds(objs[i], seed)) return 0;
  }
  for (size_t i = 0; i < later.size(); i++) {
    if (v2 ? !holds(later[i], 200 + i) : !absent(later[i])) return 0;
  }
  return v2 ? 2 : 1;
}

TEST(PoolReceiveCrash, KilledWhileReceiving) {
  test::TempDir dir;
  std::vector<uint64_t> objs, later;
  std::vector<uint8_t> inc, clone;
  std::vector<uint64_t> own;
  {
    PoolLayout layout;
    layout.data.push_back(pooltest::Leaf(dir.path(), "d0", 256ull << 20));
    PoolCreateOptions o = pooltest::V23();
    o.version = 5000;
    auto p = Pool::Create("rp", layout, o);
    ASSERT_UZFS_OK(p.status());
    Pool& pool = **p;
    ASSERT_UZFS_OK(pool.CreateDataset("rp/src", {}));
    pooltest::WriteObjects(pool, "rp/src", 6, kBytes, 1, &objs);
    ASSERT_UZFS_OK(pool.Snapshot({"rp/src@s1"}));
    auto os = pool.Objset("rp/src");
    ASSERT_UZFS_OK(os.status());
    {
      auto tx = pool.Begin(1 << 20);
      ASSERT_UZFS_OK(tx.status());
      ASSERT_UZFS_OK((*os)->Write(objs[1], 0, test::RandomBytes(kBytes, 101), tx->txg()));
      ASSERT_UZFS_OK((*os)->Write(objs[4], 0, test::RandomBytes(kBytes, 104), tx->txg()));
      tx->Commit();
    }
    pooltest::WriteObjects(pool, "rp/src", 2, kBytes, 200, &later);
    ASSERT_UZFS_OK(pool.Snapshot({"rp/src@s2"}));
    auto full = receivetest::SnapshotStream(pool, "rp/src@s1");
    auto i = receivetest::SnapshotStream(pool, "rp/src@s2", "rp/src@s1");
    ASSERT_UZFS_OK(full.status());
    ASSERT_UZFS_OK(i.status());
    inc = *i;
    ASSERT_UZFS_OK(pool.Clone("rp/src@s1", "rp/cl", {}));
    pooltest::WriteObjects(pool, "rp/cl", 2, kBytes, 300, &own);
    ASSERT_UZFS_OK(pool.Snapshot({"rp/cl@c1"}));
    auto c = receivetest::SnapshotStream(pool, "rp/cl@c1", "rp/src@s1");
    ASSERT_UZFS_OK(c.status());
    clone = *c;
    ASSERT_UZFS_OK(receivetest::ReceiveBytes(pool, "rp/dst", *full));
    ASSERT_UZFS_OK(pool.Export());
  }

  const uint64_t base = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  int ends_seen = 0;
  for (int iter = 0; iter < Iterations(); iter++) {
    SCOPED_TRACE("iteration " + std::to_string(iter) + ", seed " + std::to_string(base));
    std::mt19937_64 rng(base + static_cast<uint64_t>(iter));
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      auto p = pooltest::ImportFrom(dir.path(), "rp");
      if (!p.ok() || !(*p)->DestroyStaleReceives().ok()) _exit(2);
      while (true) {
        if (!receivetest::SnapshotGuid(**p, "rp/dst@s2")) {
          Status s = receivetest::ReceiveBytes(**p, "rp/dst", inc, /*force=*/true,
                                               [&] { crashtest::Report(fds[1], "E"); });
          if (!s.ok()) _exit(2);
          crashtest::Report(fds[1], "E+");
        }
        crashtest::Report(fds[1], "D");
        if (!(*p)->DestroySnapshots({"rp/dst@s2"}).ok()) _exit(2);
        crashtest::Report(fds[1], "D+");
        if (!receivetest::SnapshotGuid(**p, "rp/dcl@c1")) {
          // (A kill between the clone's two destroys leaves it without
          // its snapshot.)
          if ((*p)->LocalProps("rp/dcl").ok() && !(*p)->DestroyDataset("rp/dcl").ok()) _exit(2);
          crashtest::Report(fds[1], "C");
          if (!receivetest::ReceiveBytes(**p, "rp/dcl", clone, false, {}, "rp/dst@s1").ok()) _exit(2);
          crashtest::Report(fds[1], "C+");
        }
        crashtest::Report(fds[1], "X");
        if (!(*p)->DestroySnapshots({"rp/dcl@c1"}).ok() || !(*p)->DestroyDataset("rp/dcl").ok()) _exit(2);
        crashtest::Report(fds[1], "X+");
      }
    }
    ::close(fds[1]);
    std::string text;
    if (iter == Iterations() - 1 && ends_seen == 0) {
      EXPECT_TRUE(crashtest::WaitForReport(fds[0], "E+", &text)) << "no receive ended";
    }
    ASSERT_NO_FATAL_FAILURE(crashtest::KillAfter(pid, 20 + static_cast<int>(rng() % 600)));
    text = crashtest::ReadRest(fds[0], text);
    ::close(fds[0]);
    // The last report says what the kill may have caught.
    std::istringstream in(text);
    std::string last, what;
    while (in >> what) last = what;
    if (text.find("E+") != std::string::npos) ends_seen++;

    ASSERT_NO_FATAL_FAILURE(pooltest::ExpectConsistent(dir.path(), "rp"));
    auto p = pooltest::ImportFrom(dir.path(), "rp");
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->DestroyStaleReceives().status());
    const bool has_s2 = receivetest::SnapshotGuid(**p, "rp/dst@s2") != 0;
    if (last == "E+") {
      EXPECT_TRUE(has_s2) << "the receive ended, its snapshot is gone";
    }
    if (last == "D+") {
      EXPECT_FALSE(has_s2) << "the destroy returned, the snapshot is there";
    }
    if (has_s2) {
      EXPECT_EQ(receivetest::SnapshotGuid(**p, "rp/dst@s2"), receivetest::SnapshotGuid(**p, "rp/src@s2"));
      EXPECT_EQ(VersionOf(**p, "rp/dst@s2", objs, later), 2);
    }
    const int head = VersionOf(**p, "rp/dst", objs, later);
    EXPECT_TRUE(head == 1 || head == 2) << "the head holds a mix (last report: " << last << ")";
    const bool has_c1 = receivetest::SnapshotGuid(**p, "rp/dcl@c1") != 0;
    if (last == "C+") {
      EXPECT_TRUE(has_c1) << "the clone receive ended, its snapshot is gone";
    }
    if (last == "X+") {
      EXPECT_FALSE((*p)->LocalProps("rp/dcl").ok()) << "the clone's destroy returned, it is there";
    }
    if (has_c1) {
      EXPECT_EQ(receivetest::SnapshotGuid(**p, "rp/dcl@c1"), receivetest::SnapshotGuid(**p, "rp/cl@c1"));
      EXPECT_EQ(VersionOf(**p, "rp/dcl@c1", objs, {}), 1);
      auto os = (*p)->OpenSnapshot("rp/dcl@c1");
      ASSERT_UZFS_OK(os.status());
      for (size_t i = 0; i < own.size(); i++) {
        std::vector<uint8_t> got(kBytes);
        EXPECT_UZFS_OK((*os)->Read(own[i], 0, got));
        EXPECT_EQ(got, test::RandomBytes(kBytes, 300 + i)) << "the clone's own object " << i;
      }
    }
    auto names = (*p)->ListDatasets(false);
    ASSERT_UZFS_OK(names.status());
    EXPECT_GE(names->size(), 4u);
    EXPECT_LE(names->size(), 5u) << "rp, rp/cl, rp/dst, rp/src, perhaps rp/dcl, and nothing else";
    ASSERT_UZFS_OK((*p)->Export());
    p->reset();
    ASSERT_NO_FATAL_FAILURE(pooltest::ExpectConsistent(dir.path(), "rp"));
  }
  EXPECT_GT(ends_seen, 0);
}

}  // namespace
}  // namespace uzfs
