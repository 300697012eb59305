// The intent log wired through the pool and the ZPL: fsync commits to the
// log instead of waiting for a txg sync, and what it acknowledged is
// replayed at the next mount after a crash.
//
// A crash here is a child process that imports the pool, mounts, makes
// changes, fsyncs and exits with _exit (no unmount, no export, no sync:
// txgs close only after a minute, so nothing but the log carries the
// changes). Its device writes are in the page cache and survive, as after
// SIGKILL. The parent then imports (the import claims the log blocks),
// mounts (replay), checks the tree, exports and runs our zdb -b: nothing
// leaked or doubly allocated.
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <atomic>
#include <map>
#include <set>
#include <mutex>
#include <random>
#include <thread>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "tests/zil/zil_pool_util.h"
#include "zfs/dsl/pool.h"
#include "zfs/vdev/fault_device.h"
#include "zfs/zil/zil_reader.h"
#include "zfs/zil/zil_writer.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs {
namespace {

const ZplCred kRoot{};

using ziltest::AsBytes;

class ZilZplTest : public ::testing::Test {
 protected:
  void SetUp() override { ziltest::CreatePool(dir_.path(), "tp", "tp"); }
  // The pool again, with a log device (top-level vdev 1).
  void CreateWithSlog() {
    std::filesystem::remove(dir_.path() / "d0");
    ziltest::CreatePool(dir_.path(), "tp", "tp", /*slog=*/true);
  }
  Result<std::unique_ptr<Pool>> Import() { return ziltest::ImportSlowTxgs(dir_.path(), "tp", true); }
  // Runs fn in a child over an imported pool and mounted file system; the
  // child then dies without closing anything. fn returns false on failure.
  void InChild(const std::function<bool(Pool&, ZplFs&)>& fn) {
    ziltest::InChild([this] { return Import(); }, "tp", fn);
  }
  std::string ReadAll(ZplFs& fs, uint64_t ino) { return ziltest::ReadWhole(fs, ino); }
  Result<uint64_t> Find(ZplFs& fs, const std::string& path) {
    uint64_t ino = fs.root_ino();
    size_t i = 0;
    while (i < path.size()) {
      size_t j = path.find('/', i);
      if (j == std::string::npos) j = path.size();
      auto a = fs.Lookup(kRoot, ino, path.substr(i, j - i));
      if (!a.ok()) return Status::NotFound(path);
      ino = a->ino;
      i = j + 1;
    }
    return ino;
  }

  test::TempDir dir_;
};

// Writes `data` to a new file dir/name and returns the handle's ino.
bool Put(ZplFs& fs, uint64_t dir, const std::string& name, const std::string& data, bool sync) {
  auto c = fs.Create(kRoot, dir, name, S_IFREG | 0644, O_CREAT | O_RDWR | O_TRUNC);
  if (!c.ok()) return false;
  if (!data.empty() && !fs.Write(c->second, 0, AsBytes(data)).ok()) return false;
  if (sync && !fs.Fsync(c->second, false).ok()) return false;
  return fs.Release(c->second).ok();
}

// In a child: starts the log (the first fsync, of a file "first", makes a
// txg sync) and creates file `name` in the root; its attributes and handle.
ZplResult<std::pair<ZplAttr, ZplHandle>> StartLogAndCreate(ZplFs& fs, const std::string& name) {
  if (!Put(fs, fs.root_ino(), "first", "1", true)) return ZplStatus(EIO, "starting the log");
  return fs.Create(kRoot, fs.root_ino(), name, S_IFREG | 0644, O_CREAT | O_RDWR);
}

TEST_F(ZilZplTest, FsyncedChangesSurviveACrash) {
  const std::string big(300000, 'b');  // split over several log blocks
  InChild([&](Pool& pool, ZplFs& fs) {
    const uint64_t root = fs.root_ino();
    // The first fsync starts the log (a txg sync); everything after it
    // rides on the log only.
    if (!Put(fs, root, "first", "1", true)) return false;
    const uint64_t txg = pool.txg_stats().synced_txg;
    auto d = fs.Mkdir(kRoot, root, "dir", 0750);
    if (!d.ok()) return false;
    if (!Put(fs, d->ino, "a", "alpha", false)) return false;
    if (!Put(fs, d->ino, "b", big, false)) return false;
    if (!Put(fs, root, "gone", "x", false)) return false;
    if (!fs.Unlink(kRoot, root, "gone").ok()) return false;
    if (!fs.Rename(kRoot, d->ino, "a", root, "a-moved").ok()) return false;
    auto sl = fs.Symlink(kRoot, d->ino, "link", "../a-moved");
    if (!sl.ok()) return false;
    auto am = fs.Lookup(kRoot, root, "a-moved");
    if (!am.ok() || !fs.Link(kRoot, am->ino, d->ino, "hard").ok()) return false;
    ZplSetAttr chmod;
    chmod.mode = 0600;
    chmod.uid = 1234;
    if (!fs.SetAttr(kRoot, am->ino, chmod).ok()) return false;
    // Overwrite in the middle, then truncate the big file.
    auto bh = fs.Lookup(kRoot, d->ino, "b");
    if (!bh.ok()) return false;
    auto h = fs.Open(kRoot, bh->ino, O_RDWR);
    if (!h.ok() || !fs.Write(*h, 1000, AsBytes("MIDDLE")).ok()) return false;
    ZplSetAttr tr;
    tr.size = 200000;
    if (!fs.SetAttr(kRoot, bh->ino, tr).ok()) return false;
    if (!fs.Fallocate(*h, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 8192).ok()) return false;
    if (!fs.Mkdir(kRoot, root, "empty", 0700).ok() || !fs.Rmdir(kRoot, root, "empty").ok()) return false;
    // An fsync covers its own file (and every namespace change): a-moved's
    // data and attributes need their own.
    auto ah = fs.Open(kRoot, am->ino, O_RDONLY);
    if (!ah.ok() || !fs.Fsync(*ah, false).ok() || !fs.Release(*ah).ok()) return false;
    if (!fs.Fsync(*h, false).ok()) return false;
    // Nothing synced since the log started: the log alone holds it.
    if (pool.txg_stats().synced_txg != txg) return false;
    // Not fsynced: may or may not survive (here: lost, nothing syncs).
    return Put(fs, root, "unsynced", "u", false);
  });

  auto p = Import();
  ASSERT_UZFS_OK(p.status());
  {
    auto m = ZplFs::Mount(**p, "tp");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    ZplFs& fs = **m;
    auto first = Find(fs, "first");
    ASSERT_UZFS_OK(first.status());
    EXPECT_EQ(ReadAll(fs, *first), "1");
    auto am = Find(fs, "a-moved");
    ASSERT_UZFS_OK(am.status());
    EXPECT_EQ(ReadAll(fs, *am), "alpha");
    auto at = fs.GetAttr(*am);
    ASSERT_TRUE(at.ok());
    EXPECT_EQ(at->mode & 07777, 0600u);
    EXPECT_EQ(at->uid, 1234u);
    EXPECT_EQ(at->nlink, 2u);
    auto hard = Find(fs, "dir/hard");
    ASSERT_UZFS_OK(hard.status());
    EXPECT_EQ(*hard, *am);
    EXPECT_FALSE(Find(fs, "dir/a").ok());
    EXPECT_FALSE(Find(fs, "gone").ok());
    EXPECT_FALSE(Find(fs, "empty").ok());
    auto sl = Find(fs, "dir/link");
    ASSERT_UZFS_OK(sl.status());
    auto tgt = fs.ReadLink(*sl);
    ASSERT_TRUE(tgt.ok());
    EXPECT_EQ(*tgt, "../a-moved");
    auto b = Find(fs, "dir/b");
    ASSERT_UZFS_OK(b.status());
    std::string want = big;
    want.replace(1000, 6, "MIDDLE");
    want.resize(200000);
    std::fill(want.begin() + 4096, want.begin() + 4096 + 8192, '\0');
    EXPECT_TRUE(ReadAll(fs, *b) == want);
    auto d = Find(fs, "dir");
    ASSERT_UZFS_OK(d.status());
    auto da = fs.GetAttr(*d);
    ASSERT_TRUE(da.ok());
    EXPECT_EQ(da->mode & 07777, 0750u);
    EXPECT_FALSE(Find(fs, "unsynced").ok());
    // Changes after replay still work and the log runs again.
    auto c = fs.Create(kRoot, fs.root_ino(), "after", S_IFREG | 0644, O_CREAT | O_RDWR);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(fs.Write(c->second, 0, AsBytes("z")).ok());
    ASSERT_TRUE(fs.Fsync(c->second, false).ok());
    ASSERT_TRUE(fs.Release(c->second).ok());
    ASSERT_TRUE(fs.Unmount().ok());
  }
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir_.path(), "tp");
}

// An fsync of one file writes its records and the namespace records, not
// another file's queued data: after a crash the other file exists (its
// create was a namespace record) but is empty, and the log bytes written
// are about the fsynced file's.
TEST_F(ZilZplTest, FsyncWritesOnlyItsFilesRecords) {
  const std::string big(256 * 1024, 'B');
  InChild([&](Pool& pool, ZplFs& fs) {
    const uint64_t root = fs.root_ino();
    if (!Put(fs, root, "first", "1", true)) return false;  // starts the log
    const uint64_t txg = pool.txg_stats().synced_txg;
    auto log = pool.ZilStart("tp");
    if (!log.ok()) return false;
    const uint64_t bytes0 = (*log)->stats().bytes_written.load();
    auto b = fs.Create(kRoot, root, "other", S_IFREG | 0644, O_CREAT | O_RDWR);
    if (!b.ok() || !fs.Write(b->second, 0, AsBytes(big)).ok()) return false;
    auto a = fs.Create(kRoot, root, "mine", S_IFREG | 0644, O_CREAT | O_RDWR);
    if (!a.ok() || !fs.Write(a->second, 0, AsBytes("small and synced")).ok()) return false;
    if (!fs.Fsync(a->second, false).ok()) return false;
    const uint64_t bytes = (*log)->stats().bytes_written.load() - bytes0;
    std::fprintf(stderr, "log bytes for the fsync: %llu\n", static_cast<unsigned long long>(bytes));
    if (bytes >= 32 * 1024) return false;  // the other file's 256 KiB stayed queued
    return pool.txg_stats().synced_txg == txg;
  });
  auto p = Import();
  ASSERT_UZFS_OK(p.status());
  {
    auto m = ZplFs::Mount(**p, "tp");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    auto mine = Find(**m, "mine");
    ASSERT_UZFS_OK(mine.status());
    EXPECT_EQ(ReadAll(**m, *mine), "small and synced");
    auto other = Find(**m, "other");
    ASSERT_UZFS_OK(other.status());
    EXPECT_EQ(ReadAll(**m, *other), "");
    ASSERT_TRUE((*m)->Unmount().ok());
  }
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir_.path(), "tp");
}

// More fsync'd data than the log's copy cap (kLogCopyMax, 32 MiB) in one
// txg stays on the log: the cap is on what is queued, and every commit
// empties the queue. With the old per-txg cap, the fsyncs past 32 MiB
// waited for a txg sync (seconds on slow disks: the 4-job slow-disk slog
// benchmark stalled there). 40 MiB in 1 MiB writes over one 2 MiB
// region, each fsync'd; no txg may sync, and the last writes replay.
TEST_F(ZilZplTest, SyncedWritesPastTheCopyCapStayOnTheLog) {
  CreateWithSlog();
  constexpr int kSlots = 2, kWrites = 40;
  constexpr size_t kLen = 1024 * 1024;
  auto piece = [](int i) { return std::string(kLen, static_cast<char>('a' + i % 26)); };
  InChild([&](Pool& pool, ZplFs& fs) {
    auto c = StartLogAndCreate(fs, "f");
    const uint64_t txg = pool.txg_stats().synced_txg;
    if (!c.ok()) return false;
    for (int i = 0; i < kWrites; i++) {
      if (!fs.Write(c->second, (i % kSlots) * kLen, AsBytes(piece(i))).ok()) return false;
      if (!fs.Fsync(c->second, false).ok()) return false;
    }
    const uint64_t now = pool.txg_stats().synced_txg;
    std::fprintf(stderr, "txgs synced during the fsyncs: %llu\n", static_cast<unsigned long long>(now - txg));
    return now == txg;
  });
  auto p = Import();
  ASSERT_UZFS_OK(p.status());
  auto m = ZplFs::Mount(**p, "tp");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto f = Find(**m, "f");
  ASSERT_UZFS_OK(f.status());
  std::string want;
  for (int i = kWrites - kSlots; i < kWrites; i++) want += piece(i);
  EXPECT_TRUE(ReadAll(**m, *f) == want);
  ASSERT_TRUE((*m)->Unmount().ok());
}

// A replayed create gets its logged owner in the same transaction (a crash
// during replay cannot leave a root-owned file): files, a directory and a
// symlink made by uid 1234 come back owned by it, and the replay makes one
// transaction per record, not two.
TEST_F(ZilZplTest, ReplayedCreatesAreOwnedInOneTransaction) {
  constexpr int kFiles = 12;
  ZplCred user;
  user.uid = 1234;
  user.gid = 99;
  InChild([&](Pool& pool, ZplFs& fs) {
    const uint64_t root = fs.root_ino();
    if (!Put(fs, root, "first", "1", true)) return false;  // starts the log
    const uint64_t txg = pool.txg_stats().synced_txg;
    auto d = fs.Mkdir(kRoot, root, "pub", 0777);
    if (!d.ok()) return false;
    for (int i = 0; i < kFiles; i++) {
      auto c = fs.Create(user, d->ino, "u" + std::to_string(i), S_IFREG | 0640, O_CREAT | O_RDWR);
      if (!c.ok() || !fs.Release(c->second).ok()) return false;
    }
    if (!fs.Mkdir(user, d->ino, "udir", 0700).ok()) return false;
    if (!fs.Symlink(user, d->ino, "ulink", "u0").ok()) return false;
    auto c = fs.Create(user, d->ino, "last", S_IFREG | 0600, O_CREAT | O_RDWR);
    if (!c.ok() || !fs.Fsync(c->second, false).ok()) return false;
    return pool.txg_stats().synced_txg == txg;
  });
  auto p = Import();
  ASSERT_UZFS_OK(p.status());
  const uint64_t tx0 = (*p)->txg_stats().tx_assigned;
  auto m = ZplFs::Mount(**p, "tp");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const uint64_t txs = (*p)->txg_stats().tx_assigned - tx0;
  const uint64_t records = 1 + kFiles + 3;  // mkdir pub, the creates, udir, ulink, last
  std::printf("replay of %llu records: %llu transactions\n", static_cast<unsigned long long>(records),
              static_cast<unsigned long long>(txs));
  EXPECT_LT(txs, records + kFiles / 2);  // a create then a chown would be ~2 per record
  std::vector<std::string> names{"udir", "ulink", "last"};
  for (int i = 0; i < kFiles; i++) names.push_back("u" + std::to_string(i));
  for (const std::string& n : names) {
    auto f = Find(**m, "pub/" + n);
    ASSERT_UZFS_OK(f.status());
    auto a = (*m)->GetAttr(*f);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->uid, 1234u) << n;
    EXPECT_EQ(a->gid, 99u) << n;
  }
  auto u0 = Find(**m, "pub/u0");
  ASSERT_UZFS_OK(u0.status());
  EXPECT_EQ((*m)->GetAttr(*u0)->mode & 07777, 0640u);
  ASSERT_TRUE((*m)->Unmount().ok());
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir_.path(), "tp");
}

// Directory xattrs (this pool's ZPL keeps xattrs in hidden directories)
// are logged: the fsync after setxattr/removexattr needs no txg sync, and
// replay brings back the xattr directory, values, a replaced value and a
// removal.
TEST_F(ZilZplTest, DirectoryXattrsAreLoggedAndReplayed) {
  const std::string big(10000, 'x');
  InChild([&](Pool& pool, ZplFs& fs) {
    auto c = StartLogAndCreate(fs, "f");
    const uint64_t txg = pool.txg_stats().synced_txg;
    if (!c.ok()) return false;
    const uint64_t f = c->first.ino;
    if (!fs.SetXattr(kRoot, f, "user.a", AsBytes("value one"), 0).ok()) return false;
    if (!fs.SetXattr(kRoot, f, "user.big", AsBytes(big), 0).ok()) return false;
    if (!fs.SetXattr(kRoot, f, "user.gone", AsBytes("soon"), 0).ok()) return false;
    if (!fs.SetXattr(kRoot, f, "user.a", AsBytes("two"), 0).ok()) return false;  // replaced
    if (!fs.RemoveXattr(kRoot, f, "user.gone").ok()) return false;
    if (!fs.SetXattr(kRoot, f, "user.empty", {}, 0).ok()) return false;
    if (!fs.Fsync(c->second, false).ok()) return false;
    return pool.txg_stats().synced_txg == txg;  // the log carried it
  });
  auto p = Import();
  ASSERT_UZFS_OK(p.status());
  {
    auto m = ZplFs::Mount(**p, "tp");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    auto f = Find(**m, "f");
    ASSERT_UZFS_OK(f.status());
    auto get = [&](const std::string& n) {
      auto v = (*m)->GetXattr(kRoot, *f, n);
      return v.ok() ? std::string(v->begin(), v->end()) : "<" + v.status().ToString() + ">";
    };
    EXPECT_EQ(get("user.a"), "two");
    EXPECT_TRUE(get("user.big") == big);
    EXPECT_EQ(get("user.empty"), "");
    EXPECT_EQ((*m)->GetXattr(kRoot, *f, "user.gone").status().err(), ENODATA);
    auto names = (*m)->ListXattr(kRoot, *f);
    ASSERT_TRUE(names.ok());
    EXPECT_EQ(std::set<std::string>(names->begin(), names->end()),
              (std::set<std::string>{"user.a", "user.big", "user.empty"}));
    ASSERT_TRUE((*m)->Unmount().ok());
  }
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir_.path(), "tp");
}

// The atomic-replace idiom: write tmp (no fsync), rename it over file,
// fsync something else. The rename is in the log, so tmp's data must be
// too, or file comes back as an empty new object and its old contents are
// gone (the rename carries the moved file's queued records, as OpenZFS's).
TEST_F(ZilZplTest, RenameCarriesTheMovedFilesData) {
  InChild([&](Pool& pool, ZplFs& fs) {
    const uint64_t root = fs.root_ino();
    if (!Put(fs, root, "file", "old contents", true)) return false;
    const uint64_t txg = pool.txg_stats().synced_txg;
    auto t = fs.Create(kRoot, root, "file.tmp", S_IFREG | 0644, O_CREAT | O_RDWR);
    if (!t.ok() || !fs.Write(t->second, 0, AsBytes("new contents")).ok() || !fs.Release(t->second).ok()) return false;
    if (!fs.Rename(kRoot, root, "file.tmp", root, "file").ok()) return false;
    if (!Put(fs, root, "marker", "m", true)) return false;  // an fsync of another file
    return pool.txg_stats().synced_txg == txg;
  });
  auto p = Import();
  ASSERT_UZFS_OK(p.status());
  {
    auto m = ZplFs::Mount(**p, "tp");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    auto f = Find(**m, "file");
    ASSERT_UZFS_OK(f.status());
    EXPECT_EQ(ReadAll(**m, *f), "new contents");
    EXPECT_FALSE(Find(**m, "file.tmp").ok());
    ASSERT_TRUE((*m)->Unmount().ok());
  }
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir_.path(), "tp");
}

// The top-level vdev the log's first block is on.
int64_t LogVdev(Pool& pool) {
  auto os = pool.ObjsetForRead("tp");
  if (!os.ok()) return -1;
  const ZilHeader zh = (*os)->zil_header();
  return zh.log.IsHole() ? -1 : static_cast<int64_t>(zh.log.dva[0].vdev);
}

// With a log device the log lives there; when it fails, the fsync that
// hit the failure waits for a txg sync instead, the log moves to the main
// pool, and after a crash every fsynced change is replayed from both.
TEST_F(ZilZplTest, SlogCarriesTheLogAndFailsOver) {
  CreateWithSlog();
  const std::string slog = (dir_.path() / "slog").string();
  InChild([&](Pool& pool, ZplFs& fs) {
    if (!Put(fs, fs.root_ino(), "start", "", true)) return false;
    if (!Put(fs, fs.root_ino(), "x1", "on the slog", true)) return false;
    if (LogVdev(pool) != 1) return false;
    FaultDevice* f = pool.LeafFaults(slog);
    if (f == nullptr) return false;
    f->Vanish();
    {
      auto c = fs.Create(kRoot, fs.root_ino(), "x2", S_IFREG | 0644, O_CREAT | O_RDWR);
      if (!c.ok() || !fs.Write(c->second, 0, AsBytes("fallback sync")).ok()) return false;
      ZplStatus s = fs.Fsync(c->second, false);
      if (!s.ok()) {
        std::fprintf(stderr, "fsync x2: %s\n", s.ToString().c_str());
        return false;
      }
    }
    const uint64_t synced = pool.txg_stats().synced_txg;
    if (!Put(fs, fs.root_ino(), "x3", "on the main pool", true)) return false;
    if (LogVdev(pool) != 0) return false;
    return pool.txg_stats().synced_txg == synced;  // x3 went through the log
  });
  auto p = Import();
  ASSERT_UZFS_OK(p.status());
  {
    auto m = ZplFs::Mount(**p, "tp");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    for (const auto& [n, v] : {std::pair<std::string, std::string>{"x1", "on the slog"},
                               {"x2", "fallback sync"},
                               {"x3", "on the main pool"}}) {
      auto f = Find(**m, n);
      ASSERT_UZFS_OK(f.status());
      EXPECT_EQ(ReadAll(**m, *f), v);
    }
    // The log is back on the log device after the import.
    auto c = (*m)->Create(kRoot, (*m)->root_ino(), "y", S_IFREG | 0644, O_CREAT | O_RDWR);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*m)->Fsync(c->second, false).ok());
    EXPECT_EQ(LogVdev(**p), 1);
    ASSERT_TRUE((*m)->Release(c->second).ok());
    ASSERT_TRUE((*m)->Unmount().ok());
  }
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir_.path(), "tp");
}

// Two log devices; one is evacuated (what zpool remove calls first): no
// live log block stays on it, later logs avoid it, and a crash after that
// replays from the other.
TEST_F(ZilZplTest, EvacuateLogDevice) {
  std::filesystem::remove(dir_.path() / "d0");
  {
    PoolLayout l;
    l.data.push_back(pooltest::Leaf(dir_.path(), "d0"));
    l.logs.push_back(pooltest::Leaf(dir_.path(), "log1"));
    l.logs.push_back(pooltest::Leaf(dir_.path(), "log2"));
    PoolCreateOptions o = pooltest::V23();
    o.fs_init = InitNewFilesystem;
    auto p = Pool::Create("tp", l, o);
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->Export());
  }
  InChild([&](Pool& pool, ZplFs& fs) {
    std::set<uint32_t> used;
    for (int i = 0; i < 40; i++) {
      if (!Put(fs, fs.root_ino(), "a" + std::to_string(i), std::string(3000, 'a'), true)) return false;
      used.insert(static_cast<uint32_t>(LogVdev(pool)));
    }
    if (used.count(0)) return false;  // the log stays on the log devices
    if (!pool.EvacuateLogDevice(1).ok()) return false;
    for (int i = 0; i < 40; i++) {
      if (!Put(fs, fs.root_ino(), "b" + std::to_string(i), std::string(3000, 'b'), true)) return false;
    }
    // Every block of the live log is on vdev 2.
    auto os = pool.ObjsetForRead("tp");
    if (!os.ok()) return false;
    ZilReader reader(pool.block_target());
    ZilWalkOptions wo;
    wo.skip_replayed = false;
    bool off = true;
    auto w = reader.Walk(
        (*os)->zil_header(), wo,
        [&](const ZilBlockInfo& b) {
          if (b.bp.dva[0].vdev != 2) off = false;
          return Status::Ok();
        },
        [](const LogRecord&) { return Status::Ok(); });
    if (!w.ok() || w->blocks == 0 || !off) {
      std::fprintf(stderr, "blocks %llu, all on vdev 2: %d\n",
                   static_cast<unsigned long long>(w.ok() ? w->blocks : 0), off);
      return false;
    }
    return LogVdev(pool) == 2;
  });
  auto p = Import();
  ASSERT_UZFS_OK(p.status());
  auto m = ZplFs::Mount(**p, "tp");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  for (int i = 0; i < 40; i++) {
    auto f = Find(**m, "b" + std::to_string(i));
    ASSERT_UZFS_OK(f.status());
    EXPECT_EQ(ReadAll(**m, *f), std::string(3000, 'b'));
  }
  ASSERT_TRUE((*m)->Unmount().ok());
  m->reset();
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir_.path(), "tp");
}

// Concurrent fsyncs on raidz2 (log blocks of every size, group commit).
TEST_F(ZilZplTest, ConcurrentFsyncsOnRaidz) {
  std::filesystem::remove(dir_.path() / "d0");
  {
    PoolLayout l;
    l.data.push_back(pooltest::Group(dir_.path(), "r", VdevSpec::Type::kRaidz, 6, 2));
    PoolCreateOptions o = pooltest::V23();
    o.fs_init = InitNewFilesystem;
    auto p = Pool::Create("tp", l, o);
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->Export());
  }
  auto p = Import();
  ASSERT_UZFS_OK(p.status());
  for (int i = 0; i < 6; i++) {
    FaultDevice* f = (*p)->LeafFaults((dir_.path() / ("r" + std::to_string(i))).string());
    ASSERT_NE(f, nullptr);
    f->SetLatency(std::chrono::microseconds(2000), 1);  // slow disks
  }
  auto m = ZplFs::Mount(**p, "tp");
  ASSERT_TRUE(m.ok());
  ZplFs& fs = **m;
  std::vector<std::thread> ts;
  std::atomic<int> bad{0};
  std::string first_err;
  std::mutex err_mu;
  for (int t = 0; t < 4; t++) {
    ts.emplace_back([&, t] {
      auto c = fs.Create(kRoot, fs.root_ino(), "t" + std::to_string(t), S_IFREG | 0644, O_CREAT | O_RDWR);
      if (!c.ok()) {
        bad++;
        return;
      }
      std::mt19937_64 r(t);
      const std::string data(4096, static_cast<char>('a' + t));
      for (int i = 0; i < 40; i++) {
        auto w = fs.Write(c->second, (r() % 256) * 4096, AsBytes(data));
        ZplStatus s = fs.Fsync(c->second, false);
        if (!w.ok() || !s.ok()) {
          std::lock_guard<std::mutex> g(err_mu);
          if (first_err.empty()) first_err = w.ok() ? s.ToString() : w.status().ToString();
          bad++;
        }
      }
      (void)fs.Release(c->second);
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0) << first_err;
  ASSERT_TRUE(fs.Unmount().ok());
  m->reset();
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir_.path(), "tp");
}

// Writes through an O_DSYNC handle are durable when Write returns.
TEST_F(ZilZplTest, OsyncWritesNeedNoFsync) {
  InChild([&](Pool&, ZplFs& fs) {
    if (!Put(fs, fs.root_ino(), "start", "", true)) return false;
    auto c = fs.Create(kRoot, fs.root_ino(), "dsync", S_IFREG | 0644, O_CREAT | O_RDWR | O_DSYNC);
    if (!c.ok()) return false;
    return fs.Write(c->second, 0, AsBytes("durable")).ok() && fs.Write(c->second, 7, AsBytes("!")).ok();
  });
  auto p = Import();
  ASSERT_UZFS_OK(p.status());
  auto m = ZplFs::Mount(**p, "tp");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto f = Find(**m, "dsync");
  ASSERT_UZFS_OK(f.status());
  EXPECT_EQ(ReadAll(**m, *f), "durable!");
  ASSERT_TRUE((*m)->Unmount().ok());
}

// A crash right after a replay (before anything else syncs) replays
// nothing twice; a crash without any fsync loses the unsynced changes and
// leaves a consistent pool.
TEST_F(ZilZplTest, CrashAfterReplayAndWithoutFsync) {
  InChild([&](Pool&, ZplFs& fs) {
    if (!Put(fs, fs.root_ino(), "start", "", true)) return false;
    for (int i = 0; i < 20; i++) {  // each fsynced: an fsync covers only its own file's data
      if (!Put(fs, fs.root_ino(), "f" + std::to_string(i), std::string(100 + i, 'a' + i % 26), true))
        return false;
    }
    if (!fs.Rename(kRoot, fs.root_ino(), "f3", fs.root_ino(), "f4").ok()) return false;
    return Put(fs, fs.root_ino(), "last", "L", true);
  });
  // Replays, then dies at once: the replay's txgs synced (ZilStart syncs).
  InChild([&](Pool&, ZplFs& fs) { return Put(fs, fs.root_ino(), "nosync", "n", false); });
  auto p = Import();
  ASSERT_UZFS_OK(p.status());
  {
    auto m = ZplFs::Mount(**p, "tp");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    ZplFs& fs = **m;
    for (int i = 0; i < 20; i++) {
      auto f = Find(fs, "f" + std::to_string(i));
      if (i == 3) {
        EXPECT_FALSE(f.ok());
        continue;
      }
      ASSERT_UZFS_OK(f.status());
      const int k = i == 4 ? 3 : i;
      EXPECT_EQ(ReadAll(fs, *f), std::string(100 + k, 'a' + k % 26)) << i;
    }
    auto last = Find(fs, "last");
    ASSERT_UZFS_OK(last.status());
    EXPECT_EQ(ReadAll(fs, *last), "L");
    EXPECT_FALSE(Find(fs, "nosync").ok());
    ASSERT_TRUE(fs.Unmount().ok());
  }
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir_.path(), "tp");
}

// The child is killed at a random moment while it makes changes and
// fsyncs them; it reports each fsync that returned through a pipe. After
// each kill, every acknowledged file has exactly its contents.
TEST_F(ZilZplTest, RandomKill) {
  constexpr int kNames = 40;  // files are rewritten (O_TRUNC) in turn
  const int iters = ziltest::StressIterations(4);
  std::mt19937_64 rng(ziltest::CrashSeed());
  std::map<std::string, std::string> acked;  // name -> contents
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
      auto fs = ZplFs::Mount(**p, "tp");
      if (!fs.ok()) _exit(3);
      std::mt19937_64 r(seed);
      for (int n = first;; n++) {
        const std::string name = "n" + std::to_string(n % kNames);
        const std::string data(1 + r() % 20000, static_cast<char>('a' + n % 26));
        if (!Put(**fs, (*fs)->root_ino(), name, data, true)) _exit(4);
        if (n % 3 == 0) {
          // Rename the previous one over a fixed name, fsync'd by the next Put.
          (void)(*fs)->Rename(kRoot, (*fs)->root_ino(), "n" + std::to_string((n - 1) % kNames), (*fs)->root_ino(),
                              "cur");
        }
        const std::string rec = std::to_string(n) + "\n";
        if (write(fds[1], rec.data(), rec.size()) != static_cast<ssize_t>(rec.size())) _exit(5);
      }
    }
    close(fds[1]);
    std::this_thread::sleep_for(std::chrono::milliseconds(200 + rng() % 800));
    kill(pid, SIGKILL);
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(st)) << "child exited with " << WEXITSTATUS(st);
    std::string got;
    char buf[4096];
    for (ssize_t k; (k = read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, k);
    close(fds[0]);
    // Model: file n was fsynced; a rename of n-1 to "cur" at n % 3 == 0 is
    // fsynced by the Put of n+1 (and may have happened even if not acked).
    std::vector<int> done;
    for (size_t i = 0, j; i < got.size(); i = j + 1) {
      j = got.find('\n', i);
      done.push_back(std::stoi(got.substr(i, j - i)));
    }
    auto p = Import();
    ASSERT_UZFS_OK(p.status());
    auto m = ZplFs::Mount(**p, "tp");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    ZplFs& fs = **m;
    std::mt19937_64 r(seed);
    // Whether "cur" first appears with the last acked rename (not fsynced
    // yet: it may be missing after the kill).
    bool cur_new_at_last = false;
    for (int n : done) {
      const std::string data(1 + r() % 20000, static_cast<char>('a' + n % 26));
      acked["n" + std::to_string(n % kNames)] = data;
      if (n % 3 == 0 && acked.count("n" + std::to_string((n - 1) % kNames))) {
        if (n == done.back()) cur_new_at_last = acked.count("cur") == 0;
        acked["cur"] = acked["n" + std::to_string((n - 1) % kNames)];
        acked.erase("n" + std::to_string((n - 1) % kNames));
      }
    }
    // A rename at the last acked n (n % 3 == 0) may or may not be there.
    int last = done.empty() ? first - 1 : done.back();
    // The operation in flight at the kill (the Put of last + 1 and the
    // rename after it) may have reached the disk (a txg can sync on its
    // own once enough is dirty) or not.
    const std::string inflight = "n" + std::to_string((last + 1) % kNames);
    const bool rename_last = last % 3 == 0, rename_next = (last + 1) % 3 == 0;
    for (const auto& [name, data] : acked) {
      auto f = Find(fs, name);
      if (!f.ok() && rename_last && name == "n" + std::to_string((last - 1) % kNames)) continue;
      if (!f.ok() && rename_next && name == "n" + std::to_string(last % kNames)) continue;
      if (!f.ok() && rename_last && cur_new_at_last && name == "cur") continue;
      ASSERT_TRUE(f.ok()) << "iteration " << it << ": acknowledged " << name << " is missing";
      if (name == "cur" && (rename_last || rename_next)) continue;
      if (name == inflight) continue;
      EXPECT_EQ(ReadAll(fs, *f), data) << "iteration " << it << ": " << name;
    }
    // Re-read the state actually there for the next iteration's model.
    acked.clear();
    auto es = fs.ReadDir(kRoot, fs.root_ino(), 0, 100000);
    ASSERT_TRUE(es.ok());
    for (const ZplDirEntry& e : *es) {
      if (e.name == "." || e.name == "..") continue;
      acked[e.name] = ReadAll(fs, e.ino);
    }
    next = std::max(next, last + 1);
    ASSERT_TRUE(fs.Unmount().ok());
    m->reset();
    ASSERT_UZFS_OK((*p)->Export());
    p->reset();
    pooltest::ExpectConsistent(dir_.path(), "tp");
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace uzfs

namespace uzfs {
namespace {

// sync=always: every change is on stable storage when the call returns,
// without an fsync (here: files, a directory and a rename made by a child
// that then dies).
TEST_F(ZilZplTest, SyncAlwaysNeedsNoFsync) {
  {
    auto p = Import();
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->SetProp("tp", "sync", "always"));
    ASSERT_UZFS_OK((*p)->Export());
  }
  InChild([&](Pool& pool, ZplFs& fs) {
    const uint64_t root = fs.root_ino();
    if (!Put(fs, root, "a", "alpha", false)) return false;
    const uint64_t synced = pool.txg_stats().synced_txg;
    if (!Put(fs, root, "b", std::string(50000, 'b'), false)) return false;
    auto d = fs.Mkdir(kRoot, root, "d", 0755);
    if (!d.ok()) return false;
    if (!fs.Rename(kRoot, root, "b", d->ino, "b2").ok()) return false;
    // Through the log, not txg syncs (the first change started the log).
    return pool.txg_stats().synced_txg == synced;
  });
  auto p = Import();
  ASSERT_UZFS_OK(p.status());
  auto m = ZplFs::Mount(**p, "tp");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto a = Find(**m, "a");
  ASSERT_UZFS_OK(a.status());
  EXPECT_EQ(ReadAll(**m, *a), "alpha");
  auto b = Find(**m, "d/b2");
  ASSERT_UZFS_OK(b.status());
  EXPECT_EQ(ReadAll(**m, *b), std::string(50000, 'b'));
  EXPECT_FALSE(Find(**m, "b").ok());
  ASSERT_TRUE((*m)->Unmount().ok());
  m->reset();
  ASSERT_UZFS_OK((*p)->Export());
  pooltest::ExpectConsistent(dir_.path(), "tp");
}

// sync=disabled: fsync returns at once and writes nothing (no log, no txg
// sync) — a crash then loses what it "acknowledged", as documented.
TEST_F(ZilZplTest, SyncDisabledFsyncWritesNothing) {
  {
    auto p = Import();
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->SetProp("tp", "sync", "disabled"));
    ASSERT_UZFS_OK((*p)->Export());
  }
  InChild([&](Pool& pool, ZplFs& fs) {
    const uint64_t synced = pool.txg_stats().synced_txg;
    if (!Put(fs, fs.root_ino(), "lost", "x", true)) return false;
    return pool.txg_stats().synced_txg == synced;
  });
  auto p = Import();
  ASSERT_UZFS_OK(p.status());
  auto m = ZplFs::Mount(**p, "tp");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_FALSE(Find(**m, "lost").ok());
  // Back to standard: fsync is durable again.
  ASSERT_TRUE((*m)->Unmount().ok());
  m->reset();
  ASSERT_UZFS_OK((*p)->InheritProp("tp", "sync"));
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  InChild([&](Pool&, ZplFs& fs) { return Put(fs, fs.root_ino(), "kept", "y", true); });
  p = Import();
  ASSERT_UZFS_OK(p.status());
  m = ZplFs::Mount(**p, "tp");
  ASSERT_TRUE(m.ok());
  auto k = Find(**m, "kept");
  ASSERT_UZFS_OK(k.status());
  EXPECT_EQ(ReadAll(**m, *k), "y");
  ASSERT_TRUE((*m)->Unmount().ok());
  m->reset();
  ASSERT_UZFS_OK((*p)->Export());
}

}  // namespace
}  // namespace uzfs
