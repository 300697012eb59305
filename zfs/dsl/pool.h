// Pool: an imported, writable pool — the vdev tree, the allocator, the ZIO
// pipeline, the MOS and the DSL datasets on top of it — and its lifecycle:
// create, import, sync, export, destroy. (ZFS splits this between spa.c
// and dsl_pool.c; here the spa layer keeps the pieces that need no objects
// — labels, uberblocks, metaslabs, the txg engine — and this class, which
// must read and write MOS objects, lives in the DSL, above the DMU.)
//
// On-disk layout it writes (pool versions 11..28 and 5000; checked by zfs-fuse,
// which imports, scrubs and `zdb -bcc`s our pools in tests/dsl):
//   MOS object 1, the object directory (micro ZAP): root_dataset, config,
//   sync_bplist, deflate (v>=3), history; the DSL: the root directory
//   (props ZAP, child map holding $MOS, $ORIGIN and the child datasets),
//   $MOS (accounts the MOS's own space), $ORIGIN with its head dataset and
//   the snapshot $ORIGIN@$ORIGIN (txg 1, empty) of which every head dataset
//   is a clone (pool version >= 11); per top-level vdev an object array of
//   its metaslabs' space map objects; the packed config; the history ring.
//   Everything a new pool holds is written in txg 4, ZFS's first txg.
//
// Sync of txg T (SyncTxg, called by the txg engine's sync thread):
//   1. queued sync tasks (dataset create/destroy/rename/props) change the
//      MOS in T, 2. every dataset with changes in T is synced (its objset
//      copy-on-write) and its new root, space born and killed go into its
//      DSL records, 3. the config and history objects if changed, 4. sync
//      passes: the allocator appends txg T's allocations and frees to the
//      space maps (MOS objects), the MOS is synced, and this repeats until
//      a pass changes nothing (from pass 2 the MOS rewrites its own blocks
//      of T in place, so it converges), 5. every vdev is flushed, labels get
//      the new config if it changed, the uberblock goes to every leaf's four
//      rings and is flushed, 6. frees of T become reusable after the defer
//      period. A crash anywhere before the uberblock lands leaves txg T-1.
//
// Threading: one sync at a time; DSL operations are queued to the sync
// thread; reads of pool state take mu_.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "zfs/dmu/objset_writer.h"
#include "zfs/dsl/error_log.h"
#include "zfs/dsl/pool_config.h"
#include "zfs/dsl/prop_table.h"
#include "zfs/dsl_format/dsl_phys.h"
#include "zfs/dsl_format/scan_phys.h"
#include "zfs/spa/allocator.h"
#include "zfs/spa/dtl_map.h"
#include "zfs/spa/txg.h"
#include "zfs/spa/uberblock.h"
#include "zfs/spa/vdev_config.h"
#include "zfs/util/mutex.h"
#include "zfs/util/nvlist/nvlist.h"
#include "zfs/util/status.h"
#include "zfs/util/thread_pool.h"
#include "zfs/util/txg_number.h"
#include "zfs/vdev/fault_device.h"
#include "zfs/vdev/io_engine.h"
#include "zfs/vdev/vdev.h"
#include "zfs/zio/settled_block_reader.h"
#include "zfs/zio/zio.h"

namespace uzfs {

class Arc;
class DmuSpaceMapProvider;
class FileDevice;
class L2Arc;
class SpaAllocator;
class VdevTreeTarget;
class ZilWriter;
struct DatasetZil;  // pool_zil.cc

inline constexpr uint64_t kInitialTxg = 4;       // ZFS's TXG_INITIAL
inline constexpr uint64_t kOriginSnapTxg = 1;    // $ORIGIN@$ORIGIN's txg
inline constexpr uint64_t kVersionNextClones = 17;  // a snapshot's next_clones map
inline constexpr uint64_t kVersionDeadlists = 26;  // bpobj deadlists, $FREE, free_bpobj, dd_clones
inline constexpr uint64_t kFeatureVersion = 5000;  // feature flags
inline constexpr uint64_t kMaxRecordSize = 1 << 20;   // recordsize limit with large_blocks (zfs_max_recordsize)
// Per-dataset feature: the dataset's intent log may hold TX_SETSAXATTR.
inline constexpr const char* kZilSaXattrGuid = "org.openzfs:zilsaxattr";
// Per-dataset feature: the dataset has (or was set to write) zstd blocks.
inline constexpr const char* kZstdCompressGuid = "org.freebsd:zstd_compress";

// The guid of a feature uzfs knows, by its short name ("zilsaxattr") or
// guid; nullopt for any other.
std::optional<std::string> KnownFeatureGuid(const std::string& name);

// Every feature uzfs knows: its short name and its description, in the
// order uzfs enables them (`zpool upgrade -v`).
std::vector<std::pair<std::string, std::string>> KnownFeatureDescriptions();

// A feature of a feature-flag pool as `zpool get feature@NAME` shows it.
struct PoolFeatureState {
  std::string guid;
  std::string name;       // the short name (after the ':'); the guid for unknown ones
  bool supported = false;  // known to uzfs
  bool enabled = false;    // in features_for_read/_write
  uint64_t refcount = 0;   // > 0: active
};

// The create-time ZPL properties of a new file system, by the names its
// master node stores them under ("normalization", "utf8only",
// "casesensitivity"): given with -o/-O, else inherited from the parent
// file system's master node; absent ones take the ZPL's defaults.
using ZplCreateProps = std::map<std::string, uint64_t>;

// Fills the objset of a new filesystem dataset (the ZPL's empty file
// system): registered by the layer above (zfs/zpl), called in txg `txg`.
using FilesystemInit =
    std::function<Status(ObjsetWriter& os, uint64_t pool_version, const ZplCreateProps& props, Txg txg)>;

struct PoolCreateOptions {
  uint64_t version = 23;          // 11..28, or 5000 (feature flags: every feature uzfs knows)
  // Version 5000: features left disabled (guids; zpool create -o
  // feature@NAME=disabled). Only those uzfs can do without:
  // org.open-zfs:large_blocks, org.openzfs:zilsaxattr,
  // org.freebsd:zstd_compress and com.delphix:empty_bpobj.
  std::set<std::string> disabled_features;
  uint32_t ashift = 0;            // 0: the largest device hint (9 for files)
  std::vector<std::pair<std::string, std::string>> fs_props;  // -O name=value
  std::string hostname;           // empty: gethostname()
  // `zpool create -t NAME`: the pool goes by NAME until it is exported,
  // while its config and labels say the name Create was given.
  std::string temporary_name;
  std::optional<uint64_t> hostid; // unset: gethostid()
  bool force = false;             // -f: take devices that belong to another pool
  std::string history;            // the command line recorded in the history
  FilesystemInit fs_init;         // may be empty (datasets without a ZPL)
  // Every leaf's device is wrapped in a FaultDevice (no write-cache model)
  // that LeafFaults() hands out: zinject. Costs nothing while no fault is set.
  bool fault_injectable = false;
  IoEngineOptions io;
  TxgOptions txg;
  // The daemon's L2ARC: the pool's cache devices are handed to it (and
  // taken back at export); null: they are opened and labeled, not used.
  L2Arc* l2arc = nullptr;
  // The process's ARC (shared by every pool; must outlive the pool). Null:
  // datasets read straight from the devices, uncached.
  Arc* arc = nullptr;
};

struct PoolImportOptions {
  std::optional<uint64_t> max_txg;  // -T: ignore newer uberblocks
  bool force = false;               // -f: import a pool active on another host
  bool readonly = false;            // -o readonly=on
  bool destroyed = false;           // -D: only pools marked destroyed
  std::string history;              // recorded when not read-only
  FilesystemInit fs_init;
  bool fault_injectable = false;  // as PoolCreateOptions::fault_injectable
  IoEngineOptions io;
  TxgOptions txg;
  L2Arc* l2arc = nullptr;         // as PoolCreateOptions::l2arc
  Arc* arc = nullptr;             // as PoolCreateOptions::arc
  // `zpool import POOL NEWNAME`: the pool is renamed in its config and
  // labels at the import's first sync (not with readonly).
  std::string new_name;
  // `zpool import -t POOL NEWNAME`: NEWNAME is only the name it goes by
  // until it is exported; its config and labels keep POOL's.
  bool temporary_name = false;
  // The scan's pace from its first slice (Pool::SetScanSlice and
  // SetScanWindow; zero: the defaults). Tests slow down a scan that an
  // import resumes so that a kill finds it part way.
  std::chrono::milliseconds scan_slice{0};
  size_t scan_window_blocks = 0;
  // `zpool import -m`: log devices that are gone do not stop the import.
  // The pool comes up DEGRADED with them UNAVAIL in its config, and every
  // dataset's intent log is dropped: the pool is as its last txg left it.
  bool missing_log = false;
  // Filled when the import stops because log devices are missing (without
  // missing_log): the missing vdevs, one row each, as zpool import lists
  // them ("\t    NAME [log]", their leaves indented below).
  std::vector<std::string>* missing_log_rows = nullptr;
};

// One cache (l2cache) device as `zpool status` / `zpool iostat -v` show it.
struct CacheDeviceInfo {
  std::string path;
  uint64_t guid = 0;
  std::string state;   // ONLINE, UNAVAIL (cannot be opened), FAULTED (not ours / failed)
  uint64_t alloc = 0;  // bytes the L2ARC holds on it
  uint64_t size = 0;   // its ring's capacity (0 when not in use)
  DeviceErrorCounts errors;
};

// One dataset as `zfs list` needs it.
// Visits every block of the object set under `root` (data, indirect and
// dnode blocks, the objset block; not its intent log) born after
// min_birth, children before their parent; FreeObjsetTree frees them in txg.
Status VisitObjsetTree(Zio& zio, const BlockPtr& root, uint64_t min_birth,
                       const std::function<Status(const BlockPtr&)>& visit);
Status FreeObjsetTree(Zio& zio, const BlockPtr& root, uint64_t min_birth, Txg txg);

// "fs@snap" -> {"fs", "snap"}, with zfs snapshot's checks of the name
// (InvalidArgument, one line, as "cannot ACTION 'NAME': ...").
Result<std::pair<std::string, std::string>> SplitSnapshotName(const std::string& name,
                                                              const std::string& action = "snapshot");

struct DatasetInfo {
  std::string name;  // "fs" or, for a snapshot, "fs@snap"
  bool snapshot = false;
  uint64_t dir_obj = 0, ds_obj = 0;
  DslDirPhys dir;
  DslDatasetPhys ds;
  // What `written` needs: the bytes on its deadlist (what it no longer
  // references of its previous snapshot's) and that snapshot's referenced
  // bytes: written = referenced - prev_referenced + deadlist_bytes.
  uint64_t deadlist_bytes = 0;
  uint64_t prev_referenced = 0;
  std::string origin;               // a clone's origin snapshot ("" for none)
  std::vector<std::string> clones;  // a snapshot's clones, sorted
  uint64_t userrefs = 0;            // a snapshot's user holds
  // ListDatasets(..., with_partial): a file system a resumable receive
  // left part way (inconsistent, never mounted), and one with such a
  // receive saved (Pool::SavedReceiveOf has it).
  bool partial = false;
  bool saved_receive = false;
};

// The unsorted scan (OpenZFS's zfs_scan_legacy): every data block is
// scrubbed on its own, in the order the walk finds it, many at a time, as
// before the sorted scan; for comparison. Process-wide; the daemon sets it
// from its `scan_legacy` tunable. Takes effect at a scan's next window.
void SetScanLegacy(bool legacy);
bool ScanLegacy();

// The sorted scan's window (pool_scan.cc): the walk of a window gathers
// the data blocks it finds (metadata is scrubbed as the walk reads it);
// then they are issued sorted by offset, in batches whose reads merge. The
// scan record's bookmark moves past a window only once it is all issued.
struct ScanQueuedBlock {
  BlockPtr bp;
  DataErrorBookmark where;
};
struct ScanQueue {
  std::vector<ScanQueuedBlock> blocks;
  ScanBookmark walk;       // where the walk goes on (past this window)
  bool walk_done = false;  // the walk reached the end of the pool
  bool issuing = false;    // sorted; blocks[next, end) are still to issue
  size_t next = 0;
  unsigned gather_slices = 0;  // slices the walk of this window took
  bool legacy = false;         // ScanLegacy(): walk order, one block per batch
  bool resilver = false;       // reads fill the stale leaves only (ReadMode::kResilver)
  size_t max_blocks = 0;       // the window ends with this many blocks (set each slice)
  uint64_t generation = 0;     // the scan_generation_ it was gathered in
};

class Pool final : private TxgSyncer {
 public:
  // Creates and opens a pool. Errors: InvalidArgument (bad layout or
  // version, a device in use by another pool without force, a device
  // smaller than 64 MiB, a bad property), Busy (a device open elsewhere),
  // IoError. Nothing is written to any device until every check passed.
  static Result<std::unique_ptr<Pool>> Create(const std::string& name, const PoolLayout& layout,
                                              const PoolCreateOptions& opts);
  // Imports the pool named `name_or_guid` from `devices` (ScanDeviceDir).
  // Errors: those of AssemblePool, Corruption "no valid uberblock",
  // NotSupported (unknown version or feature), Busy ("pool may be in use
  // from another system" unless force).
  static Result<std::unique_ptr<Pool>> Import(std::span<const FoundDevice> devices,
                                              const std::string& name_or_guid,
                                              const PoolImportOptions& opts);
  // Closes without exporting (the labels still say ACTIVE, as after a crash
  // but with everything synced).
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  const std::string& name() const { return ident_.name; }
  uint64_t guid() const { return ident_.pool_guid; }
  uint64_t version() const { return ident_.version; }
  bool readonly() const { return readonly_; }
  Vdev& root_vdev() { return *root_; }
  // The fault wrapper of the leaf whose device path or guid (decimal) is
  // `path_or_guid`; nullptr when there is no such leaf or the pool was not
  // opened fault_injectable. The FaultDevice lives as long as the pool.
  FaultDevice* LeafFaults(const std::string& path_or_guid);

  // --- cache devices (pool_l2.cc) ---
  // Kept open while the pool is imported and handed to the L2ARC; a device
  // that is missing or not this pool's is shown UNAVAIL / FAULTED and never
  // fails the import.
  std::vector<CacheDeviceInfo> CacheDevices() const UZFS_EXCLUDES(cache_mu_);
  // `zpool add POOL cache DEV`: labels the device as this pool's l2cache,
  // adds it to the config (written at the next sync) and to the L2ARC.
  // InvalidArgument when it is too small, already in the pool, or (without
  // force) part of another pool.
  Status AttachCacheDevice(const std::string& path, bool force = false)
      UZFS_EXCLUDES(mu_, sync_mu_, cache_mu_);
  // `zpool remove POOL DEV` for a cache device (path or guid): out of the
  // L2ARC, the config and its labels cleared. NotFound when not one.
  Status DetachCacheDevice(const std::string& path_or_guid) UZFS_EXCLUDES(mu_, sync_mu_, cache_mu_);
  Allocator& allocator() { return *alloc_; }
  Zio& zio() { return *zio_; }
  // How datasets' committed blocks are read: the ARC's reader (null for a
  // pool opened without an ARC). Lives as long as the pool.
  BlockReader* block_reader() { return block_reader_.get(); }
  const Uberblock& uberblock() const UZFS_EXCLUDES(mu_);
  // The txg of the uberblock Import chose (before its own first sync).
  uint64_t import_txg() const { return import_txg_; }

  // --- transactions ---
  // A hold on the open txg for a change of about `bytes` (the write
  // throttle may delay the caller): write into tx.txg(), then Commit. The
  // txg syncs after every hold on it is released.
  Result<Tx> Begin(uint64_t bytes) UZFS_EXCLUDES(mu_);
  // The txg new transactions join.
  Txg open_txg() const UZFS_EXCLUDES(mu_);
  // Everything begun so far (and the queued DSL operations) on disk.
  Status Sync() UZFS_EXCLUDES(mu_, sync_mu_);
  TxgStats txg_stats() const;

  // --- lifecycle ---
  // Syncs, then marks every label EXPORTED and closes the devices.
  Status Export() UZFS_EXCLUDES(mu_, sync_mu_);
  // Marks every label DESTROYED (zpool import -D can still find it).
  Status Destroy() UZFS_EXCLUDES(mu_, sync_mu_);

  // --- datasets ---
  Status CreateDataset(const std::string& name,
                       const std::vector<std::pair<std::string, std::string>>& props)
      UZFS_EXCLUDES(mu_, sync_mu_);
  // Every '/'-separated component of `name` is a valid dataset name
  // component (the rule CreateDataset applies to the new one).
  static Status CheckDatasetName(const std::string& name);
  // The checks CreateDataset makes (zfs create -n), changing nothing: the
  // error CreateDataset would return, or Ok.
  Status CheckNewDataset(const std::string& name,
                         const std::vector<std::pair<std::string, std::string>>& props)
      UZFS_EXCLUDES(mu_);
  Status DestroyDataset(const std::string& name) UZFS_EXCLUDES(mu_, sync_mu_);
  // Destroys the snapshots "fs@snap" named, all in one txg or none (every
  // one checked first: NotFound "cannot open 'NAME': dataset does not
  // exist", Exists for one with clones (naming them, as zfs destroy
  // does), Busy for one with user holds). Frees what only they held
  // (pool_snapshot_destroy.cc).
  Status DestroySnapshots(const std::vector<std::string>& names) UZFS_EXCLUDES(mu_, sync_mu_);
  // zfs destroy -d: each snapshot that user holds or clones keep is marked
  // for destroy (defer_destroy=on) and goes when its last hold is released
  // or its last clone destroyed; the others are destroyed now; all in one
  // txg or none. NotSupported "pool must be upgraded" before version 18;
  // otherwise DestroySnapshots's errors for those destroyed now
  // (pool_snapshot_defer.cc).
  // dry_run: the checks alone (zfs destroy -dn).
  Status DeferDestroySnapshots(const std::vector<std::string>& names, bool dry_run = false)
      UZFS_EXCLUDES(mu_, sync_mu_);
  // What destroying those snapshots would free (zfs destroy -nv), with the
  // same checks.
  Result<uint64_t> SnapshotsReclaim(const std::vector<std::string>& names) UZFS_EXCLUDES(mu_);
  // Rolls file system fs back to its newest snapshot `snap` ("fs@snap"):
  // what was written since is freed, the file system's next sync starts
  // from the snapshot's tree (its open writer, with any unsynced change,
  // is dropped: nothing may have fs mounted). Exists "cannot rollback to
  // 'NAME': more recent snapshots or bookmarks exist\nuse '-r' to force
  // deletion of the following snapshots and bookmarks:\n..." when newer
  // snapshots exist; NotFound for no such snapshot; Busy when the file
  // system's intent log has records to replay (pool_rollback.cc).
  Status Rollback(const std::string& snapshot) UZFS_EXCLUDES(mu_, sync_mu_);
  // zfs rollback -k: rolls fs back to its snapshot `snap` ("fs@snap") and
  // keeps what a rollback would discard: the snapshots after it and
  // everything written to fs before the call become file system `keep` (a
  // clone of fs@snap; empty: "fs-rollback-TXG"), while fs keeps its name,
  // properties and children. NotFound for no such snapshot, the errors of
  // zfs create for a bad or taken `keep` (which may not be below fs),
  // NoSpace when a quota above `keep` cannot take the space, Busy as
  // Rollback. Nothing may have fs mounted. The kept file system's name
  // (pool_rollback_keep.cc).
  Result<std::string> RollbackKeep(const std::string& snapshot, const std::string& keep)
      UZFS_EXCLUDES(mu_, sync_mu_);
  // Every check RollbackKeep makes first, changing nothing: the name the
  // kept file system would get.
  Result<std::string> PlanRollbackKeep(const std::string& snapshot, const std::string& keep) UZFS_EXCLUDES(mu_);
  // Takes the snapshots "fs@snap" named, all in one txg or none (every
  // name checked first: InvalidArgument for a bad name, NotFound for no
  // such file system, Exists for a snapshot name taken, NoSpace when a
  // refreservation cannot be charged, Busy when the file system's intent
  // log has records to replay). Each holds everything written to its file
  // system before the call; the file system's intent log is closed and
  // restarts at its next fsync (pool_snapshot.cc).
  // props: user properties every new snapshot gets in the same txg
  // (zfs snapshot -o; checked as SetSnapshotProp checks them).
  Status Snapshot(const std::vector<std::string>& names,
                  const std::vector<std::pair<std::string, std::string>>& props = {}) UZFS_EXCLUDES(mu_, sync_mu_);
  // Snapshot "fs@snap"'s object set, opened for reading (the trees of
  // .zfs/snapshot): never written. While any copy of the pointer lives the
  // snapshot refuses destroy with Busy ("dataset is busy"), as a mounted
  // snapshot does in ZFS. NotFound "cannot open 'NAME': dataset does not
  // exist"; the pointer must not outlive the pool (pool_snapshot_open.cc).
  Result<std::shared_ptr<ObjsetWriter>> OpenSnapshot(const std::string& name) UZFS_EXCLUDES(mu_);
  // The snapshots of file system `fs`, oldest first: the name after the @,
  // the dataset object (it stays across renames and promotions; a later
  // snapshot may reuse a destroyed one's), the creation txg and time
  // (seconds). NotFound when fs does not exist.
  struct SnapshotEntry {
    std::string name;
    uint64_t ds_obj = 0;
    uint64_t creation_txg = 0;
    uint64_t creation_time = 0;
  };
  Result<std::vector<SnapshotEntry>> Snapshots(const std::string& fs) UZFS_EXCLUDES(mu_);
  // Snapshot "fs@snap"'s entry (one lookup); NotFound as OpenSnapshot.
  Result<SnapshotEntry> FindSnapshot(const std::string& name) UZFS_EXCLUDES(mu_);
  // Whoever keeps snapshots open (the .zfs/snapshot trees of a mount)
  // registers a releaser: before snapshots are destroyed it is called,
  // without the pool's lock, with the dataset objects of those open, and
  // lets go of what nothing uses, so only a snapshot really in use (a
  // file open in it) refuses destroy. RemoveSnapshotReleaser waits for a
  // call in progress.
  using SnapshotReleaser = std::function<void(const std::set<uint64_t>& ds_objs)>;
  uint64_t AddSnapshotReleaser(SnapshotReleaser r) UZFS_EXCLUDES(releasers_mu_);
  void RemoveSnapshotReleaser(uint64_t id) UZFS_EXCLUDES(releasers_mu_);
  // Creates file system `target` as a clone of snapshot `origin`
  // ("fs@snap"): it starts as the snapshot's tree and shares its blocks;
  // props as CreateDataset, but not the create-time ZPL ones (a clone has
  // its origin's). NotFound for no such snapshot or parent, Exists for a
  // name taken, InvalidArgument for a bad name or a target in another pool
  // (pool_clone.cc).
  Status Clone(const std::string& origin, const std::string& target,
               const std::vector<std::pair<std::string, std::string>>& props) UZFS_EXCLUDES(mu_, sync_mu_);
  // Receiving a stream (zfs receive; pool_receive.cc). The records go
  // into a dataset nobody else sees, and EndReceive makes them visible in
  // one txg, as OpenZFS does:
  //   full stream into a new file system FS: FS itself, created empty (no
  //     ZPL objects: the stream brings them) and marked inconsistent, which
  //     keeps it out of ListDatasets (and so of the mounts; a kept one,
  //     below, is listed when asked for);
  //   incremental from snapshot FROM of FS: "FS/%recv", a clone of FROM
  //     (names with '%' are never listed). At the end FS's head takes the
  //     clone's tree (what FS wrote since FROM is rolled back first, with
  //     force; refused without), and the clone goes;
  //   full stream onto an existing FS with force (it must have no
  //     snapshots and not be a clone): "FS/%recv", a new empty file
  //     system; at the end FS's head takes its tree the same way, and what
  //     FS held is freed with the clone. FS keeps its properties and
  //     children.
  // Either way the end takes snapshot FS@SNAP with the stream's guid and
  // creation time. A crash before the end leaves FS as it was, plus the
  // hidden dataset, which DestroyStaleReceives removes unless the receive
  // is resumable (SavedReceive).
  struct ReceiveTarget {
    std::string fs;              // the file system that receives
    std::string snap;            // the snapshot it gets (the part after '@')
    uint64_t from_guid = 0;      // the incremental source's guid; 0: full
    bool force = false;          // zfs receive -F
    // zfs receive -o: properties of a new file system (full streams).
    std::vector<std::pair<std::string, std::string>> props;
    // A clone stream's origin here ("fs@snap", whose guid is from_guid):
    // FS is made a new clone of it, as a full stream makes a new file
    // system (hidden and inconsistent until the end).
    std::string origin;
    // The stream carries blocks over 128 KiB (its large-blocks feature):
    // the receiving dataset gets feature@large_blocks active, as OpenZFS
    // does.
    bool large_blocks = false;
    // zfs receive -s: a receive that breaks off keeps what arrived
    // (SavedReceive, below) instead of being aborted. The stream's
    // snapshot (guid and sent name) and its features are what the resume
    // token says; the pool needs extensible_dataset.
    bool resumable = false;
    uint64_t to_guid = 0;
    std::string to_name;
    bool embed = false, compressed = false, raw = false;
    // Go on with the receive saved for FS instead of starting one: its
    // saved to_guid and from_guid must be the stream's.
    bool resume = false;
  };
  struct ReceiveState {
    std::string into;   // the dataset the records are written to (Objset(into))
    bool new_fs = false;
    bool overwrite = false;  // a full stream replacing an existing FS's tree
    uint64_t from_obj = 0;  // the incremental source snapshot ($ORIGIN@$ORIGIN to overwrite)
    bool resumable = false;  // kept on a break (ReceiveTarget::resumable)
    // Resuming: how far the saved receive had come (SavedReceive).
    uint64_t resume_object = 0, resume_offset = 0, resume_bytes = 0;
  };
  // A receive kept for resuming (zfs receive -s) that broke off. As
  // OpenZFS records it: entries "com.delphix:resume_*" in the receiving
  // dataset's object (made a ZAP: extensible_dataset), which is FS itself
  // for a full or clone stream (inconsistent: not listed but by zfs list
  // and get, never mounted) or the hidden clone FS/%recv for an
  // incremental one. `object` and `offset` name the last write whose
  // bytes are on disk (the sender starts again there), `bytes` the stream
  // bytes read up to it; both move in the txg that writes those bytes.
  struct SavedReceive {
    std::string fs, into;
    uint64_t from_guid = 0, to_guid = 0;
    std::string to_name;
    uint64_t object = 0, offset = 0, bytes = 0;
    bool large_blocks = false, embed = false, compressed = false, raw = false;
  };
  // Bookmarks (pool_bookmarks.cc; feature bookmarks, version 5000): what
  // an incremental send needs of a snapshot that may be gone.
  struct Bookmark {
    std::string name;  // "fs#name"
    uint64_t guid = 0, creation_txg = 0, creation_time = 0;
  };
  // zfs bookmark SOURCE fs#name: SOURCE is a snapshot or a bookmark of the
  // same file system. NotSupported without the feature; Exists "... bookmark
  // exists"; NotFound for no such source.
  Status CreateBookmark(const std::string& source, const std::string& bookmark) UZFS_EXCLUDES(mu_, sync_mu_);
  // The bookmarks of file system FS, oldest first.
  Result<std::vector<Bookmark>> Bookmarks(const std::string& fs) UZFS_EXCLUDES(mu_);
  // "fs#name"; NotFound "cannot open 'NAME': bookmark does not exist".
  Result<Bookmark> FindBookmark(const std::string& name) UZFS_EXCLUDES(mu_);
  // All in one txg, or none (each checked first).
  Status DestroyBookmarks(const std::vector<std::string>& names) UZFS_EXCLUDES(mu_, sync_mu_);
  // Whether file system FS is one a full receive is still filling (or
  // kept part way): not a whole tree, never mounted.
  Result<bool> BeingReceived(const std::string& fs) UZFS_EXCLUDES(mu_);
  // The receive saved for FS, if any (pool_receive_resume.cc).
  Result<std::optional<SavedReceive>> SavedReceiveOf(const std::string& fs) UZFS_EXCLUDES(mu_);
  // zfs receive -A: destroys it (the hidden clone, or FS itself for a
  // full stream's). NotFound "'FS' does not have any resumable receive
  // state to abort".
  Status DiscardSavedReceive(const std::string& fs) UZFS_EXCLUDES(mu_, sync_mu_);
  // A resumable receive into `into` applied the write of `object` at
  // `offset` in `txg`, its bytes checked, `bytes` of stream read: the
  // saved position moves there in that txg's sync.
  void NoteReceiveProgress(const std::string& into, uint64_t object, uint64_t offset, uint64_t bytes, Txg txg)
      UZFS_EXCLUDES(resume_mu_);
  // Every check, then the hidden dataset, in one txg. Errors, as OpenZFS
  // words them: Exists "destination 'FS' exists" (full stream without
  // force), Exists "destination has snapshots (eg. FS@S)" (full stream,
  // force), Exists "destination 'FS@SNAP' exists", NotFound "destination 'FS' does not exist" (incremental) or
  // its parent missing, NotFound "local origin for clone ... does not
  // exist" / InvalidArgument "most recent snapshot of FS does not match
  // incremental source" when no snapshot of FS has from_guid or it is not
  // the newest (force: the newer ones must be destroyed first), Busy
  // "destination FS has been modified since most recent snapshot" (not
  // force), Busy when another receive into FS runs.
  Result<ReceiveState> BeginReceive(const ReceiveTarget& t) UZFS_EXCLUDES(mu_, sync_mu_);
  // After every record was applied (and committed): the swap and the
  // snapshot described above, in one txg after the datasets' sync of it.
  // FS must not be mounted (its head changes under it). The checks of
  // BeginReceive are made again; on an error nothing changed and the
  // caller aborts.
  Status EndReceive(const ReceiveTarget& t, const ReceiveState& st, uint64_t to_guid, uint64_t creation_time)
      UZFS_EXCLUDES(mu_, sync_mu_);
  // Destroys the hidden dataset of a receive that will not end.
  Status AbortReceive(const ReceiveState& st) UZFS_EXCLUDES(mu_, sync_mu_);
  // A resumable receive that broke off is kept as it is (SavedReceive):
  // it is no longer running, so it may be resumed, discarded or destroyed.
  // (EndReceive and AbortReceive say the same of theirs.)
  void KeepReceive(const ReceiveState& st) UZFS_EXCLUDES(mu_);
  // The hidden datasets of receives that never ended (a crash, a daemon
  // killed): destroyed, in one txg; how many. Call when no receive runs
  // (after import).
  Result<size_t> DestroyStaleReceives() UZFS_EXCLUDES(mu_, sync_mu_);
  // written@SNAP of dataset `name` (a file system or snapshot): what it
  // references that snapshot `snapshot` ("fs@snap", of its file system or
  // of an origin before it) does not (pool_written.cc). InvalidArgument
  // when the snapshot is not before it.
  Result<uint64_t> SpaceWritten(const std::string& snapshot, const std::string& name) UZFS_EXCLUDES(mu_);
  // Promotes clone `name` (zfs promote): its origin snapshot and the older
  // snapshots of the origin's file system become its own, and that file
  // system a clone of the origin, with the space they account for
  // (pool_promote.cc). InvalidArgument "cannot promote 'NAME': not a
  // cloned filesystem"; Exists "...: conflicting snapshot 'SNAP' from
  // parent 'FS'" when the clone has a snapshot of a moving one's name.
  Status Promote(const std::string& name) UZFS_EXCLUDES(mu_, sync_mu_);
  // Renames snapshot "fs@a" to "fs@b"; recursive: the snapshot "a" of
  // every file system below fs that has one too. All in one txg or none:
  // InvalidArgument "cannot rename to 'TO': snapshots must be part of same
  // dataset" (or a bad name), NotFound for no such snapshot, Exists
  // "cannot rename to 'FS@b': dataset already exists" for a name taken in
  // any of them (pool_snapshot_rename.cc).
  Status RenameSnapshot(const std::string& from, const std::string& to, bool recursive)
      UZFS_EXCLUDES(mu_, sync_mu_);
  // User holds (pool_holds.cc, version 18 on): `tag` placed on (Hold) or
  // taken from (Release) every snapshot named, all in one txg or none.
  // NotFound for no such snapshot; Exists "cannot hold snapshot 'NAME':
  // tag already exists on this dataset"; NotFound "cannot release hold
  // from snapshot 'NAME': no such tag on this dataset"; NotSupported
  // "...: pool must be upgraded" before version 18.
  Status Hold(const std::vector<std::string>& snapshots, const std::string& tag) UZFS_EXCLUDES(mu_, sync_mu_);
  Status Release(const std::vector<std::string>& snapshots, const std::string& tag) UZFS_EXCLUDES(mu_, sync_mu_);
  // A snapshot's holds: tag -> when it was placed (seconds since 1970).
  Result<std::map<std::string, uint64_t>> Holds(const std::string& snapshot) UZFS_EXCLUDES(mu_);
  // Busy "cannot destroy 'NAME': filesystem has children\nuse '-r' to
  // destroy the following datasets:\nNAME@SNAP..." when the dataset has
  // snapshots of its own, which DestroyDataset refuses too (a recursive
  // destroy destroys them first). NotFound for no such dataset.
  Status CheckNoOwnSnapshots(const std::string& name) UZFS_EXCLUDES(mu_);
  Status RenameDataset(const std::string& from, const std::string& to) UZFS_EXCLUDES(mu_, sync_mu_);
  // Value as stored: numbers for numeric/index properties, else strings.
  Status SetProp(const std::string& ds, const std::string& prop, const std::string& value)
      UZFS_EXCLUDES(mu_, sync_mu_);
  Status InheritProp(const std::string& ds, const std::string& prop) UZFS_EXCLUDES(mu_, sync_mu_);
  // The numeric entries of the dataset's ZPL master node (object 1:
  // VERSION, normalization, utf8only, casesensitivity, ...); empty when
  // the dataset has no ZPL.
  Result<std::map<std::string, uint64_t>> ZplMasterProps(const std::string& ds) UZFS_EXCLUDES(mu_);
  // The dataset's own props ZAP (name -> value text); a snapshot's
  // ("fs@snap": its user properties, pool_snapshot_props.cc).
  Result<std::map<std::string, std::string>> LocalProps(const std::string& ds) UZFS_EXCLUDES(mu_);
  // A user property of snapshot "fs@snap" set (value) or removed
  // (nullopt): InvalidArgument "this property can not be modified for
  // snapshots" for a native one, NotSupported before version 12 ("pool
  // must be upgraded"), NotFound for no such snapshot
  // (pool_snapshot_props.cc). SetProp and InheritProp route a snapshot
  // name here.
  Status SetSnapshotProp(const std::string& name, const std::string& prop, const std::optional<std::string>& value)
      UZFS_EXCLUDES(mu_, sync_mu_);
  // Several user properties of snapshot `name`, all checked, then set in
  // one txg (zfs set a=1 b=2 fs@snap).
  Status SetSnapshotProps(const std::string& name, const std::vector<std::pair<std::string, std::string>>& props)
      UZFS_EXCLUDES(mu_, sync_mu_);
  // Every file system, parents before children; with_snapshots: each
  // followed by its snapshots, oldest first.
  Result<std::vector<DatasetInfo>> ListDatasets(bool with_snapshots = false, bool with_partial = false)
      UZFS_EXCLUDES(mu_);
  // The dataset's object set, to change in open_txg().
  Result<ObjsetWriter*> Objset(const std::string& ds) UZFS_EXCLUDES(mu_);
  // The same for reading only, also on a read-only pool (the ZPL mounts
  // read-only imports with it); the caller must not change it.
  Result<ObjsetWriter*> ObjsetForRead(const std::string& ds) UZFS_EXCLUDES(mu_);

  // The largest recordsize datasets may use: 1 MiB when the pool has the
  // large_blocks feature (pool_features.cc), else 128 KiB.
  uint64_t max_record_size() UZFS_EXCLUDES(mu_);
  // Every feature uzfs knows (enabled or not; none below version 5000)
  // and every other one the pool lists, in uzfs's order then the pool's.
  Result<std::vector<PoolFeatureState>> Features() UZFS_EXCLUDES(mu_);
  // `zpool set feature@NAME=enabled`: enables a feature uzfs knows (by
  // guid) on a feature-flag pool, in one txg; OK if enabled already.
  // feature_generation() changes with each (running logs then activate
  // zilsaxattr at their next commit: ZilActivateSaXattr).
  Status EnableFeature(const std::string& guid) UZFS_EXCLUDES(mu_, sync_mu_);
  uint64_t feature_generation() const { return feature_gen_.load(std::memory_order_acquire); }

  // --- configuration changes (pool_vdev_change.cc) ---
  // `zpool add`: the layout's data and log vdevs become new top-level
  // vdevs (ids after the last one; one txg), its cache and spare devices
  // join the aux lists. Every device is opened and checked before anything
  // is written (as Create: in use elsewhere without force, too small, listed
  // twice, already in this pool); a log needs pool version >= 7, a cache
  // device >= 10, a spare >= 3. New data vdevs take allocations at once.
  // Crash safety: the new devices' labels are written first, then the old
  // devices', then the uberblock; an import that finds labels of an add
  // whose txg never landed drops the extra top-level vdevs (the MOS config
  // is the authority).
  Status AddVdevs(const PoolLayout& layout, bool force) UZFS_EXCLUDES(mu_, sync_mu_);
  // `zpool remove`: a cache or spare device, or a top-level log vdev (named
  // by a leaf's path or guid, or as "mirror-N"), which leaves a hole (pool
  // version >= 19) so later ids never change; the removed devices' labels
  // are cleared so they can be used again. InvalidArgument for a data vdev
  // or a leaf inside a mirror (zpool detach's job), NotFound for a device
  // not in the pool.
  Status RemoveVdev(const std::string& name) UZFS_EXCLUDES(mu_, sync_mu_);
  // The configuration now (top-level tree, spares, cache devices).
  struct ConfigView {
    VdevNode tree;
    std::vector<VdevNode> spares, cache;
  };
  ConfigView Config() const UZFS_EXCLUDES(mu_);
  // What leaf `guid`'s DTL map says as last synced (dtl_map.h): the txgs
  // it misses; empty when it has no map or misses nothing.
  std::vector<TxgSpan> SyncedDtl(uint64_t guid) const UZFS_EXCLUDES(mu_);

  // Appends a record to the pool history (written at the next sync).
  void LogHistory(const std::string& command) UZFS_EXCLUDES(mu_);

  // --- the persistent error log (error_log.h, pool_errlog.cc) ---
  // Records a block no read could get whole (every dataset's and the MOS's
  // reads report here). It reaches the MOS's "errlog_last" log with the
  // next txg sync (a read-only pool keeps it in memory), and the event log
  // gets one line the first time a block is seen. Safe from any thread,
  // under any of the pool's or its object sets' locks.
  void RecordDataError(const DataErrorBookmark& b, const Status& why) UZFS_EXCLUDES(errlog_mu_);
  // Every damaged block known: both logs in the MOS and the ones not
  // synced yet, sorted, without repeats.
  Result<std::vector<DataErrorBookmark>> DataErrors() UZFS_EXCLUDES(mu_, errlog_mu_);
  // How often each leaf's labels are read back to check they still name
  // this pool and leaf (pool_health.cc; a minute unless told).
  void SetLabelCheckInterval(std::chrono::seconds every) UZFS_EXCLUDES(mu_);
  // Where the pool reports events, one line each (the daemon's log).
  void SetEventLog(std::function<void(const std::string&)> log) UZFS_EXCLUDES(errlog_mu_);
  // The pool's config as an OpenZFS cache file lists it: the MOS config
  // nvlist (vdev tree, spares, cache devices) as of the last synced txg.
  NvList CacheConfig() const UZFS_EXCLUDES(mu_);
  // Told the new config (CacheConfig's shape) each time a txg that changed
  // it is on disk (any vdev change: add, attach, replace, online, offline,
  // a spare standing in); called from the sync thread with the pool's
  // lock held, so it must not call back into the pool. The daemon keeps a
  // `cachefile=PATH` file current with it. Empty: none.
  void SetConfigListener(std::function<void(const NvList&)> listener) UZFS_EXCLUDES(mu_);
  // Async destroy (pool_async_destroy.cc). On a feature-flag pool with
  // com.delphix:async_destroy enabled, destroying a file system queues its
  // tree in the MOS (the bptree) and returns; each txg then frees a bounded
  // share of it (SetAsyncDestroyPace), resumed after an export or a crash
  // from a bookmark that OpenZFS reads the same way. Freeing: bytes still
  // to be freed (the `freeing` property: the $FREE directory's usage);
  // leaked: what a finished queue's totals held beyond the blocks of its
  // trees (`leaked`, the $LEAK directory). A block that cannot be read
  // stops the frees at the last bookmark before it; they are tried again
  // every few seconds (the pool stays writable; `freeing` stays). WaitFreed returns once
  // nothing is queued, at once on a read-only pool or with the pace at 0,
  // and IoError when the frees are stuck on an unreadable block.
  struct AsyncDestroyState {
    uint64_t freeing = 0;
    uint64_t leaked = 0;
    uint64_t queued = 0;  // trees not yet wholly freed
  };
  Result<AsyncDestroyState> AsyncDestroy() UZFS_EXCLUDES(mu_);
  Status WaitFreed() UZFS_EXCLUDES(mu_, sync_mu_);
  // The most blocks one txg frees (0: none, the queue waits). Default: no
  // count, only the time bound. `background`: the scan thread brings txgs
  // while trees are queued (default); off, only the txgs others bring free
  // anything (tests step a destroy one Sync at a time).
  void SetAsyncDestroyPace(uint64_t blocks_per_txg, bool background = true) {
    async_background_.store(background);
    async_pace_.store(blocks_per_txg);
  }
  // Whether destroyed trees are queued (no lock: for pollers).
  bool AsyncDestroyQueued() const { return async_queued_.load(std::memory_order_acquire); }
  // --- scrub (pool_scan.cc) ---
  // A scrub reads every block of the pool as the last synced txg has it
  // (the MOS, then each dataset in object number order), every copy and
  // the parity below it, repairs what does not match its checksum and
  // counts what it could not repair. It runs on a thread of its own in
  // slices of `scan_slice` (default 50 ms) during which no txg syncs, so
  // no block it reads can be freed and reused under it; a slice goes on
  // past that, up to 1 s, while no txg is waiting to sync (each slice
  // ends by waiting for its last reads). Between slices the pool syncs as
  // usual. Where it is (the scan record, scan_phys.h) is
  // stored in the MOS with the txgs, at least every few seconds: after an
  // export, a crash or a pause it goes on from there, not from the start.
  // Blocks born after it started are not read (they were written since).
  //
  // StartScrub: Busy "currently scrubbing" when one runs; a paused one
  // resumes. PauseScrub / CancelScrub: NotFound "there is no active scrub".
  // NotSupported on a read-only pool. Each waits for the change to be
  // on disk.
  Status StartScrub() UZFS_EXCLUDES(mu_, sync_mu_, scan_mu_);
  Status PauseScrub() UZFS_EXCLUDES(mu_, sync_mu_, scan_mu_);
  Status CancelScrub() UZFS_EXCLUDES(mu_, sync_mu_, scan_mu_);
  struct ScanProgress {
    ScanPhys phys;
    uint64_t pass_start = 0;     // when this run (since import or resume) began, epoch seconds
    uint64_t pass_examined = 0;  // bytes examined by this run
  };
  ScanProgress scan_progress() const UZFS_EXCLUDES(scan_mu_);
  // Returns once no scrub is running (finished, canceled, paused) or the
  // pool is closing.
  void WaitScan() UZFS_EXCLUDES(scan_mu_);
  // The slice length from now on, never extended (tests make it short to
  // stop mid-scan).
  void SetScanSlice(std::chrono::milliseconds slice) UZFS_EXCLUDES(scan_mu_);
  // The most data blocks one window of the sorted scan gathers before it
  // issues them and records its place (pool_scan.cc), from the next window
  // on; tests make it small so that a kill finds the place recorded part
  // way through a small pool.
  void SetScanWindow(size_t max_blocks) UZFS_EXCLUDES(scan_mu_);
  // Called on the scan thread, with no lock held, each time a window has
  // been gathered and sorted, before any of its blocks is read (tests free
  // and reuse the window's blocks there).
  void SetScanWindowHook(std::function<void()> hook) UZFS_EXCLUDES(scan_mu_);

  // --- manual trim (pool_trim.cc, `zpool trim`) ---
  // A trim discards the space no block uses on the leaves named (every
  // leaf of the tree when none is), so thin-provisioned storage (a sparse
  // file, an SSD, an NBD export, a Ceph image) gets it back. It runs on a
  // thread of its own, one top-level vdev after another, metaslab by
  // metaslab, in batches of at most kTrimBatch bytes. A batch holds
  // sync_mu_ from start to end, so the tree cannot change under it (a leaf
  // detached meanwhile gets no discard after it left, and its trim ends as
  // failed) and no txg sync meets the space it lends: its free ranges are
  // lent out of the allocator (Metaslab::LendForTrim), so no block is
  // written there while they are discarded, then returned. An offline or
  // missing leaf is not trimmed. Free ranges shorter than
  // kTrimMinExtent are left alone, as OpenZFS does. Space freed in the
  // last few txgs is deferred (metaslab.h) and not trimmed yet, so a
  // rewind to those txgs still finds its blocks. Progress lives in memory
  // only: an export or a crash ends a trim, and `zpool trim` starts it
  // again from the beginning.
  static constexpr uint64_t kTrimBatch = 64ull << 20;
  static constexpr uint64_t kTrimMinExtent = 32 * 1024;
  enum class TrimState : uint8_t { kNone, kActive, kCanceled, kComplete, kFailed };
  struct TrimProgress {
    TrimState state = TrimState::kNone;
    uint64_t examined = 0;  // bytes of its top-level vdev's space looked at
    uint64_t total = 0;     // bytes of its top-level vdev's space
    uint64_t trimmed = 0;   // bytes discarded on the leaf
    uint64_t start_time = 0, end_time = 0;  // epoch seconds
    bool unsupported = false;  // kFailed because the device cannot discard
    std::string error;         // kFailed: why
  };
  // StartTrim: the leaves named (path or guid) start trimming; `rate`
  // limits each leaf to that many bytes discarded per second (0: no
  // limit). NotFound "no such device in pool" for a name that is not a
  // leaf of the tree; Busy "currently trimming" when one of them already
  // is (then none starts); NotSupported on a read-only pool.
  Status StartTrim(const std::vector<std::string>& devs, uint64_t rate = 0)
      UZFS_EXCLUDES(mu_, sync_mu_, trim_mu_);
  // CancelTrim: the leaves named (every one, with none named) stop
  // trimming; NotFound "there is no active trim" when none of them was.
  Status CancelTrim(const std::vector<std::string>& devs) UZFS_EXCLUDES(mu_, sync_mu_, trim_mu_);
  // Every leaf trimmed since import, by guid.
  std::map<uint64_t, TrimProgress> trim_progress() const UZFS_EXCLUDES(trim_mu_);
  bool TrimRunning() const UZFS_EXCLUDES(trim_mu_);
  // autotrim=on (pool property, read at import and on `zpool set`): the
  // trim thread stays up and every kAutotrimEvery discards, on every
  // usable leaf, the runs of at least kTrimMinExtent that the deferral of
  // frees released since its last pass (Metaslab::SetAutotrim), lent out
  // of the allocator as a manual trim's are. Counted in autotrimmed_bytes
  // (bytes of top-level vdev space), shown nowhere else, as OpenZFS shows
  // no autotrim progress.
  static constexpr std::chrono::milliseconds kAutotrimEvery{1000};
  bool autotrim() const { return autotrim_on_.load(std::memory_order_acquire); }
  uint64_t autotrimmed_bytes() const { return autotrimmed_bytes_.load(std::memory_order_relaxed); }


  // A device is named by its path or guid, as zpool status shows it.
  // `zpool offline [-t]`: the leaf takes no more I/O (Busy "no valid
  // replicas" when the pool could not serve every block without it);
  // unless `temporary` it stays offline across export and import.
  // `zpool online`: probes and reopens it; if it missed writes it is stale
  // (reads go around it) and a resilver starts, reading only the blocks
  // born since it went away. NotFound for a device not in the pool.
  // With `fault` (`zpool offline -f`) it is FAULTED instead (a hot spare
  // may take over).
  Status OfflineDevice(const std::string& dev, bool temporary, bool fault = false)
      UZFS_EXCLUDES(mu_, sync_mu_, scan_mu_);
  Status OnlineDevice(const std::string& dev) UZFS_EXCLUDES(mu_, sync_mu_, scan_mu_);
  // `zpool replace POOL OLD [NEW]`: NEW (OLD's path when empty: the disk
  // in that place was swapped) joins OLD in a replacing vdev and a
  // resilver fills it; when the resilver finishes NEW takes OLD's place
  // and OLD leaves the pool. Refused with nothing changed: NEW smaller
  // than OLD, in use by another pool (unless `force`), already in this
  // pool, OLD already being replaced, a log or cache device as OLD.
  Status ReplaceDevice(const std::string& old_dev, const std::string& new_path, bool force)
      UZFS_EXCLUDES(mu_, sync_mu_, scan_mu_);
  // `zpool attach POOL DEV NEW`: NEW becomes another side of DEV's mirror,
  // or DEV (a top-level disk) and NEW a two-way mirror; a resilver fills
  // NEW. Refused with nothing changed: DEV in a raidz ("can only attach to
  // mirrors and top-level disks"), NEW too small, in use, or in this pool.
  // `zpool detach POOL DEV`: DEV leaves its mirror, replacing or spare
  // vdev (one member left takes the place itself); refused for a device
  // in no such vdev, or when the others do not hold every block ("no
  // valid replicas"). (pool_attach.cc)
  Status AttachDevice(const std::string& dev, const std::string& new_path, bool force)
      UZFS_EXCLUDES(mu_, sync_mu_, scan_mu_);
  Status DetachDevice(const std::string& dev) UZFS_EXCLUDES(mu_, sync_mu_, scan_mu_);
  // Hot spares (pool_spares.cc): at each txg, a leaf with 10 read or write
  // errors within 10 minutes is FAULTED (unless the pool needs it), and a
  // leaf of a mirror or raidz that is FAULTED, UNAVAIL or REMOVED gets the
  // first available spare in a spare vdev, resilvered; events
  // resource.fs.zfs.statechange and sysevent.fs.zfs.vdev_spare. Detaching
  // the failed leaf keeps the spare for good (it leaves the spares list);
  // detaching the spare, or the failed leaf's return (online, resilvered),
  // or a replace of it (resilvered), gives the spare back.
  // `zpool resilver`: a whole resilver (every block) starts over.
  Status StartResilver() UZFS_EXCLUDES(mu_, sync_mu_, scan_mu_);

  // --- events (pool_events.cc) ---
  // What `zpool events` lists: the pool's events since it was opened, the
  // newest 512 kept, each with OpenZFS's class name (sysevent.fs.zfs.*,
  // ereport.fs.zfs.*, resource.fs.zfs.*) and its payload as name/value
  // text. Posting is safe from any thread under any of the pool's locks.
  struct Event {
    uint64_t eid = 0;  // 1, 2, ... in the order posted
    std::chrono::system_clock::time_point time;
    std::string cls;
    std::vector<std::pair<std::string, std::string>> payload;
  };
  void PostEvent(std::string cls, std::vector<std::pair<std::string, std::string>> payload = {})
      UZFS_EXCLUDES(errlog_mu_);
  std::vector<Event> Events() const UZFS_EXCLUDES(errlog_mu_);
  // Drops the events listed so far; how many.
  size_t ClearEvents() UZFS_EXCLUDES(errlog_mu_);
  // `zpool clear`: the error counters of every device (or of the one whose
  // path or guid is `dev`) start again from zero, and a FAULTED one among
  // them is brought back online (resilvered for what it missed). NotFound
  // for a device not in the pool.
  Status ClearErrors(const std::string& dev = "") UZFS_EXCLUDES(mu_, sync_mu_, scan_mu_);

  // The name of the dataset whose object number is `ds_obj`; NotFound.
  Result<std::string> DatasetNameOf(uint64_t ds_obj) UZFS_EXCLUDES(mu_);

  // --- pool properties (pool_props.cc) ---
  // The MOS "pool_props" ZAP (empty when the pool never had one) and the
  // name of the dataset its bootfs entry names.
  struct StoredPoolProps {
    PropZap zap;
    std::string bootfs_name;
  };
  Result<StoredPoolProps> PoolProps() UZFS_EXCLUDES(mu_);
  // `zpool set` / `create -o` / `import -o` of properties stored in the
  // pool (FindPoolProp(name)->storage == kPoolZap), all in one txg.
  // InvalidArgument for a bad name or value (zfs-fuse's wording), NotFound
  // for a bootfs that does not exist; nothing changes then.
  Status SetPoolProps(const std::vector<std::pair<std::string, std::string>>& props)
      UZFS_EXCLUDES(mu_, sync_mu_);

  // --- vdev properties (pool_vdev_props.cc) ---
  // The properties stored for the leaf or top-level vdev `guid` (its top
  // ZAP when it is top-level, else its leaf ZAP): comment and user
  // properties, name -> value, sorted. Empty when it has none; NotFound
  // for a guid the pool's vdev tree does not hold.
  Result<std::vector<std::pair<std::string, std::string>>> VdevProps(uint64_t guid) UZFS_EXCLUDES(mu_);
  // `zpool set PROP=VALUE pool vdev`: comment (at most 8191 bytes) and user
  // properties (module:name), all in one txg; an empty value removes
  // one. The first one a pool gets makes its vdev ZAPs as OpenZFS keeps
  // them: the MOS "com.delphix:vdev_zap_map" and a ZAP for every leaf and
  // top-level vdev, kept in step with the tree at each config write.
  // Errors (nothing changes): NotSupported below version 5000, NotFound
  // for an unknown guid, InvalidArgument for a vdev that takes no
  // properties (a replacing or spare group), a property uzfs does not
  // store, a bad user-property name, a value too long.
  Status SetVdevProps(uint64_t guid, const std::string& shown,
                      const std::vector<std::pair<std::string, std::string>>& props) UZFS_EXCLUDES(mu_, sync_mu_);

  // --- intent log (pool_zil.cc; the ZPL drives it) ---
  // Starts dataset `ds`'s intent log writer if none runs: frees the log
  // the header names (replayed already by the caller, or empty), creates
  // a new log and syncs, so its header is durable on return (a commit
  // before that would be lost in a crash). The same writer while it runs.
  // On a pool with org.openzfs:zilsaxattr enabled, the dataset's feature
  // is activated in that sync (ZilLogsSaXattr).
  Result<std::shared_ptr<ZilWriter>> ZilStart(const std::string& ds) UZFS_EXCLUDES(mu_, sync_mu_);
  // Stops and destroys the running log (unmount): blocks freed and the
  // header cleared in the open txg. The caller syncs after. OK if none.
  Status ZilClose(const std::string& ds) UZFS_EXCLUDES(mu_, sync_mu_);
  // The target log blocks are read through (ZilReader).
  BlockTarget& block_target();
  // Whether new logs of this pool get log-device (slog) blocks: the
  // choice between copying large writes into the log and logging them by
  // reference (OpenZFS: no slog and at least zfs_immediate_write_sz).
  bool ZilHasSlog() const UZFS_EXCLUDES(mu_);
  // Whether the dataset's running log may take TX_SETSAXATTR records (its
  // zilsaxattr feature is active on disk: ZilStart activates it when the
  // pool has it enabled). False with no running log.
  bool ZilLogsSaXattr(const std::string& ds) const UZFS_EXCLUDES(mu_);
  // A log that started before zilsaxattr was enabled: activates it for the
  // dataset and syncs (as OpenZFS's zil_commit does for a pool upgraded
  // under an existing log); ZilLogsSaXattr is true after. OK and nothing
  // done when not enabled, already active, or no log runs.
  Status ZilActivateSaXattr(const std::string& ds) UZFS_EXCLUDES(mu_, sync_mu_);
  // Changes whenever a dataset's running log is stopped or replaced: a
  // holder of a writer compares it (lock-free) to know when to ask again.
  uint64_t zil_generation() const { return zil_gen_.load(std::memory_order_acquire); }
  // Bytes of live log blocks in the main (normal) class: space that the
  // synced figures (zfs list AVAIL) still count as free. The ZPL's space
  // check takes them off; the log allocator keeps half the slop free of
  // them, for the txg syncs that free them (pool_zil.cc).
  uint64_t zil_main_bytes() const { return zil_main_bytes_.load(std::memory_order_relaxed); }
  // Before a log device is removed (zpool remove): stops allocating log
  // blocks on top-level vdev top_id, moves every running log off it
  // (each is restarted on the other log vdevs or the main pool) and syncs,
  // so no live log block is left there when it returns. The caller must
  // keep the pool from allocating there again (it is removing the vdev).
  Status EvacuateLogDevice(uint32_t top_id) UZFS_EXCLUDES(mu_, sync_mu_);
  // A log top-level vdev added at run time (zpool add pool log ...): once
  // it is in the vdev tree and the config with its metaslab_shift and a
  // metaslab_array (DmuSpaceMapProvider::CreateArray), this makes it
  // allocatable for log blocks (logs started after this call use it;
  // running ones keep their vdevs until restarted). Exists if it is in.
  Status AddLogClassVdev(uint32_t top_id) UZFS_REQUIRES(mu_);
  // Restarts the dataset's log (after a failed log write: the caller has
  // synced the txgs already); the new log avoids the log class when a
  // log write failed there. The new writer.
  Result<std::shared_ptr<ZilWriter>> ZilRestart(const std::string& ds) UZFS_EXCLUDES(mu_, sync_mu_);

 private:
  // The hidden child a receive into an existing filesystem writes to
  // ("fs/%recv"), swapped in when the stream ends, kept for a resume.
  static constexpr const char* kRecvLeaf = "%recv";

  struct Dataset {
    std::string name;
    uint64_t dir_obj = 0;
    uint64_t ds_obj = 0;
    std::unique_ptr<ObjsetWriter> os;
    bool needs_sync = false;  // new: write its objset even if nothing changed
    std::shared_ptr<DatasetZil> zil;  // the running intent log writer, if any
    // Blocks born up to prev_snap_txg are its newest snapshot's (or its
    // origin's) too: killed here they go to its deadlist instead of being
    // freed (pool_deadlist.cc). `dead`: those killed by the sync running.
    uint64_t prev_snap_txg = 0;
    std::vector<BlockPtr> dead;
  };
  using SyncTask = std::function<Status(Txg txg)>;

  Pool();
  Status OpenCommon() UZFS_REQUIRES(mu_);
  // Import: the top-level vdevs no device was found for (AssembledPool's
  // missing_tops) are logs, put in the tree from the MOS config's
  // `mos_tops` with every leaf absent, when opts.missing_log allows it;
  // else IoError (and opts.missing_log_rows).
  Status TakeMissingTops(const PoolImportOptions& opts, const AssembledPool& a,
                         const std::vector<NvList>& mos_tops, const std::string& quoted) UZFS_REQUIRES(mu_);
  // After an import with log devices missing: every dataset's intent log
  // is dropped before anything could replay it.
  Status DropIntentLogs();
  Status LoadAfterImport(const PoolImportOptions& opts, const AssembledPool& a,
                         std::map<uint64_t, std::string> found_paths, uint64_t newest_seen)
      UZFS_EXCLUDES(mu_);
  // TxgSyncer: one txg, on the engine's sync thread (header comment).
  Status SyncTxg(Txg txg) override UZFS_EXCLUDES(mu_, sync_mu_);
  std::string ProbeName() const override { return ident_.name; }
  uint32_t LastSyncPasses() const override { return last_sync_passes_.load(std::memory_order_relaxed); }
  Status SyncTxgLocked(Txg txg) UZFS_REQUIRES(sync_mu_) UZFS_EXCLUDES(mu_);
  Status StartEngine(const TxgOptions& opts) UZFS_EXCLUDES(mu_);
  // Intent log (pool_zil.cc). Import, before the engine starts: marks
  // every log block of every dataset that the last synced txg's space
  // maps do not hold as allocated (claim), and records the claim in the
  // log header, so nothing overwrites a log before it is replayed.
  Status ZilClaimAll() UZFS_EXCLUDES(mu_, sync_mu_);
  // Builds the log class over the log top-level vdevs that have a
  // metaslab array (OpenCommon; import loads it after).
  Status OpenLogClass(const AllocatorOptions& ao) UZFS_REQUIRES(mu_);
  Allocator* LogClassFor(uint32_t top_id) const UZFS_REQUIRES(mu_);
  Status LogClassLoad() UZFS_REQUIRES(mu_);
  Status LogClassSyncTxg(Txg txg, bool allow_condense) UZFS_REQUIRES(mu_);
  void LogClassSyncDone(Txg txg) UZFS_REQUIRES(mu_);
  // Sync of txg: frees log blocks whose records are all in txg or older
  // and stores the log's new header in the dataset's objset.
  Status ZilSyncDataset(Dataset& ds, Txg txg) UZFS_REQUIRES(sync_mu_, mu_);
  // Txg's uberblock is durable: queued log records of it are dropped.
  void ZilSyncDone(Txg txg) UZFS_REQUIRES(sync_mu_, mu_);
  Status SyncDatasets(Txg txg) UZFS_REQUIRES(sync_mu_, mu_);
  Status SyncPasses(Txg txg) UZFS_REQUIRES(sync_mu_, mu_);
  Status WriteUberblock(Txg txg) UZFS_REQUIRES(sync_mu_, mu_);
  Status WriteLabels(uint64_t state, Txg txg) UZFS_REQUIRES(mu_);
  // After a txg's uberblock is on disk: devices that left the tree in it
  // let go of their locks; returned spares get their spare labels.
  void AfterCommit() UZFS_REQUIRES(mu_);
  Status RunTask(SyncTask task, bool after_datasets = false) UZFS_EXCLUDES(mu_, sync_mu_);
  Status CloseWithState(uint64_t state) UZFS_EXCLUDES(mu_, sync_mu_);

  // Cache devices (pool_l2.cc). Create hands over the devices it labeled,
  // import opens the config's; Close takes them out of the L2ARC.
  void AdoptCacheDevices(std::vector<std::unique_ptr<BlockDevice>> devs, L2Arc* l2arc, bool injectable)
      UZFS_EXCLUDES(cache_mu_);
  void OpenCacheDevices(L2Arc* l2arc, bool injectable) UZFS_EXCLUDES(cache_mu_, mu_);
  void CloseCacheDevices() UZFS_EXCLUDES(cache_mu_);
  FaultDevice* CacheFaults(const std::string& path_or_guid) UZFS_EXCLUDES(cache_mu_);
  struct CacheDev {
    VdevNode node;
    std::unique_ptr<BlockDevice> dev;  // null when UNAVAIL
    std::string state;
    bool in_l2 = false;
  };
  void HandToL2(CacheDev& c) UZFS_REQUIRES(cache_mu_);

  // MOS helpers (txg: the syncing txg).
  Result<uint64_t> MosCreateZap(uint8_t type, Txg txg, uint8_t bonustype = 0,
                                uint16_t bonuslen = 0) UZFS_REQUIRES(mu_);
  Status MosZapAdd(uint64_t obj, const std::string& name, uint64_t value, Txg txg)
      UZFS_REQUIRES(mu_);
  // Many entries into one ZAP: opened and written back once.
  Status MosZapAddMany(uint64_t obj, std::span<const std::pair<std::string, uint64_t>> entries, Txg txg)
      UZFS_REQUIRES(mu_);
  Status MosZapAddString(uint64_t obj, const std::string& name, const std::string& value,
                         Txg txg) UZFS_REQUIRES(mu_);
  Status MosZapRemove(uint64_t obj, const std::string& name, Txg txg) UZFS_REQUIRES(mu_);
  Result<std::vector<std::pair<std::string, std::vector<uint64_t>>>> MosZapList(uint64_t obj,
                                                                               uint8_t* int_size = nullptr)
      UZFS_REQUIRES(mu_);
  Result<uint64_t> MosZapLookup(uint64_t obj, const std::string& name) UZFS_REQUIRES(mu_);
  Result<uint64_t> MosCreateBplist(uint64_t block_size, Txg txg) UZFS_REQUIRES(mu_);
  Result<uint64_t> MosCreateDeadlist(Txg txg) UZFS_REQUIRES(mu_);
  Status CreateFeatureObjects(Txg txg, const std::set<std::string>& disabled) UZFS_REQUIRES(mu_);
  Status CheckFeatures(const std::string& quoted, bool readonly) UZFS_REQUIRES(mu_);
  // pool_features.cc: feature refcounts, per-dataset activation.
  Result<bool> FeatureEnabled(const std::string& guid) UZFS_REQUIRES(mu_);
  Status FeatureAddRef(const std::string& guid, int64_t delta, Txg txg) UZFS_REQUIRES(mu_);
  uint64_t MaxRecordSize() UZFS_REQUIRES(mu_);   // 1 MiB with large_blocks, else 128 KiB
  Status ActivateLargeBlocks(uint64_t ds_obj, Txg txg) UZFS_REQUIRES(mu_);
  // The dataset object becomes a ZAP (extensible_dataset, which the
  // caller checked is enabled, counts it).
  Status ZapifyDataset(uint64_t ds_obj, Txg txg) UZFS_REQUIRES(mu_);
  // What property parsing needs to know of this pool (version, largest
  // recordsize, the compression features) for a set or create on `target`.
  PropContext PropContextFor(const std::string& target, bool creating) UZFS_REQUIRES(mu_);
  // zstd_compress on the dataset when its own compression property (not
  // an inherited one) is set to a zstd value, as OpenZFS does at `zfs set`.
  Status ActivateZstdIfSet(uint64_t ds_obj, const std::string& prop, uint64_t value, Txg txg)
      UZFS_REQUIRES(mu_);
  // Per-dataset features: whether the dataset object holds guid; the
  // activation (the object becomes a ZAP, refcounts +1; nothing if
  // active; NotSupported if the pool does not have it enabled).
  Result<bool> DatasetFeatureActive(uint64_t ds_obj, const std::string& guid) UZFS_REQUIRES(mu_);
  Status ActivateDatasetFeature(uint64_t ds_obj, const std::string& guid, Txg txg) UZFS_REQUIRES(mu_);
  Status DropDatasetFeatures(uint64_t ds_obj, Txg txg) UZFS_REQUIRES(mu_);
  // The per-dataset features active on from_obj, activated on to_obj too
  // (a snapshot shares its head's blocks).
  Status CopyDatasetFeatures(uint64_t from_obj, uint64_t to_obj, Txg txg) UZFS_REQUIRES(mu_);
  Status WriteDirPhys(uint64_t obj, const DslDirPhys& d, Txg txg) UZFS_REQUIRES(mu_);
  Status WriteDsPhys(uint64_t obj, const DslDatasetPhys& d, Txg txg) UZFS_REQUIRES(mu_);
  Result<DslDirPhys> ReadDirPhys(uint64_t obj) UZFS_REQUIRES(mu_);
  Result<DslDatasetPhys> ReadDsPhys(uint64_t obj) UZFS_REQUIRES(mu_);
  Status WriteConfigObject(Txg txg) UZFS_REQUIRES(mu_);
  // Before the config is written, once the pool has vdev ZAPs: every
  // leaf and top-level vdev has its own (a top-level vdev's moves with
  // its id when attach or detach reshapes it), and those of vdevs that
  // left the tree are destroyed (pool_vdev_props.cc).
  Status SyncVdevZaps(Txg txg) UZFS_REQUIRES(mu_);
  Result<uint64_t> MosCreatePackedNvlist(Txg txg) UZFS_REQUIRES(mu_);
  Status MosWritePackedNvlist(uint64_t obj, const NvList& nv, Txg txg) UZFS_REQUIRES(mu_);
  Status WriteAuxObject(const std::string& key, const std::vector<VdevNode>& devs, bool spare,
                        Txg txg) UZFS_REQUIRES(mu_);
  Status WriteHistory(Txg txg) UZFS_REQUIRES(mu_);
  // The error log entries recorded since the last sync, into errlog_last.
  Status WriteErrorLog(Txg txg) UZFS_REQUIRES(mu_);
  // Reads the pool directory's error log objects (import).
  void LoadErrorLog() UZFS_REQUIRES(mu_);
  // Marks UNAVAIL every leaf whose device changed under the pool
  // (pool_health.cc). Before each txg's writes.
  void CheckLeaves() UZFS_REQUIRES(mu_);
  // ObjsetWriterOptions::on_read_error for object set `objset` (0: MOS).
  std::function<void(uint64_t, int64_t, uint64_t, const Status&)> ReadErrorHook(uint64_t objset);
  Status AppendDeferredFrees(Txg txg) UZFS_REQUIRES(mu_);
  // Appends `bps` to bplist (bpobj) `obj` and adds them to its header's
  // totals (pool_deadlist.cc).
  Status AppendBplist(uint64_t obj, std::span<const BlockPtr> bps, Txg txg) UZFS_REQUIRES(mu_);
  // What the blocks a head's sync killed into its deadlist did to the
  // space (pool_deadlist.cc): their deflated size and psize/lsize (still
  // held by a snapshot or an origin: the dir keeps them), and the part of
  // them born in this dir since its origin, which moves from the dir's
  // HEAD usage to its SNAP usage.
  struct DeadTally {
    uint64_t used = 0, compressed = 0, uncompressed = 0, to_snap = 0;
  };
  // Puts ds.dead on the deadlist of `p` (the head's record), and grows its
  // newest snapshot's unique bytes by the blocks only that snapshot holds
  // now. Clears ds.dead.
  Result<DeadTally> KillToDeadlist(Dataset& ds, const DslDatasetPhys& p, Txg txg) UZFS_REQUIRES(mu_);
  Status ProcessDeferredFrees(Txg txg) UZFS_REQUIRES(mu_);
  ObjsetWriterOptions MosOptions() UZFS_REQUIRES(mu_);
  // Before a top-level log vdev is removed: no live log block may remain on
  // it and no new one may go there (the intent log's hook).
  Status PrepareLogRemoval(uint32_t top_id) UZFS_EXCLUDES(mu_, sync_mu_);
  // The allocation ratio of the data vdevs (see deflate_ratio_).
  void ComputeDeflateRatio();

  // DSL.
  Status CreateMosLayout(Txg txg, const ZplCreateProps& root_zpl, const std::set<std::string>& disabled_features)
      UZFS_REQUIRES(mu_);
  Result<std::map<std::string, uint64_t>> ZplMasterPropsLocked(const std::string& ds) UZFS_REQUIRES(mu_);
  // Moves the ZPL's create-time properties (normalization, utf8only,
  // casesensitivity) out of `props` into *zpl, parsed; then fills those not
  // given from `parent`'s master node (empty: none) and applies ZFS's rule
  // that normalization implies utf8only.
  Status TakeZplCreateProps(const std::string& target, const std::string& parent,
                            std::vector<std::pair<std::string, std::string>>* props, ZplCreateProps* zpl)
      UZFS_REQUIRES(mu_);
  // A new DSL dir under parent_dir (with props ZAP and child map).
  Result<uint64_t> CreateDir(uint64_t parent_dir, const std::string& leaf, Txg txg,
                             uint64_t origin_obj) UZFS_REQUIRES(mu_);
  // A MOS object for a dataset record (its bonus a DslDatasetPhys).
  Result<uint64_t> AllocateDatasetObject(Txg txg) UZFS_REQUIRES(mu_);
  // A new head dataset in dir, a clone of $ORIGIN@$ORIGIN (v >= 11).
  Result<uint64_t> CreateHeadDataset(uint64_t dir_obj, Txg txg) UZFS_REQUIRES(mu_);
  // What CreateDatasetSync needs once every check passed (pool_dataset_changes.cc).
  struct NewDataset;
  // Every check of a new dataset `name` (name, parent, not existing,
  // properties valid for this pool), changing nothing.
  // hidden: the last component may be "%recv" (BeginReceive's).
  Result<NewDataset> ValidateNewDataset(const std::string& name,
                                        const std::vector<std::pair<std::string, std::string>>& props,
                                        bool hidden = false) UZFS_REQUIRES(mu_);
  Status CheckNewDatasetLocked(const std::string& name,
                               const std::vector<std::pair<std::string, std::string>>& props) UZFS_REQUIRES(mu_);
  // clone_of: the snapshot a clone starts from (0: a new empty file system).
  // receiving: a dataset BeginReceive makes: the name may be hidden, and a
  // new file system gets an empty object set (no ZPL objects) and is
  // marked inconsistent.
  Status CreateDatasetSync(const std::string& name,
                           const std::vector<std::pair<std::string, std::string>>& props,
                           Txg txg, uint64_t clone_of = 0, bool receiving = false) UZFS_REQUIRES(mu_);
  // Receiving (pool_receive.cc): every check of BeginReceive / EndReceive
  // (in_task: from the sync task, which also checks the head was not
  // modified); the swap of FS's head tree with the clone's.
  Result<ReceiveState> CheckReceive(const ReceiveTarget& t, bool in_task) UZFS_REQUIRES(mu_);
  // Saved receives (pool_receive_resume.cc).
  Result<std::optional<SavedReceive>> SavedReceiveLocked(const std::string& fs) UZFS_REQUIRES(mu_);
  Result<std::optional<SavedReceive>> ReadSavedReceive(uint64_t ds_obj) UZFS_REQUIRES(mu_);
  Result<ReceiveState> CheckResume(const ReceiveTarget& t) UZFS_REQUIRES(mu_);
  // Bookmarks (pool_bookmarks.cc): a head's bookmark ZAP (0: none), its
  // entries, and freeing them with the head.
  Result<uint64_t> BookmarksObject(uint64_t head_obj) UZFS_REQUIRES(mu_);
  Result<std::vector<Bookmark>> BookmarksOfLocked(const std::string& fs) UZFS_REQUIRES(mu_);
  Status DropBookmarks(uint64_t head_obj, Txg txg) UZFS_REQUIRES(mu_);
  Status SaveReceiveFields(uint64_t ds_obj, const ReceiveTarget& t, Txg txg) UZFS_REQUIRES(mu_);
  Status ClearReceiveFields(uint64_t ds_obj, Txg txg) UZFS_REQUIRES(mu_);
  Status WriteReceiveProgress(Txg txg) UZFS_REQUIRES(mu_);
  Status CheckReceiveEnd(const ReceiveTarget& t, const ReceiveState& st) UZFS_REQUIRES(mu_);
  Status ReceiveSwapSync(const ReceiveTarget& t, const ReceiveState& st, Txg txg) UZFS_REQUIRES(mu_);
  // Whether FS's head holds anything its newest snapshot does not (the
  // meta-dnodes differ; an objset block rewritten only for its intent
  // log header does not count).
  Result<bool> HeadModified(const DslDatasetPhys& head, const DslDatasetPhys& snap) UZFS_REQUIRES(mu_);
  // Busy "<q>dataset is busy (a receive is writing it)" for a file system a
  // full receive is filling or a receive's hidden clone: destroy and
  // rename refuse them (the receive holds their writer).
  Status RefuseIfReceiving(const std::string& name, const std::string& q) UZFS_REQUIRES(mu_);
  // A clone's head dataset in dir (pool_clone.cc): the origin snapshot's
  // tree and space, a deadlist keyed as its file system's below the
  // origin, linked to the origin (LinkCloneToOrigin).
  Result<uint64_t> CreateCloneHead(uint64_t dir_obj, uint64_t origin_obj, Txg txg) UZFS_REQUIRES(mu_);
  // The same head dataset, not linked: the keys of the deadlist of the
  // origin's file system's current head (rollback -k makes F's new head
  // so, before the old one moves).
  Result<uint64_t> CreateHeadOver(uint64_t dir_obj, uint64_t origin_obj, Txg txg) UZFS_REQUIRES(mu_);
  // Head ds_obj of dir_obj becomes a clone of snapshot origin_obj: the
  // origin's child count and next_clones (version 17 on), the dir's
  // origin, the origin dir's dd_clones (version 26 on). Unlink undoes it
  // for a head being destroyed.
  Status LinkCloneToOrigin(uint64_t dir_obj, uint64_t ds_obj, uint64_t origin_obj, Txg txg) UZFS_REQUIRES(mu_);
  Status UnlinkCloneFromOrigin(uint64_t ds_obj, uint64_t origin_obj, Txg txg) UZFS_REQUIRES(mu_);
  // Every head whose directory has an origin listed in the origin's
  // directory's dd_clones (version 26 on; pool_clone.cc).
  Status AddMissingDirClones(Txg txg) UZFS_REQUIRES(mu_);
  // Whether $ORIGIN's directory lists fewer clones than $ORIGIN@$ORIGIN
  // has children besides its head (a pool an earlier uzfs made).
  Result<bool> DirClonesMissing() UZFS_REQUIRES(mu_);
  // Every check of `zfs clone origin target` (pool_clone.cc): the
  // snapshot's object.
  Result<uint64_t> CheckClone(const std::string& origin, const std::string& target,
                              const std::vector<std::pair<std::string, std::string>>& props) UZFS_REQUIRES(mu_);
  Status DestroyDatasetSync(const std::string& name, Txg txg) UZFS_REQUIRES(mu_);
  // pool_async_destroy.cc: whether a destroy queues its tree; the queue's
  // new entry (the tree under bp born after birth, with the space it
  // holds, now charged to $FREE); one txg's share of the frees.
  Result<bool> AsyncDestroyEnabled() UZFS_REQUIRES(mu_);
  Status QueueDestroyedTree(const BlockPtr& bp, uint64_t birth, uint64_t used, uint64_t comp, uint64_t uncomp,
                            Txg txg) UZFS_REQUIRES(mu_);
  Status FreeQueuedTrees(Txg txg) UZFS_REQUIRES(mu_);
  // Whether the scan thread should bring txgs for the queue now: trees
  // queued, a pace above 0, background on, not waiting to retry a read.
  bool AsyncFreesDue() const;
  Result<uint64_t> SpecialDir(const char* name) UZFS_REQUIRES(mu_);
  Status CheckNoOwnSnapshotsLocked(const std::string& name) UZFS_REQUIRES(mu_);
  // Snapshots (pool_snapshot.cc). CheckNewSnapshot: every check of a new
  // snapshot fs@snap (file system, name free, deadlist format, space for a
  // refreservation; in the sync task of in_txg, also that fs has no other
  // snapshot of that txg and its objset names no intent log), changing
  // nothing but, in the task, opening fs.
  // TakeSnapshot: the snapshot's records, in the sync task of txg.
  Status CheckNewSnapshot(const std::string& fs, const std::string& snap, std::optional<Txg> in_txg)
      UZFS_REQUIRES(mu_);
  Status TakeSnapshot(const std::string& fs, const std::string& snap, Txg txg) UZFS_REQUIRES(mu_);
  // The head's deadlist after a snapshot takes its current one
  // (pool_deadlist.cc): a new bplist before version 26; from 26 a keyed
  // deadlist with the old one's keys and h.prev_snap_txg, each over an
  // empty bpobj.
  Result<uint64_t> NewHeadDeadlist(const DslDatasetPhys& h, Txg txg) UZFS_REQUIRES(mu_);
  // A keyed deadlist's entries (version 26 on): mintxg -> bpobj.
  Result<std::map<uint64_t, uint64_t>> DeadlistEntries(uint64_t dl_obj) UZFS_REQUIRES(mu_);
  // The bytes a deadlist (bplist, bpobj or keyed) holds, from its header.
  Result<uint64_t> DeadlistBytes(uint64_t dl_obj) UZFS_REQUIRES(mu_);
  // Each block into the entry of keyed deadlist dl_obj with the greatest
  // mintxg below its birth; the deadlist header's totals grow.
  Status DeadlistInsert(uint64_t dl_obj, std::span<const BlockPtr> bps, Txg txg) UZFS_REQUIRES(mu_);
  // A deadlist object and, when keyed, the bpobjs its entries name (the
  // shared empty bpobj: one reference dropped). The blocks listed are not
  // freed: the caller's snapshots or origin still hold them.
  Status FreeDeadlistObjects(uint64_t dl_obj, Txg txg) UZFS_REQUIRES(mu_);
  // Destroying snapshots (pool_snapshot_destroy.cc).
  struct Space3 {
    uint64_t used = 0, comp = 0, uncomp = 0;
  };
  struct SnapshotToDestroy {
    std::string fs, snap;
    uint64_t dir_obj = 0, obj = 0;
  };
  Result<SnapshotToDestroy> CheckSnapshotDestroy(const std::string& name) UZFS_REQUIRES(mu_);
  // Rollback (pool_rollback.cc): every check, then the change in txg.
  Result<SnapshotToDestroy> CheckRollback(const std::string& name, bool in_task) UZFS_REQUIRES(mu_);
  Status RollbackSync(const SnapshotToDestroy& t, Txg txg) UZFS_REQUIRES(mu_);
  // NotSupported "<refusal>the snapshot names an intent log ..." when
  // snapshot s's objset names one (pool_rollback.cc).
  Status CheckNoSnapshotLog(const DslDatasetPhys& s, const std::string& refusal) UZFS_REQUIRES(mu_);
  // Rollback keeping the later state (pool_rollback_keep.cc): every
  // check, then the change in the task of txg.
  struct KeepPlan;
  Result<std::string> PlanRollbackKeepLocked(const std::string& snapshot, const std::string& keep)
      UZFS_REQUIRES(mu_);
  Result<KeepPlan> CheckRollbackKeep(const std::string& name, const std::string& keep, bool in_task)
      UZFS_REQUIRES(mu_);
  Status RollbackKeepSync(const KeepPlan& plan, Txg txg) UZFS_REQUIRES(mu_);
  // A new keyed deadlist with these keys, each over an empty bpobj (the
  // shared one with empty_bpobj).
  Result<uint64_t> DeadlistWithKeys(const std::set<uint64_t>& keys, Txg txg) UZFS_REQUIRES(mu_);
  // "pool/a/b" of a DSL directory (a reverse walk of the child maps).
  Result<std::string> DirName(uint64_t dir_obj) UZFS_REQUIRES(mu_);
  // "fs@snap" of snapshot object obj.
  Result<std::string> SnapshotName(uint64_t obj) UZFS_REQUIRES(mu_);
  Status DestroySnapshotSync(const SnapshotToDestroy& t, Txg txg) UZFS_REQUIRES(mu_);
  // Every block pointer of a bplist/bpobj, its sub-objects' included.
  Result<std::vector<BlockPtr>> ReadBpobj(uint64_t obj, int depth = 0) UZFS_REQUIRES(mu_);
  // Frees a bpobj object and its sub-objects (not the blocks they list);
  // the shared empty bpobj: one reference dropped.
  Status FreeBpobjObject(uint64_t obj, Txg txg) UZFS_REQUIRES(mu_);
  Result<Space3> DeadlistRange(uint64_t dl_obj, uint64_t from, uint64_t to) UZFS_REQUIRES(mu_);
  Result<Space3> BplistBornIn(uint64_t obj, uint64_t after, uint64_t upto) UZFS_REQUIRES(mu_);
  Status AddDeadlistHeader(uint64_t dl_obj, int64_t used, int64_t comp, int64_t uncomp, Txg txg) UZFS_REQUIRES(mu_);
  Status AppendToDeadlistEntry(uint64_t dl_obj, uint64_t key, uint64_t bpobj, std::span<const BlockPtr> bps,
                               Txg txg) UZFS_REQUIRES(mu_);
  Status RemoveDeadlistKey(uint64_t dl_obj, uint64_t key, Txg txg) UZFS_REQUIRES(mu_);
  Status RemoveClonesKey(uint64_t dir_obj, uint64_t key, Txg txg) UZFS_REQUIRES(mu_);
  // Promotion (pool_promote.cc): what moves, checked; the change.
  struct PromotePlan;
  Result<PromotePlan> CheckPromote(const std::string& name) UZFS_REQUIRES(mu_);
  Status PromoteSync(const PromotePlan& plan, Txg txg) UZFS_REQUIRES(mu_);
  // The bytes of a deadlist (keyed, or a bplist before version 26) born
  // after txg `after`.
  Result<Space3> DeadBornAfter(uint64_t dl_obj, uint64_t after) UZFS_REQUIRES(mu_);
  // Snapshot "fs@snap"'s dataset object; NotFound "cannot open 'NAME':
  // dataset does not exist", InvalidArgument for a name without '@'.
  Result<uint64_t> LookupSnapshot(const std::string& name) UZFS_REQUIRES(mu_);
  // Deferred destroy (pool_snapshot_defer.cc): whether user holds or
  // clones keep snapshot obj; every check of DeferDestroySnapshots; the
  // destroy, in the task of txg, of a marked snapshot nothing keeps any
  // more (a release or a clone's destroy calls it; a snapshot being read
  // under .zfs stays marked).
  Result<bool> SnapshotPinned(uint64_t obj) UZFS_REQUIRES(mu_);
  Status CheckDeferDestroy(const std::vector<std::string>& names) UZFS_REQUIRES(mu_);
  // NotSupported when snapshot obj's or its file system's deadlist is in
  // a format uzfs does not convert (it could not be destroyed).
  Status CheckDestroyableDeadlists(const std::string& name, uint64_t obj) UZFS_REQUIRES(mu_);
  // The marked origin of file system `name`, if any ("" when none).
  std::string MarkedOriginOf(const std::string& name) UZFS_REQUIRES(mu_);
  Status DestroyIfDeferred(uint64_t obj, Txg txg) UZFS_REQUIRES(mu_);
  // Snapshot properties (pool_snapshot_props.cc): every check of setting
  // `props` on snapshot `name` (errors "<action> 'NAME': reason"); the
  // change to snapshot object obj; its props ZAP as text.
  Status CheckSnapshotProps(const std::string& name, const std::vector<std::pair<std::string, std::string>>& props,
                            const std::string& action) UZFS_REQUIRES(mu_);
  Status SetSnapshotPropsSync(uint64_t obj, const std::vector<std::pair<std::string, std::string>>& props, Txg txg)
      UZFS_REQUIRES(mu_);
  Result<std::map<std::string, std::string>> SnapshotLocalProps(const std::string& name) UZFS_REQUIRES(mu_);
  // A props ZAP's entries: strings as they are, numbers in decimal.
  Result<std::map<std::string, std::string>> PropsZapText(uint64_t zapobj) UZFS_REQUIRES(mu_);
  // Holds (pool_holds.cc): every check of placing (hold) or taking `tag`.
  Status CheckHoldChange(const std::vector<std::string>& snapshots, const std::string& tag, bool hold)
      UZFS_REQUIRES(mu_);
  Status ChangeHolds(const std::vector<std::string>& snapshots, const std::string& tag, bool hold)
      UZFS_EXCLUDES(mu_, sync_mu_);
  // Every check of a snapshot rename: the file systems whose snapshot is
  // renamed (pool_snapshot_rename.cc).
  Result<std::vector<std::string>> CheckSnapshotRename(const std::string& from, const std::string& to,
                                                       bool recursive) UZFS_REQUIRES(mu_);
  // One reference to the pool's shared empty bpobj given up (its object
  // freed with the last).
  Status DropEmptyBpobjRef(Txg txg) UZFS_REQUIRES(mu_);
  Status RenameDatasetSync(const std::string& from, const std::string& to, Txg txg)
      UZFS_REQUIRES(mu_);
  Result<uint64_t> LookupDir(const std::string& name) UZFS_REQUIRES(mu_);
  Result<Dataset*> HoldDataset(const std::string& name) UZFS_REQUIRES(mu_);
  // Space accounting (ZFS's dsl_dir_diduse_space): dir's used_bytes
  // changes by the sum of `parts`, its used_breakdown by each part; each
  // ancestor by the change of its child's max(used_bytes, reserved), the
  // child's own change as CHILD and the rest as CHILD_RSRV.
  Status DirUse(uint64_t dir_obj, std::array<int64_t, kDdUsedCount> parts, int64_t comp, int64_t uncomp,
                Txg txg) UZFS_REQUIRES(mu_);
  // DirUse with the whole `used` in breakdown entry `which`.
  Status ChargeDirs(uint64_t dir_obj, int64_t used, int64_t comp, int64_t uncomp, int which,
                    Txg txg) UZFS_REQUIRES(mu_);
  // Reservations (pool_dsl_dirs.cc). DirSpaceAvailableLocked: pool_space.h's
  // DirSpaceAvailable for a directory; RefReservationOf: the dataset's
  // refreservation from its props ZAP (0 when unset). Check*: ZFS's set
  // checks, NoSpace(refusal) when the value does not fit, nothing changed.
  // Set*: the value into the DSL records and the accounting (reservation:
  // dd_reserved and the parent's CHILD_RSRV; refreservation: the dir's
  // REFRSRV); the props ZAP entry is the caller's.
  Result<uint64_t> DirSpaceAvailableLocked(uint64_t dir_obj) UZFS_REQUIRES(mu_);
  // NoSpace(refusal) when `bytes` moving from directory from_dir to
  // to_dir would exceed a quota on to_dir or an ancestor of it below the
  // directory the two share (promote, rollback -k).
  Status CheckQuotasForMove(uint64_t to_dir, uint64_t from_dir, uint64_t bytes, const std::string& refusal)
      UZFS_REQUIRES(mu_);
  Result<uint64_t> RefReservationOf(const DslDirPhys& d) UZFS_REQUIRES(mu_);
  Status CheckReservation(uint64_t dir_obj, uint64_t value, const std::string& refusal) UZFS_REQUIRES(mu_);
  Status CheckRefReservation(uint64_t dir_obj, uint64_t value, const std::string& refusal) UZFS_REQUIRES(mu_);
  Status SetReservation(uint64_t dir_obj, uint64_t value, Txg txg) UZFS_REQUIRES(mu_);
  Status SetRefReservation(uint64_t dir_obj, uint64_t old_value, uint64_t value, Txg txg) UZFS_REQUIRES(mu_);
  Status SetPropSync(const std::string& ds, const std::string& prop,
                     const std::optional<std::string>& value, Txg txg) UZFS_REQUIRES(mu_);
  ObjsetWriterOptions DatasetOptions(uint64_t dir_obj) UZFS_REQUIRES(mu_);
  // DatasetOptions for a head's writer, with the free hook that puts a
  // block its newest snapshot still holds on ds.dead instead of freeing it.
  ObjsetWriterOptions HeadOptions(Dataset& ds) UZFS_REQUIRES(mu_);
  // Pushes the effective primarycache of every open dataset into its writer.
  void RefreshCachePolicies() UZFS_REQUIRES(mu_);
  void RefreshDataProps(Txg txg) UZFS_REQUIRES(mu_);
  // Allocated bytes as charged to datasets (deflated for raidz). With
  // top-level vdevs of different ratios the smallest is used (ZFS charges
  // each DVA at its own vdev's ratio; the sync stats carry only totals).
  uint64_t Deflate(uint64_t asize) const;

  // Configuration and devices.
  PoolIdentity ident_;
  std::atomic<uint32_t> last_sync_passes_{0};  // SyncPasses' count, for the txg probes
  bool readonly_ = false;
  std::unique_ptr<IoEngine> io_;
  std::unique_ptr<Vdev> root_;
  VdevNode tree_;                      // config view (guids, ids, metaslab arrays)
  std::vector<VdevNode> spares_, cache_;
  // Positions of resumable receives, by dataset and txg, until that txg's
  // sync writes them (NoteReceiveProgress). Leaf lock.
  struct ReceiveNote {
    uint64_t object = 0, offset = 0, bytes = 0;
  };
  // The datasets receives are writing now (BeginReceive to EndReceive,
  // AbortReceive or KeepReceive): a kept receive among them is not
  // resumed, discarded or destroyed by anyone else.
  std::set<std::string> receiving_ UZFS_GUARDED_BY(mu_);
  Mutex resume_mu_;
  std::map<std::string, std::map<uint64_t, ReceiveNote>> receive_notes_ UZFS_GUARDED_BY(resume_mu_);
  mutable Mutex cache_mu_;  // leaf lock (never held with mu_)
  std::vector<CacheDev> cache_devs_ UZFS_GUARDED_BY(cache_mu_);
  L2Arc* l2arc_ UZFS_GUARDED_BY(cache_mu_) = nullptr;
  bool cache_injectable_ UZFS_GUARDED_BY(cache_mu_) = false;
  std::unique_ptr<Allocator> alloc_;
  std::unique_ptr<SpaAllocator> spa_alloc_;
  // The log class (pool_zil.cc): the metaslabs of the log top-level vdevs,
  // with their own space maps; empty without log vdevs. Only log blocks.
  // One allocator per log vdev (striping and evacuation per vdev), those
  // added at run time included (AddLogClassVdev); never destroyed before
  // the pool.
  std::vector<std::unique_ptr<Allocator>> log_allocs_ UZFS_GUARDED_BY(mu_);
  std::map<uint32_t, Allocator*> log_class_ UZFS_GUARDED_BY(mu_);  // top id -> its allocator
  // Allocators of removed log vdevs: out of the class and of every sync,
  // alive while an intent log started before the removal may name them.
  std::vector<std::unique_ptr<Allocator>> retired_log_allocs_ UZFS_GUARDED_BY(mu_);
  std::unique_ptr<VdevTreeTarget> target_;
  std::unique_ptr<Zio> zio_;
  Arc* arc_ = nullptr;                      // not owned; may be null
  std::unique_ptr<BlockReader> block_reader_;  // datasets' reads (the ARC); null: uncached
  // The MOS's reads: through block_reader_ for blocks of synced txgs (its
  // sync passes rewrite younger ones in place); null without an ARC.
  std::unique_ptr<SettledBlockReader> mos_reader_;
  FilesystemInit fs_init_;
  std::unique_ptr<TxgEngine> txg_;   // null for read-only pools
  uint64_t deflate_ratio_ = 512;
  uint64_t import_txg_ = 0;

  mutable Mutex sync_mu_;  // taken before mu_
  mutable Mutex mu_;
  std::unique_ptr<ObjsetWriter> mos_ UZFS_GUARDED_BY(mu_);
  // Snapshots opened by OpenSnapshot: dataset object -> pointers alive.
  std::map<uint64_t, int> open_snapshots_ UZFS_GUARDED_BY(mu_);
  // Asks the releasers to let go of those of `names` that are open.
  void ReleaseOpenSnapshots(const std::vector<std::string>& names) UZFS_EXCLUDES(mu_, releasers_mu_);
  Mutex releasers_mu_;  // taken before mu_, never while mu_ is held
  std::map<uint64_t, SnapshotReleaser> releasers_ UZFS_GUARDED_BY(releasers_mu_);
  uint64_t next_releaser_ UZFS_GUARDED_BY(releasers_mu_) = 1;
  std::unique_ptr<DmuSpaceMapProvider> maps_ UZFS_GUARDED_BY(mu_);
  Uberblock ub_ UZFS_GUARDED_BY(mu_);
  Txg open_txg_ UZFS_GUARDED_BY(mu_);
  bool config_dirty_ UZFS_GUARDED_BY(mu_) = false;
  // The config this txg wrote, for config_listener_ once the txg is on disk.
  std::optional<NvList> config_written_ UZFS_GUARDED_BY(mu_);
  std::function<void(const NvList&)> config_listener_ UZFS_GUARDED_BY(mu_);
  bool labels_dirty_ UZFS_GUARDED_BY(mu_) = false;
  Status failed_ UZFS_GUARDED_BY(mu_) = Status::Ok();  // a sync failed: suspended
  bool closed_ UZFS_GUARDED_BY(mu_) = true;  // until Create/Import finish
  uint64_t label_state_ UZFS_GUARDED_BY(mu_) = kPoolStateActive;
  struct PendingTask {
    SyncTask fn;
    std::shared_ptr<Status> result;
    // Runs after the datasets' sync of its txg (a snapshot must hold what
    // that txg wrote), not before it.
    bool after_datasets = false;
    // The txg open when it was queued: it runs in the sync of that txg or
    // a later one, never of an older one still syncing (whose data would
    // miss what the caller wrote before it asked).
    uint64_t min_txg = 0;
  };
  std::vector<PendingTask> tasks_ UZFS_GUARDED_BY(mu_);
  std::vector<std::string> history_ UZFS_GUARDED_BY(mu_);
  // Top-level vdevs a RemoveVdev task replaced by holes, closed by it after
  // the txg synced.
  std::vector<std::unique_ptr<Vdev>> retired_vdevs_ UZFS_GUARDED_BY(mu_);
  // Vdevs a replace, attach or detach took out of the tree: kept until the
  // pool closes (a read in flight may still be in one; a retired replacing
  // vdev still points at the leaf that took its place).
  std::vector<std::unique_ptr<Vdev>> swapped_vdevs_ UZFS_GUARDED_BY(mu_);
  // Resilvers begun so far, and for each stale leaf (guid) the first whose
  // end makes it whole.
  uint64_t resilver_epoch_ UZFS_GUARDED_BY(mu_) = 0;
  // A resilver import found needed while a scrub ran, or beyond the txgs
  // the resilver it resumed covers: it starts (from this txg) when that
  // scan ends. UINT64_MAX: none.
  uint64_t resilver_deferred_from_ UZFS_GUARDED_BY(mu_) = UINT64_MAX;
  // Per leaf guid: when its error window began and its errors then.
  struct FaultWindow {
    std::chrono::steady_clock::time_point start;
    uint64_t errors_at_start = 0;
  };
  std::map<uint64_t, FaultWindow> fault_windows_ UZFS_GUARDED_BY(mu_);
  std::set<uint64_t> spare_failed_ UZFS_GUARDED_BY(mu_);  // spares that would not open
  // Spares given back after use in this import, still open (by guid).
  std::map<uint64_t, std::unique_ptr<Vdev>> idle_spares_ UZFS_GUARDED_BY(mu_);
  // Spares given back to the list whose labels still say they are in the
  // tree: rewritten as spare labels once a txg without them is on disk.
  std::vector<uint64_t> spare_labels_due_ UZFS_GUARDED_BY(mu_);
  // Detached leaves whose labels DetachDevice wipes after the commit:
  // AfterCommit leaves their locks to it.
  std::vector<Vdev*> locked_until_wiped_ UZFS_GUARDED_BY(mu_);
  // WriteUberblock wrote labels: AfterCommit looks at what left the tree.
  bool tree_left_due_ UZFS_GUARDED_BY(mu_) = false;
  std::map<uint64_t, uint64_t> stale_epoch_ UZFS_GUARDED_BY(mu_);
  // Leaf guid -> the first txg it missed (offline, or gone): where the
  // resilver of its return starts.
  std::map<uint64_t, uint64_t> missed_from_ UZFS_GUARDED_BY(mu_);
  // Leaf guid -> the txgs a stale leaf misses until a resilver makes it
  // whole (its DTL while it serves again).
  std::map<uint64_t, TxgSpan> stale_span_ UZFS_GUARDED_BY(mu_);
  // Leaf guid -> its DTL map object and what the map holds as synced.
  struct DtlOnDisk {
    uint64_t object = 0;
    std::vector<TxgSpan> spans;
    bool unreadable = false;  // rewritten at the next sync
  };
  std::map<uint64_t, DtlOnDisk> dtl_on_disk_ UZFS_GUARDED_BY(mu_);
  // MOS objects.
  uint64_t config_obj_ UZFS_GUARDED_BY(mu_) = 0;
  uint64_t sync_bplist_obj_ UZFS_GUARDED_BY(mu_) = 0;
  // Frees of blocks born before the syncing txg, made by MOS sync passes
  // after the first: they go on the deferred-free list (sync_bplist) and
  // are freed at the start of the next txg, so a late pass never dirties
  // another space map (which would keep the passes from converging).
  std::vector<BlockPtr> deferred_frees_ UZFS_GUARDED_BY(mu_);
  uint64_t history_obj_ UZFS_GUARDED_BY(mu_) = 0;
  // When each leaf's labels were last checked (CheckLeaves), by guid.
  std::map<uint64_t, std::chrono::steady_clock::time_point> label_checked_ UZFS_GUARDED_BY(mu_);
  std::chrono::seconds label_check_interval_ UZFS_GUARDED_BY(mu_){60};
  // The trim (pool_trim.cc). Lock order: trim_thread_mu_, sync_mu_, mu_,
  // trim_mu_.
  void StopTrimThread() UZFS_EXCLUDES(trim_mu_, trim_thread_mu_);
  void TrimThreadMain() UZFS_EXCLUDES(mu_, sync_mu_, trim_mu_);
  // Turns autotrim on or off (allocators, thread).
  void SetAutotrim(bool on) UZFS_EXCLUDES(mu_, sync_mu_, trim_mu_, trim_thread_mu_);
  // Starts the trim thread unless it runs (trim_busy_ was false and is now
  // set by the caller).
  void StartTrimThread() UZFS_EXCLUDES(trim_mu_, trim_thread_mu_);
  // Whether top-level vdev `top_id` is still `top` with allocator `alloc`
  // (checked under sync_mu_ before each batch: a removed log vdev's place
  // holds a hole, and its allocator is retired).
  bool StillTrimmable(uint32_t top_id, const Vdev* top, const Allocator* alloc)
      UZFS_REQUIRES(sync_mu_) UZFS_EXCLUDES(mu_);
  // One autotrim pass over every top-level vdev.
  void AutotrimPass() UZFS_EXCLUDES(mu_, sync_mu_, trim_mu_);
  // The allocator of top-level vdev `top_id` (the log class's for a log
  // vdev), nullptr for a hole or an unknown id.
  Allocator* TrimAllocator(uint32_t top_id, Vdev** top) UZFS_EXCLUDES(mu_);
  // One pass over top-level vdev `top_id` for the leaves `guids`.
  void TrimTopLevel(uint32_t top_id, const std::set<uint64_t>& guids) UZFS_EXCLUDES(mu_, sync_mu_, trim_mu_);
  Mutex trim_thread_mu_;  // held while the thread is started or joined
  std::thread trim_thread_ UZFS_GUARDED_BY(trim_thread_mu_);
  mutable Mutex trim_mu_;
  CondVar trim_cv_;
  std::map<uint64_t, TrimProgress> trim_ UZFS_GUARDED_BY(trim_mu_);
  uint64_t trim_rate_ UZFS_GUARDED_BY(trim_mu_) = 0;
  bool trim_stop_ UZFS_GUARDED_BY(trim_mu_) = false;
  bool trim_busy_ UZFS_GUARDED_BY(trim_mu_) = false;  // the thread works or is about to
  std::atomic<bool> autotrim_on_{false};
  std::atomic<uint64_t> autotrimmed_bytes_{0};
  std::set<uint64_t> autotrim_unsupported_ UZFS_GUARDED_BY(trim_mu_);  // leaves that cannot discard
  // Leaves started since the trim thread's round began (not yet looked for).
  std::set<uint64_t> trim_started_ UZFS_GUARDED_BY(trim_mu_);
  // The scrub (pool_scan.cc). Lock order: sync_mu_, mu_, scan_mu_.
  void StartScanThread() UZFS_EXCLUDES(scan_mu_);
  void StopScanThread() UZFS_EXCLUDES(scan_mu_);
  void ScanThreadMain() UZFS_EXCLUDES(mu_, sync_mu_, scan_mu_);
  // One slice of the walk (takes sync_mu_); true when the scrub finished.
  Result<bool> ScanSlice() UZFS_EXCLUDES(mu_, sync_mu_, scan_mu_);
  // Reads "scan" from the pool directory (import).
  void LoadScanState() UZFS_REQUIRES(mu_) UZFS_EXCLUDES(scan_mu_);
  // Import: leaves the config says are offline go offline; the new members
  // of replacing vdevs and leaves whose newest uberblock is older than the
  // pool's are stale, and a resilver runs when any is.
  // (A read-only import marks them stale and starts nothing.)
  void ApplyDeviceStates(const std::map<uint64_t, uint64_t>& leaf_ub_txg) UZFS_REQUIRES(mu_)
      UZFS_EXCLUDES(scan_mu_);
  // A resilver of the blocks born from `min_txg` on starts, or one running
  // starts over covering them too.
  Status BeginResilver(uint64_t min_txg) UZFS_EXCLUDES(mu_, sync_mu_, scan_mu_);
  // The resilver of `epoch` finished whole (in the slice, sync_mu_ held),
  // unless the record changed since generation `generation`: the leaves
  // made stale before it began are whole again (if usable and no write to
  // them failed since) and replacing vdevs give way to their new disk.
  void FinishResilver(uint64_t epoch, uint64_t generation) UZFS_REQUIRES(sync_mu_) UZFS_EXCLUDES(mu_, scan_mu_);
  // InvalidArgument "QUOTED PATH is part of active pool 'P'" when a leaf
  // other than `except`, a spare or a cache device of this pool is at path.
  Status CheckPathUnused(const std::string& quoted, const std::string& path, const Vdev* except) UZFS_REQUIRES(mu_);
  // From the sync thread (mu_ held): a resilver of the blocks born from
  // min_txg on starts, or the running one starts over covering them too.
  void RestartResilverInSync(uint64_t min_txg) UZFS_REQUIRES(mu_) UZFS_EXCLUDES(scan_mu_);
  // Marks a leaf stale until a resilver begun after now finishes; it
  // misses the txgs from `from` (0: all) to the last synced one.
  void MarkStale(Vdev* leaf, uint64_t from = 0) UZFS_REQUIRES(mu_);
  // DTLs (pool_dtl.cc). Import: reads each leaf's DTL map into
  // dtl_on_disk_ (a map that cannot be read counts as "misses all").
  void LoadDtls() UZFS_REQUIRES(mu_);
  // Each txg, before the config is written: every leaf's DTL map says what
  // it misses now (offline or gone: from missed_from_ through `txg`;
  // stale: its stale_span_), rewritten only when that changed; a leaf
  // gets its map (and the "DTL" config entry) the first time it misses
  // something; maps of leaves no longer in the tree are freed.
  Status SyncDtls(Txg txg) UZFS_REQUIRES(mu_);
  // The txgs `leaf` misses in the txg `txg` being synced (none, or one span).
  std::vector<TxgSpan> DtlWanted(Vdev* leaf, Txg txg) UZFS_REQUIRES(mu_);
  // A resilver of the blocks born from min_txg on, starting (or starting
  // over, covering what the running one covered too) in *s; `synced` the
  // last synced txg, `allocated` the pool's allocated bytes. Takes no lock.
  static void SetResilverRecord(ScanPhys* s, uint64_t min_txg, uint64_t synced, uint64_t allocated);
  // Each txg: leaves a write did not reach are stale; a resilver starts.
  void NoteMissedWrites() UZFS_REQUIRES(mu_) UZFS_EXCLUDES(scan_mu_);
  // Each txg (pool_spares.cc): leaves with too many recent I/O errors are
  // faulted; failed leaves of mirrors and raidz get an available hot spare.
  void CheckFaults() UZFS_REQUIRES(mu_);
  void ActivateSpares() UZFS_REQUIRES(mu_) UZFS_EXCLUDES(scan_mu_);
  // autoreplace=on: a failed leaf whose path holds a new, blank device is
  // replaced by it (ReplaceDevice with the same path). Run by the scan
  // thread every few seconds; takes the locks it needs itself.
  void AutoReplace() UZFS_EXCLUDES(mu_, sync_mu_, scan_mu_);
  // Whether a leaf at `path` is in the tree (a spare in use).
  bool SpareInUse(const std::string& path) UZFS_REQUIRES(mu_);
  // One line to the daemon's log (SetEventLog), if any.
  void LogEvent(const std::string& line) UZFS_EXCLUDES(errlog_mu_);
  // The leaf named `dev` (path or guid) and its config node; null if none.
  Vdev* FindLeaf(const std::string& dev) UZFS_REQUIRES(mu_);
  // The scan record into the MOS when it changed (each txg sync).
  Status WriteScanState(Txg txg) UZFS_REQUIRES(mu_) UZFS_EXCLUDES(scan_mu_);
  // Changes the record with fn under scan_mu_ and waits for it to be synced.
  // Posts `event` once the change is made.
  Status ChangeScan(const std::function<Status(ScanPhys&)>& fn, const std::string& event)
      UZFS_EXCLUDES(mu_, sync_mu_, scan_mu_, errlog_mu_);
  mutable Mutex scan_mu_;
  CondVar scan_cv_;
  ScanPhys scan_ UZFS_GUARDED_BY(scan_mu_);
  bool scan_dirty_ UZFS_GUARDED_BY(scan_mu_) = false;
  // For the error log's next sync: a scrub began (its log starts empty) /
  // finished (its log becomes the pool's list of damaged blocks).
  bool errlog_scrub_started_ UZFS_GUARDED_BY(scan_mu_) = false;
  bool errlog_scrub_finished_ UZFS_GUARDED_BY(scan_mu_) = false;
  bool scan_stop_ UZFS_GUARDED_BY(scan_mu_) = false;
  uint64_t scan_pass_start_ UZFS_GUARDED_BY(scan_mu_) = 0;
  uint64_t scan_pass_examined_ UZFS_GUARDED_BY(scan_mu_) = 0;
  // Changes with every start, pause, resume and cancel: a slice that began
  // before one does not store its place into what followed.
  uint64_t scan_generation_ UZFS_GUARDED_BY(scan_mu_) = 0;
  std::chrono::milliseconds scan_slice_ UZFS_GUARDED_BY(scan_mu_){50};
  std::chrono::milliseconds scan_slice_max_ UZFS_GUARDED_BY(scan_mu_){1000};
  // Txg syncs waiting for sync_mu_ (SyncTxg): a scan slice past its
  // minimum length ends for them.
  std::atomic<int> sync_waiting_{0};
  size_t scan_window_blocks_ UZFS_GUARDED_BY(scan_mu_) = 0;  // 0: kScanQueueBlocks
  std::function<void()> scan_window_hook_ UZFS_GUARDED_BY(scan_mu_);
  bool scan_window_sorted_ = false;  // the scan thread's: ScanSlice sorted a window
  std::atomic<bool> scan_interrupt_{false};  // a slice stops at its next block
  std::unique_ptr<ThreadPool> scan_workers_;  // scrubs batches of data blocks in parallel
  // What the scan counts of one scrubbed block (pool_scan.cc).
  using ScanAccount =
      std::function<void(const BlockPtr&, const DataErrorBookmark&, Status, const ScrubResult&)>;
  struct ScanTally;
  void GatherWindow(ScanQueue& q, const ScanPhys& st, const BlockPtr& mos_root, const std::function<bool()>& stop,
                    const ScanAccount& account, ScanTally* tally) UZFS_REQUIRES(sync_mu_);
  void IssueWindow(ScanQueue& q, const std::function<bool()>& stop, const ScanAccount& account, ScanTally* tally)
      UZFS_REQUIRES(sync_mu_) UZFS_EXCLUDES(scan_freed_mu_);
  std::optional<ScanQueue> scan_queue_;  // the scan thread's alone
  // Each freed DVA while a window is queued (the spa allocator reports
  // it): a freed block is not read, as its space may have been reused.
  void NoteScanFree(const Dva& dva) UZFS_EXCLUDES(scan_freed_mu_);
  std::atomic<bool> scan_watch_frees_{false};
  // Async destroy: trees are queued (set at import and by a destroy,
  // cleared when the queue is freed); blocks one txg may free.
  std::atomic<bool> async_queued_{false};
  std::atomic<uint64_t> async_pace_{UINT64_MAX};
  std::atomic<bool> async_background_{true};
  // Steady-clock nanoseconds before which stuck frees are not tried again.
  std::atomic<int64_t> async_retry_at_{0};
  Mutex scan_freed_mu_;
  std::set<std::pair<uint32_t, uint64_t>> scan_freed_ UZFS_GUARDED_BY(scan_freed_mu_);
  std::thread scan_thread_;
  uint64_t errlog_last_obj_ UZFS_GUARDED_BY(mu_) = 0;
  uint64_t errlog_scrub_obj_ UZFS_GUARDED_BY(mu_) = 0;
  // Leaf lock: taken alone, from reading threads that may hold any other.
  mutable Mutex errlog_mu_;
  std::set<DataErrorBookmark> errlog_pending_ UZFS_GUARDED_BY(errlog_mu_);  // not in the MOS yet
  std::set<DataErrorBookmark> errlog_reported_ UZFS_GUARDED_BY(errlog_mu_);  // logged as events
  std::function<void(const std::string&)> event_log_ UZFS_GUARDED_BY(errlog_mu_);
  std::deque<Event> events_ UZFS_GUARDED_BY(errlog_mu_);
  uint64_t next_eid_ UZFS_GUARDED_BY(errlog_mu_) = 1;
  uint64_t root_dir_obj_ UZFS_GUARDED_BY(mu_) = 0;
  uint64_t mos_dir_obj_ UZFS_GUARDED_BY(mu_) = 0;
  uint64_t origin_snap_obj_ UZFS_GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> feature_gen_{0};  // EnableFeature calls
  std::map<std::string, std::unique_ptr<Dataset>> datasets_ UZFS_GUARDED_BY(mu_);
  // Log devices log blocks must not go to (evacuated for removal), and
  // whether a log write to the log class failed (new logs use the main
  // pool until the next import).
  std::set<uint32_t> zil_avoid_ UZFS_GUARDED_BY(mu_);
  bool drop_intent_logs_ = false;  // set by TakeMissingTops (import -m)
  std::atomic<uint64_t> zil_gen_{0};
  // File systems being snapshotted: their intent log stays closed
  // (ZilStart refuses with Busy; the ZPL waits for txg syncs instead).
  std::map<std::string, int> zil_suspended_ UZFS_GUARDED_BY(mu_);
  std::atomic<uint64_t> zil_main_bytes_{0};
  bool zil_log_class_failed_ UZFS_GUARDED_BY(mu_) = false;
};

}  // namespace uzfs
