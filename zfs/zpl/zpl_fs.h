// ZplFs: the POSIX file system of one mounted filesystem dataset — the
// API the FUSE adapter (fuse/) calls, one method per low-level operation.
// (ZFS's zfs_vnops.c/zfs_dir.c/zfs_znode.c; here one class over the DMU.)
//
// On disk: the OpenZFS ZPL. Inode numbers are object numbers (the root is
// the master node's ROOT entry); generation numbers (znode gen = creation
// txg) let an inode number be re-exported safely. Directories are ZAPs of
// name -> (DT type << 60 | object); files are plain-file objects whose
// block size is the dataset's recordsize once they grow past one block;
// attributes live in the bonus (ZnodeCodec: znode_phys for ZPL <= 4, system
// attributes for ZPL 5). Unlinked-but-open files sit in the delete queue
// (the "unlinked set", master node DELETE_QUEUE) until their last Release;
// Mount empties it of files left there by a crash. Extended attributes are
// files in a hidden xattr directory (znode xattr field), named with their
// full Linux name ("user.k") as zfs-fuse and OpenZFS on Linux name them;
// a user.* attribute stored under its bare name (illumos/FreeBSD) is read,
// listed as "user.k" and replaced by the full name when set. On ZPL 5 with
// xattr=sa (what the default "on" means there) small xattrs live in the
// file's system attributes instead (ZPL_DXATTR, zpl_xattr_sa.h), bonus or
// spill block; both kinds are read and listed together.
// Names on file systems created with casesensitivity=insensitive|mixed or
// a normalization form: directories hash the normalized name
// (zfs/zap/zap_normalize.h) and keep names as given; lookups, creates
// (EEXIST), unlinks and renames match another spelling when the file
// system says so (insensitive: case and form; mixed: form only, as
// OpenZFS on Linux, which has no case-insensitive lookup flag); utf8only
// refuses names that are not UTF-8 (EILSEQ). A rename to another spelling
// of the same entry gives the entry that spelling.
//
// Transactions: every change is made in the pool's open txg (Pool::Begin)
// and is durable once that txg syncs, or once its intent-log record is
// written: Fsync commits the log (zpl_log.h). An operation is never split across txgs
// (a Write of more than 8 MiB is done as pieces, each atomic). A failed
// operation changes nothing visible (checks come before changes).
//
// Errors: every method returns ZplStatus/ZplResult carrying a POSIX errno
// (ENOENT, EEXIST, ENOTEMPTY, EISDIR, ENOTDIR, EXDEV, ENOSPC, EDQUOT,
// ENAMETOOLONG, EROFS, EACCES, EPERM, EINVAL, EFBIG, ELOOP, ENODATA, ERANGE,
// EIO for device errors and damaged metadata) and a message for the log.
//
// Permissions: when `cred.uid != 0` methods check POSIX permission bits
// (search on every directory walked by the method itself, write+search on a
// directory changed, sticky-bit rules, owner-only chmod/utimes, chown by
// root only); the FUSE adapter mounts with default_permissions, so the
// kernel checks too and these checks matter for library users and tests.
//
// Properties acting on data (read at Mount, refreshed by RefreshProps):
// recordsize, compression, checksum, copies, atime/relatime, readonly,
// quota/refquota (EDQUOT), reservation/refreservation and pool space
// (ENOSPC), xattr (on|sa|off), casesensitivity/normalization (as created),
// sync, logbias (writes logged by reference: zpl_log.h).
// Space: a change that can allocate is refused when its worst case plus
// twice this dataset's unsynced dirty bytes plus 1 MiB exceeds AVAIL as
// `zfs list` computes it (quota/refquota: EDQUOT; else ENOSPC); unlink,
// rmdir and truncation down are never refused for space. atime is
// written at most once per second per file.
//
// Threading: every method is safe from any thread (FUSE's worker pool).
// One mutex per file system serializes metadata work and writes; file data
// is read outside it.
#pragma once

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "zfs/util/status.h"
#include "zfs/zpl/znode_attrs.h"

namespace uzfs {

class Tunables;

class Pool;
class ZplMountSet;

// An errno (0 = success) with a message; what the FUSE adapter replies.
class [[nodiscard]] ZplStatus {
 public:
  ZplStatus() = default;
  ZplStatus(int err, std::string msg) : err_(err), msg_(std::move(msg)) {}
  static ZplStatus Ok() { return ZplStatus(); }
  // Maps a lower layer's Status: NotFound -> ENOENT, Exists -> EEXIST,
  // NoSpace -> ENOSPC, InvalidArgument -> EINVAL, NotSupported ->
  // EOPNOTSUPP, Busy -> EBUSY, Overflow -> EFBIG, Corruption/IoError -> EIO.
  static ZplStatus FromStatus(const Status& s);
  bool ok() const { return err_ == 0; }
  int err() const { return err_; }
  const std::string& message() const { return msg_; }
  std::string ToString() const;

 private:
  int err_ = 0;
  std::string msg_;
};

template <typename T>
class [[nodiscard]] ZplResult {
 public:
  ZplResult(T v) : v_(std::move(v)) {}                 // NOLINT
  ZplResult(ZplStatus s) : v_(std::move(s)) {}         // NOLINT: must not be ok
  bool ok() const { return v_.index() == 0; }
  int err() const { return ok() ? 0 : std::get<1>(v_).err(); }
  ZplStatus status() const { return ok() ? ZplStatus() : std::get<1>(v_); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, ZplStatus> v_;
};

struct ZplCred {
  uint32_t uid = 0, gid = 0;
  std::vector<uint32_t> groups;  // supplementary groups
  uint32_t umask = 0;            // applied to modes of new files by callers that want it
};

// What stat(2) shows, plus the generation.
struct ZplAttr {
  uint64_t ino = 0;
  // The directory it was created in or last linked or renamed into, as
  // ZFS keeps it (a file with several links names the newest one's); the
  // root names itself.
  uint64_t parent = 0;
  uint64_t gen = 0;
  uint32_t mode = 0;         // S_IFMT | permissions
  uint64_t nlink = 0;
  uint32_t uid = 0, gid = 0;
  uint64_t rdev = 0;         // dev_t (makedev form)
  uint64_t size = 0;
  uint64_t blocks = 0;       // 512-byte units allocated (on disk + dirty)
  uint32_t blksize = 0;      // the file's block size (st_blksize)
  struct timespec atime {}, mtime{}, ctime{}, crtime{};
  struct stat ToStat() const;
};

struct ZplDirEntry {
  std::string name;
  uint64_t ino = 0;
  uint32_t type = 0;         // DT_* (from the entry's top 4 bits)
  uint64_t next_cookie = 0;  // pass to ReadDir to continue after this entry
};

// Handle for an open file (FUSE fh): holds the object so an unlinked file
// stays readable until Release.
using ZplHandle = uint64_t;

// Who uses a handle besides the caller that opened it.
enum class ZplHandleUse {
  kAsOpened,   // only what the open flags allow
  // The kernel's page cache (FUSE writeback cache) also reads through the
  // handle to fill pages around a write, and computes O_APPEND offsets
  // itself: the handle reads and writes at the offsets given. The caller's
  // own access is still what its flags asked for and was checked as such.
  kPageCache,
};

// SetAttr: which fields to change (FUSE_SET_ATTR_* analogues).
struct ZplSetAttr {
  std::optional<uint32_t> mode;     // permission bits only (S_IFMT ignored)
  std::optional<uint32_t> uid, gid;
  std::optional<uint64_t> size;     // truncate up or down
  // The change comes through this open handle: ftruncate(2), or the kernel
  // writing back the times of writes made through it (FUSE writeback
  // cache). Through a handle open for writing, size and times are not
  // checked against the mode or the owner; through a read-only one they
  // are. EBADF when it is no handle of this file.
  std::optional<ZplHandle> handle;
  std::optional<struct timespec> atime, mtime;  // UTIME_NOW allowed in tv_nsec
  // Clear set-user-ID, and set-group-ID when the group may execute, after
  // the other changes, in the same transaction (the kernel asked for it on
  // a write or truncate by a caller without CAP_FSETID: no owner check).
  // Alone and with nothing to clear, SetAttr changes nothing.
  bool kill_suidgid = false;
  // An explicit mtime that a caller who is not the owner may only mean as
  // "now": the kernel sends its own clock's time with a truncate or a
  // touch when it keeps mtime itself (FUSE writeback cache), after its own
  // permission check. The owner's explicit mtime is kept as given.
  bool mtime_is_now_for_non_owner = false;
};

struct ZplMountOptions {
  bool readonly = false;     // also forced by the dataset's readonly=on
  // zfetch_* settings of file read-ahead and zpl_dir_cache_max (directory
  // blocks kept between operations; zpl_tunables.h); null: the
  // defaults. Must outlive the mount.
  const Tunables* tunables = nullptr;
  // The mounts this one shares its cache budget with, and in which a
  // dataset mounts once (zpl_mount_set.h); must outlive the mount. Null:
  // ZplMountSet::Default(), the one of the process.
  ZplMountSet* mount_set = nullptr;
};

class ZplFs {
 public:
  // Opens the ZPL of filesystem dataset `dataset` of `pool` (which must
  // outlive it): reads the master node (VERSION, ROOT, DELETE_QUEUE,
  // SA_ATTRS), the dataset's properties, and (writable) reclaims objects
  // left in the delete queue by a crash. EINVAL for a dataset that is not a
  // ZPL file system; ENOTSUP for a ZPL version it cannot read.
  static ZplResult<std::unique_ptr<ZplFs>> Mount(Pool& pool, const std::string& dataset,
                                                 const ZplMountOptions& opts = {});
  // Opens snapshot `snapshot` ("fs@snap") read-only (Pool::OpenSnapshot:
  // the snapshot refuses destroy while this lives): no log replay, no
  // delete-queue work, nothing is ever written (EROFS); properties are its
  // file system's. ENOENT for no such snapshot.
  static ZplResult<std::unique_ptr<ZplFs>> MountSnapshot(Pool& pool, const std::string& snapshot,
                                                         const ZplMountOptions& opts = {});
  virtual ~ZplFs() = default;

  // Waits for every change to be on disk and closes; handles still open
  // are released (unlinked files they held are reclaimed).
  virtual ZplStatus Unmount() = 0;
  virtual uint64_t root_ino() const = 0;
  // Whether names match other spellings (case-insensitive or normalized):
  // a cached miss for one spelling can go stale when another is created.
  virtual bool loose_names() const = 0;
  virtual uint64_t zpl_version() const = 0;
  virtual bool readonly() const = 0;
  // Re-reads the properties (after `zfs set`).
  virtual ZplStatus RefreshProps() = 0;
  // Crash simulation for tests: forgets every handle and cached state
  // without releasing, reclaiming or syncing anything (what a crash leaves
  // on disk is whatever the pool syncs on its own); every later call but
  // the destructor fails with EIO.
  virtual void Abandon() = 0;

  // --- names ---
  virtual ZplResult<ZplAttr> Lookup(const ZplCred& c, uint64_t dir, std::string_view name) = 0;
  virtual ZplResult<ZplAttr> GetAttr(uint64_t ino) = 0;
  // For walking every object (zfs diff, zpl_diff.h): the next object in
  // use after `after` (0 to start; 0 at the end), stepping over the extra
  // slots of large dnodes; and object `ino`'s attributes when it is a
  // file, directory, link or node of the tree (ENOENT for the file
  // system's bookkeeping, xattr directories and their files).
  virtual ZplResult<uint64_t> NextObject(uint64_t after) = 0;
  virtual ZplResult<ZplAttr> TreeAttr(uint64_t ino) = 0;
  virtual ZplResult<ZplAttr> SetAttr(const ZplCred& c, uint64_t ino, const ZplSetAttr& set) = 0;
  // mode: S_IFREG/S_IFCHR/S_IFBLK/S_IFIFO/S_IFSOCK | permissions.
  virtual ZplResult<ZplAttr> Mknod(const ZplCred& c, uint64_t dir, std::string_view name,
                                   uint32_t mode, uint64_t rdev) = 0;
  virtual ZplResult<ZplAttr> Mkdir(const ZplCred& c, uint64_t dir, std::string_view name,
                                   uint32_t mode) = 0;
  virtual ZplResult<ZplAttr> Symlink(const ZplCred& c, uint64_t dir, std::string_view name,
                                     std::string_view target) = 0;
  virtual ZplResult<std::string> ReadLink(uint64_t ino) = 0;
  virtual ZplResult<ZplAttr> Link(const ZplCred& c, uint64_t ino, uint64_t newdir,
                                  std::string_view newname) = 0;
  virtual ZplStatus Unlink(const ZplCred& c, uint64_t dir, std::string_view name) = 0;
  virtual ZplStatus Rmdir(const ZplCred& c, uint64_t dir, std::string_view name) = 0;
  // flags: 0, RENAME_NOREPLACE, RENAME_EXCHANGE.
  virtual ZplStatus Rename(const ZplCred& c, uint64_t dir, std::string_view name, uint64_t newdir,
                           std::string_view newname, unsigned flags = 0) = 0;

  // --- directories ---
  // Entries after `cookie` (0: from the start, "." and ".." first), at
  // most `max` of them; an empty vector at the end. Cookies stay valid
  // across concurrent changes (ZAP cursor serialization, as ZFS).
  virtual ZplResult<std::vector<ZplDirEntry>> ReadDir(const ZplCred& c, uint64_t dir,
                                                      uint64_t cookie, size_t max) = 0;

  // --- files ---
  // Creates (O_CREAT, O_EXCL honoured) and opens.
  virtual ZplResult<std::pair<ZplAttr, ZplHandle>> Create(const ZplCred& c, uint64_t dir,
                                                          std::string_view name, uint32_t mode,
                                                          int open_flags,
                                                          ZplHandleUse use = ZplHandleUse::kAsOpened) = 0;
  // Bytes that can still be written before a write fails with ENOSPC or
  // EDQUOT, as the space check counts them now (0 when none, or read-only).
  virtual uint64_t WriteRoom() = 0;
  // O_TRUNC honoured; O_APPEND makes every Write append. Permission is
  // checked for the access `open_flags` asks for, whatever `use` adds.
  virtual ZplResult<ZplHandle> Open(const ZplCred& c, uint64_t ino, int open_flags,
                                    ZplHandleUse use = ZplHandleUse::kAsOpened) = 0;
  virtual ZplStatus Release(ZplHandle h) = 0;
  // The object handle `h` has open (0 for no such handle): what the
  // zpl_op probe reports for operations on a handle.
  virtual uint64_t ObjectOfHandle(ZplHandle h) = 0;
  // Short only at end of file.
  virtual ZplResult<size_t> Read(ZplHandle h, uint64_t offset, std::span<uint8_t> out) = 0;
  virtual ZplResult<size_t> Write(ZplHandle h, uint64_t offset, std::span<const uint8_t> data) = 0;
  // Everything written to the file so far (datasync: data and size only)
  // on disk when it returns.
  virtual ZplStatus Fsync(ZplHandle h, bool datasync) = 0;
  // mode 0 (extend), FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE|KEEP_SIZE.
  virtual ZplStatus Fallocate(ZplHandle h, int mode, uint64_t offset, uint64_t length) = 0;
  // SEEK_DATA / SEEK_HOLE.
  virtual ZplResult<uint64_t> Lseek(ZplHandle h, uint64_t offset, int whence) = 0;

  // --- extended attributes (names with their namespace, "user.x") ---
  virtual ZplStatus SetXattr(const ZplCred& c, uint64_t ino, std::string_view name,
                             std::span<const uint8_t> value, int flags) = 0;  // XATTR_CREATE/REPLACE
  virtual ZplResult<std::vector<uint8_t>> GetXattr(const ZplCred& c, uint64_t ino,
                                                   std::string_view name) = 0;
  virtual ZplResult<std::vector<std::string>> ListXattr(const ZplCred& c, uint64_t ino) = 0;
  virtual ZplStatus RemoveXattr(const ZplCred& c, uint64_t ino, std::string_view name) = 0;

  // --- whole file system ---
  virtual ZplResult<struct statvfs> StatFs() = 0;
  // Everything changed so far on disk (syncfs).
  virtual ZplStatus SyncFs() = 0;
  // R_OK/W_OK/X_OK/F_OK for cred.
  virtual ZplStatus Access(const ZplCred& c, uint64_t ino, int mask) = 0;
};

}  // namespace uzfs
