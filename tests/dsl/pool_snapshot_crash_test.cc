// Crash consistency of snapshots and clones: a child process imports the
// pool and loops over overwrites of a file system's objects, snapshots,
// snapshot destroys, clones of snapshots (written to and destroyed in
// turn), user holds placed and released, deferred destroys (zfs destroy
// -d) of held or cloned snapshots, and syncs until the parent kills
// it (SIGKILL) at a random moment. After every kill the parent opens the
// pool read-only and checks:
//   - our zdb -b (TraversePool) finds it consistent: no checksum error,
//     nothing leaked, unreachable or doubly allocated, and the blocks add
//     up to the space maps' allocated total;
//   - every snapshot whose Snapshot call returned is there unless a destroy
//     of it began, none whose DestroySnapshots returned is, and every one
//     there is one the child asked for;
//   - each snapshot there holds exactly the bytes its objects had when the
//     child asked for it (every write issued before the call), and the
//     user property it was taken with (zfs snapshot -o, the same txg);
//   - the same for clones (there once Clone returned, gone once their
//     destroy returned, each naming the snapshot it was cloned from) and
//     for holds (there once Hold returned, gone once Release did).
// The child reports through a pipe ("w OBJ VERSION" before a write, "S N"
// / "S+ N" around a snapshot, "D N" / "D+ N" around a destroy, "C K N" /
// "C+ K" around clone K of snapshot N, "X K" / "X+ K" around its destroy,
// "H N" / "H+ N" and "R N" / "R+ N" around a hold and a release, "E N" /
// "E+ N" around a deferred destroy of a held or cloned snapshot, which then
// goes with its last hold or clone); each
// record is smaller than PIPE_BUF, so it arrives whole or not at all. Each
// child first rewrites every object, so the model knows the head from
// then on. A snapshot with a clone or a hold is not destroyed.
//
// Runs: version 23 (bplist deadlists) and 5000 (keyed deadlists). A second
// loop kills a child that promotes a clone and its origin in turn
// (RunPromoteKills), a third one that rolls back keeping the later state
// (RunKeepKills).
// Stress mode: UZFS_STRESS_ITERATIONS=200 build/tests/pool_snapshot_crash_test
// Replay: UZFS_CRASH_SEED=<seed printed> (where a kill lands still depends
// on the machine's speed).
#include <fcntl.h>
#include <poll.h>
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

#include "tests/dsl/crash_test_util.h"
#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dmu/object_reader.h"
#include "zfs/dsl/pool.h"
#include "zfs/inspect/block_traverse.h"
#include "zfs/inspect/pool_reader.h"
#include "zfs/zap/zap.h"

#if defined(UZFS_ASAN) || defined(__SANITIZE_ADDRESS__)
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
using crashtest::Report;

// What the child starts from: the snapshots, clones (number -> snapshot)
// and held snapshots on disk, and the next numbers to use.
struct ChildState {
  std::set<int> snaps;
  std::map<int, int> clones;
  std::set<int> held;
  std::set<int> marked;  // by zfs destroy -d: they go once nothing keeps them
  int next_snap = 0, next_clone = 0;
  uint64_t next_version = 1;
};

[[noreturn]] void ChildLoop(const std::filesystem::path& dir, const std::vector<uint64_t>& objs, ChildState st,
                            uint64_t seed, int fd) {
  std::set<int>& snaps = st.snaps;
  uint64_t& next_version = st.next_version;
  auto p = pooltest::ImportFrom(dir, "tank");
  if (!p.ok()) _exit(2);
  std::mt19937_64 rng(seed);
  auto write_to = [&](const std::string& ds, int i, uint64_t v) {
    auto os = (*p)->Objset(ds);
    if (!os.ok()) _exit(2);
    auto tx = (*p)->Begin(kObjBytes);
    if (!tx.ok()) _exit(2);
    if (!(*os)->Write(objs[i], 0, Content(i, v), tx->txg()).ok()) _exit(2);
    tx->Commit();
  };
  auto write = [&](int i, uint64_t v) {
    Report(fd, "w " + std::to_string(i) + " " + std::to_string(v));
    write_to("tank/fs", i, v);
  };
  auto snap_name = [](int n) { return "tank/fs@s" + std::to_string(n); };
  auto pick = [&](const auto& c) {
    auto it = c.begin();
    std::advance(it, static_cast<long>(rng() % c.size()));
    return it;
  };
  // A marked snapshot nothing keeps any more went with the change that
  // freed it.
  auto gone_if_free = [&](int n) {
    if (!st.marked.count(n) || st.held.count(n)) return;
    for (const auto& [k, o] : st.clones) {
      if (o == n) return;
    }
    st.marked.erase(n);
    snaps.erase(n);
  };
  for (int i = 0; i < kObjects; i++) write(i, next_version++);
  for (bool first = true;; first = false) {
    // A snapshot first (a kill soon after the import still tests one).
    const int op = first ? 6 : static_cast<int>(rng() % 15);
    std::set<int> busy = st.held;  // snapshots a destroy would refuse
    for (const auto& [k, n] : st.clones) busy.insert(n);
    std::vector<int> free_snaps;
    for (int n : snaps) {
      if (!busy.count(n)) free_snaps.push_back(n);
    }
    if (op < 5) {
      write(static_cast<int>(rng() % kObjects), next_version++);
    } else if (op == 5 && !st.clones.empty()) {
      // A clone's head is not checked after a kill (only synced txgs
      // reach it), so its writes are not reported.
      write_to("tank/c" + std::to_string(pick(st.clones)->first), static_cast<int>(rng() % kObjects),
               next_version++);
    } else if (op == 9 && !snaps.empty()) {
      const int k = st.next_clone++, n = *pick(snaps);
      Report(fd, "C " + std::to_string(k) + " " + std::to_string(n));
      if (!(*p)->Clone(snap_name(n), "tank/c" + std::to_string(k), {}).ok()) _exit(2);
      Report(fd, "C+ " + std::to_string(k));
      st.clones[k] = n;
    } else if (op == 10 && !st.clones.empty()) {
      const int k = pick(st.clones)->first;
      Report(fd, "X " + std::to_string(k));
      if (!(*p)->DestroyDataset("tank/c" + std::to_string(k)).ok()) _exit(2);
      Report(fd, "X+ " + std::to_string(k));
      const int origin = st.clones[k];
      st.clones.erase(k);
      gone_if_free(origin);
    } else if (op == 11 && !snaps.empty()) {
      const int n = *pick(snaps);
      const bool hold = !st.held.count(n);
      Report(fd, std::string(hold ? "H " : "R ") + std::to_string(n));
      const Status s = hold ? (*p)->Hold({snap_name(n)}, "keep") : (*p)->Release({snap_name(n)}, "keep");
      if (!s.ok()) _exit(2);
      Report(fd, std::string(hold ? "H+ " : "R+ ") + std::to_string(n));
      if (hold) {
        st.held.insert(n);
      } else {
        st.held.erase(n);
        gone_if_free(n);
      }
    } else if (op == 14 && !busy.empty()) {
      // zfs destroy -d of a snapshot a hold or a clone keeps: marked.
      const int n = *pick(busy);
      Report(fd, "E " + std::to_string(n));
      if (!(*p)->DeferDestroySnapshots({snap_name(n)}).ok()) _exit(2);
      Report(fd, "E+ " + std::to_string(n));
      st.marked.insert(n);
    } else if (op < 8 || op == 9 || op == 11 || free_snaps.size() < 2) {
      const int n = st.next_snap++;
      Report(fd, "S " + std::to_string(n));
      // With a user property of its own, in the snapshot's txg.
      if (!(*p)->Snapshot({snap_name(n)}, {{"com.uzfs:n", std::to_string(n)}}).ok()) _exit(2);
      Report(fd, "S+ " + std::to_string(n));
      snaps.insert(n);
    } else if (op == 8 || op == 12 || op == 13) {
      const int n = *pick(free_snaps);
      Report(fd, "D " + std::to_string(n));
      if (!(*p)->DestroySnapshots({snap_name(n)}).ok()) _exit(2);
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

// The snapshots of file system `fs` on disk: number -> dataset bp.
std::map<int, BlockPtr> SnapshotsOnDisk(PoolReader& r, std::string* error, const std::string& fs_name = "tank/fs") {
  std::map<int, BlockPtr> out;
  auto fs = r.ResolveDataset(fs_name);
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

// Pool tank on a fresh device in dir, version `version`, with file system
// tank/fs holding kObjects objects of the originals (seeds 0, 1, ...);
// returned open.
std::unique_ptr<Pool> NewTank(const std::filesystem::path& dir, uint64_t version, std::vector<uint64_t>* objs) {
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(dir, "d0", 256ull << 20));
  PoolCreateOptions o = pooltest::V23();
  o.version = version;
  auto p = Pool::Create("tank", layout, o);
  EXPECT_UZFS_OK(p.status());
  if (!p.ok()) return nullptr;
  EXPECT_UZFS_OK((*p)->CreateDataset("tank/fs", {}));
  pooltest::WriteObjects(**p, "tank/fs", kObjects, kObjBytes, 0, objs);
  return std::move(*p);
}

// Kills child `pid` after a random delay and reaps it; it must not have
// ended by itself.
void KillAfterRandomDelay(pid_t pid, std::mt19937_64& rng) {
  crashtest::KillAfter(pid, kMinDelayMs + static_cast<int>(rng() % (kMaxDelayMs - kMinDelayMs)));
}

using crashtest::WaitForReport;

// Our zdb -b over the pool as the kill left it: no checksum error, nothing
// leaked, unreachable or doubly allocated, and the blocks add up to the
// space maps' allocated total.
void ExpectTraverseClean(PoolReader& r) {
  auto t = TraversePool(r);
  ASSERT_UZFS_OK(t.status());
  EXPECT_EQ(t->checksum_errors, 0u) << (t->errors.empty() ? "" : t->errors[0]);
  EXPECT_EQ(t->leaked, 0u);
  EXPECT_EQ(t->unreachable, 0u);
  EXPECT_EQ(t->double_allocated, 0u);
  EXPECT_EQ(t->total.asize, t->spa_allocated);
}

// Snapshot tank/fs@sN's dataset record on disk.
Result<DslDatasetPhys> SnapshotRecord(PoolReader& r, int n) {
  UZFS_ASSIGN_OR_RETURN(auto fs, r.ResolveDataset("tank/fs"));
  UZFS_ASSIGN_OR_RETURN(auto names, r.MosZap(fs.ds.snapnames_zapobj));
  UZFS_ASSIGN_OR_RETURN(ZapEntry e, names.Lookup("s" + std::to_string(n)));
  UZFS_ASSIGN_OR_RETURN(auto dn, r.MosObject(e.value()));
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys ds, DecodeDslDataset(dn.bonus));
  return ds;
}

// Whether snapshot tank/fs@sN has a user hold on disk.
Result<bool> HoldsOnDisk(PoolReader& r, int n) {
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys ds, SnapshotRecord(r, n));
  if (ds.userrefs_obj == 0) return false;
  UZFS_ASSIGN_OR_RETURN(auto refs, r.MosZap(ds.userrefs_obj));
  UZFS_ASSIGN_OR_RETURN(auto entries, refs.List());
  return !entries.empty();
}

// Snapshot tank/fs@sN's user property com.uzfs:n on disk ("" for none).
Result<std::string> PropOnDisk(PoolReader& r, int n) {
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys ds, SnapshotRecord(r, n));
  if (ds.props_obj == 0) return std::string();
  UZFS_ASSIGN_OR_RETURN(auto props, r.MosZap(ds.props_obj));
  auto v = props.Lookup("com.uzfs:n");
  if (!v.ok()) return v.status().IsNotFound() ? Result<std::string>(std::string()) : Result<std::string>(v.status());
  return v->text();
}

// Whether snapshot tank/fs@sN carries the deferred-destroy mark on disk.
Result<bool> MarkedOnDisk(PoolReader& r, int n) {
  UZFS_ASSIGN_OR_RETURN(DslDatasetPhys ds, SnapshotRecord(r, n));
  return (ds.flags & kDsFlagDeferDestroy) != 0;
}

void RunKills(uint64_t version) {
  test::TempDir dir;
  std::vector<uint64_t> objs;
  {
    std::unique_ptr<Pool> p = NewTank(dir.path(), version, &objs);
    ASSERT_NE(p, nullptr);
    ASSERT_UZFS_OK(p->Export());
  }
  const uint64_t base = BaseSeed();
  std::printf("snapshot crash test: version %llu, seed %llu\n", static_cast<unsigned long long>(version),
              static_cast<unsigned long long>(base));
  Model m;
  std::set<int> on_disk;  // snapshot numbers there after the last check
  ChildState disk;        // the clones and holds there after the last check
  int taken_total = 0, destroyed_total = 0, checked = 0, clones_total = 0, marks_total = 0;
  for (int iter = 0; iter < Iterations(); iter++) {
    SCOPED_TRACE("iteration " + std::to_string(iter) + ", seed " + std::to_string(base));
    std::mt19937_64 rng(base + static_cast<uint64_t>(iter));
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(pipe_fds[0]);
      ChildState st = disk;
      st.snaps = on_disk;
      st.next_snap = m.next_snap;
      st.next_version = m.next_version;
      ChildLoop(dir.path(), objs, st, rng(), pipe_fds[1]);
    }
    ::close(pipe_fds[1]);
    // Replay what the child reported.
    std::string text;
    if (iter == Iterations() - 1 && taken_total == 0) {
      EXPECT_TRUE(WaitForReport(pipe_fds[0], "S+ ", &text)) << "the child took no snapshot";
    }
    ASSERT_NO_FATAL_FAILURE(KillAfterRandomDelay(pid, rng));
    char buf[4096];
    for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof(buf))) > 0;) text.append(buf, static_cast<size_t>(n));
    ::close(pipe_fds[0]);
    std::set<int> begun, taken, destroying, destroyed;
    std::map<int, int> cloning;  // clone -> snapshot
    std::set<int> cloned, unclone_begun, uncloned, holding, held, releasing, released, marking, marked;
    std::istringstream in(text);
    std::string what;
    while (in >> what) {
      if (what == "w") {
        int i = 0;
        uint64_t v = 0;
        in >> i >> v;
        m.head[i] = v;
        m.next_version = std::max(m.next_version, v + 1);
      } else if (what == "C") {
        int k = 0, n = 0;
        in >> k >> n;
        cloning[k] = n;
        disk.next_clone = std::max(disk.next_clone, k + 1);
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
        } else if (what == "C+") {
          cloned.insert(n);
        } else if (what == "X") {
          unclone_begun.insert(n);
        } else if (what == "X+") {
          uncloned.insert(n);
        } else if (what == "H") {
          holding.insert(n);
        } else if (what == "H+") {
          held.insert(n);
        } else if (what == "R") {
          releasing.insert(n);
        } else if (what == "R+") {
          released.insert(n);
        } else if (what == "E") {
          marking.insert(n);
        } else if (what == "E+") {
          marked.insert(n);
        }
      }
    }
    // A marked snapshot may go with a release of its hold or a destroy of
    // a clone of it.
    for (int n : releasing) {
      if (disk.marked.count(n) || marking.count(n)) destroying.insert(n);
    }
    for (int k : unclone_begun) {
      const int n = disk.clones.count(k) ? disk.clones[k] : cloning.count(k) ? cloning[k] : -1;
      if (disk.marked.count(n) || marking.count(n)) destroying.insert(n);
    }
    // The pool as it is on disk now.
    auto r = PoolReader::Open(dir.path().string(), "tank");
    ASSERT_UZFS_OK(r.status());
    ASSERT_NO_FATAL_FAILURE(ExpectTraverseClean(**r));
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
      auto prop = PropOnDisk(**r, n);
      ASSERT_UZFS_OK(prop.status());
      EXPECT_EQ(*prop, std::to_string(n)) << "s" << n << "'s property, taken in its txg";
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
    // Clones: each there once made, gone once destroyed, cloned from the
    // snapshot it was asked of.
    std::map<int, int> clones_found;
    for (int k = 0; k < disk.next_clone; k++) {
      auto c = r->get()->ResolveDataset("tank/c" + std::to_string(k));
      if (!c.ok()) continue;
      auto fs = r->get()->ResolveDataset("tank/fs");
      ASSERT_UZFS_OK(fs.status());
      auto names = r->get()->MosZap(fs->ds.snapnames_zapobj);
      ASSERT_UZFS_OK(names.status());
      auto entries = names->List();
      ASSERT_UZFS_OK(entries.status());
      int n = -1;
      for (const ZapEntry& e : *entries) {
        if (e.value() == c->dir.origin_obj) n = std::atoi(e.name.c_str() + 1);
      }
      clones_found[k] = n;
    }
    std::map<int, int> expected_clones = disk.clones;
    for (const auto& [k, n] : cloning) expected_clones[k] = n;
    for (const auto& [k, n] : clones_found) {
      EXPECT_TRUE(expected_clones.count(k)) << "c" << k << " is there, which the child never asked for";
      EXPECT_EQ(n, expected_clones[k]) << "c" << k << "'s origin";
      EXPECT_FALSE(uncloned.count(k)) << "c" << k << " was destroyed";
    }
    for (const auto& [k, n] : expected_clones) {
      if ((disk.clones.count(k) || cloned.count(k)) && !unclone_begun.count(k)) {
        EXPECT_TRUE(clones_found.count(k)) << "c" << k << " vanished";
      }
    }
    clones_total += static_cast<int>(cloned.size());
    disk.clones = clones_found;
    // Holds: there once placed, gone once released.
    std::set<int> held_found;
    for (const auto& [n, bp] : found) {
      auto holds = HoldsOnDisk(**r, n);
      ASSERT_UZFS_OK(holds.status());
      if (*holds) held_found.insert(n);
      const bool was = disk.held.count(n) != 0;
      if ((was || held.count(n)) && !releasing.count(n)) {
        EXPECT_TRUE(*holds) << "s" << n << "'s hold vanished";
      }
      if (released.count(n) && !holding.count(n)) {
        EXPECT_FALSE(*holds) << "s" << n << " was released";
      }
      if (!was && !holding.count(n)) {
        EXPECT_FALSE(*holds) << "s" << n << " was never held";
      }
    }
    disk.held = held_found;
    // Deferred-destroy marks: there once marked, never on one not asked.
    std::set<int> marked_found;
    for (const auto& [n, bp] : found) {
      auto mark = MarkedOnDisk(**r, n);
      ASSERT_UZFS_OK(mark.status());
      if (*mark) marked_found.insert(n);
      if (disk.marked.count(n) || marked.count(n)) {
        EXPECT_TRUE(*mark) << "s" << n << "'s deferred-destroy mark vanished";
      }
      if (!disk.marked.count(n) && !marking.count(n)) {
        EXPECT_FALSE(*mark) << "s" << n << " was never marked";
      }
      if (*mark) {
        // A mark with nothing keeping the snapshot would never be acted on.
        bool kept = held_found.count(n) != 0;
        for (const auto& [k, o] : clones_found) kept = kept || o == n;
        EXPECT_TRUE(kept) << "s" << n << " is marked, but no hold or clone keeps it";
      }
    }
    marks_total += static_cast<int>(marked.size());
    disk.marked = marked_found;
    if (::testing::Test::HasFailure()) return;
  }
  std::printf("%d kills; %d snapshots taken, %d destroyed, %d found and read back, %d clones made, %d marked\n",
              Iterations(), taken_total, destroyed_total, checked, clones_total, marks_total);
  EXPECT_GT(taken_total, 0) << "no kill came after a snapshot: nothing was tested";
  // (In a short run on a busy machine every other kill may come early.)
  if (Iterations() >= 30) {
    EXPECT_GT(destroyed_total, 0) << "no destroy finished before a kill";
  }
  // Imported once more: everything destroyed, the pool is consistent and
  // its records say so (no snapshot usage, the file system holds all it
  // references alone).
  {
    auto p = pooltest::ImportFrom(dir.path(), "tank");
    ASSERT_UZFS_OK(p.status());
    for (const auto& [k, n] : disk.clones) ASSERT_UZFS_OK((*p)->DestroyDataset("tank/c" + std::to_string(k)));
    std::vector<std::string> names;
    for (int n : on_disk) names.push_back("tank/fs@s" + std::to_string(n));
    std::vector<std::string> held_names;
    for (int n : disk.held) held_names.push_back("tank/fs@s" + std::to_string(n));
    if (!held_names.empty()) ASSERT_UZFS_OK((*p)->Release(held_names, "keep"));
    {
      // (Marked ones went with their last hold or clone.)
      auto left = (*p)->ListDatasets(true);
      ASSERT_UZFS_OK(left.status());
      std::erase_if(names, [&](const std::string& n) {
        return std::none_of(left->begin(), left->end(), [&](const DatasetInfo& i) { return i.name == n; });
      });
      for (int n : disk.marked) {
        EXPECT_TRUE(std::find(names.begin(), names.end(), "tank/fs@s" + std::to_string(n)) == names.end())
            << "s" << n << " is marked and nothing keeps it: it should be gone";
      }
    }
    if (!names.empty()) ASSERT_UZFS_OK((*p)->DestroySnapshots(names));
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

// Promotion killed at random moments: a child promotes a clone and its
// origin's file system in turn, writing to both and syncing, until killed.
// After each kill the pool is consistent (our zdb), exactly one of the two
// is the other's clone, the three snapshots are all there (under the one
// that holds the history) and each still reads as it was taken.
void RunPromoteKills(uint64_t version) {
  test::TempDir dir;
  std::vector<uint64_t> objs;
  {
    std::unique_ptr<Pool> p = NewTank(dir.path(), version, &objs);
    ASSERT_NE(p, nullptr);
    ASSERT_UZFS_OK(p->Sync());
    for (int n = 0; n < 3; n++) {
      ASSERT_UZFS_OK(p->Snapshot({"tank/fs@s" + std::to_string(n)}));
      auto os = p->Objset("tank/fs");
      ASSERT_UZFS_OK(os.status());
      auto tx = p->Begin(kObjBytes);
      ASSERT_UZFS_OK(tx.status());
      ASSERT_UZFS_OK((*os)->Write(objs[n], 0, Content(n, 1000 + n), tx->txg()));
      tx->Commit();
      ASSERT_UZFS_OK(p->Sync());
    }
    ASSERT_UZFS_OK(p->Clone("tank/fs@s1", "tank/c", {}));
    ASSERT_UZFS_OK(p->Export());
  }
  // What each snapshot holds: s0 the originals, s1 object 0 rewritten, s2
  // objects 0 and 1.
  auto expected = [&](int n, int i) {
    return i < n ? Content(i, 1000 + static_cast<uint64_t>(i)) : test::RandomBytes(kObjBytes, static_cast<uint64_t>(i));
  };
  const uint64_t base = BaseSeed();
  std::printf("promote crash test: version %llu, seed %llu\n", static_cast<unsigned long long>(version),
              static_cast<unsigned long long>(base));
  int promotions = 0;
  for (int iter = 0; iter < Iterations(); iter++) {
    SCOPED_TRACE("iteration " + std::to_string(iter) + ", seed " + std::to_string(base));
    std::mt19937_64 rng(base + static_cast<uint64_t>(iter));
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(pipe_fds[0]);
      auto p = pooltest::ImportFrom(dir.path(), "tank");
      if (!p.ok()) _exit(2);
      std::mt19937_64 crng(rng());
      for (uint64_t v = 1;; v++) {
        // A promotion first, then one op in three.
        const int op = v == 1 ? 0 : static_cast<int>(crng() % 3);
        const std::string ds = crng() % 2 ? "tank/fs" : "tank/c";
        if (op == 0) {
          auto l = (*p)->ListDatasets();
          if (!l.ok()) _exit(2);
          // The one that is a clone now.
          std::string clone;
          for (const DatasetInfo& i : *l) {
            if (!i.origin.empty()) clone = i.name;
          }
          if (clone.empty() || !(*p)->Promote(clone).ok()) _exit(2);
          Report(pipe_fds[1], "P");
        } else if (op == 1) {
          if (!(*p)->Sync().ok()) _exit(2);
        } else {
          auto os = (*p)->Objset(ds);
          if (!os.ok()) _exit(2);
          auto tx = (*p)->Begin(kObjBytes);
          if (!tx.ok()) _exit(2);
          const int i = 3 + static_cast<int>(crng() % (kObjects - 3));
          if (!(*os)->Write(objs[i], 0, Content(i, v), tx->txg()).ok()) _exit(2);
          tx->Commit();
        }
      }
    }
    ::close(pipe_fds[1]);
    std::string text;
    if (iter == Iterations() - 1 && promotions == 0) {
      EXPECT_TRUE(WaitForReport(pipe_fds[0], "P", &text)) << "the child made no promotion";
    }
    ASSERT_NO_FATAL_FAILURE(KillAfterRandomDelay(pid, rng));
    char buf[4096];
    for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof(buf))) > 0;) text.append(buf, static_cast<size_t>(n));
    promotions += static_cast<int>(text.size()) / 2;
    ::close(pipe_fds[0]);

    auto r = PoolReader::Open(dir.path().string(), "tank");
    ASSERT_UZFS_OK(r.status());
    ASSERT_NO_FATAL_FAILURE(ExpectTraverseClean(**r));
    auto fs = r->get()->ResolveDataset("tank/fs");
    auto c = r->get()->ResolveDataset("tank/c");
    ASSERT_UZFS_OK(fs.status());
    ASSERT_UZFS_OK(c.status());
    // The one whose origin is the other's snapshot is the clone.
    auto origin_dir = [&](const DslDatasetRef& ds) -> uint64_t {
      auto dn = r->get()->MosObject(ds.dir.origin_obj);
      if (!dn.ok()) return 0;
      auto phys = DecodeDslDataset(dn->bonus);
      return phys.ok() ? phys->dir_obj : 0;
    };
    const bool fs_is_clone = origin_dir(*fs) == c->dir_obj, c_is_clone = origin_dir(*c) == fs->dir_obj;
    EXPECT_NE(fs_is_clone, c_is_clone) << "exactly one is the other's clone";
    const DslDatasetRef& holder = fs_is_clone ? *c : *fs;
    auto names = r->get()->MosZap(holder.ds.snapnames_zapobj);
    ASSERT_UZFS_OK(names.status());
    for (int n = 0; n < 3; n++) {
      if (fs_is_clone && n == 2) continue;  // s2 is after the origin: fs keeps it
      auto e = names->Lookup("s" + std::to_string(n));
      SCOPED_TRACE("s" + std::to_string(n) + " under " + holder.name);
      ASSERT_UZFS_OK(e.status());
      auto dn = r->get()->MosObject(e->value());
      ASSERT_UZFS_OK(dn.status());
      auto ds = DecodeDslDataset(dn->bonus);
      ASSERT_UZFS_OK(ds.status());
      auto os = r->get()->reader().ReadObjset(ds->bp);
      ASSERT_UZFS_OK(os.status());
      for (int i = 0; i < 3; i++) {
        auto obj = r->get()->reader().ReadDnode(os->meta_dnode, objs[i]);
        ASSERT_UZFS_OK(obj.status());
        std::vector<uint8_t> got(kObjBytes);
        ASSERT_UZFS_OK(r->get()->reader().Read(*obj, 0, got));
        EXPECT_TRUE(got == expected(n, i)) << "s" << n << " object " << i;
      }
    }
    if (::testing::Test::HasFailure()) return;
  }
  std::printf("%d kills, %d promotions\n", Iterations(), promotions);
  EXPECT_GT(promotions, 0) << "no promotion finished before a kill: nothing was tested";
  // Everything destroyed at the end: the space adds up to nothing.
  {
    auto p = pooltest::ImportFrom(dir.path(), "tank");
    ASSERT_UZFS_OK(p.status());
    auto l = (*p)->ListDatasets(true);
    ASSERT_UZFS_OK(l.status());
    std::string clone, holder;
    for (const DatasetInfo& i : *l) {
      if (!i.snapshot && !i.origin.empty()) clone = i.name;
    }
    ASSERT_FALSE(clone.empty());
    holder = clone == "tank/fs" ? "tank/c" : "tank/fs";
    std::vector<std::string> clone_snaps;
    for (const DatasetInfo& i : *l) {
      if (i.snapshot && i.name.starts_with(clone + "@")) clone_snaps.push_back(i.name);
    }
    if (!clone_snaps.empty()) ASSERT_UZFS_OK((*p)->DestroySnapshots(clone_snaps));
    ASSERT_UZFS_OK((*p)->DestroyDataset(clone));
    std::vector<std::string> rest;
    for (const DatasetInfo& i : *l) {
      if (i.snapshot && i.name.starts_with(holder + "@")) rest.push_back(i.name);
    }
    ASSERT_UZFS_OK((*p)->DestroySnapshots(rest));
    l = (*p)->ListDatasets(true);
    ASSERT_UZFS_OK(l.status());
    for (const DatasetInfo& i : *l) {
      if (i.name != holder) continue;
      EXPECT_EQ(i.dir.used_breakdown[static_cast<int>(DdUsed::kSnap)], 0u);
      EXPECT_EQ(i.dir.used_bytes, i.ds.referenced_bytes);
    }
    ASSERT_UZFS_OK((*p)->Export());
  }
  pooltest::ExpectConsistent(dir.path(), "tank");
}

// Rollbacks that keep the later state (Pool::RollbackKeep) killed at
// random moments: a child writes to tank/fs, snapshots it, rolls it back
// to one of its snapshots keeping the later snapshots and its state as
// tank/kK ("K K N" / "K+ K"), destroys a kept file system with its
// snapshots ("Y K" / "Y+ K") and syncs, until killed. After each kill the
// pool is consistent (our zdb), every snapshot taken is under tank/fs or
// the kept file system it moved to and reads as it was taken, and every
// kept file system there is a clone of the snapshot rolled back to and
// holds what tank/fs held when the rollback was asked for.
struct KeepState {
  std::set<int> fs_snaps;                 // snapshots under tank/fs
  std::map<int, std::set<int>> kept;      // kept file system -> its snapshots
  std::map<int, int> origin;              // kept file system -> the snapshot it is a clone of
  int next_snap = 0, next_keep = 0;
  uint64_t next_version = 1;
};

// The kept file systems none of whose snapshots another kept one is a
// clone of (kept after that snapshot had moved there, or before it moved).
std::vector<int> Destroyable(const KeepState& st) {
  std::vector<int> out;
  for (const auto& [k, snaps] : st.kept) {
    bool origin = false;
    for (const auto& [other, n] : st.origin) origin = origin || (other != k && snaps.count(n));
    if (!origin) out.push_back(k);
  }
  return out;
}

[[noreturn]] void KeepChildLoop(const std::filesystem::path& dir, const std::vector<uint64_t>& objs, KeepState st,
                                uint64_t seed, int fd) {
  auto p = pooltest::ImportFrom(dir, "tank");
  if (!p.ok()) _exit(2);
  std::mt19937_64 rng(seed);
  auto write = [&](int i) {
    const uint64_t v = st.next_version++;
    Report(fd, "w " + std::to_string(i) + " " + std::to_string(v));
    auto os = (*p)->Objset("tank/fs");
    if (!os.ok()) _exit(2);
    auto tx = (*p)->Begin(kObjBytes);
    if (!tx.ok()) _exit(2);
    if (!(*os)->Write(objs[i], 0, Content(i, v), tx->txg()).ok()) _exit(2);
    tx->Commit();
  };
  for (int i = 0; i < kObjects; i++) write(i);
  for (bool first = true;; first = false) {
    const int op = first ? 4 : static_cast<int>(rng() % 8);
    if (op < 3) {
      write(static_cast<int>(rng() % kObjects));
    } else if (op == 3) {
      if (!(*p)->Sync().ok()) _exit(2);
    } else if (op < 6 || st.fs_snaps.empty()) {
      const int n = st.next_snap++;
      Report(fd, "S " + std::to_string(n));
      if (!(*p)->Snapshot({"tank/fs@s" + std::to_string(n)}).ok()) _exit(2);
      Report(fd, "S+ " + std::to_string(n));
      st.fs_snaps.insert(n);
    } else if (op == 6 || Destroyable(st).empty()) {
      auto it = st.fs_snaps.begin();
      std::advance(it, static_cast<long>(rng() % st.fs_snaps.size()));
      const int n = *it, k = st.next_keep++;
      Report(fd, "K " + std::to_string(k) + " " + std::to_string(n));
      if (auto r = (*p)->RollbackKeep("tank/fs@s" + std::to_string(n), "tank/k" + std::to_string(k)); !r.ok()) {
        std::fprintf(stderr, "child: rollback -k: %s\n", r.status().ToString().c_str());
        _exit(2);
      }
      Report(fd, "K+ " + std::to_string(k));
      st.origin[k] = n;
      std::set<int>& moved = st.kept[k];
      for (auto s = st.fs_snaps.upper_bound(n); s != st.fs_snaps.end();) {
        moved.insert(*s);
        s = st.fs_snaps.erase(s);
      }
    } else {
      const std::vector<int> can = Destroyable(st);
      const int k = can[rng() % can.size()];
      auto it = st.kept.find(k);
      Report(fd, "Y " + std::to_string(k));
      std::vector<std::string> names;
      for (int n : it->second) names.push_back("tank/k" + std::to_string(k) + "@s" + std::to_string(n));
      if (!names.empty()) {
        if (Status e = (*p)->DestroySnapshots(names); !e.ok()) {
          std::fprintf(stderr, "child: destroy of snapshots: %s\n", e.ToString().c_str());
          _exit(2);
        }
      }
      if (Status e = (*p)->DestroyDataset("tank/k" + std::to_string(k)); !e.ok()) {
        std::fprintf(stderr, "child: destroy: %s\n", e.ToString().c_str());
        _exit(2);
      }
      Report(fd, "Y+ " + std::to_string(k));
      st.kept.erase(it);
      st.origin.erase(k);
    }
  }
}

void RunKeepKills(uint64_t version) {
  test::TempDir dir;
  std::vector<uint64_t> objs;
  {
    std::unique_ptr<Pool> p = NewTank(dir.path(), version, &objs);
    ASSERT_NE(p, nullptr);
    ASSERT_UZFS_OK(p->Export());
  }
  const uint64_t base = BaseSeed();
  std::printf("rollback -k crash test: version %llu, seed %llu\n", static_cast<unsigned long long>(version),
              static_cast<unsigned long long>(base));
  KeepState disk;
  std::map<int, std::map<int, uint64_t>> snapshots;  // snapshot -> its objects' versions
  std::map<int, std::map<int, uint64_t>> kept_head;  // kept file system -> its head's versions
  std::map<int, int> kept_origin;                    // kept file system -> snapshot
  int keeps = 0, checked = 0;
  auto read_back = [&](PoolReader& r, const BlockPtr& bp, const std::map<int, uint64_t>& versions,
                       const std::string& what) {
    auto os = r.reader().ReadObjset(bp);
    ASSERT_UZFS_OK(os.status());
    for (int i = 0; i < kObjects; i++) {
      auto dn = r.reader().ReadDnode(os->meta_dnode, objs[i]);
      ASSERT_UZFS_OK(dn.status());
      std::vector<uint8_t> got(kObjBytes);
      ASSERT_UZFS_OK(r.reader().Read(*dn, 0, got));
      auto v = versions.find(i);
      const auto want = v != versions.end() ? Content(i, v->second) : test::RandomBytes(kObjBytes, i);
      EXPECT_TRUE(got == want) << what << " object " << i;
    }
    checked++;
  };
  for (int iter = 0; iter < Iterations(); iter++) {
    SCOPED_TRACE("iteration " + std::to_string(iter) + ", seed " + std::to_string(base));
    std::mt19937_64 rng(base + static_cast<uint64_t>(iter));
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(pipe_fds[0]);
      KeepChildLoop(dir.path(), objs, disk, rng(), pipe_fds[1]);
    }
    ::close(pipe_fds[1]);
    std::string text;
    if (iter == Iterations() - 1 && keeps == 0) {
      EXPECT_TRUE(WaitForReport(pipe_fds[0], "K+ ", &text)) << "the child kept nothing";
    }
    ASSERT_NO_FATAL_FAILURE(KillAfterRandomDelay(pid, rng));
    char buf[4096];
    for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof(buf))) > 0;) text.append(buf, static_cast<size_t>(n));
    ::close(pipe_fds[0]);
    // Replay: what the child asked for, and where each snapshot may be.
    std::map<int, uint64_t> head;
    std::set<int> taken, keeping, kept, dropping, dropped;
    std::map<int, std::set<int>> may_be;  // snapshot -> holders (-1: tank/fs)
    for (int n : disk.fs_snaps) may_be[n] = {-1};
    for (const auto& [k, ns] : disk.kept) {
      for (int n : ns) may_be[n] = {k};
    }
    std::istringstream in(text);
    std::string what;
    while (in >> what) {
      if (what == "w") {
        int i = 0;
        uint64_t v = 0;
        in >> i >> v;
        head[i] = v;
        disk.next_version = std::max(disk.next_version, v + 1);
      } else if (what == "K") {
        int k = 0, n = 0;
        in >> k >> n;
        keeping.insert(k);
        kept_head[k] = head;
        kept_origin[k] = n;
        head = snapshots[n];
        disk.next_keep = std::max(disk.next_keep, k + 1);
        for (auto& [s, holders] : may_be) {
          if (s > n && holders.count(-1)) holders.insert(k);
        }
      } else {
        int n = 0;
        in >> n;
        if (what == "S") {
          snapshots[n] = head;
          disk.next_snap = std::max(disk.next_snap, n + 1);
          may_be[n] = {-1};
        } else if (what == "S+") {
          taken.insert(n);
        } else if (what == "K+") {
          kept.insert(n);
          for (auto& [s, holders] : may_be) {
            if (s > kept_origin[n] && holders.count(-1) && holders.count(n)) holders.erase(-1);
          }
        } else if (what == "Y") {
          dropping.insert(n);
        } else if (what == "Y+") {
          dropped.insert(n);
        }
      }
    }
    auto r = PoolReader::Open(dir.path().string(), "tank");
    ASSERT_UZFS_OK(r.status());
    ASSERT_NO_FATAL_FAILURE(ExpectTraverseClean(**r));
    // The kept file systems there, each a clone of its snapshot holding
    // what tank/fs held when it was asked for.
    KeepState now;
    now.next_snap = disk.next_snap;
    now.next_keep = disk.next_keep;
    now.next_version = disk.next_version;
    std::string error;
    std::map<int, std::map<int, BlockPtr>> found;  // holder -> snapshots
    std::map<int, BlockPtr> origin_bps;            // kept file system -> its origin's tree
    found[-1] = SnapshotsOnDisk(**r, &error);
    EXPECT_EQ(error, "");
    for (int k = 0; k < disk.next_keep; k++) {
      const std::string name = "tank/k" + std::to_string(k);
      auto c = r->get()->ResolveDataset(name);
      const bool expected = (disk.kept.count(k) || kept.count(k)) && !dropping.count(k);
      if (!c.ok()) {
        EXPECT_FALSE(expected) << name << " vanished";
        continue;
      }
      EXPECT_TRUE(disk.kept.count(k) || keeping.count(k)) << name << " is there, which the child never asked for";
      EXPECT_FALSE(dropped.count(k)) << name << " was destroyed";
      found[k] = SnapshotsOnDisk(**r, &error, name);
      EXPECT_EQ(error, "");
      auto dn = r->get()->MosObject(c->dir.origin_obj);
      ASSERT_UZFS_OK(dn.status());
      auto origin = DecodeDslDataset(dn->bonus);
      ASSERT_UZFS_OK(origin.status());
      origin_bps[k] = origin->bp;
      if (keeping.count(k) && !disk.kept.count(k)) {
        ASSERT_NO_FATAL_FAILURE(read_back(**r, c->ds.bp, kept_head[k], name));
        keeps++;
      }
    }
    // Every snapshot where it may be, as it was taken.
    for (const auto& [holder, snaps] : found) {
      for (const auto& [n, bp] : snaps) {
        EXPECT_TRUE(snapshots.count(n)) << "s" << n << " is there, which the child never asked for";
        EXPECT_TRUE(may_be[n].count(holder)) << "s" << n << " is under the wrong file system";
        ASSERT_NO_FATAL_FAILURE(read_back(**r, bp, snapshots[n], "s" + std::to_string(n)));
        if (holder < 0) {
          now.fs_snaps.insert(n);
        } else {
          now.kept[holder].insert(n);
        }
      }
    }
    for (const auto& [k, snaps] : found) {
      if (k >= 0) now.kept[k];  // (a kept file system without snapshots too)
    }
    // Each kept one's origin is the snapshot rolled back to, wherever it
    // has moved since.
    for (const auto& [k, bp] : origin_bps) {
      const int n = kept_origin[k];
      bool match = false;
      for (const auto& [holder, snaps] : found) {
        auto it = snaps.find(n);
        match = match || (it != snaps.end() && it->second == bp);
      }
      EXPECT_TRUE(match) << "tank/k" << k << "'s origin is not s" << n;
    }
    for (int n : taken) {
      bool there = false;
      for (const auto& [holder, snaps] : found) there = there || snaps.count(n);
      bool dropped_with = false;
      for (int k : may_be[n]) dropped_with = dropped_with || dropping.count(k);
      if (!dropped_with) {
        EXPECT_TRUE(there) << "s" << n << " was taken";
      }
    }
    for (const auto& [k, snaps] : now.kept) now.origin[k] = kept_origin[k];
    disk = now;
    if (::testing::Test::HasFailure()) return;
  }
  std::printf("%d kills; %d kept file systems read back, %d trees checked\n", Iterations(), keeps, checked);
  EXPECT_GT(keeps, 0) << "no rollback finished before a kill: nothing was tested";
  // Everything destroyed at the end: the records say so.
  {
    auto p = pooltest::ImportFrom(dir.path(), "tank");
    ASSERT_UZFS_OK(p.status());
    for (std::vector<int> can; !(can = Destroyable(disk)).empty();) {
      const int k = can[0];
      std::vector<std::string> names;
      for (int n : disk.kept[k]) names.push_back("tank/k" + std::to_string(k) + "@s" + std::to_string(n));
      if (!names.empty()) ASSERT_UZFS_OK((*p)->DestroySnapshots(names));
      ASSERT_UZFS_OK((*p)->DestroyDataset("tank/k" + std::to_string(k)));
      disk.kept.erase(k);
      disk.origin.erase(k);
    }
    EXPECT_TRUE(disk.kept.empty());
    std::vector<std::string> names;
    for (int n : disk.fs_snaps) names.push_back("tank/fs@s" + std::to_string(n));
    if (!names.empty()) ASSERT_UZFS_OK((*p)->DestroySnapshots(names));
    auto l = (*p)->ListDatasets(true);
    ASSERT_UZFS_OK(l.status());
    for (const DatasetInfo& i : *l) {
      if (i.name != "tank/fs") continue;
      EXPECT_EQ(i.dir.used_breakdown[static_cast<int>(DdUsed::kSnap)], 0u);
      EXPECT_EQ(i.dir.used_bytes, i.ds.referenced_bytes);
    }
    ASSERT_UZFS_OK((*p)->Export());
  }
  pooltest::ExpectConsistent(dir.path(), "tank");
}

TEST(PoolSnapshotCrash, KilledWhileRollingBackKeepingV23) { RunKeepKills(23); }
TEST(PoolSnapshotCrash, KilledWhileRollingBackKeepingV5000) { RunKeepKills(5000); }

TEST(PoolSnapshotCrash, KilledWhilePromotingV23) { RunPromoteKills(23); }
TEST(PoolSnapshotCrash, KilledWhilePromotingV5000) { RunPromoteKills(5000); }

TEST(PoolSnapshotCrash, KilledWhileSnapshottingV23) { RunKills(23); }
TEST(PoolSnapshotCrash, KilledWhileSnapshottingV5000) { RunKills(5000); }

}  // namespace
}  // namespace uzfs
