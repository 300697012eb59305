// zstd as OpenZFS stores it (feature zstd_compress).
//
// Layout of a stored block:
//   bytes 0..3  c_len, big-endian: length of the zstd frame that follows
//   byte  4     level: the enum zio_zstd_levels value (1..19, 102+k fast)
//   bytes 5..7  the writer's ZSTD_VERSION_NUMBER, 24-bit big-endian
//   bytes 8..   a zstd frame in the magicless format (no 4-byte magic), with
//               neither a content checksum nor a content size; then padding.
// Bytes 4..7 are the 32-bit word (level << 24 | version) stored big-endian.
// Old big-endian writers stored the same fields as version first, level
// last; the version's top byte is zero for any zstd before 6.55.35, so the
// position of that zero tells the layouts apart. uzfs always writes the
// first layout and reads both.
//
// Promises: libzstd decodes with dst bounded to lsize and src bounded to
// c_len (checked against psize first), so hostile input yields Corruption.
// The header's level must be a valid enum value (ZFS refuses others too);
// the version is recorded but not interpreted.
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_c_format / ZSTD_d_format (magicless)
#include <zstd.h>
#include <zstd_errors.h>

#include <array>
#include <memory>

#include "zfs/util/compress/compress.h"
#include "zfs/util/endian.h"

namespace uzfs {

namespace {

constexpr uint8_t kFastBase = 102;  // ZIO_ZSTD_LEVEL_FAST; fast-k = 102 + index
// The zstd-fast levels in enum order: 103 = -1, ..., 112 = -10, 113 = -20,
// ..., 121 = -100, 122 = -500, 123 = -1000.
constexpr std::array<int, 21> kFastLevels = {1,  2,  3,  4,  5,  6,  7,   8,   9,   10,  20,
                                             30, 40, 50, 60, 70, 80, 90, 100, 500, 1000};

struct CCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxFree {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

ZSTD_CCtx* ThreadCCtx() {
  thread_local std::unique_ptr<ZSTD_CCtx, CCtxFree> cctx;
  if (!cctx) {
    cctx.reset(ZSTD_createCCtx());
    if (!cctx) return nullptr;
    if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_format, ZSTD_f_zstd1_magicless)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 0)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_contentSizeFlag, 0))) {
      cctx.reset();
    }
  }
  return cctx.get();
}

ZSTD_DCtx* ThreadDCtx() {
  thread_local std::unique_ptr<ZSTD_DCtx, DCtxFree> dctx;
  if (!dctx) {
    dctx.reset(ZSTD_createDCtx());
    if (!dctx) return nullptr;
    if (ZSTD_isError(ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_format, ZSTD_f_zstd1_magicless)))
      dctx.reset();
  }
  return dctx.get();
}

}  // namespace

Result<uint8_t> ZstdLevelToEnum(int level) {
  if (level == 0) return static_cast<uint8_t>(3);
  if (level >= 1 && level <= 19) return static_cast<uint8_t>(level);
  for (size_t k = 0; k < kFastLevels.size(); k++)
    if (-level == kFastLevels[k]) return static_cast<uint8_t>(kFastBase + 1 + k);
  return Status::InvalidArgument("zstd: no such level");
}

Result<int> ZstdEnumToLevel(uint8_t e) {
  if (e >= 1 && e <= 19) return static_cast<int>(e);
  if (e > kFastBase && e <= kFastBase + kFastLevels.size()) return -kFastLevels[e - kFastBase - 1];
  return Status::NotFound("zstd: not a level enum value");
}

Result<ZstdHeader> ParseZstdHeader(std::span<const uint8_t> src) {
  if (src.size() < kZstdHeaderSize) return Status::Corruption("zstd: block shorter than header");
  ZstdHeader h;
  h.c_len = LoadBE32(src.data());
  const uint8_t* b = src.data() + 4;
  if (b[1] == 0 || b[0] != 0) {  // level, then version (the layout uzfs writes)
    h.level = b[0];
    h.version = (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
  } else {  // version, then level (old big-endian writers)
    h.level = b[3];
    h.version = (uint32_t{b[0]} << 16) | (uint32_t{b[1]} << 8) | b[2];
  }
  return h;
}

Result<size_t> ZstdCompress(std::span<const uint8_t> src, std::span<uint8_t> dst, int level) {
  UZFS_ASSIGN_OR_RETURN(uint8_t e, ZstdLevelToEnum(level));
  UZFS_ASSIGN_OR_RETURN(int zlevel, ZstdEnumToLevel(e));
  if (dst.size() <= kZstdHeaderSize) return Status::Overflow("zstd: no room");
  ZSTD_CCtx* cctx = ThreadCCtx();
  if (cctx == nullptr) return Status::NoSpace("zstd: cannot create a compression context");
  if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, zlevel)))
    return Status::InvalidArgument("zstd: level rejected by libzstd");
  size_t n = ZSTD_compress2(cctx, dst.data() + kZstdHeaderSize, dst.size() - kZstdHeaderSize,
                            src.data(), src.size());
  if (ZSTD_isError(n)) {
    ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only);
    if (ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall)
      return Status::Overflow("zstd: output does not fit");
    return Status::InvalidArgument("zstd: compression failed");
  }
  if (n > UINT32_MAX) return Status::Overflow("zstd: frame too large");
  StoreBE32(dst.data(), static_cast<uint32_t>(n));
  StoreBE32(dst.data() + 4, (uint32_t{e} << 24) | (ZSTD_versionNumber() & 0xFFFFFFu));
  return kZstdHeaderSize + n;
}

Status ZstdDecompress(std::span<const uint8_t> src, std::span<uint8_t> dst) {
  UZFS_ASSIGN_OR_RETURN(ZstdHeader h, ParseZstdHeader(src));
  if (!ZstdEnumToLevel(h.level).ok()) return Status::Corruption("zstd: bad level in header");
  if (h.c_len > src.size() - kZstdHeaderSize)
    return Status::Corruption("zstd: length header exceeds block");
  ZSTD_DCtx* dctx = ThreadDCtx();
  if (dctx == nullptr) return Status::NoSpace("zstd: cannot create a decompression context");
  size_t n = ZSTD_decompressDCtx(dctx, dst.data(), dst.size(), src.data() + kZstdHeaderSize, h.c_len);
  if (ZSTD_isError(n)) {
    ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
    return Status::Corruption("zstd: malformed frame");
  }
  if (n != dst.size()) return Status::Corruption("zstd: frame decodes to the wrong size");
  return Status::Ok();
}

}  // namespace uzfs
