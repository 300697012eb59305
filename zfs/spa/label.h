// Vdev labels: the config each leaf device carries, four times.
//
// A leaf holds four 256 KiB labels, two at the front and two at the end
// (see LabelOffset in uberblock.h), each laid out as
//
//     0 KiB   8 KiB blank (room for a disk label / VTOC)
//     8 KiB   8 KiB boot block header
//    16 KiB 112 KiB vdev_phys: the pool config as an XDR nvlist, zero
//                   padded, ending in a 40-byte embedded sha256 trailer
//                   (verifier: the region's byte offset on the device)
//   128 KiB 128 KiB uberblock ring (uberblock.h)
//
// and the allocatable space of the vdev starts at 4 MiB (two front labels
// plus the 3.5 MiB boot reserve). Labels are rewritten in two halves (0 and
// 2, then 1 and 3) so a crash never tears all four; a reader takes the first
// label whose checksum holds.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "zfs/util/nvlist/nvlist.h"
#include "zfs/util/status.h"

namespace uzfs {

inline constexpr uint64_t kVdevPhysOffset = 16 * 1024;  // within a label
inline constexpr uint64_t kVdevPhysSize = 112 * 1024;
inline constexpr uint64_t kBootReserveOffset = 512 * 1024;
inline constexpr uint64_t kBootReserveSize = (7ull << 20) / 2;      // 3.5 MiB
inline constexpr uint64_t kVdevDataOffset = 4ull << 20;             // VDEV_LABEL_START_SIZE
inline constexpr uint64_t kVdevLabelEndSize = 2 * 256 * 1024;       // labels 2 and 3

// The config in a vdev_phys region read from device byte offset
// `device_offset` (the region's own offset: label offset + 16 KiB).
// Corruption when the trailer's checksum fails or the nvlist is malformed.
Result<NvList> DecodeLabelConfig(std::span<const uint8_t> vdev_phys, uint64_t device_offset);

// A 112 KiB vdev_phys region holding `config`, checksummed for
// `device_offset`. Overflow when the encoded config does not fit.
Result<std::vector<uint8_t>> EncodeLabelConfig(const NvList& config, uint64_t device_offset);

}  // namespace uzfs
