// Writes logged by reference (WR_INDIRECT) through the pool and the ZPL:
// a large fsync'ed write on a pool without a log device (or any write with
// logbias=throughput) is written in place at commit, its TX_WRITE names
// that block, and the txg sync reuses it — the data reaches the leaves
// once, not twice. After a crash the log's blocks are claimed and replayed;
// after the txg that reused them synced, nothing is claimed or freed twice
// (our zdb -b judges both; zil_indirect_compat_test has zfs-fuse judge).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <functional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "tests/zil/zil_pool_util.h"
#include "zfs/dmu/objset_writer.h"
#include "zfs/dsl/pool.h"
#include "zfs/zil/zil_writer.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs {
namespace {

const ZplCred kRoot{};

std::span<const uint8_t> B(const std::vector<uint8_t>& v) { return v; }

class ZilIndirectTest : public ::testing::Test {
 protected:
  void SetUp() override { ziltest::CreatePool(dir_.path(), "tp", "tp"); }
  Result<std::unique_ptr<Pool>> Import() { return ziltest::ImportSlowTxgs(dir_.path(), "tp"); }
  // fn runs in a child that then dies without unmount, export or sync.
  void InChild(const std::function<bool(Pool&, ZplFs&)>& fn) {
    ziltest::InChild([this] { return Import(); }, "tp", fn);
  }
  static bool Write(ZplFs& fs, const std::string& name, uint64_t off, const std::vector<uint8_t>& data,
                    bool fsync) {
    auto c = fs.Create(kRoot, fs.root_ino(), name, S_IFREG | 0644, O_CREAT | O_RDWR);
    if (!c.ok() || !fs.Write(c->second, off, B(data)).ok()) return false;
    if (fsync && !fs.Fsync(c->second, false).ok()) return false;
    return fs.Release(c->second).ok();
  }
  static std::vector<uint8_t> Read(ZplFs& fs, const std::string& name) {
    auto a = fs.Lookup(kRoot, fs.root_ino(), name);
    if (!a.ok()) return {};
    auto h = fs.Open(kRoot, a->ino, O_RDONLY);
    if (!h.ok()) return {};
    std::vector<uint8_t> out(a->size);
    if (!fs.Read(*h, 0, out).ok()) out.clear();
    (void)fs.Release(*h);
    return out;
  }
  static uint64_t LeafBytesWritten(Pool& p) {
    std::vector<Vdev*> leaves;
    p.root_vdev().CollectLeaves(&leaves);
    uint64_t n = 0;
    for (Vdev* v : leaves) n += v->io_counters().write_bytes;
    return n;
  }
  // Bytes the leaves take for `size` bytes of fsync'ed writes in `chunk`s
  // (a file of its own), the txg synced; and the log bytes.
  static void Measure(Pool& p, ZplFs& fs, const std::string& name, size_t size, size_t chunk,
                      uint64_t* leaf, uint64_t* log) {
    auto w = p.ZilStart("tp");
    ASSERT_UZFS_OK(w.status());
    ASSERT_UZFS_OK(p.Sync());
    const uint64_t leaf0 = LeafBytesWritten(p), log0 = (*w)->stats().bytes_written.load();
    auto c = fs.Create(kRoot, fs.root_ino(), name, S_IFREG | 0644, O_CREAT | O_RDWR);
    ASSERT_TRUE(c.ok());
    for (size_t off = 0; off < size; off += chunk) {
      ASSERT_TRUE(fs.Write(c->second, off, B(test::RandomBytes(chunk, off + 7))).ok());
      ASSERT_TRUE(fs.Fsync(c->second, false).ok());
    }
    ASSERT_TRUE(fs.Release(c->second).ok());
    ASSERT_UZFS_OK(p.Sync());
    *leaf = LeafBytesWritten(p) - leaf0;
    *log = (*w)->stats().bytes_written.load() - log0;
  }

  test::TempDir dir_;
};

// 4 MiB fsync'ed in 1 MiB writes: by reference, the leaves take about the
// data once (plus metadata and a few log blocks); in 16 KiB writes (below
// zfs_immediate_write_sz: copied into the log) about twice.
TEST_F(ZilIndirectTest, LargeWritesReachTheDisksOnce) {
  auto p = Import();
  ASSERT_UZFS_OK(p.status());
  auto m = ZplFs::Mount(**p, "tp");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE(Write(**m, "warm", 0, {1}, true));  // starts the log
  auto os = (*p)->Objset("tp");
  ASSERT_UZFS_OK(os.status());
  const uint64_t used0 = (*os)->early_used();
  constexpr size_t kSize = 4 << 20;
  uint64_t leaf_ref = 0, log_ref = 0, leaf_copy = 0, log_copy = 0;
  Measure(**p, **m, "ref", kSize, 1 << 20, &leaf_ref, &log_ref);
  Measure(**p, **m, "copy", kSize, 16 << 10, &leaf_copy, &log_copy);
  std::fprintf(stderr, "4 MiB fsync'ed: by reference leaves %llu log %llu; copied leaves %llu log %llu\n",
               (unsigned long long)leaf_ref, (unsigned long long)log_ref, (unsigned long long)leaf_copy,
               (unsigned long long)log_copy);
  EXPECT_EQ((*os)->early_used() - used0, kSize / (128 << 10));  // every block reused by the sync
  // Each side also pays its txg syncs' metadata (MOS, space maps, labels).
  EXPECT_LT(log_ref, 64u << 10);
  EXPECT_LT(leaf_ref, kSize * 3 / 2);
  EXPECT_GT(log_copy, kSize);
  EXPECT_GT(leaf_copy, leaf_ref + kSize * 9 / 10);
  EXPECT_EQ(Read(**m, "ref"), [&] {
    std::vector<uint8_t> want;
    for (size_t off = 0; off < kSize; off += 1 << 20) {
      auto b = test::RandomBytes(1 << 20, off + 7);
      want.insert(want.end(), b.begin(), b.end());
    }
    return want;
  }());
  ASSERT_TRUE((*m)->Unmount().ok());
  m->reset();
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir_.path(), "tp");
}

// kill -9 right after the fsyncs (no txg sync): the blocks are claimed and
// replayed, also blocks changed again (or truncated) in the same txg after
// their early write, and a write at an unaligned offset.
TEST_F(ZilIndirectTest, CrashAfterFsyncOfLargeWrites) {
  const auto a = test::RandomBytes(1 << 20, 1), patch = test::RandomBytes(65536, 2);
  const auto b = test::RandomBytes(300000, 3), c = test::RandomBytes(262144, 4);
  InChild([&](Pool& pool, ZplFs& fs) {
    if (!Write(fs, "warm", 0, {1}, true)) return false;
    const uint64_t synced = pool.txg_stats().synced_txg;
    auto log = pool.ZilStart("tp");
    if (!log.ok()) return false;
    const uint64_t bytes0 = (*log)->stats().bytes_written.load();
    if (!Write(fs, "a", 0, a, true) || !Write(fs, "b", 70000, b, true)) return false;
    if (!Write(fs, "a", 200000, patch, true)) return false;  // blocks written early change again
    if (!Write(fs, "c", 0, c, true)) return false;
    auto ci = fs.Lookup(kRoot, fs.root_ino(), "c");
    ZplSetAttr tr;
    tr.size = 1000;
    if (!ci.ok() || !fs.SetAttr(kRoot, ci->ino, tr).ok()) return false;
    auto h = fs.Open(kRoot, ci->ino, O_RDONLY);
    if (!h.ok() || !fs.Fsync(*h, false).ok() || !fs.Release(*h).ok()) return false;
    const uint64_t bytes = (*log)->stats().bytes_written.load() - bytes0;
    std::fprintf(stderr, "log bytes for 1.7 MiB of writes: %llu\n", static_cast<unsigned long long>(bytes));
    return bytes < (128u << 10) && pool.txg_stats().synced_txg == synced;
  });
  auto p = Import();
  ASSERT_UZFS_OK(p.status());
  {
    auto m = ZplFs::Mount(**p, "tp");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    std::vector<uint8_t> want_a = a;
    std::copy(patch.begin(), patch.end(), want_a.begin() + 200000);
    EXPECT_TRUE(Read(**m, "a") == want_a);
    std::vector<uint8_t> want_b(70000, 0);
    want_b.insert(want_b.end(), b.begin(), b.end());
    EXPECT_TRUE(Read(**m, "b") == want_b);
    EXPECT_TRUE(Read(**m, "c") == std::vector<uint8_t>(c.begin(), c.begin() + 1000));
    ASSERT_TRUE((*m)->Unmount().ok());
  }
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir_.path(), "tp");
}

// A crash after the txg that reused the early blocks synced: those blocks
// are the file's, the log no longer needs them (nothing claims or frees
// them again); a later large write in the log is replayed on top.
TEST_F(ZilIndirectTest, CrashAfterTheTxgThatReusedTheBlocksSynced) {
  const auto a = test::RandomBytes(1 << 20, 5), more = test::RandomBytes(524288, 6);
  InChild([&](Pool& pool, ZplFs& fs) {
    if (!Write(fs, "warm", 0, {1}, true)) return false;
    if (!Write(fs, "a", 0, a, true)) return false;
    if (!pool.Sync().ok()) return false;
    const uint64_t synced = pool.txg_stats().synced_txg;
    if (!Write(fs, "x", 0, {9, 9}, true)) return false;
    if (!Write(fs, "a", 1 << 20, more, true)) return false;
    return pool.txg_stats().synced_txg == synced;
  });
  auto p = Import();
  ASSERT_UZFS_OK(p.status());
  {
    auto m = ZplFs::Mount(**p, "tp");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    std::vector<uint8_t> want = a;
    want.insert(want.end(), more.begin(), more.end());
    EXPECT_TRUE(Read(**m, "a") == want);
    EXPECT_EQ(Read(**m, "x"), (std::vector<uint8_t>{9, 9}));
    ASSERT_TRUE((*m)->Unmount().ok());
  }
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir_.path(), "tp");
}

// logbias=throughput: even a 4 KiB write is logged by reference (its
// block reused by the sync); the default (latency) copies it.
TEST_F(ZilIndirectTest, LogbiasThroughputLogsSmallWritesByReference) {
  auto p = Import();
  ASSERT_UZFS_OK(p.status());
  auto m = ZplFs::Mount(**p, "tp");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE(Write(**m, "warm", 0, {1}, true));
  auto os = (*p)->Objset("tp");
  ASSERT_UZFS_OK(os.status());
  const uint64_t used0 = (*os)->early_used();
  ASSERT_TRUE(Write(**m, "small", 0, test::RandomBytes(4096, 8), true));
  ASSERT_UZFS_OK((*p)->Sync());
  EXPECT_EQ((*os)->early_used(), used0);
  ASSERT_UZFS_OK((*p)->SetProp("tp", "logbias", "throughput"));
  ASSERT_UZFS_OK((*p)->Sync());
  ASSERT_TRUE((*m)->RefreshProps().ok());  // what uzfsd does after zfs set
  ASSERT_TRUE(Write(**m, "small2", 0, test::RandomBytes(4096, 9), true));
  ASSERT_UZFS_OK((*p)->Sync());
  EXPECT_EQ((*os)->early_used(), used0 + 1);
  ASSERT_TRUE((*m)->Unmount().ok());
  m->reset();
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir_.path(), "tp");
}

// kill -9 at random moments while large writes (by reference, unaligned,
// with a small overwrite into the same blocks before each fsync) are
// fsync'ed: after each re-import every acknowledged write reads back
// (UZFS_STRESS_ITERATIONS rounds, default 3), and our zdb -b is clean.
TEST_F(ZilIndirectTest, RandomKillDuringLargeWrites) {
  constexpr int kFiles = 6;
  // Room for a long txg of fsync'ed rewrites (every log block and every
  // replaced block stays allocated until the txg syncs: a 64 MiB pool
  // fills, with the data copied into the log as well).
  std::filesystem::remove(dir_.path() / "d0");
  ziltest::CreatePool(dir_.path(), "tp", "tp", false, 512ull << 20);
  int iters = 3;
  if (const char* e = std::getenv("UZFS_STRESS_ITERATIONS"); e && *e) iters = std::max(1, std::atoi(e));
  std::mt19937_64 rng(std::random_device{}());
  // One step's writes: (offset, length, byte) of the large write, then a
  // 3000-byte overwrite inside it.
  struct Step {
    uint64_t off, len, small_off;
  };
  auto step = [](uint64_t seed, int n) {
    std::mt19937_64 r(seed + static_cast<uint64_t>(n));
    Step s;
    s.off = r() % (640 << 10);
    s.len = (32 << 10) + r() % (256 << 10);
    s.small_off = s.off + r() % (s.len - 3000);
    return s;
  };
  std::map<std::string, std::vector<uint8_t>> model;  // what each file holds
  int next = 0;
  for (int it = 0; it < iters; it++) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const int first = next;
    const uint64_t seed = rng();
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      auto p = Import();
      if (!p.ok()) _exit(2);
      auto m = ZplFs::Mount(**p, "tp");
      if (!m.ok()) _exit(3);
      ZplFs& fs = **m;
      for (int n = first;; n++) {
        const Step s = step(seed, n);
        auto c = fs.Create(kRoot, fs.root_ino(), "f" + std::to_string(n % kFiles), S_IFREG | 0644,
                           O_CREAT | O_RDWR);
        if (!c.ok()) _exit(4);
        const std::vector<uint8_t> big(s.len, static_cast<uint8_t>(n)), small(3000, static_cast<uint8_t>(~n));
        if (!fs.Write(c->second, s.off, big).ok() || !fs.Write(c->second, s.small_off, small).ok()) _exit(5);
        if (ZplStatus fst = fs.Fsync(c->second, false); !fst.ok()) {
          std::fprintf(stderr, "fsync: %s\n", fst.ToString().c_str());
          _exit(6);
        }
        if (!fs.Release(c->second).ok()) _exit(8);
        const std::string rec = std::to_string(n) + "\n";
        if (write(fds[1], rec.data(), rec.size()) != static_cast<ssize_t>(rec.size())) _exit(7);
      }
    }
    close(fds[1]);
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + rng() % 600));
    kill(pid, SIGKILL);
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(st)) << "child exited with " << WEXITSTATUS(st);
    std::string got;
    char buf[4096];
    for (ssize_t k; (k = read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, k);
    close(fds[0]);
    int last = first - 1;
    for (size_t i = 0, j; i < got.size(); i = j + 1) {
      j = got.find('\n', i);
      const int n = std::stoi(got.substr(i, j - i));
      const Step s = step(seed, n);
      auto& f = model["f" + std::to_string(n % kFiles)];
      if (f.size() < s.off + s.len) f.resize(s.off + s.len, 0);
      std::fill_n(f.begin() + static_cast<std::ptrdiff_t>(s.off), s.len, static_cast<uint8_t>(n));
      std::fill_n(f.begin() + static_cast<std::ptrdiff_t>(s.small_off), 3000, static_cast<uint8_t>(~n));
      last = n;
    }
    auto p = Import();
    ASSERT_UZFS_OK(p.status());
    auto m = ZplFs::Mount(**p, "tp");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    // The write in flight at the kill (last + 1) may be there, in part or
    // whole: its file is taken as found.
    const std::string inflight = "f" + std::to_string((last + 1) % kFiles);
    for (auto& [name, want] : model) {
      if (name == inflight) continue;
      EXPECT_TRUE(Read(**m, name) == want) << "round " << it << ": " << name << " (acknowledged up to " << last << ")";
    }
    for (int i = 0; i < kFiles; i++) {
      const std::string name = "f" + std::to_string(i);
      if (name == inflight || !model.count(name)) model[name] = Read(**m, name);
    }
    next = last + 2;
    ASSERT_TRUE((*m)->Unmount().ok());
    m->reset();
    ASSERT_UZFS_OK((*p)->Export());
    p->reset();
    pooltest::ExpectConsistent(dir_.path(), "tp");
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace uzfs
