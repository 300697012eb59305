// RunChildIos runs a lone write, flush or durable write that an fsync
// waits for (issued under IoClass::kSyncWrite) to a file or disk on the
// calling thread, and everything else through the engine's threads. Both
// engines; a device over a real file records which threads its
// synchronous calls ran on (the io_uring engine uses the file's descriptor
// directly, so there an engine-run request makes no call at all).
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "tests/testutil/testutil.h"
#include "zfs/util/aligned_bytes.h"
#include "zfs/util/mutex.h"
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

TEST_P(VdevSyncInline, AnFsyncsWriteAndFlushRunOnTheWaitingThread) {
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
  auto on_me = [&] {
    size_t n = 0;
    for (std::thread::id t : rec->threads()) n += t == me ? 1 : 0;
    return n;
  };
  // A txg's write and flush: the engine's threads.
  ASSERT_UZFS_OK(leaf->Write(0, a));
  ASSERT_UZFS_OK(leaf->Flush());
  EXPECT_EQ(on_me(), 0u);
  // An fsync's durable write (a write, then a flush, on a leaf): here.
  {
    const ScopedIoClass sync(IoClass::kSyncWrite);
    ASSERT_UZFS_OK(leaf->WriteDurable(8192, b));
  }
  EXPECT_EQ(on_me(), 2u);
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

INSTANTIATE_TEST_SUITE_P(Engines, VdevSyncInline,
                         ::testing::Values(IoEngineKind::kThreads, IoEngineKind::kUring),
                         [](const auto& info) { return std::string(IoEngineKindName(info.param)); });

}  // namespace
}  // namespace uzfs
