// ObjsetWriter: an object set being modified in memory, txg by txg, and
// written copy-on-write by Sync(txg). The write side of the DMU.
//
// Model. The writer holds the set's committed state (the objset block it
// was opened from or last synced: meta-dnode, intent-log header, type) and,
// per object touched, the committed dnode plus one dirty record per
// unsynced txg:
//   - the level-0 blocks written in that txg (whole blocks, dblk bytes),
//   - the ranges of level-0 blocks freed in that txg (applied before the
//     blocks at sync, so free-then-write and write-then-free both end as
//     the caller did them),
//   - the dnode's fields (type, bonus, block sizes, maxblkid, ...) as of
//     the end of that txg, and whether the object was freed in it.
// Reads see the newest record first, then older ones, then the committed
// tree: a read returns everything written so far, synced or not.
// Copy-on-write of buffers happens when a later txg dirties a block an
// earlier unsynced txg holds: the later txg gets its own copy, so a txg's
// buffers never change once the caller stops writing into that txg.
//
// Sync(txg) writes the txg's records: per object, its level-0 blocks
// through Zio (compression, checksum per the object's settings; all-zero
// blocks become holes; data copies from the options), then the indirect
// blocks above them (BlockTree: fill counts, nlevels grown as maxblkid
// needs), then the dnode blocks of the meta-dnode (32 dnodes of 512 bytes
// per 16 KiB block; a block's fill is its count of allocated dnodes), the
// meta-dnode's own tree, and finally the objset block (1 KiB before pool
// version 15, 2 KiB from it), whose pointer it returns. Metadata (indirect
// blocks, dnode blocks, the objset block) is written with `meta_copies`
// copies (3 for the MOS, data copies + 1 up to 3 otherwise), compressed
// with lz4 on feature-flag pools and lzjb before, checksummed fletcher4.
// Every block the new tree replaced is freed (Zio::Free, deferred to the
// txg) only after every new block is written; if a write fails, the new
// blocks are unallocated and the committed state and records are left as
// they were, so Sync can be retried. Nothing live is ever overwritten.
// The old objset block is freed too (free_old_root), for sets the DSL does
// not track by birth time yet.
//
// Sync passes (ObjsetWriterOptions::multi_pass; the MOS). The pool's sync
// of txg T writes the MOS, whose allocations and frees must land in space
// maps that are MOS objects of txg T themselves; so it syncs T in passes,
// as ZFS does. With multi_pass, after Sync(T) has returned, writes, frees,
// setters and AllocateObject may target txg T again (T must be the txg this
// writer synced last, no Sync may be running, and no newer txg may ever
// have been given records; InvalidArgument otherwise), and Sync(T) may be
// called again: pass 2, 3, ... of T. In a pass >= 2:
//   - every block is written uncompressed (data, indirect and dnode blocks,
//     the objset block), so sizes stop changing;
//   - every block whose current pointer was born in T (an earlier pass;
//     no durable uberblock references it) is offered to Zio as the rewrite
//     candidate (see zio.h): data blocks, indirect blocks, dnode blocks,
//     the meta-dnode's tree and the objset block itself. When its physical
//     size is unchanged it is rewritten in place (same DVAs: no allocation,
//     no free); otherwise a new block is allocated and the replaced one is
//     freed (Zio::Free(bp, T)) as usual. Blocks born before T are never
//     overwritten.
//   - a pass with no records (HasDirty(T) false) writes nothing and
//     returns the same root; the pool stops when a pass allocated and
//     freed nothing.
// A failed pass 1 leaves the committed state intact (Sync can be retried).
// A pass >= 2 that fails after issuing writes may have overwritten blocks
// the committed in-memory tree still names (born in T, never durable): the
// writer then refuses every further change and Sync with IoError, and the
// pool must drop txg T and reopen from its last durable root.
// With free_old_root == false the caller owns every replaced root, also a
// root born in T by an earlier pass that the next pass did not rewrite.
//
// Space accounting for the DSL: LastSyncStats() (or Sync's `stats`) gives,
// per Sync call (each pass), the blocks that call newly allocated (born)
// and freed (killed), as counts and sums of BlockAsize (all DVAs), psize
// and lsize, the objset block included (the new root is born; the old one
// is killed when it is freed). A rewrite in place is neither.
//
// Spill blocks (SetSpill/ReadSpill). An object may have one spill block
// (dnode.h): the system attributes its bonus cannot hold. It is dirtied per
// txg like a data block (the whole block, set or removed) and read back
// newest record first. The dnode's SPILL_BLKPTR flag follows the newest
// change at once (so the bonus room shrinks by 128 bytes while a spill is
// set); at sync the block is written copy-on-write as metadata (level 0,
// the dnode's bonus type, fletcher4, metadata compression and copies),
// the block it replaces (or that a removal drops) is freed, and both count
// in dn_used and SyncStats like any block of the object. Freeing the
// object frees its spill. Objects without a spill are written exactly as
// before.
//
// Accounting: each dnode's `used` is the allocated size of its blocks (all
// copies), in bytes when the pool version is >= 3 (flag USED_BYTES), else
// in sectors. DirtyBytes(txg) is what the write throttle will weigh: the
// data block bytes dirtied in that txg plus a dnode slot per dirtied object.
//
// Synced-block cache (OpenZFS keeps a synced dbuf cached the same way).
// After Sync(T) the level-0 buffers T wrote stay with their object, as the
// bytes now on disk, instead of being dropped: a partial write in a later
// txg (a 4 KiB write into a 128 KiB record) then takes the buffer over
// (no read, no decompression, no copy when nothing else holds it) and a
// read-modify-write of the committed tree (ReadBlock) copies from it. At
// most SetSyncedCacheLimit bytes over all objects (options:
// synced_cache_max), least recently synced or taken first out; entries
// leave when a later sync frees, truncates, rewrites or resizes their
// block or frees the object. Only with primarycache=all and never for a
// multi_pass writer (its passes rewrite blocks in place). A block the
// limit pushes out is still the committed one: it goes to the reader
// (BlockReader::Written; the ARC keeps it, as OpenZFS keeps what it wrote),
// so partial writes of a working set larger than this cache read it from
// memory, not from the disks.
//
// Early writes ("dmu_sync" + the dirty record's override, for the intent
// log's writes logged by reference). WriteEarly writes a level-0 block as
// txg T's record holds it now, before T syncs, with birth T: the pointer
// is what the log record names. Sync(T) then puts that very block in the
// tree instead of writing the data again (counted as born by that Sync,
// like any new block), so the data reaches the disks once. A block changed
// again in T after (or while) it was written early — a write, a hole
// punched, a truncate, the object freed or its block size changed — loses
// its override: Sync(T) writes the new bytes as usual and the early block
// is freed in T (deferred like any free: nothing reuses it before T is on
// disk, so a log record naming it stays readable until its txg is synced).
// A block gets at most one early block per txg (one changed again after
// its early write is not written early again in that txg: each dropped
// early block holds its space until the txg syncs), and never a gang
// block. An early write for a txg already syncing or synced, of a block T
// does not hold, of a block already dropped in T, that would gang, or on
// a multi_pass writer fails (the caller copies the data into the log
// instead); Sync(T) waits for early writes of T in flight before
// it takes T's records, and none can start once it has.
// An early write writes from the record's own buffer (no copy); a change
// to that block while the write is in flight gets a fresh copy of the
// buffer (copy on write), so the early block holds what was logged.
//
// Object numbers: AllocateObject takes the lowest free run of slots (1..32
// slots of 512 bytes, never crossing a 16 KiB dnode block), from object 1
// (object 0 is the meta-dnode). A freed object's slots are reused only
// after the txg that freed it has synced.
//
// Threading (what the txg engine may rely on):
//   - Every public method is safe to call from any thread.
//   - Writes, frees and setters take a `Txg` (zfs/util/txg_number.h): it
//     must be newer than every txg already synced or syncing (InvalidArgument otherwise; with
//     multi_pass, the last synced txg is allowed too, see above), and a
//     block (or the dnode's fields) may not be changed in txg T after a
//     newer txg has changed it (InvalidArgument): writers of one range are
//     serialized by the layer above (range locks), as in ZFS. A field
//     change (bonus, sizes, checksum) in txg T also applies to the records
//     of newer txgs already open.
//   - Sync(N) may run while other threads modify txg N+1 (and read): it
//     takes mu_ only to snapshot txg N's records at its start and to
//     install the result at its end; the I/O in between runs unlocked on
//     txg N's buffers, which nobody changes any more. Syncs are serialized
//     by sync_mu_ and must come in increasing txg order (passes of one
//     txg: in the syncing thread, which alone changes that txg between
//     them).
//   - Read() gathers under mu_ what the records hold and which committed
//     blocks it needs (with a copy of the committed dnode), then reads those
//     blocks without mu_ (through the BlockReader: ARC hits, misses in
//     parallel). That is safe because a committed tree's blocks are freed
//     only after a Sync installs the next tree (deferred to its txg): when a
//     Sync installed anything while the unlocked read ran (installs_
//     moved), or the read failed, Read does it again holding mu_ for the
//     I/O, as it always did before. A multi_pass writer (the MOS, whose
//     later passes rewrite blocks in place) always reads holding mu_.
//   - Writes (a partial block's read-modify-write), ReadSpill and dnode
//     loads hold mu_ while they read committed blocks.
// Reads of committed blocks go through opts.reader (the ARC when the pool
// has one; ZioBlockReader otherwise) with the set's cache policy
// (primarycache, SetCachePolicy). Prefetch() reads blocks of an object into
// the cache in the background.
//   Lock order: sync_mu_ -> mu_.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <vector>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dmu/dnode.h"
#include "zfs/dmu/objset.h"
#include "zfs/dmu/synced_block_cache.h"
#include "zfs/spa/block_ptr.h"
#include "zfs/util/aligned_bytes.h"
#include "zfs/util/mutex.h"
#include "zfs/util/status.h"
#include "zfs/util/txg_number.h"
#include "zfs/zio/block_reader.h"
#include "zfs/zio/zio.h"

namespace uzfs {

class BlockTree;

inline constexpr uint64_t kMetaDnodeBlockSize = 16384;   // 32 dnodes
inline constexpr uint64_t kDnodesPerBlock = kMetaDnodeBlockSize / kDnodeSlotSize;

struct ObjsetWriterOptions {
  uint64_t pool_version = 5000;   // < 3: used in sectors; < 15: 1 KiB objset block
  // Metadata compression; kInherit: lz4 at version 5000, lzjb before.
  CompressType meta_compress = CompressType::kInherit;
  // Defaults for objects whose dnode says "inherit" (0) or "on" (1).
  CompressType data_compress = CompressType::kInherit;  // kInherit: as meta_compress
  // The zstd level when data_compress is kZstd (1..19, negative for the
  // fast levels; 0: ZFS's default, 3), as CompressBlock takes it.
  int data_zstd_level = 0;
  ChecksumType data_checksum = ChecksumType::kFletcher4;
  int data_copies = 1;            // the dataset's `copies`; the MOS uses 3
  bool free_old_root = true;      // free the replaced objset block at Sync
  // Sync passes: txg T stays writable after Sync(T) and Sync(T) may run
  // again (see the top of this file). The MOS sets it.
  bool multi_pass = false;
  // Opened for reading only (a snapshot's object set): Open does not scan
  // every dnode block for the free slots (which only allocation needs),
  // so opening costs the objset block alone; every change is refused.
  bool read_only = false;
  // When set, Sync hands each replaced block to this instead of Zio::Free
  // (pass: 1, 2, ...). The pool uses it to put frees of later passes on the
  // deferred-free list, as ZFS does, so they dirty no new space maps.
  std::function<Status(const BlockPtr& bp, Txg txg, int pass)> free_hook;
  // How committed blocks are read (must outlive the writer); null: straight
  // from the Zio. A multi_pass writer may be given a caching reader only
  // through SettledBlockReader (zfs/zio/settled_block_reader.h): its later
  // passes rewrite blocks in place under the same DVA and birth.
  BlockReader* reader = nullptr;
  // The primarycache property (changeable later with SetCachePolicy).
  BlockCachePolicy cache_policy = BlockCachePolicy::kAll;
  // The secondarycache property (SetSecondaryCachePolicy).
  BlockCachePolicy secondary_cache_policy = BlockCachePolicy::kAll;
  // The synced-block cache's size (see the top of this file); 0: none.
  uint64_t synced_cache_max = uint64_t{64} << 20;
  // Told of every committed block a read could not get whole (no copy
  // passed its checksum, or the devices failed: Corruption or IoError), by
  // its ZFS bookmark within this object set: object (0: the dnode array),
  // level and block id. A failed indirect block is reported as the level-0
  // block the read was after. May be called from any reading thread with
  // the writer's lock held: it must not call back into the writer.
  std::function<void(uint64_t object, int64_t level, uint64_t blkid, const Status& why)> on_read_error;
};

// What one Sync call (one pass) did, for the DSL's space accounting.
struct SyncStats {
  Txg txg;
  int pass = 0;                  // 1 for the first Sync of txg; 2, 3, ... after
  // *_lsize: the "uncompressed" bytes ZFS charges (BP_GET_UCSIZE): lsize
  // for data blocks, psize for metadata (indirect blocks and metadata
  // types), so metadata never inflates compressratio.
  uint64_t born_blocks = 0, born_asize = 0, born_psize = 0, born_lsize = 0;
  uint64_t killed_blocks = 0, killed_asize = 0, killed_psize = 0, killed_lsize = 0;
  uint64_t rewritten_blocks = 0; // written in place over blocks born in txg
  uint64_t max_born_lsize = 0;   // largest lsize born (> 128 KiB: large_blocks)
  bool born_zstd = false;        // a block born compressed with zstd (zstd_compress)
  bool wrote = false;            // false: nothing written, root unchanged
};

// How AllocateObject lays out a new object.
struct ObjectProps {
  uint8_t type = dmu_ot::kPlainFileContents;
  uint8_t bonustype = 0;
  uint16_t bonuslen = 0;          // fixes nblkptr: as many pointers (<= 3) as fit
  uint64_t block_size = 131072;   // 512 B .. 16 MiB, a multiple of 512
  uint8_t indblkshift = 17;       // 9..17
  uint32_t dnode_size = 512;      // 512 .. 16384, a multiple of 512
  uint8_t checksum = 0;           // ChecksumType value; 0 = inherit
  uint8_t compress = 0;           // CompressType value; 0 = inherit
};

class ObjsetWriter {
 public:
  // An empty set of `type` (kMeta for a MOS, kZfs for a filesystem).
  static Result<std::unique_ptr<ObjsetWriter>> Create(Zio& zio, ObjsetType type,
                                                      const ObjsetWriterOptions& opts);
  // The set `root` names; NotSupported for a big-endian set (uzfs writes
  // little-endian and does not convert yet).
  static Result<std::unique_ptr<ObjsetWriter>> Open(Zio& zio, const BlockPtr& root,
                                                    const ObjsetWriterOptions& opts);
  ObjsetWriter(const ObjsetWriter&) = delete;
  ObjsetWriter& operator=(const ObjsetWriter&) = delete;

  // A new object; its number. InvalidArgument for impossible props.
  Result<uint64_t> AllocateObject(const ObjectProps& props, Txg txg) UZFS_EXCLUDES(mu_);
  // Frees the object and (at sync) every block of it.
  Status FreeObject(uint64_t object, Txg txg) UZFS_EXCLUDES(mu_);
  // The object's dnode as of the newest txg (blkptr, spill and used: as
  // last synced; spill is a hole while a new spill block is unsynced).
  // NotFound for a free object.
  Result<Dnode> GetDnode(uint64_t object) UZFS_EXCLUDES(mu_);
  // What GetDnode would say of the object's data block size, maxblkid and
  // flags, without copying the dnode (a writer picking the blocks it
  // changes asks for this on every write). NotFound for a free object.
  struct Shape {
    uint64_t block_size = 0;
    uint64_t maxblkid = 0;
    uint8_t flags = 0;
  };
  Result<Shape> GetShape(uint64_t object) UZFS_EXCLUDES(mu_);

  // Bonus bytes; the length may change up to the dnode's MaxBonusLen().
  Status SetBonus(uint64_t object, uint8_t bonustype, std::span<const uint8_t> bonus, Txg txg)
      UZFS_EXCLUDES(mu_);
  // The object's spill block becomes `bytes` (zero-padded to a multiple of
  // 512; at most 128 KiB) from txg on; an empty span removes it. The bonus
  // must already fit in the room a spill leaves (MaxBonusLen() with the
  // flag: shrink the bonus first, grow it after a removal). InvalidArgument
  // for a bigger spill or bonus, or when a newer txg already changed the
  // spill.
  Status SetSpill(uint64_t object, std::span<const uint8_t> bytes, Txg txg) UZFS_EXCLUDES(mu_);
  // The spill block as of the newest txg (padding included); empty when the
  // object has none. NotFound for a free object.
  Result<std::vector<uint8_t>> ReadSpill(uint64_t object) UZFS_EXCLUDES(mu_);
  // Block sizes. With data, only for a one-block object (block 0 keeps its
  // bytes, cut or zero-filled: a micro ZAP growing or turning fat), the
  // indirect block size unchanged and no newer txg holding its data.
  Status SetBlockSize(uint64_t object, uint64_t block_size, uint8_t indblkshift, Txg txg)
      UZFS_EXCLUDES(mu_);

  // The dataset's compression, checksum and copies properties (what
  // objects that inherit get; metadata gets copies + 1, at most 3), as
  // ObjsetWriterOptions gave them at open. SetDataProps changes them for
  // the blocks synced for txg `from_txg` and later (a txg already syncing
  // keeps what it started with), so `zfs set` acts on an open dataset
  // without reopening it.
  struct DataProps {
    CompressType compress = CompressType::kInherit;
    ChecksumType checksum = ChecksumType::kFletcher4;
    int copies = 1;
    int zstd_level = 0;  // with compress kZstd (ObjsetWriterOptions::data_zstd_level)
  };
  void SetDataProps(const DataProps& p, Txg from_txg) UZFS_EXCLUDES(mu_);
  // The newest values set (those the next txgs get).
  DataProps data_props() const UZFS_EXCLUDES(mu_);

  // The object's type from txg on (the DSL makes a dataset object a ZAP
  // when it first needs one: DMU_OTN_ZAP_METADATA). InvalidArgument for a
  // type dmu_types.h does not know.
  Status SetType(uint64_t object, uint8_t type, Txg txg) UZFS_EXCLUDES(mu_);

  // *dirtied (when given): the bytes of txg's dirty records this write
  // added (whole buffers newly held), as DirtyBytes(txg) moved for it alone.
  Status Write(uint64_t object, uint64_t offset, std::span<const uint8_t> data, Txg txg,
               uint64_t* dirtied = nullptr) UZFS_EXCLUDES(mu_);
  // Bytes past the last block read as zeros.
  Status Read(uint64_t object, uint64_t offset, std::span<uint8_t> out) UZFS_EXCLUDES(mu_);
  // Starts reading committed level-0 blocks `blkids` of the object into the
  // cache, in the background (nothing when the reader does not cache;
  // errors are dropped). Blocks past the object's end are skipped.
  void Prefetch(uint64_t object, std::span<const uint64_t> blkids) UZFS_EXCLUDES(mu_);
  // Whether Prefetch does anything (reads go through a cache).
  bool Caches() const { return reader_.Caches() && !opts_.multi_pass; }
  // primarycache for reads from now on.
  void SetCachePolicy(BlockCachePolicy p) { policy_.store(static_cast<uint8_t>(p), std::memory_order_relaxed); }
  BlockCachePolicy cache_policy() const {
    return static_cast<BlockCachePolicy>(policy_.load(std::memory_order_relaxed));
  }
  // secondarycache for reads from now on.
  void SetSecondaryCachePolicy(BlockCachePolicy p) {
    secondary_.store(static_cast<uint8_t>(p), std::memory_order_relaxed);
  }
  BlockCachePolicy secondary_cache_policy() const {
    return static_cast<BlockCachePolicy>(secondary_.load(std::memory_order_relaxed));
  }
  // Zeros [offset, offset + length): whole blocks become holes (freed at
  // sync), partial blocks are zeroed. length == UINT64_MAX truncates: the
  // object ends at offset (maxblkid drops to the last block kept).
  Status FreeRange(uint64_t object, uint64_t offset, uint64_t length, Txg txg)
      UZFS_EXCLUDES(mu_);

  // Worst-case bytes a write of [offset, offset+length) can allocate at
  // sync (data copies, and metadata copies of every indirect level and the
  // dnode block): what a transaction reserves.
  Result<uint64_t> EstimateWrite(uint64_t object, uint64_t offset, uint64_t length)
      UZFS_EXCLUDES(mu_);

  // The intent-log header (zil_header_t in the objset block) becomes `zh`
  // from txg on: Sync(txg) writes it (the set is dirty in txg for that
  // alone if nothing else changed); the newest call for a txg wins, and a
  // txg synced without a call keeps the header of the txg before. The
  // ZIL (zfs/dsl/pool_zil.cc) stores the log's first block here each txg.
  Status SetZilHeader(const ZilHeader& zh, Txg txg) UZFS_EXCLUDES(mu_);
  // The header as of the newest txg given one (else the committed one).
  ZilHeader zil_header() const UZFS_EXCLUDES(mu_);
  // The next AllocateObject takes object number `object` if its slots are
  // free (and fit a dnode block), else allocates as usual. One-shot. Log
  // replay uses it to re-create objects under the numbers the log names.
  void PreferObjectNumber(uint64_t object) UZFS_EXCLUDES(mu_);

  // One block to write early (see the top): the level-0 block of `object`
  // holding byte `offset`, as record `txg` holds it. WriteEarly fills `status` and, when OK, `bp` (never a hole:
  // an all-zero block fails with NotFound, the caller logs zeros itself).
  struct EarlyWrite {
    uint64_t object = 0, offset = 0;
    Txg txg;
    Status status;
    BlockPtr bp;
  };
  // Writes the blocks (in parallel) and waits. Two requests for one block
  // get the same pointer. (objset_writer_early.cc, with DropEarly.)
  void WriteEarly(std::span<EarlyWrite> reqs) UZFS_EXCLUDES(mu_, sync_mu_);
  // Early blocks Sync used in place of writing, and early blocks freed
  // unused (changed again, truncated), since the writer was opened.
  uint64_t early_used() const { return early_used_.load(std::memory_order_relaxed); }
  uint64_t early_dropped() const { return early_dropped_.load(std::memory_order_relaxed); }

  // Writes txg's changes; the new objset block pointer. A txg with no
  // changes still writes a new objset block (the caller decides to skip).
  // REQUIRES: txg newer than the last synced txg; nothing writes into txg
  // any more. InvalidArgument when an older txg still has unsynced changes
  // (txgs sync in order).
  // With multi_pass, txg may also equal the txg this writer synced last:
  // another pass of it (see the top of this file); with no records then,
  // it writes nothing and returns root().
  Result<BlockPtr> Sync(Txg txg) UZFS_EXCLUDES(mu_, sync_mu_);
  // The same; *stats (when given) receives what LastSyncStats() returns.
  Result<BlockPtr> Sync(Txg txg, SyncStats* stats) UZFS_EXCLUDES(mu_, sync_mu_);
  // Born/killed/rewritten space of the last successful Sync call.
  SyncStats LastSyncStats() const UZFS_EXCLUDES(mu_);
  // The synced-block cache's limit from now on (0 empties it).
  void SetSyncedCacheLimit(uint64_t bytes) UZFS_EXCLUDES(mu_);
  SyncedCacheStats synced_cache_stats() const UZFS_EXCLUDES(mu_);
  // Whether txg has unsynced records (a change of any object in it).
  bool HasDirty(Txg txg) const UZFS_EXCLUDES(mu_);

  uint64_t DirtyBytes(Txg txg) const UZFS_EXCLUDES(mu_);
  // The sum of DirtyBytes over txgs first..last (one lock, not one per txg).
  uint64_t DirtyBytesIn(Txg first, Txg last) const UZFS_EXCLUDES(mu_);
  // The objset block pointer last synced (or opened); a hole before the
  // first Sync of a new set.
  BlockPtr root() const UZFS_EXCLUDES(mu_);
  // The committed objset (intent-log header, type, meta-dnode).
  Objset objset() const UZFS_EXCLUDES(mu_);
  ~ObjsetWriter();

 private:
  struct TxgRecord;
  struct Object;
  struct SyncedObject;
  ObjsetWriter(Zio& zio, const ObjsetWriterOptions& opts);

  // Loads (or finds) an allocated object. NotFound when free.
  Result<Object*> Hold(uint64_t object) UZFS_REQUIRES(mu_);
  // The record of txg for obj, created with the fields of the newest
  // record (or committed dnode). InvalidArgument for a txg too old.
  Result<TxgRecord*> Dirty(Object* obj, uint64_t txg) UZFS_REQUIRES(mu_);
  Status CheckTxg(uint64_t txg) const UZFS_REQUIRES(mu_);
  // Applies fn to the fields of record txg and of every newer record.
  template <typename Fn>
  Status ChangeFields(Object* obj, uint64_t txg, Fn fn) UZFS_REQUIRES(mu_);
  // The current bytes of L0 block blkid (newest record, else committed),
  // into every byte of `out` (zeros where the file has none).
  Status ReadBlock(Object* obj, uint64_t blkid, std::span<uint8_t> out) UZFS_REQUIRES(mu_);
  // opts_.on_read_error for a failed read of level-0 block `blkid` of
  // `object` (Corruption and IoError only).
  void ReportReadError(uint64_t object, uint64_t blkid, const Status& why) const;
  // A writable buffer for blkid in record txg (copied from what reads see
  // unless `whole` is about to be overwritten).
  Result<AlignedBytes*> DirtyBlock(Object* obj, TxgRecord* rec, uint64_t txg, uint64_t blkid,
                                           bool whole) UZFS_REQUIRES(mu_);
  Status ScanSlots() UZFS_REQUIRES(mu_);
  // The synced-block cache (synced_): whether any unsynced record of obj
  // holds or frees blkid; the cached buffer of blkid (size bytes) taken
  // out, when it is still the committed block, no record touches it and
  // nothing else holds it; what a synced record r (new dnode dn, old
  // dnode old) changes in it.
  bool RecordsTouch(const Object* obj, uint64_t blkid) const UZFS_REQUIRES(mu_);
  std::shared_ptr<AlignedBytes> TakeSynced(Object* obj, uint64_t blkid, uint64_t size) UZFS_REQUIRES(mu_);
  void KeepSynced(uint64_t object, Object* obj, const TxgRecord& r, const Dnode& old, const Dnode& dn,
                  std::span<const std::pair<uint64_t, BlockPtr>> l0) UZFS_REQUIRES(mu_);
  // The blocks the synced-block cache let go (to_cache_), to the reader's cache
  // (BlockReader::Written), outside mu_.
  void HandOverEvicted() UZFS_EXCLUDES(mu_);
  // Sync's steps (objset_writer_sync.cc), in the order Sync runs them. st
  // carries the snapshot of txg's records and what each step produced; a
  // step's error goes to FailSync, which unallocates what was written.
  struct SyncState;
  Status CollectDirty(SyncState& st) UZFS_REQUIRES(sync_mu_) UZFS_EXCLUDES(mu_);
  Status WriteTxg(SyncState& st) UZFS_REQUIRES(sync_mu_) UZFS_EXCLUDES(mu_);
  Status PlanDataBlocks(SyncState& st) UZFS_REQUIRES(sync_mu_) UZFS_EXCLUDES(mu_);
  void PlanSpillBlocks(SyncState& st) UZFS_REQUIRES(sync_mu_) UZFS_EXCLUDES(mu_);
  Status WriteDataBlocks(SyncState& st) UZFS_REQUIRES(sync_mu_) UZFS_EXCLUDES(mu_);
  Status SyncObjectTrees(SyncState& st) UZFS_REQUIRES(sync_mu_) UZFS_EXCLUDES(mu_);
  Status SyncObjectTree(SyncState& st, size_t i, size_t* next_job, SyncedObject* so)
      UZFS_REQUIRES(sync_mu_) UZFS_EXCLUDES(mu_);
  Status NewDnode(SyncState& st, size_t i, const BlockTree& tree, SyncedObject* so)
      UZFS_REQUIRES(sync_mu_) UZFS_EXCLUDES(mu_);
  Status FillDnodeBlocks(SyncState& st, const Dnode& meta, BlockTree& mtree,
                         std::map<uint64_t, std::vector<uint8_t>>* mblocks)
      UZFS_REQUIRES(sync_mu_) UZFS_EXCLUDES(mu_);
  Status WriteMetaDnode(SyncState& st) UZFS_REQUIRES(sync_mu_) UZFS_EXCLUDES(mu_);
  Status WriteObjsetBlock(SyncState& st) UZFS_REQUIRES(sync_mu_) UZFS_EXCLUDES(mu_);
  void AccountSync(SyncState& st) UZFS_REQUIRES(sync_mu_);
  void InstallSync(SyncState& st) UZFS_REQUIRES(sync_mu_) UZFS_EXCLUDES(mu_);
  Status FreeReplaced(SyncState& st) UZFS_REQUIRES(sync_mu_) UZFS_EXCLUDES(mu_);
  Status FailSync(SyncState& st, Status s) UZFS_REQUIRES(sync_mu_) UZFS_EXCLUDES(mu_);
  // Early blocks [first, stop) of rec lose their override (see the top):
  // installed ones are freed in txg, ones in flight are marked stale.
  void DropEarly(TxgRecord* rec, uint64_t first, uint64_t stop, uint64_t txg) UZFS_REQUIRES(mu_);
  // The props a data block of an object with dnode fields `f` is written
  // with under data props `dp`.
  WriteProps DataWriteProps(const Dnode& f, const DataProps& dp) const;
  CompressType MetaCompress() const;
  // One attempt of Read; with hold_lock, mu_ stays held for the I/O.
  // *raced: a Sync installed a tree while the unlocked I/O ran.
  Status ReadOnce(uint64_t object, uint64_t offset, std::span<uint8_t> out, bool hold_lock,
                  bool* raced) UZFS_EXCLUDES(mu_);
  BlockReadOptions ReadOpts() const { return BlockReadOptions{cache_policy(), secondary_cache_policy()}; }

  Zio& zio_;
  const ObjsetWriterOptions opts_;
  ZioBlockReader direct_;
  BlockReader& reader_;  // opts_.reader or direct_
  std::atomic<uint8_t> policy_;
  std::atomic<uint8_t> secondary_;
  std::atomic<uint64_t> installs_{0};  // Syncs that installed a new tree

  mutable Mutex sync_mu_;  // taken before mu_
  mutable Mutex mu_;
  Objset os_ UZFS_GUARDED_BY(mu_);             // committed
  BlockPtr root_ UZFS_GUARDED_BY(mu_);
  std::map<uint64_t, std::unique_ptr<Object>> objects_ UZFS_GUARDED_BY(mu_);
  // Slot map: 1 = allocated (or freed in an unsynced txg), 0 = free.
  std::vector<uint8_t> slots_ UZFS_GUARDED_BY(mu_);
  uint64_t alloc_hint_ UZFS_GUARDED_BY(mu_) = 1;
  // txg -> (object, slots) freed in it; slots become free when it syncs.
  std::map<uint64_t, std::vector<std::pair<uint64_t, size_t>>> freed_objects_ UZFS_GUARDED_BY(mu_);
  std::map<uint64_t, std::set<uint64_t>> dirty_objects_ UZFS_GUARDED_BY(mu_);      // txg -> objs
  std::map<uint64_t, uint64_t> dirty_bytes_ UZFS_GUARDED_BY(mu_);
  uint64_t synced_txg_ UZFS_GUARDED_BY(mu_) = 0;   // newest txg synced (or opened)
  uint64_t syncing_txg_ UZFS_GUARDED_BY(mu_) = 0;  // txg a Sync is writing, else 0
  // multi_pass: the txg this writer itself synced last (0: none yet; an
  // opened root's txg is durable and never reopened for passes) and how
  // many passes it had.
  uint64_t pass_txg_ UZFS_GUARDED_BY(mu_) = 0;
  int passes_ UZFS_GUARDED_BY(mu_) = 0;
  uint64_t newest_dirtied_txg_ UZFS_GUARDED_BY(mu_) = 0;  // newest txg ever given a record
  bool broken_ UZFS_GUARDED_BY(mu_) = false;  // a pass >= 2 failed mid-write
  SyncStats last_stats_ UZFS_GUARDED_BY(mu_);
  // Data properties in force, and changes waiting for their txg's sync.
  DataProps data_props_ UZFS_GUARDED_BY(mu_);
  std::map<uint64_t, DataProps> pending_props_ UZFS_GUARDED_BY(mu_);
  std::map<uint64_t, ZilHeader> zil_headers_ UZFS_GUARDED_BY(mu_);  // txg -> header to write
  uint64_t prefer_obj_ UZFS_GUARDED_BY(mu_) = 0;
  SyncedBlockCache synced_ UZFS_GUARDED_BY(mu_);  // the synced-block cache
  // Evicted from it, still committed: waiting for HandOverEvicted.
  SyncedBlockCache::Evicted to_cache_ UZFS_GUARDED_BY(mu_);
  std::map<uint64_t, int> early_inflight_ UZFS_GUARDED_BY(mu_);  // txg -> early writes running
  CondVar early_cv_;
  std::atomic<uint64_t> early_used_{0}, early_dropped_{0};
};

}  // namespace uzfs
