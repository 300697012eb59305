// What the ZIO pipeline needs from the pool beneath it, as two small
// interfaces: where blocks are stored (the vdev tree) and who hands out
// space (the metaslab allocator). The pool implements them over its Vdev
// tree and Allocator; tests implement them in memory. Keeping the pipeline
// behind these lets it be tested and benchmarked without a whole pool.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "zfs/spa/block_ptr.h"
#include "zfs/util/status.h"
#include "zfs/vdev/block_io.h"

namespace uzfs {

// The vdev tree as the pipeline sees it: top-level vdevs by index, and
// block I/O as batches of the vdev layer's own requests (BlockIo,
// zfs/vdev/block_io.h), handed down unchanged.
// Threading: all methods are called concurrently from pipeline workers.
class BlockTarget {
 public:
  virtual ~BlockTarget() = default;
  virtual uint32_t TopLevelCount() const = 0;
  // Allocatable bytes of top-level vdev `vdev` (bounds DVAs; see ValidateBlockPtr).
  virtual uint64_t TopLevelAsize(uint32_t vdev) const = 0;
  // Allocated bytes of a block of psize bytes on top-level vdev `vdev`
  // (raidz parity and padding included). Default: psize rounded up to 512.
  virtual uint64_t TopLevelAllocatedSize(uint32_t vdev, uint64_t psize) const {
    return (psize + 511) & ~uint64_t{511};
  }
  // Settles every request of the batch in place, across any number of
  // top-level vdevs (each request names its own). A read uses the vdev's
  // own redundancy (mirror sides, raidz parity) until its verifier accepts
  // the bytes, repairing what it can below; IoError / Corruption otherwise.
  // In ReadMode::kScrub every redundant copy below is read and checked too
  // and the wrong ones repaired. A write is OK when the block is readable
  // afterwards. VdevTreeTarget issues the leaf I/O of the whole batch
  // together (Vdev::Submit): the top-level vdevs work at the same time and
  // adjacent writes on a leaf merge.
  virtual void Submit(std::span<BlockIo> ios) = 0;

  // A batch of one read (scrub: ReadMode::kScrub).
  Status Read(uint32_t vdev, uint64_t offset, std::span<uint8_t> buf, const BlockVerifier& verify,
              bool scrub = false) {
    BlockIo io = BlockIo::Read(vdev, offset, buf, &verify, scrub ? ReadMode::kScrub : ReadMode::kNormal);
    Submit({&io, 1});
    return io.status;
  }
  // A batch of one write.
  Status Write(uint32_t vdev, uint64_t offset, std::span<const uint8_t> buf) {
    BlockIo io = BlockIo::Write(vdev, offset, buf);
    Submit({&io, 1});
    return io.status;
  }
};

// The allocator as the pipeline sees it.
class BlockAllocator {
 public:
  virtual ~BlockAllocator() = default;
  // `copies` DVAs for a block of psize bytes, on distinct top-level vdevs
  // where possible. NoSpace when no contiguous run fits (the pipeline then
  // gangs); never a partial result.
  virtual Result<std::vector<Dva>> Allocate(uint64_t psize, int copies, uint64_t txg) = 0;
  // Returns a DVA's space, usable again after `txg` syncs.
  virtual Status Free(const Dva& dva, uint64_t txg) = 0;
  // Takes back space allocated in `txg` that was never referenced (a write
  // that failed), usable again at once. Default: a deferred Free.
  virtual Status Unallocate(const Dva& dva, uint64_t txg) { return Free(dva, txg); }
};

}  // namespace uzfs
