// VdevIoStats (see vdev_io_stats.h).
#include "zfs/vdev/vdev_io_stats.h"

#include <bit>

#include "zfs/util/probes.h"

namespace uzfs {

namespace {

thread_local int current_class = -1;

constexpr std::memory_order kRelaxed = std::memory_order_relaxed;

template <size_t N>
void Load(const std::array<std::atomic<uint64_t>, N>& from, std::array<uint64_t, N>* to) {
  for (size_t i = 0; i < N; i++) (*to)[i] = from[i].load(kRelaxed);
}

template <size_t N>
void AddTo(const std::array<uint64_t, N>& from, std::array<uint64_t, N>* to) {
  for (size_t i = 0; i < N; i++) (*to)[i] += from[i];
}

template <size_t N>
void SubFrom(const std::array<uint64_t, N>& earlier, std::array<uint64_t, N>* to) {
  // A counter never goes back; a smaller one means another set of counters
  // (a vdev replaced meanwhile): what is there now counts whole.
  for (size_t i = 0; i < N; i++) (*to)[i] -= earlier[i] <= (*to)[i] ? earlier[i] : 0;
}

}  // namespace

std::string_view IoClassName(IoClass c) {
  switch (c) {
    case IoClass::kSyncRead: return "sync_read";
    case IoClass::kSyncWrite: return "sync_write";
    case IoClass::kAsyncRead: return "async_read";
    case IoClass::kAsyncWrite: return "async_write";
    case IoClass::kScrub: return "scrub";
    case IoClass::kTrim: return "trim";
    case IoClass::kRebuild: return "rebuild";
  }
  return "?";
}

ScopedIoClass::ScopedIoClass(IoClass c) : prev_(current_class) { current_class = static_cast<int>(c); }
ScopedIoClass::~ScopedIoClass() { current_class = prev_; }
int CurrentIoClass() { return current_class; }

size_t LatencyBucket(uint64_t ns) {
  if (ns == 0) return 0;
  const size_t b = static_cast<size_t>(std::bit_width(ns)) - 1;
  return b < kLatencyBuckets ? b : kLatencyBuckets - 1;
}

size_t SizeBucket(uint64_t bytes) {
  if (bytes == 0) return 0;
  const size_t b = static_cast<size_t>(std::bit_width(bytes)) - 1;
  return b < kSizeBuckets ? b : kSizeBuckets - 1;
}

uint64_t HistogramAverage(const IoStatsSnapshot::LatencyHisto& h) {
  // In floating point: 37 buckets of counts times up to 2^37 ns overflow
  // 64 bits for busy devices.
  double total = 0, count = 0;
  for (size_t i = 0; i < h.size(); i++) {
    if (h[i] == 0) continue;
    total += static_cast<double>(h[i]) * 1.5 * static_cast<double>(uint64_t{1} << i);
    count += static_cast<double>(h[i]);
  }
  return count == 0 ? 0 : static_cast<uint64_t>(total / count);
}

void IoStatsSnapshot::Add(const IoStatsSnapshot& o) {
  for (size_t i = 0; i < 2; i++) {
    AddTo(o.total[i], &total[i]);
    AddTo(o.disk[i], &disk[i]);
  }
  for (size_t c = 0; c < kIoClasses; c++) {
    AddTo(o.queue[c], &queue[c]);
    AddTo(o.size_ind[c], &size_ind[c]);
    AddTo(o.size_agg[c], &size_agg[c]);
    pending[c] += o.pending[c];
    active[c] += o.active[c];
  }
}

IoStatsSnapshot IoStatsSnapshot::Since(const IoStatsSnapshot& earlier) const {
  IoStatsSnapshot d = *this;
  for (size_t i = 0; i < 2; i++) {
    SubFrom(earlier.total[i], &d.total[i]);
    SubFrom(earlier.disk[i], &d.disk[i]);
  }
  for (size_t c = 0; c < kIoClasses; c++) {
    SubFrom(earlier.queue[c], &d.queue[c]);
    SubFrom(earlier.size_ind[c], &d.size_ind[c]);
    SubFrom(earlier.size_agg[c], &d.size_agg[c]);
  }
  return d;
}

void VdevIoStats::Done(IoClass c, bool write, bool aggregated, uint64_t bytes, uint64_t queued_ns,
                       uint64_t dispatched_ns, uint64_t done_ns) {
  const size_t k = Idx(c);
  if (dispatched_ns == 0) {  // cancelled in the engine's queue
    pending_[k].fetch_sub(1, kRelaxed);
    return;
  }
  active_[k].fetch_sub(1, kRelaxed);
  const size_t rw = write ? 1 : 0;
  total_[rw][LatencyBucket(done_ns - queued_ns)].fetch_add(1, kRelaxed);
  disk_[rw][LatencyBucket(done_ns - dispatched_ns)].fetch_add(1, kRelaxed);
  queue_[k][LatencyBucket(dispatched_ns - queued_ns)].fetch_add(1, kRelaxed);
  (aggregated ? size_agg_ : size_ind_)[k][SizeBucket(bytes)].fetch_add(1, kRelaxed);
}

IoStatsSnapshot VdevIoStats::Snapshot() const {
  IoStatsSnapshot s;
  for (size_t i = 0; i < 2; i++) {
    Load(total_[i], &s.total[i]);
    Load(disk_[i], &s.disk[i]);
  }
  for (size_t c = 0; c < kIoClasses; c++) {
    Load(queue_[c], &s.queue[c]);
    Load(size_ind_[c], &s.size_ind[c]);
    Load(size_agg_[c], &s.size_agg[c]);
    // Momentarily negative when a dispatch was counted before its queueing
    // became visible to this thread: report 0.
    const int64_t p = pending_[c].load(kRelaxed), a = active_[c].load(kRelaxed);
    s.pending[c] = p > 0 ? static_cast<uint64_t>(p) : 0;
    s.active[c] = a > 0 ? static_cast<uint64_t>(a) : 0;
  }
  return s;
}

void NoteDispatched(IoTiming* t) {
  if (t == nullptr) return;
  uint64_t expect = 0;
  // Once: the uring engine dispatches a short transfer's remainder again.
  if (t->dispatched_ns.compare_exchange_strong(expect, probes::NowNs(), std::memory_order_relaxed) &&
      t->stats != nullptr)
    t->stats->Dispatched(t->cls);
}

}  // namespace uzfs
