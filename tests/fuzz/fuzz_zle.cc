// Fuzz target for the zle (n = 64) decompressor.
// The shared body (input layout, what is checked) is in codec_fuzz.h.
// Seeds: tests/fuzz/corpus/zle/.
#include "tests/fuzz/codec_fuzz.h"
#include "zfs/util/compress/compress.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Lambdas: the codec's n has a default, so the functions do not convert.
  return uzfs::fuzz::FuzzCodecWithoutLevel(
      data, size, [](std::span<const uint8_t> s, std::span<uint8_t> d) { return uzfs::ZleDecompress(s, d); },
      [](std::span<const uint8_t> s, std::span<uint8_t> d) { return uzfs::ZleCompress(s, d); });
}
