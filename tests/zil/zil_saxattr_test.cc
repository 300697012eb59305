// SA xattrs in the intent log (org.openzfs:zilsaxattr, TX_SETSAXATTR):
// on a feature-flag pool the dataset activates the feature as its log is
// created, setxattr/removexattr of xattrs kept as system attributes are
// logged, an fsync after them needs no txg sync, and a crash brings back
// exactly what was fsync'd. A pool without the feature (version 28: SA
// xattrs, no feature flags) keeps the old rule: the fsync waits for the
// txg. (Directory xattrs, version 23: zil_zpl_test.)
//
// A crash is a child process that dies without unmount, export or sync
// with txgs closing only after a minute (tests/zil/zil_pool_util.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "tests/zil/zil_pool_util.h"
#include "zfs/dsl/pool.h"
#include "zfs/zil/zil_reader.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs {
namespace {

const ZplCred kRoot{};

using ziltest::AsBytes;

class ZilSaXattrTest : public ::testing::Test {
 protected:
  void Create(uint64_t version) { ziltest::CreatePool(dir_.path(), "tp", "tp", false, 0, version); }
  Result<std::unique_ptr<Pool>> Import() { return ziltest::ImportSlowTxgs(dir_.path(), "tp"); }
  void InChild(const std::function<bool(Pool&, ZplFs&)>& fn) {
    ziltest::InChild([this] { return Import(); }, "tp", fn);
  }
  // The records of each type in the log the import claimed (before the
  // mount replays it).
  static std::map<TxType, int> LoggedTypes(Pool& p, const std::string& ds) {
    std::map<TxType, int> n;
    auto os = p.ObjsetForRead(ds);
    if (!os.ok()) return n;
    ZilReader reader(p.block_target(), &p.zio());
    auto w = reader.Walk((*os)->zil_header(), ZilWalkOptions{}, nullptr, [&](const LogRecord& r) {
      n[r.type()]++;
      return Status::Ok();
    });
    EXPECT_UZFS_OK(w.status());
    return n;
  }
  static std::map<std::string, PoolFeatureState> Features(Pool& p) {
    std::map<std::string, PoolFeatureState> m;
    auto f = p.Features();
    EXPECT_UZFS_OK(f.status());
    if (f.ok()) {
      for (const PoolFeatureState& s : *f) m[s.name] = s;
    }
    return m;
  }
  static std::string Get(ZplFs& fs, uint64_t ino, const std::string& name) {
    auto v = fs.GetXattr(kRoot, ino, name);
    return v.ok() ? std::string(v->begin(), v->end()) : "<" + std::to_string(v.err()) + ">";
  }
  static std::set<std::string> Names(ZplFs& fs, uint64_t ino) {
    auto n = fs.ListXattr(kRoot, ino);
    return n.ok() ? std::set<std::string>(n->begin(), n->end()) : std::set<std::string>{"<error>"};
  }
  // Creates `name` in the root, fsyncs it (the first fsync starts the
  // log) and returns its handle.
  static ZplResult<std::pair<ZplAttr, ZplHandle>> Synced(ZplFs& fs, const std::string& name) {
    auto c = fs.Create(kRoot, fs.root_ino(), name, S_IFREG | 0644, O_CREAT | O_RDWR);
    if (!c.ok()) return c;
    ZplStatus s = fs.Fsync(c->second, false);
    if (!s.ok()) return s;
    return c;
  }

  test::TempDir dir_;
};

// Sets, replaces and removes SA xattrs (also one moving from the xattr
// directory to the SA and one moving out), fsyncs without a txg sync,
// changes more without fsync, crashes: the replay restores exactly the
// fsync'd state.
TEST_F(ZilSaXattrTest, FsyncedSaXattrsSurviveACrashWithoutATxgSync) {
  Create(kFeatureVersion);
  const std::string big(40000, 'b');  // over the SA's 32 KiB per value: a directory xattr
  InChild([&](Pool& pool, ZplFs& fs) {
    auto c = Synced(fs, "f");
    if (!c.ok()) return false;
    const uint64_t f = c->first.ino;
    if (!fs.SetXattr(kRoot, f, "user.m", AsBytes(big), 0).ok()) return false;      // directory
    if (!fs.SetXattr(kRoot, f, "user.n", AsBytes("small n"), 0).ok()) return false;  // SA
    auto g = Synced(fs, "g");
    if (!g.ok()) return false;
    if (!fs.Fsync(c->second, false).ok()) return false;
    const TxgStats before = pool.txg_stats();
    if (!fs.SetXattr(kRoot, f, "user.a", AsBytes("one"), 0).ok()) return false;
    if (!fs.SetXattr(kRoot, f, "user.b", AsBytes("two"), 0).ok()) return false;
    if (!fs.SetXattr(kRoot, f, "user.c", AsBytes("gone soon"), 0).ok()) return false;
    if (!fs.SetXattr(kRoot, f, "user.a", AsBytes("three"), XATTR_REPLACE).ok()) return false;
    if (!fs.RemoveXattr(kRoot, f, "user.c").ok()) return false;
    if (!fs.SetXattr(kRoot, f, "user.m", AsBytes("m now fits"), 0).ok()) return false;  // directory -> SA
    if (!fs.SetXattr(kRoot, f, "user.n", AsBytes(big), 0).ok()) return false;          // SA -> directory
    // An SA set (tagged f), then the same name moving to the directory
    // (untagged records): another file's fsync writes the untagged ones and
    // must not leave the older SA set to be written after them by f's.
    if (!fs.SetXattr(kRoot, f, "user.o", AsBytes("o small"), 0).ok()) return false;
    if (!fs.SetXattr(kRoot, f, "user.o", AsBytes(big), 0).ok()) return false;
    if (!fs.SetXattr(kRoot, f, "user.p", AsBytes("p small"), 0).ok()) return false;
    if (!fs.SetXattr(kRoot, f, "user.p", AsBytes(big), 0).ok()) return false;
    if (!fs.Fsync(g->second, false).ok()) return false;
    if (!fs.RemoveXattr(kRoot, f, "user.p").ok()) return false;
    if (!fs.Fsync(c->second, false).ok()) return false;
    const TxgStats after = pool.txg_stats();
    if (after.synced_txg != before.synced_txg || after.txgs_synced != before.txgs_synced) {
      std::fprintf(stderr, "the fsync waited for a txg sync: synced %llu -> %llu\n",
                   static_cast<unsigned long long>(before.synced_txg),
                   static_cast<unsigned long long>(after.synced_txg));
      return false;
    }
    // Not fsync'd: lost in the crash.
    if (!fs.SetXattr(kRoot, f, "user.late", AsBytes("x"), 0).ok()) return false;
    return fs.RemoveXattr(kRoot, f, "user.b").ok();
  });
  auto p = Import();
  ASSERT_UZFS_OK(p.status());
  const auto types = LoggedTypes(**p, "tp");
  EXPECT_GE(types.count(TxType::kSetSaxattr) ? types.at(TxType::kSetSaxattr) : 0, 7);
  EXPECT_EQ(Features(**p)["zilsaxattr"].refcount, 1u);
  {
    auto m = ZplFs::Mount(**p, "tp");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    auto f = (*m)->Lookup(kRoot, (*m)->root_ino(), "f");
    ASSERT_TRUE(f.ok());
    ZplFs& fs = **m;
    EXPECT_EQ(Get(fs, f->ino, "user.a"), "three");
    EXPECT_EQ(Get(fs, f->ino, "user.b"), "two");
    EXPECT_EQ(Get(fs, f->ino, "user.c"), "<" + std::to_string(ENODATA) + ">");
    EXPECT_EQ(Get(fs, f->ino, "user.m"), "m now fits");
    EXPECT_TRUE(Get(fs, f->ino, "user.n") == big);
    EXPECT_TRUE(Get(fs, f->ino, "user.o") == big) << Get(fs, f->ino, "user.o").substr(0, 16);
    EXPECT_EQ(Get(fs, f->ino, "user.p"), "<" + std::to_string(ENODATA) + ">");
    EXPECT_EQ(Names(fs, f->ino), (std::set<std::string>{"user.a", "user.b", "user.m", "user.n", "user.o"}));
    ASSERT_TRUE(fs.Unmount().ok());
  }
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir_.path(), "tp");
}

// The feature's states: enabled on a new pool, active (refcount = datasets
// that ever had a log) once a dataset's log is created, counted once per
// dataset across remounts, given back when the dataset is destroyed.
TEST_F(ZilSaXattrTest, FeatureIsEnabledThenActivatedPerDataset) {
  Create(kFeatureVersion);
  auto p = Import();
  ASSERT_UZFS_OK(p.status());
  ASSERT_UZFS_OK((*p)->CreateDataset("tp/a", {}));
  auto f = Features(**p);
  ASSERT_TRUE(f.count("zilsaxattr"));
  EXPECT_TRUE(f["zilsaxattr"].enabled);
  EXPECT_TRUE(f["zilsaxattr"].supported);
  EXPECT_EQ(f["zilsaxattr"].guid, kZilSaXattrGuid);
  EXPECT_EQ(f["zilsaxattr"].refcount, 0u);
  const uint64_t ext = f["extensible_dataset"].refcount;
  // tp and tp/a start a log each; tp/a a second one (a remount), which
  // must not count again.
  for (const std::string ds : {"tp", "tp/a", "tp/a"}) {
    auto m = ZplFs::Mount(**p, ds);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    auto c = Synced(**m, "x");
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_TRUE((*p)->ZilLogsSaXattr(ds));
    ASSERT_TRUE((*m)->Release(c->second).ok());
    ASSERT_TRUE((*m)->Unmount().ok());
    f = Features(**p);
    EXPECT_EQ(f["zilsaxattr"].refcount, ds == "tp" ? 1u : 2u) << ds;
    EXPECT_EQ(f["extensible_dataset"].refcount, ext + (ds == "tp" ? 1 : 2)) << ds;
  }
  ASSERT_UZFS_OK((*p)->DestroyDataset("tp/a"));
  f = Features(**p);
  EXPECT_EQ(f["zilsaxattr"].refcount, 1u);
  EXPECT_EQ(f["extensible_dataset"].refcount, ext + 1);
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir_.path(), "tp");
}

// Version 28 has SA xattrs but no feature flags: nothing is activated,
// no TX_SETSAXATTR is written, and the fsync after an SA xattr change
// waits for the txg, so the change still survives the crash.
TEST_F(ZilSaXattrTest, PoolWithoutTheFeatureWaitsForATxg) {
  Create(28);
  InChild([&](Pool& pool, ZplFs& fs) {
    auto c = Synced(fs, "f");
    if (!c.ok() || pool.ZilLogsSaXattr("tp")) return false;
    const uint64_t synced = pool.txg_stats().synced_txg;
    if (!fs.SetXattr(kRoot, c->first.ino, "user.k", AsBytes("kept"), 0).ok()) return false;
    if (!fs.Fsync(c->second, false).ok()) return false;
    return pool.txg_stats().synced_txg > synced;  // the fallback: a txg sync
  });
  auto p = Import();
  ASSERT_UZFS_OK(p.status());
  EXPECT_EQ(LoggedTypes(**p, "tp").count(TxType::kSetSaxattr), 0u);
  auto f = (*p)->Features();
  ASSERT_UZFS_OK(f.status());
  for (const PoolFeatureState& s : *f) EXPECT_FALSE(s.enabled) << s.name;
  {
    auto m = ZplFs::Mount(**p, "tp");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    auto fa = (*m)->Lookup(kRoot, (*m)->root_ino(), "f");
    ASSERT_TRUE(fa.ok());
    EXPECT_EQ(Get(**m, fa->ino, "user.k"), "kept");
    ASSERT_TRUE((*m)->Unmount().ok());
  }
  ASSERT_UZFS_OK((*p)->Export());
}

// A feature-flag pool made without the feature (zpool create -o
// feature@zilsaxattr=disabled; as OpenZFS before 2.2 or uzfs before it
// made them) falls back like version 28; `zpool set feature@zilsaxattr=
// enabled` then makes the running log activate it at its next commit, and
// SA xattr changes are logged from there on.
TEST_F(ZilSaXattrTest, EnabledLaterOnAPoolMadeWithoutIt) {
  PoolLayout l;
  l.data.push_back(pooltest::Leaf(dir_.path(), "d0"));
  PoolCreateOptions o = pooltest::V23();
  o.version = kFeatureVersion;
  o.disabled_features = {kZilSaXattrGuid};
  o.fs_init = InitNewFilesystem;
  o.txg.timeout = std::chrono::seconds(60);  // only fsyncs sync txgs
  auto p = Pool::Create("tp", l, o);
  ASSERT_UZFS_OK(p.status());
  EXPECT_FALSE(Features(**p)["zilsaxattr"].enabled);
  auto m = ZplFs::Mount(**p, "tp");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ZplFs& fs = **m;
  auto c = Synced(fs, "f");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE((*p)->ZilLogsSaXattr("tp"));
  uint64_t synced = (*p)->txg_stats().synced_txg;
  ASSERT_TRUE(fs.SetXattr(kRoot, c->first.ino, "user.a", AsBytes("1"), 0).ok());
  ASSERT_TRUE(fs.Fsync(c->second, false).ok());
  EXPECT_GT((*p)->txg_stats().synced_txg, synced);  // not logged: waited for the txg
  ASSERT_UZFS_OK((*p)->EnableFeature(kZilSaXattrGuid));
  auto f = Features(**p);
  EXPECT_TRUE(f["zilsaxattr"].enabled);
  EXPECT_EQ(f["zilsaxattr"].refcount, 0u);
  ASSERT_TRUE(fs.Fsync(c->second, false).ok());  // activates it for the running log
  EXPECT_TRUE((*p)->ZilLogsSaXattr("tp"));
  EXPECT_EQ(Features(**p)["zilsaxattr"].refcount, 1u);
  synced = (*p)->txg_stats().synced_txg;
  ASSERT_TRUE(fs.SetXattr(kRoot, c->first.ino, "user.a", AsBytes("2"), 0).ok());
  ASSERT_TRUE(fs.Fsync(c->second, false).ok());
  EXPECT_EQ((*p)->txg_stats().synced_txg, synced);  // logged
  ASSERT_TRUE(fs.Release(c->second).ok());
  ASSERT_TRUE(fs.Unmount().ok());
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir_.path(), "tp");
}

}  // namespace
}  // namespace uzfs
