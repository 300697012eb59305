// BlockBufferPool: see block_buffer_pool.h.
#include "zfs/util/block_buffer_pool.h"

#include <sys/mman.h>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace uzfs {

BlockBufferPool::~BlockBufferPool() {
  MutexLock l(&mu_);
  for (const auto& [p, n] : chunks_) munmap(p, n);
}

BlockBufferPool& BlockBufferPool::Global() {
  // Leaked on purpose: buffers may be freed by static destructors.
  static BlockBufferPool* pool = new BlockBufferPool(kDefaultMaxWarm);
  return *pool;
}

namespace {
const char* PoolMode() {
  static const char* mode = [] {
    const char* e = std::getenv("UZFS_BUFFER_POOL");
    return e == nullptr ? "" : e;
  }();
  return mode;
}
}  // namespace

bool BlockBufferPool::Enabled() {
  static const bool on = std::strcmp(PoolMode(), "off") != 0;
  return on;
}

int BlockBufferPool::ClassOf(size_t bytes) { return std::countr_zero(bytes) - std::countr_zero(kMinPooled); }

void* BlockBufferPool::Allocate(size_t bytes) {
  if (!Pooled(bytes)) return nullptr;
  const int k = ClassOf(bytes);
  {
    MutexLock l(&mu_);
    allocations_++;
    SizeClass& c = classes_[k];
    if (!c.warm.empty()) {
      void* p = c.warm.back();
      c.warm.pop_back();
      stats_.warm_free_bytes -= bytes;
      stats_.reused++;
      return p;
    }
    if (!c.fresh.empty()) {
      void* p = c.fresh.back();
      c.fresh.pop_back();
      stats_.fresh_bytes -= bytes;
      return p;
    }
    if (!c.cold.empty()) {
      void* p = c.cold.back();
      c.cold.pop_back();
      return p;
    }
  }
  // A new chunk of max(2 MiB, bytes), aligned to its size (so to a huge page
  // and to the buffer size): map twice that, unmap the unaligned head and tail.
  const size_t chunk = bytes > kChunk ? bytes : kChunk;
  // Prefault the chunk in one call (one kernel entry instead of a fault per
  // 4 KiB page on first touch): ~10% less daemon CPU in a sequential write.
  static const bool populate = std::strcmp(PoolMode(), "plain") != 0 && std::strcmp(PoolMode(), "huge") != 0;
  void* raw = mmap(nullptr, 2 * chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + chunk - 1) / chunk * chunk;
  if (aligned > start) munmap(raw, aligned - start);
  if (const uintptr_t end = start + 2 * chunk, tail = aligned + chunk; end > tail)
    munmap(reinterpret_cast<void*>(tail), end - tail);
  uint8_t* base = reinterpret_cast<uint8_t*>(aligned);
#ifdef MADV_POPULATE_WRITE
  if (populate) madvise(base, chunk, MADV_POPULATE_WRITE);  // fails harmlessly before Linux 5.14
#endif
#ifdef MADV_HUGEPAGE
  static const bool huge = std::strcmp(PoolMode(), "huge") == 0;
  if (huge) madvise(base, chunk, MADV_HUGEPAGE);  // measured slower (compaction, 2 MiB zeroing)
#endif
  MutexLock l(&mu_);
  chunks_.emplace_back(base, chunk);
  stats_.mapped_bytes += chunk;
  stats_.chunks++;
  // The rest of the chunk, last first so buffers are handed out in address
  // order: resident (warm) when prefaulted, so ReleaseIfIdle can give it back.
  std::vector<void*>& rest = populate ? classes_[k].fresh : classes_[k].cold;
  for (size_t off = chunk; off > bytes; off -= bytes) {
    rest.push_back(base + off - bytes);
    if (populate) stats_.fresh_bytes += bytes;
  }
  return base;
}

void BlockBufferPool::SetMaxWarm(uint64_t bytes) {
  MutexLock l(&mu_);
  max_warm_ = bytes;
}

uint64_t BlockBufferPool::max_warm() const {
  MutexLock l(&mu_);
  return max_warm_;
}

void BlockBufferPool::Free(void* p, size_t bytes) {
  if (p == nullptr) return;
  {
    MutexLock l(&mu_);
    if (stats_.warm_free_bytes + bytes <= max_warm_) {
      classes_[ClassOf(bytes)].warm.push_back(p);
      stats_.warm_free_bytes += bytes;
      return;
    }
  }
  // Over the limit: keep the address, give the memory back.
  madvise(p, bytes, MADV_DONTNEED);
  MutexLock l(&mu_);
  classes_[ClassOf(bytes)].cold.push_back(p);
  stats_.released++;
}

uint64_t BlockBufferPool::ReleaseIfIdle() {
  std::vector<std::pair<void*, size_t>> idle;
  {
    MutexLock l(&mu_);
    if (allocations_ != allocations_seen_ || stats_.warm_free_bytes + stats_.fresh_bytes == 0) {
      allocations_seen_ = allocations_;
      return 0;
    }
    for (int k = 0; k < kClasses; k++) {
      for (std::vector<void*>* list : {&classes_[k].warm, &classes_[k].fresh}) {
        for (void* p : *list) idle.emplace_back(p, kMinPooled << k);
        list->clear();
      }
    }
    stats_.warm_free_bytes = 0;
    stats_.fresh_bytes = 0;
  }
  // Outside the lock: the buffers belong to no list meanwhile, so no one
  // can be handed one whose pages are being dropped.
  uint64_t bytes = 0;
  for (const auto& [p, n] : idle) {
    madvise(p, n, MADV_DONTNEED);
    bytes += n;
  }
  MutexLock l(&mu_);
  for (const auto& [p, n] : idle) classes_[ClassOf(n)].cold.push_back(p);
  stats_.idle_released_bytes += bytes;
  return bytes;
}

BlockBufferPool::Stats BlockBufferPool::stats() const {
  MutexLock l(&mu_);
  return stats_;
}

}  // namespace uzfs
