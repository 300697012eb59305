// BlockIo: the one request type of block I/O between the ZIO pipeline and
// the vdev tree — read, write or durable write of one block on one
// top-level vdev, with its outcome — and the read vocabulary that comes
// with it (BlockVerifier, ReadMode, ReadOutcome).
//
// What it promises: a batch of BlockIo handed to Vdev::Submit (or to the
// pipeline's BlockTarget::Submit, which passes the same structs down) gets
// every request settled in place: `status` is that request's own outcome,
// and a read's `outcome` says what it took (redundancy, repairs). The
// requests of one batch run concurrently: a read and a write of overlapping
// ranges in one batch see each other in no defined order.
// Thread-safety: plain data; one batch belongs to one caller.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "zfs/util/status.h"

namespace uzfs {

// verify(block) -> true when the psize bytes are the right block (the caller
// checks the block-pointer checksum). Called on the submitting thread, maybe
// many times per read (once per reconstruction tried). An empty verifier
// (or none) means "trust the data": no checks, no repair.
using BlockVerifier = std::function<bool(std::span<const uint8_t> block)>;

struct ReadOutcome {
  // kResilver: nothing below the block is stale, so nothing was read (the
  // buffer holds nothing) and the read is OK.
  bool untouched = false;
  int repaired_children = 0;      // == repaired.size()
  bool reconstructed = false;     // parity or another mirror side was needed
  int checksum_errors = 0;        // children that returned wrong data
  std::vector<uint32_t> repaired;  // ids (index in this vdev) written back
};

enum class ReadMode : uint8_t {
  kNormal,  // read what the block needs (raidz: data columns; mirror: one side)
  kScrub,   // read every copy (raidz: parity too; mirror: every side), repair
            // any that is wrong
  kResilver,  // what the stale leaves below lack: a block with no column or
              // side on a stale leaf is not read (outcome.untouched); any
              // other is read as by kScrub and written to the stale leaves,
              // but parity that was read is not checked against the data
              // (a scrub's work: a resilver only fills the stale leaves)
};

enum class BlockOp : uint8_t {
  kRead,
  kWrite,
  kWriteDurable,  // durable when settled, as a write then a flush would make it
};

struct BlockIo {
  uint32_t vdev = 0;       // top-level vdev (index in the root)
  uint64_t offset = 0;     // in that vdev's allocatable space
  std::span<uint8_t> buf;  // read into; written from (never modified by a write)
  BlockOp op = BlockOp::kRead;
  const BlockVerifier* verify = nullptr;  // reads; null or empty: trusted
  ReadMode mode = ReadMode::kNormal;      // reads
  Status status;                          // the outcome, set by the batch
  ReadOutcome outcome;                    // reads: what the read took

  static BlockIo Read(uint32_t vdev, uint64_t offset, std::span<uint8_t> buf,
                      const BlockVerifier* verify = nullptr, ReadMode mode = ReadMode::kNormal) {
    BlockIo io;
    io.vdev = vdev;
    io.offset = offset;
    io.buf = buf;
    io.verify = verify;
    io.mode = mode;
    return io;
  }
  static BlockIo Write(uint32_t vdev, uint64_t offset, std::span<const uint8_t> buf,
                       BlockOp op = BlockOp::kWrite) {
    BlockIo io;
    io.vdev = vdev;
    io.offset = offset;
    io.buf = {const_cast<uint8_t*>(buf.data()), buf.size()};  // only read from
    io.op = op;
    return io;
  }
  bool is_read() const { return op == BlockOp::kRead; }
  // The verifier to call, or null when the data is trusted.
  const BlockVerifier* verifier() const { return verify != nullptr && *verify ? verify : nullptr; }
};

}  // namespace uzfs
