// Fuzz target for the lz4 (4-byte big-endian length + LZ4 block) decompressor.
//
// Input: 2 bytes (little-endian) choose lsize = value * 4 (0..256 KiB), the
// rest is a stored block. Decompressing it must give OK or Corruption and
// never touch memory outside the buffers (the sanitizers check). Then the
// whole input is compressed as plain data and must decompress to itself.
// Seeds: tests/fuzz/corpus/lz4/ (valid blocks, truncated and damaged ones).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "zfs/util/compress/compress.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const unsigned hdr = data[0] | (unsigned{data[1]} << 8);
  const size_t lsize = size_t{hdr} * 4;
  std::span<const uint8_t> in(data + 2, size - 2);
  std::vector<uint8_t> out(lsize);
  uzfs::Status s = uzfs::Lz4Decompress(in, out);
  if (!s.ok() && !s.IsCorruption()) std::abort();

  std::span<const uint8_t> plain(data, size);
  std::vector<uint8_t> buf(2 * size + 1024);
  auto n = uzfs::Lz4Compress(plain, buf);
  if (!n.ok()) std::abort();  // ample room: must fit
  std::vector<uint8_t> back(size);
  in = std::span<const uint8_t>(buf.data(), *n);
  out.swap(back);
  if (!uzfs::Lz4Decompress(in, out).ok()) std::abort();
  if (size && std::memcmp(out.data(), data, size) != 0) std::abort();
  return 0;
}
