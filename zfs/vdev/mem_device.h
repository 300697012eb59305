// MemDevice: a BlockDevice in RAM, for tests and for tools that need a
// scratch pool.
//
// What it does: holds Size() bytes in an anonymous mapping (pages are only
// allocated when written, so a sparse 1 GiB device is cheap). Optionally
// models a volatile write cache: writes since the last Flush() can be
// dropped with DropUnflushed() (all of them) or DropSomeUnflushed() (a random
// subset), which is what a power failure does to a disk whose cache was not
// flushed. Tests then "reopen" the pool on the same MemDevice.
//
// What it promises: never fails an I/O (FaultDevice adds failures); reads
// return what was last written (or zeros); a new device reads as zeros.
//
// Threading contract: all methods are thread-safe. DropUnflushed() should be
// called when no I/O is in flight (a crash happens between I/Os).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "zfs/vdev/block_device.h"
#include "zfs/util/mutex.h"
#include "zfs/vdev/write_cache_model.h"

namespace uzfs {

struct MemDeviceOptions {
  std::string name = "mem";
  uint32_t ashift = BlockDevice::kDefaultAshift;
  // Model a volatile write cache (DropUnflushed() undoes unflushed writes).
  // Off: every completed write is durable at once, DropUnflushed() is a no-op.
  bool volatile_cache = true;
};

class MemDevice final : public BlockDevice {
 public:
  // InvalidArgument for a zero size, NoSpace when the mapping fails.
  static Result<std::unique_ptr<MemDevice>> Create(uint64_t size,
                                                   const MemDeviceOptions& opts = {});
  ~MemDevice() override;

  uint64_t Size() const override { return size_; }
  uint32_t AshiftHint() const override { return opts_.ashift; }
  const std::string& path() const override { return opts_.name; }

  // Simulated power loss: every write not covered by a Flush() is undone.
  void DropUnflushed() UZFS_EXCLUDES(mu_);
  // Simulated power loss with a reordering cache: each unflushed 4 KiB
  // granule is independently kept or undone (deterministic per seed).
  void DropSomeUnflushed(uint64_t seed) UZFS_EXCLUDES(mu_);
  // Number of 4 KiB granules written since the last flush.
  size_t UnflushedGranules() UZFS_EXCLUDES(mu_);
  // Counts of completed operations (for tests that check I/O happened).
  uint64_t flush_count() UZFS_EXCLUDES(mu_);
  // Bytes discarded by Trim since creation.
  uint64_t trimmed_bytes() UZFS_EXCLUDES(mu_);

 protected:
  Status DoRead(uint64_t offset, std::span<uint8_t> buf) override UZFS_EXCLUDES(mu_);
  Status DoWrite(uint64_t offset, std::span<const uint8_t> buf) override UZFS_EXCLUDES(mu_);
  Status DoFlush() override UZFS_EXCLUDES(mu_);
  // The write, durable at once (only its own bytes; flush_count unchanged).
  Status DoWriteDurable(uint64_t offset, std::span<const uint8_t> buf) override UZFS_EXCLUDES(mu_);
  // A discard reads back as zeros (a write of zeros, under the cache model).
  Status DoTrim(uint64_t offset, uint64_t len) override UZFS_EXCLUDES(mu_);

 private:
  MemDevice(uint8_t* data, uint64_t size, const MemDeviceOptions& opts);

  const MemDeviceOptions opts_;
  const uint64_t size_;
  Mutex mu_;
  uint8_t* const data_ UZFS_PT_GUARDED_BY(mu_);     // size_ bytes, mmap'd
  VolatileCacheModel cache_ UZFS_GUARDED_BY(mu_);  // pre-images since last flush
  uint64_t flushes_ UZFS_GUARDED_BY(mu_) = 0;
  uint64_t trimmed_ UZFS_GUARDED_BY(mu_) = 0;
};

}  // namespace uzfs
