// Embedded (trailer) checksums; see embedded_checksum.h.
#include "zfs/util/embedded_checksum.h"

#include <vector>

#include "zfs/util/endian.h"

namespace uzfs {
namespace {

void Compute(ChecksumType type, const uint8_t* p, size_t n, bool swap, Checksum256* out) {
  switch (type) {
    case ChecksumType::kZilog:
      return swap ? Fletcher2Byteswap(p, n, out) : Fletcher2Native(p, n, out);
    case ChecksumType::kZilog2:
      return swap ? Fletcher4Byteswap(p, n, out) : Fletcher4Native(p, n, out);
    default:
      return Sha256(p, n, out);
  }
}

void StoreWords(uint8_t* p, const Checksum256& ck, bool swap) {
  for (int i = 0; i < 4; i++) {
    if (swap) StoreBE64(p + 8 * i, ck.word[i]);
    else StoreLE64(p + 8 * i, ck.word[i]);
  }
}

}  // namespace

void WriteEmbeddedChecksum(ChecksumType type, std::span<uint8_t> buf, const Checksum256& verifier) {
  uint8_t* trailer = buf.data() + buf.size() - kEmbeddedTrailerSize;
  StoreLE64(trailer, kEmbeddedChecksumMagic);
  StoreWords(trailer + 8, verifier, false);
  Checksum256 ck;
  Compute(type, buf.data(), buf.size(), false, &ck);
  StoreWords(trailer + 8, ck, false);
}

Status VerifyEmbeddedChecksum(ChecksumType type, std::span<const uint8_t> buf,
                              const Checksum256& verifier, bool* byteswapped) {
  if (buf.size() < kEmbeddedTrailerSize || buf.size() % 8 != 0)
    return Status::Corruption("block too small for an embedded checksum");
  const size_t t = buf.size() - kEmbeddedTrailerSize;
  const uint64_t magic = LoadLE64(&buf[t]);
  bool swap;
  if (magic == kEmbeddedChecksumMagic) {
    swap = false;
  } else if (magic == ByteSwap64(kEmbeddedChecksumMagic)) {
    swap = true;
  } else {
    return Status::Corruption("embedded checksum trailer has a bad magic");
  }
  if (byteswapped) *byteswapped = swap;
  Checksum256 stored;
  for (int i = 0; i < 4; i++)
    stored.word[i] = swap ? LoadBE64(&buf[t + 8 + 8 * i]) : LoadLE64(&buf[t + 8 + 8 * i]);
  // Checksum a copy with the verifier in place of the stored value.
  std::vector<uint8_t> copy(buf.begin(), buf.end());
  StoreWords(&copy[t + 8], verifier, swap);
  Checksum256 actual;
  Compute(type, copy.data(), copy.size(), swap, &actual);
  if (actual != stored) return Status::Corruption("embedded checksum mismatch");
  return Status::Ok();
}

}  // namespace uzfs
