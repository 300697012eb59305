// FaultDevice: every fault mode (fail reads/writes/flushes always, next N,
// by probability, by range; silent corruption; latency with lanes; vanish;
// drop unflushed writes over memory and file devices), error counting, and
// changing the settings while I/O is in flight.
#include "zfs/vdev/fault_device.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <chrono>
#include <thread>
#include <vector>

#include "tests/testutil/testutil.h"
#include "tests/vdev/vdev_test_util.h"
#include "zfs/vdev/file_device.h"
#include "zfs/vdev/mem_device.h"

namespace uzfs {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kSize = 1 << 20;

std::unique_ptr<MemDevice> Mem(bool volatile_cache = false) {
  MemDeviceOptions o;
  o.volatile_cache = volatile_cache;
  return std::move(MemDevice::Create(kSize, o)).value();
}

std::unique_ptr<FaultDevice> Faulty() { return std::make_unique<FaultDevice>(Mem()); }

int CountReadErrors(FaultDevice& dev, int n, uint64_t off = 0) {
  std::vector<uint8_t> buf(512);
  int errors = 0;
  for (int i = 0; i < n; i++) {
    Status s = dev.Read(off, buf);
    if (!s.ok()) {
      EXPECT_TRUE(s.IsIoError()) << s.ToString();
      errors++;
    }
  }
  return errors;
}

TEST(FaultDeviceTest, PassesThroughWithoutFaults) {
  auto dev = Faulty();
  EXPECT_EQ(dev->Size(), kSize);
  EXPECT_EQ(dev->path(), "mem");
  EXPECT_EQ(dev->NativeFd(), -1);
  auto data = test::RandomBytes(9000, 1);
  ASSERT_UZFS_OK(dev->Write(100, data));
  std::vector<uint8_t> back(data.size());
  ASSERT_UZFS_OK(dev->Read(100, back));
  EXPECT_EQ(back, data);
  ASSERT_UZFS_OK(dev->Flush());
  EXPECT_EQ(dev->stats().ios, 3u);
}

TEST(FaultDeviceTest, FailReadsAlwaysNextNAndCleared) {
  auto dev = Faulty();
  dev->FailReads(FaultTrigger::Always());
  EXPECT_EQ(CountReadErrors(*dev, 5), 5);
  dev->FailReads(FaultTrigger::NextN(3));
  EXPECT_EQ(CountReadErrors(*dev, 10), 3);
  dev->FailReads(FaultTrigger::Always());
  dev->ClearFaults();
  EXPECT_EQ(CountReadErrors(*dev, 4), 0);
  // Errors were counted on the device the caller sees, and as injected.
  EXPECT_EQ(dev->errors().Snapshot(), (DeviceErrorCounts{8, 0, 0}));
  EXPECT_EQ(dev->stats().injected_read_errors, 8u);
  EXPECT_EQ(dev->inner().errors().Snapshot(), DeviceErrorCounts{});
}

TEST(FaultDeviceTest, ErrorMessageNamesPathOffsetAndCause) {
  auto dev = Faulty();
  dev->FailReads(FaultTrigger::Always());
  std::vector<uint8_t> buf(4096);
  Status s = dev->Read(8192, buf);
  EXPECT_EQ(s.ToString(), "IO error: read mem at offset 8192 (4096 bytes): injected fault: " +
                              std::string(std::strerror(EIO)));
}

TEST(FaultDeviceTest, FailReadsWithProbability) {
  auto dev = Faulty();
  dev->SetSeed(7);
  dev->FailReads(FaultTrigger::WithProbability(0.25));
  const int errors = CountReadErrors(*dev, 800);
  EXPECT_GT(errors, 100);  // expected 200; bounds are ~8 sigma wide
  EXPECT_LT(errors, 300);
  dev->FailReads(FaultTrigger::WithProbability(0.0));
  EXPECT_EQ(CountReadErrors(*dev, 50), 0);
}

TEST(FaultDeviceTest, FaultsCanTargetARange) {
  auto dev = Faulty();
  dev->FailReads(FaultTrigger::Always(), FaultRange{65536, 4096});
  EXPECT_EQ(CountReadErrors(*dev, 3, 0), 0);
  EXPECT_EQ(CountReadErrors(*dev, 3, 65536 - 511), 3);  // overlaps the first byte
  EXPECT_EQ(CountReadErrors(*dev, 3, 65536 + 4095), 3);  // overlaps the last byte
  EXPECT_EQ(CountReadErrors(*dev, 3, 65536 + 4096), 0);
  // NextN only counts I/Os inside the range.
  dev->FailReads(FaultTrigger::NextN(2), FaultRange{0, 512});
  EXPECT_EQ(CountReadErrors(*dev, 5, 4096), 0);
  EXPECT_EQ(CountReadErrors(*dev, 5, 0), 2);
}

TEST(FaultDeviceTest, FailedWritesDoNotReachTheDevice) {
  auto dev = Faulty();
  ASSERT_UZFS_OK(dev->Write(0, std::vector<uint8_t>(4096, 0xAA)));
  dev->FailWrites(FaultTrigger::NextN(1));
  Status s = dev->Write(0, std::vector<uint8_t>(4096, 0xBB));
  EXPECT_TRUE(s.IsIoError());
  std::vector<uint8_t> back(4096);
  ASSERT_UZFS_OK(dev->Read(0, back));
  EXPECT_EQ(back, std::vector<uint8_t>(4096, 0xAA));
  ASSERT_UZFS_OK(dev->Write(0, std::vector<uint8_t>(4096, 0xBB)));  // NextN(1) is used up
  EXPECT_EQ(dev->errors().Snapshot(), (DeviceErrorCounts{0, 1, 0}));
}

TEST(FaultDeviceTest, FailFlushesCountsAsWriteError) {
  auto dev = Faulty();
  dev->FailFlushes(FaultTrigger::Always());
  Status s = dev->Flush();
  EXPECT_TRUE(s.IsIoError());
  EXPECT_NE(s.message().find("flush mem"), std::string::npos) << s.ToString();
  EXPECT_EQ(dev->errors().Snapshot().write, 1u);
  EXPECT_EQ(dev->stats().injected_flush_errors, 1u);
  dev->FailFlushes(FaultTrigger::Never());
  EXPECT_UZFS_OK(dev->Flush());
}

// WriteDurable is one I/O that a write fault and a flush fault can both
// fail (it is a write and a flush in one); idle, it reaches the device.
TEST(FaultDeviceTest, WriteDurableFailsOnWriteOrFlushFaults) {
  auto dev = Faulty();
  auto data = test::RandomBytes(4096, 7);
  ASSERT_UZFS_OK(dev->WriteDurable(8192, data));
  std::vector<uint8_t> back(data.size());
  ASSERT_UZFS_OK(dev->Read(8192, back));
  EXPECT_EQ(back, data);
  dev->FailFlushes(FaultTrigger::NextN(1));
  Status s = dev->WriteDurable(8192, std::vector<uint8_t>(4096, 0xAA));
  EXPECT_TRUE(s.IsIoError()) << s.ToString();
  EXPECT_EQ(dev->stats().injected_flush_errors, 1u);
  dev->FailWrites(FaultTrigger::NextN(1));
  EXPECT_TRUE(dev->WriteDurable(8192, std::vector<uint8_t>(4096, 0xBB)).IsIoError());
  EXPECT_EQ(dev->stats().injected_write_errors, 1u);
  EXPECT_EQ(dev->errors().Snapshot(), (DeviceErrorCounts{0, 2, 0}));
  ASSERT_UZFS_OK(dev->Read(8192, back));
  EXPECT_EQ(back, data);  // neither failed write reached the device
  dev->Vanish();
  EXPECT_TRUE(dev->WriteDurable(8192, data).IsIoError());
  dev->Reappear();
  EXPECT_UZFS_OK(dev->WriteDurable(8192, data));
}

// With the cache model, a durable write outlives DropUnflushed; the plain
// write next to it does not.
TEST(FaultDeviceTest, WriteDurableIsDurableInTheCacheModel) {
  auto dev = std::make_unique<FaultDevice>(Mem());  // volatile_cache by default
  auto a = test::RandomBytes(4096, 8);
  auto b = test::RandomBytes(4096, 9);
  ASSERT_UZFS_OK(dev->Write(0, a));
  ASSERT_UZFS_OK(dev->WriteDurable(4096, b));
  ASSERT_UZFS_OK(dev->DropUnflushed());
  std::vector<uint8_t> back(8192);
  ASSERT_UZFS_OK(dev->Read(0, back));
  EXPECT_EQ(std::vector<uint8_t>(back.begin(), back.begin() + 4096), std::vector<uint8_t>(4096, 0));
  EXPECT_EQ(std::vector<uint8_t>(back.begin() + 4096, back.end()), b);
}

TEST(FaultDeviceTest, CorruptReadsFlipsBitsOnlyInRangeAndSilently) {
  auto dev = Faulty();
  auto data = test::RandomBytes(8192, 3);
  ASSERT_UZFS_OK(dev->Write(0, data));
  dev->CorruptReads(FaultTrigger::NextN(1), FaultRange{1000, 24}, 0x80);
  std::vector<uint8_t> back(8192);
  ASSERT_UZFS_OK(dev->Read(0, back));  // silent: the read succeeds
  for (size_t i = 0; i < back.size(); i++) {
    const uint8_t want = (i >= 1000 && i < 1024) ? data[i] ^ 0x80 : data[i];
    ASSERT_EQ(back[i], want) << "byte " << i;
  }
  ASSERT_UZFS_OK(dev->Read(0, back));  // NextN(1) used up; the media was never changed
  EXPECT_EQ(back, data);
  EXPECT_EQ(dev->stats().corrupted_reads, 1u);
  EXPECT_EQ(dev->errors().Snapshot(), DeviceErrorCounts{});  // only a checksum notices
}

TEST(FaultDeviceTest, VanishedDeviceFailsEveryIoUntilItReappears) {
  auto dev = Faulty();
  dev->Vanish();
  EXPECT_TRUE(dev->vanished());
  std::vector<uint8_t> buf(512);
  Status r = dev->Read(0, buf);
  EXPECT_TRUE(r.IsIoError());
  EXPECT_NE(r.message().find("device removed"), std::string::npos) << r.ToString();
  EXPECT_TRUE(dev->Write(0, buf).IsIoError());
  EXPECT_TRUE(dev->Flush().IsIoError());
  EXPECT_EQ(dev->stats().vanished_ios, 3u);
  EXPECT_EQ(dev->errors().Snapshot(), (DeviceErrorCounts{1, 2, 0}));
  dev->Reappear();
  EXPECT_UZFS_OK(dev->Read(0, buf));
}

TEST(FaultDeviceTest, DropUnflushedOverMemoryWithoutItsOwnCache) {
  auto dev = Faulty();  // inner MemDevice has no cache model; the wrapper's is used
  auto a = test::RandomBytes(10000, 4);
  auto b = test::RandomBytes(10000, 5);
  ASSERT_UZFS_OK(dev->Write(3000, a));
  ASSERT_UZFS_OK(dev->Flush());
  ASSERT_UZFS_OK(dev->Write(3000, b));
  ASSERT_UZFS_OK(dev->Write(200000, b));
  EXPECT_GT(dev->UnflushedGranules(), 0u);
  ASSERT_UZFS_OK(dev->DropUnflushed());
  std::vector<uint8_t> back(10000);
  ASSERT_UZFS_OK(dev->Read(3000, back));
  EXPECT_EQ(back, a);
  ASSERT_UZFS_OK(dev->Read(200000, back));
  EXPECT_EQ(back, std::vector<uint8_t>(10000, 0));
}

TEST(FaultDeviceTest, DropUnflushedOverAFileSurvivesReopen) {
  test::TempDir dir;
  const std::string path = test::FileIn(dir, "disk0");
  auto a = test::RandomBytes(8192, 6);
  {
    FileDeviceOptions o;
    o.create_size = kSize;
    auto file = FileDevice::Open(path, o);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    FaultDevice dev(std::move(file).value());
    ASSERT_UZFS_OK(dev.Write(4096, a));
    ASSERT_UZFS_OK(dev.Flush());
    ASSERT_UZFS_OK(dev.Write(4096, test::RandomBytes(8192, 7)));
    ASSERT_UZFS_OK(dev.DropUnflushed());  // "crash", then the process goes away
  }
  auto file = FileDevice::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  std::vector<uint8_t> back(8192);
  ASSERT_UZFS_OK((*file)->Read(4096, back));
  EXPECT_EQ(back, a);
}

// Runs `n` reads at once, one thread each; returns the wall time.
Clock::duration ConcurrentReads(BlockDevice& dev, int n) {
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (int i = 0; i < n; i++) {
    threads.emplace_back([&dev, i] {
      std::vector<uint8_t> buf(4096);
      EXPECT_UZFS_OK(dev.Read(static_cast<uint64_t>(i) * 4096, buf));
    });
  }
  for (auto& t : threads) t.join();
  return Clock::now() - start;
}

TEST(FaultDeviceTest, LatencyOnOneLaneSerialisesIo) {
  auto probe = std::make_unique<test::ConcurrencyProbe>(Mem(), std::chrono::microseconds(0));
  test::ConcurrencyProbe* p = probe.get();
  FaultDevice dev(std::move(probe));
  dev.SetLatency(milliseconds(2), 1);
  const auto took = ConcurrentReads(dev, 8);
  EXPECT_GE(took, milliseconds(16));  // 8 x 2 ms, one at a time
  EXPECT_EQ(p->max_concurrent(), 1);
}

TEST(FaultDeviceTest, LatencyWithLanesServesThatManyAtOnce) {
  auto probe = std::make_unique<test::ConcurrencyProbe>(Mem(), milliseconds(1));
  test::ConcurrencyProbe* p = probe.get();
  FaultDevice dev(std::move(probe));
  dev.SetLatency(milliseconds(8), 4);
  const auto took = ConcurrentReads(dev, 8);
  EXPECT_GE(took, milliseconds(2 * 9));  // two rounds of (8 ms + 1 ms)
  EXPECT_LT(took, milliseconds(8 * 9));  // strictly better than one lane (generous)
  EXPECT_LE(p->max_concurrent(), 4);
}

TEST(FaultDeviceTest, ClearingLatencyReleasesWaitingIo) {
  auto dev = Faulty();
  dev->SetLatency(milliseconds(40), 1);
  std::thread clearer([&] {
    std::this_thread::sleep_for(milliseconds(60));
    dev->ClearFaults();
  });
  const auto took = ConcurrentReads(*dev, 12);  // would take 480 ms on one lane
  clearer.join();
  EXPECT_LT(took, milliseconds(400));
}

TEST(FaultDeviceTest, SettingsChangeWhileIoIsInFlight) {
  FaultDevice dev(Mem(true));
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0};
  std::vector<std::thread> io;
  for (int t = 0; t < 3; t++) {
    io.emplace_back([&, t] {
      std::vector<uint8_t> buf(4096, static_cast<uint8_t>(t));
      for (int i = 0; !stop.load(); i++) {
        const uint64_t off = static_cast<uint64_t>((t * 37 + i) % 200) * 4096;
        Status s = (i % 3 == 0) ? dev.Write(off, buf) : (i % 7 == 0) ? dev.Flush() : dev.Read(off, buf);
        (s.ok() ? ok : failed)++;
        if (!s.ok()) {
          EXPECT_TRUE(s.IsIoError()) << s.ToString();
        }
      }
    });
  }
  for (int round = 0; round < 60; round++) {
    switch (round % 6) {
      case 0: dev.FailReads(FaultTrigger::WithProbability(0.5)); break;
      case 1: dev.FailWrites(FaultTrigger::NextN(5), FaultRange{0, 65536}); break;
      case 2: dev.CorruptReads(FaultTrigger::Always(), FaultRange{4096, 100}); break;
      case 3: dev.SetLatency(std::chrono::microseconds(200), 2); break;
      case 4: dev.Vanish(); break;
      case 5: dev.ClearFaults(); break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  stop = true;
  for (auto& t : io) t.join();
  EXPECT_GT(ok.load(), 0);
  EXPECT_GT(failed.load(), 0);
  const auto e = dev.errors().Snapshot();
  EXPECT_EQ(e.read + e.write, static_cast<uint64_t>(failed.load()));
}

// A device with an asynchronous path and a reconnection (as an NBD leaf
// has): a read taken asynchronously is served from memory on the spot.
class AsyncMem final : public BlockDevice {
 public:
  uint64_t Size() const override { return kSize; }
  uint32_t AshiftHint() const override { return 9; }
  const std::string& path() const override { return path_; }
  bool HasAsync() const override { return true; }
  void RetryNow() override { retries++; }
  int started = 0;
  int retries = 0;

 protected:
  Status DoRead(uint64_t, std::span<uint8_t> buf) override {
    std::memset(buf.data(), 's', buf.size());
    return Status::Ok();
  }
  Status DoWrite(uint64_t, std::span<const uint8_t>) override { return Status::Ok(); }
  Status DoFlush() override { return Status::Ok(); }
  bool DoStartAsync(AsyncIo& io) override {
    started++;
    for (auto& p : io.pieces) std::memset(p.data(), 'a', p.size());
    io.done(Status::Ok());
    return true;
  }

 private:
  std::string path_ = "async";
};

TEST(FaultDeviceTest, KeepsTheInnerDevicesAsyncPathAndReconnectionWhileIdle) {
  auto inner = std::make_unique<AsyncMem>();
  AsyncMem* raw = inner.get();
  FaultDevice dev(std::move(inner), FaultDeviceOptions{.volatile_cache = false});  // as pools wrap leaves
  EXPECT_TRUE(dev.HasAsync());
  dev.RetryNow();
  EXPECT_EQ(raw->retries, 1);

  std::vector<uint8_t> buf(4096);
  bool done = false;
  AsyncIo io;
  io.op = IoOp::kRead;
  io.pieces = {std::span<uint8_t>(buf)};
  io.done = [&](Status s) {
    EXPECT_UZFS_OK(s);
    done = true;
  };
  ASSERT_TRUE(dev.StartAsync(io));
  EXPECT_TRUE(done);
  EXPECT_EQ(raw->started, 1);
  EXPECT_EQ(buf[0], 'a');

  // A fault set: the request is not taken, so the caller's synchronous
  // read goes through the fault logic.
  dev.FailReads(FaultTrigger::Always());
  AsyncIo io2;
  io2.op = IoOp::kRead;
  io2.pieces = {std::span<uint8_t>(buf)};
  io2.done = [](Status) { ADD_FAILURE() << "taken while a fault is set"; };
  EXPECT_FALSE(dev.StartAsync(io2));
  EXPECT_EQ(raw->started, 1);
  EXPECT_FALSE(dev.Read(0, buf).ok());
  dev.ClearFaults();
  ASSERT_UZFS_OK(dev.Read(0, buf));
  EXPECT_EQ(buf[0], 's');
}

}  // namespace
}  // namespace uzfs
