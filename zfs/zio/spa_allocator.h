// SpaAllocator: the ZIO pipeline's BlockAllocator over the pool's metaslab
// Allocator (zfs/spa/allocator.h). A thin forwarding shim: the allocator
// already returns all-or-nothing DVAs on distinct vdevs and defers frees.
#pragma once

#include "zfs/spa/allocator.h"
#include "zfs/zio/block_target.h"

namespace uzfs {

class SpaAllocator final : public BlockAllocator {
 public:
  explicit SpaAllocator(Allocator& a) : a_(a) {}
  Result<std::vector<Dva>> Allocate(uint64_t psize, int copies, uint64_t txg) override {
    return a_.Allocate(psize, copies, txg);
  }
  Status Free(const Dva& dva, uint64_t txg) override { return a_.Free(dva, txg); }
  Status Unallocate(const Dva& dva, uint64_t txg) override { return a_.Unallocate(dva, txg); }

 private:
  Allocator& a_;
};

}  // namespace uzfs
