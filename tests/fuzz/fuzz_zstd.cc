// Fuzz target for the zstd (8-byte ZFS header + magicless frame) decompressor.
// The shared body (input layout, what is checked) is in codec_fuzz.h.
// Seeds: tests/fuzz/corpus/zstd/.
#include "tests/fuzz/codec_fuzz.h"
#include "zfs/util/compress/compress.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return uzfs::fuzz::FuzzLeveledCodec(data, size, uzfs::ZstdDecompress, uzfs::ZstdCompress,
                                      [](unsigned hdr) { return (hdr % 2) ? 1 + int(hdr % 9) : -1 - int(hdr % 10); });
}
