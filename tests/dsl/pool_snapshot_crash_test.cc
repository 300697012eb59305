// Crash consistency of snapshots: a child process imports the pool and
// loops over overwrites of a file system's objects, snapshots, snapshot
// destroys and syncs until the parent kills it (SIGKILL) at a random
// moment. After every kill the parent opens the pool read-only and checks:
//   - our zdb -b (TraversePool) finds it consistent: no checksum error,
//     nothing leaked, unreachable or doubly allocated, and the blocks add
//     up to the space maps' allocated total;
//   - every snapshot whose Snapshot call returned is there unless a destroy
//     of it began, none whose DestroySnapshots returned is, and every one
//     there is one the child asked for;
//   - each snapshot there holds exactly the bytes its objects had when the
//     child asked for it (every write issued before the call).
// The child reports through a pipe ("w OBJ VERSION" before a write, "S N"
// / "S+ N" around a snapshot, "D N" / "D+ N" around a destroy); each record
// is smaller than PIPE_BUF, so it arrives whole or not at all. Each child
// first rewrites every object, so the model knows the head from then on.
//
// Runs: version 23 (bplist deadlists) and 5000 (keyed deadlists).
// Stress mode: UZFS_STRESS_ITERATIONS=200 build/tests/pool_snapshot_crash_test
// Replay: UZFS_CRASH_SEED=<seed printed> (where a kill lands still depends
// on the machine's speed).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dmu/object_reader.h"
#include "zfs/dsl/pool.h"
#include "zfs/inspect/block_traverse.h"
#include "zfs/inspect/pool_reader.h"
#include "zfs/zap/zap.h"

#if defined(__SANITIZE_ADDRESS__)
#define UZFS_SNAP_CRASH_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UZFS_SNAP_CRASH_SANITIZED 1
#endif
#endif

namespace uzfs {
namespace {

constexpr int kObjects = 8;
constexpr size_t kObjBytes = 64 * 1024;
#ifdef UZFS_SNAP_CRASH_SANITIZED
constexpr int kMinDelayMs = 50, kMaxDelayMs = 2000, kDefaultIterations = 4;
#else
constexpr int kMinDelayMs = 10, kMaxDelayMs = 500, kDefaultIterations = 10;
#endif

int Iterations() {
  if (const char* e = std::getenv("UZFS_STRESS_ITERATIONS"); e && *e) return std::max(1, std::atoi(e));
  return kDefaultIterations;
}

uint64_t BaseSeed() {
  if (const char* e = std::getenv("UZFS_CRASH_SEED"); e && *e) return std::strtoull(e, nullptr, 0);
  return (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
}

std::vector<uint8_t> Content(int obj, uint64_t version) {
  return test::RandomBytes(kObjBytes, (version << 8) ^ static_cast<uint64_t>(obj));
}

// Everything below runs in the child: no gtest assertions (the parent
// judges); any failure ends the child with exit code 2.
void Report(int fd, const std::string& line) {
  const std::string l = line + "\n";
  if (::write(fd, l.data(), l.size()) != static_cast<ssize_t>(l.size())) _exit(2);
}

[[noreturn]] void ChildLoop(const std::filesystem::path& dir, const std::vector<uint64_t>& objs,
                            std::set<int> snaps, int next_snap, uint64_t next_version, uint64_t seed, int fd) {
  auto p = pooltest::ImportFrom(dir, "tank");
  if (!p.ok()) _exit(2);
  std::mt19937_64 rng(seed);
  auto write = [&](int i, uint64_t v) {
    Report(fd, "w " + std::to_string(i) + " " + std::to_string(v));
    auto os = (*p)->Objset("tank/fs");
    if (!os.ok()) _exit(2);
    auto tx = (*p)->Begin(kObjBytes);
    if (!tx.ok()) _exit(2);
    if (!(*os)->Write(objs[i], 0, Content(i, v), tx->txg()).ok()) _exit(2);
    tx->Commit();
  };
  for (int i = 0; i < kObjects; i++) write(i, next_version++);
  for (;;) {
    const int op = static_cast<int>(rng() % 10);
    if (op < 5) {
      write(static_cast<int>(rng() % kObjects), next_version++);
    } else if (op < 8 || snaps.size() < 2) {
      const int n = next_snap++;
      Report(fd, "S " + std::to_string(n));
      if (!(*p)->Snapshot({"tank/fs@s" + std::to_string(n)}).ok()) _exit(2);
      Report(fd, "S+ " + std::to_string(n));
      snaps.insert(n);
    } else if (op < 9) {
      auto it = snaps.begin();
      std::advance(it, static_cast<long>(rng() % snaps.size()));
      const int n = *it;
      Report(fd, "D " + std::to_string(n));
      if (!(*p)->DestroySnapshots({"tank/fs@s" + std::to_string(n)}).ok()) _exit(2);
      Report(fd, "D+ " + std::to_string(n));
      snaps.erase(n);
    } else {
      if (!(*p)->Sync().ok()) _exit(2);
    }
  }
}

// ------------------------------------------------------------ the parent

struct Model {
  std::map<int, uint64_t> head;                       // object -> version last written
  std::map<int, std::map<int, uint64_t>> snapshots;   // snapshot -> its objects' versions
  int next_snap = 0;
  uint64_t next_version = 1;
};

// The snapshots of tank/fs on disk: number -> dataset bp.
std::map<int, BlockPtr> SnapshotsOnDisk(PoolReader& r, std::string* error) {
  std::map<int, BlockPtr> out;
  auto fs = r.ResolveDataset("tank/fs");
  if (!fs.ok()) {
    *error = fs.status().ToString();
    return out;
  }
  auto zap = r.MosZap(fs->ds.snapnames_zapobj);
  if (!zap.ok()) {
    *error = zap.status().ToString();
    return out;
  }
  auto entries = zap->List();
  if (!entries.ok()) {
    *error = entries.status().ToString();
    return out;
  }
  for (const ZapEntry& e : *entries) {
    if (e.name.size() < 2 || e.name[0] != 's') continue;
    auto dn = r.MosObject(e.value());
    if (!dn.ok()) {
      *error = dn.status().ToString();
      continue;
    }
    auto ds = DecodeDslDataset(dn->bonus);
    if (!ds.ok()) {
      *error = ds.status().ToString();
      continue;
    }
    out[std::atoi(e.name.c_str() + 1)] = ds->bp;
  }
  return out;
}

void RunKills(uint64_t version) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(dir.path(), "d0", 256ull << 20));
  PoolCreateOptions o = pooltest::V23();
  o.version = version;
  std::vector<uint64_t> objs;
  {
    auto p = Pool::Create("tank", layout, o);
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->CreateDataset("tank/fs", {}));
    pooltest::WriteObjects(**p, "tank/fs", kObjects, kObjBytes, 0, &objs);
    ASSERT_UZFS_OK((*p)->Export());
  }
  const uint64_t base = BaseSeed();
  std::printf("snapshot crash test: version %llu, seed %llu\n", static_cast<unsigned long long>(version),
              static_cast<unsigned long long>(base));
  Model m;
  std::set<int> on_disk;  // snapshot numbers there after the last check
  int taken_total = 0, destroyed_total = 0, checked = 0;
  for (int iter = 0; iter < Iterations(); iter++) {
    SCOPED_TRACE("iteration " + std::to_string(iter) + ", seed " + std::to_string(base));
    std::mt19937_64 rng(base + static_cast<uint64_t>(iter));
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(pipe_fds[0]);
      ChildLoop(dir.path(), objs, on_disk, m.next_snap, m.next_version, rng(), pipe_fds[1]);
    }
    ::close(pipe_fds[1]);
    const int delay = kMinDelayMs + static_cast<int>(rng() % (kMaxDelayMs - kMinDelayMs));
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    ::kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the child ended by itself (exit " << WEXITSTATUS(status) << ")";
    // Replay what the child reported.
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof(buf))) > 0;) text.append(buf, static_cast<size_t>(n));
    ::close(pipe_fds[0]);
    std::set<int> begun, taken, destroying, destroyed;
    std::istringstream in(text);
    std::string what;
    while (in >> what) {
      if (what == "w") {
        int i = 0;
        uint64_t v = 0;
        in >> i >> v;
        m.head[i] = v;
        m.next_version = std::max(m.next_version, v + 1);
      } else {
        int n = 0;
        in >> n;
        if (what == "S") {
          begun.insert(n);
          m.snapshots[n] = m.head;
          m.next_snap = std::max(m.next_snap, n + 1);
        } else if (what == "S+") {
          taken.insert(n);
        } else if (what == "D") {
          destroying.insert(n);
        } else if (what == "D+") {
          destroyed.insert(n);
        }
      }
    }
    // The pool as it is on disk now.
    auto r = PoolReader::Open(dir.path().string(), "tank");
    ASSERT_UZFS_OK(r.status());
    auto t = TraversePool(**r);
    ASSERT_UZFS_OK(t.status());
    EXPECT_EQ(t->checksum_errors, 0u) << (t->errors.empty() ? "" : t->errors[0]);
    EXPECT_EQ(t->leaked, 0u);
    EXPECT_EQ(t->unreachable, 0u);
    EXPECT_EQ(t->double_allocated, 0u);
    EXPECT_EQ(t->total.asize, t->spa_allocated);
    std::string error;
    const std::map<int, BlockPtr> found = SnapshotsOnDisk(**r, &error);
    EXPECT_EQ(error, "");
    for (int n : on_disk) {
      if (!destroying.count(n)) {
        EXPECT_TRUE(found.count(n)) << "s" << n << " vanished";
      }
    }
    for (int n : taken) {
      if (!destroying.count(n)) {
        EXPECT_TRUE(found.count(n)) << "s" << n << " was taken";
      }
    }
    for (int n : destroyed) EXPECT_FALSE(found.count(n)) << "s" << n << " was destroyed";
    taken_total += static_cast<int>(taken.size());
    destroyed_total += static_cast<int>(destroyed.size());
    checked += static_cast<int>(found.size());
    on_disk.clear();
    for (const auto& [n, bp] : found) {
      EXPECT_TRUE(m.snapshots.count(n)) << "s" << n << " is there, which the child never asked for";
      on_disk.insert(n);
      auto os = r->get()->reader().ReadObjset(bp);
      ASSERT_UZFS_OK(os.status());
      for (int i = 0; i < kObjects; i++) {
        auto dn = r->get()->reader().ReadDnode(os->meta_dnode, objs[i]);
        ASSERT_UZFS_OK(dn.status());
        std::vector<uint8_t> got(kObjBytes);
        ASSERT_UZFS_OK(r->get()->reader().Read(*dn, 0, got));
        const auto want = m.snapshots[n].count(i) ? Content(i, m.snapshots[n][i]) : test::RandomBytes(kObjBytes, i);
        EXPECT_TRUE(got == want) << "s" << n << " object " << i;
      }
    }
    if (::testing::Test::HasFailure()) return;
  }
  std::printf("%d kills; %d snapshots taken, %d destroyed, %d found and read back\n", Iterations(), taken_total,
              destroyed_total, checked);
  EXPECT_GT(taken_total, 0) << "no kill came after a snapshot: nothing was tested";
  if (Iterations() >= 10) {
    EXPECT_GT(destroyed_total, 0) << "no destroy finished before a kill";
  }
  // Imported once more: everything destroyed, the pool is consistent and
  // its records say so (no snapshot usage, the file system holds all it
  // references alone).
  {
    auto p = pooltest::ImportFrom(dir.path(), "tank");
    ASSERT_UZFS_OK(p.status());
    std::vector<std::string> names;
    for (int n : on_disk) names.push_back("tank/fs@s" + std::to_string(n));
    ASSERT_UZFS_OK((*p)->DestroySnapshots(names));
    auto l = (*p)->ListDatasets(true);
    ASSERT_UZFS_OK(l.status());
    for (const DatasetInfo& i : *l) {
      if (i.name != "tank/fs") continue;
      EXPECT_EQ(i.dir.used_breakdown[static_cast<int>(DdUsed::kSnap)], 0u);
      EXPECT_EQ(i.ds.unique_bytes, i.ds.referenced_bytes);
      EXPECT_EQ(i.deadlist_bytes, 0u);
    }
    ASSERT_UZFS_OK((*p)->Export());
  }
  pooltest::ExpectConsistent(dir.path(), "tank");
}

TEST(PoolSnapshotCrash, KilledWhileSnapshottingV23) { RunKills(23); }
TEST(PoolSnapshotCrash, KilledWhileSnapshottingV5000) { RunKills(5000); }

}  // namespace
}  // namespace uzfs
