// Uberblock encode/decode and the active-uberblock search; see uberblock.h.
#include "zfs/spa/uberblock.h"

#include <algorithm>

#include "zfs/util/embedded_checksum.h"
#include "zfs/util/endian.h"

namespace uzfs {

uint64_t UberblockSlotSize(uint32_t ashift) {
  return uint64_t{1} << std::clamp<uint32_t>(ashift, 10, 13);
}

uint64_t LabelOffset(uint64_t device_size, int l) {
  const uint64_t size = device_size & ~(kLabelSize - 1);
  return l < 2 ? l * kLabelSize : size - (4 - l) * kLabelSize;
}

void EncodeUberblock(const Uberblock& ub, uint64_t offset, std::span<uint8_t> slot) {
  std::fill(slot.begin(), slot.end(), 0);
  uint8_t* p = slot.data();
  StoreLE64(p + 0, kUberblockMagic);
  StoreLE64(p + 8, ub.version);
  StoreLE64(p + 16, ub.txg);
  StoreLE64(p + 24, ub.guid_sum);
  StoreLE64(p + 32, ub.timestamp);
  EncodeBlockPtr(ub.rootbp, std::span<uint8_t, kBlockPtrSize>(p + 40, kBlockPtrSize));
  StoreLE64(p + 168, ub.software_version);
  StoreLE64(p + 176, ub.mmp_magic);
  StoreLE64(p + 184, ub.mmp_delay);
  StoreLE64(p + 192, ub.mmp_config);
  StoreLE64(p + 200, ub.checkpoint_txg);
  WriteEmbeddedChecksum(ChecksumType::kLabel, slot, OffsetVerifier(offset));
}

std::optional<Uberblock> DecodeUberblockFields(std::span<const uint8_t> slot) {
  const uint8_t* p = slot.data();
  bool swap;
  if (LoadLE64(p) == kUberblockMagic) {
    swap = false;
  } else if (LoadBE64(p) == kUberblockMagic) {
    swap = true;
  } else {
    return std::nullopt;
  }
  auto get = [&](size_t off) { return swap ? LoadBE64(p + off) : LoadLE64(p + off); };
  Uberblock ub;
  ub.byteswapped = swap;
  ub.version = get(8);
  ub.txg = get(16);
  ub.guid_sum = get(24);
  ub.timestamp = get(32);
  ub.rootbp = DecodeBlockPtr(std::span<const uint8_t, kBlockPtrSize>(p + 40, kBlockPtrSize), swap);
  ub.software_version = get(168);
  ub.mmp_magic = get(176);
  ub.mmp_delay = get(184);
  ub.mmp_config = get(192);
  ub.checkpoint_txg = get(200);
  return ub;
}

Result<Uberblock> DecodeUberblock(std::span<const uint8_t> slot, uint64_t offset) {
  if (slot.size() < 1024) return Status::Corruption("uberblock slot too small");
  std::optional<Uberblock> ub = DecodeUberblockFields(slot);
  if (!ub) return Status::Corruption("no uberblock magic");
  bool trailer_swapped = false;
  UZFS_RETURN_IF_ERROR(VerifyEmbeddedChecksum(ChecksumType::kLabel, slot, OffsetVerifier(offset),
                                              &trailer_swapped)
                           .WithContext("uberblock"));
  return *ub;
}

Result<Uberblock> FindActiveUberblock(std::span<const uint8_t> ring, uint64_t ring_offset,
                                      uint32_t ashift, std::optional<uint64_t> max_txg) {
  const uint64_t slot = UberblockSlotSize(ashift);
  std::optional<Uberblock> best;
  for (uint64_t off = 0; off + slot <= ring.size(); off += slot) {
    auto ub = DecodeUberblock(ring.subspan(off, slot), ring_offset + off);
    if (!ub.ok()) continue;
    if (max_txg && ub->txg > *max_txg) continue;
    if (!best || ub->txg > best->txg ||
        (ub->txg == best->txg && ub->timestamp > best->timestamp)) {
      best = std::move(ub).value();
    }
  }
  if (!best) return Status::NotFound("no valid uberblock in the label's ring");
  return *std::move(best);
}

}  // namespace uzfs
