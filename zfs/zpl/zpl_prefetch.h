// ZplPrefetch: stream prefetch for file reads (zfetch). One StreamPrefetcher
// (cache/prefetch.h) per file being read; each read reports the blocks it
// covers and the blocks the prefetcher answers are handed to
// ObjsetWriter::Prefetch, which reads them into the ARC in the background.
// The demand read that follows finds them there (arcstats
// demand_hit_predictive_prefetch / prefetch_data_*).
//
// Settings come from the tunables (zfetch_disable, zfetch_min_distance,
// zfetch_max_distance, zfetch_max_streams, zfetch_max_stride) when given,
// read when a file's prefetcher is made; else the same defaults. Nothing is
// done when the dataset's reads are not cached (no ARC).
// Per-file state is bounded: past `kMaxFiles` files the oldest half is
// dropped (a file's prefetcher is cheap to rebuild; it relearns its stream).
// Threading: OnRead is safe from many threads at once.
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include "cache/prefetch.h"
#include "zfs/dmu/objset_writer.h"
#include "zfs/util/mutex.h"
#include "zfs/util/tunables.h"

namespace uzfs {

struct ZplPrefetchStats {
  uint64_t reads = 0;            // reads reported
  uint64_t stream_hits = 0;      // reads that continued a stream
  uint64_t blocks_issued = 0;    // blocks handed to ObjsetWriter::Prefetch
};

class ZplPrefetch {
 public:
  static constexpr size_t kMaxFiles = 4096;
  // `tunables` may be null (defaults); both must outlive this.
  ZplPrefetch(ObjsetWriter& os, const Tunables* tunables) : os_(os), tunables_(tunables) {}

  // A read of [offset, offset + len) of object `obj` (blocks of `block_size`
  // bytes, `file_size` bytes long): issues the read-ahead it triggers.
  void OnRead(uint64_t obj, uint64_t block_size, uint64_t offset, uint64_t len, uint64_t file_size)
      UZFS_EXCLUDES(mu_);
  // The object is gone or rewritten from scratch: forget its streams.
  void Forget(uint64_t obj) UZFS_EXCLUDES(mu_);
  ZplPrefetchStats stats() const UZFS_EXCLUDES(mu_);

 private:
  struct File {
    uint64_t block_size = 0;
    uint64_t used = 0;
    std::unique_ptr<StreamPrefetcher> pf;
  };
  uint64_t Get(std::string_view name, uint64_t def) const;

  ObjsetWriter& os_;
  const Tunables* const tunables_;
  mutable Mutex mu_;
  std::map<uint64_t, File> files_ UZFS_GUARDED_BY(mu_);
  uint64_t tick_ UZFS_GUARDED_BY(mu_) = 0;
  ZplPrefetchStats stats_ UZFS_GUARDED_BY(mu_);
};

}  // namespace uzfs
