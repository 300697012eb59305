// ZplFsImpl: the one implementation of ZplFs (zpl_fs.h), and what the files
// that define it share. Internal to zfs/zpl: only zpl_*.cc include it.
//
// The class is written in one file per concern, each with its own design
// comment:
//   zpl_fs.cc      construction, mount and unmount, the whole file system
//                  (statfs, syncfs, properties re-read)
//   zpl_names.cc   names and directories: lookup, create, mknod, mkdir,
//                  symlink, link, unlink, rmdir, rename, readdir, and the
//                  directory ZAP calls under them
//   zpl_data.cc    file data: read, write, truncate, fallocate, fsync, lseek
//   zpl_xattr.cc   extended attributes (SA and xattr directory)
//   zpl_access.cc  attributes, permissions, properties and the space check
//   zpl_znode.cc   znodes (load, store, create, free) and open handles
//   zpl_fs_log.cc  the intent log: records of changes, commits, replay hooks
// This header holds the class, its members and the helpers more than one
// of them needs (status macros, limits, mode tests, clock).
//
// Design. One ZplFsImpl per mounted dataset over the dataset's ObjsetWriter.
// The file system's lock `mu_` is a readers-writer lock. Namespace and
// attribute changes (create, rename, link, unlink, setattr, xattrs, open
// and release, ...) hold it alone (WriterLock): then Pool::Begin, change
// the objects in that one txg, and commit; an operation is never split
// across txgs, and since txgs are handed out in increasing order under the
// lock, a block is never changed in an older txg after a newer one
// (ObjsetWriter's rule).
// The data path (read, fsync, lseek, getattr, and write with
// zpl_parallel_writes) holds mu_ shared, so reads and writes of different
// files, and of disjoint blocks of one file, run at the same time,
// including their copies into the dirty records and the log (without
// zpl_parallel_writes, the default on fewer than 4 CPUs, a write holds mu_
// alone: on 2 CPUs parallel writers contended more than they gained). What
// keeps shared holders apart:
//   - a write holds its blocks of the file (ZplRangeLocks, zpl_range_lock.h)
//     from before its transaction begins to after it commits, so writers of
//     one block take txgs in order; a write that may change the block size
//     (a one-block file growing) or appends holds the whole file;
//   - a znode changed under the shared lock (size, times) is loaded,
//     changed and stored holding znode_mu_, never across a Begin, so each
//     store starts from the newest state (a bonus stored in an older txg
//     also applies to the newer ones: ObjsetWriter);
//   - the space check's cached figures are under space_mu_; the log's
//     queue is ZilWriter's own.
// Waiting in Begin (the write throttle) with mu_ held, in either mode, is
// safe: the sync thread never takes mu_, and no thread that holds a Tx
// waits for mu_, a range or anything held across a Begin (znode_mu_ and
// space_mu_ never are). Lock order: mu_ -> range -> znode_mu_/space_mu_.
//
// Znodes are not cached: each operation decodes the bonus of the objects
// it touches (ObjsetWriter keeps dirty dnodes in memory), changes them and
// stores them (Load, Store: zpl_znode.cc). Directory ZAPs are cached
// (ZplDirs, zpl_dir.h) because a micro ZAP's next-fit position lives in
// its writer, as in ZFS.
#pragma once

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_space.h"
#include "zfs/util/mutex.h"
#include "zfs/util/txg_number.h"
#include "zfs/zap/zap_writer.h"
#include "zfs/zil/zil_writer.h"
#include "zfs/zpl/sa_codec.h"
#include "zfs/zpl/zpl_dir.h"
#include "zfs/zpl/zpl_fs.h"
#include "zfs/zpl/zpl_log.h"
#include "zfs/zpl/zpl_mount_set.h"
#include "zfs/zpl/zpl_prefetch.h"
#include "zfs/zpl/zpl_range_lock.h"
#include "zfs/zpl/zpl_xattr_sa.h"

// Early returns of ZplStatus/ZplResult from a function returning either.
#define ZPL_TRY(expr)                  \
  do {                                 \
    ZplStatus zpl_s_ = (expr);         \
    if (!zpl_s_.ok()) return zpl_s_;   \
  } while (0)
#define ZPL_TRY_S(expr)                                    \
  do {                                                     \
    const Status zpl_st_ = (expr);                         \
    if (!zpl_st_.ok()) return ZplStatus::FromStatus(zpl_st_); \
  } while (0)
#define ZPL_CONCAT_(a, b) a##b
#define ZPL_CONCAT(a, b) ZPL_CONCAT_(a, b)
// lhs = value of a Result<T> (Status errors mapped).
#define ZPL_ASSIGN_S(lhs, expr) ZPL_ASSIGN_S_(ZPL_CONCAT(zpl_r_, __LINE__), lhs, expr)
#define ZPL_ASSIGN_S_(tmp, lhs, expr)                             \
  auto tmp = (expr);                                              \
  if (!tmp.ok()) return ZplStatus::FromStatus(tmp.status());      \
  lhs = std::move(*tmp)
// lhs = value of a ZplResult<T>.
#define ZPL_ASSIGN(lhs, expr) ZPL_ASSIGN_(ZPL_CONCAT(zpl_z_, __LINE__), lhs, expr)
#define ZPL_ASSIGN_(tmp, lhs, expr)       \
  auto tmp = (expr);                      \
  if (!tmp.ok()) return tmp.status();     \
  lhs = std::move(*tmp)

namespace uzfs::zpl_impl {

inline ZplStatus Err(int e, std::string msg) { return ZplStatus(e, std::move(msg)); }

inline constexpr uint64_t kSIfMt = S_IFMT;
inline constexpr size_t kNameMax = 255;
inline constexpr uint64_t kMaxFileSize = uint64_t{1} << 62;
inline constexpr uint64_t kZnodeFlagXattr = 0x1;       // ZFS_XATTR: xattr dirs and their files
inline constexpr uint64_t kMetaTxBytes = 16 * 1024;    // estimate of a metadata-only change
// What a committed change counts as dirty data (Tx::Commit(actual)): the
// estimates above are worst cases for the space check and the throttle's
// first guess; counting them as dirty closed a txg every ~16 small files
// (the dirty trigger is a share of dirty_max). A metadata change dirties a
// dnode and a directory block or two; a write its data blocks.
inline constexpr uint64_t kMetaDirtyBytes = 2048;
// What a write changed: its bytes, as OpenZFS counts them, in 4 KiB pages.
// This is what closes a txg (Tx::Commit(dirty, changed)): scattered small
// writes into a file share one txg, which writes each record once however
// often it was written. (The size and times a write changes sit in a dnode
// that the file's first write in the txg already dirtied.)
inline uint64_t WriteChangedBytes(uint64_t len) { return ((len + 4095) / 4096) * 4096; }
// What a write counts as dirty, for the throttle and the memory trigger.
// `held`: the record buffers the write newly dirtied (a 4 KiB write into
// a 128 KiB record holds the whole record until its txg syncs). At least
// half of what it holds, so memory for dirty buffers stays within 2 x
// dirty_max; a write into records already dirty in its txg holds no new
// memory and adds no work to the sync, so it counts its metadata only.
inline uint64_t WriteDirtyBytes(uint64_t len, uint64_t held) {
  return held == 0 ? kMetaDirtyBytes : std::max(WriteChangedBytes(len) + kMetaDirtyBytes, held / 2);
}

inline bool IsDir(uint64_t mode) { return (mode & kSIfMt) == S_IFDIR; }
inline bool IsReg(uint64_t mode) { return (mode & kSIfMt) == S_IFREG; }
inline bool IsLnk(uint64_t mode) { return (mode & kSIfMt) == S_IFLNK; }
// The directory entry of object `obj` of `mode`.
inline uint64_t DirentOf(uint64_t mode, uint64_t obj) { return DirentMake(DirentTypeOfMode(mode), obj); }

inline ZplTimespec Now() {
  struct timespec ts {};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ZplTimespec{static_cast<uint64_t>(ts.tv_sec), static_cast<uint64_t>(ts.tv_nsec)};
}
inline uint64_t RoundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

struct Znode {
  uint64_t obj = 0;
  Dnode dn;
  ZnodeAttrs a;
};

struct Handle {
  uint64_t ino = 0;
  int flags = 0;
  uint64_t type = 0;  // the file's S_IFMT bits (they never change)
};

class ZplFsImpl final : public ZplFs, private ZplReplayHooks {
 public:
  // ---- zpl_fs.cc: construction, mount, unmount, the whole file system
  // Mounts `dataset` in opts.mount_set (or the default set): ZplFs::Mount.
  static ZplResult<std::unique_ptr<ZplFs>> MountDataset(Pool& pool, const std::string& dataset,
                                                        const ZplMountOptions& opts);
  // ZplFs::MountSnapshot: `os` (from Pool::OpenSnapshot) is kept alive by
  // the mount.
  static ZplResult<std::unique_ptr<ZplFs>> MountSnapshotObjset(Pool& pool, const std::string& snapshot,
                                                               std::shared_ptr<ObjsetWriter> os,
                                                               const ZplMountOptions& opts);
  ZplFsImpl(Pool& pool, std::string ds, ObjsetWriter* os, const Tunables* tunables, ZplMountSet& mounts);
  static uint64_t SyncedCacheBytes(const Tunables* t);
  static uint64_t ImmediateWriteSize(const Tunables* t);
  static uint64_t DirCacheBytes(const Tunables* t);
  static bool ParallelWrites(const Tunables* t);
  // For the mount set's cache sharing (ZplMountSet), which only calls the
  // thread-safe set_cache_bytes through it.
  ZplDirs* dirs() UZFS_NO_THREAD_SAFETY_ANALYSIS { return &dirs_; }
  ~ZplFsImpl() override;

  ZplStatus Init(const ZplMountOptions& opts) UZFS_EXCLUDES(mu_);
  ZplStatus ReplayLog() UZFS_EXCLUDES(mu_);
  ZplStatus Unmount() override UZFS_EXCLUDES(mu_);
  void Abandon() override UZFS_EXCLUDES(mu_);
  uint64_t root_ino() const override { return root_; }
  bool loose_names() const override { return loose_names_.load(); }
  uint64_t zpl_version() const override { return version_; }
  bool readonly() const override UZFS_EXCLUDES(mu_);
  ZplStatus RefreshProps() override UZFS_EXCLUDES(mu_);
  ZplResult<struct statvfs> StatFs() override UZFS_EXCLUDES(mu_);
  ZplStatus SyncFs() override UZFS_EXCLUDES(mu_);

  // ---- zpl_names.cc: names and directories
  ZplResult<ZplAttr> Lookup(const ZplCred& c, uint64_t dir, std::string_view name) override
      UZFS_EXCLUDES(mu_);
  ZplResult<ZplAttr> Mknod(const ZplCred& c, uint64_t dir, std::string_view name, uint32_t mode,
                           uint64_t rdev) override UZFS_EXCLUDES(mu_);
  ZplResult<ZplAttr> Mkdir(const ZplCred& c, uint64_t dir, std::string_view name, uint32_t mode) override
      UZFS_EXCLUDES(mu_);
  ZplResult<ZplAttr> Symlink(const ZplCred& c, uint64_t dir, std::string_view name,
                             std::string_view target) override UZFS_EXCLUDES(mu_);
  ZplResult<std::string> ReadLink(uint64_t ino) override UZFS_EXCLUDES(mu_);
  ZplResult<ZplAttr> Link(const ZplCred& c, uint64_t ino, uint64_t newdir, std::string_view newname) override
      UZFS_EXCLUDES(mu_);
  ZplStatus Unlink(const ZplCred& c, uint64_t dir, std::string_view name) override UZFS_EXCLUDES(mu_);
  ZplStatus Rmdir(const ZplCred& c, uint64_t dir, std::string_view name) override UZFS_EXCLUDES(mu_);
  ZplStatus Rename(const ZplCred& c, uint64_t sdir, std::string_view sname, uint64_t tdir,
                   std::string_view tname, unsigned flags) override UZFS_EXCLUDES(mu_);
  ZplResult<std::vector<ZplDirEntry>> ReadDir(const ZplCred& c, uint64_t dir, uint64_t cookie,
                                              size_t max) override UZFS_EXCLUDES(mu_);
  ZplResult<std::pair<ZplAttr, ZplHandle>> Create(const ZplCred& c, uint64_t dir, std::string_view name,
                                                  uint32_t mode, int open_flags,
                                                  ZplHandleUse use) override UZFS_EXCLUDES(mu_);

  // ---- zpl_data.cc: file data
  ZplResult<size_t> Read(ZplHandle h, uint64_t offset, std::span<uint8_t> out) override UZFS_EXCLUDES(mu_);
  ZplResult<size_t> Write(ZplHandle h, uint64_t offset, std::span<const uint8_t> data) override
      UZFS_EXCLUDES(mu_);
  ZplStatus Fsync(ZplHandle h, bool /*datasync*/) override UZFS_EXCLUDES(mu_);
  ZplStatus Fallocate(ZplHandle h, int mode, uint64_t offset, uint64_t length) override UZFS_EXCLUDES(mu_);
  ZplResult<uint64_t> Lseek(ZplHandle h, uint64_t offset, int whence) override UZFS_EXCLUDES(mu_);

  // ---- zpl_xattr.cc: extended attributes
  ZplStatus SetXattr(const ZplCred& c, uint64_t ino, std::string_view name, std::span<const uint8_t> value,
                     int flags) override UZFS_EXCLUDES(mu_);
  ZplResult<std::vector<uint8_t>> GetXattr(const ZplCred& c, uint64_t ino, std::string_view name) override
      UZFS_EXCLUDES(mu_);
  ZplResult<std::vector<std::string>> ListXattr(const ZplCred& c, uint64_t ino) override UZFS_EXCLUDES(mu_);
  ZplStatus RemoveXattr(const ZplCred& c, uint64_t ino, std::string_view name) override UZFS_EXCLUDES(mu_);

  // ---- zpl_access.cc: attributes, permissions, space
  ZplResult<ZplAttr> GetAttr(uint64_t ino) override UZFS_EXCLUDES(mu_);
  ZplResult<uint64_t> NextObject(uint64_t after) override UZFS_EXCLUDES(mu_);
  ZplResult<ZplAttr> TreeAttr(uint64_t ino) override UZFS_EXCLUDES(mu_);
  ZplResult<ZplAttr> SetAttr(const ZplCred& c, uint64_t ino, const ZplSetAttr& set) override
      UZFS_EXCLUDES(mu_);
  ZplStatus Access(const ZplCred& c, uint64_t ino, int mask) override UZFS_EXCLUDES(mu_);
  uint64_t WriteRoom() override UZFS_EXCLUDES(mu_);

  // ---- zpl_znode.cc: handles
  ZplResult<ZplHandle> Open(const ZplCred& c, uint64_t ino, int open_flags,
                            ZplHandleUse use) override UZFS_EXCLUDES(mu_);
  ZplStatus Release(ZplHandle h) override UZFS_EXCLUDES(mu_);
  uint64_t ObjectOfHandle(ZplHandle h) override UZFS_EXCLUDES(mu_);

 private:
  // ---- zpl_access.cc
  bool readonly_locked() const UZFS_REQUIRES_SHARED(mu_) {
    return mount_readonly_ || readonly_prop_ || pool_.readonly() || snapshot_os_ != nullptr;
  }
  ZplStatus Writable() const UZFS_REQUIRES_SHARED(mu_) {
    if (readonly_locked()) return Err(EROFS, "read-only file system");
    return ZplStatus::Ok();
  }
  // The local properties of the file system and each ancestor, nearest
  // first: read once per refresh (each is a MOS ZAP).
  using PropChain = std::vector<std::map<std::string, std::string>>;
  PropChain LoadPropChain() UZFS_REQUIRES(mu_);
  static uint64_t PropNumber(const PropChain& chain, const std::string& name, bool inherit);
  static std::optional<uint64_t> PropSetValue(const PropChain& chain, const std::string& name, bool inherit);
  ZplStatus RefreshPropsLocked() UZFS_REQUIRES(mu_);
  uint64_t DirtyNow(const TxgStats& ts) const;
  // Room held by writes between their space check and their data being
  // dirty (CheckSpace counts it; Release or destruction gives it back).
  class SpaceReservation {
   public:
    explicit SpaceReservation(ZplFsImpl* fs) : fs_(fs) {}
    ~SpaceReservation() { Release(); }
    SpaceReservation(const SpaceReservation&) = delete;
    SpaceReservation& operator=(const SpaceReservation&) = delete;
    void Release() {
      if (bytes_ == 0) return;
      MutexLock l(&fs_->space_mu_);
      fs_->space_reserved_ -= bytes_;
      bytes_ = 0;
    }

   private:
    friend class ZplFsImpl;
    ZplFsImpl* fs_;
    uint64_t bytes_ = 0;
  };
  // reserve: on success, `bytes` stay counted for the caller until it
  // releases them (writes under the shared lock check at the same time).
  ZplStatus CheckSpace(uint64_t bytes, SpaceReservation* reserve = nullptr) UZFS_REQUIRES_SHARED(mu_)
      UZFS_EXCLUDES(space_mu_);
  struct Room {
    uint64_t quota = UINT64_MAX, pool = 0;
  };
  ZplResult<Room> RoomLocked(uint64_t* pending) UZFS_REQUIRES_SHARED(mu_) UZFS_REQUIRES(space_mu_);
  static bool InGroup(const ZplCred& c, uint64_t gid);
  static ZplStatus Perm(const ZplCred& c, const ZnodeAttrs& a, int want);
  static ZplStatus Sticky(const ZplCred& c, const ZnodeAttrs& dir, const ZnodeAttrs& f);
  static void SetTrivialAcl(ZnodeAttrs& a);

  // ---- zpl_names.cc
  bool RespelledSameEntry(uint64_t sdir, std::string_view sname, uint64_t tdir, std::string_view tname,
                          unsigned flags) UZFS_REQUIRES(mu_);
  ZplStatus NotAncestor(uint64_t anc, uint64_t dir) UZFS_REQUIRES(mu_);
  ZplStatus ValidName(std::string_view name) const UZFS_REQUIRES(mu_);
  ZplResult<Znode> CreateNode(const ZplCred& c, uint64_t dir, std::string_view name, uint64_t mode,
                              uint64_t rdev, const std::optional<std::string>& target) UZFS_REQUIRES(mu_);
  ZplResult<Znode> CreateNodeIn(const ZplCred& c, Znode& d, bool exists, std::string_view name, uint64_t mode,
                                uint64_t rdev, const std::optional<std::string>& target) UZFS_REQUIRES(mu_);
  // The open handle h, if it may write to a writable file system (EROFS,
  // EBADF otherwise).
  ZplResult<Handle*> WritableHandle(ZplHandle h) UZFS_REQUIRES_SHARED(mu_);
  // What unlink and rmdir remove: directory `dir` (searchable and
  // writable by c) and its entry `name` (a valid name that exists).
  struct RemovalTarget {
    Znode dir, entry;
  };
  ZplResult<RemovalTarget> FindForRemoval(const ZplCred& c, uint64_t dir, std::string_view name)
      UZFS_REQUIRES(mu_);
  // Directory ZAPs: ZplStatus wrappers over ZplDirs.
  ZplResult<std::optional<uint64_t>> DirLookup(uint64_t dir, std::string_view name) UZFS_REQUIRES(mu_);
  ZplResult<std::optional<std::string>> DirStoredName(uint64_t dir, std::string_view name) UZFS_REQUIRES(mu_);
  ZplStatus DirAdd(uint64_t dir, std::string_view name, uint64_t value, Txg txg) UZFS_REQUIRES(mu_);
  ZplStatus DirUpdate(uint64_t dir, std::string_view name, uint64_t value, Txg txg) UZFS_REQUIRES(mu_);
  ZplStatus DirRemove(uint64_t dir, std::string_view name, Txg txg) UZFS_REQUIRES(mu_);
  ZplResult<std::vector<ZapEntry>> DirList(uint64_t dir, Txg txg) UZFS_REQUIRES(mu_);

  // ---- zpl_data.cc
  ZplResult<size_t> WriteLocked(ZplHandle h, uint64_t offset, std::span<const uint8_t> data, bool* sync,
                                uint64_t* ino) UZFS_EXCLUDES(mu_);
  ZplResult<size_t> WriteHeld(ZplHandle h, uint64_t offset, std::span<const uint8_t> data, bool* sync,
                              uint64_t* ino) UZFS_REQUIRES_SHARED(mu_);
  // whole: the write holds the whole file, and may grow its block.
  ZplStatus WritePiece(uint64_t obj, uint64_t offset, std::span<const uint8_t> data, bool whole)
      UZFS_REQUIRES_SHARED(mu_);
  // Holds the range a write of len bytes at *offset of object obj changes
  // (see the design above); *whole: it holds the whole file; *offset
  // becomes the file's size for an append.
  ZplStatus LockForWrite(uint64_t obj, bool append, uint64_t* offset, uint64_t len, ZplRangeLocks::Held* held,
                         bool* whole) UZFS_REQUIRES_SHARED(mu_);
  ZplStatus Truncate(Znode& z, uint64_t size, Txg txg) UZFS_REQUIRES(mu_);
  ZplStatus GrowBlock(Znode& z, uint64_t end, Txg txg) UZFS_REQUIRES_SHARED(mu_);
  static bool GrowsBlock(const Znode& z, uint64_t end);

  // ---- zpl_xattr.cc
  ZplStatus XattrOn() const UZFS_REQUIRES(mu_);
  static ZplStatus XattrPerm(const ZplCred& c, const ZnodeAttrs& a, std::string_view name, int want);
  // Where an xattr is stored: its full Linux name ("user.k", what
  // zfs-fuse and OpenZFS on Linux write), or for user.* the bare name
  // ("k", what illumos/FreeBSD write; OpenZFS on Linux reads it too).
  struct StoredXattr {
    std::string name;
    uint64_t value = 0;
  };
  // An xattr that must exist (Get/Remove): its owner, its entry and its
  // file, after the name and permission checks; ENODATA when absent.
  struct ExistingXattr {
    Znode owner;
    std::optional<StoredXattr> stored;
    Znode file;
  };
  ZplResult<ExistingXattr> FindExistingXattr(const ZplCred& c, uint64_t ino, std::string_view name, int mask)
      UZFS_REQUIRES(mu_);
  ZplResult<std::optional<StoredXattr>> FindXattr(uint64_t xdir, std::string_view name) UZFS_REQUIRES(mu_);
  ZplStatus RemoveDirXattr(const Znode& z, const StoredXattr& x, const ZplTimespec& now, Txg txg)
      UZFS_REQUIRES(mu_);
  bool SaXattrsUsable(const Znode& z) const;
  ZplResult<SaXattrs> LoadSaXattrs(const Znode& z) const;
  static std::string ListedXattrName(std::string stored);
  static ZplStatus CheckXattrName(std::string_view name);
  ZplResult<uint64_t> MakeXattrDir(const Znode& file, const ZplTimespec& now, Txg txg) UZFS_REQUIRES(mu_);

  // ---- zpl_znode.cc
  ZplResult<Znode> Load(uint64_t obj) UZFS_REQUIRES_SHARED(mu_);
  // Callers hold mu_ alone, or shared with znode_mu_ (see the design).
  ZplStatus Store(Znode& z, Txg txg) UZFS_REQUIRES_SHARED(mu_);
  ZplAttr ToAttr(const Znode& z) const;
  ZplResult<Znode> NewZnode(const ZplCred& c, const Znode& dir, uint64_t mode, uint64_t rdev,
                            const ZplTimespec& now, Txg txg,
                            const std::optional<std::string>& target = {}) UZFS_REQUIRES(mu_);
  ZplStatus DropLink(Znode& z, const ZplTimespec& now, Txg txg) UZFS_REQUIRES(mu_);
  ZplStatus FreeZnode(const Znode& z, Txg txg) UZFS_REQUIRES(mu_);
  ZplStatus TouchAtime(Znode& z) UZFS_REQUIRES_SHARED(mu_) UZFS_EXCLUDES(znode_mu_);
  static int HandleFlags(int flags, ZplHandleUse use);
  ZplResult<ZplHandle> OpenLocked(const ZplCred& c, uint64_t ino, int flags, ZplHandleUse use) UZFS_REQUIRES(mu_);
  ZplStatus ReleaseLocked(ZplHandle h) UZFS_REQUIRES(mu_);
  ZplStatus ReclaimDeleteQueue() UZFS_REQUIRES(mu_);

  // ---- zpl_fs_log.cc
  Result<Tx> BeginTx(uint64_t bytes) UZFS_REQUIRES_SHARED(mu_);
  void Log(LogRecord rec, Txg txg, std::optional<uint64_t> oid = std::nullopt) UZFS_REQUIRES_SHARED(mu_);
  void LogWriteOf(uint64_t obj, uint64_t offset, std::span<const uint8_t> data, Txg txg)
      UZFS_REQUIRES_SHARED(mu_);
  void LogWriteData(const Znode& z, uint64_t offset, std::span<const uint8_t> data, Txg txg)
      UZFS_REQUIRES_SHARED(mu_);
  void Unlogged(Txg txg);
  void UntagXattrs(uint64_t obj) UZFS_REQUIRES(mu_);
  void LogSaXattr(uint64_t obj, std::string_view name, std::optional<std::span<const uint8_t>> value,
                  Txg txg, uint64_t oid) UZFS_REQUIRES(mu_);
  ZplStatus CommitLog(uint64_t oid = 0) UZFS_EXCLUDES(mu_);
  bool LogCurrent() const UZFS_REQUIRES_SHARED(mu_);
  ZplStatus StartLogLocked() UZFS_REQUIRES(mu_);
  void SetLog(std::shared_ptr<ZilWriter> w) UZFS_REQUIRES(mu_);
  // ZplReplayHooks.
  ZplFs& fs() override { return *this; }
  void PreferObject(uint64_t obj) override { os_->PreferObjectNumber(obj); }
  void SetReplayHeader(const std::optional<ZilHeader>& zh) override UZFS_EXCLUDES(mu_);
  ZplStatus ReplayMakeXattrDir(uint64_t file, uint64_t obj) override UZFS_EXCLUDES(mu_);
  ZplStatus ReplaySaXattr(uint64_t file, std::string_view name, std::optional<std::span<const uint8_t>> value)
      override UZFS_EXCLUDES(mu_);
  void SetReplayOwner(const std::optional<std::pair<uint64_t, uint64_t>>& owner) override UZFS_EXCLUDES(mu_);

  // sync=always: a change returns only once it is durable. Made first in
  // each changing call, so its destructor runs after the call's lock is
  // released; it commits the log when the call logged (or left unlogged)
  // anything.
  class SyncAlways {
   public:
    explicit SyncAlways(ZplFsImpl* fs) : fs_(fs), before_(fs->log_changes_.load(std::memory_order_relaxed)) {}
    ~SyncAlways() {
      if (fs_->sync_mode_.load(std::memory_order_relaxed) == kSyncAlways &&
          fs_->log_changes_.load(std::memory_order_relaxed) != before_) {
        (void)fs_->CommitLog();
      }
    }
    SyncAlways(const SyncAlways&) = delete;
    SyncAlways& operator=(const SyncAlways&) = delete;

   private:
    ZplFsImpl* fs_;
    uint64_t before_;
  };

  Pool& pool_;
  const std::string ds_;     // "fs", or "fs@snap" for a snapshot
  const std::string props_ds_;  // the file system whose properties apply: ds_ before any '@'
  ObjsetWriter* const os_;
  std::shared_ptr<ObjsetWriter> snapshot_os_;  // a snapshot's object set (os_), held open
  ZplMountSet& mounts_;  // the set this mount is in (zpl_mount_set.h)
  ZplPrefetch prefetch_;  // file read-ahead into the ARC
  uint64_t version_ = 0, root_ = 0, dq_ = 0;
  bool legacy_ = true;
  std::unique_ptr<ZnodeCodec> codec_;

  mutable SharedMutex mu_;
  Mutex znode_mu_ UZFS_ACQUIRED_AFTER(mu_);  // znode load-change-store under the shared lock
  Mutex space_mu_ UZFS_ACQUIRED_AFTER(mu_);  // the space check's cached figures
  ZplRangeLocks ranges_;                     // file ranges writes hold
  bool unmounted_ UZFS_GUARDED_BY(mu_) = false;
  bool mount_readonly_ UZFS_GUARDED_BY(mu_) = false;
  uint64_t dir_norm_ UZFS_GUARDED_BY(mu_) = 0;  // normflags of new directory ZAPs
  uint64_t match_ UZFS_GUARDED_BY(mu_) = 0;     // how names are matched in them
  std::atomic<bool> loose_names_{false};        // match_ != 0, read without mu_
  bool utf8only_ UZFS_GUARDED_BY(mu_) = false;
  uint64_t recordsize_ UZFS_GUARDED_BY(mu_) = 131072;
  bool atime_ UZFS_GUARDED_BY(mu_) = true;
  bool relatime_ UZFS_GUARDED_BY(mu_) = false;
  // The sync property (standard 0, always 1, disabled 2) and a count of
  // changes made (logged or not), read without mu_ by SyncAlways.
  static constexpr uint64_t kSyncAlways = 1, kSyncDisabled = 2;
  std::atomic<uint64_t> sync_mode_{0};
  bool logbias_throughput_ UZFS_GUARDED_BY(mu_) = false;  // logbias=throughput
  std::atomic<uint64_t> log_changes_{0};
  bool readonly_prop_ UZFS_GUARDED_BY(mu_) = false;
  bool xattr_ UZFS_GUARDED_BY(mu_) = true;
  bool xattr_sa_ UZFS_GUARDED_BY(mu_) = false;   // new small xattrs go to the SA
  uint64_t quota_ UZFS_GUARDED_BY(mu_) = 0;
  uint64_t refquota_ UZFS_GUARDED_BY(mu_) = 0;
  uint64_t space_txg_ UZFS_GUARDED_BY(space_mu_) = UINT64_MAX;
  DatasetSpace space_ UZFS_GUARDED_BY(space_mu_);
  uint64_t space_reserved_ UZFS_GUARDED_BY(space_mu_) = 0;  // SpaceReservation
  ZplDirs dirs_ UZFS_GUARDED_BY(mu_);
  const uint64_t immediate_write_sz_;  // zfs_immediate_write_sz, read at mount
  const bool parallel_writes_;         // zpl_parallel_writes, read at mount
  std::map<ZplHandle, Handle> handles_ UZFS_GUARDED_BY(mu_);
  std::map<uint64_t, uint64_t> open_count_ UZFS_GUARDED_BY(mu_);
  std::set<uint64_t> unlinked_open_ UZFS_GUARDED_BY(mu_);  // links reached 0 while open
  ZplHandle next_handle_ UZFS_GUARDED_BY(mu_) = 1;
  std::shared_ptr<ZilWriter> log_ UZFS_GUARDED_BY(mu_);  // the running intent log
  bool log_saxattr_ UZFS_GUARDED_BY(mu_) = false;       // log_ may take TX_SETSAXATTR (SetLog)
  uint64_t feature_gen_ UZFS_GUARDED_BY(mu_) = 0;       // pool's feature_generation() seen
  uint64_t log_gen_ UZFS_GUARDED_BY(mu_) = 0;           // pool's zil_generation() for log_
  std::atomic<uint64_t> unlogged_txg_{0};  // newest txg with an unlogged change
  std::optional<ZilHeader> replay_hdr_ UZFS_GUARDED_BY(mu_);
  std::optional<std::pair<uint64_t, uint64_t>> replay_owner_ UZFS_GUARDED_BY(mu_);  // uid, gid
};

}  // namespace uzfs::zpl_impl
