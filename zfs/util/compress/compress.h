// Block compression, bit-exact with the OpenZFS on-disk framings.
//
// What this gives the write and read paths:
//  - The on-disk compression numbers (enum zio_compress) and their names.
//  - One codec per algorithm, each producing and consuming exactly the bytes
//    ZFS stores in a block (psize bytes on disk, lsize bytes logical):
//      lz4     4-byte big-endian length of the LZ4 block, then the block
//              (liblz4 block format); bytes after it are padding.
//      gzip-N  a zlib-wrapped deflate stream (RFC 1950), level N; padding
//              after the stream is ignored.
//      zle     zero-length encoding with ZFS's parameter n = 64.
//      lzjb    ZFS's LZJB (Lempel-Ziv, 1024-byte window, 3..66-byte matches).
//      zstd    an 8-byte header (big-endian compressed length; then the level
//              byte and a 24-bit big-endian zstd version) followed by a
//              magicless zstd frame without checksum or content size.
//  - CompressBlock(): ZFS's write-path rule. A block is stored compressed
//    only when the compressed bytes, rounded up to the sector size, fit in
//    lsize - lsize/8 (saving at least 1/8); an all-zero block becomes a hole.
//  - Decompress(): the read path. Input is treated as hostile: corrupt or
//    truncated input yields Status::Corruption, never a crash, a read past
//    src or a write past dst. Success means dst (lsize bytes) was filled
//    completely; a block that decodes to fewer or more bytes is Corruption
//    (ZFS only ever stores blocks that decode to exactly lsize).
//
// Threading: every function is thread-safe. zstd keeps one compression and
// one decompression context per thread (created on first use).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "zfs/util/status.h"

namespace uzfs {

// The on-disk compression algorithm numbers (enum zio_compress), as stored in
// a block pointer's 7-bit compression field and in the "compression"
// property. kOn and kInherit are property values only, never on disk.
enum class CompressType : uint8_t {
  kInherit = 0,
  kOn = 1,
  kOff = 2,
  kLzjb = 3,
  kEmpty = 4,
  kGzip1 = 5,
  kGzip2 = 6,
  kGzip3 = 7,
  kGzip4 = 8,
  kGzip5 = 9,
  kGzip6 = 10,
  kGzip7 = 11,
  kGzip8 = 12,
  kGzip9 = 13,
  kZle = 14,
  kLz4 = 15,
  kZstd = 16,
};
inline constexpr int kNumCompressTypes = 17;

// Property-style name: "inherit", "on", "off", "lzjb", "empty", "gzip-1" ..
// "gzip-9", "zle", "lz4", "zstd"; "unknown" for anything else.
std::string_view CompressName(CompressType t);
// Name -> type. Accepts every CompressName() value, "uncompressed" (zdb's
// word for off) and "gzip" (= gzip-6, ZFS's default gzip level).
// NotFound for an unknown name.
Result<CompressType> ParseCompressName(std::string_view name);
// "on" means lz4 when the pool has the lz4_compress feature, else lzjb.
constexpr CompressType ResolveCompressOn(bool lz4_feature) {
  return lz4_feature ? CompressType::kLz4 : CompressType::kLzjb;
}
constexpr bool IsGzip(CompressType t) {
  return t >= CompressType::kGzip1 && t <= CompressType::kGzip9;
}
constexpr int GzipLevel(CompressType t) {
  return static_cast<int>(t) - static_cast<int>(CompressType::kGzip1) + 1;
}
constexpr CompressType GzipType(int level) {  // REQUIRES: 1 <= level <= 9
  return static_cast<CompressType>(static_cast<int>(CompressType::kGzip1) + level - 1);
}

// ---------------------------------------------------------------------------
// The 1/8 rule and the write/read helpers.

// The most a compressed block may occupy: lsize - lsize/8.
constexpr size_t MaxCompressedSize(size_t lsize) { return lsize - lsize / 8; }
// The sector size compressed blocks are rounded up to (SPA_MINBLOCKSIZE).
inline constexpr size_t kMinBlockSize = 512;

bool IsAllZero(std::span<const uint8_t> buf);

struct CompressedBlock {
  enum class Kind : uint8_t {
    kCompressed,  // store dst[0, psize) with the requested algorithm
    kNotWorthIt,  // store src uncompressed (compression "off"); psize = lsize
    kAllZero,     // all zeros: no block at all (a hole); psize = 0
  };
  Kind kind;
  size_t psize;
};

// Compresses one logical block the way ZFS's write path does.
//  type: an on-disk algorithm (kLzjb, kGzip1..9, kZle, kLz4, kZstd), or kOff
//        (always kNotWorthIt, and all-zero data is still written).
//  level: zstd level only (1..19, or -1..-1000 for the zstd-fast levels;
//        0 = ZFS's default 3); ignored by the other algorithms.
//  dst: at least src.size() bytes. On kCompressed, dst[0, psize) holds the
//        framed data followed by zero padding up to psize.
//  sector: psize is rounded up to a multiple of it (power of two, >= 1).
// The block is kept compressed only if psize <= align_down(lsize - lsize/8,
// sector): at 512 this is exactly the version-23 rule. InvalidArgument for a
// property-only type, a bad level or a short dst.
Result<CompressedBlock> CompressBlock(CompressType type, int level,
                                      std::span<const uint8_t> src, std::span<uint8_t> dst,
                                      size_t sector = kMinBlockSize);

// Decompresses psize = src.size() stored bytes into exactly lsize =
// dst.size() logical bytes. kOff copies (psize must equal lsize); kEmpty
// zero-fills. Corruption on any malformed input; InvalidArgument for kOn,
// kInherit or an unknown type.
Status Decompress(CompressType type, std::span<const uint8_t> src, std::span<uint8_t> dst);

// ---------------------------------------------------------------------------
// Per-algorithm codecs. Each Compress writes the complete framed block to
// dst and returns its length, or Overflow when it does not fit in dst.size()
// (the "not worth it" signal: pass dst of the size you are willing to store).
// Each Decompress fills dst exactly (see Decompress above).

inline constexpr size_t kLz4HeaderSize = 4;
Result<size_t> Lz4Compress(std::span<const uint8_t> src, std::span<uint8_t> dst);
Status Lz4Decompress(std::span<const uint8_t> src, std::span<uint8_t> dst);

// level 1..9.
Result<size_t> GzipCompress(std::span<const uint8_t> src, std::span<uint8_t> dst, int level);
Status GzipDecompress(std::span<const uint8_t> src, std::span<uint8_t> dst);

// n: literal runs are 1..n bytes, zero runs 1..256-n; ZFS always uses 64.
inline constexpr int kZleN = 64;
Result<size_t> ZleCompress(std::span<const uint8_t> src, std::span<uint8_t> dst, int n = kZleN);
Status ZleDecompress(std::span<const uint8_t> src, std::span<uint8_t> dst, int n = kZleN);

Result<size_t> LzjbCompress(std::span<const uint8_t> src, std::span<uint8_t> dst);
Status LzjbDecompress(std::span<const uint8_t> src, std::span<uint8_t> dst);

inline constexpr size_t kZstdHeaderSize = 8;
// The zstd level as stored in the header and the property (enum
// zio_zstd_levels): 1..19 are zstd levels 1..19; 102+k are the fast levels
// -1..-10, -20, -30, ..., -100, -500, -1000 (k = 1..21).
Result<uint8_t> ZstdLevelToEnum(int level);  // 0 -> 3 (the default)
Result<int> ZstdEnumToLevel(uint8_t e);      // NotFound for an unused value
struct ZstdHeader {
  uint32_t c_len;    // bytes of zstd frame after the header
  uint8_t level;     // enum zio_zstd_levels value
  uint32_t version;  // ZSTD_VERSION_NUMBER of the writer, e.g. 10504
};
// Parses the 8-byte header, accepting both layouts found in the wild (level
// first, as little-endian hosts write it and as uzfs writes it; or level
// last, as old big-endian hosts wrote it). Corruption if src is too short.
Result<ZstdHeader> ParseZstdHeader(std::span<const uint8_t> src);
Result<size_t> ZstdCompress(std::span<const uint8_t> src, std::span<uint8_t> dst, int level);
// Also rejects a header whose level is not a valid enum value, as ZFS does.
Status ZstdDecompress(std::span<const uint8_t> src, std::span<uint8_t> dst);

}  // namespace uzfs
