// The body every decompressor fuzz target shares.
//
// Input: 2 bytes (little-endian) choose lsize = value * 4 (0..256 KiB), the
// rest is a stored block. Decompressing it must give OK or Corruption and
// never touch memory outside the buffers (the sanitizers check). Then the
// whole input is compressed as plain data (level picked from the same two
// bytes) and must decompress to itself.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "zfs/util/status.h"

namespace uzfs::fuzz {

// decompress(src, dst) -> Status; compress(src, dst, hdr) -> Result<size_t>.
template <typename Decompress, typename Compress>
int FuzzCodec(const uint8_t* data, size_t size, Decompress decompress, Compress compress) {
  if (size < 2) return 0;
  const unsigned hdr = data[0] | (unsigned{data[1]} << 8);
  std::span<const uint8_t> in(data + 2, size - 2);
  std::vector<uint8_t> out(size_t{hdr} * 4);
  Status s = decompress(in, std::span<uint8_t>(out));
  if (!s.ok() && !s.IsCorruption()) std::abort();

  std::vector<uint8_t> buf(2 * size + 1024);
  auto n = compress(std::span<const uint8_t>(data, size), std::span<uint8_t>(buf), hdr);
  if (!n.ok()) std::abort();  // ample room: must fit
  std::vector<uint8_t> back(size);
  if (!decompress(std::span<const uint8_t>(buf.data(), *n), std::span<uint8_t>(back)).ok())
    std::abort();
  if (size && std::memcmp(back.data(), data, size) != 0) std::abort();
  return 0;
}

// The same for a codec with a level: compress(src, dst, level) ->
// Result<size_t>, the level from the input's two bytes by level_of(hdr).
template <typename Decompress, typename Compress, typename LevelOf>
int FuzzLeveledCodec(const uint8_t* data, size_t size, Decompress decompress, Compress compress, LevelOf level_of) {
  return FuzzCodec(data, size, decompress, [&](std::span<const uint8_t> s, std::span<uint8_t> d, unsigned hdr) {
    return compress(s, d, level_of(hdr));
  });
}

// The same for a codec without a level: compress(src, dst) -> Result<size_t>.
template <typename Decompress, typename Compress>
int FuzzCodecWithoutLevel(const uint8_t* data, size_t size, Decompress decompress, Compress compress) {
  return FuzzCodec(data, size, decompress,
                   [&](std::span<const uint8_t> s, std::span<uint8_t> d, unsigned) { return compress(s, d); });
}

}  // namespace uzfs::fuzz
