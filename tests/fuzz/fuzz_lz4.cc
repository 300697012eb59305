// Fuzz target for the lz4 (4-byte big-endian length + LZ4 block) decompressor.
// The shared body (input layout, what is checked) is in codec_fuzz.h.
// Seeds: tests/fuzz/corpus/lz4/.
#include "tests/fuzz/codec_fuzz.h"
#include "zfs/util/compress/compress.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return uzfs::fuzz::FuzzCodecWithoutLevel(data, size, uzfs::Lz4Decompress, uzfs::Lz4Compress);
}
