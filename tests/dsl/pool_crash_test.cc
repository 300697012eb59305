// Crash consistency: a writer process is killed (SIGKILL) at random points
// — inside txg syncs, between them, during import — and after every kill
// the pool must import at the last txg whose Sync returned or at the one
// that was syncing, our zdb -b (TraversePool) must find it consistent, and
// the datasets, a user property and every object's bytes must be exactly
// those of the txg it landed at.
//
// Each iteration forks a child that imports the pool (ScanDeviceDir +
// Pool::Import) and loops: a few object operations (allocate, write with
// deterministic content — random, compressible or all-zero — free a range,
// truncate, free the object) in the datasets, then either Sync() or a
// dataset operation (create, destroy, rename, set a property; each syncs).
// It tells the parent through a pipe what it did: one record per
// operation, "sync begins (txg T)" before each syncing call and "synced
// (txg T)" after it returns (records are smaller than PIPE_BUF, so each
// write is atomic, and what is in the pipe survives the kill). The parent
// keeps a model of the pool: the state at the last synced txg plus the
// operations of the txg being synced. After SIGKILL and waitpid it opens
// the pool read-only (PoolReader) and checks:
//   - uberblock txg == last synced txg L, or == the txg whose sync had
//     begun (only then); before the child reported anything, L is the txg
//     the parent saw on disk after the previous iteration, and L + 1 is
//     allowed too until the first "synced" record arrives (Import's own
//     sync may land before the child reports it: during Import, or between
//     its "imported" and "synced" records);
//   - TraversePool: no checksum errors, nothing leaked, unreachable or
//     doubly allocated, total asize == the space maps' allocated;
//   - the dataset names are exactly the model's at that txg, the user
//     property com.uzfs:gen has the model's value;
//   - every object of every dataset reads back the model's bytes, and
//     every object number the model says is free is free.
// The model then takes the state found and the next child starts from it
// (the child gets the model by fork, and first checks that its import
// chose the same uberblock). The last step imports in the parent, exports
// and checks the pool once more.
//
// Runs: RaidzKill (raidz1 over 3 sparse 128 MiB files, ashift 9, version
// 23) and MirrorKill (a 2-way mirror, a quarter of the iterations).
// Stress mode (the 200+ iterations):
//   UZFS_STRESS_ITERATIONS=200 build/tests/pool_crash_test
// Replay a failure with the seed it printed (the same operations and kill
// delays; where a kill lands still depends on the machine's speed):
//   UZFS_CRASH_SEED=<seed> [UZFS_STRESS_ITERATIONS=<n>] build/tests/pool_crash_test
// Kill delays are 5..400 ms after fork (20..1500 ms in sanitized builds,
// whose default is 8 iterations), drawn from the seeded RNG.
//
// What SIGKILL does not cover: writes a process issued before it died are
// in the page cache and survive, so this checks the ordering of the sync
// (nothing live overwritten, uberblock last) and import's choice, not lost
// or torn device writes (the fault-injecting devices' tests cover those).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"
#include "zfs/inspect/block_traverse.h"
#include "zfs/inspect/pool_reader.h"

#if defined(UZFS_ASAN) || defined(__SANITIZE_ADDRESS__)
#define UZFS_CRASH_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UZFS_CRASH_SANITIZED 1
#endif
#endif

namespace uzfs {
namespace {

namespace fs = std::filesystem;

using pooltest::Group;

constexpr const char* kPool = "tank";
constexpr size_t kMaxObjectsPerDataset = 24;
constexpr size_t kMaxChurnDatasets = 4;
constexpr uint64_t kMaxOffset = 384 << 10;
constexpr uint64_t kTruncate = UINT64_MAX;

// Kill delays (ms after fork). Sanitized builds import and sync several
// times slower, so their children get longer to reach their syncs.
#ifdef UZFS_CRASH_SANITIZED
constexpr int kMinDelayMs = 20, kMaxDelayMs = 1500;
#else
constexpr int kMinDelayMs = 5, kMaxDelayMs = 400;
#endif

int Iterations() {
  if (const char* e = std::getenv("UZFS_STRESS_ITERATIONS"); e && *e) return std::max(1, std::atoi(e));
#ifdef UZFS_CRASH_SANITIZED
  return 8;
#else
  return 20;
#endif
}

uint64_t BaseSeed() {
  if (const char* e = std::getenv("UZFS_CRASH_SEED"); e && *e) return std::strtoull(e, nullptr, 0);
  return (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
}

// ------------------------------------------------------------------ model

// The bytes an object was written with: all zero (the writer turns such
// blocks into holes), compressible, or random.
std::vector<uint8_t> Content(uint64_t len, uint64_t seed) {
  switch (seed % 4) {
    case 0:
      return std::vector<uint8_t>(len, 0);
    case 1: {
      std::vector<uint8_t> v(len);
      for (uint64_t i = 0; i < len; i++) v[i] = static_cast<uint8_t>('a' + ((seed >> 8) + i / 97) % 26);
      return v;
    }
    default:
      return test::RandomBytes(len, seed);
  }
}

struct DsState {
  std::map<uint64_t, std::vector<uint8_t>> objs;  // object -> its bytes
  uint64_t max_obj = 0;                           // highest object number ever used
  std::string gen;                                // com.uzfs:gen ("" = unset)
};

struct Model {
  std::map<std::string, DsState> ds;
  uint64_t next_id = 0;  // names of new datasets: tank/c<id>, tank/r<id>
};

enum RecType : uint32_t {
  kImported = 1,  // txg: the uberblock the child's import chose
  kAlloc,         // ds, obj
  kWrite,         // ds, obj, off, len, seed
  kFreeRange,     // ds, obj, off, len (kTruncate: truncate at off)
  kFreeObj,       // ds, obj
  kCreate,        // ds (new name), obj = id
  kDestroy,       // ds
  kRename,        // ds -> ds2, obj = id
  kSetGen,        // ds, seed = value of com.uzfs:gen
  kSetCompress,   // ds, ds2 = value
  kSyncBegin,     // txg: the open txg a syncing call is about to write
  kSynced,        // txg: uberblock().txg after that call returned; obj/off/len:
                  // the engine's txgs closed by timeout/dirty/request so far
};

struct Rec {
  uint32_t type = 0;
  uint32_t pad = 0;
  uint64_t txg = 0, obj = 0, off = 0, len = 0, seed = 0;
  char ds[40] = {};
  char ds2[40] = {};
};
static_assert(sizeof(Rec) < PIPE_BUF);

void SetName(char (&dst)[40], const std::string& s) {
  std::snprintf(dst, sizeof dst, "%s", s.c_str());
}

// A kSynced record also carries why the engine closed its txgs, so a
// failure can tell a txg the child asked for from one the engine closed by
// itself.
void SetCloseCounts(const Pool& pool, Rec& r) {
  const TxgStats st = pool.txg_stats();
  r.obj = st.closed_by_timeout;
  r.off = st.closed_by_dirty;
  r.len = st.closed_by_request;
}

// Applies one change record to the model.
void Apply(Model& m, const Rec& r) {
  const std::string ds(r.ds), ds2(r.ds2);
  switch (r.type) {
    case kAlloc: {
      DsState& d = m.ds[ds];
      d.objs[r.obj].clear();
      d.max_obj = std::max(d.max_obj, r.obj);
      break;
    }
    case kWrite: {
      std::vector<uint8_t>& v = m.ds[ds].objs[r.obj];
      if (v.size() < r.off + r.len) v.resize(r.off + r.len, 0);
      const std::vector<uint8_t> c = Content(r.len, r.seed);
      std::copy(c.begin(), c.end(), v.begin() + static_cast<ptrdiff_t>(r.off));
      break;
    }
    case kFreeRange: {
      std::vector<uint8_t>& v = m.ds[ds].objs[r.obj];
      if (r.off >= v.size()) break;
      if (r.len == kTruncate) {
        v.resize(r.off);
      } else {
        std::fill(v.begin() + static_cast<ptrdiff_t>(r.off),
                  v.begin() + static_cast<ptrdiff_t>(std::min<uint64_t>(v.size(), r.off + r.len)), 0);
      }
      break;
    }
    case kFreeObj:
      m.ds[ds].objs.erase(r.obj);
      break;
    case kCreate:
      m.ds[ds] = DsState{};
      m.next_id = std::max(m.next_id, r.obj + 1);
      break;
    case kDestroy:
      m.ds.erase(ds);
      break;
    case kRename: {
      auto node = m.ds.extract(ds);
      node.key() = ds2;
      m.ds.insert(std::move(node));
      m.next_id = std::max(m.next_id, r.obj + 1);
      break;
    }
    case kSetGen:
      m.ds[ds].gen = std::to_string(r.seed);
      break;
    default:
      break;  // kSetCompress changes no content; protocol records
  }
}

// ------------------------------------------------------------------ child

// Transactions through whichever API the pool has: Pool::Begin/Tx (the txg
// engine) or, before it, writes straight into open_txg().
template <typename P>
Status InTxg(P& pool, uint64_t bytes, const std::function<Status(Txg txg)>& fn) {
  if constexpr (requires { pool.Begin(bytes); }) {
    auto tx = pool.Begin(bytes);
    if (!tx.ok()) return tx.status();
    Status s = fn(tx->txg());
    tx->Commit();
    return s;
  } else {
    return fn(pool.open_txg());
  }
}

bool SendRec(int fd, const Rec& r) {
  return ::write(fd, &r, sizeof r) == static_cast<ssize_t>(sizeof r);
}

int ChildFail(const char* what, const Status& s) {
  std::fprintf(stderr, "crash child: %s: %s\n", what, s.ToString(true).c_str());
  return 2;
}

// The child's whole life (after fork; never returns into gtest: the
// caller _exit()s with the result). Runs until killed.
int ChildMain(const fs::path& dir, Model m, uint64_t seed, int fd) {
  std::mt19937_64 rng(seed);
  auto devs = ScanDeviceDir(dir.string());
  if (!devs.ok()) return ChildFail("scan", devs.status());
  Result<std::unique_ptr<Pool>> imported = Pool::Import(*devs, kPool, PoolImportOptions{});
  // A killed predecessor's files may stay locked a moment (io_uring
  // requests are torn down asynchronously after the process is gone).
  for (int i = 0; i < 100 && !imported.ok() && imported.status().code() == Code::kBusy; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    imported = Pool::Import(*devs, kPool, PoolImportOptions{});
  }
  if (!imported.ok()) return ChildFail("import", imported.status());
  Pool& pool = **imported;
  // A kill in the middle of a sync may leave a leaf behind the others: the
  // import then resilvers it, and the end of the resilver asks for a sync
  // of its own. Both are over before the child says what is synced (else
  // a txg would land that the parent's model knows nothing of).
  pool.WaitScan();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (Status s = pool.Sync(); !s.ok()) return ChildFail("sync", s);
  {
    Rec r;
    r.type = kImported;
    r.txg = pool.import_txg();
    if (!SendRec(fd, r)) return 3;
    // The import's syncs (the labels say ACTIVE at once) and ours above: a
    // synced txg with the imported state.
    Rec b;
    b.type = kSyncBegin;
    b.txg = pool.uberblock().txg;
    if (!SendRec(fd, b)) return 3;
    Rec d;
    d.type = kSynced;
    d.txg = pool.uberblock().txg;
    SetCloseCounts(pool, d);
    if (!SendRec(fd, d)) return 3;
  }
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  for (int round = 0; round < 1000000; round++) {
    const int nops = static_cast<int>(rng() % 6);
    for (int k = 0; k < nops; k++) {
      auto dsit = std::next(m.ds.begin(), static_cast<ptrdiff_t>(pick(m.ds.size())));
      const std::string name = dsit->first;
      DsState& d = dsit->second;
      auto os = pool.Objset(name);
      if (!os.ok()) return ChildFail(("objset " + name).c_str(), os.status());
      Rec r;
      SetName(r.ds, name);
      const int what = static_cast<int>(rng() % 100);
      if (d.objs.empty() || (what < 25 && d.objs.size() < kMaxObjectsPerDataset)) {
        ObjectProps op;
        static constexpr uint64_t kBs[] = {512, 4096, 16384, 131072};
        static constexpr uint8_t kInd[] = {10, 12, 14, 17};
        op.block_size = kBs[pick(4)];
        op.indblkshift = kInd[pick(4)];
        r.type = kAlloc;
        Status s = InTxg(pool, 1024, [&](Txg txg) -> Status {
          UZFS_ASSIGN_OR_RETURN(r.obj, (*os)->AllocateObject(op, txg));
          return Status::Ok();
        });
        if (!s.ok()) return ChildFail("allocate", s);
      } else {
        auto oit = std::next(d.objs.begin(), static_cast<ptrdiff_t>(pick(d.objs.size())));
        r.obj = oit->first;
        if (what < 70) {
          r.type = kWrite;
          r.off = rng() % kMaxOffset;
          r.len = 1 + (rng() % 2 ? rng() % (64 << 10) : rng() % 700);
          r.seed = rng();
          const std::vector<uint8_t> c = Content(r.len, r.seed);
          Status s = InTxg(pool, r.len, [&](Txg txg) { return (*os)->Write(r.obj, r.off, c, txg); });
          if (!s.ok()) return ChildFail("write", s);
        } else if (what < 85) {
          r.type = kFreeRange;
          r.off = rng() % std::max<uint64_t>(1, oit->second.size() + 4096);
          r.len = rng() % 4 == 0 ? kTruncate : 1 + rng() % (128 << 10);
          Status s = InTxg(pool, 4096, [&](Txg txg) { return (*os)->FreeRange(r.obj, r.off, r.len, txg); });
          if (!s.ok()) return ChildFail("free range", s);
        } else {
          r.type = kFreeObj;
          Status s = InTxg(pool, 4096, [&](Txg txg) { return (*os)->FreeObject(r.obj, txg); });
          if (!s.ok()) return ChildFail("free object", s);
        }
      }
      if (!SendRec(fd, r)) return 3;
      Apply(m, r);
    }

    // The syncing call: a dataset operation (each syncs) or Sync().
    std::vector<std::string> churn;
    for (const auto& [n, d] : m.ds) {
      if (n.starts_with("tank/c") || n.starts_with("tank/r")) churn.push_back(n);
    }
    Rec op;
    const int what = static_cast<int>(rng() % 100);
    if (what < 6 && churn.size() < kMaxChurnDatasets) {
      op.type = kCreate;
      op.obj = m.next_id;
      SetName(op.ds, "tank/c" + std::to_string(op.obj));
    } else if (what < 10 && !churn.empty()) {
      op.type = kDestroy;
      SetName(op.ds, churn[pick(churn.size())]);
    } else if (what < 14 && !churn.empty()) {
      op.type = kRename;
      op.obj = m.next_id;
      SetName(op.ds, churn[pick(churn.size())]);
      SetName(op.ds2, "tank/r" + std::to_string(op.obj));
    } else if (what < 20) {
      auto dsit = std::next(m.ds.begin(), static_cast<ptrdiff_t>(pick(m.ds.size())));
      SetName(op.ds, dsit->first);
      if (rng() % 2 || dsit->first == kPool) {
        op.type = kSetGen;
        op.seed = rng() % 1000000;
      } else {
        static constexpr const char* kComp[] = {"off", "lzjb", "gzip", "zle", "on"};
        op.type = kSetCompress;
        SetName(op.ds2, kComp[pick(5)]);
      }
    }
    Rec begin;
    begin.type = kSyncBegin;
    begin.txg = pool.open_txg().number();
    if (!SendRec(fd, begin)) return 3;
    if (op.type != 0 && !SendRec(fd, op)) return 3;
    Status s = Status::Ok();
    switch (op.type) {
      case kCreate:
        s = pool.CreateDataset(op.ds, rng() % 2 ? std::vector<std::pair<std::string, std::string>>{}
                                                : std::vector<std::pair<std::string, std::string>>{
                                                      {"compression", "gzip"}});
        break;
      case kDestroy:
        s = pool.DestroyDataset(op.ds);
        break;
      case kRename:
        s = pool.RenameDataset(op.ds, op.ds2);
        break;
      case kSetGen:
        s = pool.SetProp(op.ds, "com.uzfs:gen", std::to_string(op.seed));
        break;
      case kSetCompress:
        s = pool.SetProp(op.ds, "compression", op.ds2);
        break;
      default:
        s = pool.Sync();
        break;
    }
    if (!s.ok()) return ChildFail("syncing call", s);
    if (op.type != 0) Apply(m, op);
    Rec done;
    done.type = kSynced;
    done.txg = pool.uberblock().txg;
    SetCloseCounts(pool, done);
    if (!SendRec(fd, done)) return 3;
  }
  return 0;
}

// ------------------------------------------------------------------ parent

// The read-only checks of the pool after a kill against the expected model.
void CheckPool(PoolReader& r, const Model& want) {
  auto t = TraversePool(r);
  ASSERT_UZFS_OK(t.status());
  EXPECT_EQ(t->checksum_errors, 0u) << (t->errors.empty() ? "" : t->errors[0]);
  EXPECT_EQ(t->leaked, 0u);
  EXPECT_EQ(t->unreachable, 0u);
  EXPECT_EQ(t->double_allocated, 0u);
  EXPECT_EQ(t->total.asize, t->spa_allocated);

  // Dataset names.
  auto root = r.ResolveDataset(kPool);
  ASSERT_UZFS_OK(root.status());
  std::set<std::string> names;
  std::function<void(const std::string&, uint64_t)> walk = [&](const std::string& name, uint64_t dir) {
    names.insert(name);
    auto kids = r.ChildDirs(dir);
    ASSERT_UZFS_OK(kids.status());
    for (const auto& [leaf, obj] : *kids) walk(name + "/" + leaf, obj);
  };
  walk(kPool, root->dir_obj);
  std::set<std::string> want_names;
  for (const auto& [n, d] : want.ds) want_names.insert(n);
  ASSERT_EQ(names, want_names);

  // Properties and objects.
  for (const auto& [name, d] : want.ds) {
    SCOPED_TRACE(name);
    auto ref = r.ResolveDataset(name);
    ASSERT_UZFS_OK(ref.status());
    if (!d.gen.empty()) {
      auto props = r.MosZap(ref->dir.props_zapobj);
      ASSERT_UZFS_OK(props.status());
      auto e = props->Lookup("com.uzfs:gen");
      ASSERT_UZFS_OK(e.status());
      EXPECT_EQ(e->text(), d.gen);
    }
    if (d.max_obj == 0) continue;
    auto os = r.OpenObjset(*ref);
    ASSERT_UZFS_OK(os.status());
    for (uint64_t obj = 1; obj <= d.max_obj; obj++) {
      auto dn = r.reader().ReadDnode(os->meta_dnode, obj);
      auto it = d.objs.find(obj);
      if (it == d.objs.end()) {
        if (dn.ok()) {
          EXPECT_TRUE(dn->IsFree()) << "object " << obj << " should be free";
        } else {
          EXPECT_TRUE(dn.status().IsNotFound()) << "object " << obj << ": " << dn.status().ToString();
        }
        continue;
      }
      ASSERT_UZFS_OK(dn.status());
      ASSERT_FALSE(dn->IsFree()) << "object " << obj << " is missing";
      EXPECT_EQ(dn->type, dmu_ot::kPlainFileContents);
      std::vector<uint8_t> got(it->second.size());
      ASSERT_UZFS_OK(r.reader().Read(*dn, 0, got));
      if (got != it->second) {
        size_t i = 0;
        while (got[i] == it->second[i]) i++;
        ADD_FAILURE() << "object " << obj << " (" << got.size() << " bytes) differs first at byte " << i;
      }
    }
  }
}

struct ChildOutcome {
  uint64_t imported_txg = 0;  // 0: the child never finished its import
  Rec closes;                 // the last kSynced record (engine close counts)
  bool any_synced = false;    // a kSynced record arrived
  uint64_t last_synced = 0;   // 0: no Sync returned
  bool began = false;         // a syncing call had begun after last_synced
  uint64_t began_txg = 0;
  Model committed;            // the model at last_synced (or the start)
  Model pending;              // committed + the syncing txg's records
};

// Creates the pool, then kills `iterations` writers and checks after each.
void RunKills(const PoolLayout& layout, int iterations, uint64_t seed, const fs::path& dir) {
  std::fprintf(stderr, "[crash] seed %llu, %d iterations (replay: UZFS_CRASH_SEED=%llu)\n",
               static_cast<unsigned long long>(seed), iterations, static_cast<unsigned long long>(seed));
  Model model;
  uint64_t disk_txg = 0;
  {
    PoolCreateOptions o;
    o.version = 23;
    o.ashift = 9;
    o.history = "zpool create tank";
    auto p = Pool::Create(kPool, layout, o);
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->CreateDataset("tank/a", {{"compression", "lzjb"}}));
    ASSERT_UZFS_OK((*p)->CreateDataset("tank/b", {{"copies", "2"}}));
    ASSERT_UZFS_OK((*p)->Export());
    model.ds["tank"];
    model.ds["tank/a"];
    model.ds["tank/b"];
  }
  {
    auto r = PoolReader::Open(dir.string(), kPool);
    ASSERT_UZFS_OK(r.status());
    disk_txg = (*r)->uberblock().txg;
    CheckPool(**r, model);
    if (::testing::Test::HasFailure()) return;
  }

  std::mt19937_64 rng(seed);
  double child_ms = 0, check_ms = 0;
  int landed_pending = 0, during_import = 0;
  uint64_t syncs = 0, ops = 0;
  for (int it = 0; it < iterations; it++) {
    const uint64_t child_seed = rng();
    const int delay_ms = kMinDelayMs + static_cast<int>(rng() % (kMaxDelayMs - kMinDelayMs + 1));
    SCOPED_TRACE("iteration " + std::to_string(it) + " (seed " + std::to_string(seed) + "), kill after " +
                 std::to_string(delay_ms) + " ms");
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    std::fflush(stdout);
    std::fflush(stderr);
    const auto t0 = std::chrono::steady_clock::now();
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      _exit(ChildMain(dir, model, child_seed, fds[1]));
    }
    ::close(fds[1]);

    ChildOutcome out;
    out.committed = model;
    out.pending = model;
    out.last_synced = disk_txg;
    std::vector<uint8_t> buf;
    auto consume = [&]() {
      size_t pos = 0;
      for (; pos + sizeof(Rec) <= buf.size(); pos += sizeof(Rec)) {
        Rec r;
        std::memcpy(&r, buf.data() + pos, sizeof r);
        switch (r.type) {
          case kImported:
            out.imported_txg = r.txg;
            break;
          case kSyncBegin:
            out.began = true;
            out.began_txg = r.txg;
            break;
          case kSynced:
            EXPECT_TRUE(out.began);
            EXPECT_GE(r.txg, out.began_txg);
            out.last_synced = r.txg;
            out.began = false;
            out.closes = r;
            out.any_synced = true;
            syncs++;
            out.committed = out.pending;
            break;
          default:
            Apply(out.pending, r);
            ops++;
            break;
        }
      }
      buf.erase(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(pos));
    };
    auto read_some = [&](int timeout_ms) -> bool {  // false at EOF
      pollfd pfd{fds[0], POLLIN, 0};
      if (::poll(&pfd, 1, timeout_ms) <= 0) return true;
      uint8_t tmp[1 << 14];
      const ssize_t n = ::read(fds[0], tmp, sizeof tmp);
      if (n <= 0) return false;
      buf.insert(buf.end(), tmp, tmp + n);
      consume();
      return true;
    };
    const auto deadline = t0 + std::chrono::milliseconds(delay_ms);
    bool eof = false;
    while (!eof) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) break;
      eof = !read_some(static_cast<int>(left));
    }
    ::kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    while (read_some(-1)) {
    }
    ::close(fds[0]);
    child_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "the child ended by itself (exit status " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1)
        << "): see its message above";
    if (out.imported_txg != 0) {
      EXPECT_EQ(out.imported_txg, disk_txg) << "the child's import chose another uberblock than PoolReader";
    } else {
      during_import++;
    }

    const auto t1 = std::chrono::steady_clock::now();
    auto r = PoolReader::Open(dir.string(), kPool);
    ASSERT_UZFS_OK(r.status());
    const uint64_t txg = (*r)->uberblock().txg;
    const Model* want = nullptr;
    if (txg == out.last_synced) {
      want = &out.committed;
    } else if (!out.any_synced && txg > out.last_synced) {
      // Killed after syncs of the import's (its own, a resilver's, the
      // child's) landed but before the child said so: nothing changed.
      want = &out.committed;
    } else if (out.began && txg == out.began_txg) {
      want = &out.pending;
      landed_pending++;
    }
    ASSERT_NE(want, nullptr) << "pool at txg " << txg << ", last synced " << out.last_synced
                             << (out.began ? ", syncing " + std::to_string(out.began_txg) : std::string())
                             << ", imported at " << out.imported_txg << ", the child's txgs closed by timeout "
                             << out.closes.obj << ", dirty " << out.closes.off << ", request " << out.closes.len;
    CheckPool(**r, *want);
    if (::testing::Test::HasFailure()) {
      std::fprintf(stderr, "[crash] iteration %d: pool at txg %llu (last synced %llu%s)\n", it,
                   static_cast<unsigned long long>(txg), static_cast<unsigned long long>(out.last_synced),
                   out.began ? ", a sync had begun" : "");
      return;
    }
    model = *want;
    disk_txg = txg;
    check_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
  }
  std::fprintf(stderr,
               "[crash] %d kills: %d landed the txg being synced, %d before the import finished; final txg %llu;"
               " %llu syncs and %llu changes reported; %.0f ms in children, %.0f ms checking\n",
               iterations, landed_pending, during_import, static_cast<unsigned long long>(disk_txg),
               static_cast<unsigned long long>(syncs), static_cast<unsigned long long>(ops), child_ms, check_ms);

  // A normal import after all that, an export, and the checks once more.
  {
    auto devs = ScanDeviceDir(dir.string());
    ASSERT_UZFS_OK(devs.status());
    auto p = Pool::Import(*devs, kPool, PoolImportOptions{});
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->Export());
  }
  auto r = PoolReader::Open(dir.string(), kPool);
  ASSERT_UZFS_OK(r.status());
  CheckPool(**r, model);
}

TEST(PoolCrash, RaidzKill) {
  test::TempDir d;
  PoolLayout l;
  l.data.push_back(Group(d.path(), "d", VdevSpec::Type::kRaidz, 3, 1));
  RunKills(l, Iterations(), BaseSeed(), d.path());
}

TEST(PoolCrash, MirrorKill) {
  test::TempDir d;
  PoolLayout l;
  l.data.push_back(Group(d.path(), "d", VdevSpec::Type::kMirror, 2, 0));
  RunKills(l, std::max(3, Iterations() / 4), BaseSeed(), d.path());
}

}  // namespace
}  // namespace uzfs
