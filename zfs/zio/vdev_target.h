// VdevTreeTarget: the ZIO pipeline's BlockTarget over a real vdev tree.
// Top-level vdev i of the pipeline is child i of the root; reads go through
// that vdev's own redundancy (mirror sides, raidz parity, combinatorial
// reconstruction) and self-healing, with the pipeline's checksum check as
// the verifier. Batches go down unchanged (Vdev::Submit on the root).
// Thread-safe as the vdevs are.
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
  // Vdev::Submit on the root: every request to the top-level vdev it names.
  void Submit(std::span<BlockIo> ios) override { root_.Submit(ios); }

 private:
  Vdev& root_;
};

}  // namespace uzfs
