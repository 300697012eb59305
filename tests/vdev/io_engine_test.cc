// IoEngine, both implementations (TEST_P over uring and threads): many
// concurrent mixed requests on files, memory and fault-injecting devices,
// errors reaching callbacks and counters, short reads, chaining from
// callbacks, and shutdown with requests in flight (drain, cancel, refuse,
// destroy) without hangs or use-after-free.
#include "zfs/vdev/io_engine.h"

#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "tests/testutil/testutil.h"
#include "tests/vdev/vdev_test_util.h"
#include "zfs/util/aligned_bytes.h"
#include "zfs/vdev/fault_device.h"
#include "zfs/vdev/file_device.h"
#include "zfs/vdev/mem_device.h"
#include "zfs/util/mutex.h"

namespace uzfs {
namespace {

using std::chrono::milliseconds;

// Counts completions and remembers each request's status; Wait() blocks until
// `expected` have arrived. Every request must complete exactly once.
class Tracker {
 public:
  explicit Tracker(size_t n) : calls_(n), statuses_(n) {}
  std::function<void(Status)> Done(size_t i) {
    return [this, i](Status s) {
      MutexLock l(&mu_);
      calls_[i]++;
      statuses_[i] = std::move(s);
      finished_++;
      cv_.SignalAll();
    };
  }
  void Wait(size_t expected) {
    MutexLock l(&mu_);
    while (finished_ < expected) cv_.Wait(&mu_);
  }
  void ExpectEachCalledOnce() {
    MutexLock l(&mu_);
    for (size_t i = 0; i < calls_.size(); i++) ASSERT_EQ(calls_[i], 1) << "request " << i;
  }
  Status status(size_t i) {
    MutexLock l(&mu_);
    return statuses_[i];
  }

 private:
  Mutex mu_;
  CondVar cv_;
  std::vector<int> calls_ UZFS_GUARDED_BY(mu_);
  std::vector<Status> statuses_ UZFS_GUARDED_BY(mu_);
  size_t finished_ UZFS_GUARDED_BY(mu_) = 0;
};

class IoEngineTest : public ::testing::TestWithParam<IoEngineKind> {
 protected:
  std::unique_ptr<IoEngine> NewEngine(uint32_t depth = 32, uint32_t threads = 8) {
    IoEngineOptions o;
    o.kind = GetParam();
    o.queue_depth = depth;
    o.threads = threads;
    auto e = IoEngine::Create(o);
    if (!e.ok() && e.status().code() == Code::kNotSupported) return nullptr;
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    EXPECT_EQ((*e)->kind(), GetParam());
    return std::move(e).value();
  }
  std::unique_ptr<FileDevice> NewFile(uint64_t size = 8 << 20, const std::string& name = "d0") {
    FileDeviceOptions o;
    o.create_size = size;
    auto f = FileDevice::Open(test::FileIn(dir_, name), o);
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    return std::move(f).value();
  }
  test::TempDir dir_;
};

#define NEW_ENGINE_OR_SKIP(var, ...)                                  \
  auto var = NewEngine(__VA_ARGS__);                                  \
  if (!var) GTEST_SKIP() << "io_uring is not available on this kernel"

// Many writers submit batches of writes at once from several threads, then
// mixed batches of reads and flushes check every block.
void ManyMixedRequests(IoEngine& engine, BlockDevice& dev) {
  constexpr size_t kBlocks = 256;
  constexpr size_t kBlock = 8192;
  std::vector<std::vector<uint8_t>> data(kBlocks);
  for (size_t i = 0; i < kBlocks; i++) data[i] = test::RandomBytes(kBlock, i + 100);

  Tracker writes(kBlocks);
  std::vector<std::thread> submitters;
  for (size_t t = 0; t < 4; t++) {
    submitters.emplace_back([&, t] {
      for (size_t first = t * 64; first < t * 64 + 64; first += 16) {
        std::vector<IoRequest> batch;
        for (size_t i = first; i < first + 16; i++) {
          batch.push_back({&dev, IoOp::kWrite, i * kBlock, data[i], writes.Done(i)});
        }
        engine.Submit(std::move(batch));
      }
    });
  }
  for (auto& t : submitters) t.join();
  writes.Wait(kBlocks);
  writes.ExpectEachCalledOnce();
  for (size_t i = 0; i < kBlocks; i++) ASSERT_UZFS_OK(writes.status(i));

  // Mixed: reads of every block, a flush every 32 requests, and rewrites of
  // a region no read touches.
  std::vector<std::vector<uint8_t>> back(kBlocks, std::vector<uint8_t>(kBlock));
  auto extra = test::RandomBytes(kBlock, 999);
  const size_t n = kBlocks + kBlocks / 32 + 8;
  Tracker mixed(n);
  std::vector<IoRequest> batch;
  size_t k = 0;
  for (size_t i = 0; i < kBlocks; i++) {
    batch.push_back({&dev, IoOp::kRead, i * kBlock, back[i], mixed.Done(k++)});
    if (i % 32 == 31) batch.push_back({&dev, IoOp::kFlush, 0, {}, mixed.Done(k++)});
  }
  for (size_t j = 0; j < 8; j++) {
    batch.push_back({&dev, IoOp::kWrite, (kBlocks + j) * kBlock, extra, mixed.Done(k++)});
  }
  ASSERT_EQ(k, n);
  engine.Submit(std::move(batch));
  mixed.Wait(n);
  mixed.ExpectEachCalledOnce();
  for (size_t i = 0; i < n; i++) ASSERT_UZFS_OK(mixed.status(i));
  for (size_t i = 0; i < kBlocks; i++) ASSERT_EQ(back[i], data[i]) << "block " << i;
  EXPECT_EQ(dev.errors().Snapshot(), DeviceErrorCounts{});
}

TEST_P(IoEngineTest, ManyConcurrentMixedRequestsOnAFile) {
  NEW_ENGINE_OR_SKIP(engine, 16, 8);  // depth below the batch size: requests queue
  auto dev = NewFile();
  ManyMixedRequests(*engine, *dev);
  engine->Shutdown(ShutdownMode::kDrain);
  const IoEngineStats s = engine->stats();
  EXPECT_EQ(s.submitted, s.completed);
  EXPECT_EQ(s.errors, 0u);
  EXPECT_EQ(s.cancelled, 0u);
}

// A submitting thread that exits while its request is in flight (a FUSE or
// ZIO worker going idle): the kernel cancels an exiting task's io_uring
// work (-ECANCELED); the engine must retry it, never fail it.
TEST_P(IoEngineTest, SubmittersThatExitAtOnceLoseNothing) {
  NEW_ENGINE_OR_SKIP(engine, 16, 64);
  auto dev = NewFile();
  constexpr size_t kThreads = 32, kRounds = 10, kBlock = 65536;
  auto data = test::RandomBytes(kBlock, 7);
  for (size_t round = 0; round < kRounds; round++) {
    Tracker t(kThreads);
    std::vector<std::thread> th;
    for (size_t i = 0; i < kThreads; i++) {
      th.emplace_back([&, i] {
        engine->Submit({{dev.get(), IoOp::kWrite, ((round * kThreads + i) % 100) * kBlock, data, t.Done(i)}});
      });  // the thread ends right after submitting
    }
    for (auto& x : th) x.join();
    t.Wait(kThreads);
    for (size_t i = 0; i < kThreads; i++) ASSERT_UZFS_OK(t.status(i));
  }
  engine->Shutdown(ShutdownMode::kDrain);
  EXPECT_EQ(engine->stats().errors, 0u);
}

TEST_P(IoEngineTest, ManyConcurrentMixedRequestsOnMemoryAndFaultDevices) {
  NEW_ENGINE_OR_SKIP(engine);
  auto mem = std::move(MemDevice::Create(8 << 20)).value();
  ManyMixedRequests(*engine, *mem);
  EXPECT_EQ(mem->flush_count(), 8u);
  FaultDevice fault(std::move(MemDevice::Create(8 << 20)).value());
  ManyMixedRequests(*engine, fault);
}

TEST_P(IoEngineTest, FlushThroughTheEngineMakesWritesDurable) {
  NEW_ENGINE_OR_SKIP(engine);
  auto mem = std::move(MemDevice::Create(1 << 20)).value();
  auto a = test::RandomBytes(4096, 1);
  ASSERT_UZFS_OK(SubmitAndWait(*engine, {{mem.get(), IoOp::kWrite, 0, a, {}}}));
  ASSERT_UZFS_OK(SubmitAndWait(*engine, {{mem.get(), IoOp::kFlush, 0, {}, {}}}));
  auto b = test::RandomBytes(4096, 2);
  ASSERT_UZFS_OK(SubmitAndWait(*engine, {{mem.get(), IoOp::kWrite, 0, b, {}}}));
  mem->DropUnflushed();
  std::vector<uint8_t> back(4096);
  ASSERT_UZFS_OK(SubmitAndWait(*engine, {{mem.get(), IoOp::kRead, 0, back, {}}}));
  EXPECT_EQ(back, a);
}

// kWriteDurable: through the ring (RWF_DSYNC) on a file, aligned direct or
// not, and through the device's own WriteDurable on memory (durable in its
// cache model without a flush); a failure counts as a write error.
TEST_P(IoEngineTest, DurableWritesReachTheDeviceAndSurviveAPowerLoss) {
  NEW_ENGINE_OR_SKIP(engine);
  auto file = NewFile();
  AlignedBuffer aligned(8192);
  auto data = test::RandomBytes(8192, 3);
  std::copy(data.begin(), data.end(), aligned.data());
  ASSERT_UZFS_OK(SubmitAndWait(*engine, {{file.get(), IoOp::kWriteDurable, 65536, aligned.span(), {}}}));
  auto odd = test::RandomBytes(700, 4);
  ASSERT_UZFS_OK(SubmitAndWait(*engine, {{file.get(), IoOp::kWriteDurable, 65536 + 8192 + 3, odd, {}}}));
  std::vector<uint8_t> back(8192), back2(odd.size());
  ASSERT_UZFS_OK(file->Read(65536, back));
  ASSERT_UZFS_OK(file->Read(65536 + 8192 + 3, back2));
  EXPECT_EQ(back, data);
  EXPECT_EQ(back2, odd);

  auto mem = std::move(MemDevice::Create(1 << 20)).value();
  ASSERT_UZFS_OK(SubmitAndWait(*engine, {{mem.get(), IoOp::kWriteDurable, 4096, data, {}}}));
  mem->DropUnflushed();
  ASSERT_UZFS_OK(mem->Read(4096, back));
  EXPECT_EQ(back, data);
  EXPECT_EQ(mem->flush_count(), 0u);

  FaultDevice dev(std::move(MemDevice::Create(1 << 20)).value());
  dev.FailFlushes(FaultTrigger::Always());
  EXPECT_TRUE(SubmitAndWait(*engine, {{&dev, IoOp::kWriteDurable, 0, data, {}}}).IsIoError());
  EXPECT_EQ(dev.errors().Snapshot(), (DeviceErrorCounts{0, 1, 0}));
}

TEST_P(IoEngineTest, InjectedErrorsReachCallbacksAndAreCountedOnce) {
  NEW_ENGINE_OR_SKIP(engine);
  FaultDevice dev(std::move(MemDevice::Create(1 << 20)).value());
  dev.FailReads(FaultTrigger::NextN(3));
  constexpr size_t kN = 20;
  std::vector<std::vector<uint8_t>> bufs(kN, std::vector<uint8_t>(4096));
  Tracker t(kN);
  std::vector<IoRequest> batch;
  for (size_t i = 0; i < kN; i++) batch.push_back({&dev, IoOp::kRead, i * 4096, bufs[i], t.Done(i)});
  engine->Submit(std::move(batch));
  t.Wait(kN);
  t.ExpectEachCalledOnce();
  int errors = 0;
  for (size_t i = 0; i < kN; i++) {
    Status s = t.status(i);
    if (!s.ok()) {
      EXPECT_TRUE(s.IsIoError()) << s.ToString();
      errors++;
    }
  }
  EXPECT_EQ(errors, 3);
  EXPECT_EQ(dev.errors().Snapshot(), (DeviceErrorCounts{3, 0, 0}));
  EXPECT_EQ(engine->stats().errors, 3u);
}

TEST_P(IoEngineTest, KernelErrorsNamePathAndOffsetAndAreCounted) {
  NEW_ENGINE_OR_SKIP(engine);
  auto rw = NewFile(1 << 20);
  FileDeviceOptions ro;
  ro.read_only = true;
  ro.exclusive = false;
  auto dev = std::move(FileDevice::Open(rw->path(), ro)).value();
  std::vector<uint8_t> buf(4096, 1);
  Status s = SubmitAndWait(*engine, {{dev.get(), IoOp::kWrite, 65536, buf, {}}});
  EXPECT_TRUE(s.IsIoError()) << s.ToString();
  EXPECT_NE(s.message().find(dev->path()), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("offset 65536"), std::string::npos) << s.ToString();
  EXPECT_EQ(dev->errors().Snapshot(), (DeviceErrorCounts{0, 1, 0}));
}

TEST_P(IoEngineTest, ReadPastAShrunkFileEndsInAnErrorNotAHang) {
  NEW_ENGINE_OR_SKIP(engine);
  auto dev = NewFile(1 << 20);
  auto data = test::RandomBytes(1 << 20, 3);
  ASSERT_UZFS_OK(SubmitAndWait(*engine, {{dev.get(), IoOp::kWrite, 0, data, {}}}));
  ASSERT_EQ(truncate(dev->path().c_str(), 300000), 0);
  std::vector<uint8_t> head(200000), tail(65536);
  // The first read is whole; the second gets a short transfer, retries the
  // remainder, and then hits end of file.
  ASSERT_UZFS_OK(SubmitAndWait(*engine, {{dev.get(), IoOp::kRead, 0, head, {}}}));
  EXPECT_TRUE(std::equal(head.begin(), head.end(), data.begin()));
  Status s = SubmitAndWait(*engine, {{dev.get(), IoOp::kRead, 262144, tail, {}}});
  EXPECT_TRUE(s.IsIoError()) << s.ToString();
  EXPECT_NE(s.message().find("unexpected end of device"), std::string::npos) << s.ToString();
  EXPECT_EQ(dev->errors().Snapshot().read, 1u);
}

TEST_P(IoEngineTest, BadRangeIsInvalidArgumentAndNotCounted) {
  NEW_ENGINE_OR_SKIP(engine);
  auto dev = NewFile(1 << 20);
  std::vector<uint8_t> buf(8192);
  Status s = SubmitAndWait(*engine, {{dev.get(), IoOp::kRead, (1 << 20) - 4096, buf, {}}});
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_EQ(dev->errors().Snapshot(), DeviceErrorCounts{});
}

TEST_P(IoEngineTest, CallbacksMaySubmitMore) {
  NEW_ENGINE_OR_SKIP(engine);
  auto file = NewFile(1 << 20);
  auto mem = std::move(MemDevice::Create(1 << 20)).value();
  constexpr int kSteps = 200;
  std::vector<uint8_t> buf(4096, 0x5A);
  Mutex mu;
  CondVar cv;
  int steps = 0;
  bool failed = false;
  // Alternates file (ring) and memory (pool) devices, so both completion
  // paths submit into each other.
  std::function<void(Status)> next = [&](Status s) {
    int step;
    {
      MutexLock l(&mu);
      if (!s.ok()) failed = true;
      step = ++steps;
      if (step == kSteps) cv.SignalAll();
    }
    if (step < kSteps) {
      BlockDevice* d = step % 2 ? static_cast<BlockDevice*>(mem.get()) : file.get();
      engine->Submit({d, step % 3 ? IoOp::kWrite : IoOp::kRead, (step % 200) * 4096ull, buf, next});
    }
  };
  engine->Submit({file.get(), IoOp::kWrite, 0, buf, next});
  MutexLock l(&mu);
  while (steps < kSteps) cv.Wait(&mu);
  EXPECT_FALSE(failed);
}

TEST_P(IoEngineTest, ShutdownDrainCompletesEveryAcceptedRequest) {
  NEW_ENGINE_OR_SKIP(engine, 8, 4);
  FaultDevice slow(std::move(MemDevice::Create(1 << 20)).value());
  slow.SetLatency(std::chrono::microseconds(300), 4);
  auto file = NewFile(1 << 20);
  constexpr size_t kN = 120;
  std::vector<uint8_t> buf(4096, 1);
  Tracker t(kN);
  std::vector<IoRequest> batch;
  for (size_t i = 0; i < kN; i++) {
    BlockDevice* d = i % 2 ? static_cast<BlockDevice*>(&slow) : file.get();
    batch.push_back({d, IoOp::kWrite, (i % 64) * 4096, buf, t.Done(i)});
  }
  engine->Submit(std::move(batch));
  engine->Shutdown(ShutdownMode::kDrain);
  t.ExpectEachCalledOnce();
  for (size_t i = 0; i < kN; i++) EXPECT_UZFS_OK(t.status(i));
  EXPECT_EQ(engine->stats().completed, kN);
  engine->Shutdown(ShutdownMode::kDrain);  // idempotent
}

TEST_P(IoEngineTest, ShutdownCancelCancelsQueuedRequestsCleanly) {
  NEW_ENGINE_OR_SKIP(engine, 4, 2);
  FaultDevice slow(std::move(MemDevice::Create(1 << 20)).value());
  slow.SetLatency(milliseconds(2), 1);
  auto file = NewFile(4 << 20);
  constexpr size_t kN = 400;
  std::vector<uint8_t> buf(65536, 1);
  Tracker t(kN);
  std::vector<IoRequest> batch;
  for (size_t i = 0; i < kN; i++) {
    BlockDevice* d = i % 2 ? static_cast<BlockDevice*>(&slow) : file.get();
    batch.push_back({d, IoOp::kWrite, (i % 16) * 65536, buf, t.Done(i)});
  }
  const auto start = std::chrono::steady_clock::now();
  engine->Submit(std::move(batch));
  engine->Shutdown(ShutdownMode::kCancel);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(300));  // 200 x 2 ms if drained
  t.ExpectEachCalledOnce();
  size_t cancelled = 0;
  for (size_t i = 0; i < kN; i++) {
    Status s = t.status(i);
    if (s.code() == Code::kBusy) {
      cancelled++;
    } else {
      EXPECT_UZFS_OK(s);
    }
  }
  EXPECT_GT(cancelled, 0u);  // the slow device's queue cannot have drained
  EXPECT_EQ(engine->stats().cancelled, cancelled);
  EXPECT_EQ(slow.errors().Snapshot(), DeviceErrorCounts{});  // cancels are not device errors
}

TEST_P(IoEngineTest, SubmitAfterShutdownIsRefusedWithBusy) {
  NEW_ENGINE_OR_SKIP(engine);
  auto file = NewFile(1 << 20);
  engine->Shutdown(ShutdownMode::kDrain);
  std::vector<uint8_t> buf(4096);
  Status s = SubmitAndWait(*engine, {{file.get(), IoOp::kRead, 0, buf, {}},
                                     {file.get(), IoOp::kFlush, 0, {}, {}}});
  EXPECT_EQ(s.code(), Code::kBusy) << s.ToString();
  EXPECT_EQ(engine->stats().cancelled, 2u);
}

TEST_P(IoEngineTest, RunOnCallerCompletesOnTheCallingThreadAndStopsAtShutdown) {
  NEW_ENGINE_OR_SKIP(engine);
  auto file = NewFile(1 << 20);
  const std::vector<uint8_t> data = test::RandomBytes(8192, 41);
  std::vector<uint8_t> back(8192);
  // A durable write, a write, a flush and a read: each done before
  // RunOnCaller returns, on this thread, and counted.
  std::vector<std::thread::id> ran;
  std::vector<Status> got;
  auto done = [&](Status s) {
    ran.push_back(std::this_thread::get_id());
    got.push_back(std::move(s));
  };
  engine->RunOnCaller({file.get(), IoOp::kWriteDurable, 0, std::span<uint8_t>(const_cast<uint8_t*>(data.data()), 4096), done});
  engine->RunOnCaller({file.get(), IoOp::kWrite, 4096, std::span<uint8_t>(const_cast<uint8_t*>(data.data()) + 4096, 4096), done});
  engine->RunOnCaller({file.get(), IoOp::kFlush, 0, {}, done});
  engine->RunOnCaller({file.get(), IoOp::kRead, 0, back, done});
  ASSERT_EQ(got.size(), 4u);
  for (size_t i = 0; i < got.size(); i++) {
    EXPECT_UZFS_OK(got[i]);
    EXPECT_EQ(ran[i], std::this_thread::get_id());
  }
  EXPECT_EQ(back, data);
  // A bad range is the device's error, counted as the engine's.
  std::vector<uint8_t> past(4096);
  engine->RunOnCaller({file.get(), IoOp::kRead, 1 << 20, past, done});
  ASSERT_EQ(got.size(), 5u);
  EXPECT_FALSE(got[4].ok());
  EXPECT_EQ(engine->stats().submitted, 5u);
  EXPECT_EQ(engine->stats().completed, 5u);
  EXPECT_EQ(engine->stats().errors, 1u);
  // After Shutdown: Busy, and the device is not touched.
  engine->Shutdown(ShutdownMode::kDrain);
  const std::vector<uint8_t> other = test::RandomBytes(4096, 42);
  engine->RunOnCaller({file.get(), IoOp::kWrite, 0, std::span<uint8_t>(const_cast<uint8_t*>(other.data()), 4096), done});
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[5].code(), Code::kBusy) << got[5].ToString();
  EXPECT_EQ(engine->stats().cancelled, 1u);
  std::vector<uint8_t> still(4096);
  ASSERT_UZFS_OK(file->Read(0, still));
  EXPECT_TRUE(std::equal(still.begin(), still.end(), data.begin()));
}

TEST_P(IoEngineTest, DestroyingTheEngineWithRequestsInFlightIsSafe) {
  // Callbacks touch state owned by the test; ASan/TSan catch any callback
  // that runs after the engine (or this state) is gone.
  auto file = NewFile(4 << 20);
  auto mem = std::move(MemDevice::Create(4 << 20)).value();
  for (int round = 0; round < 5; round++) {
    auto counter = std::make_shared<std::atomic<int>>(0);
    constexpr int kN = 200;
    std::vector<uint8_t> wbuf(16384, 2);
    std::vector<std::vector<uint8_t>> rbufs(kN, std::vector<uint8_t>(16384));
    {
      NEW_ENGINE_OR_SKIP(engine, 8, 2);
      std::vector<IoRequest> batch;
      for (int i = 0; i < kN; i++) {
        BlockDevice* d = i % 2 ? static_cast<BlockDevice*>(mem.get()) : file.get();
        const bool write = i % 3 != 0;
        batch.push_back({d, write ? IoOp::kWrite : IoOp::kRead, (i % 200) * 16384ull,
                         write ? std::span<uint8_t>(wbuf) : std::span<uint8_t>(rbufs[i]),
                         [counter](Status) { (*counter)++; }});
      }
      engine->Submit(std::move(batch));
    }  // destructor drains
    EXPECT_EQ(counter->load(), kN);
  }
}

TEST_P(IoEngineTest, SubmitAndWaitReturnsTheFirstError) {
  NEW_ENGINE_OR_SKIP(engine);
  FaultDevice dev(std::move(MemDevice::Create(1 << 20)).value());
  std::vector<uint8_t> buf(4096);
  ASSERT_UZFS_OK(SubmitAndWait(*engine, {}));
  dev.Vanish();
  Status s = SubmitAndWait(*engine, {{&dev, IoOp::kRead, 0, buf, {}}, {&dev, IoOp::kFlush, 0, {}, {}}});
  EXPECT_TRUE(s.IsIoError()) << s.ToString();
  EXPECT_EQ(dev.errors().Snapshot(), (DeviceErrorCounts{1, 1, 0}));
}

INSTANTIATE_TEST_SUITE_P(Engines, IoEngineTest,
                         ::testing::Values(IoEngineKind::kUring, IoEngineKind::kThreads),
                         [](const auto& info) { return std::string(IoEngineKindName(info.param)); });

TEST(IoEngineCreateTest, EnvironmentChoosesTheEngine) {
  const char* old = getenv("UZFS_IO_ENGINE");
  const std::string saved = old ? old : "";
  setenv("UZFS_IO_ENGINE", "threads", 1);
  auto e = IoEngine::Create();
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ((*e)->kind(), IoEngineKind::kThreads);
  EXPECT_EQ((*e)->name(), "threads");

  setenv("UZFS_IO_ENGINE", "bogus", 1);
  EXPECT_EQ(IoEngine::Create().status().code(), Code::kInvalidArgument);

  unsetenv("UZFS_IO_ENGINE");
  auto a = IoEngine::Create();  // auto: io_uring where the kernel allows it
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  const bool uring_works = IoEngine::Create({IoEngineKind::kUring}).ok();
  EXPECT_EQ((*a)->kind(), uring_works ? IoEngineKind::kUring : IoEngineKind::kThreads);

  IoEngineOptions bad;
  bad.threads = 0;
  EXPECT_EQ(IoEngine::Create(bad).status().code(), Code::kInvalidArgument);
  if (old) setenv("UZFS_IO_ENGINE", saved.c_str(), 1);
}

}  // namespace
}  // namespace uzfs
