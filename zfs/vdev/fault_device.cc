// FaultDevice (see fault_device.h). Every I/O: count it, take a lane and
// sleep the latency (if set), decide its fate under mu_, then either fail
// it, or pass it to the inner device (saving pre-images for the cache model
// first) and corrupt what a read returns.
#include "zfs/vdev/fault_device.h"

#include <cerrno>
#include <thread>

namespace uzfs {
namespace {

bool Overlaps(const FaultRange& r, uint64_t offset, uint64_t len) {
  if (len == 0) return offset >= r.offset && offset - r.offset < r.length;
  const uint64_t r_end = r.length > UINT64_MAX - r.offset ? UINT64_MAX : r.offset + r.length;
  return offset < r_end && offset + len > r.offset;
}

}  // namespace

FaultDevice::FaultDevice(std::unique_ptr<BlockDevice> inner, const FaultDeviceOptions& opts)
    : inner_(std::move(inner)),
      volatile_cache_(opts.volatile_cache),
      rng_(opts.seed * 0x9E3779B97F4A7C15ull + 1),
      cache_(inner_->Size()) {}

void FaultDevice::FailReads(FaultTrigger t, FaultRange r) {
  MutexLock l(&mu_);
  read_fail_ = {t, r};
  Rearm();
}

void FaultDevice::FailWrites(FaultTrigger t, FaultRange r) {
  MutexLock l(&mu_);
  write_fail_ = {t, r};
  Rearm();
}

void FaultDevice::FailFlushes(FaultTrigger t) {
  MutexLock l(&mu_);
  flush_fail_ = {t, FaultRange{}};
  Rearm();
}

void FaultDevice::CorruptReads(FaultTrigger t, FaultRange r, uint8_t xor_mask) {
  MutexLock l(&mu_);
  corrupt_ = {t, r};
  corrupt_mask_ = xor_mask ? xor_mask : 0x01;
  Rearm();
}

void FaultDevice::SetLatency(std::chrono::microseconds per_io, uint32_t lanes) {
  MutexLock l(&mu_);
  latency_ = per_io.count() > 0 ? per_io : std::chrono::microseconds(0);
  lanes_ = lanes ? lanes : 1;
  Rearm();
  lane_cv_.SignalAll();
}

void FaultDevice::Vanish() {
  MutexLock l(&mu_);
  vanished_ = true;
  Rearm();
}

void FaultDevice::Reappear() {
  MutexLock l(&mu_);
  vanished_ = false;
  Rearm();
}

bool FaultDevice::vanished() {
  MutexLock l(&mu_);
  return vanished_;
}

void FaultDevice::ClearFaults() {
  MutexLock l(&mu_);
  read_fail_ = write_fail_ = flush_fail_ = corrupt_ = Rule{};
  latency_ = std::chrono::microseconds(0);
  lanes_ = 1;
  vanished_ = false;
  lane_cv_.SignalAll();
  Rearm();
}

void FaultDevice::SetSeed(uint64_t seed) {
  MutexLock l(&mu_);
  rng_ = seed * 0x9E3779B97F4A7C15ull + 1;
}

FaultStats FaultDevice::stats() const {
  FaultStats s;
  s.ios = ios_.load(std::memory_order_relaxed);
  s.injected_read_errors = injected_read_errors_.load(std::memory_order_relaxed);
  s.injected_write_errors = injected_write_errors_.load(std::memory_order_relaxed);
  s.injected_flush_errors = injected_flush_errors_.load(std::memory_order_relaxed);
  s.corrupted_reads = corrupted_reads_.load(std::memory_order_relaxed);
  s.vanished_ios = vanished_ios_.load(std::memory_order_relaxed);
  return s;
}

void FaultDevice::Rearm() {
  auto set = [](const Rule& r) { return r.trigger.kind != FaultTrigger::Kind::kNever; };
  armed_.store(vanished_ || latency_.count() > 0 || set(read_fail_) || set(write_fail_) ||
                   set(flush_fail_) || set(corrupt_),
               std::memory_order_release);
}

double FaultDevice::NextRandom() {
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 7;
  rng_ ^= rng_ << 17;
  return static_cast<double>(rng_ >> 11) * 0x1.0p-53;
}

bool FaultDevice::Fires(Rule* rule, uint64_t offset, uint64_t len) {
  FaultTrigger& t = rule->trigger;
  if (t.kind == FaultTrigger::Kind::kNever || !Overlaps(rule->range, offset, len)) return false;
  switch (t.kind) {
    case FaultTrigger::Kind::kNever: return false;
    case FaultTrigger::Kind::kAlways: return true;
    case FaultTrigger::Kind::kNextN:
      if (t.count == 0) return false;
      if (--t.count == 0) t.kind = FaultTrigger::Kind::kNever;
      return true;
    case FaultTrigger::Kind::kProbability: return NextRandom() < t.probability;
  }
  return false;
}

FaultDevice::Decision FaultDevice::Decide(IoOp op, uint64_t offset, uint64_t len) {
  MutexLock l(&mu_);
  Decision d;
  if (vanished_) {
    d.vanished = true;
    return d;
  }
  switch (op) {
    case IoOp::kRead:
      d.fail = Fires(&read_fail_, offset, len);
      if (!d.fail && Fires(&corrupt_, offset, len)) {
        d.corrupt = true;
        d.xor_mask = corrupt_mask_;
        d.corrupt_range = corrupt_.range;
      }
      break;
    case IoOp::kWrite:
    case IoOp::kWriteDurable: d.fail = Fires(&write_fail_, offset, len); break;
    case IoOp::kFlush: d.fail = Fires(&flush_fail_, 0, 0); break;
    case IoOp::kTrim: break;
  }
  return d;
}

bool FaultDevice::EnterLane() {
  std::chrono::microseconds wait;
  {
    MutexLock l(&mu_);
    if (latency_.count() == 0) return false;
    while (latency_.count() > 0 && busy_lanes_ >= lanes_) lane_cv_.Wait(&mu_);
    if (latency_.count() == 0) return false;  // cleared while we waited
    busy_lanes_++;
    wait = latency_;
  }
  std::this_thread::sleep_for(wait);
  return true;
}

void FaultDevice::LeaveLane() {
  MutexLock l(&mu_);
  busy_lanes_--;
  lane_cv_.SignalAll();
}

Status FaultDevice::Vanished(IoOp op, uint64_t offset, uint64_t len) {
  vanished_ios_.fetch_add(1, std::memory_order_relaxed);
  return DeviceIoError(op, path(), offset, len, ENXIO, "device removed");
}

Status FaultDevice::DoReadScatter(uint64_t offset, std::span<const std::span<uint8_t>> pieces) {
  if (!Idle()) return BlockDevice::DoReadScatter(offset, pieces);
  ios_.fetch_add(1, std::memory_order_relaxed);
  return inner_->ReadScatter(offset, pieces);
}

bool FaultDevice::DoStartAsync(AsyncIo& io) {
  if (!Idle() || !inner_->StartAsync(io)) return false;
  ios_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

Status FaultDevice::DoRead(uint64_t offset, std::span<uint8_t> buf) {
  ios_.fetch_add(1, std::memory_order_relaxed);
  if (Idle()) return inner_->Read(offset, buf);
  const bool lane = EnterLane();
  const Decision d = Decide(IoOp::kRead, offset, buf.size());
  Status s;
  if (d.vanished) {
    s = Vanished(IoOp::kRead, offset, buf.size());
  } else if (d.fail) {
    injected_read_errors_.fetch_add(1, std::memory_order_relaxed);
    s = DeviceIoError(IoOp::kRead, path(), offset, buf.size(), EIO, "injected fault");
  } else {
    s = inner_->Read(offset, buf);
    if (s.ok() && d.corrupt) {
      const uint64_t r_end = d.corrupt_range.length > UINT64_MAX - d.corrupt_range.offset
                                 ? UINT64_MAX
                                 : d.corrupt_range.offset + d.corrupt_range.length;
      const uint64_t from = std::max(offset, d.corrupt_range.offset);
      const uint64_t to = std::min(offset + buf.size(), r_end);
      for (uint64_t i = from; i < to; i++) buf[i - offset] ^= d.xor_mask;
      corrupted_reads_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (lane) LeaveLane();
  return s;
}

Status FaultDevice::DoWrite(uint64_t offset, std::span<const uint8_t> buf) {
  return WriteImpl(offset, buf, false);
}

Status FaultDevice::DoWriteDurable(uint64_t offset, std::span<const uint8_t> buf) {
  return WriteImpl(offset, buf, true);
}

Status FaultDevice::WriteImpl(uint64_t offset, std::span<const uint8_t> buf, bool durable) {
  ios_.fetch_add(1, std::memory_order_relaxed);
  if (Idle()) return durable ? inner_->WriteDurable(offset, buf) : inner_->Write(offset, buf);
  const bool lane = EnterLane();
  const Decision d = Decide(IoOp::kWrite, offset, buf.size());
  Status s;
  if (d.vanished) {
    s = Vanished(IoOp::kWrite, offset, buf.size());
  } else if (d.fail) {
    injected_write_errors_.fetch_add(1, std::memory_order_relaxed);
    s = DeviceIoError(IoOp::kWrite, path(), offset, buf.size(), EIO, "injected fault");
  } else if (durable && Decide(IoOp::kFlush, 0, 0).fail) {  // its flush part
    injected_flush_errors_.fetch_add(1, std::memory_order_relaxed);
    s = DeviceIoError(IoOp::kWrite, path(), offset, buf.size(), EIO, "injected flush fault");
  } else if (durable && volatile_cache_) {
    MutexLock l(&cache_mu_);
    s = inner_->WriteDurable(offset, buf);
    if (s.ok()) cache_.WroteThrough(offset, buf);
  } else if (durable) {
    s = inner_->WriteDurable(offset, buf);
  } else {
    if (volatile_cache_) {
      MutexLock l(&cache_mu_);
      s = cache_.BeforeWrite(offset, buf.size(), [this](uint64_t off, std::span<uint8_t> out) {
        return inner_->Read(off, out);
      });
    }
    if (s.ok()) s = inner_->Write(offset, buf);
  }
  if (lane) LeaveLane();
  return s;
}

Status FaultDevice::DoFlush() {
  ios_.fetch_add(1, std::memory_order_relaxed);
  if (Idle()) return inner_->Flush();
  const bool lane = EnterLane();
  const Decision d = Decide(IoOp::kFlush, 0, 0);
  Status s;
  if (d.vanished) {
    s = Vanished(IoOp::kFlush, 0, 0);
  } else if (d.fail) {
    injected_flush_errors_.fetch_add(1, std::memory_order_relaxed);
    s = DeviceIoError(IoOp::kFlush, path(), 0, 0, EIO, "injected fault");
  } else {
    s = inner_->Flush();
    if (s.ok() && volatile_cache_) {
      MutexLock l(&cache_mu_);
      cache_.Flushed();
    }
  }
  if (lane) LeaveLane();
  return s;
}

Status FaultDevice::DropUnflushed() {
  MutexLock l(&cache_mu_);
  UZFS_RETURN_IF_ERROR(cache_.Drop([this](uint64_t off, std::span<const uint8_t> in) {
    return inner_->Write(off, in);
  }));
  return inner_->Flush();
}

Status FaultDevice::DropSomeUnflushed(uint64_t seed) {
  MutexLock l(&cache_mu_);
  UZFS_RETURN_IF_ERROR(cache_.DropSome(seed, [this](uint64_t off, std::span<const uint8_t> in) {
    return inner_->Write(off, in);
  }));
  return inner_->Flush();
}

size_t FaultDevice::UnflushedGranules() {
  MutexLock l(&cache_mu_);
  return cache_.unflushed_granules();
}

}  // namespace uzfs
