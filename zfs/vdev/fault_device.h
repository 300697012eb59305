// FaultDevice: wraps any BlockDevice and injects faults on command, the I/O
// double behind fault tests, zstress and (later) the `zinject` command.
//
// Faults (each can be set, changed or cleared at any time, also while I/O is
// in flight; an I/O sees the settings current when it is decided):
//  - FailReads / FailWrites / FailFlushes: the I/O returns IoError (EIO)
//    without reaching the inner device. When: always, for the next N
//    matching I/Os, or with a probability; optionally only for I/Os that
//    overlap a byte range.
//  - CorruptReads: the read succeeds but the bytes of it that lie in a range
//    come back XORed with a mask (silent corruption: only a checksum
//    notices). The inner device is unchanged.
//  - SetLatency: every I/O (flushes too) takes at least `per_io` longer, and
//    at most `lanes` I/Os are served at once; more wait for a free lane. 5 ms
//    and 1 lane stand in for a 7200 rpm disk; N lanes for an SSD's queues.
//  - Vanish: every I/O fails (ENXIO), as a pulled disk; Reappear undoes it.
//  - Volatile write cache (on by default): DropUnflushed() undoes every write
//    made through this wrapper since its last successful Flush(), in the
//    inner device, as a power loss would; DropSomeUnflushed(seed) undoes a
//    random subset. Works over any inner device, files included.
//
// Error counting: the FaultDevice is the device the upper layers see, so its
// own errors() count the faults it returns; injected faults are also counted
// in stats() so tests can tell injected from real ones.
//
// Cost when idle: while no fault is set (never, or after ClearFaults) and
// without volatile_cache, an I/O goes straight to the inner device (one
// relaxed atomic load, no lock) and NativeFd() is the inner device's, so an
// io_uring engine keeps its native path (such I/Os bypass this wrapper and
// are not counted in stats().ios), and a device with an asynchronous path
// (NBD) keeps it; pools opened fault-injectable
// (PoolCreateOptions::fault_injectable) wrap every leaf this way.
//
// Threading contract: thread-safe. Locks: mu_ guards the fault settings and
// lane accounting; cache_mu_ guards the cache model and is held across the
// pre-image read from the inner device. They are never held together.
// DropUnflushed should be called when no I/O is in flight.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>

#include "zfs/vdev/block_device.h"
#include "zfs/util/mutex.h"
#include "zfs/vdev/write_cache_model.h"

namespace uzfs {

// When a fault fires, among the I/Os it applies to.
struct FaultTrigger {
  enum class Kind : uint8_t { kNever, kAlways, kNextN, kProbability };
  Kind kind = Kind::kNever;
  uint64_t count = 0;        // kNextN: how many more I/Os it fires for
  double probability = 0.0;  // kProbability: chance per I/O, 0..1

  static FaultTrigger Never() { return {}; }
  static FaultTrigger Always() { return {Kind::kAlways, 0, 0.0}; }
  static FaultTrigger NextN(uint64_t n) { return {Kind::kNextN, n, 0.0}; }
  static FaultTrigger WithProbability(double p) { return {Kind::kProbability, 0, p}; }
};

// The I/Os a fault applies to: those that overlap [offset, offset+length).
struct FaultRange {
  uint64_t offset = 0;
  uint64_t length = std::numeric_limits<uint64_t>::max();
};

struct FaultDeviceOptions {
  bool volatile_cache = true;  // track unflushed writes for DropUnflushed()
  uint64_t seed = 1;           // for probabilistic faults
};

struct FaultStats {
  uint64_t ios = 0;  // I/Os seen (read, write, flush)
  uint64_t injected_read_errors = 0;
  uint64_t injected_write_errors = 0;
  uint64_t injected_flush_errors = 0;
  uint64_t corrupted_reads = 0;
  uint64_t vanished_ios = 0;
};

class FaultDevice final : public BlockDevice {
 public:
  explicit FaultDevice(std::unique_ptr<BlockDevice> inner, const FaultDeviceOptions& opts = {});

  uint64_t Size() const override { return inner_->Size(); }
  Status CheckIdentity() const override { return inner_->CheckIdentity(); }
  uint32_t AshiftHint() const override { return inner_->AshiftHint(); }
  const std::string& path() const override { return inner_->path(); }
  uint32_t RequiredAlignment() const override { return inner_->RequiredAlignment(); }
  // The inner device's while idle (see the header comment), else -1 (every
  // I/O goes through the fault logic).
  int NativeFd() const override {
    return !volatile_cache_ && !armed_.load(std::memory_order_acquire) ? inner_->NativeFd() : -1;
  }
  int NativeFdFor(IoOp op, uint64_t offset, uint64_t len, const void* buf) const override {
    return !volatile_cache_ && !armed_.load(std::memory_order_acquire)
               ? inner_->NativeFdFor(op, offset, len, buf)
               : -1;
  }

  BlockDevice& inner() { return *inner_; }
  void PrefillHoles(uint64_t chunk) override { inner_->PrefillHoles(chunk); }
  void ReleaseExclusive() override { inner_->ReleaseExclusive(); }
  // The inner device's reconnection (an NBD leaf's `zpool online`) and its
  // asynchronous path: taken while idle, as NativeFd is; with a fault set
  // every request goes through the fault logic, synchronously.
  void RetryNow() override { inner_->RetryNow(); }
  bool HasAsync() const override { return inner_->HasAsync(); }

  void FailReads(FaultTrigger t, FaultRange r = {}) UZFS_EXCLUDES(mu_);
  void FailWrites(FaultTrigger t, FaultRange r = {}) UZFS_EXCLUDES(mu_);
  void FailFlushes(FaultTrigger t) UZFS_EXCLUDES(mu_);
  // Bytes of matching reads inside r are XORed with xor_mask (non-zero).
  void CorruptReads(FaultTrigger t, FaultRange r, uint8_t xor_mask = 0x01) UZFS_EXCLUDES(mu_);
  // per_io == 0 turns latency off. lanes >= 1.
  void SetLatency(std::chrono::microseconds per_io, uint32_t lanes = 1) UZFS_EXCLUDES(mu_);
  void Vanish() UZFS_EXCLUDES(mu_);
  void Reappear() UZFS_EXCLUDES(mu_);
  bool vanished() UZFS_EXCLUDES(mu_);
  // Clears every fault above (not the cache model). I/Os waiting for a lane
  // go ahead.
  void ClearFaults() UZFS_EXCLUDES(mu_);
  void SetSeed(uint64_t seed) UZFS_EXCLUDES(mu_);

  // Simulated power loss (see the header comment). Returns the inner
  // device's error if restoring fails. No-op without volatile_cache.
  Status DropUnflushed() UZFS_EXCLUDES(cache_mu_);
  Status DropSomeUnflushed(uint64_t seed) UZFS_EXCLUDES(cache_mu_);
  size_t UnflushedGranules() UZFS_EXCLUDES(cache_mu_);

  FaultStats stats() const;

 protected:
  Status DoRead(uint64_t offset, std::span<uint8_t> buf) override;
  // Idle: the inner device's own scattered read; else one DoRead, copied out.
  Status DoReadScatter(uint64_t offset, std::span<const std::span<uint8_t>> pieces) override;
  Status DoWrite(uint64_t offset, std::span<const uint8_t> buf) override;
  Status DoFlush() override;
  // Trims are passed on untouched: no fault is injected into them.
  Status DoTrim(uint64_t offset, uint64_t len) override { return inner_->Trim(offset, len); }
  // One I/O (one lane, one latency) that both a write fault and a flush
  // fault can fail; durable in the cache model for its own bytes only.
  Status DoWriteDurable(uint64_t offset, std::span<const uint8_t> buf) override;
  bool DoStartAsync(AsyncIo& io) override;

 private:
  struct Rule {
    FaultTrigger trigger;
    FaultRange range;
  };
  // What one I/O was told to do, decided under mu_.
  struct Decision {
    bool vanished = false;
    bool fail = false;
    bool corrupt = false;
    uint8_t xor_mask = 0;
    FaultRange corrupt_range;
  };

  Decision Decide(IoOp op, uint64_t offset, uint64_t len) UZFS_EXCLUDES(mu_);
  bool Fires(Rule* rule, uint64_t offset, uint64_t len) UZFS_REQUIRES(mu_);
  double NextRandom() UZFS_REQUIRES(mu_);
  // Waits for a lane and sleeps the latency; returns whether a lane is held.
  bool EnterLane() UZFS_EXCLUDES(mu_);
  void LeaveLane() UZFS_EXCLUDES(mu_);
  Status Vanished(IoOp op, uint64_t offset, uint64_t len);
  // DoWrite and DoWriteDurable.
  Status WriteImpl(uint64_t offset, std::span<const uint8_t> buf, bool durable);
  // Recomputes armed_ from the settings. REQUIRES: mu_.
  void Rearm() UZFS_REQUIRES(mu_);
  // True when an I/O can skip the fault logic.
  bool Idle() const { return !volatile_cache_ && !armed_.load(std::memory_order_acquire); }

  const std::unique_ptr<BlockDevice> inner_;
  const bool volatile_cache_;

  Mutex mu_;  // the fault settings and lanes below
  CondVar lane_cv_;
  Rule read_fail_ UZFS_GUARDED_BY(mu_);
  Rule write_fail_ UZFS_GUARDED_BY(mu_);
  Rule flush_fail_ UZFS_GUARDED_BY(mu_);
  Rule corrupt_ UZFS_GUARDED_BY(mu_);
  uint8_t corrupt_mask_ UZFS_GUARDED_BY(mu_) = 0x01;
  std::chrono::microseconds latency_ UZFS_GUARDED_BY(mu_){0};
  uint32_t lanes_ UZFS_GUARDED_BY(mu_) = 1;
  uint32_t busy_lanes_ UZFS_GUARDED_BY(mu_) = 0;
  bool vanished_ UZFS_GUARDED_BY(mu_) = false;
  uint64_t rng_ UZFS_GUARDED_BY(mu_);
  // Some fault may be set (written under mu_, read without it).
  std::atomic<bool> armed_{false};

  Mutex cache_mu_;  // the cache model; held across the pre-image read
  VolatileCacheModel cache_ UZFS_GUARDED_BY(cache_mu_);

  // Statistics, lock-free.
  std::atomic<uint64_t> ios_{0};
  std::atomic<uint64_t> injected_read_errors_{0};
  std::atomic<uint64_t> injected_write_errors_{0};
  std::atomic<uint64_t> injected_flush_errors_{0};
  std::atomic<uint64_t> corrupted_reads_{0};
  std::atomic<uint64_t> vanished_ios_{0};
};

}  // namespace uzfs
