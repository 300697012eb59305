// The 128-byte block pointer (blkptr_t) of the OpenZFS on-disk format.
//
// A block pointer names a block: up to three copies (DVAs), its logical and
// physical sizes, how it is compressed and checksummed, what it holds, and
// the checksum of its stored bytes. Sixteen 64-bit words, in the byte order
// of the block that contains the pointer:
//
//   word  0- 5  dva[0..2]: word a | vdev:32 | grid:8 | asize:24 (sectors)  |
//                          word b | gang:1  | offset:63 (sectors)          |
//   word  6     prop:  byteorder:1 dedup:1 crypt:1 level:5 type:8
//                      checksum:8 (or etype) embedded:1 comp:7
//                      psize-1:16 lsize-1:16 (sectors)
//               embedded form: ... comp:7 psize-1:7 lsize-1:25 (bytes)
//   word  7- 8  padding
//   word  9     physical birth txg (0: same as logical)
//   word 10     logical birth txg
//   word 11     fill count
//   word 12-15  checksum (Checksum256)
//
// (bit 63 on the left.) Sizes in normal pointers count 512-byte sectors;
// a hole is a pointer whose first DVA is all zero. An embedded pointer keeps
// up to 112 bytes of (compressed) data in words 0-5, 7-9 and 11-15, each
// word holding its 8 bytes in little-endian order.
//
// Decode never fails: it recovers the fields. Validate is what protects the
// pool: it rejects impossible pointers (unknown enums, sizes over 16 MiB,
// DVAs outside their vdev) before anything follows them.
#pragma once

#include <array>
#include <functional>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "zfs/util/checksum.h"
#include "zfs/util/status.h"

namespace uzfs {

inline constexpr size_t kBlockPtrSize = 128;
inline constexpr uint64_t kSectorShift = 9;
inline constexpr uint64_t kMaxBlockSize = 16ull << 20;   // SPA_MAXBLOCKSIZE
inline constexpr uint64_t kOldMaxBlockSize = 128 * 1024;  // SPA_OLD_MAXBLOCKSIZE: more needs large_blocks
inline constexpr size_t kEmbeddedPayloadMax = 112;       // BPE_PAYLOAD_SIZE

// A data virtual address: where one copy of a block lives.
struct Dva {
  uint32_t vdev = 0;     // top-level vdev index
  uint8_t grid = 0;      // reserved (RAID-Z geometry, unused)
  uint64_t asize = 0;    // allocated bytes (multiple of 512)
  uint64_t offset = 0;   // bytes from the start of the vdev's allocatable space
  bool gang = false;     // points at a gang header, not the data
  bool IsEmpty() const { return vdev == 0 && grid == 0 && asize == 0 && offset == 0 && !gang; }
  friend bool operator==(const Dva&, const Dva&) = default;
};

// Embedded-data payload kinds (etype).
enum class EmbeddedType : uint8_t { kData = 0, kReserved = 1, kRedacted = 2 };
inline constexpr uint8_t kEmbeddedTypeCount = 3;

struct BlockPtr {
  Dva dva[3];
  uint64_t lsize = 0;           // logical bytes
  uint64_t psize = 0;           // physical (stored) bytes
  uint8_t compression = 0;      // zio_compress value (7 bits)
  bool embedded = false;
  uint8_t checksum = 0;         // zio_checksum value (normal pointers)
  uint8_t etype = 0;            // EmbeddedType (embedded pointers)
  uint8_t type = 0;             // dmu_object_type
  uint8_t level = 0;            // 0 = data, >0 = indirect
  bool encrypted = false;
  bool dedup = false;
  bool little_endian = true;    // byte order of the block's contents
  uint64_t pad[2] = {0, 0};
  uint64_t phys_birth = 0;
  uint64_t birth = 0;           // logical birth txg
  uint64_t fill = 0;
  Checksum256 cksum;
  std::array<uint8_t, kEmbeddedPayloadMax> payload{};  // embedded data (psize bytes used)

  bool IsHole() const { return !embedded && dva[0].IsEmpty(); }
  int NumDvas() const;  // copies present (0 for holes and embedded)
  uint64_t PhysBirth() const { return phys_birth ? phys_birth : birth; }
  friend bool operator==(const BlockPtr&, const BlockPtr&) = default;
};

// Fields from 128 bytes. `swap` when the containing block was written in
// the other byte order.
BlockPtr DecodeBlockPtr(std::span<const uint8_t, kBlockPtrSize> raw, bool swap = false);
// 128 bytes in little-endian order. REQUIRES: Validate-able sizes (normal
// sizes multiples of 512, at most 16 MiB; embedded psize <= 112).
void EncodeBlockPtr(const BlockPtr& bp, std::span<uint8_t, kBlockPtrSize> out);

// What Validate checks DVAs against.
struct BlockPtrLimits {
  // Allocatable bytes of each top-level vdev; a DVA naming a vdev past the
  // end, or reaching past its size, is rejected. Empty: DVAs unchecked.
  std::vector<uint64_t> vdev_asize;
  // Allocated bytes of a block of psize bytes on top-level vdev v (raidz
  // parity and padding included). A DVA whose asize is smaller than its
  // block needs is refused (reading or repairing it would touch other
  // blocks). A gang DVA's asize covers its members, which live elsewhere,
  // so only its 512-byte header is bounds-checked. Empty: psize rounded
  // up to 512.
  std::function<uint64_t(uint32_t v, uint64_t psize)> allocated_size;
};
// OK, or Corruption saying which field is impossible.
Status ValidateBlockPtr(const BlockPtr& bp, const BlockPtrLimits& limits);

// One line in the style zdb prints, e.g.
// "DVA[0]=<0:400000:20000> [L0 type 19] fletcher4 lzjb LE contiguous unique
//  single size=20000L/4000P birth=10L/10P fill=1 cksum=a:b:c:d"
std::string FormatBlockPtr(const BlockPtr& bp);

}  // namespace uzfs
