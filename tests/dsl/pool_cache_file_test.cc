// OpenZFS's pool cache file (pool_cache_file.h): entries added, replaced and
// removed by name; the file gone with its last pool; a file that is not a
// cache file refused, never overwritten; the device paths of a config.
#include "zfs/dsl/pool_cache_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool_config.h"

namespace uzfs {
namespace {

NvList Config(const std::string& name, uint64_t guid, const std::vector<std::string>& paths) {
  PoolIdentity id;
  id.version = 5000;
  id.name = name;
  id.pool_guid = guid;
  VdevNode root;
  root.type = "root";
  root.guid = guid;
  VdevNode mirror;
  mirror.type = "mirror";
  mirror.guid = guid + 1;
  for (size_t i = 0; i < paths.size(); i++) {
    VdevNode leaf;
    leaf.type = "file";
    leaf.id = i;
    leaf.guid = guid + 2 + i;
    leaf.path = paths[i];
    mirror.children.push_back(leaf);
  }
  root.children.push_back(mirror);
  VdevNode spare;
  spare.type = "file";
  spare.guid = guid + 100;
  spare.path = "/dev/spare-" + name;
  std::vector<VdevNode> spares{spare};
  return MosPoolConfig(id, kPoolStateActive, Txg(9), root, spares, {});
}

void Put(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::string> Names(const std::vector<CachedPoolConfig>& v) {
  std::vector<std::string> out;
  for (const CachedPoolConfig& p : v) out.push_back(p.name);
  return out;
}

TEST(PoolCacheFile, ListsReplacesAndRemovesPoolsByName) {
  test::TempDir dir;
  const std::string path = (dir.path() / "zpool.cache").string();
  EXPECT_TRUE(ReadPoolCacheFile(path).status().IsNotFound());
  const NvList a = Config("a", 100, {"/d/a0", "/d/a1"});
  const NvList b = Config("b", 200, {"/d/b0"});
  ASSERT_TRUE(UpdatePoolCacheFile(path, "a", &a).ok());
  ASSERT_TRUE(UpdatePoolCacheFile(path, "b", &b).ok());
  auto listed = ReadPoolCacheFile(path);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(Names(*listed), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ((*listed)[0].config, a);

  const NvList a2 = Config("a", 100, {"/d/a0", "/d/a1", "/d/a2"});
  ASSERT_TRUE(UpdatePoolCacheFile(path, "a", &a2).ok());
  listed = ReadPoolCacheFile(path);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(Names(*listed), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ((*listed)[0].config, a2);

  ASSERT_TRUE(UpdatePoolCacheFile(path, "a", nullptr).ok());
  ASSERT_TRUE(UpdatePoolCacheFile(path, "a", nullptr).ok());  // not listed: nothing to do
  listed = ReadPoolCacheFile(path);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(Names(*listed), (std::vector<std::string>{"b"}));
  // The last pool out takes the file with it, and no temporary is left.
  ASSERT_TRUE(UpdatePoolCacheFile(path, "b", nullptr).ok());
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
  EXPECT_TRUE(UpdatePoolCacheFile(path, "b", nullptr).ok());  // no file: nothing to do
}

TEST(PoolCacheFile, IsOneXdrListOfConfigsByPoolName) {
  test::TempDir dir;
  const std::string path = (dir.path() / "c").string();
  const NvList a = Config("tank", 7, {"/d/x"});
  ASSERT_TRUE(UpdatePoolCacheFile(path, "tank", &a).ok());
  const std::vector<uint8_t> bytes = test::ReadFile(path);
  ASSERT_GE(bytes.size(), 4u);
  EXPECT_EQ(bytes[0], 1);  // NV_ENCODE_XDR
  auto nv = NvList::DecodeXdr(bytes);
  ASSERT_TRUE(nv.ok());
  ASSERT_EQ(nv->size(), 1u);
  auto cfg = nv->GetNvList("tank");
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(**cfg, a);
}

TEST(PoolCacheFile, SomethingElseAtThePathIsRefusedAndKept) {
  test::TempDir dir;
  const std::string path = (dir.path() / "notes").string();
  const std::vector<uint8_t> text = {'h', 'e', 'l', 'l', 'o', '\n'};
  Put(path, text);
  EXPECT_EQ(CheckPoolCacheFilePath(path).code(), Code::kInvalidArgument);
  const NvList a = Config("a", 1, {"/d/a"});
  const Status s = UpdatePoolCacheFile(path, "a", &a);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("is not a pool cache file"), std::string_view::npos) << s.ToString();
  EXPECT_EQ(test::ReadFile(path), text);
  EXPECT_EQ(UpdatePoolCacheFile(path, "a", nullptr).code(), Code::kInvalidArgument);
  EXPECT_EQ(test::ReadFile(path), text);

  EXPECT_EQ(CheckPoolCacheFilePath(dir.path().string()).code(), Code::kInvalidArgument);  // a directory
  EXPECT_TRUE(CheckPoolCacheFilePath((dir.path() / "later" / "c").string()).ok());  // written once it exists
  EXPECT_EQ(CheckPoolCacheFilePath("relative/c").code(), Code::kInvalidArgument);
  EXPECT_TRUE(CheckPoolCacheFilePath((dir.path() / "new").string()).ok());
  Put((dir.path() / "empty").string(), {});
  EXPECT_TRUE(CheckPoolCacheFilePath((dir.path() / "empty").string()).ok());
}

TEST(PoolCacheFile, ConfigPathsAreTheLeavesThenSparesAndCache) {
  const NvList a = Config("a", 100, {"/d/a0", "/d/a1"});
  EXPECT_EQ(CachedConfigPaths(a), (std::vector<std::string>{"/d/a0", "/d/a1", "/dev/spare-a"}));
  EXPECT_TRUE(CachedConfigPaths(NvList()).empty());
}

}  // namespace
}  // namespace uzfs
