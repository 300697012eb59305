// DmuZapObject: the ZapObject interface (zap_object.h) over one object of an
// ObjsetWriter, changed in one txg at a time; and CreateZapObject, which
// allocates a new object and writes an empty ZAP into it.
//
// Model. Block()/MutableBlock() copy blocks out of the object (through
// ObjsetWriter::Read) into a cache; spans point into that cache and stay
// valid for the rest of the ZAP operation. EndOperation() writes every block
// handed out by MutableBlock() back with ObjsetWriter::Write(object,
// blkid * bs, block, txg), so the object changes only between operations.
// By default it then drops the cache. With SetCacheLimit(n > 0) it keeps up
// to n bytes of (now clean) blocks for later operations, the least recently
// used dropped first: a directory looked up again and again is then not
// copied out of the object every time (a fat ZAP lookup reads two blocks).
// An operation's cost does not grow with what is kept: the blocks it
// dirtied are listed, the bytes kept counted and the use order kept as a
// list as blocks come and go (a 50000-entry directory keeps hundreds of
// leaves; walking them at every lookup made each one cost tens of us).
// A kept block is what this object last wrote, so keeping it is only right
// while this DmuZapObject is the object's only writer (the ZPL's directory
// cache, zfs/zpl/zpl_dir.h); anything else that writes the object must use
// the default limit 0 or DropCache() first.
//
// Errors (the Flush design). ZapObject::EndOperation() returns void and
// ZapWriter cannot be told otherwise, so a failed write-back is recorded:
// the first error sticks, every later call (Block, MutableBlock,
// SetBlockSize, FreeBlocks) returns it, and Flush() reports it. A caller
// MUST call Flush() after each ZapWriter operation (or batch of them) and
// before it syncs the txg; once Flush() fails, the ZapWriter's in-memory
// state no longer matches the object: drop the writer and this object and
// reopen both (the txg is then suspect as a whole, as with any failed
// DMU write).
//
// Block size changes (micro ZAP growth 512 -> 1024 -> ... and the upgrade to
// a fat ZAP at 16 KiB) happen while the object has one block.
// ObjsetWriter::SetBlockSize only accepts objects without data blocks, so
// SetBlockSize here first asks the writer directly (works for an object
// with no blocks, and for one-block objects should the writer learn
// dnode_set_blksz's "resize the only block"); when refused, it frees the
// object's data in the txg (FreeRange to the end), sets the size, and
// block 0 (old bytes, zero-filled to the new size) is rewritten at
// EndOperation. If the writer still refuses (today: block 0 exists in the
// committed tree or in an older unsynced txg, i.e. the ZAP was written in an
// earlier txg), block 0 is written back unchanged and the writer's error
// is returned: the ZAP operation fails with nothing lost.
//
// NumBlocks(): maxblkid + 1, except that an object whose maxblkid is 0 and
// whose block 0 reads as zeros (a new object) has 0 blocks, which is what
// ZapWriter::Create requires. FreeBlocks never lowers it (as MemZapObject).
//
// Threading: none of its own; one ZAP writer per object, callers lock. The
// ObjsetWriter may be used by other threads for other objects meanwhile.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <span>
#include <vector>

#include "zfs/dmu/objset_writer.h"
#include "zfs/util/status.h"
#include "zfs/util/txg_number.h"
#include "zfs/zap/zap_object.h"
#include "zfs/zap/zap_writer.h"

namespace uzfs {

// A new micro ZAP's block size (ZFS allocates ZAP objects at 512 bytes;
// they grow to 16 KiB when upgraded to fat).
inline constexpr uint64_t kNewZapBlockSize = 512;
// The indirect block shift of objects zfs-fuse (pool versions <= 28)
// creates: 16 KiB indirect blocks.
inline constexpr uint8_t kLegacyIndBlkShift = 14;

class DmuZapObject final : public ZapObject {
 public:
  // Reads the object's dnode (errors are recorded and returned by every
  // later call and by Flush()). `os` must outlive this object.
  DmuZapObject(ObjsetWriter& os, uint64_t object, Txg txg);
  ~DmuZapObject() override = default;
  DmuZapObject(const DmuZapObject&) = delete;
  DmuZapObject& operator=(const DmuZapObject&) = delete;

  uint64_t BlockSize() const override { return bsize_; }
  uint64_t NumBlocks() const override { return nblocks_; }
  Result<std::span<const uint8_t>> Block(uint64_t blkid) override;
  Result<std::span<uint8_t>> MutableBlock(uint64_t blkid) override;
  Status SetBlockSize(uint64_t bytes) override;
  Status FreeBlocks(uint64_t first, uint64_t n) override;
  void EndOperation() override;

  // The first error since construction (from reading the dnode or writing
  // blocks back at EndOperation); Ok if none. Writes back anything still
  // cached first (a caller that used Block/MutableBlock directly).
  Status Flush();

  // Moves later operations to another txg (the pool keeps one ZapWriter per
  // object across txgs). REQUIRES: between operations.
  void SetTxg(Txg txg) { txg_ = txg; }
  Txg txg() const { return txg_; }
  uint64_t object() const { return object_; }

  // Bytes of clean blocks kept between operations (0: none, the default).
  void SetCacheLimit(uint64_t bytes) { cache_limit_ = bytes; }
  // Bytes of blocks cached now (between operations: the kept clean ones).
  uint64_t cached_bytes() const { return cached_bytes_; }
  // Drops every kept block. REQUIRES: between operations.
  void DropCache() { EndOperation(); ClearCache(); }

 private:
  struct Cached {
    std::vector<uint8_t> data;
    bool dirty = false;
    std::list<uint64_t>::iterator lru;  // its place in lru_
  };
  // cache_ with cached_bytes_, lru_ and dirty_ kept in step.
  Cached& Insert(uint64_t blkid, Cached c);
  void Erase(std::map<uint64_t, Cached>::iterator it);
  void ClearCache();
  void MarkDirty(uint64_t blkid, Cached& c);
  // Drops kept blocks, least recently used first, down to cache_limit_.
  void Trim();
  // The cache entry of blkid, read from the object if absent.
  Result<Cached*> Load(uint64_t blkid);
  // Writes dirty blocks back and empties the cache; first error returned.
  Status WriteBack();

  ObjsetWriter& os_;
  const uint64_t object_;
  Txg txg_;
  uint64_t bsize_ = kNewZapBlockSize;
  uint8_t indblkshift_ = kLegacyIndBlkShift;
  uint64_t nblocks_ = 0;
  Status error_ = Status::Ok();  // sticky
  std::map<uint64_t, Cached> cache_;  // nodes are stable: spans stay valid
  uint64_t cached_bytes_ = 0;         // sum of cache_'s data sizes
  uint64_t cache_limit_ = 0;
  std::list<uint64_t> lru_;           // cache_'s blkids, least recently used first
  std::vector<uint64_t> dirty_;       // blkids made dirty since the last write-back
};

// Allocates an object of `type` with 512-byte blocks (16 KiB indirect
// blocks, as zfs-fuse) and the given bonus, and writes an empty ZAP into it
// (micro unless opts.fat) in `txg`. The object's number.
Result<uint64_t> CreateZapObject(ObjsetWriter& os, uint8_t type, Txg txg, uint8_t bonustype = 0,
                                 uint16_t bonuslen = 0, const ZapWriteOptions& opts = {},
                                 uint8_t indblkshift = kLegacyIndBlkShift);

}  // namespace uzfs
