// Embedded checksums: blocks that carry their own checksum in a 40-byte
// trailer (zio_eck_t) instead of in a parent's block pointer — vdev label
// regions, uberblocks and gang headers.
//
// Trailer layout (last 40 bytes of the buffer): an 8-byte magic
// 0x0210da7ab10c7a11 followed by the 4-word checksum. To compute it, the
// checksum field is first filled with a *verifier* (for labels and
// uberblocks: word 0 = the buffer's byte offset on the device, other words
// 0), so a correct block copied to the wrong place fails to verify. The
// checksum runs over the whole buffer, trailer included, and is then stored
// over the verifier. The magic's byte order tells the reader the order the
// writer used; a byte-swapped trailer is verified with swapped words.
#pragma once

#include <cstdint>
#include <span>

#include "zfs/util/checksum.h"
#include "zfs/util/status.h"

namespace uzfs {

inline constexpr uint64_t kEmbeddedChecksumMagic = 0x0210da7ab10c7a11ull;
inline constexpr size_t kEmbeddedTrailerSize = 40;

// The verifier of a label region or uberblock at byte `offset` of its device.
inline Checksum256 OffsetVerifier(uint64_t offset) { return Checksum256{{offset, 0, 0, 0}}; }

// Fills the trailer of `buf` (little-endian) with the checksum of type `type`
// (kLabel / kGangHeader: sha256; kZilog: fletcher2; kZilog2: fletcher4).
// REQUIRES: buf.size() >= 40 and a multiple of 8.
void WriteEmbeddedChecksum(ChecksumType type, std::span<uint8_t> buf, const Checksum256& verifier);

// OK when the trailer of `buf` holds the right checksum for `verifier`;
// Corruption otherwise (bad magic, or a mismatch). `buf` is not modified.
// *byteswapped, when given, says whether the writer used the other order.
Status VerifyEmbeddedChecksum(ChecksumType type, std::span<const uint8_t> buf,
                              const Checksum256& verifier, bool* byteswapped = nullptr);

}  // namespace uzfs
