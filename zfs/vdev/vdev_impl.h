// Private to zfs/vdev/vdev*.cc: the concrete vdev classes, the parallel
// child I/O they share, and the plan a batch (Vdev::Submit) keeps between
// issuing its leaf I/O and settling its requests. Users include vdev.h
// only.
//
// ChildIo / RunChildIos: an interior vdev describes one I/O per child (a
// leaf, an op, an offset in the leaf's allocatable space, a buffer), and
// RunChildIos issues them all at once through the IoEngine and blocks until
// every one has completed, leaving each one's Status in place. Leaves that
// are not usable are not touched (IoError "<path> is OFFLINE"). Buffers that
// a device cannot take as they are (O_DIRECT alignment) go through an aligned
// bounce buffer. After the batch, every leaf that returned IoError is probed
// (vdev.h) and becomes UNAVAIL when the probe fails.
//
// Aggregation: plain writes of one batch that are adjacent on a leaf (each
// ends where the next begins) are issued as one gathered write
// (IoRequest::gather) of at most VdevAggregationLimit() bytes; its outcome
// (success, or the one error) becomes every member's status and the leaf's
// counters see one write. Reads of one batch on a leaf that lie within
// kReadGapLimit of each other are read as one span of at most the same
// limit into a buffer of their own (the gaps are read and dropped), and
// copied out; when a merged read fails, each member is read again on its
// own, so an error reaches only the reads that cover it. Flushes and durable writes
// are never merged, and nothing is merged across batches, so ordering
// between batches (data, then labels and uberblocks, each after a wait)
// is as before. Writes with a bounce buffer merge like any other.
//
// A batch that is one write to a file or disk (NativeFd) issued under a
// sync write (IoClass::kSyncWrite: an fsync waits for it) runs on the
// calling thread (IoEngine::RunOnCaller) instead of through the engine's
// threads; flushes never do (an fdatasync on the calling thread was ten
// times slower on a machine whose CPUs were busy).
// UZFS_SYNC_WRITE_INLINE=0 turns that off.
//
// Threading: RunChildIos blocks the caller (never an engine thread); the
// completion callbacks write only their own ChildIo and a counter under the
// batch's mutex.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "raidz/raidz_map.h"
#include "zfs/util/aligned_bytes.h"
#include "zfs/vdev/vdev.h"

namespace uzfs {

class LeafVdev;
struct RaidzBatchPlan;  // vdev_raidz.cc
struct MirrorBatchPlan;  // vdev_mirror.cc
struct RaidzBlockRead;  // vdev_raidz.cc

struct ChildIo {
  LeafVdev* leaf = nullptr;  // null: no leaf can serve (IoError, not issued)
  IoOp op = IoOp::kRead;
  uint64_t offset = 0;      // in the leaf's allocatable space; unused for flush
  std::span<uint8_t> buf;   // read into / written from (not modified); empty for flush
  Status status;            // the outcome, set by RunChildIos
  bool issued = false;      // reached the device (false: leaf not usable)
  // A write to a further member of the slot the entry before it wrote
  // (AppendSlotWrites): the slot took the block when any of them did.
  bool extra = false;
};

// Child slots (a mirror side, a raidz column's child, a top-level vdev)
// hold a leaf or a replacing / spare vdev of leaves (vdev.h).
// The leaf to read `slot` from: the leaf itself, or the group's first
// member that serves; when none serves, with allow_stale the first usable
// stale one. nullptr when nothing can be read (a leaf that is stale
// without allow_stale, or unusable).
LeafVdev* ReadLeaf(Vdev* slot, bool allow_stale);
// Appends a write of `buf` at `offset` to every member of `slot` (the
// first entry plain, the others `extra`); returns how many.
size_t AppendSlotWrites(Vdev* slot, IoOp op, uint64_t offset, std::span<uint8_t> buf,
                        std::vector<ChildIo>* ios);
// The usable stale leaves of `slot` other than `except` (the resilver's
// targets).
void StaleLeaves(Vdev* slot, const LeafVdev* except, std::vector<LeafVdev*>* out);
// Whether `slot` holds a usable stale leaf (a resilver has work there).
bool HasStaleLeaf(Vdev* slot);
// Whether a slot whose write entries are ios[first, first + count) took
// each block: folds each plain entry with its extras; returns how many
// slots failed, and the first failure.
uint32_t FailedSlots(std::span<const ChildIo> ios, const Status** first);

// Runs every entry in parallel and waits. REQUIRES: not on an engine thread.
void RunChildIos(std::span<ChildIo> ios);

// How one request of a batch stands after StartBatch.
struct BatchSlot {
  enum class How : uint8_t {
    kSettled,  // its status is final (an error found before any I/O)
    kIssued,   // its leaf I/O is ios[first, first + count)
    kAlone,    // a read FinishBatch does by Read, after the batch
  };
  How how = How::kSettled;
  size_t first = 0, count = 0;
};

// What StartBatch hands FinishBatch: each request's slot and scratch
// buffer (a zero-padded copy of a write, or a padded read's landing place);
// kinds add their own (raidz: the column sets).
struct VdevBatchPlan {
  explicit VdevBatchPlan(size_t n) : slots(n), scratch(n) {}
  virtual ~VdevBatchPlan() = default;
  void Issue(size_t i, size_t first, size_t count) {
    slots[i] = BatchSlot{BatchSlot::How::kIssued, first, count};
  }
  void Alone(size_t i) { slots[i].how = BatchSlot::How::kAlone; }
  std::vector<BatchSlot> slots;
  std::vector<AlignedBuffer> scratch;
};

// Settles a kAlone read by the vdev's own Read.
void ReadAlone(Vdev& v, BlockIo& io);
// The leaf op of a write request.
inline IoOp LeafWriteOp(BlockOp op) {
  return op == BlockOp::kWriteDurable ? IoOp::kWriteDurable : IoOp::kWrite;
}

// The bytes a write of `buf` puts on a leaf: buf itself (not modified)
// when it is `padded` bytes, else a zero-padded copy in *scratch.
std::span<uint8_t> PaddedWriteBuffer(std::span<const uint8_t> buf, uint64_t padded,
                                     AlignedBuffer* scratch);

class LeafVdev final : public Vdev {
 public:
  LeafVdev(std::unique_ptr<BlockDevice> dev, IoEngine& io, uint64_t guid, uint32_t ashift);

  std::string name() const override { return dev_->path(); }
  uint64_t asize() const override { return asize_; }
  Status Read(uint64_t offset, std::span<uint8_t> buf, const BlockVerifier& verify,
              ReadOutcome* out, ReadMode mode) override;
  VdevState state() const override { return leaf_state_.load(std::memory_order_acquire); }
  BlockDevice* device() const override { return dev_.get(); }

  IoEngine& io() const { return io_; }
  // Device byte offset of allocatable byte `offset`.
  static uint64_t DeviceOffset(uint64_t offset);
  // Reads 8 KiB at the device's start (and, for a write error, writes them
  // back); on failure an ONLINE leaf becomes UNAVAIL. Returns the probe's
  // status.
  Status Probe(bool write_test);
  // State transitions for the admin calls (vdev.cc).
  void SetState(VdevState s) { leaf_state_.store(s, std::memory_order_release); }
  void AddRepaired(uint64_t bytes) { repaired_bytes_.fetch_add(bytes, std::memory_order_relaxed); }

 protected:
  void AppendFlushes(std::vector<ChildIo>* ios) override;
  Status JudgeFlush(std::span<const ChildIo> ios, size_t* pos) override;
  std::unique_ptr<VdevBatchPlan> StartBatch(std::span<BlockIo* const> reqs,
                                            std::vector<ChildIo>* ios) override;
  void FinishBatch(VdevBatchPlan* plan, std::span<BlockIo* const> reqs,
                   std::span<const ChildIo> ios) override;

 private:
  Status CheckRange(uint64_t offset, uint64_t psize) const;
  const std::unique_ptr<BlockDevice> dev_;
  IoEngine& io_;
  const uint64_t asize_;
};

// A mirror, and the replacing and spare vdevs (kind kReplacing / kSpare),
// which read and write like one: their members are its sides.
class MirrorVdev final : public Vdev {
 public:
  MirrorVdev(std::vector<std::unique_ptr<Vdev>> sides, uint64_t guid, uint32_t ashift,
             VdevKind kind = VdevKind::kMirror);
  bool serves() const override;

  uint64_t asize() const override { return asize_; }
  Status Read(uint64_t offset, std::span<uint8_t> buf, const BlockVerifier& verify,
              ReadOutcome* out, ReadMode mode) override;
  VdevState state() const override;

 protected:
  bool SurvivesLosing(const Vdev* child) const override;
  Status JudgeFlush(std::span<const ChildIo> ios, size_t* pos) override;
  std::unique_ptr<VdevBatchPlan> StartBatch(std::span<BlockIo* const> reqs,
                                            std::vector<ChildIo>* ios) override;
  void FinishBatch(VdevBatchPlan* plan, std::span<BlockIo* const> reqs,
                   std::span<const ChildIo> ios) override;

 private:
  Status CheckRange(uint64_t offset, uint64_t psize) const;
  void FinishScrubs(MirrorBatchPlan* plan, std::span<BlockIo* const> reqs, std::span<const ChildIo> ios);
  // Whether a side holds a stale leaf (a resilver read has work).
  bool TouchesStale() const;
  uint64_t asize_ = 0;
};

class RaidzVdev final : public Vdev {
 public:
  RaidzVdev(std::vector<std::unique_ptr<Vdev>> children, uint32_t nparity, uint64_t guid,
            uint32_t ashift);

  std::string name() const override;
  uint64_t asize() const override { return asize_; }
  uint64_t AllocatedSize(uint64_t psize) const override;
  Status Read(uint64_t offset, std::span<uint8_t> buf, const BlockVerifier& verify,
              ReadOutcome* out, ReadMode mode) override;
  VdevState state() const override;
  bool serves() const override;
  uint32_t nparity() const { return nparity_; }
  raidz::Geometry geometry() const;

 protected:
  bool SurvivesLosing(const Vdev* child) const override;
  Status JudgeFlush(std::span<const ChildIo> ios, size_t* pos) override;
  std::unique_ptr<VdevBatchPlan> StartBatch(std::span<BlockIo* const> reqs,
                                            std::vector<ChildIo>* ios) override;
  void FinishBatch(VdevBatchPlan* plan, std::span<BlockIo* const> reqs,
                   std::span<const ChildIo> ios) override;

 private:
  Result<raidz::RaidzMap> Map(uint64_t offset, uint64_t psize) const;
  // A write's columns (parity generated) into *ios; false with io->status
  // set when it cannot be issued.
  bool StartWrite(BlockIo* io, std::vector<ChildIo>* ios, RaidzBatchPlan* plan, size_t i);
  // A plain read's data columns into *ios; false when it must go alone.
  bool StartRead(BlockIo* io, std::vector<ChildIo>* ios);
  // Read's steps (vdev_raidz.cc).
  Status ReadAndRebuild(RaidzBlockRead& r, uint64_t offset, bool scrub, ReadOutcome* o);
  Status SearchSilentlyWrong(RaidzBlockRead& r, uint64_t offset);
  void RetryStale(RaidzBlockRead& r);
  Result<bool> RebuildWithMissing(RaidzBlockRead& r);
  Status FindWrongParity(RaidzBlockRead& r);
  Status Settle(RaidzBlockRead& r, uint64_t offset, ReadOutcome* o, bool* repair);
  void CountWrong(const RaidzBlockRead& r, ReadOutcome* o);
  void AppendRepairs(const RaidzBlockRead& r, std::vector<ChildIo>* repairs);
  void NoteRepairs(std::span<const ChildIo> repairs, ReadOutcome* o);
  // Whether a column of the block lives in a slot with a stale leaf.
  bool TouchesStale(const raidz::RaidzMap& map) const;
  // A scrub read's every column into *ios (a resilver's: those
  // PlanResilverReads keeps); the rest after the batch.
  bool StartScrub(BlockIo* io, std::vector<ChildIo>* ios, RaidzBatchPlan* plan, size_t i);
  void PlanResilverReads(RaidzBlockRead& r);
  void FinishScrubs(RaidzBatchPlan* plan, std::span<BlockIo* const> reqs, std::span<const ChildIo> ios);

  const uint32_t nparity_;
  uint64_t asize_ = 0;
};

class RootVdev final : public Vdev {
 public:
  RootVdev(std::vector<std::unique_ptr<Vdev>> top_levels, uint64_t guid);

  std::string name() const override { return "root"; }
  uint64_t asize() const override;
  Status Read(uint64_t offset, std::span<uint8_t> buf, const BlockVerifier& verify,
              ReadOutcome* out, ReadMode mode) override;
  VdevState state() const override;

 protected:
  bool SurvivesLosing(const Vdev* child) const override;
  Status JudgeFlush(std::span<const ChildIo> ios, size_t* pos) override;
  // Its own requests (Write on the root): InvalidArgument, no I/O.
  std::unique_ptr<VdevBatchPlan> StartBatch(std::span<BlockIo* const> reqs,
                                            std::vector<ChildIo>* ios) override;
  void FinishBatch(VdevBatchPlan*, std::span<BlockIo* const>, std::span<const ChildIo>) override {}
};

}  // namespace uzfs
