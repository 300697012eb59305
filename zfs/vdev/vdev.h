// Vdev: the vdev tree — leaves, mirrors, raidz and the root — and the
// blocking block I/O the ZIO pipeline issues to it: batches of BlockIo
// (block_io.h) through Submit, with Read/Write/WriteDurable as batches of
// one.
//
// What it does: a Vdev turns "read/write psize bytes at byte `offset` of my
// allocatable space" into I/O on its leaves, with the redundancy its kind
// gives:
//  - leaf: one BlockDevice; byte `offset` of its allocatable space is device
//    byte kVdevDataOffset (4 MiB) + offset. No redundancy.
//  - mirror: every side holds the whole block. Writes go to all sides at
//    once; reads start on a side chosen by the offset (spreading load) and
//    try the others on an I/O error or a verify failure.
//  - raidz: columns from raidz::MapBlock (OpenZFS's layout, so pools move
//    between uzfs and OpenZFS) plus nparity parity columns. Reads read data
//    columns only; on a failed child, parity rebuilds the missing columns;
//    on a verify failure every column is read and subsets of up to nparity
//    (minus the known-failed) columns are tried as silently wrong until the
//    block verifies. Skip sectors are never written.
//  - root: top-level vdev i is child i; Submit on it sends each request to
//    the top-level vdev it names. Read/Write on it are InvalidArgument (a
//    DVA names a top-level vdev); Flush flushes every leaf.
//
// What it promises:
//  - Self-healing: when a read succeeds with a verifier after using
//    redundancy, the correct bytes are written back to every child that
//    returned an I/O error (and is still usable) or wrong data, and the
//    children that returned wrong data get one checksum error each
//    (BlockDevice::errors().checksum). A second read of that block needs no
//    repair. A null verifier means "trust the data": no checks, no repair.
//  - Errors: IoError when too few children could be read (or written) for
//    the block; Corruption when the block was read but nothing verifies;
//    InvalidArgument for a range outside asize() or an unaligned offset.
//    Never returns OK with bytes that failed the verifier.
//  - Counting: I/O errors are counted once, by the leaf device that failed
//    (block_device.h). Interior vdevs count, in their own counters, the
//    blocks they could not read or write (read/write_errors) and the blocks
//    that nothing verified (checksum_errors), as zpool status shows for a
//    raidz or mirror line. repaired_bytes is what self-healing wrote.
//  - State: a leaf is ONLINE until taken OFFLINE (Offline()), marked
//    REMOVED (MarkRemoved(): its device vanished) or found UNAVAIL (an I/O
//    error was followed by a failed probe of the device: its identity
//    check (BlockDevice::CheckIdentity) and an 8 KiB read at its start,
//    and for a write error also a rewrite of the same bytes; or the pool
//    found it changed: MarkUnavail()).
//    Interior states derive from the children: mirror DEGRADED when any
//    side is not usable, UNAVAIL ("insufficient replicas", what zpool status
//    shows; OpenZFS's CANT_OPEN) when none is; raidz DEGRADED with 1..nparity
//    unusable children, UNAVAIL beyond; root DEGRADED/UNAVAIL when a
//    top-level vdev is. Unusable leaves get no I/O (reads treat them as
//    missing, writes skip them).
//  - Stale leaves (SetStale: a device that missed writes, or a new one
//    being resilvered) take every write but serve no read while another
//    copy can: a mirror reads them last, a raidz treats their columns as
//    missing unless that leaves too few. A scrub-mode read (the resilver)
//    writes the block's verified bytes to every stale leaf below it.
//  - Replacing and spare vdevs ("replacing-N", "spare-N": VdevKind::
//    kReplacing / kSpare, MakeGroupVdev) stand in one child slot of a
//    mirror, a raidz or the root: the original leaf first, then the one
//    taking over. Writes go to every member (the slot took the block when
//    one member did); reads come from the first member that serves
//    (usable and not stale), so a replace never reads the new disk before
//    the resilver filled it.
//
// Threading contract: Submit, Read, Write, Flush, state(), counters() and
// the admin calls are safe from many threads at once (concurrent writes to
// one block leave one of them, per sector). The tree's shape changes only
// through AddTopLevel, ReplaceTopLevel and ReplaceChild, from one thread at
// a time (the pool's sync thread): a reader in the middle of an I/O sees
// the old shape or the new, and vdevs taken out stay alive (the caller
// keeps them). Submit/Read/Write/Flush block on the IoEngine, so they must
// not be called from an IoEngine thread (REQUIRES, as SubmitAndWait).
// Locks: each top-level vdev's admin_mu_ serializes the check-and-set of
// Offline() below it; I/O takes no vdev lock (states, stale flags,
// counters, ids and parents are atomics).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zfs/util/mutex.h"
#include "zfs/util/status.h"
#include "zfs/vdev/block_device.h"
#include "zfs/vdev/block_io.h"
#include "zfs/vdev/io_engine.h"
#include "zfs/vdev/vdev_io_stats.h"

namespace uzfs {

// Leaf geometry (the same numbers as zfs/spa/label.h, which sits above this
// layer; tests/vdev/vdev_test.cc checks they agree): allocatable space starts
// after the two front labels and the boot reserve and ends before the two
// back labels; the device size is first rounded down to whole labels.
inline constexpr uint64_t kLeafLabelSize = 256 * 1024;
inline constexpr uint64_t kLeafFrontReserve = 4ull << 20;
inline constexpr uint64_t kLeafBackReserve = 2 * kLeafLabelSize;
// A leaf's allocatable bytes for a device of device_size bytes.
constexpr uint64_t LeafAsize(uint64_t device_size) {
  const uint64_t whole = device_size / kLeafLabelSize * kLeafLabelSize;
  return whole > kLeafFrontReserve + kLeafBackReserve
             ? whole - kLeafFrontReserve - kLeafBackReserve
             : 0;
}

class Vdev;

// One discard of a leaf's device range (Vdev::TrimRanges): device byte
// offsets, whole sectors.
struct LeafTrim {
  Vdev* leaf = nullptr;
  uint64_t offset = 0;
  uint64_t len = 0;
};

// kHole: the place of a removed top-level (log) vdev, kept so the ids of
// the ones after it never change (ZFS's "hole" vdev, pool version >= 19).
// kReplacing / kSpare: a replace or a hot spare in progress (see above).
enum class VdevKind : uint8_t { kRoot, kMirror, kRaidz, kLeaf, kHole, kReplacing, kSpare };
// "root", "mirror", "raidz", "leaf", "hole", "replacing", "spare"
std::string_view VdevKindName(VdevKind k);

enum class VdevState : uint8_t { kOnline, kDegraded, kFaulted, kOffline, kRemoved, kUnavail };
// "ONLINE", "DEGRADED", "FAULTED", "OFFLINE", "REMOVED", "UNAVAIL".
std::string_view VdevStateName(VdevState s);
// ONLINE or DEGRADED: the vdev can serve I/O.
constexpr bool VdevStateUsable(VdevState s) {
  return s == VdevState::kOnline || s == VdevState::kDegraded;
}

// Mirror reads start on side (offset >> kMirrorSpreadShift) mod N.
inline constexpr uint32_t kMirrorSpreadShift = 20;

struct ChildIo;  // vdev_impl.h
// What a vdev's StartBatch hands its FinishBatch (each kind its own).
struct VdevBatchPlan;

class Vdev {
 public:
  struct Counters {
    uint64_t read_errors = 0;
    uint64_t write_errors = 0;
    uint64_t checksum_errors = 0;
    uint64_t repaired_bytes = 0;
    bool operator==(const Counters&) const = default;
  };

  virtual ~Vdev();
  Vdev(const Vdev&) = delete;
  Vdev& operator=(const Vdev&) = delete;

  VdevKind kind() const { return kind_; }
  uint64_t guid() const { return guid_; }
  // Index in the parent (0 for the root) and the parent: they change when a
  // replace, attach or detach moves the vdev while I/O runs (atomics).
  uint32_t id() const { return id_.load(std::memory_order_acquire); }
  Vdev* parent() const { return parent_.load(std::memory_order_acquire); }
  // "raidz2-0", "mirror-1", "root"; a leaf: its device's path.
  virtual std::string name() const;
  uint32_t ashift() const { return ashift_; }

  // Allocatable bytes. Leaf: device size rounded down to 256 KiB (a label)
  // minus 4 MiB (front labels + boot reserve) minus 512 KiB (back labels), 0
  // if that is negative. Mirror: the smallest side. Raidz: smallest child *
  // children. Root: the sum of the top-level vdevs. (Checked against
  // zfs-fuse's `zdb -l` asize in tests/vdev/raidz_compat_test.cc.)
  virtual uint64_t asize() const = 0;
  // Bytes a block of psize bytes occupies: raidz::RaidzAsize for raidz,
  // psize rounded up to 1 << ashift otherwise.
  virtual uint64_t AllocatedSize(uint64_t psize) const;

  // The one entry point for block I/O: every request of the batch settled
  // in place (block_io.h), each exactly as it would be alone (same bytes,
  // errors, counters and repairs). On the root a request names its
  // top-level vdev by `vdev` (none there: a read is Corruption, a write
  // InvalidArgument); below the root every request is this vdev's own and
  // `vdev` is not looked at. The leaf I/O of every request is issued
  // together and waited for once: several top-level vdevs work at the same
  // time, a mirror writes every block to every side at once, writes that
  // blocks allocated back to back put next to each other on a leaf (raidz
  // columns, mirror copies) go as one write (VdevAggregationLimit), and a
  // raidz or leaf reads the healthy path of every block (data columns; a
  // raidz scrub: every column) in the same batch, reads next to each other
  // on a leaf merged (kReadGapLimit); a read that needs more (a failed or
  // wrong column, a mirror read) then goes on as Read would, after the
  // batch. A batch of one read is that Read. REQUIRES: not on an IoEngine
  // thread.
  void Submit(std::span<BlockIo> ios);
  // Reads the block of buf.size() (psize) bytes at `offset` into buf; see the
  // header comment for redundancy, repair and errors. `out` (optional) says
  // what it took. A leaf's Read is a batch of one; a mirror's and a raidz's
  // is their whole escalating read, which Submit uses for the blocks its
  // batch did not settle. REQUIRES: not on an IoEngine thread.
  virtual Status Read(uint64_t offset, std::span<uint8_t> buf, const BlockVerifier& verify,
                      ReadOutcome* out = nullptr, ReadMode mode = ReadMode::kNormal) = 0;
  // A batch of one write. OK when the block is readable afterwards (mirror:
  // a side took it; raidz: at most nparity columns failed).
  Status Write(uint64_t offset, std::span<const uint8_t> buf);
  // A batch of one durable write (BlockOp::kWriteDurable): the block is
  // durable when it returns, as Write then Flush would make it, but only
  // this block is promised durable. A mirror or raidz writes each side or
  // column durable (IoOp::kWriteDurable: one RWF_DSYNC write per child) in
  // parallel, so only the children the block touches are synced, once
  // each; a leaf writes, then flushes (measured faster than an O_DSYNC
  // write, vdev_leaf.cc). For the intent log's lone log blocks. Errors and
  // OK as Write's.
  Status WriteDurable(uint64_t offset, std::span<const uint8_t> buf);
  // Flushes every usable leaf below, in parallel. OK when the vdev's data is
  // durable (mirror: one side flushed; raidz: at most nparity failed; root:
  // every top-level vdev).
  Status Flush();

  virtual VdevState state() const = 0;
  bool usable() const { return VdevStateUsable(state()); }
  // Usable and not stale: can serve reads of any block (interior: enough
  // of its children can).
  virtual bool serves() const { return usable() && !stale(); }
  // Leaf only: a stale leaf takes writes but serves reads only when
  // nothing else can (see the header comment). Interior: none of its own.
  bool stale() const { return stale_.load(std::memory_order_acquire); }
  void SetStale(bool stale) { stale_.store(stale, std::memory_order_release); }
  // Leaf: a write to it failed since the last TakeMissedWrite (it lacks a
  // block the others have: the pool makes it stale and resilvers it).
  bool TakeMissedWrite() { return missed_write_.exchange(false, std::memory_order_acq_rel); }
  void NoteMissedWrite() { missed_write_.store(true, std::memory_order_release); }
  bool is_group() const { return kind_ == VdevKind::kReplacing || kind_ == VdevKind::kSpare; }
  // A read-only tree (a pool imported with readonly=on, or one still in use
  // elsewhere) never writes: Write is refused and reads do not repair.
  // Applies to this vdev and everything below it.
  void SetReadOnly(bool read_only);
  bool read_only() const { return read_only_.load(std::memory_order_acquire); }
  std::span<Vdev* const> children() const {
    return {child_ptrs_.data(), nchildren_.load(std::memory_order_acquire)};
  }
  Vdev* child(uint32_t i) const {
    return i < nchildren_.load(std::memory_order_acquire) ? child_ptrs_[i] : nullptr;
  }
  bool is_hole() const { return kind_ == VdevKind::kHole; }
  // A top-level vdev of the log class (the pool marks it when it learns
  // its config). A log that cannot be used leaves the root DEGRADED, not
  // UNAVAIL: the intent log falls back to the main pool.
  void SetLog(bool log) { log_.store(log, std::memory_order_release); }
  bool is_log() const { return log_.load(std::memory_order_acquire); }

  // Root only (InvalidArgument otherwise) — `zpool add` / `zpool remove`
  // while I/O runs: children()/child() of the root may be read by any
  // thread meanwhile. A new top-level vdev gets id children().size(); room
  // for kMaxTopLevel in all (the pointer array never moves). Replacing
  // puts `by` (a hole) at `id` and hands back the old vdev, which the
  // caller must keep alive until no I/O can still reach it (the pool keeps
  // it until close). REQUIRES: one caller at a time (the pool's sync
  // thread), and no block pointer names the replaced vdev any more.
  static constexpr size_t kMaxTopLevel = 256;
  Status AddTopLevel(std::unique_ptr<Vdev> top);
  Result<std::unique_ptr<Vdev>> ReplaceTopLevel(uint32_t id, std::unique_ptr<Vdev> by);
  // Any vdev but a leaf — `zpool replace` / `attach` / `detach` while I/O
  // runs: puts `by` in child slot `id` (a pointer store, as for
  // ReplaceTopLevel) and hands back what was there; the caller keeps it
  // alive until close. ReleaseChild hands over ownership of child `id`
  // (which must then be placed elsewhere) while the slot still points at
  // it for readers of this (retired) vdev. REQUIRES: one caller at a time
  // (the pool's sync thread).
  Result<std::unique_ptr<Vdev>> ReplaceChild(uint32_t id, std::unique_ptr<Vdev> by);
  std::unique_ptr<Vdev> ReleaseChild(uint32_t id);
  // Closes the top-level vdevs from id `n` on (import: an add that never
  // landed). REQUIRES: no other thread uses the tree yet.
  Status DropTopLevelsFrom(uint32_t n);
  // Every leaf below (this vdev itself if it is one), in tree order.
  void CollectLeaves(std::vector<Vdev*>* out);
  // The leaves this vdev still owns: a child given away by ReleaseChild is
  // not walked, though children() still names it.
  void CollectOwnedLeaves(std::vector<Vdev*>* out);

  // Trim (`zpool trim`, vdev_trim.cc): appends the device ranges of the
  // usable leaves below that hold nothing but bytes of [offset,
  // offset+size) of this vdev's allocatable space (sector aligned): on a
  // leaf, a mirror side, a replacing or spare member the range itself
  // (after the leaf's front reserve); on a raidz child the sectors of the
  // range that lie on that child (raidz stripes sector by sector: byte b
  // of the raidz vdev is on child (b >> ashift) % n). A range the raidz
  // vdev calls free therefore holds no sector of any block, data or
  // parity. Nothing for a root or a hole.
  void TrimRanges(uint64_t offset, uint64_t size, std::vector<LeafTrim>* out);

  // Leaf: its device's counters plus repaired_bytes; interior: its own.
  Counters counters() const;
  // The I/O this vdev did since it was opened (`zpool iostat -v`): a leaf
  // counts its device reads and writes (repairs and parity columns
  // included, flushes not), a mirror or raidz vdev the block reads and
  // writes asked of it. Lock-free.
  struct IoCounters {
    uint64_t read_ops = 0, write_ops = 0, read_bytes = 0, write_bytes = 0;
  };
  IoCounters io_counters() const;
  void CountIo(bool write, uint64_t bytes) {
    (write ? io_write_ops_ : io_read_ops_).fetch_add(1, std::memory_order_relaxed);
    (write ? io_write_bytes_ : io_read_bytes_).fetch_add(bytes, std::memory_order_relaxed);
  }
  // `zpool iostat -l -w -r -q` (vdev_io_stats.h): a leaf's own
  // histograms and queue depths; an interior vdev's are its leaves' summed.
  IoStatsSnapshot io_stats() const;
  // Leaf: where RunChildIos counts the leaf's requests.
  VdevIoStats& leaf_io_stats() { return leaf_io_stats_; }
  // `zpool clear`: zeroes the counters of this vdev and everything below.
  void ResetCounters();

  // Leaf only (InvalidArgument otherwise):
  // `zpool offline`: Busy "no valid replicas" when the pool could not
  // serve every block without it (its parent, or failing that the parent's
  // parent, would not survive the loss); OK if already offline.
  // With `fault`, FAULTED instead (`zpool offline -f`), same check.
  Status Offline(bool fault = false);
  // Whether the pool could still serve every block without this vdev (its
  // parent, or failing that the parent's parent, ... survives the loss).
  bool CanLose() const;
  // `zpool online` / reopen: probes the device; IoError (state UNAVAIL) if
  // the probe fails, else ONLINE.
  Status Online();
  // The device vanished (hot unplug): REMOVED until Online().
  void MarkRemoved();
  // The device cannot be used (missing at import, changed under the pool:
  // shrunk, deleted, its labels no longer ours): UNAVAIL until Online().
  void MarkUnavail();
  // Too many I/O errors (the pool decides): FAULTED, no more I/O, until
  // Online() (`zpool clear` / `zpool online`).
  void MarkFaulted();
  // The leaf's device (nullptr for interior vdevs).
  virtual BlockDevice* device() const { return nullptr; }

 protected:
  Vdev(VdevKind kind, uint64_t guid, uint32_t ashift);
  // Takes ownership of children, sets their id and parent.
  void AdoptChildren(std::vector<std::unique_ptr<Vdev>> children);
  void set_ashift(uint32_t a) { ashift_ = a; }

  // Whether this (interior) vdev would still be usable without `child`.
  virtual bool SurvivesLosing(const Vdev* child) const;

  // Flush plumbing: each vdev appends the leaves' flush requests, then judges
  // the outcome, consuming the same entries in the same order.
  friend class RootVdev;
  friend class MirrorVdev;
  friend class RaidzVdev;
  virtual void AppendFlushes(std::vector<ChildIo>* ios);
  virtual Status JudgeFlush(std::span<const ChildIo> ios, size_t* pos);

  // A batch in two halves, so Submit can issue several vdevs' leaf I/O
  // together: StartBatch settles the requests it can at once (bad range,
  // read-only) and appends the leaf I/O of the others to *ios, returning
  // what FinishBatch needs; after the I/O ran (RunChildIos), FinishBatch
  // settles every other request from its entries of `ios` (the same
  // vector), reading alone (Read) the ones the batch could not finish.
  virtual std::unique_ptr<VdevBatchPlan> StartBatch(std::span<BlockIo* const> reqs,
                                                    std::vector<ChildIo>* ios) = 0;
  virtual void FinishBatch(VdevBatchPlan* plan, std::span<BlockIo* const> reqs,
                           std::span<const ChildIo> ios) = 0;
  // Start, RunChildIos, Finish over the batches of several vdevs at once.
  struct BatchPart {
    Vdev* vdev = nullptr;
    std::vector<BlockIo*> reqs;
  };
  static void RunBatch(std::span<BatchPart> parts);
  // Submit of one request of this vdev's own.
  void RunOne(BlockIo* io);

  // Interior vdevs' own counters.
  std::atomic<bool> read_only_{false};
  std::atomic<uint64_t> read_errors_{0};
  std::atomic<uint64_t> write_errors_{0};
  std::atomic<uint64_t> checksum_errors_{0};
  std::atomic<uint64_t> repaired_bytes_{0};
  std::atomic<uint64_t> io_read_ops_{0}, io_write_ops_{0}, io_read_bytes_{0}, io_write_bytes_{0};
  VdevIoStats leaf_io_stats_;  // leaves only
  // Leaf state (interior states are derived).
  std::atomic<VdevState> leaf_state_{VdevState::kOnline};
  std::atomic<bool> stale_{false};
  std::atomic<bool> log_{false};
  std::atomic<bool> missed_write_{false};
  Mutex admin_mu_;  // a top-level vdev's: serializes Offline() checks below it

 private:
  const VdevKind kind_;
  const uint64_t guid_;
  uint32_t ashift_;
  std::atomic<uint32_t> id_{0};
  std::atomic<Vdev*> parent_{nullptr};
  std::vector<std::unique_ptr<Vdev>> children_;
  std::vector<Vdev*> child_ptrs_;
  std::atomic<size_t> nchildren_{0};  // published size of child_ptrs_
};

// Builders. Leaves wrap a device; interior vdevs own their children; all I/O
// goes through the leaves' IoEngine (shared; it must outlive the tree).
// ashift 0 means: leaf — the device's AshiftHint(); interior — the largest
// child ashift. An explicit ashift (9..16) is what a pool's config says.

std::unique_ptr<Vdev> MakeLeafVdev(std::unique_ptr<BlockDevice> dev, IoEngine& io, uint64_t guid,
                                   uint32_t ashift = 0);
// InvalidArgument: fewer than 2 sides, a side that is not a leaf (or a
// replacing / spare vdev), bad ashift.
Result<std::unique_ptr<Vdev>> MakeMirrorVdev(std::vector<std::unique_ptr<Vdev>> sides,
                                             uint64_t guid, uint32_t ashift = 0);
// InvalidArgument: nparity not 1..3, children <= nparity or > 255, a child
// that is not a leaf (or a replacing / spare vdev), bad ashift.
Result<std::unique_ptr<Vdev>> MakeRaidzVdev(std::vector<std::unique_ptr<Vdev>> children,
                                            uint32_t nparity, uint64_t guid, uint32_t ashift = 0);
// A replacing or spare vdev (kind kReplacing / kSpare): the original member
// first. InvalidArgument: fewer than 2 members, one that is not a leaf.
Result<std::unique_ptr<Vdev>> MakeGroupVdev(VdevKind kind, std::vector<std::unique_ptr<Vdev>> members,
                                            uint64_t guid, uint32_t ashift = 0);
// InvalidArgument: no top-level vdevs, or a root among them.
Result<std::unique_ptr<Vdev>> MakeRootVdev(std::vector<std::unique_ptr<Vdev>> top_levels,
                                           uint64_t guid = 0);

// The hole a removed top-level vdev leaves: no device, no space, ONLINE so
// it never degrades the pool; I/O to it is refused.
std::unique_ptr<Vdev> MakeHoleVdev();

// Aggregation (zfs/vdev/vdev_impl.h, RunChildIos): writes of one batch
// that are adjacent on a leaf are issued as one gathered write of at most
// this many bytes (OpenZFS's zfs_vdev_aggregation_limit; 0 = never merge).
// Process-wide; the daemon sets it from its `vdev_aggregation_limit`
// tunable (environment UZFS_VDEV_AGGREGATION_LIMIT, uzfsd -o, zpool tunable).
// Reads of one batch are merged the same way, and also across gaps of up
// to kReadGapLimit bytes (read and dropped: one larger read costs a disk
// less than two, as OpenZFS's zfs_vdev_read_gap_limit).
inline constexpr uint64_t kReadGapLimit = 32 * 1024;
inline constexpr uint64_t kDefaultAggregationLimit = 1ull << 20;
inline constexpr uint64_t kMaxAggregationLimit = 16ull << 20;
uint64_t VdevAggregationLimit();
void SetVdevAggregationLimit(uint64_t bytes);  // clamped to kMaxAggregationLimit

}  // namespace uzfs
