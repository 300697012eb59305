// MemDevice (see mem_device.h). One mutex guards the bytes and the cache
// model; memcpy under it is short, so I/O on a MemDevice is serialised and
// that is fine for a test double.
#include "zfs/vdev/mem_device.h"

#include <sys/mman.h>

#include <cstring>

namespace uzfs {

Result<std::unique_ptr<MemDevice>> MemDevice::Create(uint64_t size, const MemDeviceOptions& opts) {
  if (size == 0) return Status::InvalidArgument("MemDevice " + opts.name + ": size 0");
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) {
    return Status::NoSpace("MemDevice " + opts.name + ": cannot map " + std::to_string(size) +
                           " bytes: " + std::strerror(errno));
  }
  return std::unique_ptr<MemDevice>(new MemDevice(static_cast<uint8_t*>(p), size, opts));
}

MemDevice::MemDevice(uint8_t* data, uint64_t size, const MemDeviceOptions& opts)
    : opts_(opts), size_(size), data_(data), cache_(size) {}

MemDevice::~MemDevice() { munmap(data_, size_); }

Status MemDevice::DoRead(uint64_t offset, std::span<uint8_t> buf) {
  MutexLock l(&mu_);
  std::memcpy(buf.data(), data_ + offset, buf.size());
  return Status::Ok();
}

Status MemDevice::DoWrite(uint64_t offset, std::span<const uint8_t> buf) {
  MutexLock l(&mu_);
  if (opts_.volatile_cache) {
    Status s = cache_.BeforeWrite(offset, buf.size(),
                                  [this](uint64_t off, std::span<uint8_t> out)
                                      UZFS_NO_THREAD_SAFETY_ANALYSIS {
                                        std::memcpy(out.data(), data_ + off, out.size());
                                        return Status::Ok();
                                      });
    s.IgnoreError();  // the memcpy reader cannot fail
  }
  std::memcpy(data_ + offset, buf.data(), buf.size());
  return Status::Ok();
}

Status MemDevice::DoTrim(uint64_t offset, uint64_t len) {
  MutexLock l(&mu_);
  if (opts_.volatile_cache) {
    Status s = cache_.BeforeWrite(offset, len,
                                  [this](uint64_t off, std::span<uint8_t> out)
                                      UZFS_NO_THREAD_SAFETY_ANALYSIS {
                                        std::memcpy(out.data(), data_ + off, out.size());
                                        return Status::Ok();
                                      });
    s.IgnoreError();  // the memcpy reader cannot fail
  }
  std::memset(data_ + offset, 0, len);
  trimmed_ += len;
  return Status::Ok();
}

uint64_t MemDevice::trimmed_bytes() {
  MutexLock l(&mu_);
  return trimmed_;
}

Status MemDevice::DoWriteDurable(uint64_t offset, std::span<const uint8_t> buf) {
  MutexLock l(&mu_);
  std::memcpy(data_ + offset, buf.data(), buf.size());
  if (opts_.volatile_cache) cache_.WroteThrough(offset, buf);
  return Status::Ok();
}

Status MemDevice::DoFlush() {
  MutexLock l(&mu_);
  cache_.Flushed();
  flushes_++;
  return Status::Ok();
}

void MemDevice::DropUnflushed() {
  MutexLock l(&mu_);
  cache_.Drop([this](uint64_t off, std::span<const uint8_t> in) UZFS_NO_THREAD_SAFETY_ANALYSIS {
          std::memcpy(data_ + off, in.data(), in.size());
          return Status::Ok();
        })
      .IgnoreError();  // the memcpy writer cannot fail
}

void MemDevice::DropSomeUnflushed(uint64_t seed) {
  MutexLock l(&mu_);
  cache_.DropSome(seed,
                  [this](uint64_t off, std::span<const uint8_t> in) UZFS_NO_THREAD_SAFETY_ANALYSIS {
                    std::memcpy(data_ + off, in.data(), in.size());
                    return Status::Ok();
                  })
      .IgnoreError();  // the memcpy writer cannot fail
}

size_t MemDevice::UnflushedGranules() {
  MutexLock l(&mu_);
  return cache_.unflushed_granules();
}

uint64_t MemDevice::flush_count() {
  MutexLock l(&mu_);
  return flushes_;
}

}  // namespace uzfs
