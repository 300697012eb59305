// VdevTreeTarget: the ZIO pipeline's BlockTarget over a real vdev tree.
// Top-level vdev i of the pipeline is child i of the root; reads go through
// that vdev's own redundancy (mirror sides, raidz parity, combinatorial
// reconstruction) and self-healing, with the pipeline's checksum check as
// the verifier. Thread-safe as the vdevs are.
#pragma once

#include "zfs/vdev/vdev.h"
#include "zfs/zio/block_target.h"

namespace uzfs {

class VdevTreeTarget final : public BlockTarget {
 public:
  // REQUIRES: root.kind() == VdevKind::kRoot; root outlives this.
  explicit VdevTreeTarget(Vdev& root) : root_(root) {}
  uint32_t TopLevelCount() const override {
    return static_cast<uint32_t>(root_.children().size());
  }
  uint64_t TopLevelAsize(uint32_t vdev) const override {
    const Vdev* v = root_.child(vdev);
    return v ? v->asize() : 0;
  }
  uint64_t TopLevelAllocatedSize(uint32_t vdev, uint64_t psize) const override {
    const Vdev* v = root_.child(vdev);
    return v ? v->AllocatedSize(psize) : (psize + 511) & ~uint64_t{511};
  }
  Status Read(uint32_t vdev, uint64_t offset, std::span<uint8_t> buf, const BlockVerify& verify,
              bool scrub = false) override;
  void ReadMany(uint32_t vdev, std::span<ManyRead> reads) override;
  Status Write(uint32_t vdev, uint64_t offset, std::span<const uint8_t> buf) override;
  void WriteMany(uint32_t vdev, std::span<ManyWrite> writes) override;
  void WriteManyVdevs(std::span<VdevWrites> batches) override;

 private:
  Vdev& root_;
};

}  // namespace uzfs
