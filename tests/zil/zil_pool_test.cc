// The intent log on a real vdev tree: a raidz1 of three in-memory devices
// with volatile write caches, the metaslab allocator, Vdev::Flush as the
// commit's flush. What Commit acknowledged survives a power cut; what it
// did not is cut off cleanly; silent damage on one device is read around
// through raidz with the log block's own check as the verifier.
#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"
#include "zfs/spa/allocator.h"
#include "zfs/vdev/fault_device.h"
#include "zfs/vdev/io_engine.h"
#include "zfs/vdev/mem_device.h"
#include "zfs/vdev/vdev.h"
#include "zfs/zil/zil_reader.h"
#include "zfs/zil/zil_writer.h"
#include "zfs/zio/spa_allocator.h"
#include "zfs/zio/vdev_target.h"

namespace uzfs {
namespace {

constexpr uint64_t kDevSize = 128ull << 20;

class ZilPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    io_ = std::move(IoEngine::Create()).value();
    std::vector<std::unique_ptr<Vdev>> rz;
    for (int i = 0; i < 3; i++) {
      MemDeviceOptions o;
      o.volatile_cache = false;
      auto fd = std::make_unique<FaultDevice>(std::move(MemDevice::Create(kDevSize, o)).value());
      faults_.push_back(fd.get());
      rz.push_back(MakeLeafVdev(std::move(fd), *io_, 100 + i, 12));
    }
    std::vector<std::unique_ptr<Vdev>> tops;
    tops.push_back(std::move(MakeRaidzVdev(std::move(rz), 1, 1, 12)).value());
    root_ = std::move(MakeRootVdev(std::move(tops))).value();
    Vdev* top = root_->child(0);
    std::vector<TopVdevSpace> spaces{
        TopVdevSpace{0, top->asize(), top->ashift(), [top](uint64_t p) { return top->AllocatedSize(p); }, 0}};
    alloc_ = std::move(Allocator::Create(spaces, AllocatorOptions{})).value();
    target_ = std::make_unique<VdevTreeTarget>(*root_);
    shim_ = std::make_unique<SpaAllocator>(*alloc_);
    zil_alloc_ = std::make_unique<ZioZilBlockAllocator>(*shim_);
    ZilWriterOptions o;
    o.objset_id = 21;
    writer_ = std::make_unique<ZilWriter>(*target_, *zil_alloc_, [this] { return root_->Flush(); }, o);
  }
  void TearDown() override {
    writer_.reset();
    root_.reset();
  }

  // Appends n creates (names from `first`) and commits them.
  Status AppendAndCommit(int first, int n) {
    uint64_t t = 0;
    for (int i = first; i < first + n; i++) {
      LogRecord r;
      r.txtype = static_cast<uint64_t>(TxType::kCreate);
      r.txg = 5;
      LrCreate c;
      c.doid = 3;
      c.foid = 100 + i;
      c.mode = 0100644;
      c.name = "file-" + std::to_string(i);
      r.body = c;
      auto tk = writer_->Append(std::move(r));
      if (!tk.ok()) return tk.status();
      t = *tk;
    }
    return writer_->Commit(t);
  }

  std::vector<std::string> Names(const ZilHeader& zh, ZilWalkResult* res) {
    std::vector<std::string> names;
    ZilReader reader(*target_);
    auto r = reader.Walk(zh, ZilWalkOptions{}, nullptr, [&](const LogRecord& rec) {
      names.push_back(std::get<LrCreate>(rec.body).name);
      return Status::Ok();
    });
    EXPECT_TRUE(r.ok()) << r.status().ToString(true);
    if (r.ok() && res) *res = *r;
    return names;
  }

  std::unique_ptr<IoEngine> io_;
  std::vector<FaultDevice*> faults_;
  std::unique_ptr<Vdev> root_;
  std::unique_ptr<Allocator> alloc_;
  std::unique_ptr<VdevTreeTarget> target_;
  std::unique_ptr<SpaAllocator> shim_;
  std::unique_ptr<ZioZilBlockAllocator> zil_alloc_;
  std::unique_ptr<ZilWriter> writer_;
};

TEST_F(ZilPoolTest, CommittedRecordsSurviveAPowerCut) {
  auto zh = writer_->Create(5);
  ASSERT_TRUE(zh.ok()) << zh.status().ToString(true);
  for (int b = 0; b < 3; b++) ASSERT_UZFS_OK(AppendAndCommit(10 * b, 10));
  // The fourth batch is written but its flush fails: not acknowledged.
  for (FaultDevice* f : faults_) f->FailFlushes(FaultTrigger::Always());
  EXPECT_FALSE(AppendAndCommit(30, 10).ok());
  for (FaultDevice* f : faults_) {
    f->ClearFaults();
    ASSERT_UZFS_OK(f->DropUnflushed());  // power cut
  }
  ZilWalkResult res;
  std::vector<std::string> names = Names(*zh, &res);
  ASSERT_EQ(names.size(), 30u);
  EXPECT_EQ(names.front(), "file-0");
  EXPECT_EQ(names.back(), "file-29");
  EXPECT_EQ(res.end, ZilEnd::kChecksum) << res.detail;
  EXPECT_EQ(res.blocks, 3u);
}

TEST_F(ZilPoolTest, SilentDamageOnOneDeviceIsReadAround) {
  auto zh = writer_->Create(5);
  ASSERT_TRUE(zh.ok());
  for (int b = 0; b < 4; b++) ASSERT_UZFS_OK(AppendAndCommit(25 * b, 25));
  faults_[1]->CorruptReads(FaultTrigger::Always(), FaultRange{}, 0x20);
  ZilWalkResult res;
  std::vector<std::string> names = Names(*zh, &res);
  ASSERT_EQ(names.size(), 100u);
  EXPECT_EQ(names[99], "file-99");
  EXPECT_EQ(res.end, ZilEnd::kChecksum);
  // Two damaged devices of a raidz1: the block that cannot be rebuilt ends
  // the log there (no records invented, no error).
  faults_[2]->CorruptReads(FaultTrigger::Always(), FaultRange{}, 0x20);
  names = Names(*zh, &res);
  EXPECT_LT(names.size(), 100u);
  EXPECT_EQ(res.end, ZilEnd::kChecksum);
}

// With a log device of one leaf and the pool's write_durable path (a
// batch of one block is one Vdev::WriteDurable, no flush after it): what
// Commit acknowledged survives a power cut on every device — lone blocks
// and a big batch (several blocks, written then flushed) alike; a durable
// write the device fails (here its flush part) is not acknowledged and
// the log ends cleanly before it.
TEST_F(ZilPoolTest, SlogDurableWritesSurviveAPowerCut) {
  MemDeviceOptions mo;
  mo.volatile_cache = false;
  auto fd = std::make_unique<FaultDevice>(std::move(MemDevice::Create(kDevSize, mo)).value());
  FaultDevice* slog = fd.get();
  ASSERT_UZFS_OK(root_->AddTopLevel(MakeLeafVdev(std::move(fd), *io_, 200, 12)));
  Vdev* top = root_->child(1);
  auto log_alloc = std::move(Allocator::Create({TopVdevSpace{1, top->asize(), top->ashift(), nullptr, 0}},
                                               AllocatorOptions{}))
                       .value();
  SpaAllocator shim(*log_alloc);
  ZioZilBlockAllocator za(shim);
  int flushes = 0;
  ZilWriterOptions o;
  o.objset_id = 21;
  o.write_durable = [this](uint32_t v, uint64_t off, std::span<const uint8_t> buf) {
    return root_->child(v)->WriteDurable(off, buf);
  };
  o.flush_vdevs = [&](const std::vector<uint32_t>& vs) {
    flushes++;
    for (uint32_t v : vs) UZFS_RETURN_IF_ERROR(root_->child(v)->Flush());
    return Status::Ok();
  };
  writer_ = std::make_unique<ZilWriter>(*target_, za, nullptr, o);
  auto zh = writer_->Create(5);
  ASSERT_TRUE(zh.ok()) << zh.status().ToString(true);
  ASSERT_EQ(zh->log.dva[0].vdev, 1u);
  for (int b = 0; b < 5; b++) ASSERT_UZFS_OK(AppendAndCommit(10 * b, 10));
  EXPECT_EQ(flushes, 0);
  EXPECT_EQ(writer_->stats().durable_writes.load(), 5u);
  ASSERT_UZFS_OK(AppendAndCommit(50, 400));  // several blocks: written, then flushed
  EXPECT_EQ(flushes, 1);
  ASSERT_UZFS_OK(AppendAndCommit(450, 10));
  slog->FailFlushes(FaultTrigger::Always());
  EXPECT_FALSE(AppendAndCommit(460, 10).ok());
  for (FaultDevice* f : faults_) ASSERT_UZFS_OK(f->DropUnflushed());  // power cut
  slog->ClearFaults();
  ASSERT_UZFS_OK(slog->DropUnflushed());
  ZilWalkResult res;
  std::vector<std::string> names = Names(*zh, &res);
  ASSERT_EQ(names.size(), 460u);
  EXPECT_EQ(names.back(), "file-459");
  EXPECT_EQ(res.end, ZilEnd::kChecksum) << res.detail;
}

}  // namespace
}  // namespace uzfs
