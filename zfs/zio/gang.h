// Gang blocks: how a block is stored when no contiguous run of its size is
// free. The block's DVAs then point (gang bit set) at a 512-byte gang
// header holding up to three block pointers, whose blocks hold consecutive
// pieces of the block's physical bytes; a piece may itself be a gang.
//
// Header layout (512 bytes): three 128-byte block pointers, 88 bytes of
// zero filler, and a 40-byte embedded sha256 trailer whose verifier is
// {vdev, offset, physical birth, 0} of the gang block pointer's first DVA,
// so a header is bound to the pointer that names it. Member pointers are
// uncompressed, carry the parent's checksum algorithm, type and level, and
// their sizes are the pieces' sizes rounded up to 512 bytes. Each DVA of
// the gang pointer accounts the header plus every member's space (asize).
#pragma once

#include <array>
#include <span>

#include "zfs/spa/block_ptr.h"
#include "zfs/util/checksum.h"
#include "zfs/util/status.h"

namespace uzfs {

inline constexpr size_t kGangHeaderSize = 512;
inline constexpr int kGangMembers = 3;

struct GangHeader {
  std::array<BlockPtr, kGangMembers> members;  // unused slots are all-zero holes
};

// The verifier of the gang header named by `gang_bp` (its DVA[0]).
Checksum256 GangVerifier(const BlockPtr& gang_bp);
void EncodeGangHeader(const GangHeader& h, const BlockPtr& gang_bp,
                      std::span<uint8_t, kGangHeaderSize> out);
// Corruption when the trailer does not verify for `gang_bp`.
Result<GangHeader> DecodeGangHeader(std::span<const uint8_t, kGangHeaderSize> raw,
                                    const BlockPtr& gang_bp);

// Piece sizes for splitting `psize` bytes over the remaining members: each
// is ceil(resid / members_left) rounded up to 512, the last takes the rest.
uint64_t GangPieceSize(uint64_t resid, int members_left);

}  // namespace uzfs
