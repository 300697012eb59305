// Fuzz target for the gzip-N (zlib stream) decompressor.
// The shared body (input layout, what is checked) is in codec_fuzz.h.
// Seeds: tests/fuzz/corpus/gzip/.
#include "tests/fuzz/codec_fuzz.h"
#include "zfs/util/compress/compress.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return uzfs::fuzz::FuzzLeveledCodec(data, size, uzfs::GzipDecompress, uzfs::GzipCompress,
                                      [](unsigned hdr) { return static_cast<int>(1 + hdr % 9); });
}
