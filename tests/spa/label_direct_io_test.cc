// Labels and uberblocks on file leaves whose reads are direct (O_DIRECT)
// while label writes take whatever path their buffers allow: every reader
// of the file (the same device, a device with direct writes, a buffered
// one as zdb -l opens) sees the newest config and uberblock, before and
// after a flush, whichever of them wrote last.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tests/spa/label_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/spa/label_io.h"
#include "zfs/util/aligned_bytes.h"
#include "zfs/vdev/file_device.h"

namespace uzfs {
namespace {

constexpr uint64_t kSize = 100ull << 20;

using labeltest::Config;
using labeltest::Ub;

std::unique_ptr<FileDevice> Open(const std::string& path, DirectIo mode, bool exclusive) {
  FileDeviceOptions o;
  o.create_size = kSize;
  o.direct_io = mode;
  o.exclusive = exclusive;
  auto d = FileDevice::Open(path, o);
  if (!d.ok()) return nullptr;
  return std::move(d).value();
}

void ExpectNewest(BlockDevice& dev, uint64_t config_txg, uint64_t ub_txg, const char* who) {
  SCOPED_TRACE(who);
  auto l = ReadDeviceLabels(dev, 9);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->config, Config(config_txg));
  ASSERT_TRUE(l->uberblock.has_value());
  EXPECT_EQ(l->uberblock->txg, ub_txg);
}

TEST(LabelDirectIoTest, EveryReaderSeesTheNewestLabels) {
  test::TempDir dir;
  const std::string path = (dir.path() / "leaf").string();
  auto pool = Open(path, DirectIo::kAuto, true);  // what a pool opens
  ASSERT_NE(pool, nullptr);
  if (!pool->direct_io()) GTEST_SKIP() << "no O_DIRECT with a reported alignment here";
  auto direct = Open(path, DirectIo::kOn, false);
  auto buffered = Open(path, DirectIo::kOff, false);
  ASSERT_NE(direct, nullptr);
  ASSERT_NE(buffered, nullptr);

  ASSERT_UZFS_OK(InitDeviceLabels(*pool));
  ASSERT_UZFS_OK(WriteDeviceConfig(*pool, Config(4)));
  for (uint64_t t = 4; t <= 10; t++) ASSERT_UZFS_OK(WriteDeviceUberblock(*pool, Ub(t), 9));
  ExpectNewest(*pool, 4, 10, "pool device");
  ExpectNewest(*direct, 4, 10, "direct device");
  ExpectNewest(*buffered, 4, 10, "buffered device");

  // Now the direct-writing device moves on; the others have cached pages.
  ASSERT_UZFS_OK(WriteDeviceConfig(*direct, Config(11)));
  ASSERT_UZFS_OK(WriteDeviceUberblock(*direct, Ub(11), 9));
  ExpectNewest(*pool, 11, 11, "pool device after direct writes");
  ExpectNewest(*buffered, 11, 11, "buffered device after direct writes");

  // Then the pool's device again, the uberblock from an aligned buffer
  // (direct reads of it must see the buffered write) and no flush.
  ASSERT_UZFS_OK(WriteDeviceUberblock(*pool, Ub(12), 9));
  AlignedBytes ring(kUberblockRingSize);
  ASSERT_UZFS_OK(direct->Read(LabelOffset(kSize, 0) + kUberblockRingOffset, ring));
  auto ub = FindActiveUberblock(ring, LabelOffset(kSize, 0) + kUberblockRingOffset, 9, std::nullopt);
  ASSERT_TRUE(ub.ok()) << ub.status().ToString();
  EXPECT_EQ(ub->txg, 12u);
  ExpectNewest(*direct, 11, 12, "direct device after pool writes");
  ExpectNewest(*buffered, 11, 12, "buffered device after pool writes");
}

}  // namespace
}  // namespace uzfs
