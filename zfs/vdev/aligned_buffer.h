// AlignedBuffer: an owned, zero-filled byte buffer whose address is aligned
// (4 KiB by default), as O_DIRECT devices need (BlockDevice::
// RequiredAlignment()). Move-only. Not thread-safe (it is just memory).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>

namespace uzfs {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  // size is rounded up to a multiple of `align` for the allocation; size()
  // is what was asked for. align must be a power of two.
  explicit AlignedBuffer(size_t size, size_t align = 4096) : size_(size) {
    const size_t alloc = (size + align - 1) / align * align;
    data_.reset(static_cast<uint8_t*>(std::aligned_alloc(align, alloc ? alloc : align)));
    if (data_) std::memset(data_.get(), 0, alloc);
  }
  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }
  std::span<uint8_t> span() { return {data_.get(), size_}; }
  std::span<const uint8_t> span() const { return {data_.get(), size_}; }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> data_;
  size_t size_ = 0;
};

}  // namespace uzfs
