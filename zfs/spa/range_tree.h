// RangeTree: an in-memory set of disjoint half-open byte ranges
// [start, end), the currency of space accounting (free space of a
// metaslab, the allocations and frees of one txg, deferred frees).
//
// Representation: two ordered indexes kept in step.
//   by_start_  start -> end, ordered by address. Adjacent or overlapping
//              segments never coexist: Add merges with its neighbours and
//              Remove splits the segment it cuts, so the map is always the
//              minimal set of segments for the covered bytes.
//   by_size_   (length, start), ordered by length then address: the
//              allocator's "smallest segment that fits" and "largest
//              segment" queries in O(log n).
// Every mutation is O(log n); queries are O(log n) except FirstFit, which
// walks forward from a cursor (bounded by max_scan so a fragmented tree
// cannot make an allocation slow; callers then fall back to BestFit).
// Memory is about 100 bytes per segment (two red-black tree nodes), so a
// metaslab fragmented into 10^6 segments costs ~100 MB, like ZFS's trees.
//
// Add and Remove are strict: adding a byte that is already present or
// removing one that is absent is a caller bug (in the allocator: a double
// free or a free of never-allocated space) and returns InvalidArgument
// with the tree unchanged. The *Overlapping variants clip instead.
//
// Threading: none. A RangeTree is a plain value; its owner locks it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "zfs/util/status.h"

namespace uzfs {

struct Segment {
  uint64_t start = 0;
  uint64_t end = 0;  // exclusive
  uint64_t size() const { return end - start; }
  friend bool operator==(const Segment&, const Segment&) = default;
};

class RangeTree {
 public:
  using Map = std::map<uint64_t, uint64_t>;  // start -> end

  RangeTree() = default;
  RangeTree(const RangeTree&) = default;
  RangeTree& operator=(const RangeTree&) = default;
  RangeTree(RangeTree&&) noexcept = default;
  RangeTree& operator=(RangeTree&&) noexcept = default;

  // Adds [start, start+size). InvalidArgument (tree unchanged) if any byte
  // is already present or the range wraps. size 0 is a no-op.
  Status Add(uint64_t start, uint64_t size);
  // Removes [start, start+size). InvalidArgument (tree unchanged) unless
  // every byte is present.
  Status Remove(uint64_t start, uint64_t size);
  // Adds whatever part of the range is absent; returns bytes added.
  uint64_t AddOverlapping(uint64_t start, uint64_t size);
  // Removes whatever part of the range is present; returns bytes removed.
  uint64_t RemoveOverlapping(uint64_t start, uint64_t size);

  // True if every byte of [start, start+size) is present (size 0: true).
  bool Contains(uint64_t start, uint64_t size) const;
  // True if any byte of [start, start+size) is present.
  bool Intersects(uint64_t start, uint64_t size) const;

  uint64_t space() const { return space_; }
  size_t num_segments() const { return by_start_.size(); }
  bool empty() const { return by_start_.empty(); }
  void Clear();

  // Segments in address order: for (auto [start, end] : tree.segments()).
  const Map& segments() const { return by_start_; }
  void ForEach(const std::function<void(uint64_t start, uint64_t size)>& fn) const;

  // Lowest offset o >= cursor with [o, o+size) inside one segment (the
  // start of the first segment at or after the cursor that is long enough,
  // or the cursor itself when it lies in such a segment). Looks at no more
  // than max_scan segments; nullopt if none of them fits.
  std::optional<uint64_t> FirstFit(uint64_t cursor, uint64_t size,
                                   size_t max_scan = SIZE_MAX) const;
  // Start of the smallest segment of at least `size` bytes (the lowest
  // address among equals); nullopt if no segment is that long.
  std::optional<uint64_t> BestFit(uint64_t size) const;
  // The longest segment (lowest address among equals); nullopt if empty.
  std::optional<Segment> Largest() const;
  uint64_t largest_size() const { return by_size_.empty() ? 0 : by_size_.rbegin()->first; }

  // Moves every segment of *this into `dst` (which must not overlap it) and
  // empties *this. InvalidArgument, with both unchanged, on overlap.
  Status MoveTo(RangeTree* dst);

  friend bool operator==(const RangeTree& a, const RangeTree& b) {
    return a.by_start_ == b.by_start_;
  }

 private:
  void Insert(uint64_t start, uint64_t end);
  void Erase(Map::iterator it);

  Map by_start_;
  std::set<std::pair<uint64_t, uint64_t>> by_size_;  // (length, start)
  uint64_t space_ = 0;
};

}  // namespace uzfs
