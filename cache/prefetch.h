// Stream prefetch (zfetch-like): which blocks of a file to read ahead.
//
// One StreamPrefetcher per open file (dnode). The read path reports each
// demand read (first block id, block count); the prefetcher answers with
// the block ids to read ahead, in issue order, and the caller issues them
// (Arc reads with ArcReadFlags::prefetch, so they count as prefetches and a
// later demand hit on one counts as a prefetch hit).
//
// Detection: reads that match no stream are remembered (the last `history`
// of them). A read one block after (before) a remembered one starts a
// forward (backward) stream; a read `d` blocks from a remembered one (1 <
// |d| <= max_stride) that itself was `d` from an older one starts a stream
// of stride d. A new stream reads start_distance strides ahead (at most
// min_distance) and doubles from there. Up to max_streams streams live per file; a new one replaces
// the least recently used. A read that continues a stream (lands on the
// stream's next step, or up to max_skip steps further, inside what was
// already read ahead: requests reordered on their way) is a hit: the stream
// moves on and, on an exact next step, its read-ahead distance doubles,
// from min_distance up to max_distance (in strides); blocks not yet issued
// up to that distance are returned. The skip window is kept small on
// purpose: a stream left by an earlier sequential pass must not take random
// reads for continuations (each such "hit" would read ahead as many blocks
// as it skipped; with a window of W blocks over a file of N that costs about
// W*W/2N blocks per random read). Random reads start no stream and return
// nothing. Blocks before 0 or at/after `end` are never returned; a block
// is returned at most once per stream.
//
// Threading: OnRead and stats are safe from many threads at once (one
// mutex per file; the work per read is a few comparisons).
#pragma once

#include <cstdint>
#include <vector>

#include "zfs/util/mutex.h"

namespace uzfs {

struct PrefetchOptions {
  unsigned max_streams = 8;     // zfetch_max_streams
  uint64_t min_distance = 2;    // strides read ahead by a new stream
  uint64_t max_distance = 64;   // cap on the distance (strides)
  uint64_t max_stride = 64;     // largest |stride| detected (blocks)
  unsigned history = 16;        // unmatched reads remembered for detection
  uint64_t max_skip = 16;       // strides a continuing read may land past the next step
  uint64_t start_distance = 2;  // strides a new stream reads ahead (<= min_distance)
};

// Options for a file of `block_size`-byte blocks from the byte distances of
// the tunables (zfetch_min_distance, zfetch_max_distance).
PrefetchOptions PrefetchOptionsForBlockSize(uint64_t block_size, uint64_t min_distance_bytes,
                                            uint64_t max_distance_bytes, unsigned max_streams,
                                            uint64_t max_stride);

struct PrefetchStats {
  uint64_t hits = 0;            // reads that continued a stream
  uint64_t misses = 0;          // reads that did not
  uint64_t streams_created = 0;
  uint64_t streams_replaced = 0;
  uint64_t blocks_issued = 0;
};

class StreamPrefetcher {
 public:
  explicit StreamPrefetcher(const PrefetchOptions& opts = {});

  // A demand read of blocks [blkid, blkid + nblks) of a file of `end`
  // blocks (UINT64_MAX: unknown). Returns the blocks to read ahead.
  std::vector<uint64_t> OnRead(uint64_t blkid, uint64_t nblks = 1, uint64_t end = UINT64_MAX)
      UZFS_EXCLUDES(mu_);
  PrefetchStats stats() const UZFS_EXCLUDES(mu_);
  size_t stream_count() const UZFS_EXCLUDES(mu_);

 private:
  struct Stream {
    int64_t stride;    // blocks between reads (negative: backward)
    int64_t last;      // the lead block of the latest read
    int64_t frontier;  // next block (along the stride) not yet returned
    uint64_t distance; // strides to stay ahead
    uint64_t used;     // tick of the latest hit (LRU replacement)
  };
  struct Seen {
    int64_t first, last;
  };
  // Appends blocks from s.frontier up to s.last + stride * distance.
  void Issue(Stream& s, int64_t end, std::vector<uint64_t>* out) UZFS_REQUIRES(mu_);

  const PrefetchOptions opts_;
  mutable Mutex mu_;
  std::vector<Stream> streams_ UZFS_GUARDED_BY(mu_);
  std::vector<Seen> history_ UZFS_GUARDED_BY(mu_);  // ring
  size_t history_next_ UZFS_GUARDED_BY(mu_) = 0;
  uint64_t tick_ UZFS_GUARDED_BY(mu_) = 0;
  PrefetchStats stats_ UZFS_GUARDED_BY(mu_);
};

}  // namespace uzfs
