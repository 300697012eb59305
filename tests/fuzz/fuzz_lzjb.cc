// Fuzz target for the lzjb decompressor.
// The shared body (input layout, what is checked) is in codec_fuzz.h.
// Seeds: tests/fuzz/corpus/lzjb/.
#include "tests/fuzz/codec_fuzz.h"
#include "zfs/util/compress/compress.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return uzfs::fuzz::FuzzCodecWithoutLevel(data, size, uzfs::LzjbDecompress, uzfs::LzjbCompress);
}
