// Vdev label config regions; see label.h.
#include "zfs/spa/label.h"

#include "zfs/util/embedded_checksum.h"

namespace uzfs {

Result<NvList> DecodeLabelConfig(std::span<const uint8_t> vdev_phys, uint64_t device_offset) {
  if (vdev_phys.size() != kVdevPhysSize)
    return Status::InvalidArgument("a vdev_phys region is 112 KiB");
  UZFS_RETURN_IF_ERROR(VerifyEmbeddedChecksum(ChecksumType::kLabel, vdev_phys,
                                              OffsetVerifier(device_offset))
                           .WithContext("vdev label"));
  auto config = NvList::DecodeXdr(vdev_phys.first(kVdevPhysSize - kEmbeddedTrailerSize));
  if (!config.ok()) return config.status().WithContext("vdev label config");
  return config;
}

Result<std::vector<uint8_t>> EncodeLabelConfig(const NvList& config, uint64_t device_offset) {
  UZFS_ASSIGN_OR_RETURN(std::vector<uint8_t> xdr, config.EncodeXdr());
  if (xdr.size() > kVdevPhysSize - kEmbeddedTrailerSize)
    return Status::Overflow("pool config does not fit in a vdev label (" +
                            std::to_string(xdr.size()) + " bytes)");
  std::vector<uint8_t> region(kVdevPhysSize, 0);
  std::copy(xdr.begin(), xdr.end(), region.begin());
  WriteEmbeddedChecksum(ChecksumType::kLabel, region, OffsetVerifier(device_offset));
  return region;
}

}  // namespace uzfs
