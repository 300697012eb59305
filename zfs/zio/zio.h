// The ZIO pipeline: how a logical block becomes bytes on the vdevs and back.
//
// Write:  compress (ZFS framing and 1/8 rule; all-zero data becomes a hole)
//         -> checksum the physical bytes -> allocate `copies` DVAs on
//         distinct top-level vdevs (ditto blocks) -> issue the writes ->
//         the block pointer. When no contiguous run is free the block is
//         ganged (gang.h): split into up to three pieces, each written as
//         its own block (ganged again if need be), under a gang header.
// Read:   validate the pointer (never follow an impossible one) -> holes
//         read as zeros, embedded pointers decompress their payload ->
//         otherwise each DVA in turn: read through the vdev (which uses its
//         own mirror/raidz redundancy) until the bytes match the pointer's
//         checksum -> rewrite the good bytes over every copy that failed
//         (self-healing) -> decompress.
// Free:   returns every DVA's space (gang members too), deferred to `txg`.
// Rewrite in place (sync passes >= 2 of a txg): WriteProps::rewrite names
// the block being replaced. When it is a plain block (not ganged, not
// embedded) born in this very txg, with exactly `copies` DVAs and the same
// physical size as the new bytes, the new bytes are written over its DVAs
// (every copy) instead of allocating: the returned pointer has the
// candidate's DVAs and the new checksum, sizes, fill and birth. Any other
// candidate is ignored (a block of an older txg is never overwritten: a
// durable uberblock may reference it). IsRewriteOf() tells the caller which
// happened; a rewritten block is neither new space nor a free.
//
// Promises: a block pointer is returned only after every copy is written;
// a read returns data only if it matches the checksum (or the pointer says
// checksum=off); a failed write leaves no space allocated (a failed
// rewrite leaves the candidate allocated, its copies possibly holding part
// of the new bytes: nothing durable references it). Errors keep
// their kind: NoSpace, IoError (too few devices answered), Corruption (no
// copy verified).
// Threading: every method is safe to call from many threads at once.
// The *Async forms run the whole pipeline on the pool's worker threads, so
// with enough blocks in flight every core compresses and checksums.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "zfs/spa/block_ptr.h"
#include "zfs/util/aligned_bytes.h"
#include "zfs/util/checksum.h"
#include "zfs/util/compress/compress.h"
#include "zfs/util/mutex.h"
#include "zfs/util/status.h"
#include "zfs/util/thread_pool.h"
#include "zfs/zio/block_target.h"
#include "zfs/zio/gang.h"

namespace uzfs {

struct WriteProps {
  CompressType compress = CompressType::kLz4;  // kOff, kLzjb, kGzip1..9, kZle, kLz4, kZstd
  int zstd_level = 0;                          // 0 = ZFS's default (3)
  ChecksumType checksum = ChecksumType::kFletcher4;
  int copies = 1;                              // 1..3
  uint8_t type = 19;                           // dmu_object_type (19: plain file contents)
  uint8_t level = 0;                           // 0 = data
  uint64_t fill = 1;                           // non-hole L0 blocks below (1 for data)
  // The block this write replaces, offered for a rewrite in place (see the
  // top of this file); a hole (the default) = allocate as usual.
  BlockPtr rewrite;
};

// True when `bp` (a Write result) reuses the DVAs of `candidate`, i.e. the
// write was a rewrite in place of that block rather than a new allocation.
bool IsRewriteOf(const BlockPtr& bp, const BlockPtr& candidate);

struct ZioStats {
  std::atomic<uint64_t> blocks_written{0}, logical_written{0}, physical_written{0};
  std::atomic<uint64_t> holes_written{0}, gang_blocks{0};
  std::atomic<uint64_t> blocks_rewritten{0};  // in place (also in blocks_written)
  std::atomic<uint64_t> blocks_read{0}, logical_read{0};
  std::atomic<uint64_t> copies_failed{0}, self_heals{0}, blocks_scrubbed{0};
};

struct ScrubResult {
  int copies_checked = 0;
  int copies_repaired = 0;   // whole DVAs rewritten from another copy
  int copies_unrepaired = 0; // damaged DVAs that could not be rewritten (the data itself was read)
};

struct ZioOptions {
  unsigned threads = 0;          // worker threads; 0 = four per core (workers block on I/O)
  uint64_t psize_round = 512;    // physical sizes are multiples of this
  bool writable = true;          // false: never write repairs (read-only import)
};

class Zio {
 public:
  Zio(BlockTarget& target, BlockAllocator& allocator, const ZioOptions& opts = {});
  ~Zio();
  Zio(const Zio&) = delete;
  Zio& operator=(const Zio&) = delete;

  // REQUIRES: data.size() a multiple of 512, at most 16 MiB.
  Result<BlockPtr> Write(std::span<const uint8_t> data, const WriteProps& props, uint64_t txg);
  // REQUIRES: out.size() == bp.lsize.
  Status Read(const BlockPtr& bp, std::span<uint8_t> out);
  // The physical half of Read, for a cache that keeps blocks as stored:
  // validates the pointer and reads the psize bytes of a block (the first
  // copy that verifies, healing the others), still compressed. Counted in
  // blocks_read like Read. NotSupported for holes and embedded pointers
  // (their data is in the pointer: use Read). The buffer is aligned for
  // direct I/O (the raidz/mirror/leaf reads land in it without a bounce).
  Result<AlignedBytes> ReadPhysical(const BlockPtr& bp);
  // ReadPhysical of several blocks, results in order. The first copies of
  // the plain (non-gang) blocks are read in one batch across the top-level
  // vdevs (BlockTarget::Submit: one hand-off and one wait for all); a
  // block whose batch read failed or did not verify then goes through
  // ReadPhysical's whole path (other copies, self-healing).
  std::vector<Result<AlignedBytes>> ReadPhysicalMany(std::span<const BlockPtr> bps);
  // The logical half: `phys` (ReadPhysical's bytes) decompressed into out.
  // REQUIRES: out.size() == bp.lsize. Corruption when they do not decompress.
  static Status DecodePhysical(const BlockPtr& bp, std::span<const uint8_t> phys,
                               std::span<uint8_t> out);
  Status Free(const BlockPtr& bp, uint64_t txg);
  // What `zpool scrub` does to one block: reads every copy (every DVA, and
  // below each the raidz parity / every mirror side; for a gang block every
  // header copy and every member's copies), checks each against its checksum
  // and rewrites the bad ones from a good one. OK when every copy is (now)
  // good; Corruption when no copy verifies or, read-only, damage was left;
  // IoError when a repair could not be written.
  Status Scrub(const BlockPtr& bp, ScrubResult* result = nullptr);
  // Several blocks, each as Scrub would (the same outcome and repairs),
  // with every copy of every plain block read in one BlockTarget::Submit
  // batch of scrub reads: the top-level vdevs at once, and on each the
  // reads that lie next to each other on a leaf merged. The scan hands it
  // blocks sorted by offset. A gang block goes through Scrub. With
  // ReadMode::kResilver only what lies on stale leaves is read, rebuilt
  // and written there (block_io.h). REQUIRES: status and results have
  // bps.size() entries.
  void ScrubMany(std::span<const BlockPtr> bps, std::span<Status> status, std::span<ScrubResult> results,
                 ReadMode mode = ReadMode::kScrub);
  // Like Free, but the space is reusable at once: only for a block written
  // in this open txg that nothing references (e.g. an aborted write).
  Status Unallocate(const BlockPtr& bp, uint64_t txg);

  // Several blocks of one txg, each as Write(data, props, txg) would write
  // it (same pointers, errors and stats), outcomes in bp/status. New blocks
  // are allocated back to back (every copy of one block, then the next;
  // not interleaved with other WriteMany batches, under batch_alloc_mu_).
  // Every copy, rewrites in place included, is then written in one
  // BlockTarget::Submit batch: the top-level vdevs at the same time, and
  // on each the copies that sit next to each other on a leaf (raidz
  // columns, mirror sides, plain sectors) merge into few large writes
  // (Vdev::Submit). Holes are settled without I/O;
  // a block with no contiguous space goes Write's way (it gangs). On a
  // failure only that block fails (its new space is taken back); the
  // others stand.
  struct BatchWrite {
    std::span<const uint8_t> data;
    WriteProps props;
    BlockPtr bp;    // the result when status is OK (a hole for all-zero data)
    Status status;
  };
  void WriteMany(std::span<BatchWrite> writes, uint64_t txg);
  // How many bytes of blocks one WriteMany batch should carry, for callers
  // that split a txg's blocks into batches (the DMU's WriteBlocks): 4x the
  // vdev aggregation limit (raidz2 over six disks: 32 blocks of 128 KiB,
  // ~1 MiB of merged writes per leaf); 0 with aggregation off (one block a
  // batch). Follows the limit as it is tuned.
  static uint64_t WriteBatchBytes();

  // Asynchronous forms: `data`/`out` must stay valid until `done` runs (on a
  // worker thread).
  void WriteAsync(std::span<const uint8_t> data, const WriteProps& props, uint64_t txg,
                  std::function<void(Result<BlockPtr>)> done);
  void ReadAsync(const BlockPtr& bp, std::span<uint8_t> out, std::function<void(Status)> done);

  // Runs `task` on the pipeline's worker threads (for callers that issue
  // their own asynchronous reads, e.g. the ARC's prefetch). After the Zio
  // is shut down tasks run inline.
  void Submit(std::function<void()> task) { pool_.Submit(std::move(task)); }

  const ZioStats& stats() const { return stats_; }

 private:
  // Write's stages before any space is taken: compress and checksum into
  // p (p->hole: all zeros, p->bp is the whole result).
  struct Prepared {
    BlockPtr bp;
    AlignedBytes cbuf;
    std::span<const uint8_t> phys;
    bool hole = false;
  };
  Status Prepare(std::span<const uint8_t> data, const WriteProps& props, uint64_t txg, Prepared* p);
  // Write's stages after Prepare: rewrite in place or allocate and write.
  Status Place(Prepared* p, const WriteProps& props, uint64_t txg);
  // Writes physical bytes as a block (ganging when needed); fills the DVAs
  // and sizes of *bp. Allocates nothing on failure.
  Status WritePhysical(std::span<const uint8_t> phys, int copies, uint64_t txg, BlockPtr* bp);
  // The candidate's DVAs, when the write may go over them in place.
  static bool CanRewrite(const BlockPtr& cand, uint64_t psize, int copies, uint64_t txg);
  Status WriteGang(std::span<const uint8_t> phys, int copies, uint64_t txg, BlockPtr* bp);
  // Reads copy `d` of *bp (verified) into phys; for a gang copy also
  // returns its raw header in *header when given.
  Status ReadCopy(const BlockPtr& bp, int d, std::span<uint8_t> phys, int depth, bool scrub,
                  std::array<uint8_t, kGangHeaderSize>* header);
  Status ReadGangCopy(const BlockPtr& bp, int d, std::span<uint8_t> phys, int depth, bool scrub,
                      std::array<uint8_t, kGangHeaderSize>* header);
  // Reads and checks gang header copy `d`: verified, members valid and
  // strictly smaller than the gang block.
  Result<GangHeader> ReadGangHeader(const BlockPtr& bp, int d, bool scrub,
                                    std::array<uint8_t, kGangHeaderSize>* raw);
  // The first copy (from `first` on) that verifies, healing the ones that
  // failed before it.
  Status ReadCopies(const BlockPtr& bp, int first, std::span<uint8_t> phys, int depth);
  Status ScrubBlock(const BlockPtr& bp, int depth, ScrubResult* r);
  // Every DVA a free must return (gang members included); reads all gang
  // headers first so a free is all or nothing.
  Status CollectFrees(const BlockPtr& bp, int depth, std::vector<Dva>* out);
  Status FreeBlock(const BlockPtr& bp, uint64_t txg, bool now);
  bool Verifies(const BlockPtr& bp, std::span<const uint8_t> phys) const;
  BlockPtrLimits Limits() const;

  BlockTarget& target_;
  BlockAllocator& alloc_;
  ZioOptions opts_;
  ZioStats stats_;
  // Held while a WriteMany batch allocates, so its blocks are adjacent.
  Mutex batch_alloc_mu_;
  ThreadPool pool_;
};

}  // namespace uzfs
