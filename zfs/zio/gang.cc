// Gang headers; see gang.h.
#include "zfs/zio/gang.h"

#include <algorithm>

#include "zfs/util/embedded_checksum.h"

namespace uzfs {

Checksum256 GangVerifier(const BlockPtr& gang_bp) {
  return Checksum256{{gang_bp.dva[0].vdev, gang_bp.dva[0].offset, gang_bp.PhysBirth(), 0}};
}

void EncodeGangHeader(const GangHeader& h, const BlockPtr& gang_bp,
                      std::span<uint8_t, kGangHeaderSize> out) {
  std::fill(out.begin(), out.end(), 0);
  for (int i = 0; i < kGangMembers; i++) {
    EncodeBlockPtr(h.members[i],
                   std::span<uint8_t, kBlockPtrSize>(out.data() + i * kBlockPtrSize, kBlockPtrSize));
  }
  WriteEmbeddedChecksum(ChecksumType::kGangHeader, out, GangVerifier(gang_bp));
}

Result<GangHeader> DecodeGangHeader(std::span<const uint8_t, kGangHeaderSize> raw,
                                    const BlockPtr& gang_bp) {
  bool swapped = false;
  UZFS_RETURN_IF_ERROR(
      VerifyEmbeddedChecksum(ChecksumType::kGangHeader, raw, GangVerifier(gang_bp), &swapped)
          .WithContext("gang header"));
  GangHeader h;
  for (int i = 0; i < kGangMembers; i++) {
    h.members[i] = DecodeBlockPtr(
        std::span<const uint8_t, kBlockPtrSize>(raw.data() + i * kBlockPtrSize, kBlockPtrSize),
        swapped);
  }
  return h;
}

uint64_t GangPieceSize(uint64_t resid, int members_left) {
  const uint64_t even = (resid + members_left - 1) / members_left;
  return std::min(resid, (even + 511) & ~uint64_t{511});
}

}  // namespace uzfs
