// cgroup_memory: finding the cgroup directories of a process from fake
// /proc/self/cgroup and mountinfo texts, and the limit and headroom from
// fake cgroup trees (v2 nested, v1 hybrid, a namespaced container).
#include "zfs/util/cgroup_memory.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

void Put(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(CgroupMemoryTest, V2PathAndAncestors) {
  const auto dirs = CgroupMemoryDirs(
      "0::/system.slice/app.service\n",
      "24 1 0:22 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
      "25 1 8:1 / / rw - ext4 /dev/sda1 rw\n");
  EXPECT_EQ(dirs, (std::vector<std::string>{
                "/sys/fs/cgroup/system.slice/app.service",
                "/sys/fs/cgroup/system.slice",
                "/sys/fs/cgroup"}));
}

TEST(CgroupMemoryTest, V1HybridTakesTheMemoryHierarchy) {
  // This machine's kind: v1 controllers plus an empty unified hierarchy.
  const auto dirs = CgroupMemoryDirs(
      "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/b31c\n1:cpu:/\n0::/\n",
      "30 25 0:26 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
      "31 25 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
      "32 25 0:28 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
  EXPECT_EQ(dirs, (std::vector<std::string>{
                "/sys/fs/cgroup/memory/process_api/b31c",
                "/sys/fs/cgroup/memory/process_api",
                "/sys/fs/cgroup/memory",
                "/sys/fs/cgroup/unified"}));
}

TEST(CgroupMemoryTest, MountRootAndEscapesAreHonoured) {
  // A container's view of a v1 hierarchy mounted from its own cgroup,
  // and a mount point with a space (\040).
  const auto dirs = CgroupMemoryDirs("5:memory:/docker/abc\n",
                                     "40 30 0:27 /docker/abc /sys/fs/cgroup/my\\040mem ro - cgroup cgroup rw,memory\n");
  EXPECT_EQ(dirs, (std::vector<std::string>{"/sys/fs/cgroup/my mem"}));
}

TEST(CgroupMemoryTest, V2LimitIsTheSmallestOverTheLevels) {
  test::TempDir t;
  const auto root = t.path() / "cg";
  Put(root / "memory.max", "max\n");  // the root: no limit
  Put(root / "a" / "memory.max", "1073741824\n");
  Put(root / "a" / "memory.current", "104857600\n");
  Put(root / "a" / "memory.stat", "anon 1\ninactive_file 1048576\n");
  Put(root / "a" / "b" / "memory.max", "max\n");
  Put(root / "a" / "b" / "memory.current", "4096\n");
  Put(t.path() / "self", "0::/a/b\n");
  Put(t.path() / "mountinfo", "24 1 0:22 / " + root.string() + " rw - cgroup2 cgroup2 rw\n");
  auto cg = ReadCgroupMemoryLimit({(t.path() / "self").string(), (t.path() / "mountinfo").string()});
  ASSERT_TRUE(cg.has_value());
  EXPECT_EQ(cg->limit, 1ull << 30);
  EXPECT_EQ(cg->headroom, (1ull << 30) - (100ull << 20) + (1ull << 20));  // limit - usage + inactive file pages
}

TEST(CgroupMemoryTest, V1UnlimitedAndMissingFilesMeanNoLimit) {
  test::TempDir t;
  const auto root = t.path() / "memory";
  Put(root / "memory.limit_in_bytes", "9223372036854771712\n");
  Put(root / "x" / "memory.limit_in_bytes", "9223372036854771712\n");
  Put(t.path() / "self", "4:memory:/x\n0::/\n");
  Put(t.path() / "mountinfo", "31 25 0:27 / " + root.string() + " rw - cgroup cgroup rw,memory\n" +
                                  "32 25 0:28 / /nonexistent/unified rw - cgroup2 cgroup2 rw\n");
  EXPECT_FALSE(ReadCgroupMemoryLimit({(t.path() / "self").string(), (t.path() / "mountinfo").string()}));
  // No such files at all: no cgroup filesystem, no limit, no error.
  EXPECT_FALSE(ReadCgroupMemoryLimit({(t.path() / "none").string(), (t.path() / "mountinfo").string()}));
}

TEST(CgroupMemoryTest, V1LimitWithUsageOverIt) {
  test::TempDir t;
  const auto root = t.path() / "memory";
  Put(root / "memory.limit_in_bytes", "9223372036854771712\n");
  Put(root / "x" / "memory.limit_in_bytes", "536870912\n");
  Put(root / "x" / "memory.usage_in_bytes", "600000000\n");
  Put(root / "x" / "memory.stat", "cache 5\ntotal_inactive_file 8192\n");
  Put(t.path() / "self", "4:memory:/x\n");
  Put(t.path() / "mountinfo", "31 25 0:27 / " + root.string() + " rw - cgroup cgroup rw,memory\n");
  auto cg = ReadCgroupMemoryLimit({(t.path() / "self").string(), (t.path() / "mountinfo").string()});
  ASSERT_TRUE(cg.has_value());
  EXPECT_EQ(cg->limit, 512ull << 20);
  EXPECT_EQ(cg->headroom, 8192u);  // nothing left but the reclaimable cache
}

}  // namespace
}  // namespace uzfs
