// zpool add / zpool remove at the library level (Pool::AddVdevs,
// RemoveVdev, Config): new top-level vdevs take allocations and survive
// export/import, logs/cache/spares join their lists, a removed log leaves a
// hole whose id stays taken, bad requests change nothing, and an add whose
// txg never landed is dropped at import.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/dsl/pool_test_util.h"
#include "zfs/dsl/pool.h"

namespace uzfs {
namespace {

namespace fs = std::filesystem;
using pooltest::ExpectConsistent;
using pooltest::Group;
using pooltest::ImportFrom;
using pooltest::Leaf;
using pooltest::MakeFile;
using pooltest::V23;

void WriteObjects(Pool& p, int n, size_t size, uint64_t seed, std::vector<uint64_t>* objs) {
  pooltest::WriteObjects(p, p.name(), n, size, seed, objs);
}

void ExpectObjects(Pool& p, size_t size, uint64_t seed, const std::vector<uint64_t>& objs) {
  auto os = p.Objset(p.name());
  ASSERT_UZFS_OK(os.status());
  for (size_t i = 0; i < objs.size(); i++) {
    std::vector<uint8_t> got(size);
    ASSERT_UZFS_OK((*os)->Read(objs[i], 0, got));
    EXPECT_EQ(got, test::RandomBytes(size, seed + i)) << "object " << objs[i];
  }
}

VdevSpec Dev(const std::string& path) {
  VdevSpec v;
  v.path = path;
  return v;
}

PoolLayout One(const fs::path& d, const std::string& name) {
  PoolLayout l;
  l.data = {Leaf(d, name)};
  return l;
}

uint64_t AllocatedOn(Pool& p, uint32_t vdev) {
  for (const VdevSpaceStats& s : p.allocator().VdevStats()) {
    if (s.vdev_id == vdev) return s.allocated;
  }
  return 0;
}

TEST(PoolVdevChange, AddDataVdevTakesAllocationsAndSurvivesImport) {
  test::TempDir d;
  std::vector<uint64_t> objs;
  {
    auto p = Pool::Create("tank", One(d.path(), "a"), V23());
    ASSERT_UZFS_OK(p.status());
    WriteObjects(**p, 8, 64 << 10, 1, &objs);
    ASSERT_UZFS_OK((*p)->Sync());
    PoolLayout add;
    add.data = {Group(d.path(), "m", VdevSpec::Type::kMirror, 2)};
    ASSERT_UZFS_OK((*p)->AddVdevs(add, /*force=*/false));
    Pool::ConfigView c = (*p)->Config();
    ASSERT_EQ(c.tree.children.size(), 2u);
    EXPECT_EQ(c.tree.children[1].type, "mirror");
    EXPECT_EQ(c.tree.children[1].id, 1u);
    EXPECT_FALSE(c.tree.children[1].is_log);
    EXPECT_NE(c.tree.children[1].metaslab_array, 0u);
    EXPECT_EQ((*p)->root_vdev().children().size(), 2u);
    // New writes spread onto the new (empty, so favoured) vdev.
    WriteObjects(**p, 64, 64 << 10, 100, &objs);
    ASSERT_UZFS_OK((*p)->Sync());
    EXPECT_GT(AllocatedOn(**p, 1), 1u << 20);
    ASSERT_UZFS_OK((*p)->Export());
  }
  ExpectConsistent(d.path(), "tank");
  auto p = ImportFrom(d.path(), "tank");
  ASSERT_UZFS_OK(p.status());
  EXPECT_EQ((*p)->root_vdev().children().size(), 2u);
  std::vector<uint64_t> first(objs.begin(), objs.begin() + 8), second(objs.begin() + 8, objs.end());
  ExpectObjects(**p, 64 << 10, 1, first);
  ExpectObjects(**p, 64 << 10, 100, second);
  ASSERT_UZFS_OK((*p)->Export());
}

TEST(PoolVdevChange, AddLogCacheSpareThenRemoveThem) {
  test::TempDir d;
  {
    auto p = Pool::Create("tank", One(d.path(), "a"), V23());
    ASSERT_UZFS_OK(p.status());
    PoolLayout add;
    add.logs = {Group(d.path(), "log", VdevSpec::Type::kMirror, 2), Leaf(d.path(), "slog")};
    add.cache = {Leaf(d.path(), "c0")};
    add.spares = {Leaf(d.path(), "s0")};
    ASSERT_UZFS_OK((*p)->AddVdevs(add, false));
    Pool::ConfigView c = (*p)->Config();
    ASSERT_EQ(c.tree.children.size(), 3u);
    EXPECT_TRUE(c.tree.children[1].is_log);
    EXPECT_TRUE(c.tree.children[2].is_log);
    ASSERT_EQ(c.cache.size(), 1u);
    ASSERT_EQ(c.spares.size(), 1u);
    ASSERT_UZFS_OK((*p)->Export());
  }
  ExpectConsistent(d.path(), "tank");
  {
    auto p = ImportFrom(d.path(), "tank");
    ASSERT_UZFS_OK(p.status());
    Pool::ConfigView c = (*p)->Config();
    ASSERT_EQ(c.tree.children.size(), 3u);
    EXPECT_EQ(c.cache.size(), 1u);
    EXPECT_EQ(c.spares.size(), 1u);
    // A data vdev or a leaf inside the log mirror cannot be removed.
    EXPECT_EQ((*p)->RemoveVdev((d.path() / "a").string()).code(), Code::kInvalidArgument);
    EXPECT_EQ((*p)->RemoveVdev((d.path() / "log0").string()).code(), Code::kInvalidArgument);
    EXPECT_EQ((*p)->RemoveVdev("/nonexistent/dev").code(), Code::kNotFound);
    // The log mirror (by its status name), the cache and the spare.
    ASSERT_UZFS_OK((*p)->RemoveVdev("mirror-1"));
    ASSERT_UZFS_OK((*p)->RemoveVdev((d.path() / "c0").string()));
    ASSERT_UZFS_OK((*p)->RemoveVdev((d.path() / "s0").string()));
    c = (*p)->Config();
    ASSERT_EQ(c.tree.children.size(), 3u);
    EXPECT_TRUE(c.tree.children[1].IsHole());
    EXPECT_TRUE((*p)->root_vdev().child(1)->is_hole());
    EXPECT_TRUE(c.cache.empty());
    EXPECT_TRUE(c.spares.empty());
    EXPECT_EQ(VdevStateName((*p)->root_vdev().state()), "ONLINE");
    ASSERT_UZFS_OK((*p)->Export());
  }
  ExpectConsistent(d.path(), "tank");
  auto p = ImportFrom(d.path(), "tank");
  ASSERT_UZFS_OK(p.status());
  Pool::ConfigView c = (*p)->Config();
  ASSERT_EQ(c.tree.children.size(), 3u);
  EXPECT_TRUE(c.tree.children[1].IsHole());
  EXPECT_TRUE(c.tree.children[2].is_log);
  EXPECT_EQ(c.tree.children[2].id, 2u);
  // The removed devices carry no pool label: a new pool takes them without -f.
  auto q = Pool::Create("other", One(d.path(), "unused"), V23());
  ASSERT_UZFS_OK(q.status());
  PoolLayout reuse;
  reuse.data = {Dev((d.path() / "log0").string())};
  reuse.cache = {Dev((d.path() / "c0").string())};
  EXPECT_UZFS_OK((*q)->AddVdevs(reuse, false));
  ASSERT_UZFS_OK((*q)->Export());
  ASSERT_UZFS_OK((*p)->Export());
}

TEST(PoolVdevChange, BadRequestsChangeNothing) {
  test::TempDir d;
  auto p = Pool::Create("tank", One(d.path(), "a"), V23());
  ASSERT_UZFS_OK(p.status());
  const std::string a = (d.path() / "a").string();
  auto expect_unchanged = [&] {
    Pool::ConfigView c = (*p)->Config();
    EXPECT_EQ(c.tree.children.size(), 1u);
    EXPECT_TRUE(c.cache.empty());
    EXPECT_TRUE(c.spares.empty());
  };
  PoolLayout in_pool;
  in_pool.data = {Dev(a)};
  Status s = (*p)->AddVdevs(in_pool, false);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("is part of active pool 'tank'"), std::string::npos) << s.message();
  expect_unchanged();

  PoolLayout twice;
  const std::string b = MakeFile(d.path(), "b");
  twice.data = {Dev(b)};
  twice.cache = {Dev(b)};
  s = (*p)->AddVdevs(twice, false);
  EXPECT_NE(s.message().find("listed more than once"), std::string::npos) << s.message();
  expect_unchanged();

  PoolLayout small;
  small.data = {Dev(b)};
  small.logs = {Dev(MakeFile(d.path(), "tiny", 16 << 20))};
  s = (*p)->AddVdevs(small, false);
  EXPECT_NE(s.message().find("cannot add to 'tank': one or more devices is less than the minimum size"),
            std::string::npos)
      << s.message();
  expect_unchanged();
  // The first device of the refused request was not touched: still no label.
  auto reuse = Pool::Create("fresh", One(d.path(), "c"), V23());
  ASSERT_UZFS_OK(reuse.status());
  PoolLayout l;
  l.data = {Dev(b)};
  EXPECT_UZFS_OK((*reuse)->AddVdevs(l, false));
  ASSERT_UZFS_OK((*reuse)->Export());
  reuse->reset();  // closes its devices

  // A device of another (exported) pool needs force.
  PoolLayout other;
  other.data = {Dev(b)};
  s = (*p)->AddVdevs(other, false);
  EXPECT_NE(s.message().find("is part of exported pool 'fresh'"), std::string::npos) << s.message();
  expect_unchanged();
  EXPECT_UZFS_OK((*p)->AddVdevs(other, /*force=*/true));
  ASSERT_UZFS_OK((*p)->Export());
  ExpectConsistent(d.path(), "tank");
}

TEST(PoolVdevChange, LogRemovalNeedsVersion19) {
  test::TempDir d;
  PoolLayout l = One(d.path(), "a");
  l.logs = {Leaf(d.path(), "log")};
  PoolCreateOptions o = V23();
  o.version = 18;
  auto p = Pool::Create("tank", l, o);
  ASSERT_UZFS_OK(p.status());
  Status s = (*p)->RemoveVdev((d.path() / "log").string());
  EXPECT_EQ(s.code(), Code::kNotSupported);
  EXPECT_NE(s.message().find("upgraded"), std::string::npos) << s.message();
  EXPECT_EQ((*p)->Config().tree.children.size(), 2u);
  ASSERT_UZFS_OK((*p)->Export());
}

// A crash after the new device's labels were written but before the
// uberblock of the add's txg: the old devices still hold the pool before
// the add. Import drops the new top-level vdev (the MOS config is the
// authority) and clears its label.
TEST(PoolVdevChange, AddThatNeverLandedIsDroppedAtImport) {
  test::TempDir d;
  std::vector<uint64_t> objs;
  {
    auto p = Pool::Create("tank", One(d.path(), "a"), V23());
    ASSERT_UZFS_OK(p.status());
    WriteObjects(**p, 4, 32 << 10, 7, &objs);
    ASSERT_UZFS_OK((*p)->Export());
  }
  const fs::path a = d.path() / "a", saved = d.path() / "a.before";
  fs::copy_file(a, saved);
  {
    auto p = ImportFrom(d.path(), "tank");
    ASSERT_UZFS_OK(p.status());
    PoolLayout add;
    add.data = {Leaf(d.path(), "b")};
    ASSERT_UZFS_OK((*p)->AddVdevs(add, false));
    ASSERT_UZFS_OK((*p)->Export());
  }
  // Roll "a" back to before the add, and wipe b's uberblock rings (bytes
  // 128K..256K of each of its four 256K labels): as if the crash came after
  // b's labels were written but before a's labels and the uberblock.
  fs::remove(a);
  fs::copy_file(saved, a);
  fs::remove(saved);
  {
    const fs::path b = d.path() / "b";
    const uint64_t size = fs::file_size(b);
    std::fstream f(b, std::ios::in | std::ios::out | std::ios::binary);
    const std::vector<char> zeros(128 << 10, 0);
    for (uint64_t label : {uint64_t{0}, uint64_t{256} << 10, size - (512 << 10), size - (256 << 10)}) {
      f.seekp(static_cast<std::streamoff>(label + (128 << 10)));
      f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
    }
    ASSERT_TRUE(f.good());
  }
  {
    auto p = ImportFrom(d.path(), "tank");
    ASSERT_UZFS_OK(p.status());
    EXPECT_EQ((*p)->Config().tree.children.size(), 1u);
    EXPECT_EQ((*p)->root_vdev().children().size(), 1u);
    ExpectObjects(**p, 32 << 10, 7, objs);
    ASSERT_UZFS_OK((*p)->Export());
  }
  ExpectConsistent(d.path(), "tank");
  // "b" is free again.
  auto q = Pool::Create("other", One(d.path(), "c"), V23());
  ASSERT_UZFS_OK(q.status());
  PoolLayout l;
  l.data = {Dev((d.path() / "b").string())};
  EXPECT_UZFS_OK((*q)->AddVdevs(l, false));
  ASSERT_UZFS_OK((*q)->Export());
}

}  // namespace
}  // namespace uzfs
