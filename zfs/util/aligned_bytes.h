// AlignedBytes: a std::vector of bytes whose storage is aligned for direct
// I/O, for the buffers that carry blocks between the DMU, the ARC and the
// disks (dirty data blocks, physical bytes read, compressed output).
//
// Why: leaf files are opened with O_DIRECT where the file system allows it
// (zfs/vdev/file_device.h), and the kernel then transfers straight between
// the disk and the caller's memory if its address is aligned (512 bytes on
// most disks, up to a page). An ordinary vector (malloc: 16 bytes) would
// make every such transfer go through a bounce copy.
//
// What it promises: data() is aligned to 4096 bytes for capacities of at
// least 4096 bytes, else to 512. Unlike std::vector<uint8_t>, growing
// without a value — AlignedBytes(n), resize(n) — leaves the new bytes
// uninitialized (they are about to be overwritten: a read, a whole-block
// write); AlignedBytes(n, 0) and resize(n, 0) zero-fill. The allocator is
// stateless and always equal, so moves and swaps never copy.
// Buffers of 4 KiB to 16 MiB whose size is a power of two (the block sizes)
// come from BlockBufferPool::Global(): recycled, huge-page-backed memory, so
// a fresh dirty record does not fault in a page per 4 KiB. Their contents
// are unspecified like malloc's (never assume fresh memory is zero). Under
// AddressSanitizer every size uses aligned_alloc, so ASan still sees
// overflows and use after free of block buffers.
// Thread-safety: as std::vector.
//
// AlignedBuffer: an owned, zero-filled byte buffer of a fixed size whose
// address is aligned to a chosen power of two (4 KiB by default), for the
// vdev layer's scratch and bounce buffers, which must meet a device's
// O_DIRECT alignment (FileDevice::direct_alignment()) whatever their size.
// Uninitialized() skips the zero fill for buffers that are about to be
// overwritten whole (reads). Never pooled. Move-only. Not thread-safe (it
// is just memory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <utility>
#include <vector>

#include "zfs/util/block_buffer_pool.h"

namespace uzfs {

#if defined(UZFS_ASAN) || defined(__SANITIZE_ADDRESS__)
inline constexpr bool kPoolBlockBuffers = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kPoolBlockBuffers = false;
#else
inline constexpr bool kPoolBlockBuffers = true;
#endif
#else
inline constexpr bool kPoolBlockBuffers = true;
#endif

template <typename T>
struct DirectIoAllocator {
  using value_type = T;
  using is_always_equal = std::true_type;
  using propagate_on_container_move_assignment = std::true_type;

  DirectIoAllocator() = default;
  template <typename U>
  DirectIoAllocator(const DirectIoAllocator<U>&) noexcept {}  // NOLINT: rebinding

  static constexpr size_t AlignFor(size_t bytes) { return bytes >= 4096 ? 4096 : 512; }

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes >= BlockBufferPool::kMinInjected && BlockBufferPool::TakeInjectedFailure()) throw std::bad_alloc();
    if (kPoolBlockBuffers && BlockBufferPool::Pooled(bytes) && BlockBufferPool::Enabled()) {
      void* p = BlockBufferPool::Global().Allocate(bytes);
      if (p == nullptr) throw std::bad_alloc();
      return static_cast<T*>(p);
    }
    const size_t align = AlignFor(bytes);
    void* p = std::aligned_alloc(align, (bytes + align - 1) / align * align + (bytes == 0 ? align : 0));
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept {
    if (kPoolBlockBuffers && BlockBufferPool::Pooled(n * sizeof(T)) && BlockBufferPool::Enabled()) {
      BlockBufferPool::Global().Free(p, n * sizeof(T));
      return;
    }
    std::free(p);
  }
  // Default-initialization for value-less growth (see the file comment).
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }

  template <typename U>
  bool operator==(const DirectIoAllocator<U>&) const noexcept {
    return true;
  }
};

using AlignedBytes = std::vector<uint8_t, DirectIoAllocator<uint8_t>>;

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
