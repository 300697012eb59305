// The running fletcher-4 checksum of a send stream.
//
// A send stream's checksum covers every byte before the record that stores
// it, summed in pieces as the stream is written: a record's first 280
// bytes, then its 32-byte checksum field, then its payload. Fletcher-4
// sums 32-bit words; a piece whose length is not a multiple of 4 has its
// last bytes left out, as OpenZFS's incremental sum does, so the pieces
// must be appended exactly as the sender wrote them.
//
// Each piece is summed from zero with the fastest fletcher-4 kernel
// (zfs/util/checksum.h) and folded into the running sums: after n more
// words, with (a2, b2, c2, d2) the piece's own sums,
//   a = a1 + a2
//   b = b1 + n a1 + b2
//   c = c1 + n b1 + n(n+1)/2 a1 + c2
//   d = d1 + n c1 + n(n+1)/2 b1 + n(n+1)(n+2)/6 a1 + d2      (mod 2^64)
// so a stream checksums at the kernel's speed, not a word at a time.
// `byteswap` sums big-endian words: a stream written on the other byte
// order. Not thread-safe.
#pragma once

#include <cstdint>
#include <span>

#include "zfs/util/checksum.h"

namespace uzfs::send {

class StreamChecksum {
 public:
  explicit StreamChecksum(bool byteswap = false) : byteswap_(byteswap) {}

  void Append(std::span<const uint8_t> piece);
  const Checksum256& value() const { return sum_; }
  void Reset() { sum_ = Checksum256{}; }

 private:
  bool byteswap_;
  Checksum256 sum_;
};

// Folds `piece` (the fletcher-4 sums of `words` words, from zero) into
// `running`: the formula above. Exposed for its test.
Checksum256 Fletcher4Combine(const Checksum256& running, const Checksum256& piece, uint64_t words);

}  // namespace uzfs::send
