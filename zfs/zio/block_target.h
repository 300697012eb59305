// What the ZIO pipeline needs from the pool beneath it, as two small
// interfaces: where blocks are stored (the vdev tree) and who hands out
// space (the metaslab allocator). The pool implements them over its Vdev
// tree and Allocator; tests implement them in memory. Keeping the pipeline
// behind these lets it be tested and benchmarked without a whole pool.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "zfs/spa/block_ptr.h"
#include "zfs/util/status.h"

namespace uzfs {

// verify(bytes) -> true when the bytes are the block the pointer names.
using BlockVerify = std::function<bool(std::span<const uint8_t>)>;

// The vdev tree as the pipeline sees it: top-level vdevs by index.
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
  // Reads `buf.size()` bytes at `offset` of top-level vdev `vdev`, using the
  // vdev's own redundancy (mirror sides, raidz parity) until verify accepts
  // them, and repairing what it can below. IoError / Corruption otherwise.
  // With scrub, every redundant copy below is read and checked too (raidz
  // parity, every mirror side) and the wrong ones repaired.
  virtual Status Read(uint32_t vdev, uint64_t offset, std::span<uint8_t> buf,
                      const BlockVerify& verify, bool scrub = false) = 0;
  // Several reads of top-level vdev `vdev`, each as Read(vdev, offset, buf,
  // *verify) would do it, outcomes in their status (a batch the vdev may
  // issue at once: Vdev::ReadMany). Default: Read each in turn.
  struct ManyRead {
    uint64_t offset = 0;
    std::span<uint8_t> buf;
    const BlockVerify* verify = nullptr;
    Status status;
  };
  virtual void ReadMany(uint32_t vdev, std::span<ManyRead> reads) {
    static const BlockVerify kTrusted;
    for (ManyRead& r : reads) r.status = Read(vdev, r.offset, r.buf, r.verify ? *r.verify : kTrusted);
  }
  virtual Status Write(uint32_t vdev, uint64_t offset, std::span<const uint8_t> buf) = 0;
  // Several writes to top-level vdev `vdev`, each as Write would do it,
  // outcomes in their status (a batch the vdev may issue at once, merging
  // adjacent writes: Vdev::WriteMany). Default: Write each in turn.
  struct ManyWrite {
    uint64_t offset = 0;
    std::span<const uint8_t> buf;
    Status status;
  };
  virtual void WriteMany(uint32_t vdev, std::span<ManyWrite> writes) {
    for (ManyWrite& w : writes) w.status = Write(vdev, w.offset, w.buf);
  }
  // The WriteMany batches of several top-level vdevs, each as
  // WriteMany(vdev, writes) would do it, which a target may run at the same
  // time (VdevTreeTarget: the leaf writes of all of them issued together,
  // WriteManyAcross). Default: WriteMany each in turn.
  struct VdevWrites {
    uint32_t vdev = 0;
    std::span<ManyWrite> writes;
  };
  virtual void WriteManyVdevs(std::span<VdevWrites> batches) {
    for (VdevWrites& b : batches) WriteMany(b.vdev, b.writes);
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
