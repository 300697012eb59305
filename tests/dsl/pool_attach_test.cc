// zpool attach and detach (Pool::AttachDevice / DetachDevice,
// pool_attach.cc): a top-level disk becomes a two-way mirror and a mirror
// a three-way one, each new side filled by a resilver, after which it
// alone serves every block; detach takes a side out (a two-way mirror
// becomes a disk again, in the config too) and clears its labels; what
// makes no sense is refused with nothing changed.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/spa/label_io.h"
#include "zfs/vdev/file_device.h"

namespace uzfs {
namespace {

constexpr size_t kObjBytes = 256 * 1024;


bool HasLabels(const std::string& path) {
  auto dev = FileDevice::Open(path, FileDeviceOptions{.read_only = true, .exclusive = false});
  return dev.ok() && ReadDeviceLabels(**dev, 9).ok();
}

TEST(PoolAttach, ADiskBecomesAMirrorAndBackAgain) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Leaf(dir.path(), "a"));
  const std::string a = layout.data[0].path;
  auto p = Pool::Create("sp", layout, pooltest::V23());
  ASSERT_UZFS_OK(p.status());
  std::vector<uint64_t> objs;
  pooltest::WriteObjects(**p, "sp", 16, kObjBytes, 40, &objs);
  const uint64_t array = (*p)->Config().tree.children[0].metaslab_array;
  const std::string b = pooltest::MakeFile(dir.path(), "b");
  ASSERT_UZFS_OK((*p)->AttachDevice(a, b, false));
  (*p)->WaitScan();
  EXPECT_EQ((*p)->scan_progress().phys.func, ScanFunc::kResilver);
  EXPECT_EQ((*p)->scan_progress().phys.state, ScanState::kFinished);
  {
    const Pool::ConfigView c = (*p)->Config();
    ASSERT_EQ(c.tree.children[0].type, "mirror");
    EXPECT_EQ(c.tree.children[0].metaslab_array, array);
    ASSERT_EQ(c.tree.children[0].children.size(), 2u);
    EXPECT_EQ(c.tree.children[0].children[1].path, b);
  }
  // The new side alone serves everything.
  ASSERT_UZFS_OK((*p)->OfflineDevice(a, true));
  pooltest::ExpectObjects(**p, "sp", objs, kObjBytes, 40);
  ASSERT_UZFS_OK((*p)->OnlineDevice(a));
  (*p)->WaitScan();
  // A third side, then back to one disk: b.
  const std::string c3 = pooltest::MakeFile(dir.path(), "c");
  ASSERT_UZFS_OK((*p)->AttachDevice(b, c3, false));
  (*p)->WaitScan();
  EXPECT_EQ((*p)->Config().tree.children[0].children.size(), 3u);
  ASSERT_UZFS_OK((*p)->DetachDevice(a));
  EXPECT_FALSE(HasLabels(a)) << "a detached device keeps no pool label";
  ASSERT_UZFS_OK((*p)->DetachDevice(c3));
  {
    const Pool::ConfigView c = (*p)->Config();
    ASSERT_EQ(c.tree.children[0].type, "file");
    EXPECT_EQ(c.tree.children[0].path, b);
    EXPECT_EQ(c.tree.children[0].metaslab_array, array);
  }
  // The last side cannot go.
  EXPECT_FALSE((*p)->DetachDevice(b).ok());
  pooltest::ExpectObjects(**p, "sp", objs, kObjBytes, 40);
  ASSERT_UZFS_OK((*p)->Export());
  p->reset();
  pooltest::ExpectConsistent(dir.path(), "sp");
  auto again = pooltest::ImportFrom(dir.path(), "sp");
  ASSERT_UZFS_OK(again.status());
  pooltest::ExpectObjects(**again, "sp", objs, kObjBytes, 40);
  ASSERT_UZFS_OK((*again)->Export());
}

TEST(PoolAttach, BadRequestsChangeNothing) {
  test::TempDir dir;
  PoolLayout layout;
  layout.data.push_back(pooltest::Group(dir.path(), "r", VdevSpec::Type::kRaidz, 3, 1));
  layout.data.push_back(pooltest::Group(dir.path(), "m", VdevSpec::Type::kMirror, 2));
  auto p = Pool::Create("sp", layout, pooltest::V23());
  ASSERT_UZFS_OK(p.status());
  const std::string r0 = layout.data[0].children[0].path, m0 = layout.data[1].children[0].path;
  const std::string m1 = layout.data[1].children[1].path;
  const std::string x = pooltest::MakeFile(dir.path(), "x");
  EXPECT_EQ((*p)->AttachDevice(r0, x, false).code(), Code::kNotSupported);  // raidz
  EXPECT_EQ((*p)->AttachDevice(m0, m1, false).code(), Code::kInvalidArgument);  // in this pool
  EXPECT_EQ((*p)->AttachDevice(m0, pooltest::MakeFile(dir.path(), "small", 70ull << 20), false).code(),
            Code::kInvalidArgument);
  EXPECT_EQ((*p)->AttachDevice("/no/such", x, false).code(), Code::kNotFound);
  EXPECT_EQ((*p)->DetachDevice(r0).code(), Code::kNotSupported);  // raidz
  ASSERT_UZFS_OK((*p)->OfflineDevice(m1, true));
  EXPECT_EQ((*p)->DetachDevice(m0).code(), Code::kBusy);  // the only side holding the data
  ASSERT_UZFS_OK((*p)->OnlineDevice(m1));
  (*p)->WaitScan();
  const Pool::ConfigView c = (*p)->Config();
  EXPECT_EQ(c.tree.children[0].children.size(), 3u);
  EXPECT_EQ(c.tree.children[1].children.size(), 2u);
  ASSERT_UZFS_OK((*p)->Export());
}

}  // namespace
}  // namespace uzfs
