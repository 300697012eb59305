// Compression dispatch: names, the write-path rule and the read path.
//
// CompressBlock() is the single place the "save at least 1/8" rule lives,
// so the write path cannot apply it differently per algorithm:
//   1. a compressing type over an all-zero block -> kAllZero (a hole);
//   2. cap = align_down(lsize - lsize/8, sector); cap == 0 -> kNotWorthIt;
//   3. compress into dst[0, cap); a codec Overflow -> kNotWorthIt;
//   4. psize = round_up(c_len, sector) with zero padding (psize <= cap
//      holds because cap is a sector multiple).
// With sector = 512 this reproduces a version-23 pool's decisions exactly.
// Decompress() checks the type and hands off to the codec, which owns the
// hostile-input checks.
#include "zfs/util/compress/compress.h"

#include <array>
#include <cstring>

namespace uzfs {

namespace {

constexpr std::array<std::string_view, kNumCompressTypes> kNames = {
    "inherit", "on",     "off",    "lzjb",   "empty",  "gzip-1", "gzip-2", "gzip-3", "gzip-4",
    "gzip-5",  "gzip-6", "gzip-7", "gzip-8", "gzip-9", "zle",    "lz4",    "zstd",
};

bool IsPowerOfTwo(size_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

std::string_view CompressName(CompressType t) {
  auto i = static_cast<size_t>(t);
  return i < kNames.size() ? kNames[i] : std::string_view("unknown");
}

Result<CompressType> ParseCompressName(std::string_view name) {
  if (name == "uncompressed") return CompressType::kOff;
  if (name == "gzip") return CompressType::kGzip6;
  for (size_t i = 0; i < kNames.size(); i++)
    if (kNames[i] == name) return static_cast<CompressType>(i);
  return Status::NotFound("unknown compression algorithm");
}

bool IsAllZero(std::span<const uint8_t> buf) {
  const uint8_t* p = buf.data();
  size_t n = buf.size();
  uint64_t acc = 0;
  while (n >= 64) {
    for (int i = 0; i < 8; i++) {
      uint64_t w;
      std::memcpy(&w, p + 8 * i, 8);
      acc |= w;
    }
    if (acc != 0) return false;
    p += 64;
    n -= 64;
  }
  while (n > 0) {
    acc |= *p++;
    n--;
  }
  return acc == 0;
}

Result<CompressedBlock> CompressBlock(CompressType type, int level, std::span<const uint8_t> src,
                                      std::span<uint8_t> dst, size_t sector) {
  using Kind = CompressedBlock::Kind;
  const size_t lsize = src.size();
  if (!IsPowerOfTwo(sector)) return Status::InvalidArgument("sector size must be a power of two");
  if (dst.size() < lsize) return Status::InvalidArgument("dst smaller than src");
  switch (type) {
    case CompressType::kOff:
      return CompressedBlock{Kind::kNotWorthIt, lsize};
    case CompressType::kLzjb:
    case CompressType::kZle:
    case CompressType::kLz4:
    case CompressType::kZstd:
      break;
    default:
      if (!IsGzip(type)) return Status::InvalidArgument("not an on-disk compression algorithm");
  }
  if (type == CompressType::kZstd) {
    auto e = ZstdLevelToEnum(level);
    if (!e.ok()) return e.status();
  }
  if (IsAllZero(src)) return CompressedBlock{Kind::kAllZero, 0};

  const size_t cap = MaxCompressedSize(lsize) & ~(sector - 1);
  if (cap == 0) return CompressedBlock{Kind::kNotWorthIt, lsize};
  std::span<uint8_t> out = dst.first(cap);
  Result<size_t> r = Status::InvalidArgument("unreachable");
  switch (type) {
    case CompressType::kLzjb: r = LzjbCompress(src, out); break;
    case CompressType::kZle: r = ZleCompress(src, out, kZleN); break;
    case CompressType::kLz4: r = Lz4Compress(src, out); break;
    case CompressType::kZstd: r = ZstdCompress(src, out, level); break;
    default: r = GzipCompress(src, out, GzipLevel(type)); break;
  }
  if (!r.ok()) {
    if (r.status().code() == Code::kOverflow) return CompressedBlock{Kind::kNotWorthIt, lsize};
    return r.status();
  }
  const size_t c_len = *r;
  const size_t psize = (c_len + sector - 1) & ~(sector - 1);
  if (c_len == 0 || psize > cap) return CompressedBlock{Kind::kNotWorthIt, lsize};
  std::memset(dst.data() + c_len, 0, psize - c_len);
  return CompressedBlock{Kind::kCompressed, psize};
}

Status Decompress(CompressType type, std::span<const uint8_t> src, std::span<uint8_t> dst) {
  switch (type) {
    case CompressType::kOff:
      if (src.size() != dst.size())
        return Status::Corruption("uncompressed block with psize != lsize");
      if (!dst.empty()) std::memcpy(dst.data(), src.data(), dst.size());
      return Status::Ok();
    case CompressType::kEmpty:
      if (!dst.empty()) std::memset(dst.data(), 0, dst.size());
      return Status::Ok();
    case CompressType::kLzjb: return LzjbDecompress(src, dst);
    case CompressType::kZle: return ZleDecompress(src, dst, kZleN);
    case CompressType::kLz4: return Lz4Decompress(src, dst);
    case CompressType::kZstd: return ZstdDecompress(src, dst);
    default:
      if (IsGzip(type)) return GzipDecompress(src, dst);
      return Status::InvalidArgument("not an on-disk compression algorithm");
  }
}

}  // namespace uzfs
