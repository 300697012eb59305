// RangeTree: see range_tree.h for the representation and contracts.
#include "zfs/spa/range_tree.h"

#include <algorithm>

namespace uzfs {

void RangeTree::Insert(uint64_t start, uint64_t end) {
  by_start_.emplace(start, end);
  by_size_.emplace(end - start, start);
  space_ += end - start;
}

void RangeTree::Erase(Map::iterator it) {
  by_size_.erase({it->second - it->first, it->first});
  space_ -= it->second - it->first;
  by_start_.erase(it);
}

void RangeTree::Clear() {
  by_start_.clear();
  by_size_.clear();
  space_ = 0;
}

Status RangeTree::Add(uint64_t start, uint64_t size) {
  if (size == 0) return Status::Ok();
  uint64_t end = start + size;
  if (end < start) return Status::InvalidArgument("range tree add: range wraps");
  if (Intersects(start, size)) return Status::InvalidArgument("range tree add: overlaps a segment");
  // Merge with a segment ending exactly at start and one starting at end.
  auto next = by_start_.lower_bound(start);
  if (next != by_start_.begin()) {
    auto prev = std::prev(next);
    if (prev->second == start) {
      start = prev->first;
      Erase(prev);
    }
  }
  if (next != by_start_.end() && next->first == end) {
    end = next->second;
    Erase(next);
  }
  Insert(start, end);
  return Status::Ok();
}

Status RangeTree::Remove(uint64_t start, uint64_t size) {
  if (size == 0) return Status::Ok();
  const uint64_t end = start + size;
  if (end < start) return Status::InvalidArgument("range tree remove: range wraps");
  auto it = by_start_.upper_bound(start);
  if (it == by_start_.begin()) return Status::InvalidArgument("range tree remove: range absent");
  --it;
  if (it->second < end) return Status::InvalidArgument("range tree remove: range absent");
  const uint64_t s = it->first, e = it->second;
  Erase(it);
  if (s < start) Insert(s, start);
  if (end < e) Insert(end, e);
  return Status::Ok();
}

uint64_t RangeTree::AddOverlapping(uint64_t start, uint64_t size) {
  uint64_t end = start + size;
  if (size == 0 || end < start) return 0;
  // Absorb every segment touching [start, end] into one.
  uint64_t covered = 0;
  auto it = by_start_.upper_bound(start);
  if (it != by_start_.begin() && std::prev(it)->second >= start) --it;
  uint64_t lo = start, hi = end;
  while (it != by_start_.end() && it->first <= end) {
    lo = std::min(lo, it->first);
    hi = std::max(hi, it->second);
    covered += std::min(it->second, end) - std::max(it->first, start);
    auto next = std::next(it);
    Erase(it);
    it = next;
  }
  Insert(lo, hi);
  return size - covered;
}

uint64_t RangeTree::RemoveOverlapping(uint64_t start, uint64_t size) {
  const uint64_t end = start + size;
  if (size == 0 || end < start) return 0;
  uint64_t removed = 0;
  auto it = by_start_.upper_bound(start);
  if (it != by_start_.begin() && std::prev(it)->second > start) --it;
  while (it != by_start_.end() && it->first < end) {
    const uint64_t s = it->first, e = it->second;
    auto next = std::next(it);
    Erase(it);
    if (s < start) Insert(s, start);
    if (end < e) Insert(end, e);
    removed += std::min(e, end) - std::max(s, start);
    it = next;
  }
  return removed;
}

bool RangeTree::Contains(uint64_t start, uint64_t size) const {
  if (size == 0) return true;
  auto it = by_start_.upper_bound(start);
  if (it == by_start_.begin()) return false;
  --it;
  return it->second >= start + size && start + size > start;
}

bool RangeTree::Intersects(uint64_t start, uint64_t size) const {
  if (size == 0) return false;
  const uint64_t end = start + size < start ? UINT64_MAX : start + size;
  auto it = by_start_.upper_bound(start);
  if (it != by_start_.end() && it->first < end) return true;
  if (it == by_start_.begin()) return false;
  return std::prev(it)->second > start;
}

void RangeTree::ForEach(const std::function<void(uint64_t, uint64_t)>& fn) const {
  for (const auto& [s, e] : by_start_) fn(s, e - s);
}

std::optional<uint64_t> RangeTree::FirstFit(uint64_t cursor, uint64_t size,
                                            size_t max_scan) const {
  if (size == 0 || largest_size() < size) return std::nullopt;
  auto it = by_start_.upper_bound(cursor);
  if (it != by_start_.begin()) {
    auto prev = std::prev(it);
    if (prev->second > cursor && prev->second - cursor >= size) return cursor;
  }
  for (size_t n = 0; it != by_start_.end() && n < max_scan; ++it, ++n) {
    if (it->second - it->first >= size) return it->first;
  }
  return std::nullopt;
}

std::optional<uint64_t> RangeTree::BestFit(uint64_t size) const {
  auto it = by_size_.lower_bound({size, 0});
  if (it == by_size_.end()) return std::nullopt;
  return it->second;
}

std::optional<Segment> RangeTree::Largest() const {
  if (by_size_.empty()) return std::nullopt;
  const uint64_t len = by_size_.rbegin()->first;
  auto it = by_size_.lower_bound({len, 0});
  return Segment{it->second, it->second + len};
}

Status RangeTree::MoveTo(RangeTree* dst) {
  for (const auto& [s, e] : by_start_) {
    if (dst->Intersects(s, e - s)) return Status::InvalidArgument("range tree move: overlap");
  }
  for (const auto& [s, e] : by_start_) UZFS_RETURN_IF_ERROR(dst->Add(s, e - s));
  Clear();
  return Status::Ok();
}

}  // namespace uzfs
