// Uberblocks: the root of the pool's Merkle tree, and how the newest one is
// found.
//
// Each vdev label ends in a 128 KiB ring of uberblock slots. A slot is
// 1 << clamp(ashift, 10, 13) bytes (1 KiB for ashift 9, 4 KiB for ashift 12,
// 8 KiB from ashift 13 up), so the ring has 128, 32 or 16 slots; txg t is
// written to slot t % slots of every label. A slot holds, little-endian
// unless the magic says otherwise:
//
//   0 magic 0x00bab10c | 8 pool version | 16 txg | 24 guid sum of all vdevs
//  32 timestamp (s)    | 40 root block pointer (128 bytes, the MOS objset)
// 168 software version | 176 mmp magic | 184 mmp delay | 192 mmp config
// 200 checkpoint txg   | ... zero ... | last 40 bytes: embedded checksum
//
// and is valid only when its embedded sha256 (verifier: the slot's byte
// offset on the device) checks. The active uberblock is the valid one with
// the highest txg, ties broken by the later timestamp.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "zfs/spa/block_ptr.h"
#include "zfs/util/status.h"

namespace uzfs {

inline constexpr uint64_t kUberblockMagic = 0x00bab10c;
inline constexpr uint64_t kLabelSize = 256 * 1024;
inline constexpr uint64_t kUberblockRingOffset = 128 * 1024;  // within a label
inline constexpr uint64_t kUberblockRingSize = 128 * 1024;

struct Uberblock {
  uint64_t version = 0;
  uint64_t txg = 0;
  uint64_t guid_sum = 0;
  uint64_t timestamp = 0;
  BlockPtr rootbp;
  uint64_t software_version = 0;
  uint64_t mmp_magic = 0;
  uint64_t mmp_delay = 0;
  uint64_t mmp_config = 0;
  uint64_t checkpoint_txg = 0;
  bool byteswapped = false;  // written by a host of the other byte order
};

// Bytes per uberblock slot for a vdev of this ashift.
uint64_t UberblockSlotSize(uint32_t ashift);
// Byte offset on a device of `device_size` bytes of label `l` (0..3).
// Labels 2 and 3 sit at the end of the device rounded down to 256 KiB.
uint64_t LabelOffset(uint64_t device_size, int l);

// Fills a slot (size UberblockSlotSize) for device byte offset `offset`.
void EncodeUberblock(const Uberblock& ub, uint64_t offset, std::span<uint8_t> slot);
// Decodes a slot read from device byte offset `offset`: Corruption when the
// magic or embedded checksum is wrong.
Result<Uberblock> DecodeUberblock(std::span<const uint8_t> slot, uint64_t offset);
// The fields of a slot whose magic is right (either byte order), whatever
// its embedded checksum says (what zdb -l shows), or nullopt.
// REQUIRES: slot.size() >= 208 (the fields' bytes).
std::optional<Uberblock> DecodeUberblockFields(std::span<const uint8_t> slot);

// The active uberblock in one ring (128 KiB read from device byte offset
// `ring_offset`), or NotFound when no slot is valid. Slots that fail their
// checksum are skipped (a torn write of the newest one falls back to the
// previous txg). With max_txg, newer uberblocks are ignored (rewind).
Result<Uberblock> FindActiveUberblock(std::span<const uint8_t> ring, uint64_t ring_offset,
                                      uint32_t ashift,
                                      std::optional<uint64_t> max_txg = std::nullopt);

}  // namespace uzfs
