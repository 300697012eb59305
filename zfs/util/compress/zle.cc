// ZLE, ZFS's zero-length encoding, for blocks that are mostly zeros.
//
// The stream is a sequence of runs, each introduced by one length byte L:
//   L <  n : a literal run; the next L+1 bytes are copied as they are.
//   L >= n : a zero run of L-n+1 zero bytes; nothing follows.
// With ZFS's n = 64, literal runs hold 1..64 bytes and zero runs 1..192.
//
// The encoder makes the same choices as ZFS's, so it reproduces the bytes of
// blocks ZFS wrote (checked against real blocks in block_kat_test):
//  - at a zero byte, a zero run takes as many zeros as it can (<= 256-n);
//  - at a nonzero byte, a literal run takes up to n bytes and ends before
//    the first pair of zeros; a lone zero between nonzero bytes stays in
//    the literal, and a zero as the run's last possible byte is left out;
//  - it gives up (Overflow) like ZFS: when fewer than 2 bytes of output room
//    remain at the start of a run, or fewer than n after a literal's length
//    byte, even if the run itself would have fit.
// The decoder checks every run against both buffers: a run that would read
// past src or write past dst, or a stream that ends before dst is full, is
// Corruption. Bytes after the point where dst becomes full are ignored
// (sector padding).
#include "zfs/util/compress/compress.h"

#include <algorithm>
#include <cstring>

namespace uzfs {

Result<size_t> ZleCompress(std::span<const uint8_t> src, std::span<uint8_t> dst, int n) {
  if (n < 1 || n > 255) return Status::InvalidArgument("zle: n must be 1..255");
  const size_t nn = static_cast<size_t>(n);
  const size_t zmax = 256 - nn;
  const uint8_t* s = src.data();
  const size_t slen = src.size();
  uint8_t* d = dst.data();
  const size_t cap = dst.size();
  size_t i = 0;  // input position
  size_t o = 0;  // output position
  while (i < slen) {
    if (cap - o < 2) return Status::Overflow("zle: output does not fit");
    const size_t start = i;
    if (s[i] == 0) {
      const size_t lim = std::min(slen, start + zmax);
      while (i < lim && s[i] == 0) i++;
      d[o++] = static_cast<uint8_t>(i - start - 1 + nn);
    } else {
      const size_t len_at = o++;
      if (cap - o < nn) return Status::Overflow("zle: output does not fit");
      const size_t lim = std::min(slen, start + nn);
      while (i + 1 < lim && (s[i] != 0 || s[i + 1] != 0)) i++;
      if (s[i] != 0) i++;  // the last byte in reach joins if it is nonzero
      std::memcpy(d + o, s + start, i - start);
      o += i - start;
      d[len_at] = static_cast<uint8_t>(i - start - 1);
    }
  }
  return o;
}

Status ZleDecompress(std::span<const uint8_t> src, std::span<uint8_t> dst, int n) {
  if (n < 1 || n > 255) return Status::InvalidArgument("zle: n must be 1..255");
  const size_t nn = static_cast<size_t>(n);
  const uint8_t* s = src.data();
  const size_t slen = src.size();
  uint8_t* d = dst.data();
  const size_t dlen = dst.size();
  size_t i = 0, o = 0;
  while (o < dlen) {
    if (i >= slen) return Status::Corruption("zle: stream ends before the block is full");
    size_t len = static_cast<size_t>(s[i++]) + 1;
    if (len <= nn) {
      if (len > slen - i) return Status::Corruption("zle: literal run past end of input");
      if (len > dlen - o) return Status::Corruption("zle: literal run past end of block");
      std::memcpy(d + o, s + i, len);
      i += len;
    } else {
      len -= nn;
      if (len > dlen - o) return Status::Corruption("zle: zero run past end of block");
      std::memset(d + o, 0, len);
    }
    o += len;
  }
  return Status::Ok();
}

}  // namespace uzfs
