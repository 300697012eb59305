// Async destroy killed with SIGKILL part way. Each round builds a pool with
// a file system, its snapshot and a clone of it (half rewritten), then a
// child process destroys the clone, the snapshot and the file system (the
// two heads queued, freed one block per txg) and writes and syncs objects
// in another file system until it is killed at a random moment. Then, with
// no import in between, our zdb finds every block either referenced or in
// what is left of the queue, nothing leaked or freed twice; an import
// finishes the frees (the pool's allocation drops back to what it was
// before the file systems were written) and every object whose sync
// returned reads back.
//
// UZFS_STRESS_OPS sets the number of rounds (default 3).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <thread>

#include "tests/dsl/pool_test_util.h"
#include "tests/dsl/snapshot_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/inspect/pool_reader.h"

namespace uzfs {
namespace {

constexpr size_t kObj = 256 * 1024;
constexpr size_t kSmall = 16 * 1024;

struct Synced {
  uint64_t object = 0, seed = 0;
};

// The child: never returns into gtest.
int ChildMain(const std::filesystem::path& dir, int fd) {
  auto p = pooltest::ImportFrom(dir, "ad");
  if (!p.ok()) return 10;
  // A block per txg: the kill finds the queue part way.
  (*p)->SetAsyncDestroyPace(1);
  if (!(*p)->DestroyDataset("ad/c").ok()) return 11;
  if (!(*p)->DestroySnapshots({"ad/a@s"}).ok()) return 12;
  if (!(*p)->DestroyDataset("ad/a").ok()) return 13;
  const Synced started{0, 0};
  if (::write(fd, &started, sizeof started) != sizeof started) return 14;
  for (uint64_t seed = 1000;; seed++) {
    std::vector<uint64_t> objs;
    pooltest::WriteObjects(**p, "ad/other", 1, kSmall, seed, &objs);
    if (objs.empty() || !(*p)->Sync().ok()) return 15;
    const Synced rec{objs[0], seed};
    if (::write(fd, &rec, sizeof rec) != sizeof rec) return 16;
  }
}

// Forks the child, waits until it has destroyed and synced one object,
// lets it run 10 .. 10 + spread_ms more and kills it; the objects it
// reported synced go to *durable.
void RunAndKill(const std::filesystem::path& dir, std::mt19937_64& rng, int spread_ms, std::vector<Synced>* durable) {
  const test::KilledChild k =
      test::RunAndKill([&dir](int fd) { return ChildMain(dir, fd); }, 2 * sizeof(Synced),
                       std::chrono::milliseconds(10 + static_cast<int>(rng() % static_cast<unsigned>(spread_ms))));
  ASSERT_TRUE(WIFSIGNALED(k.status) && WTERMSIG(k.status) == SIGKILL)
      << "the child ended by itself: " << (WIFEXITED(k.status) ? WEXITSTATUS(k.status) : -1);
  for (size_t at = 0; at + sizeof(Synced) <= k.output.size(); at += sizeof(Synced)) {
    Synced rec;
    std::memcpy(&rec, k.output.data() + at, sizeof rec);
    if (rec.object != 0) durable->push_back(rec);
  }
  ASSERT_FALSE(durable->empty()) << "the child never got to destroy and write";
}

TEST(PoolAsyncDestroyCrash, KilledWhileFreeingLosesAndLeaksNothing) {
  const char* ops = std::getenv("UZFS_STRESS_OPS");
  const int rounds = ops ? std::max(1, std::atoi(ops) / 100) : 3;
  std::mt19937_64 rng(std::random_device{}());
  int mid_way = 0;
  for (int round = 0; round < rounds; round++) {
    SCOPED_TRACE("round " + std::to_string(round));
    test::TempDir dir;
    {
      PoolLayout layout;
      layout.data.push_back(pooltest::Group(dir.path(), "d", VdevSpec::Type::kRaidz, 3, 1));
      PoolCreateOptions o = pooltest::V23();
      o.version = kFeatureVersion;
      auto p = Pool::Create("ad", layout, o);
      ASSERT_UZFS_OK(p.status());
      ASSERT_UZFS_OK((*p)->CreateDataset("ad/other", {}));
      ASSERT_UZFS_OK((*p)->Export());
    }
    const uint64_t empty_alloc = snaptest::Allocated(dir.path(), "ad");
    {
      auto p = pooltest::ImportFrom(dir.path(), "ad");
      ASSERT_UZFS_OK(p.status());
      ASSERT_UZFS_OK((*p)->CreateDataset("ad/a", {}));
      std::vector<uint64_t> objs;
      pooltest::WriteObjects(**p, "ad/a", 240, kObj, 1, &objs);
      ASSERT_UZFS_OK((*p)->Sync());
      ASSERT_UZFS_OK((*p)->Snapshot({"ad/a@s"}));
      ASSERT_UZFS_OK((*p)->Clone("ad/a@s", "ad/c", {}));
      std::vector<uint64_t> half(objs.begin(), objs.begin() + 120);
      ASSERT_NO_FATAL_FAILURE(snaptest::Overwrite(**p, "ad/c", half, kObj, 500));
      ASSERT_UZFS_OK((*p)->Export());
    }
    std::vector<Synced> durable;
    ASSERT_NO_FATAL_FAILURE(RunAndKill(dir.path(), rng, 300, &durable));
    // As the kill left it: every allocated block referenced or queued.
    pooltest::ExpectConsistent(dir.path(), "ad");
    {
      auto r = PoolReader::Open(dir.path().string(), "ad");
      ASSERT_UZFS_OK(r.status());
      const bool queued = (*r)->DirectoryEntry("bptree_obj").ok();
      if (queued) mid_way++;
      std::cout << "round " << round << ": " << durable.size() << " objects synced, "
                << (queued ? "trees still queued" : "all freed") << "\n";
    }
    // The import goes on freeing by itself.
    auto p = pooltest::ImportFrom(dir.path(), "ad");
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->WaitFreed());
    auto st = (*p)->AsyncDestroy();
    ASSERT_UZFS_OK(st.status());
    EXPECT_EQ(st->freeing, 0u);
    EXPECT_EQ(st->leaked, 0u);
    auto l = (*p)->ListDatasets();
    ASSERT_UZFS_OK(l.status());
    ASSERT_EQ(l->size(), 2u) << "the pool and ad/other are left";
    const BlockPtr other = snaptest::Find(*l, "ad/other")->ds.bp;
    for (const Synced& s : durable) {
      EXPECT_EQ(snaptest::ReadAt(**p, other, s.object, kSmall), test::RandomBytes(kSmall, s.seed)) << s.object;
    }
    const uint64_t written = durable.size() * kSmall;
    ASSERT_UZFS_OK((*p)->Export());
    p->reset();
    pooltest::ExpectConsistent(dir.path(), "ad");
    // What is allocated: the empty pool's and ad/other's new objects (with
    // their raidz parity and metadata), none of the destroyed trees'.
    EXPECT_LT(snaptest::Allocated(dir.path(), "ad"), empty_alloc + 3 * written + (16 << 20));
  }
  EXPECT_GT(mid_way, 0) << "no kill came while the trees were being freed";
}

}  // namespace
}  // namespace uzfs
