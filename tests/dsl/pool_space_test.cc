// PoolListSpace / DatasetListSpace: `zpool list -p` and `zfs list -p` of a
// live pool, from its allocator and DSL records. Checked here against
// facts that do not depend on this code: the allocator's metaslab
// geometry, sizecalc's in-process pipeline (space::ComputePoolSpace, which
// must agree on SIZE, D and the slop to the byte), the legacy slop rule,
// and the invariant AVAIL(root) + USED(root) = D - slop;
// then how writes, child datasets, quotas and refquotas move the numbers.
// (The comparison with the sizecalc binary and with zfs-fuse on a 16-layout
// matrix is tests/cmd/sizecalc_pool_compat_test.cc.)
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_space.h"
#include "zfs/spa/space_calc.h"

namespace uzfs {
namespace {

namespace fs = std::filesystem;

using pooltest::Group;
using pooltest::Leaf;
using pooltest::V23;

space::VdevSpec Spec(space::VdevClass cls, space::VdevType type, uint32_t nparity, int n,
                     uint64_t size) {
  space::VdevSpec s;
  s.cls = cls;
  s.type = type;
  s.nparity = nparity;
  s.devices.assign(static_cast<size_t>(n), size);
  return s;
}

// The report's own arithmetic is consistent, and equals sizecalc's.
void ExpectMatchesPrediction(Pool& pool, const space::LayoutSpec& layout) {
  auto ps = PoolListSpace(pool);
  ASSERT_UZFS_OK(ps.status());
  uint64_t size = 0;
  for (const VdevSpaceStats& st : pool.allocator().VdevStats())
    size += st.metaslab_count << st.metaslab_shift;
  EXPECT_EQ(ps->size, size);
  EXPECT_EQ(ps->alloc + ps->free, ps->size);
  EXPECT_GT(ps->alloc, 0u);
  EXPECT_EQ(ps->rules, space::Rules::kLegacy);
  EXPECT_EQ(ps->slop, std::max(ps->dspace / 64, uint64_t{32} << 20));

  auto pred = space::ComputePoolSpace(layout, space::Rules::kLegacy);
  ASSERT_UZFS_OK(pred.status());
  EXPECT_EQ(ps->size, pred->size);
  EXPECT_EQ(ps->dspace, pred->dspace);
  EXPECT_EQ(ps->slop, pred->slop);

  auto root = DatasetListSpace(pool, pool.name());
  ASSERT_UZFS_OK(root.status());
  EXPECT_EQ(root->name, pool.name());
  EXPECT_EQ(root->avail + root->used, ps->dspace - ps->slop);
  EXPECT_GT(root->used, root->refer);  // the root's USED holds the MOS
  // AVAIL itself depends on how much metadata the new pool wrote, which
  // sizecalc models (cmd/sizecalc/fresh_pool.h); that comparison (within
  // 0.1%) is tests/cmd/sizecalc_pool_compat_test.cc's, next to zfs-fuse's.
  EXPECT_LT(root->used, pred->dspace / 16) << "sizecalc's estimate " << pred->used;
}

TEST(PoolSpace, RulesForPoolVersion) {
  EXPECT_EQ(RulesForPoolVersion(23), space::Rules::kLegacy);
  EXPECT_EQ(RulesForPoolVersion(28), space::Rules::kLegacy);
  EXPECT_EQ(RulesForPoolVersion(5000), space::Rules::kOpenZfs);
}

TEST(PoolSpace, StripeOfTwoSizes) {
  test::TempDir d;
  PoolLayout l;
  l.data = {Leaf(d.path(), "a", 256ull << 20), Leaf(d.path(), "b", 384ull << 20)};
  auto p = Pool::Create("tank", l, V23("zpool create tank", 9));
  ASSERT_UZFS_OK(p.status());
  space::LayoutSpec s;
  s.ashift = 9;
  s.vdevs = {Spec(space::VdevClass::kNormal, space::VdevType::kDisk, 0, 1, 256ull << 20),
             Spec(space::VdevClass::kNormal, space::VdevType::kDisk, 0, 1, 384ull << 20)};
  ExpectMatchesPrediction(**p, s);
  auto ps = PoolListSpace(**p);
  ASSERT_UZFS_OK(ps.status());
  ASSERT_EQ(ps->vdevs.size(), 2u);
  EXPECT_EQ(ps->dspace, ps->size);  // no parity: nothing to deflate
  for (const PoolSpaceVdev& v : ps->vdevs) EXPECT_EQ(v.deflate_ratio, 512u);
}

TEST(PoolSpace, RaidzDeflatesAtEachAshift) {
  for (uint32_t ashift : {9u, 12u}) {
    SCOPED_TRACE("ashift " + std::to_string(ashift));
    test::TempDir d;
    PoolLayout l;
    l.data = {Group(d.path(), "r", VdevSpec::Type::kRaidz, 5, 2, 256ull << 20)};
    auto p = Pool::Create("tank", l, V23("zpool create tank", ashift));
    ASSERT_UZFS_OK(p.status());
    space::LayoutSpec s;
    s.ashift = ashift;
    s.vdevs = {Spec(space::VdevClass::kNormal, space::VdevType::kRaidz, 2, 5, 256ull << 20)};
    ExpectMatchesPrediction(**p, s);
    auto ps = PoolListSpace(**p);
    ASSERT_UZFS_OK(ps.status());
    ASSERT_EQ(ps->vdevs.size(), 1u);
    EXPECT_EQ(ps->vdevs[0].deflate_ratio, space::DeflateRatio(s.vdevs[0], ashift));
    EXPECT_LT(ps->dspace, ps->size * 3 / 5 + ps->size / 50);  // about 3/5 of it is data
  }
}

// Log, cache and spare devices are not in SIZE, ALLOC, FREE or D.
TEST(PoolSpace, LogCacheAndSpareAreNotCounted) {
  test::TempDir d;
  PoolLayout l;
  l.data = {Group(d.path(), "m", VdevSpec::Type::kMirror, 2, 0, 320ull << 20),
            Group(d.path(), "n", VdevSpec::Type::kMirror, 2, 0, 320ull << 20)};
  l.logs = {Group(d.path(), "log", VdevSpec::Type::kMirror, 2, 0, 256ull << 20)};
  l.cache = {Leaf(d.path(), "cache0", 256ull << 20)};
  l.spares = {Leaf(d.path(), "spare0", 320ull << 20)};
  auto p = Pool::Create("tank", l, V23("zpool create tank", 12));
  ASSERT_UZFS_OK(p.status());
  space::LayoutSpec s;
  s.ashift = 12;
  s.vdevs = {Spec(space::VdevClass::kNormal, space::VdevType::kMirror, 0, 2, 320ull << 20),
             Spec(space::VdevClass::kNormal, space::VdevType::kMirror, 0, 2, 320ull << 20),
             Spec(space::VdevClass::kLog, space::VdevType::kMirror, 0, 2, 256ull << 20),
             Spec(space::VdevClass::kCache, space::VdevType::kDisk, 0, 1, 256ull << 20),
             Spec(space::VdevClass::kSpare, space::VdevType::kDisk, 0, 1, 320ull << 20)};
  ExpectMatchesPrediction(**p, s);
  auto ps = PoolListSpace(**p);
  ASSERT_UZFS_OK(ps.status());
  ASSERT_EQ(ps->vdevs.size(), 2u);
  // The two data mirrors are the first two top-level vdevs.
  EXPECT_EQ(ps->vdevs[0].vdev_id, 0u);
  EXPECT_EQ(ps->vdevs[1].vdev_id, 1u);
  EXPECT_EQ(ps->vdevs[0].size, ps->vdevs[1].size);
}

TEST(PoolSpace, WritesDatasetsAndQuotas) {
  test::TempDir d;
  PoolLayout l;
  l.data = {Group(d.path(), "r", VdevSpec::Type::kRaidz, 3, 1, 256ull << 20)};
  auto p = Pool::Create("tank", l, V23("zpool create tank", 9));
  ASSERT_UZFS_OK(p.status());
  Pool& pool = **p;
  auto before = PoolListSpace(pool);
  ASSERT_UZFS_OK(before.status());
  const uint64_t usable = before->dspace - before->slop;

  ASSERT_UZFS_OK(pool.CreateDataset("tank/a", {}));
  ASSERT_UZFS_OK(pool.CreateDataset("tank/q", {{"quota", "10M"}}));
  ASSERT_UZFS_OK(pool.CreateDataset("tank/rq", {{"refquota", "4M"}}));
  // 8 MiB of incompressible data in tank/a.
  {
    auto os = pool.Objset("tank/a");
    ASSERT_UZFS_OK(os.status());
    auto tx = pool.Begin(8 << 20);
    ASSERT_UZFS_OK(tx.status());
    ObjectProps op;
    op.indblkshift = 14;
    auto obj = (*os)->AllocateObject(op, tx->txg());
    ASSERT_UZFS_OK(obj.status());
    ASSERT_UZFS_OK((*os)->Write(*obj, 0, test::RandomBytes(8 << 20, 7), tx->txg()));
    tx->Commit();
  }
  ASSERT_UZFS_OK(pool.Sync());

  auto after = PoolListSpace(pool);
  ASSERT_UZFS_OK(after.status());
  EXPECT_EQ(after->size, before->size);
  EXPECT_EQ(after->dspace, before->dspace);
  EXPECT_EQ(after->alloc + after->free, after->size);
  // Raw allocation includes raidz1 parity: at least 3/2 of the data.
  EXPECT_GE(after->alloc - before->alloc, (8ull << 20) * 3 / 2);

  auto rows = ListDatasetSpace(pool);
  ASSERT_UZFS_OK(rows.status());
  ASSERT_EQ(rows->size(), 4u);
  std::map<std::string, DatasetSpace> by;
  for (const DatasetSpace& r : *rows) by[r.name] = r;
  EXPECT_EQ((*rows)[0].name, "tank");
  const DatasetSpace& root = by["tank"];
  EXPECT_EQ(root.avail + root.used, usable);
  // Deflated: 8 MiB of data is charged as 8 MiB (plus metadata), not 12.
  EXPECT_GE(by["tank/a"].used, 8ull << 20);
  EXPECT_LT(by["tank/a"].used, (8ull << 20) + (1 << 20));
  EXPECT_EQ(by["tank/a"].refer, by["tank/a"].used);
  EXPECT_GE(root.used, by["tank/a"].used + by["tank/q"].used + by["tank/rq"].used);
  // No quota: a child sees what the pool has left.
  EXPECT_EQ(by["tank/a"].avail, root.avail);
  // quota: what is left of it.
  EXPECT_EQ(by["tank/q"].avail, (10ull << 20) - by["tank/q"].used);
  // refquota: what is left of it after what the dataset refers to.
  EXPECT_EQ(by["tank/rq"].avail, (4ull << 20) - by["tank/rq"].refer);

  // One dataset at a time gives the same row; a missing one, zfs's error.
  auto one = DatasetListSpace(pool, "tank/q");
  ASSERT_UZFS_OK(one.status());
  EXPECT_EQ(one->avail, by["tank/q"].avail);
  EXPECT_EQ(one->used, by["tank/q"].used);
  auto missing = DatasetListSpace(pool, "tank/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().IsNotFound());
  EXPECT_NE(missing.status().ToString().find("cannot open 'tank/nope': dataset does not exist"),
            std::string::npos)
      << missing.status().ToString();

  // A quota below what a dataset uses leaves it nothing.
  ASSERT_UZFS_OK(pool.SetProp("tank/a", "quota", "1M"));
  auto capped = DatasetListSpace(pool, "tank/a");
  ASSERT_UZFS_OK(capped.status());
  EXPECT_EQ(capped->avail, 0u);
  // A child's quota is capped by its parent's.
  ASSERT_UZFS_OK(pool.CreateDataset("tank/q/c", {{"quota", "1G"}}));
  auto nested = DatasetListSpace(pool, "tank/q/c");
  ASSERT_UZFS_OK(nested.status());
  auto q = DatasetListSpace(pool, "tank/q");
  ASSERT_UZFS_OK(q.status());
  EXPECT_EQ(nested->avail, q->avail);
  EXPECT_LE(q->avail, 10ull << 20);
}

// The numbers survive export and import (SIZE from the config's
// metaslab_shift, DSL records from disk).
TEST(PoolSpace, SameAfterImport) {
  test::TempDir d;
  PoolLayout l;
  l.data = {Group(d.path(), "r", VdevSpec::Type::kRaidz, 4, 1, 256ull << 20)};
  l.logs = {Leaf(d.path(), "log0", 128ull << 20)};
  PoolSpaceReport ps;
  {
    auto p = Pool::Create("tank", l, V23("zpool create tank", 12));
    ASSERT_UZFS_OK(p.status());
    auto a = PoolListSpace(**p);
    ASSERT_UZFS_OK(a.status());
    ps = *a;
    ASSERT_UZFS_OK((*p)->Export());
  }
  auto devs = ScanDeviceDir(d.path().string());
  ASSERT_UZFS_OK(devs.status());
  PoolImportOptions io;
  io.readonly = true;
  auto p = Pool::Import(*devs, "tank", io);
  ASSERT_UZFS_OK(p.status());
  auto b = PoolListSpace(**p);
  ASSERT_UZFS_OK(b.status());
  EXPECT_EQ(b->size, ps.size);
  EXPECT_EQ(b->dspace, ps.dspace);
  // ALLOC moves (export syncs more txgs; frees deferred at export are
  // free after import): only its consistency is checked.
  EXPECT_GT(b->alloc, 0u);
  EXPECT_EQ(b->alloc + b->free, b->size);
  auto r = DatasetListSpace(**p, "tank");
  ASSERT_UZFS_OK(r.status());
  EXPECT_EQ(r->avail + r->used, ps.dspace - ps.slop);
}

}  // namespace
}  // namespace uzfs
