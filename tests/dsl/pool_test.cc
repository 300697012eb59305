// Pool lifecycle through the library: create (stripe, mirror, raidz1/2/3,
// log/cache/spare sections), datasets and properties, data written over
// many txgs, export, import, and after every step our own zdb -b
// (TraversePool) finds the pool consistent: no leaked, unreachable or
// doubly allocated space, every block verifying. Bad input: too small or
// foreign devices, bad versions and names, a damaged newest uberblock.
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"
#include "zfs/inspect/block_traverse.h"
#include "zfs/inspect/pool_reader.h"
#include "zfs/spa/label_io.h"
#include "zfs/vdev/file_device.h"

namespace uzfs {
namespace {

namespace fs = std::filesystem;

using pooltest::ExpectConsistent;
using pooltest::Group;
using pooltest::ImportFrom;
using pooltest::MakeFile;
using pooltest::V23;

PoolLayout Stripe(const fs::path& dir, int n) {
  PoolLayout l;
  for (int i = 0; i < n; i++) {
    VdevSpec s;
    s.path = MakeFile(dir, "d" + std::to_string(i));
    l.data.push_back(s);
  }
  return l;
}

using pooltest::WriteObjects;

TEST(Pool, CreateExportImportStripe) {
  test::TempDir d;
  {
    auto p = Pool::Create("tank", Stripe(d.path(), 2), V23());
    ASSERT_UZFS_OK(p.status());
    EXPECT_EQ((*p)->uberblock().txg, kInitialTxg);
    ASSERT_UZFS_OK((*p)->Export());
  }
  ExpectConsistent(d.path(), "tank");
  auto devs = ScanDeviceDir(d.path().string());
  ASSERT_UZFS_OK(devs.status());
  auto pools = ListFoundPools(*devs);
  ASSERT_EQ(pools.size(), 1u);
  EXPECT_EQ(pools[0].name, "tank");
  EXPECT_EQ(pools[0].state, kPoolStateExported);
  {
    auto p = ImportFrom(d.path(), "tank");
    ASSERT_UZFS_OK(p.status());
    auto list = (*p)->ListDatasets();
    ASSERT_UZFS_OK(list.status());
    ASSERT_EQ(list->size(), 1u);
    EXPECT_EQ((*list)[0].name, "tank");
    ASSERT_UZFS_OK((*p)->Export());
  }
  ExpectConsistent(d.path(), "tank");
}

TEST(Pool, DatasetsPropertiesAndData) {
  test::TempDir d;
  std::vector<uint64_t> objs;
  {
    auto p = Pool::Create("tank", Stripe(d.path(), 2), V23());
    ASSERT_UZFS_OK(p.status());
    Pool& pool = **p;
    ASSERT_UZFS_OK(pool.CreateDataset("tank/a", {{"compression", "lzjb"}}));
    ASSERT_UZFS_OK(pool.CreateDataset("tank/a/b", {{"com.uzfs:note", "hello"}}));
    ASSERT_UZFS_OK(pool.CreateDataset("tank/c", {{"copies", "2"}}));
    EXPECT_FALSE(pool.CreateDataset("tank/a", {}).ok());          // exists
    EXPECT_FALSE(pool.CreateDataset("tank/x/y", {}).ok());        // no parent
    EXPECT_FALSE(pool.CreateDataset("tank/z", {{"compression", "bogus"}}).ok());
    for (int txg = 0; txg < 12; txg++) {
      WriteObjects(pool, txg % 2 ? "tank/a" : "tank/c", 3, 40000 + 777 * txg, txg * 100, &objs);
      ASSERT_UZFS_OK(pool.Sync());
    }
    auto props = pool.LocalProps("tank/a");
    ASSERT_UZFS_OK(props.status());
    EXPECT_EQ(props->at("compression"), "3");
    auto props_b = pool.LocalProps("tank/a/b");
    ASSERT_UZFS_OK(props_b.status());
    EXPECT_EQ(props_b->at("com.uzfs:note"), "hello");
    auto list = pool.ListDatasets();
    ASSERT_UZFS_OK(list.status());
    ASSERT_EQ(list->size(), 4u);
    // Space: each dataset's referenced bytes are in its dir and the root's.
    uint64_t child_sum = 0;
    for (const DatasetInfo& i : *list) {
      if (i.name == "tank/a" || i.name == "tank/c") child_sum += i.dir.used_bytes;
      if (i.name != "tank") {
        EXPECT_GT(i.ds.referenced_bytes, 0u) << i.name;
      }
    }
    EXPECT_GT(child_sum, 12u * 3 * 20000);
    ASSERT_UZFS_OK(pool.Export());
  }
  ExpectConsistent(d.path(), "tank");
  {
    auto p = ImportFrom(d.path(), "tank");
    ASSERT_UZFS_OK(p.status());
    Pool& pool = **p;
    // Read back every object.
    auto os_a = pool.Objset("tank/a");
    auto os_c = pool.Objset("tank/c");
    ASSERT_UZFS_OK(os_a.status());
    ASSERT_UZFS_OK(os_c.status());
    for (int txg = 0, k = 0; txg < 12; txg++) {
      for (int i = 0; i < 3; i++, k++) {
        const size_t size = 40000 + 777 * txg;
        std::vector<uint8_t> got(size);
        ASSERT_UZFS_OK((txg % 2 ? *os_a : *os_c)->Read(objs[k], 0, got));
        EXPECT_EQ(got, test::RandomBytes(size, txg * 100 + i)) << "txg " << txg << " obj " << i;
      }
    }
    ASSERT_UZFS_OK(pool.RenameDataset("tank/a/b", "tank/c/b2"));
    ASSERT_UZFS_OK(pool.SetProp("tank/c", "compression", "gzip-9"));
    ASSERT_UZFS_OK(pool.InheritProp("tank/a", "compression"));
    ASSERT_UZFS_OK(pool.DestroyDataset("tank/a"));
    EXPECT_FALSE(pool.DestroyDataset("tank/c").ok());  // has a child
    auto list = pool.ListDatasets();
    ASSERT_UZFS_OK(list.status());
    std::vector<std::string> names;
    for (const DatasetInfo& i : *list) names.push_back(i.name);
    EXPECT_EQ(names, (std::vector<std::string>{"tank", "tank/c", "tank/c/b2"}));
    ASSERT_UZFS_OK(pool.Export());
  }
  ExpectConsistent(d.path(), "tank");
}

TEST(Pool, RedundantLayouts) {
  struct Case {
    const char* name;
    VdevSpec::Type type;
    int n;
    uint32_t parity;
  } cases[] = {{"mirror", VdevSpec::Type::kMirror, 2, 0},
               {"raidz1", VdevSpec::Type::kRaidz, 3, 1},
               {"raidz2", VdevSpec::Type::kRaidz, 5, 2},
               {"raidz3", VdevSpec::Type::kRaidz, 6, 3}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    test::TempDir d;
    PoolLayout l;
    l.data.push_back(Group(d.path(), "g", c.type, c.n, c.parity));
    l.logs.push_back(Group(d.path(), "log", VdevSpec::Type::kFile, 0));
    l.logs.back().type = VdevSpec::Type::kFile;
    l.logs.back().path = MakeFile(d.path(), "log");
    VdevSpec cache;
    cache.path = MakeFile(d.path(), "cache");
    l.cache.push_back(cache);
    VdevSpec spare;
    spare.path = MakeFile(d.path(), "spare");
    l.spares.push_back(spare);
    std::vector<uint64_t> objs;
    {
      auto p = Pool::Create("rp", l, V23());
      ASSERT_UZFS_OK(p.status());
      ASSERT_UZFS_OK((*p)->CreateDataset("rp/fs", {{"compression", "gzip"}}));
      for (int i = 0; i < 4; i++) {
        WriteObjects(**p, "rp/fs", 4, 300000 + 4096 * i, 7 + i * 10, &objs);
        ASSERT_UZFS_OK((*p)->Sync());
      }
      ASSERT_UZFS_OK((*p)->Export());
    }
    ExpectConsistent(d.path(), "rp");
    auto p = ImportFrom(d.path(), "rp");
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->Export());
  }
}

TEST(Pool, BadInput) {
  test::TempDir d;
  // Too small.
  {
    PoolLayout l;
    VdevSpec s;
    s.path = MakeFile(d.path(), "small", 32ull << 20);
    l.data.push_back(s);
    auto p = Pool::Create("tank", l, V23());
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.status().message().find("minimum size"), std::string::npos) << p.status().ToString();
  }
  // Bad names and versions.
  EXPECT_FALSE(Pool::Create("1tank", Stripe(d.path(), 1), V23()).ok());
  EXPECT_FALSE(Pool::Create("mirror", Stripe(d.path(), 1), V23()).ok());
  {
    PoolCreateOptions o = V23();
    o.version = 29;
    auto p = Pool::Create("tank", Stripe(d.path(), 1), o);
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.status().message().find("version"), std::string::npos);
  }
  // A device of another pool is refused without force, and left intact.
  {
    auto p = Pool::Create("first", Stripe(d.path(), 1), V23());
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->Export());
  }
  const auto before = test::ReadFile(d.path() / "d0");
  {
    PoolLayout l;
    VdevSpec s;
    s.path = (d.path() / "d0").string();
    l.data.push_back(s);
    auto p = Pool::Create("second", l, V23());
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.status().message().find("is part of exported pool 'first'"), std::string::npos)
        << p.status().ToString();
  }
  EXPECT_TRUE(test::ReadFile(d.path() / "d0") == before);
  ExpectConsistent(d.path(), "first");
  // Import of a pool that is not there.
  auto missing = ImportFrom(d.path(), "nosuch");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no such pool"), std::string::npos);
  // Grammar errors.
  std::vector<std::string> args{"raidz2", "/a", "/b"};
  auto g = ParseVdevGrammar(args);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("raidz2 requires at least 3 devices"), std::string::npos);
  std::vector<std::string> args2{"relative"};
  EXPECT_FALSE(ParseVdevGrammar(args2).ok());
}

// The grammar read as OpenZFS reads it: cache and spare take plain devices
// up to the next keyword, after which a group is a data vdev again; log
// stays in force; log, cache and spare each appear once.
TEST(Pool, VdevGrammarEndsSpareAndCacheListsAtTheNextGroup) {
  std::vector<std::string> a{"mirror", "/a", "/b", "spare", "/c", "/d", "mirror", "/e", "/f"};
  auto g = ParseVdevGrammar(a);
  ASSERT_UZFS_OK(g.status());
  ASSERT_EQ(g->data.size(), 2u);
  EXPECT_EQ(g->data[1].type, VdevSpec::Type::kMirror);
  EXPECT_EQ(g->data[1].children[0].path, "/e");
  ASSERT_EQ(g->spares.size(), 2u);
  EXPECT_EQ(g->spares[1].path, "/d");
  std::vector<std::string> b{"/a", "cache", "/c", "raidz", "/d", "/e", "/f", "log", "mirror", "/g", "/h",
                             "mirror", "/i", "/j"};
  g = ParseVdevGrammar(b);
  ASSERT_UZFS_OK(g.status());
  EXPECT_EQ(g->data.size(), 2u);
  EXPECT_EQ(g->cache.size(), 1u);
  EXPECT_EQ(g->logs.size(), 2u);
  for (const char* kw : {"spare", "cache", "log"}) {
    std::vector<std::string> twice{"/a", kw, "/b", kw, "/c"};
    auto t = ParseVdevGrammar(twice);
    ASSERT_FALSE(t.ok()) << kw;
    EXPECT_EQ(t.status().message(),
              std::string("invalid vdev specification: '") + kw + "' can be specified only once");
  }
}

// A torn newest uberblock: import falls back to the txg before.
TEST(Pool, ImportFallsBackPastDamagedUberblock) {
  test::TempDir d;
  uint64_t last = 0;
  {
    auto p = Pool::Create("tank", Stripe(d.path(), 1), V23());
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->CreateDataset("tank/a", {}));
    ASSERT_UZFS_OK((*p)->CreateDataset("tank/b", {}));
    last = (*p)->uberblock().txg;
    ASSERT_UZFS_OK((*p)->Export());
    last = std::max(last, (*p)->uberblock().txg);
  }
  // Corrupt slot `last` in all four rings of the one device (1 KiB slots).
  const std::string dev = (d.path() / "d0").string();
  const uint64_t size = fs::file_size(dev);
  int fd = ::open(dev.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  for (int l = 0; l < 4; l++) {
    const uint64_t off = LabelOffset(size, l) + kUberblockRingOffset + (last % 128) * 1024 + 100;
    const char junk[16] = "garbage-garbage";
    ASSERT_EQ(::pwrite(fd, junk, sizeof junk, static_cast<off_t>(off)), 16);
  }
  ::close(fd);
  auto p = ImportFrom(d.path(), "tank");
  ASSERT_UZFS_OK(p.status());
  EXPECT_LT((*p)->import_txg(), last);
  EXPECT_GE((*p)->open_txg().number(), last);
  auto list = (*p)->ListDatasets();
  ASSERT_UZFS_OK(list.status());
  EXPECT_GE(list->size(), 2u);
  ASSERT_UZFS_OK((*p)->Export());
  ExpectConsistent(d.path(), "tank");
}

}  // namespace
}  // namespace uzfs

namespace uzfs {
namespace {

// Many datasets: the MOS ZAPs created in earlier txgs (the root's child
// map, $ORIGIN@$ORIGIN's next_clones, a props ZAP) grow past one micro ZAP
// block and upgrade to fat ZAPs in later txgs.
TEST(Pool, ManyDatasetsGrowMosZaps) {
  test::TempDir d;
  {
    auto p = Pool::Create("tank", Stripe(d.path(), 1), V23());
    ASSERT_UZFS_OK(p.status());
    for (int i = 0; i < 40; i++) {
      ASSERT_UZFS_OK((*p)->CreateDataset("tank/ds" + std::to_string(i), {}));
    }
    for (int i = 0; i < 20; i++) {
      ASSERT_UZFS_OK((*p)->SetProp("tank", "com.uzfs:p" + std::to_string(i), "v" + std::to_string(i)));
    }
    auto list = (*p)->ListDatasets();
    ASSERT_UZFS_OK(list.status());
    EXPECT_EQ(list->size(), 41u);
    ASSERT_UZFS_OK((*p)->Export());
  }
  ExpectConsistent(d.path(), "tank");
  auto p = ImportFrom(d.path(), "tank");
  ASSERT_UZFS_OK(p.status());
  auto props = (*p)->LocalProps("tank");
  ASSERT_UZFS_OK(props.status());
  EXPECT_EQ(props->at("com.uzfs:p19"), "v19");
  for (int i = 0; i < 40; i += 2) ASSERT_UZFS_OK((*p)->DestroyDataset("tank/ds" + std::to_string(i)));
  ASSERT_UZFS_OK((*p)->Export());
  ExpectConsistent(d.path(), "tank");
}

}  // namespace
}  // namespace uzfs

namespace uzfs {
namespace {

// Every pool version uzfs creates: 11 ($ORIGIN), 15 (user accounting
// objects), 23 (zfs-fuse), 25, 26 (bpobj deadlists, $FREE, free_bpobj),
// 28, and 5000 (feature flags: lz4_compress).
class PoolVersions : public ::testing::TestWithParam<uint64_t> {};

TEST_P(PoolVersions, LifecycleStaysConsistent) {
  const uint64_t v = GetParam();
  test::TempDir d;
  std::vector<uint64_t> objs;
  {
    PoolCreateOptions o = V23();
    o.version = v;
    auto p = Pool::Create("tank", Stripe(d.path(), 2), o);
    ASSERT_UZFS_OK(p.status());
    ASSERT_UZFS_OK((*p)->CreateDataset("tank/a", {{"compression", v == 5000 ? "lz4" : "lzjb"}}));
    ASSERT_UZFS_OK((*p)->CreateDataset("tank/a/b", {}));
    for (int i = 0; i < 3; i++) {
      WriteObjects(**p, "tank/a", 2, 70000, 40 + i, &objs);
      ASSERT_UZFS_OK((*p)->Sync());
    }
    if (v < 5000) {
      auto bad = (*p)->CreateDataset("tank/lz", {{"compression", "lz4"}});
      EXPECT_FALSE(bad.ok());
    }
    ASSERT_UZFS_OK((*p)->Export());
  }
  ExpectConsistent(d.path(), "tank");
  {
    auto p = ImportFrom(d.path(), "tank");
    ASSERT_UZFS_OK(p.status());
    EXPECT_EQ((*p)->version(), v);
    auto os = (*p)->Objset("tank/a");
    ASSERT_UZFS_OK(os.status());
    std::vector<uint8_t> got(70000);
    ASSERT_UZFS_OK((*os)->Read(objs.back(), 0, got));
    EXPECT_EQ(got, test::RandomBytes(70000, 42 + 1));
    ASSERT_UZFS_OK((*p)->DestroyDataset("tank/a/b"));
    ASSERT_UZFS_OK((*p)->Export());
  }
  ExpectConsistent(d.path(), "tank");
}

INSTANTIATE_TEST_SUITE_P(Versions, PoolVersions, ::testing::Values(11, 15, 23, 25, 26, 28, 5000),
                         [](const auto& info) { return "v" + std::to_string(info.param); });

}  // namespace
}  // namespace uzfs
