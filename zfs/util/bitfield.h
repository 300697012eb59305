// Bit fields of on-disk 64-bit words (block pointers, space map entries):
// GetBits reads len bits starting at bit lo, PutBits places the low len
// bits of a value there. len is 1..64 for GetBits and 1..63 for PutBits.
#pragma once

#include <cstdint>

namespace uzfs {

constexpr uint64_t GetBits(uint64_t word, int lo, int len) {
  return (word >> lo) & ((len == 64) ? ~uint64_t{0} : ((uint64_t{1} << len) - 1));
}

constexpr uint64_t PutBits(uint64_t value, int lo, int len) {
  return (value & ((uint64_t{1} << len) - 1)) << lo;
}

}  // namespace uzfs
