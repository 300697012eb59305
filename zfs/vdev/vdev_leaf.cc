// LeafVdev: one BlockDevice as a vdev. Allocatable byte x is device byte
// 4 MiB + x; asize is the device size rounded down to a whole label (256
// KiB) minus the front 4 MiB and back 512 KiB, as OpenZFS computes it (and
// as zfs-fuse's `zdb -l` shows). As a top-level vdev (a plain stripe) it has
// no redundancy: a read that fails to verify is Corruption and counts one
// checksum error on the device. Blocks are padded to whole sectors (1 <<
// ashift) on the device, like every ZFS I/O. Every read and write, a
// lone one included, is a batch (Vdev::Submit): one leaf I/O per block.
// Thread-safe (vdev.h).
#include <algorithm>
#include <cstring>

#include "zfs/util/aligned_bytes.h"
#include "zfs/util/probes.h"
#include "zfs/vdev/vdev_impl.h"

namespace uzfs {

LeafVdev::LeafVdev(std::unique_ptr<BlockDevice> dev, IoEngine& io, uint64_t guid,
                   uint32_t ashift)
    : Vdev(VdevKind::kLeaf, guid, ashift), dev_(std::move(dev)), io_(io),
      asize_(LeafAsize(dev_->Size())) {}

uint64_t LeafVdev::DeviceOffset(uint64_t offset) { return kLeafFrontReserve + offset; }

Status LeafVdev::Probe(bool write_test) {
  AlignedBuffer buf(8192, std::max<uint32_t>(4096, dev_->RequiredAlignment()));
  Status s = dev_->CheckIdentity();
  if (s.ok()) s = dev_->Read(0, buf.span());
  // The first 8 KiB of label 0 are blank padding; rewriting what was read
  // there tests the write path without changing anything.
  if (s.ok() && write_test) s = dev_->Write(0, buf.span());
  if (!s.ok()) {
    VdevState expected = VdevState::kOnline;
    leaf_state_.compare_exchange_strong(expected, VdevState::kUnavail,
                                        std::memory_order_acq_rel);
  }
  return s;
}

Status LeafVdev::CheckRange(uint64_t offset, uint64_t psize) const {
  if (psize == 0 || offset % (uint64_t{1} << ashift()) != 0 || offset + AllocatedSize(psize) > asize_)
    return Status::InvalidArgument(name() + ": bad block range");
  return Status::Ok();
}

// A batch of one: a leaf has no redundancy to escalate to.
Status LeafVdev::Read(uint64_t offset, std::span<uint8_t> buf, const BlockVerifier& verify,
                      ReadOutcome* out, ReadMode mode) {
  BlockIo io = BlockIo::Read(id(), offset, buf, &verify, mode);
  RunOne(&io);
  if (out) *out = std::move(io.outcome);
  return io.status;
}

// Every request is one leaf I/O: a write of its (zero-padded) sectors, a
// read into the caller's buffer or, for a block that is not whole sectors,
// into a padded scratch buffer. A durable write is a plain write here and
// a flush of the device after the batch (see FinishBatch).
std::unique_ptr<VdevBatchPlan> LeafVdev::StartBatch(std::span<BlockIo* const> reqs,
                                                    std::vector<ChildIo>* ios) {
  auto plan = std::make_unique<VdevBatchPlan>(reqs.size());
  for (size_t i = 0; i < reqs.size(); i++) {
    BlockIo& r = *reqs[i];
    if (r.is_read()) r.outcome = ReadOutcome{};
    if (r.is_read() && r.mode == ReadMode::kResilver && !stale()) {
      r.outcome.untouched = true;  // nothing to fill here
      r.status = Status::Ok();
      continue;
    }
    if (!r.is_read() && read_only()) {
      r.status = Status::InvalidArgument(name() + " is read-only");
      continue;
    }
    if (Status s = CheckRange(r.offset, r.buf.size()); !s.ok()) {
      r.status = std::move(s);
      continue;
    }
    const uint64_t padded = AllocatedSize(r.buf.size());
    std::span<uint8_t> io_buf = r.buf;
    if (!r.is_read()) {
      io_buf = PaddedWriteBuffer(r.buf, padded, &plan->scratch[i]);
    } else if (padded != r.buf.size()) {
      plan->scratch[i] = AlignedBuffer(padded);
      io_buf = plan->scratch[i].span();
    }
    plan->Issue(i, ios->size(), 1);
    ios->push_back(ChildIo{this, r.is_read() ? IoOp::kRead : IoOp::kWrite, r.offset, io_buf, {}, false});
  }
  return plan;
}

void LeafVdev::FinishBatch(VdevBatchPlan* plan, std::span<BlockIo* const> reqs,
                           std::span<const ChildIo> ios) {
  bool flush = false;
  for (size_t i = 0; i < reqs.size(); i++) {
    const BatchSlot& slot = plan->slots[i];
    if (slot.how != BatchSlot::How::kIssued) continue;
    BlockIo& r = *reqs[i];
    r.status = ios[slot.first].status;
    if (!r.status.ok()) continue;
    if (r.op == BlockOp::kWriteDurable) flush = true;
    if (!r.is_read()) continue;
    if (plan->scratch[i].data() != nullptr) std::memcpy(r.buf.data(), plan->scratch[i].data(), r.buf.size());
    if (const BlockVerifier* v = r.verifier(); v != nullptr && !(*v)(r.buf)) {
      dev_->errors().CountChecksumError();
      UZFS_PROBE(checksum_error, guid(), r.offset, int64_t{-1}, int64_t{-1}, int64_t{-1}, int64_t{-1});
      r.status = Status::Corruption(name() + ": block at " + std::to_string(r.offset) +
                                    " fails its checksum and there is no other copy");
    }
  }
  if (!flush) return;
  // The durable writes that landed, then one flush of this leaf, not one
  // O_DSYNC write each: for a log device that is one file
  // (docs/PERFORMANCE.md, "Intent log, log devices and sync writes"), an
  // O_DSYNC write measured several times worse fsync latency on a loaded
  // machine than a plain write and fdatasync. Under a sync write, on a file
  // or disk with no fault armed, the write runs on the calling thread
  // (RunChildIos, unless UZFS_SYNC_WRITE_INLINE=0) and the flush through
  // the engine. Mirrors and raidz still write each side or column durable
  // (only the children the block touches are synced).
  const Status flushed = Flush();
  for (size_t i = 0; i < reqs.size(); i++) {
    BlockIo& r = *reqs[i];
    if (plan->slots[i].how == BatchSlot::How::kIssued && r.op == BlockOp::kWriteDurable && r.status.ok())
      r.status = flushed;
  }
}

void LeafVdev::AppendFlushes(std::vector<ChildIo>* ios) {
  ios->push_back(ChildIo{this, IoOp::kFlush, 0, {}, {}, false});
}

// By pointer, not only by position: a replace or attach may have changed
// the tree between AppendFlushes and here. A leaf that joined meanwhile
// held none of the data the flush is for.
Status LeafVdev::JudgeFlush(std::span<const ChildIo> ios, size_t* pos) {
  if (*pos < ios.size() && ios[*pos].leaf == this) return ios[(*pos)++].status;
  for (const ChildIo& c : ios) {
    if (c.leaf == this) return c.status;
  }
  return Status::Ok();
}

}  // namespace uzfs
