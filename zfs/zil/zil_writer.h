// ZilWriter: builds a dataset's intent log — packs log records into log
// blocks, chains them, writes them and makes them durable — with group
// commit. The on-disk format is in zil_format.h.
//
// How a commit works. Records are appended (Append) in the order of the
// changes they describe and queued in memory, each tagged with the object
// it belongs to (a write, truncate, setattr or xattr change: its file) or
// with no object (0: create, remove, rename, link... — namespace changes,
// which later changes of any file may depend on). Commit(ticket, oid)
// returns once every record appended up to that ticket that is either
// untagged or tagged `oid` is on stable storage (oid 0: every record), as
// OpenZFS's zil_commit(foid): an fsync of one file does not write other
// files' data records; they wait for a later commit or are dropped when
// their txg syncs. The first committer that finds no block write in
// progress becomes the issuer: it takes every queued untagged record and
// every record of the objects that committers are waiting for (theirs
// and everyone else's), assigns their on-disk sequence numbers (lrc_seq,
// +1 per record in log order), packs them into blocks, writes the blocks
// and flushes the devices once (a batch of one block: one durable write,
// ZilWriterOptions::write_durable); the committers that arrive meanwhile
// wait, and most find their records written by that batch (group
// commit): far fewer block writes and flushes than commits. Records of
// one object are written in the order they were appended; records of
// different objects may be reordered, which replay tolerates because an
// object's records depend only on its own earlier records and on the
// namespace records before them. When an object is freed its queued
// records must be dropped (DropObject) before its number can be reused,
// or a later commit would write them as records of the new object.
//
// Blocks and the chain. The log always has one allocated, not yet written
// block (the "open" block), which the last written block (or the header)
// names. Issuing it: allocate the next block (its size chosen from what is
// still to be written — at the end of a batch: that batch's size, so a
// like batch fits one block — and the recent sizes: 4 KiB, 12 KiB, 36 KiB,
// 68 KiB or 128 KiB, never below the largest of the last eight), put its pointer
// (chain value: this one's with seq + 1) in this block, write this block,
// and the next becomes the open block. Slim blocks (pool version >= 23)
// write only roundup(used, 4 KiB) bytes. A copied write too big for the
// room left is split into several TX_WRITE records. If the next block
// cannot be allocated, the batch fails (NoSpace): this writer is then
// broken (every later Commit fails) and the caller must fall back to
// waiting for a txg sync and start a new log (Destroy + Create), as
// OpenZFS does. With hold_txg, any failed batch (allocation, block write
// or flush) ends the log itself in the txg it held, before letting it go:
// every block of the log is freed in that txg and `closed` stores the
// empty header there, so blocks that no block on disk may name (the
// successor of a failed write) are freed in the same sync that stops the
// header naming the chain, and a crash never leaves them allocated and
// unnamed. Syncs of earlier txgs (one may be running) still get the old
// header from Sync: the chain's blocks stay allocated until then. The
// caller's Destroy then finds no log.
//
// Freeing. Sync(txg), called while txg syncs, frees the written blocks
// whose records all belong to txgs <= txg (their changes are in the pool
// now) and that were allocated in txg or before (the oldest first, up to
// the first that is not) and returns the header to store in that txg: it names the oldest
// block still needed (or the open block). DropSynced(txg), after txg is on
// disk, forgets queued records of txgs <= txg: no commit needs them any
// more.
//
// Promises: a block is written only after its successor is allocated and
// named in it; Commit returns OK only after the flush that follows the
// write of the records it waits for (or the durable write that wrote them). Threading: Append, Commit, Sync,
// DropSynced and header() may be called from any threads. Lock order:
// issuer_mu_ (held while a batch is written, and by Sync/Create/Destroy)
// before mu_ (the queue).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <unordered_map>
#include <span>
#include <vector>

#include "zfs/dmu/objset.h"
#include "zfs/util/mutex.h"
#include "zfs/util/txg_number.h"
#include "zfs/zil/zil_format.h"
#include "zfs/zio/block_target.h"

namespace uzfs {

// Where log blocks come from: the pool implements it over the log class
// (slog devices) when there is one, else the main pool.
class ZilBlockAllocator {
 public:
  virtual ~ZilBlockAllocator() = default;
  // A block of `size` bytes (a multiple of 4 KiB) for `txg`: a pointer
  // whose DVAs are filled in (the writer sets the other fields). NoSpace
  // when there is no room.
  virtual Result<BlockPtr> Allocate(uint64_t size, uint64_t txg) = 0;
  // Returns every DVA of a log block, usable again once `txg` syncs.
  virtual Status Free(const BlockPtr& bp, uint64_t txg) = 0;
  // Whether log blocks go to separate log devices first (the zil_commit
  // probe's slog argument).
  virtual bool HasLogDevices() const { return false; }
};

// Log blocks from the pipeline's allocator, `copies` DVAs each (zfs-fuse
// writes log blocks with one copy).
class ZioZilBlockAllocator final : public ZilBlockAllocator {
 public:
  explicit ZioZilBlockAllocator(BlockAllocator& alloc, int copies = 1)
      : alloc_(alloc), copies_(copies) {}
  Result<BlockPtr> Allocate(uint64_t size, uint64_t txg) override;
  Status Free(const BlockPtr& bp, uint64_t txg) override;

 private:
  BlockAllocator& alloc_;
  int copies_;
};

struct ZilWriterOptions {
  uint64_t objset_id = 0;     // chain word 2
  bool slim = true;           // pool version >= 23 (SPA_VERSION_SLIM_ZIL)
  uint64_t max_block_size = kZilMaxBlockSize;
  // The txg new log blocks are allocated in (the pool's open txg). Empty:
  // the highest txg among the records being written.
  std::function<uint64_t()> open_txg;
  // When set, a batch holds the pool's open txg while it allocates and
  // writes (a Tx: that txg cannot sync meanwhile), and its blocks are born
  // in that txg: a block's birth then tells whether its allocation reached
  // the space maps (birth <= the last synced txg) or must be claimed on
  // import. Returns the held txg and the function that releases it; taken
  // before issuer_mu_ (waiting for a txg never happens under it).
  std::function<Result<std::pair<uint64_t, std::function<void()>>>()> hold_txg;
  // With hold_txg: called when a failed batch has ended the log in the txg
  // it held (still holding it): the caller stores the empty header in that
  // txg, whether or not it still calls Sync for the log then.
  std::function<void(uint64_t txg)> closed;
  // When set, ends a batch instead of the writer's flush function: makes
  // durable the writes to these top-level vdevs, the ones the batch wrote
  // blocks to (earlier batches' blocks were flushed by their own batch).
  std::function<Status(const std::vector<uint32_t>& vdevs)> flush_vdevs;
  // Writes logged by reference (AppendByReference): called by the issuer,
  // before it packs a batch, with the batch's TX_WRITE records that still
  // lack their data (data empty, blkptr a hole). For each it either sets
  // blkptr (and blkoff) to a block holding the write, written and complete
  // before it returns ("WR_INDIRECT"), or fills data with the write's bytes
  // (copied). An error fails the batch. The flush that ends the batch also
  // covers the vdevs of the blocks it named. Without it such records are
  // refused at append.
  std::function<Status(std::span<LogRecord* const> recs)> resolve_writes;
  // When set, a batch whose records fit one block, and that has nothing
  // else to flush, writes that block through this instead of the target's
  // Write plus the flush: it must return OK only once the block is durable
  // (the pool: Vdev::WriteDurable: on a raidz or mirror, each column or
  // side written O_DSYNC in parallel instead of the write and a flush of
  // every child; on one device, write then flush).
  std::function<Status(uint32_t vdev, uint64_t offset, std::span<const uint8_t> buf)> write_durable;
};

// The object a record belongs to for Commit(ticket, oid): the file of a
// write, truncate, setattr, ACL or SA xattr record; 0 for the rest.
uint64_t ZilRecordObject(const LogRecord& rec);

struct ZilWriterStats {
  std::atomic<uint64_t> commits{0};         // Commit calls
  std::atomic<uint64_t> batches{0};         // issuer runs that wrote blocks
  std::atomic<uint64_t> blocks_written{0};
  std::atomic<uint64_t> bytes_written{0};
  std::atomic<uint64_t> flushes{0};
  std::atomic<uint64_t> durable_writes{0};  // blocks written through write_durable (no flush)
  std::atomic<uint64_t> records_written{0};
  std::atomic<uint64_t> blocks_freed{0};
};

class ZilWriter {
 public:
  using FlushFn = std::function<Status()>;
  // `flush` makes every write so far durable (Vdev::Flush of the log and
  // main devices). All references must outlive the writer.
  ZilWriter(BlockTarget& target, ZilBlockAllocator& alloc, FlushFn flush,
            const ZilWriterOptions& opts);
  ZilWriter(const ZilWriter&) = delete;
  ZilWriter& operator=(const ZilWriter&) = delete;

  // Starts a new, empty log: allocates its first block (4 KiB) in `txg`
  // with a fresh chain value. Returns the header to store in the objset in
  // that txg. REQUIRES: no log yet (new writer or after Destroy).
  Result<ZilHeader> Create(Txg txg) UZFS_EXCLUDES(issuer_mu_, mu_);
  // Continues a log whose header names a block not written yet (what Sync
  // leaves when every block is freed; a log that a walk finds empty): the
  // next batch is written there, with record seqs after `last_seq`.
  // REQUIRES: no log yet; the block really is unused (a walk of zh reads no
  // block), else the log it starts would be overwritten.
  Status Attach(const ZilHeader& zh, uint64_t last_seq = 0) UZFS_EXCLUDES(issuer_mu_, mu_);
  // Frees every block of the log in `txg` (with the successors of failed
  // block writes) and forgets queued records; the
  // header to store is all zeros. Commits fail (Busy) from then on, those
  // waiting included: their records were not written. The writer is usable
  // again after Create.
  Status Destroy(Txg txg) UZFS_EXCLUDES(issuer_mu_, mu_);
  // Destroy in the txg `pick` returns, called once no batch is being
  // written and none can start: every acknowledged record's change then
  // belongs to that txg or an older one (a batch holds the open txg while
  // it writes), so storing the empty header in it loses nothing a commit
  // returned for. `pick` must not sleep on a txg sync (it runs with the
  // issuer's lock held, which a sync of this log would need).
  Status DestroyIn(const std::function<Result<Txg>()>& pick) UZFS_EXCLUDES(issuer_mu_, mu_);

  // Queues a record (rec.txg = the txg of its change; rec.seq is assigned
  // when written). Returns its ticket for Commit. InvalidArgument when the
  // record cannot fit a log block (only copied writes are split) or its
  // body does not match its type; FailedPrecondition-like Busy with no log.
  Result<uint64_t> Append(LogRecord rec) UZFS_EXCLUDES(mu_);
  // The same with an explicit object tag (0: a namespace record that every
  // commit writes); Append(rec) tags by ZilRecordObject(rec).
  Result<uint64_t> Append(LogRecord rec, uint64_t oid) UZFS_EXCLUDES(mu_);
  // A TX_WRITE of `length` bytes at `offset` within one block of the file
  // (blkoff = offset within that block), whose data the issuer asks
  // opts.resolve_writes for when it writes the record: by reference (the
  // block written in place, what OpenZFS does for large writes without a
  // slog or with logbias=throughput) or copied. Tagged with the file.
  Result<uint64_t> AppendByReference(LogRecord rec) UZFS_EXCLUDES(mu_);
  // Forgets the queued records tagged `oid` (the object was freed).
  void DropObject(uint64_t oid) UZFS_EXCLUDES(mu_);
  // Makes the queued records tagged `oid` untagged, so every commit that
  // covers a later record writes them too: a rename logs this first, so
  // the data of a file renamed into place is in the log whenever the
  // rename is (OpenZFS's zil_async_to_sync at a rename).
  void Untag(uint64_t oid) UZFS_EXCLUDES(mu_);
  // The ticket of the last record appended (0: none).
  uint64_t LastTicket() const UZFS_EXCLUDES(mu_);
  // Bytes of copied write data queued and not yet written or dropped: what
  // the log holds in memory (the ZPL caps it; a write past the cap is not
  // logged and the fsync after it waits for its txg).
  uint64_t QueuedDataBytes() const { return queued_data_.load(std::memory_order_relaxed); }
  // Returns once every record with a ticket <= `ticket` is durable (or was
  // dropped as synced). The error of the batch that should have written
  // them, or of an earlier failed batch (the writer is broken then).
  // With oid != 0, only the records tagged oid or untagged (see the top).
  Status Commit(uint64_t ticket, uint64_t oid = 0) UZFS_EXCLUDES(issuer_mu_, mu_);

  // See the top of the file. Returns the header to store in `txg`.
  Result<ZilHeader> Sync(Txg txg) UZFS_EXCLUDES(issuer_mu_, mu_);
  void DropSynced(Txg txg) UZFS_EXCLUDES(mu_);

  // The header as of now (what Sync would store, before freeing).
  ZilHeader header() const UZFS_EXCLUDES(issuer_mu_);
  const ZilWriterStats& stats() const { return stats_; }

 private:
  struct Pending {
    uint64_t ticket;
    uint64_t oid;  // 0: untagged
    LogRecord rec;
    bool by_ref = false;  // resolve_writes gives its data
  };
  static uint64_t DataBytes(const Pending& p);
  struct Written {
    BlockPtr bp;
    uint64_t max_txg;
  };

  // Writes a batch: seqs, packing, block writes, one flush.
  // held_txg: the txg hold_txg gave (0: none).
  Status WriteBatch(std::vector<Pending>& batch, uint64_t held_txg) UZFS_REQUIRES(issuer_mu_);
  // Adds one encoded record to the open block, issuing blocks as needed.
  // `after` = bytes of records still to come after this one.
  Status AddRecord(LogRecord& rec, uint64_t after, uint64_t alloc_txg) UZFS_REQUIRES(issuer_mu_);
  // Allocates the next block (sized for `want` bytes of records), writes
  // the open block naming it, and makes it the open block. With durable,
  // through opts_.write_durable (the block needs no flush afterwards).
  Status IssueBlock(uint64_t want, uint64_t alloc_txg, bool durable = false) UZFS_REQUIRES(issuer_mu_);
  uint64_t ChooseSize(uint64_t want) UZFS_REQUIRES(issuer_mu_);
  BlockPtr Template(const BlockPtr& dvas, uint64_t size, uint64_t txg) const;
  ZilHeader HeaderLocked() const UZFS_REQUIRES(issuer_mu_);
  // Starts the log at `first` (the block the next records go into), its
  // records numbered after last_seq; the log exists and is not broken.
  void BeginChain(const BlockPtr& first, uint64_t last_seq) UZFS_REQUIRES(issuer_mu_) UZFS_EXCLUDES(mu_);
  Status DestroyLocked(uint64_t txg) UZFS_REQUIRES(issuer_mu_);
  // A failed batch that held txg `held`: Destroy(held), remembering the
  // header that syncs of earlier txgs must still store, then opts_.closed.
  void CloseAfterFailure(uint64_t held) UZFS_EXCLUDES(issuer_mu_, mu_);
  // One record tagged oid left pending_ (tagged_ bookkeeping).
  void Untally(uint64_t oid) UZFS_REQUIRES(mu_);

  BlockTarget& target_;
  ZilBlockAllocator& alloc_;
  FlushFn flush_;
  const ZilWriterOptions opts_;
  ZilWriterStats stats_;

  mutable Mutex issuer_mu_;
  bool have_log_ UZFS_GUARDED_BY(issuer_mu_) = false;
  BlockPtr open_ UZFS_GUARDED_BY(issuer_mu_);             // allocated, not written
  std::vector<uint8_t> open_recs_ UZFS_GUARDED_BY(issuer_mu_);  // records packed into it
  uint64_t open_max_txg_ UZFS_GUARDED_BY(issuer_mu_) = 0;
  std::deque<Written> written_ UZFS_GUARDED_BY(issuer_mu_);  // oldest first
  // Blocks allocated as the successor of a block whose write failed (it
  // may be on disk and name them): freed by Destroy.
  std::vector<BlockPtr> failed_next_ UZFS_GUARDED_BY(issuer_mu_);
  // Set when a failed batch ended the log in txg closed_txg_: the header
  // Sync returns for txgs before it.
  uint64_t closed_txg_ UZFS_GUARDED_BY(issuer_mu_) = 0;
  ZilHeader closed_header_ UZFS_GUARDED_BY(issuer_mu_);
  uint64_t lr_seq_ UZFS_GUARDED_BY(issuer_mu_) = 0;
  uint64_t prev_sizes_[8] UZFS_GUARDED_BY(issuer_mu_) = {};
  // The top-level vdevs this batch must flush before its commit returns:
  // those it wrote log blocks to (not through write_durable).
  std::vector<uint32_t> batch_vdevs_ UZFS_GUARDED_BY(issuer_mu_);
  uint64_t batch_blocks_ UZFS_GUARDED_BY(issuer_mu_) = 0;  // blocks this batch wrote
  unsigned prev_rotor_ UZFS_GUARDED_BY(issuer_mu_) = 0;

  mutable Mutex mu_;
  CondVar cv_;
  std::deque<Pending> pending_ UZFS_GUARDED_BY(mu_);  // ticket order
  std::atomic<uint64_t> queued_data_{0};  // DataBytes of pending_, changed under mu_
  // oid -> how many records in pending_ are tagged oid (only oids > 0 with
  // at least one): DropObject and Untag of an object with none are O(1).
  std::unordered_map<uint64_t, uint64_t> tagged_ UZFS_GUARDED_BY(mu_);
  uint64_t next_ticket_ UZFS_GUARDED_BY(mu_) = 1;
  bool issuing_ UZFS_GUARDED_BY(mu_) = false;
  uint64_t batches_started_ UZFS_GUARDED_BY(mu_) = 0;  // batches taken from pending_
  uint64_t batches_done_ UZFS_GUARDED_BY(mu_) = 0;     // ... and finished (ok or not)
  std::map<uint64_t, int> waiting_ UZFS_GUARDED_BY(mu_);  // oid -> committers in Commit
  bool log_exists_ UZFS_GUARDED_BY(mu_) = false;
  Status broken_ UZFS_GUARDED_BY(mu_);
};

}  // namespace uzfs
