// RunChildIos runs a lone write that an fsync waits for (issued under
// IoClass::kSyncWrite) to a file or disk on the calling thread, and
// everything else (the flush after it too) through the engine's threads. Both
// engines; a device over a real file records which threads its
// synchronous calls ran on (the io_uring engine uses the file's descriptor
// directly, so there an engine-run request makes no call at all); a leaf
// with a fault armed, and a batch of several requests, stay on the engine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tests/testutil/testutil.h"
#include "zfs/util/aligned_bytes.h"
#include "zfs/util/mutex.h"
#include "zfs/vdev/fault_device.h"
#include "zfs/vdev/file_device.h"
#include "zfs/vdev/io_engine.h"
#include "zfs/vdev/vdev.h"
#include "zfs/vdev/vdev_io_stats.h"

namespace uzfs {
namespace {

// A FileDevice that offers the file's descriptor as its own and notes the
// thread of every synchronous write and flush.
class RecordingDevice final : public BlockDevice {
 public:
  explicit RecordingDevice(std::unique_ptr<FileDevice> inner) : inner_(std::move(inner)) {}
  uint64_t Size() const override { return inner_->Size(); }
  uint32_t AshiftHint() const override { return inner_->AshiftHint(); }
  const std::string& path() const override { return inner_->path(); }
  int NativeFd() const override { return inner_->NativeFd(); }
  int NativeFdFor(IoOp op, uint64_t offset, uint64_t len, const void* buf) const override {
    return inner_->NativeFdFor(op, offset, len, buf);
  }
  uint32_t RequiredAlignment() const override { return inner_->RequiredAlignment(); }
  std::vector<std::thread::id> threads() UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    return threads_;
  }

 protected:
  Status DoRead(uint64_t offset, std::span<uint8_t> buf) override { return inner_->Read(offset, buf); }
  Status DoWrite(uint64_t offset, std::span<const uint8_t> buf) override {
    Note();
    return inner_->Write(offset, buf);
  }
  Status DoFlush() override {
    Note();
    return inner_->Flush();
  }
  Status DoWriteDurable(uint64_t offset, std::span<const uint8_t> buf) override {
    Note();
    return inner_->WriteDurable(offset, buf);
  }

 private:
  void Note() UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    threads_.push_back(std::this_thread::get_id());
  }
  std::unique_ptr<FileDevice> inner_;
  Mutex mu_;
  std::vector<std::thread::id> threads_ UZFS_GUARDED_BY(mu_);
};

class VdevSyncInline : public ::testing::TestWithParam<IoEngineKind> {};

TEST_P(VdevSyncInline, AnFsyncsWriteRunsOnTheWaitingThreadAndItsFlushOnTheEngine) {
  auto engine = IoEngine::Create({GetParam(), 32, 4});
  if (!engine.ok() && engine.status().code() == Code::kNotSupported) GTEST_SKIP() << "no io_uring here";
  ASSERT_UZFS_OK(engine.status());
  test::TempDir dir;
  FileDeviceOptions fo;
  fo.create_size = 64ull << 20;
  auto file = FileDevice::Open((dir.path() / "d").string(), fo);
  ASSERT_UZFS_OK(file.status());
  auto dev = std::make_unique<RecordingDevice>(std::move(file).value());
  RecordingDevice* rec = dev.get();
  std::unique_ptr<Vdev> leaf = MakeLeafVdev(std::move(dev), **engine, 7, 12);
  // Aligned, so the io_uring engine takes them to the descriptor itself.
  AlignedBytes a(8192), b(8192);
  const std::vector<uint8_t> ra = test::RandomBytes(8192, 1), rb = test::RandomBytes(8192, 2);
  std::copy(ra.begin(), ra.end(), a.data());
  std::copy(rb.begin(), rb.end(), b.data());
  const std::thread::id me = std::this_thread::get_id();
  // UZFS_SYNC_WRITE_INLINE=0 in the environment sends everything through
  // the engine.
  const char* env = std::getenv("UZFS_SYNC_WRITE_INLINE");
  const bool inline_on = env == nullptr || std::string(env) != "0";
  auto on_me = [&] {
    size_t n = 0;
    for (std::thread::id t : rec->threads()) n += t == me ? 1 : 0;
    return n;
  };
  // A txg's write and flush: the engine's threads.
  ASSERT_UZFS_OK(leaf->Write(0, a));
  ASSERT_UZFS_OK(leaf->Flush());
  EXPECT_EQ(on_me(), 0u);
  // An fsync's durable write (a write, then a flush, on a leaf): the
  // write here, the flush on the engine.
  {
    const ScopedIoClass sync(IoClass::kSyncWrite);
    ASSERT_UZFS_OK(leaf->WriteDurable(8192, b));
  }
  EXPECT_EQ(on_me(), inline_on ? 1u : 0u);
  // Everything landed, and is counted as the leaf's I/O.
  std::vector<uint8_t> back(16384);
  ASSERT_UZFS_OK(leaf->Read(0, back, BlockVerifier{}));
  EXPECT_TRUE(std::equal(ra.begin(), ra.end(), back.begin()));
  EXPECT_TRUE(std::equal(rb.begin(), rb.end(), back.begin() + 8192));
  IoStatsSnapshot s = leaf->io_stats();
  uint64_t sync_writes = 0;
  for (uint64_t n : s.size_ind[static_cast<size_t>(IoClass::kSyncWrite)]) sync_writes += n;
  EXPECT_EQ(sync_writes, 1u);
  EXPECT_EQ((*engine)->stats().completed, (*engine)->stats().submitted);
}

// The same fsync's write goes through the engine when the leaf has
// a fault armed (every I/O must pass the fault logic), and when the batch
// is not one request (a two-sided mirror: both sides at once).
TEST_P(VdevSyncInline, ArmedFaultsAndSeveralRequestsStayOnTheEngine) {
  auto engine = IoEngine::Create({GetParam(), 32, 4});
  if (!engine.ok() && engine.status().code() == Code::kNotSupported) GTEST_SKIP() << "no io_uring here";
  ASSERT_UZFS_OK(engine.status());
  test::TempDir dir;
  std::vector<RecordingDevice*> recs;
  std::vector<FaultDevice*> faults;
  auto leaf_on = [&](const std::string& name) {
    FileDeviceOptions fo;
    fo.create_size = 64ull << 20;
    auto file = FileDevice::Open((dir.path() / name).string(), fo);
    EXPECT_UZFS_OK(file.status());
    auto dev = std::make_unique<RecordingDevice>(std::move(file).value());
    recs.push_back(dev.get());
    FaultDeviceOptions o;
    o.volatile_cache = false;  // as the daemon wraps its leaves
    auto f = std::make_unique<FaultDevice>(std::move(dev), o);
    faults.push_back(f.get());
    return MakeLeafVdev(std::move(f), **engine, 10 + recs.size(), 12);
  };
  AlignedBytes a(8192);
  const std::vector<uint8_t> ra = test::RandomBytes(8192, 3);
  std::copy(ra.begin(), ra.end(), a.data());
  const std::thread::id me = std::this_thread::get_id();
  auto on_me = [&](RecordingDevice* rec) {
    size_t n = 0;
    for (std::thread::id t : rec->threads()) n += t == me ? 1 : 0;
    return n;
  };
  const ScopedIoClass sync(IoClass::kSyncWrite);
  // A fault armed (reads that never fail still arm it).
  std::unique_ptr<Vdev> armed = leaf_on("armed");
  faults[0]->FailReads(FaultTrigger::NextN(1000), FaultRange{60ull << 20, 4096});
  ASSERT_UZFS_OK(armed->WriteDurable(0, a));
  EXPECT_EQ(recs[0]->threads().size(), 2u);  // the write and the flush, on the engine
  EXPECT_EQ(on_me(recs[0]), 0u);
  // A mirror of two such leaves, no fault armed: two writes per batch.
  std::vector<std::unique_ptr<Vdev>> sides;
  sides.push_back(leaf_on("m0"));
  sides.push_back(leaf_on("m1"));
  auto mirror = MakeMirrorVdev(std::move(sides), 20, 12);
  ASSERT_UZFS_OK(mirror.status());
  ASSERT_UZFS_OK((*mirror)->WriteDurable(0, a));
  EXPECT_EQ(on_me(recs[1]) + on_me(recs[2]), 0u);
  EXPECT_EQ((*engine)->stats().completed, (*engine)->stats().submitted);
}

INSTANTIATE_TEST_SUITE_P(Engines, VdevSyncInline,
                         ::testing::Values(IoEngineKind::kThreads, IoEngineKind::kUring),
                         [](const auto& info) { return std::string(IoEngineKindName(info.param)); });

}  // namespace
}  // namespace uzfs
