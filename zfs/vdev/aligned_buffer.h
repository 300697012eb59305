// AlignedBuffer: an owned, zero-filled byte buffer whose address is aligned
// (4 KiB by default), so O_DIRECT devices can transfer straight into or out
// of it (FileDevice::direct_alignment(); an unaligned buffer costs a bounce
// copy). Uninitialized() skips the zero fill for buffers that are about to
// be overwritten whole (reads). Move-only. Not thread-safe (it is just
// memory).
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
  explicit AlignedBuffer(size_t size, size_t align = 4096) : AlignedBuffer(size, align, 0) {
    if (data_) std::memset(data_.get(), 0, Allocated(size, align));
  }
  // The same without the zero fill: the contents are indeterminate.
  static AlignedBuffer Uninitialized(size_t size, size_t align = 4096) {
    return AlignedBuffer(size, align, 0);
  }
  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }
  std::span<uint8_t> span() { return {data_.get(), size_}; }
  std::span<const uint8_t> span() const { return {data_.get(), size_}; }

 private:
  AlignedBuffer(size_t size, size_t align, int) : size_(size) {
    data_.reset(static_cast<uint8_t*>(std::aligned_alloc(align, Allocated(size, align))));
  }
  static size_t Allocated(size_t size, size_t align) {
    const size_t alloc = (size + align - 1) / align * align;
    return alloc ? alloc : align;
  }
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> data_;
  size_t size_ = 0;
};

}  // namespace uzfs
