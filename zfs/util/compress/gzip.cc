// gzip-N as ZFS stores it: a zlib-wrapped deflate stream (RFC 1950: 2-byte
// header, deflate data, Adler-32 trailer), as zlib's compress2() writes it
// at level N; whatever follows the stream's end (sector padding) is ignored.
//
// Promises: zlib does the work, bounded by both buffer sizes, so a hostile
// stream (bad header, bad Huffman tables, distance too far back, bad
// Adler-32, truncated) yields Corruption. A stream must end within psize
// and produce exactly lsize bytes; one that would produce more is Corruption.
#include <climits>

#include <zlib.h>

#include "zfs/util/compress/compress.h"

namespace uzfs {

Result<size_t> GzipCompress(std::span<const uint8_t> src, std::span<uint8_t> dst, int level) {
  if (level < 1 || level > 9) return Status::InvalidArgument("gzip: level must be 1..9");
  uLongf out = dst.size();
  int rc = compress2(dst.data(), &out, src.data(), src.size(), level);
  if (rc == Z_BUF_ERROR) return Status::Overflow("gzip: output does not fit");
  if (rc != Z_OK) return Status::InvalidArgument("gzip: zlib compress2 failed");
  return static_cast<size_t>(out);
}

Status GzipDecompress(std::span<const uint8_t> src, std::span<uint8_t> dst) {
  if (src.size() > UINT_MAX || dst.size() > UINT_MAX)
    return Status::Corruption("gzip: sizes out of range");
  // A zero-length output buffer would make zlib write through a null pointer
  // check path; give it one scratch byte and demand nothing comes out.
  uint8_t scratch = 0;
  z_stream zs{};
  zs.next_in = const_cast<Bytef*>(src.data());
  zs.avail_in = static_cast<uInt>(src.size());
  zs.next_out = dst.empty() ? &scratch : dst.data();
  zs.avail_out = dst.empty() ? 1 : static_cast<uInt>(dst.size());
  if (inflateInit(&zs) != Z_OK) return Status::Corruption("gzip: inflateInit failed");
  int rc = inflate(&zs, Z_FINISH);
  const size_t produced = dst.empty() ? (zs.avail_out == 0 ? 1 : 0) : dst.size() - zs.avail_out;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) return Status::Corruption("gzip: malformed or truncated stream");
  if (produced != dst.size()) return Status::Corruption("gzip: stream decodes to the wrong size");
  return Status::Ok();
}

}  // namespace uzfs
