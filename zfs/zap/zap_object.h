// The blocks of one ZAP object as the ZAP write side sees them: a small
// block-store interface the DMU implements over an object's dbufs (hold a
// block, dirty it in the open transaction, change the block size of a
// one-block object, free a range), plus MemZapObject, an in-memory
// implementation for tests and benchmarks, and ZapObjectSource, which lets
// the read side (ZapReader) read through the same object.
//
// Why spans into the object rather than copies: a ZAP insert touches a leaf,
// the header and sometimes a pointer-table block; copying whole 16 KiB
// blocks in and out would cost more than the insert itself. Spans match
// what the DMU hands out anyway (dbuf data held for the transaction).
//
// Lifetime contract (what an implementation must provide, what the writer
// relies on): a span from Block()/MutableBlock() stays valid, and the bytes
// behind a MutableBlock() span stay the ones that will be written, until
// EndOperation(), SetBlockSize() or FreeBlocks() is called. Asking for other
// blocks (including MutableBlock past the end, which extends the object)
// does not invalidate spans already handed out. The ZAP writer calls
// EndOperation() once at the end of every public operation, where a DMU
// implementation releases its holds.
// Threading: not thread-safe; one writer per object, callers lock.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "zfs/util/status.h"
#include "zfs/zap/zap.h"

namespace uzfs {

class ZapObject {
 public:
  virtual ~ZapObject() = default;
  // Data block size in bytes (a power of two for fat ZAPs; a multiple of
  // 512 for micro ZAPs).
  virtual uint64_t BlockSize() const = 0;
  // maxblkid + 1; 0 for an object with no blocks yet.
  virtual uint64_t NumBlocks() const = 0;
  // Block `blkid` (BlockSize() bytes; zeros for a hole). Corruption past
  // the end, IoError when it cannot be read.
  virtual Result<std::span<const uint8_t>> Block(uint64_t blkid) = 0;
  // Block `blkid` to change in place (dirtied in the open transaction).
  // blkid >= NumBlocks() extends the object with zero blocks.
  virtual Result<std::span<uint8_t>> MutableBlock(uint64_t blkid) = 0;
  // Changes the block size, keeping block 0's bytes (zero-filled when
  // growing). REQUIRES: NumBlocks() <= 1 (dmu_object_set_blocksize's rule).
  virtual Status SetBlockSize(uint64_t bytes) = 0;
  // Frees blocks [first, first + n): they read as zeros afterwards.
  virtual Status FreeBlocks(uint64_t first, uint64_t n) = 0;
  // End of one ZAP operation: spans handed out before are dead.
  virtual void EndOperation() {}
};

// An object kept in memory: one vector per block, holes as empty vectors.
class MemZapObject final : public ZapObject {
 public:
  explicit MemZapObject(uint64_t block_size = 512) : bsize_(block_size), zeros_(block_size, 0) {}
  // Blocks cut from a byte string (e.g. a real ZAP read from a pool).
  MemZapObject(std::span<const uint8_t> bytes, uint64_t block_size);

  uint64_t BlockSize() const override { return bsize_; }
  uint64_t NumBlocks() const override { return blocks_.size(); }
  Result<std::span<const uint8_t>> Block(uint64_t blkid) override;
  Result<std::span<uint8_t>> MutableBlock(uint64_t blkid) override;
  Status SetBlockSize(uint64_t bytes) override;
  Status FreeBlocks(uint64_t first, uint64_t n) override;

  // Every block concatenated, holes as zeros (for BufferZapSource).
  std::vector<uint8_t> Bytes() const;
  // Blocks holding data (not holes).
  uint64_t AllocatedBlocks() const;
  // Block() and MutableBlock() calls so far: the work per ZAP operation,
  // independent of caches (the benchmark reports it per entry).
  uint64_t block_requests() const { return requests_; }

 private:
  uint64_t bsize_;
  std::vector<uint8_t> zeros_;
  std::vector<std::vector<uint8_t>> blocks_;
  uint64_t requests_ = 0;
};

// ZapReader over a ZapObject (copies each block it reads). The object must
// outlive the source.
class ZapObjectSource final : public ZapBlockSource {
 public:
  explicit ZapObjectSource(ZapObject& obj) : obj_(obj) {}
  uint64_t BlockSize() const override { return obj_.BlockSize(); }
  uint64_t NumBlocks() const override { return obj_.NumBlocks(); }
  Status ReadBlock(uint64_t blkid, std::vector<uint8_t>* out) override;

 private:
  ZapObject& obj_;
};

}  // namespace uzfs
