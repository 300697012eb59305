// ARC options for tests: a cache of a given size over a given number of
// shards, the rest as ArcOptions has them. Header-only, in uzfs::arctest.
#pragma once

#include <cstdint>

#include "cache/arc.h"

namespace uzfs::arctest {

// c_max and c_min in bytes; `shards` as ArcOptions's default unless told.
inline ArcOptions SizedArc(uint64_t c_max, uint64_t c_min, unsigned shards = ArcOptions{}.shards) {
  ArcOptions o;
  o.c_max = c_max;
  o.c_min = c_min;
  o.shards = shards;
  return o;
}

}  // namespace uzfs::arctest
