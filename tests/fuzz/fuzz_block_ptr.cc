// Fuzz target: any 128 bytes decode to a block pointer without crashing;
// a pointer the validator accepts re-encodes to bytes that decode to the
// same pointer, and formatting never overruns.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "zfs/spa/block_ptr.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < uzfs::kBlockPtrSize + 1) return 0;
  const bool swap = data[uzfs::kBlockPtrSize] & 1;
  uzfs::BlockPtr bp = uzfs::DecodeBlockPtr(
      std::span<const uint8_t, uzfs::kBlockPtrSize>(data, uzfs::kBlockPtrSize), swap);
  uzfs::BlockPtrLimits limits;
  limits.vdev_asize = {1ull << 40, 1ull << 30};
  (void)uzfs::FormatBlockPtr(bp);
  if (!uzfs::ValidateBlockPtr(bp, limits).ok()) return 0;
  uint8_t raw[uzfs::kBlockPtrSize];
  uzfs::EncodeBlockPtr(bp, std::span<uint8_t, uzfs::kBlockPtrSize>(raw));
  uzfs::BlockPtr again = uzfs::DecodeBlockPtr(std::span<const uint8_t, uzfs::kBlockPtrSize>(raw));
  if (!(again == bp)) std::abort();
  return 0;
}
