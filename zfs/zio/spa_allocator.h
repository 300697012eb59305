// SpaAllocator: the ZIO pipeline's BlockAllocator over the pool's metaslab
// Allocator (zfs/spa/allocator.h). A thin forwarding shim: the allocator
// already returns all-or-nothing DVAs on distinct vdevs and defers frees.
#pragma once

#include <functional>

#include "zfs/spa/allocator.h"
#include "zfs/zio/block_target.h"

namespace uzfs {

class SpaAllocator final : public BlockAllocator {
 public:
  explicit SpaAllocator(Allocator& a) : a_(a) {}
  Result<std::vector<Dva>> Allocate(uint64_t psize, int copies, uint64_t txg) override {
    return a_.Allocate(psize, copies, txg);
  }
  Status Free(const Dva& dva, uint64_t txg) override {
    Status s = a_.Free(dva, txg);
    if (s.ok() && on_free_) on_free_(dva);
    return s;
  }
  // Called with every DVA freed, after the free. Set before any I/O (not
  // synchronized).
  void SetFreeObserver(std::function<void(const Dva&)> fn) { on_free_ = std::move(fn); }
  Status Unallocate(const Dva& dva, uint64_t txg) override { return a_.Unallocate(dva, txg); }

 private:
  Allocator& a_;
  std::function<void(const Dva&)> on_free_;
};

}  // namespace uzfs
