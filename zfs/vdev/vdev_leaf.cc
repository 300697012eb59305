// LeafVdev: one BlockDevice as a vdev. Allocatable byte x is device byte
// 4 MiB + x; asize is the device size rounded down to a whole label (256
// KiB) minus the front 4 MiB and back 512 KiB, as OpenZFS computes it (and
// as zfs-fuse's `zdb -l` shows). As a top-level vdev (a plain stripe) it has
// no redundancy: a read that fails to verify is Corruption and counts one
// checksum error on the device. Blocks are padded to whole sectors (1 <<
// ashift) on the device, like every ZFS I/O. Thread-safe (vdev.h).
#include <algorithm>
#include <cstring>

#include "zfs/util/aligned_bytes.h"
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

Status LeafVdev::Read(uint64_t offset, std::span<uint8_t> buf, const BlockVerifier& verify,
                      ReadOutcome* out, ReadMode) {
  if (out) *out = ReadOutcome{};
  const uint64_t padded = AllocatedSize(buf.size());
  if (buf.empty() || offset % (uint64_t{1} << ashift()) != 0 || offset + padded > asize_)
    return Status::InvalidArgument(name() + ": bad block range");
  AlignedBuffer scratch;
  std::span<uint8_t> io_buf = buf;
  if (padded != buf.size()) {
    scratch = AlignedBuffer(padded);
    io_buf = scratch.span();
  }
  ChildIo c{this, IoOp::kRead, offset, io_buf, {}, false};
  RunChildIos({&c, 1});
  if (!c.status.ok()) return c.status;
  if (io_buf.data() != buf.data()) std::memcpy(buf.data(), io_buf.data(), buf.size());
  if (verify && !verify(buf)) {
    dev_->errors().CountChecksumError();
    return Status::Corruption(name() + ": block at " + std::to_string(offset) +
                              " fails its checksum and there is no other copy");
  }
  return Status::Ok();
}

void LeafVdev::ReadMany(std::span<VdevRead> reads) {
  // Blocks that need no padding go in one batch; Read would do the same
  // I/O and the same check, so its results are the batch's.
  std::vector<ChildIo> ios;
  std::vector<VdevRead*> batched;
  static const BlockVerifier kTrusted;
  for (VdevRead& r : reads) {
    const uint64_t padded = AllocatedSize(r.buf.size());
    if (r.buf.empty() || padded != r.buf.size() || r.offset % (uint64_t{1} << ashift()) != 0 ||
        r.offset + padded > asize_) {
      r.status = Read(r.offset, r.buf, r.verify ? *r.verify : kTrusted, nullptr, ReadMode::kNormal);
      continue;
    }
    ios.push_back(ChildIo{this, IoOp::kRead, r.offset, r.buf, {}, false});
    batched.push_back(&r);
  }
  RunChildIos(ios);
  for (size_t i = 0; i < ios.size(); i++) {
    VdevRead& r = *batched[i];
    if (!ios[i].status.ok()) {
      r.status = ios[i].status;
    } else if (r.verify && *r.verify && !(*r.verify)(r.buf)) {
      dev_->errors().CountChecksumError();
      r.status = Status::Corruption(name() + ": block at " + std::to_string(r.offset) +
                                    " fails its checksum and there is no other copy");
    } else {
      r.status = Status::Ok();
    }
  }
}

Status LeafVdev::Write(uint64_t offset, std::span<const uint8_t> buf) {
  if (read_only()) return Status::InvalidArgument(name() + " is read-only");
  const uint64_t padded = AllocatedSize(buf.size());
  if (buf.empty() || offset % (uint64_t{1} << ashift()) != 0 || offset + padded > asize_)
    return Status::InvalidArgument(name() + ": bad block range");
  AlignedBuffer scratch;
  ChildIo c{this, IoOp::kWrite, offset, PaddedWriteBuffer(buf, padded, &scratch), {}, false};
  RunChildIos({&c, 1});
  return c.status;
}

namespace {

// A leaf's writes of one batch: padded copies of the blocks that are not
// whole sectors, and where each block's write sits in the batch.
struct LeafWritePlan : VdevWritePlan {
  std::vector<AlignedBuffer> scratch;
  std::vector<size_t> at;  // index in ios, or SIZE_MAX when settled at once
};

}  // namespace

std::unique_ptr<VdevWritePlan> LeafVdev::StartWrites(std::span<VdevWrite> writes, IoOp op,
                                                     std::vector<ChildIo>* ios) {
  auto plan = std::make_unique<LeafWritePlan>();
  plan->scratch.resize(writes.size());
  plan->at.assign(writes.size(), SIZE_MAX);
  for (size_t i = 0; i < writes.size(); i++) {
    VdevWrite& w = writes[i];
    if (read_only()) {
      w.status = Status::InvalidArgument(name() + " is read-only");
      continue;
    }
    const uint64_t padded = AllocatedSize(w.buf.size());
    if (w.buf.empty() || w.offset % (uint64_t{1} << ashift()) != 0 || w.offset + padded > asize_) {
      w.status = Status::InvalidArgument(name() + ": bad block range");
      continue;
    }
    plan->at[i] = ios->size();
    ios->push_back(ChildIo{this, op, w.offset, PaddedWriteBuffer(w.buf, padded, &plan->scratch[i]), {}, false});
  }
  return plan;
}

void LeafVdev::FinishWrites(VdevWritePlan* plan, std::span<VdevWrite> writes,
                            std::span<const ChildIo> ios) {
  const auto& p = *static_cast<LeafWritePlan*>(plan);
  for (size_t i = 0; i < writes.size(); i++) {
    if (p.at[i] != SIZE_MAX) writes[i].status = ios[p.at[i]].status;
  }
}

// A write, then a flush of this leaf, each through the engine (Vdev's
// default), not one O_DSYNC write. Measured for a log device that is one
// file (docs/PERFORMANCE.md, "Intent log, log devices and sync writes"): an O_DSYNC write
// on the calling thread costs the fewest context switches (7 per fsync
// against 11), but on this loaded machine fsync latency was several times
// worse, inline or through the ring; the plain write + fdatasync path was
// the fastest in every same-moment comparison. Mirrors and raidz still
// write each side or column durable (only the children the block touches
// are synced).
Status LeafVdev::WriteDurable(uint64_t offset, std::span<const uint8_t> buf) {
  return Vdev::WriteDurable(offset, buf);
}

void LeafVdev::AppendFlushes(std::vector<ChildIo>* ios) {
  ios->push_back(ChildIo{this, IoOp::kFlush, 0, {}, {}, false});
}

Status LeafVdev::JudgeFlush(std::span<const ChildIo> ios, size_t* pos) {
  return ios[(*pos)++].status;
}

}  // namespace uzfs
