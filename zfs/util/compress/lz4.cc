// lz4 as ZFS stores it: a 4-byte big-endian length L, then L bytes of one
// LZ4 block (the liblz4 block format: no frame, no checksum), then padding.
//
// Promises: compression output is decodable by any LZ4 block decoder after
// the header (and ZFS's); Lz4Decompress reads at most psize bytes, writes at
// most lsize, and succeeds only if the block decodes to exactly lsize bytes.
// liblz4's LZ4_decompress_safe is the bounds-checked decoder ("safe" against
// malicious input), so a hostile block can only produce Corruption.
#include <algorithm>
#include <climits>

#include <lz4.h>

#include "zfs/util/compress/compress.h"
#include "zfs/util/endian.h"

namespace uzfs {

Result<size_t> Lz4Compress(std::span<const uint8_t> src, std::span<uint8_t> dst) {
  if (src.size() > static_cast<size_t>(LZ4_MAX_INPUT_SIZE))
    return Status::InvalidArgument("lz4: block too large");
  if (dst.size() <= kLz4HeaderSize) return Status::Overflow("lz4: no room");
  const size_t room = std::min<size_t>(dst.size() - kLz4HeaderSize, INT_MAX);
  int n = LZ4_compress_default(reinterpret_cast<const char*>(src.data()),
                               reinterpret_cast<char*>(dst.data() + kLz4HeaderSize),
                               static_cast<int>(src.size()), static_cast<int>(room));
  if (n <= 0) return Status::Overflow("lz4: output does not fit");
  StoreBE32(dst.data(), static_cast<uint32_t>(n));
  return kLz4HeaderSize + static_cast<size_t>(n);
}

Status Lz4Decompress(std::span<const uint8_t> src, std::span<uint8_t> dst) {
  if (src.size() < kLz4HeaderSize) return Status::Corruption("lz4: block shorter than header");
  const uint64_t len = LoadBE32(src.data());
  if (len > src.size() - kLz4HeaderSize)
    return Status::Corruption("lz4: length header exceeds block");
  if (len > INT_MAX || dst.size() > INT_MAX) return Status::Corruption("lz4: sizes out of range");
  int n = LZ4_decompress_safe(reinterpret_cast<const char*>(src.data() + kLz4HeaderSize),
                              reinterpret_cast<char*>(dst.data()), static_cast<int>(len),
                              static_cast<int>(dst.size()));
  if (n < 0) return Status::Corruption("lz4: malformed block");
  if (static_cast<size_t>(n) != dst.size())
    return Status::Corruption("lz4: block decodes to the wrong size");
  return Status::Ok();
}

}  // namespace uzfs
