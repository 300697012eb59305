// compression=zstd on a pool (zfs/dsl/pool_features.cc, pool_datasets.cc):
//  - a dataset set to zstd-N writes blocks with compression 16 whose
//    8-byte header carries the level (zio_zstd_levels), a change of level
//    applies from the next txg, and the data reads back, also after export
//    and import, with our zdb -b clean;
//  - org.freebsd:zstd_compress is active on the dataset from the txg that
//    sets zstd on it, on a child that inherits zstd from its first zstd
//    block, and destroying a dataset gives its reference back;
//  - a pool without the feature (legacy versions, or created with
//    feature@zstd_compress=disabled) refuses zstd until it is enabled;
//  - dedup=on is refused at create and set and nothing is stored.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/util/compress/compress.h"

namespace uzfs {
namespace {

using pooltest::ExpectConsistent;
using pooltest::ImportFrom;
using pooltest::Leaf;

std::vector<uint8_t> Compressible(size_t n, int seed) {
  std::vector<uint8_t> v(n);
  const std::string words = "the quick brown fox " + std::to_string(seed) + " jumps over the lazy dog\n";
  for (size_t i = 0; i < n; i++) v[i] = static_cast<uint8_t>(words[i % words.size()]);
  return v;
}

PoolLayout OneDisk(const std::filesystem::path& d) {
  PoolLayout l;
  l.data = {Leaf(d, "d0")};
  return l;
}

uint64_t Refcount(Pool& p, const std::string& guid) {
  auto f = p.Features();
  EXPECT_TRUE(f.ok());
  if (!f.ok()) return ~uint64_t{0};
  for (const PoolFeatureState& s : *f) {
    if (s.guid == guid) return s.enabled ? s.refcount : ~uint64_t{0};
  }
  return ~uint64_t{0};
}

// Writes one 128 KiB compressible object in ds and syncs; returns it.
uint64_t WriteObject(Pool& p, const std::string& ds, int seed) {
  auto os = p.Objset(ds);
  EXPECT_TRUE(os.ok()) << os.status().ToString();
  auto tx = p.Begin(200000);
  EXPECT_TRUE(tx.ok());
  ObjectProps op;
  auto obj = (*os)->AllocateObject(op, tx->txg());
  EXPECT_TRUE(obj.ok());
  EXPECT_UZFS_OK((*os)->Write(*obj, 0, Compressible(131072, seed), tx->txg()));
  tx->Commit();
  EXPECT_UZFS_OK(p.Sync());
  return *obj;
}

// The first data block of obj: its pointer, and the zstd level enum from
// the block's header (0 when the block is not zstd).
std::pair<BlockPtr, int> FirstBlock(Pool& p, const std::string& ds, uint64_t obj) {
  auto os = p.ObjsetForRead(ds);
  EXPECT_TRUE(os.ok());
  auto dn = (*os)->GetDnode(obj);
  EXPECT_TRUE(dn.ok());
  const BlockPtr bp = dn->blkptr[0];
  int level = 0;
  if (bp.compression == static_cast<uint8_t>(CompressType::kZstd)) {
    auto phys = p.zio().ReadPhysical(bp);
    EXPECT_TRUE(phys.ok());
    auto h = ParseZstdHeader(std::span<const uint8_t>(phys->data(), phys->size()));
    EXPECT_TRUE(h.ok());
    level = h->level;
  }
  return {bp, level};
}

TEST(PoolZstdTest, WritesZstdBlocksAndActivatesTheFeature) {
  test::TempDir d;
  std::vector<uint64_t> objs;
  {
    PoolCreateOptions o = pooltest::V23();
    o.version = 5000;
    auto p = Pool::Create("tank", OneDisk(d.path()), o);
    ASSERT_UZFS_OK(p.status());
    Pool& P = **p;
    EXPECT_EQ(Refcount(P, kZstdCompressGuid), 0u);  // enabled, not active
    ASSERT_UZFS_OK(P.CreateDataset("tank/z", {{"compression", "zstd-19"}}));
    ASSERT_UZFS_OK(P.CreateDataset("tank/z/kid", {}));
    ASSERT_UZFS_OK(P.Sync());
    EXPECT_EQ(Refcount(P, kZstdCompressGuid), 1u);  // tank/z, at create

    objs.push_back(WriteObject(P, "tank/z", 1));
    auto [bp, level] = FirstBlock(P, "tank/z", objs[0]);
    EXPECT_EQ(bp.compression, 16);
    EXPECT_LT(bp.psize, bp.lsize);
    EXPECT_EQ(level, 19);

    // The child inherits zstd: its first zstd block activates it too.
    objs.push_back(WriteObject(P, "tank/z/kid", 2));
    EXPECT_EQ(FirstBlock(P, "tank/z/kid", objs[1]).first.compression, 16);
    EXPECT_EQ(Refcount(P, kZstdCompressGuid), 2u);

    // A new level applies to what is written next.
    ASSERT_UZFS_OK(P.SetProp("tank/z", "compression", "zstd-fast-10"));
    objs.push_back(WriteObject(P, "tank/z", 3));
    EXPECT_EQ(FirstBlock(P, "tank/z", objs[2]).second, 112);
    ASSERT_UZFS_OK(P.SetProp("tank/z", "compression", "zstd"));
    objs.push_back(WriteObject(P, "tank/z", 4));
    EXPECT_EQ(FirstBlock(P, "tank/z", objs[3]).second, 3);  // the default level
    EXPECT_EQ(FirstBlock(P, "tank/z", objs[0]).second, 19);  // written before: unchanged
    EXPECT_EQ(Refcount(P, kZstdCompressGuid), 2u);

    // A dataset that goes away gives its reference back.
    ASSERT_UZFS_OK(P.CreateDataset("tank/gone", {{"compression", "zstd-1"}}));
    ASSERT_UZFS_OK(P.Sync());
    EXPECT_EQ(Refcount(P, kZstdCompressGuid), 3u);
    ASSERT_UZFS_OK(P.DestroyDataset("tank/gone"));
    ASSERT_UZFS_OK(P.Sync());
    EXPECT_EQ(Refcount(P, kZstdCompressGuid), 2u);
    ASSERT_UZFS_OK(P.Export());
  }
  ExpectConsistent(d.path(), "tank");
  auto p = ImportFrom(d.path(), "tank");
  ASSERT_UZFS_OK(p.status());
  const std::vector<std::pair<std::string, int>> where = {{"tank/z", 1}, {"tank/z/kid", 2}, {"tank/z", 3}, {"tank/z", 4}};
  for (size_t i = 0; i < objs.size(); i++) {
    auto os = (*p)->ObjsetForRead(where[i].first);
    ASSERT_UZFS_OK(os.status());
    std::vector<uint8_t> got(131072);
    ASSERT_UZFS_OK((*os)->Read(objs[i], 0, got));
    EXPECT_EQ(got, Compressible(131072, where[i].second)) << i;
  }
  EXPECT_EQ(Refcount(**p, kZstdCompressGuid), 2u);
  ASSERT_UZFS_OK((*p)->Export());
}

TEST(PoolZstdTest, RefusedWhereThePoolLacksTheFeature) {
  {
    test::TempDir d;
    PoolCreateOptions o = pooltest::V23();
    o.version = 28;
    auto p = Pool::Create("old", OneDisk(d.path()), o);
    ASSERT_UZFS_OK(p.status());
    Status s = (*p)->CreateDataset("old/z", {{"compression", "zstd"}});
    EXPECT_EQ(s.code(), Code::kNotSupported);
    EXPECT_EQ(s.message(),
              "cannot create 'old/z': compression 'zstd' needs the pool feature zstd_compress, which this pool "
              "does not have (pool version 28 has no feature flags)");
    EXPECT_FALSE((*p)->LocalProps("old/z").ok());  // nothing created
    ASSERT_UZFS_OK((*p)->CreateDataset("old/a", {}));
    s = (*p)->SetProp("old/a", "compression", "zstd-3");
    EXPECT_EQ(s.code(), Code::kNotSupported);
    EXPECT_NE(s.message().find("cannot set property for 'old/a': compression 'zstd-3' needs the pool feature"),
              std::string::npos)
        << s.ToString();
    ASSERT_UZFS_OK((*p)->Export());
  }
  {
    test::TempDir d;
    PoolCreateOptions o = pooltest::V23();
    o.version = 5000;
    o.disabled_features = {kZstdCompressGuid};
    auto p = Pool::Create("nz", OneDisk(d.path()), o);
    ASSERT_UZFS_OK(p.status());
    EXPECT_EQ(Refcount(**p, kZstdCompressGuid), ~uint64_t{0});  // not enabled
    Status s = (*p)->SetProp("nz", "compression", "zstd");
    EXPECT_EQ(s.message(),
              "cannot set property for 'nz': compression 'zstd' needs the pool feature zstd_compress, which this "
              "pool does not have (enable it with 'zpool set feature@zstd_compress=enabled nz')");
    ASSERT_UZFS_OK((*p)->EnableFeature(kZstdCompressGuid));
    ASSERT_UZFS_OK((*p)->SetProp("nz", "compression", "zstd"));
    ASSERT_UZFS_OK((*p)->Sync());
    EXPECT_EQ(Refcount(**p, kZstdCompressGuid), 1u);
    ASSERT_UZFS_OK((*p)->Export());
    ExpectConsistent(d.path(), "nz");
  }
}

TEST(PoolZstdTest, DedupIsRefusedAndNothingIsStored) {
  test::TempDir d;
  auto p = Pool::Create("tank", OneDisk(d.path()), pooltest::V23());
  ASSERT_UZFS_OK(p.status());
  Status s = (*p)->CreateDataset("tank/d", {{"dedup", "on"}});
  EXPECT_EQ(s.code(), Code::kNotSupported);
  EXPECT_EQ(s.message(),
            "cannot create 'tank/d': dedup=on is not supported by uzfs yet (deduplication is not implemented; "
            "only 'off' is accepted)");
  EXPECT_FALSE((*p)->LocalProps("tank/d").ok());
  s = (*p)->SetProp("tank", "dedup", "verify");
  EXPECT_EQ(s.code(), Code::kNotSupported);
  auto local = (*p)->LocalProps("tank");
  ASSERT_UZFS_OK(local.status());
  EXPECT_EQ(local->count("dedup"), 0u);
  ASSERT_UZFS_OK((*p)->SetProp("tank", "dedup", "off"));
  ASSERT_UZFS_OK((*p)->Export());
}

}  // namespace
}  // namespace uzfs
