// BlockBufferPool: recycled, huge-page-backed memory for the large block
// buffers (AlignedBytes of 4 KiB to 16 MiB whose size is a power of two:
// dirty records, blocks read, compression output).
//
// Why: a sequential write dirties a fresh 128 KiB buffer per record, and
// with OpenZFS's dirty-data default a whole txg (hundreds of MiB) is dirty
// at once, so malloc hands out never-touched memory and the daemon took one
// minor page fault per 4 KiB it copied in (~29% of its time in a 1 MiB
// sequential write). Here buffers are carved from
// 2 MiB-aligned chunks prefaulted in one call (MADV_POPULATE_WRITE), and a
// freed buffer goes to a per-size free list, so the next allocation of that
// size reuses memory that is already mapped. (Transparent huge pages via
// MADV_HUGEPAGE were measured slower: UZFS_BUFFER_POOL=huge.)
//
// What it promises: Allocate(n) for Pooled(n) sizes returns n bytes aligned
// to n (so at least 4 KiB, enough for direct I/O), or nullptr when the
// system has no memory; contents are unspecified (a recycled buffer holds
// what its last user wrote — the same contract as malloc, callers that need
// zeros fill them, as AlignedBytes(n, 0) does). At most `max_warm_bytes` of
// freed buffers stay resident; beyond that a freed buffer's pages are given
// back to the system (MADV_DONTNEED) and its address kept for reuse, and
// its next user takes a page fault per 4 KiB. uzfsd raises the limit to
// dirty_data_max (SetMaxWarm): 4 KiB random writes dirty a new 128 KiB
// record each, a txg's worth of them, whose buffers the txg after reuses;
// with 256 MiB kept, those page faults and the kernel's page clearing were
// a sixth of the daemon's time. Sizes below 64 KiB are pooled too: with
// recordsize=16K the same writes dirty 16 KiB records, which malloc served
// from memory it had given back, and page faults were a quarter of the
// daemon's time. The
// rest of a freshly prefaulted chunk is resident too (not counted in that
// limit: at most one chunk per size). ReleaseIfIdle() gives all of them
// back once the pool has handed nothing out for a while (the daemon calls
// it every few seconds), so an idle daemon does not keep what a burst of
// I/O left behind. Address space is only returned when a pool is destroyed
// (the process-wide pool never is). Thread-safe: one mutex, taken once per buffer.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "zfs/util/mutex.h"

namespace uzfs {

class BlockBufferPool {
 public:
  static constexpr size_t kMinPooled = size_t{4} << 10;
  static constexpr size_t kMaxPooled = size_t{16} << 20;
  static constexpr size_t kChunk = size_t{2} << 20;  // one huge page
  // Freed buffers kept resident by the process-wide pool.
  static constexpr uint64_t kDefaultMaxWarm = uint64_t{256} << 20;

  struct Stats {
    uint64_t mapped_bytes = 0;     // address space taken from the system
    uint64_t warm_free_bytes = 0;  // freed buffers kept resident
    uint64_t fresh_bytes = 0;      // never handed out, prefaulted with their chunk
    uint64_t chunks = 0;           // chunks mapped
    uint64_t reused = 0;           // allocations served by a resident freed buffer
    uint64_t released = 0;         // frees whose pages went back to the system
    uint64_t idle_released_bytes = 0;  // given back by ReleaseIfIdle
  };

  explicit BlockBufferPool(uint64_t max_warm_bytes) : max_warm_(max_warm_bytes) {}
  ~BlockBufferPool();
  BlockBufferPool(const BlockBufferPool&) = delete;
  BlockBufferPool& operator=(const BlockBufferPool&) = delete;

  // The pool AlignedBytes uses; never destroyed.
  static BlockBufferPool& Global();
  // Whether AlignedBytes uses Global(): yes unless the environment says
  // UZFS_BUFFER_POOL=off (read once; for comparisons and as an escape
  // hatch). =plain keeps the pool without prefaulting chunks, =huge
  // prefaults nothing and asks for transparent huge pages instead.
  static bool Enabled();

  static constexpr bool Pooled(size_t bytes) {
    return bytes >= kMinPooled && bytes <= kMaxPooled && (bytes & (bytes - 1)) == 0;
  }

  // The most freed-buffer bytes kept resident from now on (buffers already
  // kept beyond a lowered limit stay until ReleaseIfIdle).
  void SetMaxWarm(uint64_t bytes) UZFS_EXCLUDES(mu_);
  uint64_t max_warm() const UZFS_EXCLUDES(mu_);

  void* Allocate(size_t bytes) UZFS_EXCLUDES(mu_);
  void Free(void* p, size_t bytes) UZFS_EXCLUDES(mu_);
  Stats stats() const UZFS_EXCLUDES(mu_);
  // If no buffer was handed out since the previous call, gives the pages of
  // every resident free buffer back to the system (addresses kept for
  // reuse) and returns the bytes released; otherwise releases nothing and
  // returns 0. Called periodically, a busy pool never pays for it.
  uint64_t ReleaseIfIdle() UZFS_EXCLUDES(mu_);
  // Fault injection for tests: the next `n` block buffers (AlignedBytes of
  // kMinInjected bytes or more, pooled or not) fail to allocate, as when the
  // system has no memory: AlignedBytes throws std::bad_alloc. One relaxed
  // load per such allocation when unused.
  static constexpr size_t kMinInjected = size_t{64} << 10;
  static void InjectFailures(int n) { injected_failures_.store(n, std::memory_order_relaxed); }
  static bool TakeInjectedFailure() {
    return injected_failures_.load(std::memory_order_relaxed) > 0 &&
           injected_failures_.fetch_sub(1, std::memory_order_relaxed) > 0;
  }

 private:
  static constexpr int kClasses = 13;  // 4 KiB .. 16 MiB
  static int ClassOf(size_t bytes);

  struct SizeClass {
    std::vector<void*> warm;  // resident, most recently freed last
    std::vector<void*> fresh;  // never handed out, in a prefaulted chunk (resident)
    std::vector<void*> cold;   // never touched, or pages released
  };

  mutable Mutex mu_;
  uint64_t max_warm_ UZFS_GUARDED_BY(mu_);
  SizeClass classes_[kClasses] UZFS_GUARDED_BY(mu_);
  std::vector<std::pair<void*, size_t>> chunks_ UZFS_GUARDED_BY(mu_);
  Stats stats_ UZFS_GUARDED_BY(mu_);
  static inline std::atomic<int> injected_failures_{0};
  uint64_t allocations_ UZFS_GUARDED_BY(mu_) = 0;  // Allocate calls, for ReleaseIfIdle
  uint64_t allocations_seen_ UZFS_GUARDED_BY(mu_) = 0;
};

}  // namespace uzfs
