// Block checksums, bit-exact with the OpenZFS on-disk format.
//
// A checksum is four 64-bit words (zio_cksum_t), as stored in the last 32
// bytes of a block pointer and printed by zdb as cksum=w0:w1:w2:w3.
//  - fletcher2: two pairs of 64-bit running sums over 64-bit words (read only).
//  - fletcher4: four 64-bit running sums over 32-bit words; "native" reads
//    the words little-endian, "byteswap" reads them big-endian (a block
//    written by a big-endian host). The SIMD kernels (SSE2, AVX2, AVX-512)
//    give results identical to the scalar reference; the fastest supported
//    one is chosen at first use, or by UZFS_FLETCHER4_IMPL.
//  - sha256: the 32-byte digest stored as four big-endian 64-bit words.
// Buffers whose size is not a multiple of the word size are summed over the
// whole words only, as ZFS does (block sizes are multiples of 512).
// All functions are thread-safe and allocate nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "zfs/util/status.h"

namespace uzfs {

struct Checksum256 {
  uint64_t word[4] = {0, 0, 0, 0};
  friend bool operator==(const Checksum256&, const Checksum256&) = default;
};

// The on-disk checksum algorithm numbers (enum zio_checksum).
enum class ChecksumType : uint8_t {
  kInherit = 0,
  kOn = 1,
  kOff = 2,
  kLabel = 3,
  kGangHeader = 4,
  kZilog = 5,
  kFletcher2 = 6,
  kFletcher4 = 7,
  kSha256 = 8,
  kZilog2 = 9,
  kNoParity = 10,
  kSha512 = 11,
  kSkein = 12,
  kEdonr = 13,
  kBlake3 = 14,
};
std::string_view ChecksumName(ChecksumType t);

// The checksum a block pointer of type `type` records for `data`, summing
// byte-swapped words when the block was written in the other byte order.
// kOff gives all zeros (nothing to verify). InvalidArgument for the types
// that live in a trailer (label, gang_header, zilog, zilog2: see
// embedded_checksum.h) or mean "inherit"; NotSupported for sha512, skein,
// edonr and blake3, which uzfs does not implement.
Result<Checksum256> BlockChecksum(ChecksumType type, std::span<const uint8_t> data, bool byteswap);

void Fletcher2Native(const void* buf, size_t size, Checksum256* out);
void Fletcher2Byteswap(const void* buf, size_t size, Checksum256* out);
void Fletcher4Native(const void* buf, size_t size, Checksum256* out);
void Fletcher4Byteswap(const void* buf, size_t size, Checksum256* out);
void Sha256(const void* buf, size_t size, Checksum256* out);

// One fletcher4 implementation. `native` sums little-endian words, `byteswap`
// big-endian ones. `supported` says whether this CPU can run it.
struct Fletcher4Impl {
  const char* name;  // "scalar", "sse2", "avx2", "avx512"
  bool (*supported)();
  void (*native)(const void* buf, size_t size, Checksum256* out);
  void (*byteswap)(const void* buf, size_t size, Checksum256* out);
};
// Every implementation compiled in, scalar first (supported or not).
std::span<const Fletcher4Impl> Fletcher4Impls();
// The implementation Fletcher4Native/Byteswap use: the fastest supported one,
// unless UZFS_FLETCHER4_IMPL names another supported one.
const Fletcher4Impl& Fletcher4Selected();

}  // namespace uzfs
