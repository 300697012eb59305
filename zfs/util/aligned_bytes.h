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
// Buffers of 64 KiB to 16 MiB whose size is a power of two (the block sizes)
// come from BlockBufferPool::Global(): recycled, huge-page-backed memory, so
// a fresh dirty record does not fault in a page per 4 KiB. Their contents
// are unspecified like malloc's (never assume fresh memory is zero). Under
// AddressSanitizer every size uses aligned_alloc, so ASan still sees
// overflows and use after free of block buffers.
// Thread-safety: as std::vector.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

#include "zfs/util/block_buffer_pool.h"

namespace uzfs {

#if defined(__SANITIZE_ADDRESS__)
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
    if (bytes >= BlockBufferPool::kMinPooled && BlockBufferPool::TakeInjectedFailure()) throw std::bad_alloc();
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

}  // namespace uzfs
