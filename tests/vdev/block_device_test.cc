// FileDevice on a real block device: a loop device over a temporary file
// (needs root and losetup; skipped otherwise). Checks what only a block
// device has: size from BLKGETSIZE64, ashift from BLKPBSZGET, O_DIRECT on
// by default with the logical sector as alignment, and O_EXCL exclusivity.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/testutil/testutil.h"
#include "tests/vdev/vdev_test_util.h"
#include "zfs/util/aligned_bytes.h"
#include "zfs/vdev/file_device.h"
#include "zfs/vdev/io_engine.h"

namespace uzfs {
namespace {

// Attaches a loop device with 4 KiB sectors to `file`; detaches on scope exit.
class LoopDevice {
 public:
  explicit LoopDevice(const std::string& file) {
    if (geteuid() != 0) return;
    const std::string cmd = "losetup --find --show --sector-size 4096 '" + file + "' 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return;
    char line[256] = {0};
    if (std::fgets(line, sizeof(line), p) != nullptr) {
      dev_ = line;
      while (!dev_.empty() && (dev_.back() == '\n' || dev_.back() == ' ')) dev_.pop_back();
    }
    if (pclose(p) != 0) dev_.clear();
  }
  ~LoopDevice() {
    if (!dev_.empty()) {
      const std::string cmd = "losetup -d '" + dev_ + "'";
      if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << "could not detach " << dev_;
    }
  }
  const std::string& path() const { return dev_; }

 private:
  std::string dev_;
};

TEST(BlockDeviceTest, LoopDeviceGeometryExclusivityAndIo) {
  test::TempDir dir;
  const std::string backing = test::FileIn(dir, "backing");
  {
    FileDeviceOptions o;
    o.create_size = 16 << 20;
    ASSERT_TRUE(FileDevice::Open(backing, o).ok());
  }
  LoopDevice loop(backing);
  if (loop.path().empty()) GTEST_SKIP() << "needs root and losetup";

  auto dev = FileDevice::Open(loop.path());
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_TRUE((*dev)->is_block_device());
  EXPECT_EQ((*dev)->Size(), 16u << 20);
  EXPECT_EQ((*dev)->AshiftHint(), 12u);
  EXPECT_TRUE((*dev)->direct_io());  // reads and writes direct for block devices
  EXPECT_TRUE((*dev)->direct_writes());
  EXPECT_GE((*dev)->direct_alignment(), 512u);
  EXPECT_EQ((*dev)->RequiredAlignment(), 1u);  // unaligned requests are bounced

  auto second = FileDevice::Open(loop.path());
  EXPECT_EQ(second.status().code(), Code::kBusy);
  EXPECT_EQ(second.status().message(), loop.path() + " is in use by another process");

  AlignedBuffer buf(65536);
  auto data = test::RandomBytes(65536, 11);
  std::copy(data.begin(), data.end(), buf.data());
  auto engine = std::move(IoEngine::Create()).value();
  ASSERT_UZFS_OK(SubmitAndWait(*engine, {{dev->get(), IoOp::kWrite, 1 << 20, buf.span(), {}},
                                         {dev->get(), IoOp::kFlush, 0, {}, {}}}));
  AlignedBuffer back(65536);
  ASSERT_UZFS_OK((*dev)->Read(1 << 20, back.span()));
  EXPECT_TRUE(std::equal(data.begin(), data.end(), back.data()));
  EXPECT_EQ((*dev)->unaligned_requests(), 0u);

  // What label I/O does with plain vectors: unaligned offsets, lengths and
  // buffers work too (bounced), and do not disturb their neighbours.
  auto odd = test::RandomBytes(1000, 12);
  ASSERT_UZFS_OK((*dev)->Write((1 << 20) + 777, odd));
  std::vector<uint8_t> odd_back(1000);
  ASSERT_UZFS_OK((*dev)->Read((1 << 20) + 777, odd_back));
  EXPECT_EQ(odd_back, odd);
  ASSERT_UZFS_OK((*dev)->Read(1 << 20, back.span()));
  EXPECT_TRUE(std::equal(data.begin(), data.begin() + 777, back.data()));
  EXPECT_TRUE(std::equal(odd.begin(), odd.end(), back.data() + 777));
  EXPECT_TRUE(std::equal(data.begin() + 1777, data.end(), back.data() + 1777));
  EXPECT_EQ((*dev)->unaligned_requests(), 2u);

  // Released (a leaf that left its pool): another opener gets it while
  // this one still reads and writes.
  (*dev)->ReleaseExclusive();
  auto after = FileDevice::Open(loop.path());
  ASSERT_UZFS_OK(after.status());
  ASSERT_UZFS_OK(SubmitAndWait(*engine, {{dev->get(), IoOp::kWrite, 2 << 20, buf.span(), {}},
                                         {dev->get(), IoOp::kFlush, 0, {}, {}}}));
  ASSERT_UZFS_OK((*after)->Read(2 << 20, back.span()));
  EXPECT_TRUE(std::equal(data.begin(), data.end(), back.data()));
}

}  // namespace
}  // namespace uzfs
