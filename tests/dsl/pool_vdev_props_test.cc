// Vdev properties in the pool (pool_vdev_props.cc): none of the vdev ZAPs
// until the first property; then one per leaf and top-level vdev, all
// distinct; a vdev added later gets its own, a removed log's go; values
// survive export and import; refusals leave the pool as it was; a legacy
// pool stores none.
#include <gtest/gtest.h>

#include <set>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_build.h"

namespace uzfs {
namespace {

using Props = std::vector<std::pair<std::string, std::string>>;

// Every ZAP the tree names; fails the test on a leaf or top-level vdev
// without its own, or one named twice.
std::set<uint64_t> TreeZaps(const VdevNode& root) {
  std::set<uint64_t> zaps;
  auto note = [&](uint64_t z) {
    EXPECT_NE(z, 0u);
    EXPECT_TRUE(zaps.insert(z).second) << "ZAP " << z << " named twice";
  };
  std::function<void(const VdevNode&, bool)> walk = [&](const VdevNode& n, bool top) {
    if (n.IsHole()) return;
    if (top) note(n.top_zap);
    if (n.IsLeaf()) note(n.leaf_zap);
    for (const VdevNode& c : n.children) walk(c, false);
  };
  for (const VdevNode& c : root.children) walk(c, true);
  return zaps;
}

uint64_t LeafGuid(Pool& p, const std::string& path) {
  std::vector<const VdevNode*> leaves;
  const Pool::ConfigView cv = p.Config();
  CollectLeafNodes(cv.tree, &leaves);
  for (const VdevNode* n : leaves) {
    if (n->path == path) return n->guid;
  }
  ADD_FAILURE() << "no leaf " << path;
  return 0;
}

TEST(PoolVdevProps, ZapsAppearWithTheFirstPropertyAndFollowTheTree) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "m", VdevSpec::Type::kMirror, 2));
  layout.data.push_back(pooltest::Leaf(dir.path(), "d"));
  PoolCreateOptions o;
  o.version = kFeatureVersion;
  o.history = "zpool create test";
  auto p = Pool::Create("vp", layout, o);
  ASSERT_UZFS_OK(p.status());
  Pool& pool = **p;
  ASSERT_EQ(pool.version(), kFeatureVersion);
  // A new pool has none (sizecalc's model of a new pool holds).
  for (const VdevNode& c : pool.Config().tree.children) {
    EXPECT_EQ(c.top_zap, 0u);
    for (const VdevNode& l : c.children) EXPECT_EQ(l.leaf_zap, 0u);
  }
  const std::string m1 = layout.data[0].children[1].path, d = layout.data[1].path;
  const uint64_t m1_guid = LeafGuid(pool, m1);
  ASSERT_UZFS_OK(pool.SetVdevProps(m1_guid, m1, {{"comment", "left bay"}, {"org.example:slot", "4"}}));
  ASSERT_UZFS_OK(pool.Sync());
  EXPECT_EQ(TreeZaps(pool.Config().tree).size(), 5u);  // 3 leaves, 2 top-level (d is both)
  auto got = pool.VdevProps(m1_guid);
  ASSERT_UZFS_OK(got.status());
  EXPECT_EQ(*got, (Props{{"comment", "left bay"}, {"org.example:slot", "4"}}));
  const uint64_t mirror_guid = pool.Config().tree.children[0].guid;
  ASSERT_UZFS_OK(pool.SetVdevProps(mirror_guid, "mirror-0", {{"comment", "shelf 2"}}));
  EXPECT_EQ(*pool.VdevProps(mirror_guid), (Props{{"comment", "shelf 2"}}));
  EXPECT_TRUE(pool.VdevProps(LeafGuid(pool, d))->empty());

  // A log joins: its leaf gets both ZAPs; removed, they go.
  PoolLayout add;
  add.logs.push_back(pooltest::Leaf(dir.path(), "log"));
  ASSERT_UZFS_OK(pool.AddVdevs(add, false));
  ASSERT_UZFS_OK(pool.Sync());
  EXPECT_EQ(TreeZaps(pool.Config().tree).size(), 7u);
  ASSERT_UZFS_OK(pool.SetVdevProps(LeafGuid(pool, add.logs[0].path), "log", {{"comment", "slog"}}));
  ASSERT_UZFS_OK(pool.RemoveVdev(add.logs[0].path));
  ASSERT_UZFS_OK(pool.Sync());
  EXPECT_EQ(TreeZaps(pool.Config().tree).size(), 5u);
  // Removing one that is not set, and setting it empty, change nothing.
  ASSERT_UZFS_OK(pool.SetVdevProps(m1_guid, m1, {{"org.example:slot", ""}, {"org.example:none", ""}}));
  EXPECT_EQ(*pool.VdevProps(m1_guid), (Props{{"comment", "left bay"}}));
  ASSERT_UZFS_OK(pool.Export());
  p->reset();

  auto q = pooltest::ImportFrom(dir.path(), "vp");
  ASSERT_UZFS_OK(q.status());
  EXPECT_EQ(*(*q)->VdevProps(m1_guid), (Props{{"comment", "left bay"}}));
  EXPECT_EQ(*(*q)->VdevProps(mirror_guid), (Props{{"comment", "shelf 2"}}));
  EXPECT_EQ(TreeZaps((*q)->Config().tree).size(), 5u);
  ASSERT_UZFS_OK((*q)->Export());
  pooltest::ExpectConsistent(dir.path(), "vp");
}

TEST(PoolVdevProps, RefusalsChangeNothing) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "m", VdevSpec::Type::kMirror, 2));
  PoolCreateOptions o;
  o.version = kFeatureVersion;
  auto p = Pool::Create("vp", layout, o);
  ASSERT_UZFS_OK(p.status());
  Pool& pool = **p;
  const uint64_t g = LeafGuid(pool, layout.data[0].children[0].path);
  EXPECT_EQ(pool.SetVdevProps(g, "m0", {{"state", "x"}}).code(), Code::kInvalidArgument);
  EXPECT_EQ(pool.SetVdevProps(g, "m0", {{"Bad:Name", "x"}}).code(), Code::kInvalidArgument);
  EXPECT_EQ(pool.SetVdevProps(g, "m0", {{"comment", std::string(8192, 'x')}}).code(), Code::kInvalidArgument);
  EXPECT_EQ(pool.SetVdevProps(12345, "x", {{"comment", "x"}}).code(), Code::kNotFound);
  EXPECT_EQ(pool.VdevProps(12345).status().code(), Code::kNotFound);
  // A good pair with a bad one: neither is stored, and no ZAP is made.
  EXPECT_FALSE(pool.SetVdevProps(g, "m0", {{"comment", "ok"}, {"nosuch", "1"}}).ok());
  ASSERT_UZFS_OK(pool.Sync());
  EXPECT_TRUE(pool.VdevProps(g)->empty());
  EXPECT_EQ(pool.Config().tree.children[0].top_zap, 0u);
  ASSERT_UZFS_OK(pool.Export());

  test::TempDir old;
  PoolLayout l23;
  l23.data.push_back(pooltest::Leaf(old.path(), "d"));
  auto p23 = Pool::Create("old", l23, pooltest::V23());
  ASSERT_UZFS_OK(p23.status());
  EXPECT_EQ((*p23)->SetVdevProps(LeafGuid(**p23, l23.data[0].path), "d", {{"comment", "x"}}).code(),
            Code::kNotSupported);
  ASSERT_UZFS_OK((*p23)->Export());
}

}  // namespace
}  // namespace uzfs
