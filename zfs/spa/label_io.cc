// Label I/O on a leaf device; see label_io.h.
#include "zfs/spa/label_io.h"

#include <vector>

namespace uzfs {

Result<DeviceLabels> ReadDeviceLabels(BlockDevice& dev, uint32_t ashift,
                                      std::optional<uint64_t> max_txg) {
  const uint64_t size = dev.Size();
  if (size < kMinDeviceSize)
    return Status::Corruption(dev.path() + " is too small to hold a pool (" +
                              std::to_string(size) + " bytes)");
  DeviceLabels out;
  bool have_config = false;
  std::vector<uint8_t> region(kVdevPhysSize), ring(kUberblockRingSize);
  Status last_io;
  for (int l = 0; l < 4; l++) {
    const uint64_t base = LabelOffset(size, l);
    if (Status s = dev.Read(base + kVdevPhysOffset, region); !s.ok()) {
      last_io = s;
      continue;
    }
    auto cfg = DecodeLabelConfig(region, base + kVdevPhysOffset);
    if (!cfg.ok()) continue;
    out.valid[l] = true;
    if (!have_config) {
      out.config = std::move(cfg).value();
      have_config = true;
    }
    if (!dev.Read(base + kUberblockRingOffset, ring).ok()) continue;
    auto ub = FindActiveUberblock(ring, base + kUberblockRingOffset, ashift, max_txg);
    if (ub.ok() && (!out.uberblock || ub->txg > out.uberblock->txg)) {
      out.uberblock = *ub;
      out.uberblock_label = l;
    }
  }
  if (!have_config) {
    if (!last_io.ok()) return last_io.WithContext("reading the labels of " + dev.path());
    return Status::Corruption("no valid label on " + dev.path());
  }
  return out;
}

Status InitDeviceLabels(BlockDevice& dev) {
  const uint64_t size = dev.Size();
  if (size < kMinDeviceSize)
    return Status::InvalidArgument(dev.path() + " is too small for a pool: " +
                                   std::to_string(size >> 20) + " MiB, need at least " +
                                   std::to_string(kMinDeviceSize >> 20) + " MiB");
  const std::vector<uint8_t> zeros(kLabelSize, 0);
  for (int l = 0; l < 4; l++) UZFS_RETURN_IF_ERROR(dev.Write(LabelOffset(size, l), zeros));
  UZFS_RETURN_IF_ERROR(dev.Write(kBootReserveOffset, zeros));
  return dev.Flush();
}

Status WriteDeviceConfig(BlockDevice& dev, const NvList& config) {
  const uint64_t size = dev.Size();
  for (int half = 0; half < 2; half++) {
    for (int l = half; l < 4; l += 2) {
      const uint64_t off = LabelOffset(size, l) + kVdevPhysOffset;
      UZFS_ASSIGN_OR_RETURN(std::vector<uint8_t> region, EncodeLabelConfig(config, off));
      UZFS_RETURN_IF_ERROR(dev.Write(off, region));
    }
    UZFS_RETURN_IF_ERROR(dev.Flush());
  }
  return Status::Ok();
}

Status WriteDeviceUberblock(BlockDevice& dev, const Uberblock& ub, uint32_t ashift) {
  const uint64_t size = dev.Size();
  const uint64_t slot = UberblockSlotSize(ashift);
  const uint64_t slots = kUberblockRingSize / slot;
  std::vector<uint8_t> buf(slot);
  for (int l = 0; l < 4; l++) {
    const uint64_t off = LabelOffset(size, l) + kUberblockRingOffset + (ub.txg % slots) * slot;
    EncodeUberblock(ub, off, buf);
    UZFS_RETURN_IF_ERROR(dev.Write(off, buf));
  }
  return dev.Flush();
}

}  // namespace uzfs
