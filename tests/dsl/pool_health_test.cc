// Devices changed under an imported pool (zfs/dsl/pool_health.cc): a leaf
// file truncated, deleted, or whose labels were overwritten is marked
// UNAVAIL at the next txg, gets no more writes (a truncated file is not
// grown back), the pool runs DEGRADED from its redundancy, every object
// reads back, and the pool imports again without that device.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"

namespace uzfs {
namespace {

namespace fs = std::filesystem;

struct Change {
  const char* name;
  void (*apply)(const std::string& path);
};

void Truncate(const std::string& p) { fs::resize_file(p, 0); }
void Halve(const std::string& p) { fs::resize_file(p, fs::file_size(p) / 2); }
void Delete(const std::string& p) { fs::remove(p); }
// Zeroes the two front labels and the two back ones.
void WipeLabels(const std::string& p) {
  const uint64_t size = fs::file_size(p);
  const std::vector<char> zero(512 * 1024, 0);
  std::fstream f(p, std::ios::binary | std::ios::in | std::ios::out);
  f.seekp(0);
  f.write(zero.data(), static_cast<std::streamsize>(zero.size()));
  f.seekp(static_cast<std::streamoff>(size / (256 * 1024) * (256 * 1024) - zero.size()));
  f.write(zero.data(), static_cast<std::streamsize>(zero.size()));
}

class PoolHealthTest : public ::testing::TestWithParam<Change> {};

TEST_P(PoolHealthTest, ChangedLeafIsTakenOutOfUse) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "r", VdevSpec::Type::kRaidz, 3, 1));
  auto p = Pool::Create("hp", layout, pooltest::V23());
  ASSERT_UZFS_OK(p.status());
  (*p)->SetLabelCheckInterval(std::chrono::seconds(0));
  std::vector<uint64_t> objs;
  pooltest::WriteObjects(**p, "hp", 4, 200000, 1, &objs);
  ASSERT_UZFS_OK((*p)->Sync());
  const std::string victim = (dir.path() / "r1").string();
  GetParam().apply(victim);
  pooltest::WriteObjects(**p, "hp", 4, 200000, 5, &objs);
  ASSERT_UZFS_OK((*p)->Sync());
  Vdev* raidz = (*p)->root_vdev().child(0);
  EXPECT_EQ(raidz->child(1)->state(), VdevState::kUnavail);
  EXPECT_EQ(raidz->child(0)->state(), VdevState::kOnline);
  EXPECT_EQ(raidz->state(), VdevState::kDegraded);
  if (std::string(GetParam().name) == "truncated") {
    EXPECT_EQ(fs::file_size(victim), 0u) << "the pool wrote to a device it had lost";
  }
  auto os = (*p)->Objset("hp");
  ASSERT_UZFS_OK(os.status());
  for (size_t i = 0; i < objs.size(); i++) {
    std::vector<uint8_t> back(200000);
    ASSERT_UZFS_OK((*os)->Read(objs[i], 0, back));
    EXPECT_EQ(back, test::RandomBytes(200000, 1 + i)) << "object " << i;
  }
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  // Imported again without it: DEGRADED, everything there.
  auto q = pooltest::ImportFrom(dir.path(), "hp");
  ASSERT_UZFS_OK(q.status());
  EXPECT_EQ((*q)->root_vdev().child(0)->child(1)->state(), VdevState::kUnavail);
  auto qos = (*q)->Objset("hp");
  ASSERT_UZFS_OK(qos.status());
  for (size_t i = 0; i < objs.size(); i++) {
    std::vector<uint8_t> back(200000);
    ASSERT_UZFS_OK((*qos)->Read(objs[i], 0, back));
    EXPECT_EQ(back, test::RandomBytes(200000, 1 + i)) << "object " << i;
  }
  ASSERT_UZFS_OK((*q)->Export());
}

INSTANTIATE_TEST_SUITE_P(Changes, PoolHealthTest,
                         ::testing::Values(Change{"truncated", Truncate}, Change{"halved", Halve},
                                           Change{"deleted", Delete}, Change{"relabeled", WipeLabels}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace uzfs
