// Reading and writing the four labels of a leaf device.
//
// Reading: every label's config region is checked (embedded sha256 bound to
// its offset); the first that verifies is the device's config, and the
// active uberblock is the newest valid one across all four rings (so one
// torn or damaged label never hides the pool). Writing the config goes in
// two halves, labels 0 and 2, flush, then 1 and 3, flush: a crash at any
// point leaves one whole half, at the front and at the back, with a
// complete config. An uberblock goes to its slot (txg mod slots) in every
// ring, then a flush; a torn slot only costs that txg, since older slots
// stay intact and the reader skips slots that fail their checksum.
#pragma once

#include <array>
#include <optional>

#include "zfs/spa/label.h"
#include "zfs/spa/uberblock.h"
#include "zfs/util/nvlist/nvlist.h"
#include "zfs/vdev/block_device.h"

namespace uzfs {

// Smallest leaf uzfs accepts: the labels, the boot reserve and room for data.
inline constexpr uint64_t kMinDeviceSize = 64ull << 20;

struct DeviceLabels {
  NvList config;                     // from the first label that verifies
  std::array<bool, 4> valid{};       // which labels' configs verified
  std::optional<Uberblock> uberblock;  // newest valid across the four rings
  int uberblock_label = -1;          // which label it came from
};

// Corruption "no valid label" when no config verifies (a zeroed or foreign
// device); IoError when the device cannot be read.
Result<DeviceLabels> ReadDeviceLabels(BlockDevice& dev, uint32_t ashift,
                                      std::optional<uint64_t> max_txg = std::nullopt);

// Zeroes all four labels (blank, boot header, config, uberblock ring) and
// the boot reserve's start, for a device joining a new pool.
// InvalidArgument when the device is smaller than kMinDeviceSize.
Status InitDeviceLabels(BlockDevice& dev);
// Writes `config` into all four labels in two flushed halves.
Status WriteDeviceConfig(BlockDevice& dev, const NvList& config);
// Writes `ub` into its slot of all four rings and flushes.
Status WriteDeviceUberblock(BlockDevice& dev, const Uberblock& ub, uint32_t ashift);

}  // namespace uzfs
