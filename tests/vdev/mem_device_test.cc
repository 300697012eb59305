// MemDevice: round trips, range checks, and the volatile write cache model
// (DropUnflushed / DropSomeUnflushed) that crash tests rely on.
#include "zfs/vdev/mem_device.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "tests/testutil/testutil.h"

namespace uzfs {
namespace {

std::unique_ptr<MemDevice> NewMem(uint64_t size, MemDeviceOptions opts = {}) {
  auto r = MemDevice::Create(size, opts);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

std::vector<uint8_t> ReadBack(BlockDevice& dev, uint64_t off, size_t len) {
  std::vector<uint8_t> out(len);
  EXPECT_UZFS_OK(dev.Read(off, out));
  return out;
}

TEST(MemDeviceTest, NewDeviceReadsZerosAndRoundTrips) {
  auto dev = NewMem(1 << 20);
  EXPECT_EQ(dev->Size(), 1u << 20);
  EXPECT_EQ(dev->AshiftHint(), 12u);
  EXPECT_EQ(dev->path(), "mem");
  EXPECT_EQ(dev->NativeFd(), -1);
  EXPECT_EQ(ReadBack(*dev, 4096, 100), std::vector<uint8_t>(100, 0));

  auto data = test::RandomBytes(10000, 1);
  ASSERT_UZFS_OK(dev->Write(777, data));  // unaligned on purpose
  EXPECT_EQ(ReadBack(*dev, 777, data.size()), data);
  EXPECT_EQ(ReadBack(*dev, 776, 1), std::vector<uint8_t>(1, 0));
}

TEST(MemDeviceTest, OutOfRangeIsInvalidArgumentAndNotCounted) {
  auto dev = NewMem(8192);
  std::vector<uint8_t> buf(4096);
  EXPECT_EQ(dev->Read(4097, buf).code(), Code::kInvalidArgument);
  EXPECT_EQ(dev->Write(8192, std::vector<uint8_t>(1)).code(), Code::kInvalidArgument);
  EXPECT_EQ(dev->Read(UINT64_MAX - 10, buf).code(), Code::kInvalidArgument);  // no wrap-around
  EXPECT_UZFS_OK(dev->Read(4096, buf));  // exactly the last 4 KiB
  EXPECT_EQ(dev->errors().Snapshot(), DeviceErrorCounts{});
  EXPECT_EQ(MemDevice::Create(0).status().code(), Code::kInvalidArgument);
}

TEST(MemDeviceTest, DropUnflushedUndoesOnlyWritesSinceLastFlush) {
  auto dev = NewMem(1 << 20);
  auto a = test::RandomBytes(20000, 2);
  auto b = test::RandomBytes(6000, 3);
  ASSERT_UZFS_OK(dev->Write(1000, a));
  ASSERT_UZFS_OK(dev->Flush());
  EXPECT_EQ(dev->UnflushedGranules(), 0u);
  ASSERT_UZFS_OK(dev->Write(5000, b));         // overwrites the middle of a
  ASSERT_UZFS_OK(dev->Write(500000, b));       // fresh area
  EXPECT_GT(dev->UnflushedGranules(), 0u);

  dev->DropUnflushed();  // power loss
  EXPECT_EQ(ReadBack(*dev, 1000, a.size()), a);
  EXPECT_EQ(ReadBack(*dev, 500000, b.size()), std::vector<uint8_t>(b.size(), 0));
  EXPECT_EQ(dev->UnflushedGranules(), 0u);
  EXPECT_EQ(dev->flush_count(), 1u);

  // A second write to the same place after a flush is undone to the flushed
  // state, not to zeros.
  ASSERT_UZFS_OK(dev->Write(1000, b));
  ASSERT_UZFS_OK(dev->Write(1000, std::vector<uint8_t>(100, 0xEE)));
  dev->DropUnflushed();
  EXPECT_EQ(ReadBack(*dev, 1000, a.size()), a);
}

// WriteDurable: its bytes survive a power loss at once, without a flush;
// the plain writes before it (elsewhere, or around it in the same granule)
// do not.
TEST(MemDeviceTest, WriteDurableSurvivesDropUnflushedAndOnlyItsBytes) {
  auto dev = NewMem(1 << 20);
  auto a = test::RandomBytes(8192, 4);
  auto b = test::RandomBytes(1000, 5);
  auto c = test::RandomBytes(4096, 6);
  ASSERT_UZFS_OK(dev->Write(65536, a));           // unflushed, granules 16-17
  ASSERT_UZFS_OK(dev->WriteDurable(65536 + 100, b));  // inside granule 16
  ASSERT_UZFS_OK(dev->WriteDurable(262144, c));   // a granule of its own
  EXPECT_EQ(dev->flush_count(), 0u);
  dev->DropUnflushed();
  std::vector<uint8_t> want(8192, 0);
  std::copy(b.begin(), b.end(), want.begin() + 100);
  EXPECT_EQ(ReadBack(*dev, 65536, want.size()), want);
  EXPECT_EQ(ReadBack(*dev, 262144, c.size()), c);
  EXPECT_EQ(dev->WriteDurable(1 << 20, b).code(), Code::kInvalidArgument);
}

TEST(MemDeviceTest, DropSomeUnflushedKeepsOrUndoesWholeGranules) {
  constexpr int kGranules = 64;
  auto dev = NewMem(kGranules * 4096);
  for (int g = 0; g < kGranules; g++) {
    ASSERT_UZFS_OK(dev->Write(g * 4096, std::vector<uint8_t>(4096, 0x11)));
  }
  ASSERT_UZFS_OK(dev->Flush());
  for (int g = 0; g < kGranules; g++) {
    ASSERT_UZFS_OK(dev->Write(g * 4096, std::vector<uint8_t>(4096, static_cast<uint8_t>(g + 1))));
  }
  dev->DropSomeUnflushed(42);
  int kept = 0, undone = 0;
  for (int g = 0; g < kGranules; g++) {
    auto got = ReadBack(*dev, g * 4096, 4096);
    if (got == std::vector<uint8_t>(4096, static_cast<uint8_t>(g + 1))) {
      kept++;
    } else {
      EXPECT_EQ(got, std::vector<uint8_t>(4096, 0x11)) << "granule " << g << " is torn";
      undone++;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(undone, 0);
}

TEST(MemDeviceTest, WithoutVolatileCacheEveryWriteIsDurable) {
  MemDeviceOptions opts;
  opts.volatile_cache = false;
  opts.name = "ram0";
  opts.ashift = 9;
  auto dev = NewMem(65536, opts);
  EXPECT_EQ(dev->path(), "ram0");
  EXPECT_EQ(dev->AshiftHint(), 9u);
  ASSERT_UZFS_OK(dev->Write(0, std::vector<uint8_t>(10, 7)));
  dev->DropUnflushed();
  EXPECT_EQ(ReadBack(*dev, 0, 10), std::vector<uint8_t>(10, 7));
}

TEST(MemDeviceTest, SparseGigabyteDeviceIsCheap) {
  auto dev = NewMem(1ull << 30);
  auto data = test::RandomBytes(4096, 9);
  ASSERT_UZFS_OK(dev->Write((1ull << 30) - 4096, data));
  EXPECT_EQ(ReadBack(*dev, (1ull << 30) - 4096, 4096), data);
}

TEST(MemDeviceTest, ConcurrentWritersOnDisjointRanges) {
  auto dev = NewMem(4 << 20);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 64; i++) {
        auto d = test::RandomBytes(4096, t * 1000 + i);
        EXPECT_UZFS_OK(dev->Write((t * 64 + i) * 4096ull, d));
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; t++) {
    for (int i = 0; i < 64; i++) {
      ASSERT_EQ(ReadBack(*dev, (t * 64 + i) * 4096ull, 4096), test::RandomBytes(4096, t * 1000 + i));
    }
  }
}

}  // namespace
}  // namespace uzfs
