// VdevIoStats: what `zpool iostat -l -w -r -q` reports of a leaf vdev's
// I/O — latency histograms, request size histograms and queue depths, kept
// always (a few relaxed atomic additions and three clock reads an I/O).
//
// What it counts: every request RunChildIos (vdev.cc) issues to a leaf's
// IoEngine, flushes excepted (they have neither size nor place). Each
// request has an IoClass, as OpenZFS sorts its I/O into queues:
//  - sync read: a read someone waits for (a file read, metadata);
//  - sync write: the intent log's writes (an fsync waits for them);
//  - async read: prefetch;
//  - async write: a txg's writes;
//  - scrub: a scrub's or resilver's reads and the repairs they write;
//  - trim, rebuild: columns OpenZFS has; uzfs issues no such I/O (zeros).
// The class comes from the calling thread (ScopedIoClass, set where the
// work starts: the scan workers, the prefetcher, the intent log's commit),
// else from the operation (read: sync read; write: async write; durable
// write: sync write).
// Three moments of a request: queued (RunChildIos hands it to the engine),
// dispatched (the engine hands it to the device: the io_uring submission,
// or a worker thread taking it) and done. Like OpenZFS, "total wait" is
// queued to done and "disk wait" dispatched to done, by read or write; the
// per-class queue histograms hold queued to dispatched. Latency bucket i
// holds [2^i, 2^(i+1)) ns (the last also everything longer); size bucket i
// holds [2^i, 2^(i+1)) bytes (the last also everything larger). A request
// that merged several (a gathered write, a scattered read) is "agg", any
// other "ind". Pending: queued, not dispatched; active: dispatched, not done.
//
// Threading: every method may be called from any thread at once; a
// snapshot is not atomic across counters (a request may be in one
// histogram and not yet in another), as with OpenZFS.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace uzfs {

enum class IoClass : uint8_t { kSyncRead, kSyncWrite, kAsyncRead, kAsyncWrite, kScrub, kTrim, kRebuild };
inline constexpr size_t kIoClasses = 7;
std::string_view IoClassName(IoClass c);  // "sync_read", "sync_write", ...

// The class the calling thread's I/O has while the scope lives (scopes
// nest; the innermost wins).
class ScopedIoClass {
 public:
  explicit ScopedIoClass(IoClass c);
  ~ScopedIoClass();
  ScopedIoClass(const ScopedIoClass&) = delete;
  ScopedIoClass& operator=(const ScopedIoClass&) = delete;

 private:
  int prev_;
};
// The calling thread's class, or -1 when no scope is open.
int CurrentIoClass();

inline constexpr size_t kLatencyBuckets = 37;  // 1 ns .. 137 s, as OpenZFS
inline constexpr size_t kSizeBuckets = 25;     // 1 B .. 16 MiB

// A plain copy of the counters (or of their sum over a vdev's leaves).
struct IoStatsSnapshot {
  using LatencyHisto = std::array<uint64_t, kLatencyBuckets>;
  using SizeHisto = std::array<uint64_t, kSizeBuckets>;
  std::array<LatencyHisto, 2> total{};  // [0] reads, [1] writes
  std::array<LatencyHisto, 2> disk{};
  std::array<LatencyHisto, kIoClasses> queue{};
  std::array<SizeHisto, kIoClasses> size_ind{}, size_agg{};
  std::array<uint64_t, kIoClasses> pending{}, active{};

  void Add(const IoStatsSnapshot& o);
  // This minus an earlier snapshot of the same counters: the histograms'
  // differences (the I/O in between); queue depths stay this one's.
  IoStatsSnapshot Since(const IoStatsSnapshot& earlier) const;
};

// The bucket of a latency (ns) and of a size (bytes).
size_t LatencyBucket(uint64_t ns);
size_t SizeBucket(uint64_t bytes);

// The average of a latency histogram, each bucket counted at its midpoint
// (1.5 * 2^i ns), as OpenZFS averages them; 0 when empty.
uint64_t HistogramAverage(const IoStatsSnapshot::LatencyHisto& h);

class VdevIoStats {
 public:
  void Queued(IoClass c) { pending_[Idx(c)].fetch_add(1, std::memory_order_relaxed); }
  void Dispatched(IoClass c) {
    pending_[Idx(c)].fetch_sub(1, std::memory_order_relaxed);
    active_[Idx(c)].fetch_add(1, std::memory_order_relaxed);
  }
  // The request finished (or was cancelled): `dispatched_ns` 0 when it
  // never left the engine's queue.
  void Done(IoClass c, bool write, bool aggregated, uint64_t bytes, uint64_t queued_ns,
            uint64_t dispatched_ns, uint64_t done_ns);
  IoStatsSnapshot Snapshot() const;

 private:
  static size_t Idx(IoClass c) { return static_cast<size_t>(c); }
  using Histo37 = std::array<std::atomic<uint64_t>, kLatencyBuckets>;
  using Histo25 = std::array<std::atomic<uint64_t>, kSizeBuckets>;
  std::array<Histo37, 2> total_{};
  std::array<Histo37, 2> disk_{};
  std::array<Histo37, kIoClasses> queue_{};
  std::array<Histo25, kIoClasses> size_ind_{}, size_agg_{};
  std::array<std::atomic<int64_t>, kIoClasses> pending_{}, active_{};
};

// What the engine needs to tell the statistics a request was dispatched
// (IoRequest::timing): RunChildIos owns it until the request is done.
struct IoTiming {
  VdevIoStats* stats = nullptr;
  IoClass cls = IoClass::kSyncRead;
  bool write = false, aggregated = false;
  uint64_t bytes = 0;
  uint64_t queued_ns = 0;
  std::atomic<uint64_t> dispatched_ns{0};
};
// Called by the engines as the request goes to its device (once: a short
// transfer's remainder is the same request). Null `t`: nothing.
void NoteDispatched(IoTiming* t);

}  // namespace uzfs
