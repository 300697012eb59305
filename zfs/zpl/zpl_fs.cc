// ZplFs implementation (see zpl_fs.h for the contract).
//
// Design. One ZplFsImpl per mounted dataset over the dataset's ObjsetWriter.
// Every method takes the file system's mutex `mu_`, then (for a change)
// Pool::Begin, changes the objects in that one txg, and commits: an
// operation is never split across txgs, and since txgs are handed out in
// increasing order under the mutex, a block is never changed in an older
// txg after a newer one (ObjsetWriter's rule). Waiting in Begin (the write
// throttle) with mu_ held is safe: the sync thread never takes mu_, and
// every Tx is finished before mu_ is released, so no Tx is held by a
// thread that waits for mu_. File data is read outside mu_ (ObjsetWriter
// reads are thread-safe), so reads of different files do not wait for
// each other's metadata work.
//
// Znodes are not cached: each operation decodes the bonus of the objects
// it touches (ObjsetWriter keeps dirty dnodes in memory), changes them in
// an `Op` (a per-operation map so an object touched twice is stored once),
// and stores them at the end. Directory ZAPs are cached (DirZap) because a
// micro ZAP's next-fit position lives in its writer, as in ZFS.
//
// Space. Before a change that can allocate, CheckSpace compares the
// transaction's worst-case estimate with the dataset's AVAIL (pool_space's
// `zfs list` rule, refreshed once per synced txg) minus the pool's dirty
// bytes not yet synced (after syncing them once when they are what does
// not fit) and minus the live log blocks in the pool's main class;
// quota/refquota give EDQUOT, else ENOSPC. Unlink, rmdir and truncation
// never check.
#include "zfs/zpl/zpl_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <set>

#include "cache/cache_tunables.h"
#include "zfs/dmu/dmu_types.h"
#include "zfs/dsl/pool.h"
#include "zfs/dsl/pool_space.h"
#include "zfs/dsl/prop_table.h"
#include "zfs/util/mutex.h"
#include "zfs/zap/dmu_zap_object.h"
#include "zfs/zap/zap_normalize.h"
#include "zfs/zap/zap_writer.h"
#include "zfs/zpl/sa_codec.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_dir.h"
#include "zfs/zpl/zpl_xattr_sa.h"
#include "zfs/zpl/zpl_log.h"
#include "zfs/zpl/zpl_prefetch.h"
#include "zfs/zil/zil_writer.h"

namespace uzfs {

// ------------------------------------------------------------ status helpers

ZplStatus ZplStatus::FromStatus(const Status& s) {
  if (s.ok()) return ZplStatus();
  int e = EIO;
  switch (s.code()) {
    case Code::kNotFound: e = ENOENT; break;
    case Code::kExists: e = EEXIST; break;
    case Code::kNoSpace: e = ENOSPC; break;
    case Code::kInvalidArgument: e = EINVAL; break;
    case Code::kNotSupported: e = EOPNOTSUPP; break;
    case Code::kBusy: e = EBUSY; break;
    case Code::kOverflow: e = EFBIG; break;
    default: e = EIO; break;
  }
  return ZplStatus(e, s.ToString());
}

std::string ZplStatus::ToString() const {
  if (ok()) return "OK";
  return std::string(strerrorname_np(err_) ? strerrorname_np(err_) : "E?") + ": " + msg_;
}

struct stat ZplAttr::ToStat() const {
  struct stat st {};
  st.st_ino = ino;
  st.st_mode = mode;
  st.st_nlink = nlink;
  st.st_uid = uid;
  st.st_gid = gid;
  st.st_rdev = rdev;
  st.st_size = static_cast<off_t>(size);
  st.st_blocks = static_cast<blkcnt_t>(blocks);
  st.st_blksize = blksize;
  st.st_atim = atime;
  st.st_mtim = mtime;
  st.st_ctim = ctime;
  return st;
}

namespace {

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

ZplStatus Err(int e, std::string msg) { return ZplStatus(e, std::move(msg)); }

constexpr uint64_t kSIfMt = S_IFMT;
constexpr size_t kNameMax = 255;
constexpr size_t kSymlinkMax = 4095;
constexpr size_t kXattrValueMax = 65536;
constexpr uint64_t kMaxLinks = UINT32_MAX;
constexpr uint64_t kMaxFileSize = uint64_t{1} << 62;
constexpr uint64_t kZnodeFlagXattr = 0x1;       // ZFS_XATTR: xattr dirs and their files
constexpr uint64_t kCookieEnd = INT64_MAX;
constexpr uint64_t kCookieBase = 3;             // 0 ".", 1 "..", 2 first ZAP entry
constexpr uint64_t kMetaTxBytes = 16 * 1024;    // estimate of a metadata-only change
// What a committed change counts as dirty data (Tx::Commit(actual)): the
// estimates above are worst cases for the space check and the throttle's
// first guess; counting them as dirty closed a txg every ~16 small files
// (the dirty trigger is a share of dirty_max). A metadata change dirties a
// dnode and a directory block or two; a write its data blocks.
constexpr uint64_t kMetaDirtyBytes = 2048;
// `held`: the record buffers the write newly dirtied (a 4 KiB write into a
// 128 KiB record holds the whole record until its txg syncs). A write
// counts its bytes, as OpenZFS counts them (so scattered small writes into
// a file share one txg, which writes each record once), but at least half
// of what it holds: memory for dirty buffers stays within 2 x dirty_max.
uint64_t WriteDirtyBytes(uint64_t len, uint64_t held = 0) {
  return std::max(((len + 4095) / 4096) * 4096 + kMetaDirtyBytes, held / 2);
}
constexpr uint64_t kSeekScanBlocks = 8192;     // blocks one SEEK_DATA/SEEK_HOLE reads at most
constexpr size_t kWriteChunk = 8 << 20;        // bytes written per transaction at most
constexpr size_t kZapCacheMax = 4096;         // directory ZAP writers kept open
constexpr uint64_t kSpaceMargin = 1 << 20;      // kept free for the MOS, space maps
constexpr uint64_t kLogCopyMax = 32 << 20;      // write data copied into the log and not yet committed, at most
constexpr uint64_t kImmediateWriteSize = 32 << 10;  // OpenZFS zfs_immediate_write_sz: larger writes by reference

bool IsDir(uint64_t mode) { return (mode & kSIfMt) == S_IFDIR; }
bool IsReg(uint64_t mode) { return (mode & kSIfMt) == S_IFREG; }
bool IsLnk(uint64_t mode) { return (mode & kSIfMt) == S_IFLNK; }
// The directory entry of object `obj` of `mode`.
uint64_t DirentOf(uint64_t mode, uint64_t obj) { return DirentMake(DirentTypeOfMode(mode), obj); }

ZplTimespec Now() {
  struct timespec ts {};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ZplTimespec{static_cast<uint64_t>(ts.tv_sec), static_cast<uint64_t>(ts.tv_nsec)};
}
struct timespec ToTs(const ZplTimespec& t) {
  struct timespec ts {};
  ts.tv_sec = static_cast<time_t>(t.sec);
  ts.tv_nsec = static_cast<long>(t.nsec);
  return ts;
}
bool Before(const ZplTimespec& a, const ZplTimespec& b) {
  return a.sec != b.sec ? a.sec < b.sec : a.nsec < b.nsec;
}
// rdev as zfs-fuse stores it: the Linux dev_t (glibc's makedev encoding)
// as is, so zfs-fuse's `stat` shows the same major:minor (checked by
// zpl_fs_compat_test both ways).
uint64_t EncodeRdev(uint64_t dev) { return dev; }
uint64_t DecodeRdev(uint64_t v) { return v; }
uint64_t RoundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
uint64_t NextPow2(uint64_t v) {
  uint64_t p = 512;
  while (p < v) p <<= 1;
  return p;
}
std::string Hex(uint64_t v) {
  char b[20];
  snprintf(b, sizeof(b), "%llx", static_cast<unsigned long long>(v));
  return b;
}

ZplStatus CheckName(std::string_view name) {
  if (name.empty()) return Err(ENOENT, "empty name");
  if (name.size() > kNameMax) return Err(ENAMETOOLONG, "name longer than 255 bytes");
  if (name.find('/') != std::string_view::npos || name.find('\0') != std::string_view::npos)
    return Err(EINVAL, "name contains '/' or NUL");
  return ZplStatus::Ok();
}

// --------------------------------------------------------------- ZPL 5 hook
// The one place the codec is chosen per file system: znode_phys for ZPL
// 1..4, system attributes (zfs/zpl/sa_codec.h, helper "sa") for ZPL 5.
ZplResult<std::unique_ptr<ZnodeCodec>> CodecForVersion(uint64_t version, ObjsetWriter& os) {
  if (version >= 1 && version <= 4) return MakeZnodePhysCodec(version);
  if (version == kZplVersionSa) {
    auto c = LoadSaCodec(os);
    if (!c.ok()) return Err(EIO, "ZPL 5 system attribute tables: " + c.status().ToString());
    return std::unique_ptr<ZnodeCodec>(std::move(*c));
  }
  return Err(ENOTSUP, "unknown ZPL version " + std::to_string(version));
}

// Object sets with a mounted ZplFs: a second ZplFs on the same set would
// keep its own directory cache and mutex and corrupt it (EBUSY instead).
// The file systems mounted in this process, each with its dbuf_cache_max
// and zpl_dir_cache_max. Their synced-block caches and their directory
// caches share those limits, limit / mounts each (as OpenZFS's one dbuf
// cache for the system): a limit per mount let many mounted file systems
// keep all of RAM. Rebalanced at mount and unmount.
struct MountedCaches {
  uint64_t synced_limit = 0;
  uint64_t dir_limit = 0;
  ZplDirs* dirs = nullptr;  // null until the mount is built
};
Mutex g_mounted_mu;
std::map<ObjsetWriter*, MountedCaches> g_mounted UZFS_GUARDED_BY(g_mounted_mu);

void ShareCaches() UZFS_REQUIRES(g_mounted_mu) {
  const uint64_t n = g_mounted.size();
  for (const auto& [os, c] : g_mounted) {
    os->SetSyncedCacheLimit(c.synced_limit / n);
    if (c.dirs != nullptr) c.dirs->set_cache_bytes(c.dir_limit / n);
  }
}

void Unmounted(ObjsetWriter* os) UZFS_EXCLUDES(g_mounted_mu) {
  MutexLock g(&g_mounted_mu);
  if (g_mounted.erase(os) != 0) ShareCaches();
}

struct Znode {
  uint64_t obj = 0;
  Dnode dn;
  ZnodeAttrs a;
};

struct Handle {
  uint64_t ino = 0;
  int flags = 0;
};

class ZplFsImpl final : public ZplFs, private ZplReplayHooks {
 public:
  ZplFsImpl(Pool& pool, std::string ds, ObjsetWriter* os, const Tunables* tunables)
      : pool_(pool),
        ds_(std::move(ds)),
        os_(os),
        prefetch_(*os, tunables),
        dirs_(*os, kZapCacheMax, DirCacheBytes(tunables)),
        immediate_write_sz_(ImmediateWriteSize(tunables)) {}
  // dbuf_cache_max: what the object sets of the mounted file systems keep
  // of blocks after their txg synced (shared, see g_mounted), so 4 KiB
  // writes into 128 KiB records in later txgs read nothing.
  static uint64_t SyncedCacheBytes(const Tunables* t) {
    auto v = t ? t->Get("dbuf_cache_max") : Result<uint64_t>(Status::NotFound("no tunables"));
    return v.ok() ? *v : DefaultSyncedCacheBytes();
  }
  // zfs_immediate_write_sz (cache/cache_tunables.cc), or OpenZFS's 32 KiB.
  static uint64_t ImmediateWriteSize(const Tunables* t) {
    auto v = t ? t->Get("zfs_immediate_write_sz") : Result<uint64_t>(Status::NotFound("no tunables"));
    return v.ok() ? *v : kImmediateWriteSize;
  }
  // zpl_dir_cache_max (cache/cache_tunables.cc), or ZplDirs' default.
  static uint64_t DirCacheBytes(const Tunables* t) {
    if (t == nullptr) return ZplDirs::kDefaultCacheBytes;
    auto v = t->Get("zpl_dir_cache_max");
    return v.ok() ? *v : ZplDirs::kDefaultCacheBytes;
  }
  // For the process's cache sharing (g_mounted), which only calls the
  // thread-safe set_cache_bytes through it.
  ZplDirs* dirs() UZFS_NO_THREAD_SAFETY_ANALYSIS { return &dirs_; }
  ~ZplFsImpl() override {
    if (!unmounted_) (void)Unmount();
    Unmounted(os_);
  }

  ZplStatus Init(const ZplMountOptions& opts) UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    mount_readonly_ = opts.readonly;
    ZPL_ASSIGN(std::vector<ZapEntry> entries, DirList(kZplMasterNodeObj, pool_.open_txg()));
    std::map<std::string, uint64_t> m;
    for (const ZapEntry& e : entries) m[e.name] = e.value();
    if (!m.count("VERSION") || !m.count("ROOT"))
      return Err(EINVAL, "dataset '" + ds_ + "' is not a ZPL file system (no VERSION/ROOT)");
    version_ = m["VERSION"];
    root_ = m["ROOT"];
    dq_ = m.count("DELETE_QUEUE") ? m["DELETE_QUEUE"] : 0;
    dirs_.Pin(kZplMasterNodeObj);
    if (dq_ != 0) dirs_.Pin(dq_);
    // Names (see zap_normalize.h): directories are ZAPs with normflags
    // `dir_norm_` (the normalization form, plus upper-casing unless the file
    // system is case-sensitive); lookups match with `match_` (case too
    // unless "mixed": Linux has no case-insensitive lookup flag, so mixed
    // is case-sensitive here, as in OpenZFS on Linux).
    const uint64_t norm = m.count("normalization") ? m["normalization"] : 0;
    const uint64_t sense = m.count("casesensitivity") ? m["casesensitivity"] : 0;
    if (norm & ~zap_norm::kFormMask) return Err(EINVAL, "dataset '" + ds_ + "' has an unknown normalization");
    if (sense > 2) return Err(EINVAL, "dataset '" + ds_ + "' has an unknown casesensitivity");
    dir_norm_ = norm | (sense != 0 ? zap_norm::kToUpper : 0);
    match_ = sense == 2 ? norm : dir_norm_;
    utf8only_ = m.count("utf8only") && m["utf8only"] != 0;
    loose_names_ = match_ != 0;
    ZPL_ASSIGN(codec_, CodecForVersion(version_, *os_));
    legacy_ = pool_.version() < kFeatureVersion;
    ZPL_TRY(RefreshPropsLocked());
    if (!readonly_locked() && dq_ != 0) ZPL_TRY(ReclaimDeleteQueue());
    return ZplStatus::Ok();
  }

  // Mount, writable: replays what the intent log holds (zpl_log.h), then
  // starts a fresh log (the old one is freed).
  ZplStatus ReplayLog() UZFS_EXCLUDES(mu_) {
    {
      MutexLock l(&mu_);
      if (readonly_locked()) return ZplStatus::Ok();
    }
    const ZilHeader zh = os_->zil_header();
    if (zh.log.IsHole()) return ZplStatus::Ok();
    // Only a log the import claimed is replayed: its claim_txg tells which
    // records are in the pool already. An unclaimed one (no records, or a
    // log of this very import left by Abandon) is only freed.
    if (zh.claim_txg == 0) {
      MutexLock l(&mu_);
      return StartLogLocked();
    }
    ZilReader reader(pool_.block_target(), &pool_.zio());
    auto r = ReplayZplLog(*this, reader, zh);
    if (!r.ok()) return Err(EIO, "intent log replay: " + r.status().ToString());
    MutexLock l(&mu_);
    return StartLogLocked();
  }

  ZplStatus Unmount() override UZFS_EXCLUDES(mu_) {
    {
      MutexLock l(&mu_);
      if (unmounted_) return ZplStatus::Ok();
      std::vector<ZplHandle> hs;
      for (const auto& [h, v] : handles_) hs.push_back(h);
      for (ZplHandle h : hs) {
        ZplStatus s = ReleaseLocked(h);
        (void)s;
      }
      dirs_.Clear();
      unmounted_ = true;
    }
    Unmounted(os_);
    if (pool_.readonly()) return ZplStatus::Ok();
    Status zs = Status::Ok();
    {
      MutexLock l(&mu_);
      if (log_) zs = pool_.ZilClose(ds_);
      SetLog(nullptr);
    }
    Status s = pool_.Sync();
    return ZplStatus::FromStatus(zs.ok() ? s : zs);
  }

  void Abandon() override UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    handles_.clear();
    open_count_.clear();
    unlinked_open_.clear();
    dirs_.Clear();
    unmounted_ = true;
    mount_readonly_ = true;
    SetLog(nullptr);  // a crash: the log stays as the disk has it
  }

  uint64_t root_ino() const override { return root_; }
  bool loose_names() const override { return loose_names_.load(); }
  uint64_t zpl_version() const override { return version_; }
  bool readonly() const override UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    return readonly_locked();
  }
  ZplStatus RefreshProps() override UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    return RefreshPropsLocked();
  }

  // ------------------------------------------------------------------ names
  ZplResult<ZplAttr> Lookup(const ZplCred& c, uint64_t dir, std::string_view name) override
      UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    ZPL_ASSIGN(Znode d, Load(dir));
    if (!IsDir(d.a.mode)) return Err(ENOTDIR, "not a directory");
    ZPL_TRY(Perm(c, d.a, X_OK));
    if (name == ".") return ToAttr(d);
    if (name == "..") {
      ZPL_ASSIGN(Znode p, Load(d.a.parent));
      return ToAttr(p);
    }
    ZPL_TRY(ValidName(name));
    ZPL_ASSIGN(std::optional<uint64_t> v, DirLookup(dir, name));
    if (!v) return Err(ENOENT, std::string(name) + ": no such entry");
    ZPL_ASSIGN(Znode z, Load(*v & kDirentObjMask));
    return ToAttr(z);
  }

  ZplResult<ZplAttr> GetAttr(uint64_t ino) override UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    ZPL_ASSIGN(Znode z, Load(ino));
    return ToAttr(z);
  }

  ZplResult<ZplAttr> SetAttr(const ZplCred& c, uint64_t ino, const ZplSetAttr& set) override
      UZFS_EXCLUDES(mu_) {
    SyncAlways sync_always(this);
    MutexLock l(&mu_);
    ZPL_TRY(Writable());
    ZPL_ASSIGN(Znode z, Load(ino));
    // Linux's rule: set-group-ID without group execute marks mandatory
    // locking and stays.
    auto killed = [](uint64_t mode) {
      mode &= ~uint64_t{S_ISUID};
      if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP)) mode &= ~uint64_t{S_ISGID};
      return mode;
    };
    const bool only_kill = set.kill_suidgid && !set.mode && !set.uid && !set.gid && !set.size && !set.atime &&
                           !set.mtime;
    if (only_kill && killed(z.a.mode) == z.a.mode) return ToAttr(z);
    const bool owner = c.uid == 0 || c.uid == z.a.uid;
    // Checks first: a refused change changes nothing.
    if (set.mode && !owner) return Err(EPERM, "chmod: not the owner");
    if (set.uid && *set.uid != z.a.uid && c.uid != 0) return Err(EPERM, "chown: not root");
    if (set.gid && *set.gid != z.a.gid && c.uid != 0 && (c.uid != z.a.uid || !InGroup(c, *set.gid)))
      return Err(EPERM, "chgrp: not the owner or not a member of the group");
    // A handle open for writing was checked when it was opened: a size or
    // time change through it needs no more permission. Through any other
    // handle the usual checks apply.
    bool via_writer = false;
    if (set.handle) {
      auto h = handles_.find(*set.handle);
      if (h == handles_.end() || h->second.ino != ino) return Err(EBADF, "bad handle");
      via_writer = (h->second.flags & O_ACCMODE) != O_RDONLY;
    }
    if (set.size) {
      if (IsDir(z.a.mode)) return Err(EISDIR, "truncate of a directory");
      if (!IsReg(z.a.mode)) return Err(EINVAL, "truncate of a special file");
      if (!via_writer) ZPL_TRY(Perm(c, z.a, W_OK));
      if (*set.size > kMaxFileSize) return Err(EFBIG, "size too large");
    }
    std::optional<struct timespec> mtime = set.mtime;
    if (mtime && !owner && set.mtime_is_now_for_non_owner && mtime->tv_nsec != UTIME_OMIT) {
      mtime = timespec{0, UTIME_NOW};
    }
    const std::optional<struct timespec>* const times[] = {&set.atime, &mtime};
    for (const auto* t : times) {
      if (!*t) continue;
      if (!owner && !via_writer) {
        if ((*t)->tv_nsec != UTIME_NOW) return Err(EPERM, "utimes: not the owner");
        ZPL_TRY(Perm(c, z.a, W_OK));
      }
    }
    uint64_t est = kMetaTxBytes;
    if (set.size && *set.size > z.a.size) ZPL_TRY(CheckSpace(est));
    ZPL_ASSIGN_S(Tx tx, BeginTx(est));
    const uint64_t txg = tx.txg();
    const ZplTimespec now = Now();
    if (set.mode) {
      uint64_t perm = *set.mode & 07777;
      if (c.uid != 0 && (perm & S_ISGID) && !InGroup(c, z.a.gid)) perm &= ~uint64_t{S_ISGID};
      z.a.mode = (z.a.mode & kSIfMt) | perm;
      SetTrivialAcl(z.a);
    }
    if (set.uid) z.a.uid = *set.uid;
    if (set.gid) z.a.gid = *set.gid;
    if ((set.uid || set.gid) && c.uid != 0 && !IsDir(z.a.mode))
      z.a.mode &= ~uint64_t{S_ISUID | S_ISGID};
    const uint64_t mode_before_kill = z.a.mode;
    if (set.kill_suidgid) {
      z.a.mode = killed(z.a.mode);
      if (z.a.mode != mode_before_kill) SetTrivialAcl(z.a);
    }
    if (set.size) {
      ZPL_TRY(Truncate(z, *set.size, txg));
      z.a.mtime = now;
    }
    auto pick = [&](const struct timespec& t) {
      if (t.tv_nsec == UTIME_NOW) return now;
      return ZplTimespec{static_cast<uint64_t>(t.tv_sec), static_cast<uint64_t>(t.tv_nsec)};
    };
    if (set.atime && set.atime->tv_nsec != UTIME_OMIT) z.a.atime = pick(*set.atime);
    if (mtime && mtime->tv_nsec != UTIME_OMIT) z.a.mtime = pick(*mtime);
    z.a.ctime = now;
    ZPL_TRY(Store(z, txg));
    {
      uint64_t mask = 0;
      if (set.mode || z.a.mode != mode_before_kill) mask |= kAtMode;
      if (set.uid) mask |= kAtUid;
      if (set.gid) mask |= kAtGid;
      if (set.size) mask |= kAtSize;
      if (set.atime && set.atime->tv_nsec != UTIME_OMIT) mask |= kAtAtime;
      if (mtime && mtime->tv_nsec != UTIME_OMIT) mask |= kAtMtime;
      if (mask != 0) Log(LogSetattr(ino, mask, z.a.mode, z.a.uid, z.a.gid, z.a.size, z.a.atime, z.a.mtime), txg);
    }
    tx.Commit(kMetaDirtyBytes);
    ZPL_ASSIGN(Znode fresh, Load(ino));
    return ToAttr(fresh);
  }

  ZplResult<ZplAttr> Mknod(const ZplCred& c, uint64_t dir, std::string_view name, uint32_t mode,
                           uint64_t rdev) override UZFS_EXCLUDES(mu_) {
    SyncAlways sync_always(this);
    const uint32_t fmt = mode & S_IFMT;
    if (fmt != S_IFREG && fmt != S_IFCHR && fmt != S_IFBLK && fmt != S_IFIFO && fmt != S_IFSOCK)
      return Err(EINVAL, "mknod: bad file type");
    MutexLock l(&mu_);
    ZPL_ASSIGN(Znode z, CreateNode(c, dir, name, mode, rdev, {}));
    return ToAttr(z);
  }

  ZplResult<ZplAttr> Mkdir(const ZplCred& c, uint64_t dir, std::string_view name, uint32_t mode) override
      UZFS_EXCLUDES(mu_) {
    SyncAlways sync_always(this);
    MutexLock l(&mu_);
    ZPL_ASSIGN(Znode z, CreateNode(c, dir, name, S_IFDIR | (mode & 07777), 0, {}));
    return ToAttr(z);
  }

  ZplResult<ZplAttr> Symlink(const ZplCred& c, uint64_t dir, std::string_view name,
                             std::string_view target) override UZFS_EXCLUDES(mu_) {
    SyncAlways sync_always(this);
    if (target.empty()) return Err(ENOENT, "empty symlink target");
    if (target.size() > kSymlinkMax) return Err(ENAMETOOLONG, "symlink target too long");
    MutexLock l(&mu_);
    ZPL_ASSIGN(Znode z, CreateNode(c, dir, name, S_IFLNK | 0777, 0, std::string(target)));
    return ToAttr(z);
  }

  ZplResult<std::string> ReadLink(uint64_t ino) override UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    ZPL_ASSIGN(Znode z, Load(ino));
    if (!IsLnk(z.a.mode)) return Err(EINVAL, "not a symlink");
    ZPL_TRY(TouchAtime(z));
    if (z.a.symlink) return *z.a.symlink;
    std::string s(z.a.size, '\0');
    ZPL_TRY_S(os_->Read(ino, 0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(s.data()), s.size())));
    return s;
  }

  ZplResult<ZplAttr> Link(const ZplCred& c, uint64_t ino, uint64_t newdir, std::string_view newname) override
      UZFS_EXCLUDES(mu_) {
    SyncAlways sync_always(this);
    MutexLock l(&mu_);
    ZPL_TRY(Writable());
    ZPL_TRY(ValidName(newname));
    if (newname == "." || newname == "..") return Err(EEXIST, "link: name exists");
    ZPL_ASSIGN(Znode z, Load(ino));
    if (IsDir(z.a.mode)) return Err(EPERM, "hard link to a directory");
    if (z.a.links >= kMaxLinks) return Err(EMLINK, "too many links");
    if (z.a.links == 0) return Err(ENOENT, "link of an unlinked file");
    ZPL_ASSIGN(Znode d, Load(newdir));
    if (!IsDir(d.a.mode)) return Err(ENOTDIR, "not a directory");
    if (d.a.links == 0) return Err(ENOENT, "directory was removed");
    ZPL_TRY(Perm(c, d.a, W_OK | X_OK));
    ZPL_ASSIGN(std::optional<uint64_t> ex, DirLookup(newdir, newname));
    if (ex) return Err(EEXIST, "link: name exists");
    ZPL_TRY(CheckSpace(kMetaTxBytes));
    ZPL_ASSIGN_S(Tx tx, BeginTx(kMetaTxBytes));
    const uint64_t txg = tx.txg();
    const ZplTimespec now = Now();
    ZPL_TRY(DirAdd(newdir, newname, DirentOf(z.a.mode, ino), txg));
    z.a.links++;
    z.a.ctime = now;
    ZPL_TRY(Store(z, txg));
    d.a.size++;
    d.a.mtime = d.a.ctime = now;
    ZPL_TRY(Store(d, txg));
    Log(LogLink(newdir, ino, newname), txg);
    tx.Commit(kMetaDirtyBytes);
    return ToAttr(z);
  }

  ZplStatus Unlink(const ZplCred& c, uint64_t dir, std::string_view name) override UZFS_EXCLUDES(mu_) {
    SyncAlways sync_always(this);
    MutexLock l(&mu_);
    ZPL_TRY(Writable());
    if (name == "." || name == "..") return Err(EISDIR, "unlink of . or ..");
    ZPL_TRY(ValidName(name));
    ZPL_ASSIGN(Znode d, Load(dir));
    if (!IsDir(d.a.mode)) return Err(ENOTDIR, "not a directory");
    ZPL_TRY(Perm(c, d.a, W_OK | X_OK));
    ZPL_ASSIGN(std::optional<uint64_t> v, DirLookup(dir, name));
    if (!v) return Err(ENOENT, std::string(name) + ": no such entry");
    ZPL_ASSIGN(Znode z, Load(*v & kDirentObjMask));
    if (IsDir(z.a.mode)) return Err(EISDIR, "unlink of a directory");
    ZPL_TRY(Sticky(c, d.a, z.a));
    ZPL_ASSIGN_S(Tx tx, BeginTx(kMetaTxBytes));
    const uint64_t txg = tx.txg();
    const ZplTimespec now = Now();
    ZPL_TRY(DirRemove(dir, name, txg));
    d.a.size = d.a.size > 2 ? d.a.size - 1 : 2;
    d.a.mtime = d.a.ctime = now;
    ZPL_TRY(Store(d, txg));
    ZPL_TRY(DropLink(z, now, txg));
    Log(LogRemove(TxType::kRemove, dir, name), txg);
    tx.Commit(kMetaDirtyBytes);
    return ZplStatus::Ok();
  }

  ZplStatus Rmdir(const ZplCred& c, uint64_t dir, std::string_view name) override UZFS_EXCLUDES(mu_) {
    SyncAlways sync_always(this);
    MutexLock l(&mu_);
    ZPL_TRY(Writable());
    if (name == ".") return Err(EINVAL, "rmdir of .");
    if (name == "..") return Err(ENOTEMPTY, "rmdir of ..");
    ZPL_TRY(ValidName(name));
    ZPL_ASSIGN(Znode d, Load(dir));
    if (!IsDir(d.a.mode)) return Err(ENOTDIR, "not a directory");
    ZPL_TRY(Perm(c, d.a, W_OK | X_OK));
    ZPL_ASSIGN(std::optional<uint64_t> v, DirLookup(dir, name));
    if (!v) return Err(ENOENT, std::string(name) + ": no such entry");
    ZPL_ASSIGN(Znode z, Load(*v & kDirentObjMask));
    if (!IsDir(z.a.mode)) return Err(ENOTDIR, "rmdir of a non-directory");
    if (z.a.size > 2) return Err(ENOTEMPTY, "directory not empty");
    ZPL_TRY(Sticky(c, d.a, z.a));
    ZPL_ASSIGN_S(Tx tx, BeginTx(kMetaTxBytes));
    const uint64_t txg = tx.txg();
    const ZplTimespec now = Now();
    ZPL_TRY(DirRemove(dir, name, txg));
    d.a.size = d.a.size > 2 ? d.a.size - 1 : 2;
    if (d.a.links > 2) d.a.links--;
    d.a.mtime = d.a.ctime = now;
    ZPL_TRY(Store(d, txg));
    ZPL_TRY(FreeZnode(z, txg));
    Log(LogRemove(TxType::kRmdir, dir, name), txg);
    tx.Commit(kMetaDirtyBytes);
    return ZplStatus::Ok();
  }

  ZplStatus Rename(const ZplCred& c, uint64_t sdir, std::string_view sname, uint64_t tdir,
                   std::string_view tname, unsigned flags) override UZFS_EXCLUDES(mu_) {
    SyncAlways sync_always(this);
    MutexLock l(&mu_);
    if (flags & ~unsigned{RENAME_NOREPLACE | RENAME_EXCHANGE}) return Err(EINVAL, "rename: bad flags");
    if ((flags & RENAME_NOREPLACE) && (flags & RENAME_EXCHANGE))
      return Err(EINVAL, "rename: NOREPLACE with EXCHANGE");
    ZPL_TRY(Writable());
    for (std::string_view n : {sname, tname}) {
      if (n == "." || n == "..") return Err(EINVAL, "rename of . or ..");
      ZPL_TRY(ValidName(n));
    }
    ZPL_ASSIGN(Znode sd, Load(sdir));
    ZPL_ASSIGN(Znode td, Load(tdir));
    if (!IsDir(sd.a.mode) || !IsDir(td.a.mode)) return Err(ENOTDIR, "rename: not a directory");
    ZPL_TRY(Perm(c, sd.a, W_OK | X_OK));
    ZPL_TRY(Perm(c, td.a, W_OK | X_OK));
    ZPL_ASSIGN(std::optional<uint64_t> sv, DirLookup(sdir, sname));
    if (!sv) return Err(ENOENT, std::string(sname) + ": no such entry");
    ZPL_ASSIGN(std::optional<uint64_t> tv, DirLookup(tdir, tname));
    const uint64_t sobj = *sv & kDirentObjMask;
    ZPL_ASSIGN(Znode s, Load(sobj));
    ZPL_TRY(Sticky(c, sd.a, s.a));
    if (flags & RENAME_EXCHANGE) {
      if (!tv) return Err(ENOENT, std::string(tname) + ": no such entry");
    } else if (tv && (flags & RENAME_NOREPLACE)) {
      return Err(EEXIST, std::string(tname) + ": exists");
    }
    std::optional<Znode> t;
    if (tv) {
      ZPL_ASSIGN(Znode tz, Load(*tv & kDirentObjMask));
      t = std::move(tz);
      ZPL_TRY(Sticky(c, td.a, t->a));
    }
    // A directory may not move into its own subtree.
    if (IsDir(s.a.mode) && sdir != tdir) ZPL_TRY(NotAncestor(sobj, tdir));
    if ((flags & RENAME_EXCHANGE) && IsDir(t->a.mode) && sdir != tdir) ZPL_TRY(NotAncestor(t->obj, sdir));
    if (t && t->obj == sobj) {
      // Same inode (the same entry, or two links of one file): nothing to
      // do, except where names match loosely and the target name found the
      // source entry itself under another spelling ("foo" -> "FOO" when
      // case-insensitive): then the entry takes the new spelling.
      if (!RespelledSameEntry(sdir, sname, tdir, tname, flags)) return ZplStatus::Ok();
      t.reset();
    }
    if (t && !(flags & RENAME_EXCHANGE)) {
      if (IsDir(s.a.mode) && !IsDir(t->a.mode)) return Err(ENOTDIR, "rename: directory over non-directory");
      if (!IsDir(s.a.mode) && IsDir(t->a.mode)) return Err(EISDIR, "rename: non-directory over directory");
      if (IsDir(t->a.mode) && t->a.size > 2) return Err(ENOTEMPTY, "rename: target directory not empty");
    }
    ZPL_TRY(CheckSpace(kMetaTxBytes));
    ZPL_ASSIGN_S(Tx tx, BeginTx(kMetaTxBytes));
    const uint64_t txg = tx.txg();
    const ZplTimespec now = Now();
    const bool same_dir = sdir == tdir;
    // sd and td are the same object when same_dir: change one copy.
    Znode& tdr = same_dir ? sd : td;
    if (flags & RENAME_EXCHANGE) {
      ZPL_TRY(DirUpdate(sdir, sname, DirentOf(t->a.mode, t->obj), txg));
      ZPL_TRY(DirUpdate(tdir, tname, DirentOf(s.a.mode, sobj), txg));
      if (!same_dir) {
        const bool sdirp = IsDir(s.a.mode), tdirp = IsDir(t->a.mode);
        if (sdirp) s.a.parent = tdir;
        if (tdirp) t->a.parent = sdir;
        if (sdirp && !tdirp) { sd.a.links--; tdr.a.links++; }
        if (tdirp && !sdirp) { tdr.a.links--; sd.a.links++; }
      }
      s.a.ctime = now;
      t->a.ctime = now;
      ZPL_TRY(Store(s, txg));
      ZPL_TRY(Store(*t, txg));
    } else {
      if (t) {
        ZPL_TRY(DirRemove(tdir, tname, txg));
        tdr.a.size--;
        if (IsDir(t->a.mode)) {
          tdr.a.links--;
          ZPL_TRY(FreeZnode(*t, txg));
        } else {
          ZPL_TRY(DropLink(*t, now, txg));
        }
      }
      ZPL_TRY(DirRemove(sdir, sname, txg));
      sd.a.size--;
      ZPL_TRY(DirAdd(tdir, tname, DirentOf(s.a.mode, sobj), txg));
      tdr.a.size++;
      if (IsDir(s.a.mode) && !same_dir) {
        sd.a.links--;
        tdr.a.links++;
        s.a.parent = tdir;
      }
      s.a.ctime = now;
      ZPL_TRY(Store(s, txg));
    }
    sd.a.mtime = sd.a.ctime = now;
    ZPL_TRY(Store(sd, txg));
    if (!same_dir) {
      td.a.mtime = td.a.ctime = now;
      ZPL_TRY(Store(td, txg));
    }
    if (log_) {
      // Whatever fsync makes the rename durable also carries the moved
      // files' queued data (write tmp, rename over file, fsync the
      // directory: file must not come back empty).
      log_->Untag(sobj);
      if ((flags & RENAME_EXCHANGE) && t) log_->Untag(t->obj);
    }
    Log(LogRename((flags & RENAME_EXCHANGE) != 0, sdir, sname, tdir, tname), txg);
    tx.Commit(kMetaDirtyBytes);
    return ZplStatus::Ok();
  }

  // ------------------------------------------------------------ directories
  ZplResult<std::vector<ZplDirEntry>> ReadDir(const ZplCred& c, uint64_t dir, uint64_t cookie,
                                              size_t max) override UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    ZPL_ASSIGN(Znode d, Load(dir));
    if (!IsDir(d.a.mode)) return Err(ENOTDIR, "not a directory");
    ZPL_TRY(Perm(c, d.a, R_OK));
    std::vector<ZplDirEntry> out;
    if (max == 0 || cookie == kCookieEnd) return out;
    if (cookie == 0) ZPL_TRY(TouchAtime(d));  // as ZFS: reading a directory accesses it
    if (cookie == 0) out.push_back(ZplDirEntry{".", dir, DT_DIR, 1});
    if (cookie <= 1 && out.size() < max) out.push_back(ZplDirEntry{"..", d.a.parent, DT_DIR, 2});
    if (out.size() >= max) return out;
    ZPL_ASSIGN_S(ZapWriter * zap, dirs_.Get(dir, pool_.open_txg()));
    ZapCursor cur = cookie <= 2 ? ZapCursor{} : ZapCursor::Deserialize(cookie - kCookieBase, zap->hash_bits());
    while (out.size() < max && !cur.done) {
      auto r = zap->Read(&cur, 1);
      if (!r.ok()) {
        dirs_.Drop(dir);
        return ZplStatus::FromStatus(r.status());
      }
      if (r->empty()) break;
      const ZapEntry& e = (*r)[0];
      const uint64_t next = cur.done ? kCookieEnd : cur.Serialize(zap->hash_bits()) + kCookieBase;
      out.push_back(ZplDirEntry{e.name, DirentObj(e.value()), DirentType(e.value()), next});
    }
    dirs_.Account(dir);  // the blocks readdir kept count against the cache budget
    return out;
  }

  // ------------------------------------------------------------------ files
  ZplResult<std::pair<ZplAttr, ZplHandle>> Create(const ZplCred& c, uint64_t dir, std::string_view name,
                                                  uint32_t mode, int open_flags,
                                                  ZplHandleUse use) override UZFS_EXCLUDES(mu_) {
    SyncAlways sync_always(this);
    MutexLock l(&mu_);
    ZPL_ASSIGN(Znode d, Load(dir));
    if (!IsDir(d.a.mode)) return Err(ENOTDIR, "not a directory");
    ZPL_TRY(ValidName(name));
    ZPL_ASSIGN(std::optional<uint64_t> ex, DirLookup(dir, name));
    if (ex || name == "." || name == "..") {
      if (open_flags & O_EXCL) return Err(EEXIST, std::string(name) + ": exists");
      ZPL_TRY(Perm(c, d.a, X_OK));
      const uint64_t ino = ex ? (*ex & kDirentObjMask) : dir;
      ZPL_ASSIGN(ZplHandle h, OpenLocked(c, ino, open_flags & ~O_CREAT, use));
      ZPL_ASSIGN(Znode z, Load(ino));
      return std::make_pair(ToAttr(z), h);
    }
    ZPL_ASSIGN(Znode z, CreateNodeIn(c, d, false, name, S_IFREG | (mode & 07777), 0, {}));
    // A new file: no permission check (POSIX), even when `mode` denies the
    // access asked for.
    const ZplHandle h = next_handle_++;
    handles_[h] = Handle{z.obj, HandleFlags(open_flags, use)};
    open_count_[z.obj]++;
    return std::make_pair(ToAttr(z), h);
  }

  ZplResult<ZplHandle> Open(const ZplCred& c, uint64_t ino, int open_flags,
                            ZplHandleUse use) override UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    return OpenLocked(c, ino, open_flags, use);
  }

  ZplStatus Release(ZplHandle h) override UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    return ReleaseLocked(h);
  }

  ZplResult<size_t> Read(ZplHandle h, uint64_t offset, std::span<uint8_t> out) override UZFS_EXCLUDES(mu_) {
    uint64_t ino = 0, size = 0, block_size = 0;
    {
      MutexLock l(&mu_);
      auto it = handles_.find(h);
      if (it == handles_.end()) return Err(EBADF, "bad handle");
      if ((it->second.flags & O_ACCMODE) == O_WRONLY) return Err(EBADF, "handle not open for reading");
      ino = it->second.ino;
      ZPL_ASSIGN(Znode z, Load(ino));
      if (IsDir(z.a.mode)) return Err(EISDIR, "read of a directory");
      size = z.a.size;
      block_size = z.dn.DataBlockSize();
      ZPL_TRY(TouchAtime(z));
    }
    if (offset >= size) return size_t{0};
    const size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), size - offset));
    prefetch_.OnRead(ino, block_size, offset, n, size);  // read-ahead first, so it overlaps
    ZPL_TRY_S(os_->Read(ino, offset, out.subspan(0, n)));
    return n;
  }

  // O_SYNC/O_DSYNC handles: each write is committed to the intent log
  // before it returns.
  ZplResult<size_t> Write(ZplHandle h, uint64_t offset, std::span<const uint8_t> data) override
      UZFS_EXCLUDES(mu_) {
    bool sync = false;
    uint64_t ino = 0;
    ZplResult<size_t> r = WriteLocked(h, offset, data, &sync, &ino);
    const uint64_t mode = sync_mode_.load(std::memory_order_relaxed);
    if (r.ok() && mode != kSyncDisabled && (sync || mode == kSyncAlways)) ZPL_TRY(CommitLog(ino));
    return r;
  }

  ZplResult<size_t> WriteLocked(ZplHandle h, uint64_t offset, std::span<const uint8_t> data, bool* sync,
                                uint64_t* ino) UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    ZPL_TRY(Writable());
    auto it = handles_.find(h);
    if (it == handles_.end()) return Err(EBADF, "bad handle");
    if ((it->second.flags & O_ACCMODE) == O_RDONLY) return Err(EBADF, "handle not open for writing");
    *sync = (it->second.flags & (O_SYNC | O_DSYNC)) != 0;
    *ino = it->second.ino;
    ZPL_ASSIGN(Znode z, Load(it->second.ino));
    if (!IsReg(z.a.mode)) return Err(EINVAL, "write to a non-regular file");
    if (it->second.flags & O_APPEND) offset = z.a.size;
    if (data.empty()) return size_t{0};
    if (offset > kMaxFileSize || data.size() > kMaxFileSize - offset) return Err(EFBIG, "file too large");
    // Pieces of at most kWriteChunk, one transaction each, so one huge
    // call cannot make one huge txg; a failure after some pieces is a
    // short write.
    size_t done = 0;
    while (done < data.size()) {
      const size_t n = std::min(data.size() - done, kWriteChunk);
      ZplStatus s = WritePiece(z, offset + done, data.subspan(done, n));
      if (!s.ok()) {
        if (done > 0) return done;
        return s;
      }
      done += n;
    }
    return done;
  }

  ZplStatus WritePiece(Znode& z, uint64_t offset, std::span<const uint8_t> data) UZFS_REQUIRES(mu_) {
    const uint64_t end = offset + data.size();
    ZPL_ASSIGN_S(uint64_t est, os_->EstimateWrite(z.obj, offset, data.size()));
    est += kMetaTxBytes;
    ZPL_TRY(CheckSpace(est));
    ZPL_ASSIGN_S(Tx tx, BeginTx(est));
    const uint64_t txg = tx.txg();
    ZPL_TRY(GrowBlock(z, end, txg));
    const uint64_t held_before = os_->DirtyBytes(txg);
    ZPL_TRY_S(os_->Write(z.obj, offset, data, txg));
    const uint64_t held_after = os_->DirtyBytes(txg);
    const uint64_t held = held_after > held_before ? held_after - held_before : 0;
    z.a.size = std::max(z.a.size, end);
    z.a.mtime = z.a.ctime = Now();
    ZPL_TRY(Store(z, txg));
    LogWriteData(z, offset, data, txg);
    tx.Commit(WriteDirtyBytes(data.size(), held));
    return ZplStatus::Ok();
  }

  // A write's log records: its bytes copied into the log, or — with
  // logbias=throughput, or for a write of zfs_immediate_write_sz or more when
  // the log has no log device (OpenZFS's rule) — one record per block it
  // touches, logged by reference: the commit writes that block in place
  // and the txg sync reuses it, so the data reaches the disks once.
  void LogWriteData(const Znode& z, uint64_t offset, std::span<const uint8_t> data, uint64_t txg)
      UZFS_REQUIRES(mu_) {
    const bool by_ref = log_ && sync_mode_.load(std::memory_order_relaxed) != kSyncDisabled &&
                        (logbias_throughput_ || (data.size() >= immediate_write_sz_ && !pool_.ZilHasSlog()));
    if (!by_ref) {
      LogWriteOf(z.obj, offset, data, txg);
      return;
    }
    log_changes_.fetch_add(1, std::memory_order_relaxed);
    const uint64_t bs = z.dn.DataBlockSize();
    const uint64_t end = offset + data.size();
    for (uint64_t pos = offset; pos < end;) {
      const uint64_t blkoff = pos % bs;
      const uint64_t n = std::min(bs - blkoff, end - pos);
      LogRecord r = LogWriteByReference(z.obj, pos, n);
      r.txg = txg;
      if (!log_->AppendByReference(std::move(r)).ok()) {
        Unlogged(txg);
        return;
      }
      pos += n;
    }
  }

  // Through the intent log: one log write (group commit) instead of a
  // txg sync, once the log runs; the first fsync starts it (a txg sync).
  // A change that was not logged (xattrs) and has not synced yet, or a
  // failed log write, makes it wait for a txg sync instead (nothing is
  // acknowledged that a crash would lose).
  // Only this file's records and the namespace records queued before
  // (ZilWriter::Commit with its object).
  ZplStatus Fsync(ZplHandle h, bool /*datasync*/) override UZFS_EXCLUDES(mu_) {
    uint64_t ino = 0;
    {
      MutexLock l(&mu_);
      auto it = handles_.find(h);
      if (it == handles_.end()) return Err(EBADF, "bad handle");
      if (readonly_locked()) return ZplStatus::Ok();
      ino = it->second.ino;
    }
    if (sync_mode_.load(std::memory_order_relaxed) == kSyncDisabled) return ZplStatus::Ok();  // unsafe, as asked
    return CommitLog(ino);
  }

  // oid: the file whose records must be durable (0: every record).
  ZplStatus CommitLog(uint64_t oid = 0) UZFS_EXCLUDES(mu_) {
    std::shared_ptr<ZilWriter> log;
    uint64_t ticket = 0;
    {
      MutexLock l(&mu_);
      if (!log_) {
        // No log could be started (the pool is too full for its first
        // block): the txg sync makes the changes durable instead.
        ZplStatus st = StartLogLocked();
        if (st.ok() || st.err() != ENOSPC) return st;
        return ZplStatus::FromStatus(pool_.Sync());
      }
      // The pool may have replaced the log (EvacuateLogDevice): records
      // given to the old one since were not written.
      if (pool_.zil_generation() != log_gen_) {
        log_gen_ = pool_.zil_generation();
        auto cur = pool_.ZilStart(ds_);
        if (!cur.ok()) return ZplStatus::FromStatus(pool_.Sync());
        if (*cur != log_) {
          SetLog(std::move(*cur));
          return ZplStatus::FromStatus(pool_.Sync());
        }
      }
      // zilsaxattr enabled (zpool set) while this log ran: activated now,
      // so later SA xattr changes are logged.
      if (!log_saxattr_ && pool_.feature_generation() != feature_gen_) {
        feature_gen_ = pool_.feature_generation();
        if (pool_.ZilActivateSaXattr(ds_).ok()) log_saxattr_ = pool_.ZilLogsSaXattr(ds_);
      }
      if (unlogged_txg_ > pool_.txg_stats().synced_txg) return ZplStatus::FromStatus(pool_.Sync());
      log = log_;
      ticket = log_->LastTicket();
    }
    if (ticket == 0) return ZplStatus::Ok();
    Status s = log->Commit(ticket, oid);
    if (s.ok()) return ZplStatus::Ok();
    // The log could not be written (a failed log device): a new log takes
    // over (on the main pool when no log device is left) and the txg sync
    // makes everything durable instead. The failed batch has already ended
    // the old log in the txg it held (ZilWriter: its blocks are freed, and
    // the empty header stored, in that one txg); ZilRestart takes the
    // writer away and syncs, which makes the log's records durable.
    {
      MutexLock l(&mu_);
      if (log_ == log) {
        log_gen_ = pool_.zil_generation() + 1;  // ZilRestart closes once
        auto w = pool_.ZilRestart(ds_);
        if (w.ok()) {
          SetLog(std::move(*w));
        } else {
          SetLog(nullptr);
        }
      }
    }
    ZPL_TRY_S(pool_.Sync());
    return ZplStatus::Ok();
  }

  ZplStatus StartLogLocked() UZFS_REQUIRES(mu_) {
    if (log_) return ZplStatus::Ok();
    log_gen_ = pool_.zil_generation();
    auto w = pool_.ZilStart(ds_);
    if (!w.ok()) return ZplStatus::FromStatus(w.status());
    SetLog(std::move(*w));
    return ZplStatus::Ok();
  }

  // The running log, and whether it may take TX_SETSAXATTR records (the
  // dataset's org.openzfs:zilsaxattr is active: Pool::ZilStart).
  void SetLog(std::shared_ptr<ZilWriter> w) UZFS_REQUIRES(mu_) {
    feature_gen_ = pool_.feature_generation();
    log_ = std::move(w);
    log_saxattr_ = log_ && pool_.ZilLogsSaXattr(ds_);
  }

  ZplStatus Fallocate(ZplHandle h, int mode, uint64_t offset, uint64_t length) override UZFS_EXCLUDES(mu_) {
    SyncAlways sync_always(this);
    MutexLock l(&mu_);
    ZPL_TRY(Writable());
    auto it = handles_.find(h);
    if (it == handles_.end()) return Err(EBADF, "bad handle");
    if ((it->second.flags & O_ACCMODE) == O_RDONLY) return Err(EBADF, "handle not open for writing");
    ZPL_ASSIGN(Znode z, Load(it->second.ino));
    if (!IsReg(z.a.mode)) return Err(ENODEV, "fallocate on a non-regular file");
    if (length == 0) return Err(EINVAL, "fallocate: zero length");
    if (offset > kMaxFileSize || length > kMaxFileSize - offset) return Err(EFBIG, "file too large");
    const uint64_t end = offset + length;
    if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)) {
      if (offset >= z.a.size) return ZplStatus::Ok();
      ZPL_ASSIGN_S(Tx tx, BeginTx(kMetaTxBytes));
      const uint64_t n = std::min(end, z.a.size) - offset;
      ZPL_TRY_S(os_->FreeRange(z.obj, offset, n, tx.txg()));
      z.a.mtime = z.a.ctime = Now();
      ZPL_TRY(Store(z, tx.txg()));
      Log(LogTruncate(z.obj, offset, n), tx.txg());
      tx.Commit(kMetaDirtyBytes);
      return ZplStatus::Ok();
    }
    if (mode == FALLOC_FL_KEEP_SIZE) return ZplStatus::Ok();  // ZFS preallocates nothing
    if (mode != 0) return Err(EOPNOTSUPP, "fallocate mode not supported");
    if (end <= z.a.size) return ZplStatus::Ok();
    ZPL_TRY(CheckSpace(kMetaTxBytes));
    ZPL_ASSIGN_S(Tx tx, BeginTx(kMetaTxBytes));
    ZPL_TRY(Truncate(z, end, tx.txg()));
    z.a.ctime = Now();
    ZPL_TRY(Store(z, tx.txg()));
    Log(LogSetattr(z.obj, kAtSize, z.a.mode, z.a.uid, z.a.gid, z.a.size, z.a.atime, z.a.mtime), tx.txg());
    tx.Commit(kMetaDirtyBytes);
    return ZplStatus::Ok();
  }

  ZplResult<uint64_t> Lseek(ZplHandle h, uint64_t offset, int whence) override UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    auto it = handles_.find(h);
    if (it == handles_.end()) return Err(EBADF, "bad handle");
    if (whence != SEEK_DATA && whence != SEEK_HOLE) return Err(EINVAL, "lseek: only SEEK_DATA/SEEK_HOLE");
    ZPL_ASSIGN(Znode z, Load(it->second.ino));
    const uint64_t size = z.a.size;
    if (offset >= size) return Err(ENXIO, "lseek past end of file");
    const uint64_t bs = std::max<uint64_t>(z.dn.DataBlockSize(), 512);
    std::vector<uint8_t> buf(bs);
    // Holes are found by reading (all-zero blocks are holes on disk too).
    // The scan is bounded: past kSeekScanBlocks blocks the rest counts as
    // data (allowed: a hole may always be reported as data), so a huge
    // sparse file cannot make one lseek read for minutes.
    const uint64_t first = offset / bs;
    for (uint64_t blk = first; blk * bs < size; blk++) {
      const uint64_t start = blk * bs;
      if (blk - first >= kSeekScanBlocks) {
        if (whence == SEEK_DATA) return std::max(offset, start);
        return size;
      }
      const size_t n = static_cast<size_t>(std::min<uint64_t>(bs, size - start));
      ZPL_TRY_S(os_->Read(z.obj, start, std::span<uint8_t>(buf.data(), n)));
      const bool zero = std::all_of(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(n),
                                    [](uint8_t b) { return b == 0; });
      if (whence == SEEK_DATA && !zero) return std::max(offset, start);
      if (whence == SEEK_HOLE && zero) return std::max(offset, start);
    }
    if (whence == SEEK_DATA) return Err(ENXIO, "no data after offset");
    return size;
  }

  // ------------------------------------------------------------------ xattrs
  // Where each xattr lives: the SA (ZPL_DXATTR, zpl_xattr_sa.h) of a ZPL 5
  // file on an xattr=sa file system when it fits there, else the hidden
  // xattr directory; both are read and listed whatever the property says,
  // and a name is never left in both.
  ZplStatus SetXattr(const ZplCred& c, uint64_t ino, std::string_view name, std::span<const uint8_t> value,
                     int flags) override UZFS_EXCLUDES(mu_) {
    SyncAlways sync_always(this);
    MutexLock l(&mu_);
    ZPL_TRY(XattrOn());
    ZPL_TRY(Writable());
    ZPL_TRY(CheckXattrName(name));
    if (value.size() > kXattrValueMax) return Err(E2BIG, "xattr value too large");
    if ((flags & XATTR_CREATE) && (flags & XATTR_REPLACE)) return Err(EINVAL, "XATTR_CREATE|XATTR_REPLACE");
    ZPL_ASSIGN(Znode z, Load(ino));
    ZPL_TRY(XattrPerm(c, z.a, name, W_OK));
    ZPL_ASSIGN(SaXattrs sa, LoadSaXattrs(z));
    const bool in_sa = sa.Has(name);
    std::optional<StoredXattr> found;
    if (z.a.xattr != 0) {
      ZPL_ASSIGN(found, FindXattr(z.a.xattr, name));
    }
    if ((found || in_sa) && (flags & XATTR_CREATE)) return Err(EEXIST, "xattr exists");
    if (!found && !in_sa && (flags & XATTR_REPLACE)) return Err(ENODATA, "no such xattr");
    bool to_sa = false;
    if (xattr_sa_ && SaXattrsUsable(z)) {
      ZPL_ASSIGN_S(to_sa, sa.TrySet(name, value));
    }
    if (!to_sa && in_sa) sa.Remove(name);
    const uint64_t est = 2 * kMetaTxBytes + RoundUp(value.size(), 512) * 4;
    ZPL_TRY(CheckSpace(est));
    ZPL_ASSIGN_S(Tx tx, BeginTx(est));
    const uint64_t txg = tx.txg();
    const ZplTimespec now = Now();
    if (to_sa || in_sa) {
      ZPL_ASSIGN_S(z.a.sa_xattrs, sa.Encode());
    }
    if (to_sa) {
      // TX_SETSAXATTR (LogSaXattr), with the removal of a directory xattr
      // of that name before it; both untagged then, so no commit writes
      // one without the other.
      if (found) {
        UntagXattrs(z.obj);
        ZPL_TRY(RemoveDirXattr(z, *found, now, txg));
        Log(LogRemove(TxType::kRemove, z.a.xattr, found->name), txg, 0);
      }
      z.a.ctime = now;
      ZPL_TRY(Store(z, txg));
      LogSaXattr(z.obj, name, value, txg, found ? 0 : z.obj);
      tx.Commit(kMetaDirtyBytes + value.size());
      return ZplStatus::Ok();
    }
    // The value is kept under the full name; an entry under the bare name
    // (another platform's "user." form) is replaced by it. Logged as
    // OpenZFS logs changes of xattr directories (TX_MKXATTR, then records
    // of the files in it), untagged: they go out with the next commit of
    // any file, in order with the namespace records, so the object numbers
    // they name are never reused before them. A value that leaves the SA
    // is removed from the SA (TX_SETSAXATTR without a value, untagged too).
    UntagXattrs(z.obj);
    if (in_sa) LogSaXattr(z.obj, name, std::nullopt, txg, 0);
    std::optional<uint64_t> ex;
    if (found && found->name == name) ex = found->value;
    const bool made_dir = z.a.xattr == 0;
    if (made_dir) {
      ZPL_ASSIGN(uint64_t xd, MakeXattrDir(z, now, txg));
      z.a.xattr = xd;
    }
    ZPL_ASSIGN(Znode xdir, Load(z.a.xattr));
    if (made_dir) {
      Log(LogCreate(TxType::kMkxattr, z.obj, xdir.obj, xdir.a.mode, xdir.a.uid, xdir.a.gid, xdir.a.gen, now.sec,
                    now.nsec, 0, ""),
          txg, 0);
    }
    if (found && found->name != name) {
      ZPL_ASSIGN(Znode old, Load(DirentObj(found->value)));
      ZPL_TRY(DirRemove(xdir.obj, found->name, txg));
      xdir.a.size = xdir.a.size > 2 ? xdir.a.size - 1 : 2;
      ZPL_TRY(FreeZnode(old, txg));
      Log(LogRemove(TxType::kRemove, xdir.obj, found->name), txg, 0);
    }
    Znode f;
    if (ex) {
      ZPL_ASSIGN(f, Load(*ex & kDirentObjMask));
      ZPL_TRY(Truncate(f, 0, txg));
      Log(LogTruncate(f.obj, 0, 0), txg, 0);
    } else {
      ZplCred owner;
      owner.uid = static_cast<uint32_t>(z.a.uid);
      owner.gid = static_cast<uint32_t>(z.a.gid);
      ZPL_ASSIGN(f, NewZnode(owner, xdir, S_IFREG | 0660, 0, now, txg));
      f.a.flags |= kZnodeFlagXattr;
      ZPL_TRY(DirAdd(xdir.obj, name, DirentOf(f.a.mode, f.obj), txg));
      xdir.a.size++;
      xdir.a.mtime = xdir.a.ctime = now;
      ZPL_TRY(Store(xdir, txg));
      Log(LogCreate(TxType::kCreate, xdir.obj, f.obj, f.a.mode, f.a.uid, f.a.gid, f.a.gen, now.sec, now.nsec, 0,
                    name),
          txg, 0);
    }
    if (!value.empty()) {
      ZPL_TRY(GrowBlock(f, value.size(), txg));
      ZPL_TRY_S(os_->Write(f.obj, 0, value, txg));
      Log(LogWrite(f.obj, 0, value), txg, 0);
    }
    f.a.size = value.size();
    f.a.mtime = f.a.ctime = now;
    ZPL_TRY(Store(f, txg));
    z.a.ctime = now;
    ZPL_TRY(Store(z, txg));
    tx.Commit(WriteDirtyBytes(value.size()));
    return ZplStatus::Ok();
  }

  ZplResult<std::vector<uint8_t>> GetXattr(const ZplCred& c, uint64_t ino, std::string_view name) override
      UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    ZPL_TRY(XattrOn());
    ZPL_TRY(CheckXattrName(name));
    {
      ZPL_ASSIGN(Znode z, Load(ino));
      ZPL_TRY(XattrPerm(c, z.a, name, R_OK));
      ZPL_ASSIGN(SaXattrs sa, LoadSaXattrs(z));
      if (auto v = sa.Get(name)) return std::move(*v);
    }
    ZPL_ASSIGN(ExistingXattr x, FindExistingXattr(c, ino, name, R_OK));
    const Znode& f = x.file;
    std::vector<uint8_t> out(f.a.size);
    ZPL_TRY_S(os_->Read(f.obj, 0, out));
    return out;
  }

  ZplResult<std::vector<std::string>> ListXattr(const ZplCred& c, uint64_t ino) override UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    ZPL_TRY(XattrOn());
    ZPL_ASSIGN(Znode z, Load(ino));
    (void)c;
    ZPL_ASSIGN(SaXattrs sa, LoadSaXattrs(z));
    std::vector<std::string> out = sa.Names();
    if (z.a.xattr == 0) return out;
    ZPL_ASSIGN(std::vector<ZapEntry> es, DirList(z.a.xattr, pool_.open_txg()));
    for (ZapEntry& e : es) {
      std::string n = ListedXattrName(std::move(e.name));
      if (!sa.Has(n)) out.push_back(std::move(n));
    }
    return out;
  }

  ZplStatus RemoveXattr(const ZplCred& c, uint64_t ino, std::string_view name) override UZFS_EXCLUDES(mu_) {
    SyncAlways sync_always(this);
    MutexLock l(&mu_);
    ZPL_TRY(XattrOn());
    ZPL_TRY(Writable());
    ZPL_TRY(CheckXattrName(name));
    ZPL_ASSIGN(Znode z, Load(ino));
    ZPL_TRY(XattrPerm(c, z.a, name, W_OK));
    ZPL_ASSIGN(SaXattrs sa, LoadSaXattrs(z));
    const bool in_sa = sa.Remove(name);
    std::optional<StoredXattr> found;
    if (z.a.xattr != 0) {
      ZPL_ASSIGN(found, FindXattr(z.a.xattr, name));
    }
    if (!in_sa && !found) return Err(ENODATA, "no such xattr");
    ZPL_ASSIGN_S(Tx tx, BeginTx(kMetaTxBytes));
    const uint64_t txg = tx.txg();
    const ZplTimespec now = Now();
    if (found) UntagXattrs(z.obj);  // untagged records follow
    if (in_sa) {
      ZPL_ASSIGN_S(z.a.sa_xattrs, sa.Encode());
      LogSaXattr(z.obj, name, std::nullopt, txg, found ? 0 : z.obj);
    }
    if (found) {
      ZPL_TRY(RemoveDirXattr(z, *found, now, txg));
      Log(LogRemove(TxType::kRemove, z.a.xattr, found->name), txg, 0);  // see SetXattr
    }
    z.a.ctime = now;
    ZPL_TRY(Store(z, txg));
    tx.Commit(kMetaDirtyBytes);
    return ZplStatus::Ok();
  }

  // ------------------------------------------------------------ file system
  ZplResult<struct statvfs> StatFs() override UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    ZPL_ASSIGN_S(DatasetSpace sp, DatasetListSpace(pool_, ds_));
    const uint64_t dirty = 2 * DirtyNow(pool_.txg_stats());
    const uint64_t avail = sp.avail > dirty ? sp.avail - dirty : 0;
    struct statvfs st {};
    const uint64_t bs = recordsize_;
    st.f_bsize = bs;
    st.f_frsize = bs;
    st.f_blocks = (sp.refer + avail) / bs;
    st.f_bfree = avail / bs;
    st.f_bavail = avail / bs;
    uint64_t used_objs = 0;
    const Objset o = os_->objset();
    for (const BlockPtr& bp : o.meta_dnode.blkptr) used_objs += bp.fill;
    const uint64_t avail_objs = avail >> 9;
    st.f_files = used_objs + avail_objs;
    st.f_ffree = avail_objs;
    st.f_favail = avail_objs;
    st.f_fsid = pool_.guid() ^ std::hash<std::string>()(ds_);
    st.f_flag = readonly_locked() ? ST_RDONLY : 0;
    st.f_namemax = kNameMax;
    return st;
  }

  ZplStatus SyncFs() override UZFS_EXCLUDES(mu_) {
    if (pool_.readonly()) return ZplStatus::Ok();
    return ZplStatus::FromStatus(pool_.Sync());
  }

  ZplStatus Access(const ZplCred& c, uint64_t ino, int mask) override UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    ZPL_ASSIGN(Znode z, Load(ino));
    if ((mask & W_OK) && readonly_locked()) return Err(EROFS, "read-only file system");
    if (mask == F_OK) return ZplStatus::Ok();
    return Perm(c, z.a, mask & (R_OK | W_OK | X_OK));
  }

 private:
  bool readonly_locked() const UZFS_REQUIRES(mu_) {
    return mount_readonly_ || readonly_prop_ || pool_.readonly();
  }
  ZplStatus Writable() const UZFS_REQUIRES(mu_) {
    if (readonly_locked()) return Err(EROFS, "read-only file system");
    return ZplStatus::Ok();
  }
  // Rename's case above: the same entry of one directory, named now in
  // another spelling.
  bool RespelledSameEntry(uint64_t sdir, std::string_view sname, uint64_t tdir, std::string_view tname,
                                unsigned flags) UZFS_REQUIRES(mu_) {
    if (sdir != tdir || match_ == 0 || (flags & RENAME_EXCHANGE)) return false;
    auto ss = DirStoredName(sdir, sname);
    auto ts = DirStoredName(tdir, tname);
    return ss.ok() && ts.ok() && *ss && *ts && **ss == **ts && **ts != tname;
  }
  // A name given by a caller: CheckName's rules, and UTF-8 on utf8only
  // file systems (EILSEQ, as ZFS answers for lookups and new names alike).
  ZplStatus ValidName(std::string_view name) const UZFS_REQUIRES(mu_) {
    ZPL_TRY(CheckName(name));
    if (utf8only_ && !IsValidUtf8(name)) return Err(EILSEQ, "name is not valid UTF-8 (utf8only=on)");
    return ZplStatus::Ok();
  }
  ZplStatus XattrOn() const UZFS_REQUIRES(mu_) {
    if (!xattr_) return Err(EOPNOTSUPP, "xattr=off");
    return ZplStatus::Ok();
  }

  // ---- properties
  // The effective value of a numeric/index property (nearest dataset that
  // sets it, else the table default); `inherit` false: this dataset only.
  uint64_t PropNumber(const std::string& name, bool inherit) UZFS_REQUIRES(mu_) {
    if (auto v = PropSetValue(name, inherit)) return *v;
    const PropDef* def = FindDatasetProp(name);
    return def ? def->default_number : 0;
  }
  // The value of the nearest dataset that sets the property, or nullopt.
  std::optional<uint64_t> PropSetValue(const std::string& name, bool inherit) UZFS_REQUIRES(mu_) {
    std::string ds = ds_;
    for (;;) {
      auto props = pool_.LocalProps(ds);
      if (props.ok()) {
        auto it = props->find(name);
        if (it != props->end()) return std::strtoull(it->second.c_str(), nullptr, 10);
      }
      const size_t slash = ds.rfind('/');
      if (!inherit || slash == std::string::npos) break;
      ds.resize(slash);
    }
    return std::nullopt;
  }

  ZplStatus RefreshPropsLocked() UZFS_REQUIRES(mu_) {
    recordsize_ = PropNumber("recordsize", true);
    // Over 128K only where the pool has large_blocks (a value stored by
    // another implementation is clamped, never written past the limit).
    if (recordsize_ < 512 || (recordsize_ & (recordsize_ - 1))) recordsize_ = 131072;
    recordsize_ = std::min(recordsize_, pool_.max_record_size());
    atime_ = PropNumber("atime", true) != 0;
    relatime_ = FindDatasetProp("relatime") != nullptr && PropNumber("relatime", true) != 0;
    sync_mode_.store(PropSetValue("sync", true).value_or(0), std::memory_order_relaxed);
    logbias_throughput_ = PropSetValue("logbias", true).value_or(0) == 1;
    readonly_prop_ = PropNumber("readonly", true) != 0;
    // xattr: 0 off, 1 dir (and "on" as zfs-fuse and OpenZFS <= 2.2 store
    // it), 2 sa; unset means "on", which (as in OpenZFS 2.3) is sa where
    // the file system has system attributes (ZPL 5). See man/zfs.8.
    const std::optional<uint64_t> xattr = PropSetValue("xattr", true);
    xattr_ = !xattr || *xattr != 0;
    xattr_sa_ = version_ >= kZplVersionSa && (!xattr || *xattr == 2);
    quota_ = PropNumber("quota", false);
    refquota_ = PropNumber("refquota", false);
    space_txg_ = UINT64_MAX;  // re-read space at the next check
    return ZplStatus::Ok();
  }

  uint64_t DirtyNow(const TxgStats& ts) const {
    uint64_t dirty = 0;
    for (uint64_t t = ts.synced_txg + 1; t <= ts.open_txg; t++) dirty += os_->DirtyBytes(t);
    return dirty;
  }

  // ENOSPC/EDQUOT when `bytes` more might not fit (see the file comment).
  // When only the unsynced bytes make it not fit, their txgs are synced
  // first and the check made again (ZFS's ERESTART: wait for the txg, not
  // fail): the dirty count is a worst case, and without the wait a burst
  // of writes (or a replay, all in one open txg) on a small pool failed
  // with space to spare.
  ZplStatus CheckSpace(uint64_t bytes) UZFS_REQUIRES(mu_) {
    for (bool synced = false;; synced = true) {
      uint64_t pending = 0;
      ZPL_ASSIGN(Room room, RoomLocked(&pending));
      const uint64_t need = bytes + pending;
      ZplStatus s = ZplStatus::Ok();
      if (need > room.quota) {
        s = Err(EDQUOT, quota_ != 0 && space_.used + need > quota_ ? "quota exceeded" : "refquota exceeded");
      } else if (need > room.pool) {
        s = Err(ENOSPC, "no space left in dataset '" + ds_ + "'");
      }
      if (s.ok() || synced || pending == kSpaceMargin) return s;
      ZPL_TRY_S(pool_.Sync());
    }
  }

  // What is left under the dataset's limits before anything pending is
  // counted: quota (the tighter of quota and refquota; max when neither is
  // set) and the pool's AVAIL for it. *pending: what CheckSpace adds to a
  // change's own estimate: this dataset's bytes dirty in txgs not yet
  // synced, twice (data copies and the metadata above them), the pool's
  // live log blocks in the main class (AVAIL still counts them as free
  // until the txgs they log sync) and a margin for the MOS and space maps.
  struct Room {
    uint64_t quota = UINT64_MAX, pool = 0;
  };
  ZplResult<Room> RoomLocked(uint64_t* pending) UZFS_REQUIRES(mu_) {
    const TxgStats ts = pool_.txg_stats();
    if (space_txg_ != ts.synced_txg) {
      ZPL_ASSIGN_S(DatasetSpace sp, DatasetListSpace(pool_, ds_));
      space_ = sp;
      space_txg_ = ts.synced_txg;
    }
    *pending = 2 * DirtyNow(ts) + pool_.zil_main_bytes() + kSpaceMargin;
    Room r;
    if (quota_ != 0) r.quota = quota_ > space_.used ? quota_ - space_.used : 0;
    if (refquota_ != 0) r.quota = std::min(r.quota, refquota_ > space_.refer ? refquota_ - space_.refer : 0);
    r.pool = space_.avail;
    return r;
  }

  uint64_t WriteRoom() override UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    if (readonly_locked()) return 0;
    uint64_t pending = 0;
    auto room = RoomLocked(&pending);
    if (!room.ok()) return 0;
    const uint64_t limit = std::min(room->quota, room->pool);
    return limit > pending ? limit - pending : 0;
  }

  // ---- permissions
  static bool InGroup(const ZplCred& c, uint64_t gid) {
    if (c.gid == gid) return true;
    return std::find(c.groups.begin(), c.groups.end(), gid) != c.groups.end();
  }
  static ZplStatus Perm(const ZplCred& c, const ZnodeAttrs& a, int want) {
    if (want == 0) return ZplStatus::Ok();
    if (c.uid == 0) {
      if ((want & X_OK) && !IsDir(a.mode) && (a.mode & 0111) == 0) return Err(EACCES, "no execute permission");
      return ZplStatus::Ok();
    }
    uint64_t bits;
    if (c.uid == a.uid) bits = (a.mode >> 6) & 7;
    else if (InGroup(c, a.gid)) bits = (a.mode >> 3) & 7;
    else bits = a.mode & 7;
    if ((bits & static_cast<uint64_t>(want)) != static_cast<uint64_t>(want)) return Err(EACCES, "permission denied");
    return ZplStatus::Ok();
  }
  static ZplStatus Sticky(const ZplCred& c, const ZnodeAttrs& dir, const ZnodeAttrs& f) {
    if (!(dir.mode & S_ISVTX) || c.uid == 0 || c.uid == dir.uid || c.uid == f.uid) return ZplStatus::Ok();
    return Err(EPERM, "sticky directory: not the owner");
  }
  // Linux's rules (xattr_permission): trusted.* needs root; user.* exists
  // only on regular files and directories (EPERM to change, ENODATA to
  // read elsewhere) and needs the file's read/write permission; other
  // namespaces (security., system.) the file's permission.
  static ZplStatus XattrPerm(const ZplCred& c, const ZnodeAttrs& a, std::string_view name, int want) {
    if (name.starts_with("trusted.") && c.uid != 0) return Err(want == R_OK ? ENODATA : EPERM, "trusted.* needs root");
    if (name.starts_with("user.") && !IsReg(a.mode) && !IsDir(a.mode))
      return Err(want == R_OK ? ENODATA : EPERM, "user.* xattrs only on files and directories");
    if (c.uid == 0) return ZplStatus::Ok();
    return Perm(c, a, want);
  }
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
      UZFS_REQUIRES(mu_) {
    ZPL_TRY(CheckXattrName(name));
    ExistingXattr x;
    ZPL_ASSIGN(x.owner, Load(ino));
    ZPL_TRY(XattrPerm(c, x.owner.a, name, mask));
    if (x.owner.a.xattr == 0) return Err(ENODATA, "no such xattr");
    ZPL_ASSIGN(x.stored, FindXattr(x.owner.a.xattr, name));
    if (!x.stored) return Err(ENODATA, "no such xattr");
    ZPL_ASSIGN(x.file, Load(DirentObj(x.stored->value)));
    return x;
  }
  ZplResult<std::optional<StoredXattr>> FindXattr(uint64_t xdir, std::string_view name) UZFS_REQUIRES(mu_) {
    ZPL_ASSIGN(std::optional<uint64_t> v, DirLookup(xdir, name));
    if (v) return std::optional<StoredXattr>(StoredXattr{std::string(name), *v});
    if (name.starts_with("user.") && name.size() > 5) {
      ZPL_ASSIGN(std::optional<uint64_t> b, DirLookup(xdir, name.substr(5)));
      if (b) return std::optional<StoredXattr>(StoredXattr{std::string(name.substr(5)), *b});
    }
    return std::optional<StoredXattr>();
  }
  // Removes the directory xattr `x` of `z` (its entry and its file) in txg.
  ZplStatus RemoveDirXattr(const Znode& z, const StoredXattr& x, const ZplTimespec& now, uint64_t txg)
      UZFS_REQUIRES(mu_) {
    ZPL_ASSIGN(Znode xdir, Load(z.a.xattr));
    ZPL_ASSIGN(Znode f, Load(DirentObj(x.value)));
    ZPL_TRY(DirRemove(xdir.obj, x.name, txg));
    xdir.a.size = xdir.a.size > 2 ? xdir.a.size - 1 : 2;
    xdir.a.mtime = xdir.a.ctime = now;
    ZPL_TRY(Store(xdir, txg));
    return FreeZnode(f, txg);
  }
  // SA xattrs exist on files whose attributes are system attributes (ZPL
  // 5; not a file still in its pre-upgrade znode_phys bonus).
  bool SaXattrsUsable(const Znode& z) const {
    return codec_->zpl_version() >= kZplVersionSa && z.dn.bonustype == kBonusTypeSa;
  }
  ZplResult<SaXattrs> LoadSaXattrs(const Znode& z) const {
    auto x = SaXattrs::Decode(z.a.sa_xattrs);
    if (!x.ok()) return Err(EIO, "object " + std::to_string(z.obj) + ": " + x.status().ToString());
    return std::move(*x);
  }
  // A stored name as listxattr shows it: names without a Linux namespace
  // are user attributes.
  static std::string ListedXattrName(std::string stored) {
    for (std::string_view ns : {"user.", "trusted.", "security.", "system."}) {
      if (stored.starts_with(ns)) return stored;
    }
    return "user." + stored;
  }
  static ZplStatus CheckXattrName(std::string_view name) {
    if (name.empty()) return Err(ERANGE, "empty xattr name");
    if (name.size() > kNameMax) return Err(ERANGE, "xattr name too long");
    if (name.find('/') != std::string_view::npos) return Err(EINVAL, "xattr name contains '/'");
    if (name == "." || name == "..") return Err(EINVAL, "bad xattr name");
    return ZplStatus::Ok();
  }

  // ---- znodes
  ZplResult<Znode> Load(uint64_t obj) UZFS_REQUIRES(mu_) {
    if (obj == 0) return Err(ENOENT, "object 0");
    auto dn = os_->GetDnode(obj);
    if (!dn.ok()) {
      if (dn.status().code() == Code::kNotFound) return Err(ENOENT, "no object " + std::to_string(obj));
      return ZplStatus::FromStatus(dn.status());
    }
    if (dn->type != dmu_ot::kPlainFileContents && dn->type != dmu_ot::kDirectoryContents)
      return Err(ENOENT, "object " + std::to_string(obj) + " is not a file or directory");
    // ZPL 5: attributes beyond the bonus are in the spill block.
    std::vector<uint8_t> spill;
    if (dn->spill) {
      auto sp = os_->ReadSpill(obj);
      if (!sp.ok()) return Err(EIO, "object " + std::to_string(obj) + ": " + sp.status().ToString());
      spill = std::move(*sp);
    }
    auto a = codec_->Decode(dn->bonustype, dn->bonus, spill, dn->byteswapped);
    if (!a.ok()) return Err(EIO, "object " + std::to_string(obj) + ": " + a.status().ToString());
    Znode z;
    z.obj = obj;
    z.dn = std::move(*dn);
    z.a = std::move(*a);
    return z;
  }

  ZplStatus Store(Znode& z, uint64_t txg) UZFS_REQUIRES(mu_) {
    // The room of a bonus without a spill pointer: the codec takes the
    // pointer's 128 bytes from it itself when it spills.
    Dnode layout = z.dn;
    layout.flags &= static_cast<uint8_t>(~kDnodeFlagSpillBlkptr);
    const size_t room = layout.MaxBonusLen();
    ZPL_ASSIGN_S(EncodedZnode e, EncodeZnodeIn(*codec_, *os_, z.a, room, txg));
    const bool had_spill = (z.dn.flags & kDnodeFlagSpillBlkptr) != 0;
    // ZPL <= 4: an ACL the codec could not model (external, or ACEs naming
    // users/groups; decoded as empty) keeps its original bytes.
    constexpr size_t kAclOff = 176;
    if (codec_->zpl_version() <= 4 && z.a.acl.empty() && z.dn.bonus.size() >= kZnodePhysSize &&
        e.bonus.size() >= kZnodePhysSize && !z.dn.byteswapped) {
      std::copy(z.dn.bonus.begin() + kAclOff, z.dn.bonus.begin() + kZnodePhysSize, e.bonus.begin() + kAclOff);
    }
    // A spill shrinks the bonus room, so the bonus is set first when one
    // is (still) needed, and the spill removed first when it is not.
    if (e.spill.empty() && had_spill) ZPL_TRY_S(os_->SetSpill(z.obj, {}, txg));
    ZPL_TRY_S(os_->SetBonus(z.obj, e.bonustype, e.bonus, txg));
    if (!e.spill.empty()) ZPL_TRY_S(os_->SetSpill(z.obj, e.spill, txg));
    if (e.spill.empty()) {
      z.dn.flags &= static_cast<uint8_t>(~kDnodeFlagSpillBlkptr);
    } else {
      z.dn.flags |= kDnodeFlagSpillBlkptr;
    }
    return ZplStatus::Ok();
  }

  ZplAttr ToAttr(const Znode& z) const {
    ZplAttr at;
    at.ino = z.obj;
    at.parent = z.a.parent;
    at.gen = z.a.gen;
    at.mode = static_cast<uint32_t>(z.a.mode);
    at.nlink = z.a.links;
    at.uid = static_cast<uint32_t>(z.a.uid);
    at.gid = static_cast<uint32_t>(z.a.gid);
    at.rdev = DecodeRdev(z.a.rdev);
    at.size = z.a.size;
    uint64_t used = z.dn.UsedBytes();
    if (used == 0 && IsReg(z.a.mode) && z.a.size > 0) used = RoundUp(std::min(z.a.size, z.dn.DataBlockSize() * (z.dn.maxblkid + 1)), 512);
    at.blocks = (used + 511) / 512;
    at.blksize = static_cast<uint32_t>(std::max<uint64_t>(z.dn.DataBlockSize(), 512));
    at.atime = ToTs(z.a.atime);
    at.mtime = ToTs(z.a.mtime);
    at.ctime = ToTs(z.a.ctime);
    at.crtime = ToTs(z.a.crtime);
    return at;
  }

  static void SetTrivialAcl(ZnodeAttrs& a) {
    const uint64_t perm = a.mode & 0777;
    const uint64_t keep = a.flags & ~(znode_flag::kAclTrivial | znode_flag::kAclAutoInherit |
                                      znode_flag::kNoExecsDenied | znode_flag::kArchive |
                                      znode_flag::kAvModified);
    a.flags = keep | TrivialAclFlags(perm);
    // zfs-fuse gives ACL_AUTO_INHERIT to directories only (checked on its
    // files, fifos, symlinks, xattr files and directories).
    if (!IsDir(a.mode)) a.flags &= ~znode_flag::kAclAutoInherit;
    a.acl = TrivialAcl(perm);
  }

  // A new object for a znode of `mode` whose parent is `dir` (not linked
  // into it: the caller adds the entry). Symlink targets go to the bonus
  // or data block 0.
  ZplResult<Znode> NewZnode(const ZplCred& c, const Znode& dir, uint64_t mode, uint64_t rdev,
                            const ZplTimespec& now, uint64_t txg,
                            const std::optional<std::string>& target = {}) UZFS_REQUIRES(mu_) {
    const uint8_t ibs = legacy_ ? kLegacyIndBlkShift : 17;
    const bool sa = version_ >= kZplVersionSa;
    const uint8_t btype = sa ? kBonusTypeSa : kBonusTypeZnode;
    const uint16_t blen = static_cast<uint16_t>(sa ? kSaBonusRoom512 : kZnodePhysSize);
    uint64_t obj = 0;
    if (IsDir(mode)) {
      ZapWriteOptions zo;
      zo.normflags = dir_norm_;
      ZPL_ASSIGN_S(obj, CreateZapObject(*os_, dmu_ot::kDirectoryContents, txg, btype, blen, zo, ibs));
    } else {
      ObjectProps p;
      p.type = dmu_ot::kPlainFileContents;
      p.bonustype = btype;
      p.bonuslen = blen;
      p.block_size = 512;
      p.indblkshift = ibs;
      p.dnode_size = kDnodeSlotSize;
      ZPL_ASSIGN_S(obj, os_->AllocateObject(p, txg));
    }
    Znode z;
    z.obj = obj;
    ZPL_ASSIGN_S(z.dn, os_->GetDnode(obj));
    ZnodeAttrs& a = z.a;
    a.mode = mode;
    a.size = IsDir(mode) ? 2 : 0;
    a.gen = txg;
    a.parent = dir.obj;
    a.links = IsDir(mode) ? 2 : 1;
    a.rdev = EncodeRdev(rdev);
    a.uid = c.uid;
    a.gid = c.gid;
    if (dir.a.mode & S_ISGID) {
      a.gid = dir.a.gid;
      if (IsDir(mode)) a.mode |= S_ISGID;
    } else if (c.uid != 0 && (a.mode & S_ISGID) && !IsDir(mode) && !InGroup(c, a.gid)) {
      a.mode &= ~uint64_t{S_ISGID};
    }
    if (replay_owner_) {  // a replayed TX_CREATE: its owner in the same txg
      a.uid = replay_owner_->first;
      a.gid = replay_owner_->second;
    }
    a.atime = a.mtime = a.ctime = a.crtime = now;
    SetTrivialAcl(a);
    if (dir.a.flags & kZnodeFlagXattr) a.flags |= kZnodeFlagXattr;
    if (target) {
      a.size = target->size();
      // ZPL 5 keeps every target in the SA (the spill block when long).
      if (sa || target->size() <= codec_->max_inline_symlink(z.dn.MaxBonusLen())) {
        a.symlink = *target;
      } else {
        ZPL_TRY_S(os_->SetBlockSize(obj, RoundUp(target->size(), 512), ibs, txg));
        ZPL_TRY_S(os_->Write(obj, 0, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(target->data()),
                                                             target->size()), txg));
      }
    }
    ZPL_TRY(Store(z, txg));
    return z;
  }

  // mknod/mkdir/symlink/create: checks, then the new znode linked into dir.
  ZplResult<Znode> CreateNode(const ZplCred& c, uint64_t dir, std::string_view name, uint64_t mode,
                              uint64_t rdev, const std::optional<std::string>& target) UZFS_REQUIRES(mu_) {
    ZPL_TRY(Writable());
    if (name == "." || name == "..") return Err(EEXIST, std::string(name) + ": exists");
    ZPL_TRY(ValidName(name));
    ZPL_ASSIGN(Znode d, Load(dir));
    if (!IsDir(d.a.mode)) return Err(ENOTDIR, "not a directory");
    ZPL_ASSIGN(std::optional<uint64_t> ex, DirLookup(dir, name));
    return CreateNodeIn(c, d, ex.has_value(), name, mode, rdev, target);
  }

  // CreateNode once the caller has loaded directory `d`, checked that it is
  // a directory and `name` a valid name other than "." and "..", and looked
  // the name up (`exists`): what Create does anyway before it decides to
  // create, so a new file costs one load of the directory, one lookup of
  // the name and no load of the new object.
  ZplResult<Znode> CreateNodeIn(const ZplCred& c, Znode& d, bool exists, std::string_view name, uint64_t mode,
                                uint64_t rdev, const std::optional<std::string>& target) UZFS_REQUIRES(mu_) {
    const uint64_t dir = d.obj;
    ZPL_TRY(Writable());
    if (d.a.links == 0) return Err(ENOENT, "directory was removed");
    ZPL_TRY(Perm(c, d.a, W_OK | X_OK));
    if (exists) return Err(EEXIST, std::string(name) + ": exists");
    if (IsDir(mode) && d.a.links >= kMaxLinks) return Err(EMLINK, "too many subdirectories");
    const uint64_t est = kMetaTxBytes + (target ? RoundUp(target->size(), 512) * 4 : 0);
    ZPL_TRY(CheckSpace(est));
    ZPL_ASSIGN_S(Tx tx, BeginTx(est));
    const uint64_t txg = tx.txg();
    const ZplTimespec now = Now();
    ZPL_ASSIGN(Znode z, NewZnode(c, d, mode, rdev, now, txg, target));
    ZPL_TRY(DirAdd(dir, name, DirentOf(mode, z.obj), txg));
    d.a.size++;
    if (IsDir(mode)) d.a.links++;
    d.a.mtime = d.a.ctime = now;
    ZPL_TRY(Store(d, txg));
    Log(LogCreate(IsDir(mode) ? TxType::kMkdir : IsLnk(mode) ? TxType::kSymlink : TxType::kCreate, dir, z.obj,
                  z.a.mode, z.a.uid, z.a.gid, z.a.gen, now.sec, now.nsec, z.a.rdev, name,
                  target ? std::string_view(*target) : std::string_view()),
        txg);
    tx.Commit(target ? WriteDirtyBytes(target->size()) : kMetaDirtyBytes);
    // The attributes are the ones just stored; the dnode is read again for
    // what storing them (and a symlink's target) changed in it.
    ZPL_ASSIGN_S(z.dn, os_->GetDnode(z.obj));
    return z;
  }

  ZplResult<uint64_t> MakeXattrDir(const Znode& file, const ZplTimespec& now, uint64_t txg) UZFS_REQUIRES(mu_) {
    ZplCred owner;
    owner.uid = static_cast<uint32_t>(file.a.uid);
    owner.gid = static_cast<uint32_t>(file.a.gid);
    Znode parent;  // the xattr dir's parent is the file; no setgid inheritance
    parent.obj = file.obj;
    ZPL_ASSIGN(Znode xd, NewZnode(owner, parent, S_IFDIR | S_ISVTX | 0777, 0, now, txg));
    xd.a.flags |= kZnodeFlagXattr;
    ZPL_TRY(Store(xd, txg));
    return xd.obj;
  }

  // One link less; the last one frees the file, or puts it in the
  // unlinked set while a handle holds it.
  ZplStatus DropLink(Znode& z, const ZplTimespec& now, uint64_t txg) UZFS_REQUIRES(mu_) {
    if (z.a.links > 0) z.a.links--;
    z.a.ctime = now;
    if (z.a.links > 0) return Store(z, txg);
    if (open_count_.count(z.obj)) {
      ZPL_TRY(Store(z, txg));
      unlinked_open_.insert(z.obj);
      if (dq_ != 0) ZPL_TRY(DirAdd(dq_, Hex(z.obj), z.obj, txg));
      return ZplStatus::Ok();
    }
    return FreeZnode(z, txg);
  }

  // Frees the object, its xattr directory and the attributes in it.
  ZplStatus FreeZnode(const Znode& z, uint64_t txg) UZFS_REQUIRES(mu_) {
    if (z.a.xattr != 0) {
      auto xd = Load(z.a.xattr);
      if (xd.ok()) {
        ZPL_ASSIGN(std::vector<ZapEntry> es, DirList(z.a.xattr, txg));
        for (const ZapEntry& e : es) {
          const uint64_t o = e.value() & kDirentObjMask;
          if (os_->GetDnode(o).ok()) ZPL_TRY_S(os_->FreeObject(o, txg));
        }
        dirs_.Drop(z.a.xattr);
        ZPL_TRY_S(os_->FreeObject(z.a.xattr, txg));
      }
    }
    dirs_.Drop(z.obj);
    ZPL_TRY_S(os_->FreeObject(z.obj, txg));
    // Its queued records must not reach the log as records of whatever
    // object gets this number next (OpenZFS's zil_remove_async).
    if (log_) log_->DropObject(z.obj);
    return ZplStatus::Ok();
  }

  // Sets the size; truncation down frees blocks, up leaves a hole.
  ZplStatus Truncate(Znode& z, uint64_t size, uint64_t txg) UZFS_REQUIRES(mu_) {
    if (size < z.a.size) {
      ZPL_TRY_S(os_->FreeRange(z.obj, size, UINT64_MAX, txg));
      ZPL_ASSIGN_S(z.dn, os_->GetDnode(z.obj));
    } else if (size > z.a.size) {
      ZPL_TRY(GrowBlock(z, size, txg));
    }
    z.a.size = size;
    return ZplStatus::Ok();
  }

  // ZFS's block size rule: while a file is one block, its block grows to
  // cover `end` (a multiple of 512, up to recordsize; past recordsize the
  // block becomes recordsize); a file of more than one block keeps its size.
  ZplStatus GrowBlock(Znode& z, uint64_t end, uint64_t txg) UZFS_REQUIRES(mu_) {
    const uint64_t bs = z.dn.DataBlockSize();
    if (end <= bs || z.a.size > bs || z.dn.maxblkid > 0) return ZplStatus::Ok();
    uint64_t nb;
    if (bs >= recordsize_) nb = NextPow2(bs);
    else nb = end >= recordsize_ ? recordsize_ : RoundUp(end, 512);
    if (nb == bs) return ZplStatus::Ok();
    ZPL_TRY_S(os_->SetBlockSize(z.obj, nb, z.dn.indblkshift, txg));
    ZPL_ASSIGN_S(z.dn, os_->GetDnode(z.obj));
    return ZplStatus::Ok();
  }

  ZplStatus NotAncestor(uint64_t anc, uint64_t dir) UZFS_REQUIRES(mu_) {
    for (uint64_t d = dir, hops = 0; hops < 100000; hops++) {
      if (d == anc) return Err(EINVAL, "rename of a directory into its own subtree");
      if (d == root_) return ZplStatus::Ok();
      ZPL_ASSIGN(Znode z, Load(d));
      if (z.a.parent == d) return ZplStatus::Ok();
      d = z.a.parent;
    }
    return Err(ELOOP, "directory parent chain too long");
  }

  ZplStatus TouchAtime(Znode& z) UZFS_REQUIRES(mu_) {
    if (!atime_ || readonly_locked()) return ZplStatus::Ok();
    const ZplTimespec now = Now();
    // At most one atime write per file per second: every read would
    // otherwise be a transaction (ZFS keeps atime in memory and writes it
    // with the next change; uzfs has no znode cache yet).
    if (now.sec == z.a.atime.sec) return ZplStatus::Ok();
    if (relatime_) {
      const bool stale = !Before(z.a.mtime, z.a.atime) || !Before(z.a.ctime, z.a.atime) ||
                         now.sec >= z.a.atime.sec + 24 * 3600;
      if (!stale) return ZplStatus::Ok();
    }
    ZPL_ASSIGN_S(Tx tx, BeginTx(kMetaTxBytes));
    z.a.atime = now;
    ZPL_TRY(Store(z, tx.txg()));
    tx.Commit(kMetaDirtyBytes);
    return ZplStatus::Ok();
  }

  // ---- handles
  // The flags a handle keeps: what the caller asked for, widened for the
  // kernel's page cache (it reads around writes through write-only handles
  // and computes O_APPEND offsets itself).
  static int HandleFlags(int flags, ZplHandleUse use) {
    if (use != ZplHandleUse::kPageCache) return flags;
    if ((flags & O_ACCMODE) == O_WRONLY) flags = (flags & ~O_ACCMODE) | O_RDWR;
    return flags & ~O_APPEND;
  }

  ZplResult<ZplHandle> OpenLocked(const ZplCred& c, uint64_t ino, int flags, ZplHandleUse use) UZFS_REQUIRES(mu_) {
    ZPL_ASSIGN(Znode z, Load(ino));
    const int acc = flags & O_ACCMODE;
    if (IsDir(z.a.mode) && (acc != O_RDONLY || (flags & O_TRUNC))) return Err(EISDIR, "open of a directory for writing");
    if (IsLnk(z.a.mode)) return Err(ELOOP, "open of a symlink");
    int want = 0;
    if (acc == O_RDONLY || acc == O_RDWR) want |= R_OK;
    if (acc == O_WRONLY || acc == O_RDWR) want |= W_OK;
    if (want & W_OK) ZPL_TRY(Writable());
    ZPL_TRY(Perm(c, z.a, want));
    if ((flags & O_TRUNC) && acc != O_RDONLY && IsReg(z.a.mode) && z.a.size > 0) {
      ZPL_ASSIGN_S(Tx tx, BeginTx(kMetaTxBytes));
      ZPL_TRY(Truncate(z, 0, tx.txg()));
      z.a.mtime = z.a.ctime = Now();
      ZPL_TRY(Store(z, tx.txg()));
      Log(LogTruncate(ino, 0, 0), tx.txg());
      tx.Commit(kMetaDirtyBytes);
    }
    const ZplHandle h = next_handle_++;
    handles_[h] = Handle{ino, HandleFlags(flags, use)};
    open_count_[ino]++;
    return h;
  }

  ZplStatus ReleaseLocked(ZplHandle h) UZFS_REQUIRES(mu_) {
    auto it = handles_.find(h);
    if (it == handles_.end()) return Err(EBADF, "bad handle");
    const uint64_t ino = it->second.ino;
    handles_.erase(it);
    if (--open_count_[ino] > 0) return ZplStatus::Ok();
    open_count_.erase(ino);
    // Only a file that lost its last link while open has anything to free
    // (DropLink is the one place links reach 0 under a handle).
    if (unlinked_open_.erase(ino) == 0) return ZplStatus::Ok();
    auto z = Load(ino);
    if (!z.ok() || z->a.links > 0 || readonly_locked()) return ZplStatus::Ok();
    ZPL_ASSIGN_S(Tx tx, BeginTx(kMetaTxBytes));
    if (dq_ != 0) {
      ZplStatus s = DirRemove(dq_, Hex(ino), tx.txg());
      (void)s;
    }
    ZPL_TRY(FreeZnode(*z, tx.txg()));
    tx.Commit(kMetaDirtyBytes);
    return ZplStatus::Ok();
  }

  // Frees what a crash left in the unlinked set.
  ZplStatus ReclaimDeleteQueue() UZFS_REQUIRES(mu_) {
    ZPL_ASSIGN(std::vector<ZapEntry> es, DirList(dq_, pool_.open_txg()));
    if (es.empty()) return ZplStatus::Ok();
    ZPL_ASSIGN_S(Tx tx, BeginTx(kMetaTxBytes));
    for (const ZapEntry& e : es) {
      auto z = Load(e.value());
      if (z.ok()) ZPL_TRY(FreeZnode(*z, tx.txg()));
      ZPL_TRY(DirRemove(dq_, e.name, tx.txg()));
    }
    tx.Commit(kMetaDirtyBytes);
    return ZplStatus::Ok();
  }

  // ---- intent log (zpl_log.h)
  // A transaction of the file system; during replay it also stores the
  // log header with the replayed record's seq in its txg.
  Result<Tx> BeginTx(uint64_t bytes) UZFS_REQUIRES(mu_) {
    auto tx = pool_.Begin(bytes);
    if (tx.ok() && replay_hdr_) UZFS_RETURN_IF_ERROR(os_->SetZilHeader(*replay_hdr_, tx->txg()));
    return tx;
  }
  // Queues the record of a change made in txg (while the log runs).
  // Copied write data waiting in the log's queue is capped (kLogCopyMax):
  // past it, a write is not logged (the fsync after it waits for its txg),
  // so streaming writes do not hold a second copy of a txg's data. The cap
  // is on what is queued, not on what a txg logged: commits empty the
  // queue, so a stream of small fsync'd writes is never refused however
  // long its txg stays open (with a per-txg cap, 32 MiB of 4 KiB writes
  // in one txg on slow disks sent every later fsync to wait for a txg
  // sync of seconds).
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

  // oid: the object tag for ZilWriter::Commit (default: the record's own
  // file, ZilRecordObject; 0: untagged, written by every commit).
  void Log(LogRecord rec, uint64_t txg, std::optional<uint64_t> oid = std::nullopt) UZFS_REQUIRES(mu_) {
    log_changes_.fetch_add(1, std::memory_order_relaxed);
    // sync=disabled: no records (documented as unsafe); a later fsync,
    // should the property change, waits for the txg instead.
    if (sync_mode_.load(std::memory_order_relaxed) == kSyncDisabled) {
      Unlogged(txg);
      return;
    }
    if (!log_) return;
    if (const auto* w = std::get_if<LrWrite>(&rec.body)) {
      if (log_->QueuedDataBytes() + w->data.size() > kLogCopyMax) {
        Unlogged(txg);
        return;
      }
    }
    rec.txg = txg;
    const uint64_t tag = oid ? *oid : ZilRecordObject(rec);
    if (!log_->Append(std::move(rec), tag).ok()) Unlogged(txg);
  }
  // Log of a file write. Its record copies the data, so it is built only
  // when a log will take it: before the first fsync starts the log (no
  // log_, sync not disabled) Log would drop it, and a 1 MiB copy per write
  // was a third of uzfsd's time in a sequential write.
  void LogWriteOf(uint64_t obj, uint64_t offset, std::span<const uint8_t> data, uint64_t txg)
      UZFS_REQUIRES(mu_) {
    if (!log_ && sync_mode_.load(std::memory_order_relaxed) != kSyncDisabled) {
      log_changes_.fetch_add(1, std::memory_order_relaxed);  // what Log counts
      return;
    }
    Log(LogWrite(obj, offset, data), txg);
  }
  // A change in txg that no record describes: fsync waits for its txg.
  void Unlogged(uint64_t txg) UZFS_REQUIRES(mu_) {
    log_changes_.fetch_add(1, std::memory_order_relaxed);
    unlogged_txg_ = std::max(unlogged_txg_, txg);
  }
  // Before untagged records of a file's xattrs (a value moving between
  // the SA and the xattr directory): the file's tagged records (an earlier
  // TX_SETSAXATTR of that name) become untagged, so a commit of another
  // file cannot write the newer records and leave the older one for this
  // file's commit to write after them (replay would apply it last).
  void UntagXattrs(uint64_t obj) UZFS_REQUIRES(mu_) {
    if (log_) log_->Untag(obj);
  }
  // An SA xattr set (value) or removed (nullopt) in txg: TX_SETSAXATTR
  // when the log may hold it (org.openzfs:zilsaxattr active). Otherwise —
  // pools without the feature (version 24-28, or 5000 made without it),
  // and a set to an empty value, which the record cannot tell from a
  // removal (size 0 means "remove" to OpenZFS's replay) — the fsync after
  // it waits for the txg, as before the feature.
  void LogSaXattr(uint64_t obj, std::string_view name, std::optional<std::span<const uint8_t>> value,
                  uint64_t txg, uint64_t oid) UZFS_REQUIRES(mu_) {
    if (!log_saxattr_ || (value && value->empty())) {
      Unlogged(txg);
      return;
    }
    Log(LogSetSaxattr(obj, name, value.value_or(std::span<const uint8_t>{})), txg, oid);
  }
  // ZplReplayHooks.
  ZplFs& fs() override { return *this; }
  void SetReplayHeader(const std::optional<ZilHeader>& zh) override UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    replay_hdr_ = zh;
  }
  void PreferObject(uint64_t obj) override { os_->PreferObjectNumber(obj); }
  ZplStatus ReplayMakeXattrDir(uint64_t file, uint64_t obj) override UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    ZPL_ASSIGN(Znode z, Load(file));
    if (z.a.xattr != 0) return Err(EEXIST, "the file has an xattr directory");
    ZPL_ASSIGN_S(Tx tx, BeginTx(kMetaTxBytes));
    os_->PreferObjectNumber(obj);
    auto xd = MakeXattrDir(z, Now(), tx.txg());
    os_->PreferObjectNumber(0);
    if (!xd.ok()) return xd.status();
    z.a.xattr = *xd;
    ZPL_TRY(Store(z, tx.txg()));
    tx.Commit(kMetaDirtyBytes);
    return ZplStatus::Ok();
  }
  ZplStatus ReplaySaXattr(uint64_t file, std::string_view name, std::optional<std::span<const uint8_t>> value)
      override UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    ZPL_ASSIGN(Znode z, Load(file));
    if (!SaXattrsUsable(z)) return Err(EOPNOTSUPP, "object " + std::to_string(file) + " has no system attributes");
    ZPL_ASSIGN(SaXattrs sa, LoadSaXattrs(z));
    if (value) {
      if (auto cur = sa.Get(name); cur && std::ranges::equal(*cur, *value)) return ZplStatus::Ok();
      ZPL_ASSIGN_S(const bool fits, sa.TrySet(name, *value));
      if (!fits) return Err(EFBIG, "xattr " + std::string(name) + " does not fit in the system attributes");
    } else if (!sa.Remove(name)) {
      return ZplStatus::Ok();  // gone already (replayed before a crash)
    }
    const uint64_t bytes = value ? value->size() : 0;
    ZPL_ASSIGN_S(Tx tx, BeginTx(kMetaTxBytes + bytes));
    ZPL_ASSIGN_S(z.a.sa_xattrs, sa.Encode());
    z.a.ctime = Now();
    ZPL_TRY(Store(z, tx.txg()));
    tx.Commit(kMetaDirtyBytes + bytes);
    return ZplStatus::Ok();
  }
  void SetReplayOwner(const std::optional<std::pair<uint64_t, uint64_t>>& owner) override UZFS_EXCLUDES(mu_) {
    MutexLock l(&mu_);
    replay_owner_ = owner;
  }

  // ---- directory ZAPs (ZplStatus wrappers over ZplDirs)
  ZplResult<std::optional<uint64_t>> DirLookup(uint64_t dir, std::string_view name) UZFS_REQUIRES(mu_) {
    auto r = dirs_.Lookup(dir, name, pool_.open_txg(), match_);
    if (!r.ok()) return ZplStatus::FromStatus(r.status());
    return *r;
  }
  // The name `name` matches as stored in `dir` (nullopt when absent).
  ZplResult<std::optional<std::string>> DirStoredName(uint64_t dir, std::string_view name) UZFS_REQUIRES(mu_) {
    std::string stored;
    auto r = dirs_.Lookup(dir, name, pool_.open_txg(), match_, &stored);
    if (!r.ok()) return ZplStatus::FromStatus(r.status());
    if (!*r) return std::optional<std::string>();
    return std::optional<std::string>(std::move(stored));
  }
  ZplStatus DirAdd(uint64_t dir, std::string_view name, uint64_t value, uint64_t txg) UZFS_REQUIRES(mu_) {
    return ZplStatus::FromStatus(dirs_.Add(dir, name, value, txg));
  }
  ZplStatus DirUpdate(uint64_t dir, std::string_view name, uint64_t value, uint64_t txg) UZFS_REQUIRES(mu_) {
    return ZplStatus::FromStatus(dirs_.Update(dir, name, value, txg, match_));
  }
  ZplStatus DirRemove(uint64_t dir, std::string_view name, uint64_t txg) UZFS_REQUIRES(mu_) {
    return ZplStatus::FromStatus(dirs_.Remove(dir, name, txg, match_));
  }
  ZplResult<std::vector<ZapEntry>> DirList(uint64_t dir, uint64_t txg) UZFS_REQUIRES(mu_) {
    auto r = dirs_.List(dir, txg);
    if (!r.ok()) return ZplStatus::FromStatus(r.status());
    return std::move(*r);
  }

  Pool& pool_;
  const std::string ds_;
  ObjsetWriter* const os_;
  ZplPrefetch prefetch_;  // file read-ahead into the ARC
  uint64_t version_ = 0, root_ = 0, dq_ = 0;
  bool legacy_ = true;
  std::unique_ptr<ZnodeCodec> codec_;

  mutable Mutex mu_;
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
  uint64_t space_txg_ UZFS_GUARDED_BY(mu_) = UINT64_MAX;
  DatasetSpace space_ UZFS_GUARDED_BY(mu_);
  ZplDirs dirs_ UZFS_GUARDED_BY(mu_);
  const uint64_t immediate_write_sz_;  // zfs_immediate_write_sz, read at mount
  std::map<ZplHandle, Handle> handles_ UZFS_GUARDED_BY(mu_);
  std::map<uint64_t, uint64_t> open_count_ UZFS_GUARDED_BY(mu_);
  std::set<uint64_t> unlinked_open_ UZFS_GUARDED_BY(mu_);  // links reached 0 while open
  ZplHandle next_handle_ UZFS_GUARDED_BY(mu_) = 1;
  std::shared_ptr<ZilWriter> log_ UZFS_GUARDED_BY(mu_);  // the running intent log
  bool log_saxattr_ UZFS_GUARDED_BY(mu_) = false;       // log_ may take TX_SETSAXATTR (SetLog)
  uint64_t feature_gen_ UZFS_GUARDED_BY(mu_) = 0;       // pool's feature_generation() seen
  uint64_t log_gen_ UZFS_GUARDED_BY(mu_) = 0;           // pool's zil_generation() for log_
  uint64_t unlogged_txg_ UZFS_GUARDED_BY(mu_) = 0;
  std::optional<ZilHeader> replay_hdr_ UZFS_GUARDED_BY(mu_);
  std::optional<std::pair<uint64_t, uint64_t>> replay_owner_ UZFS_GUARDED_BY(mu_);  // uid, gid
};

}  // namespace

ZplResult<std::unique_ptr<ZplFs>> ZplFs::Mount(Pool& pool, const std::string& dataset,
                                               const ZplMountOptions& opts) {
  auto os = pool.readonly() ? pool.ObjsetForRead(dataset) : pool.Objset(dataset);
  if (!os.ok()) return ZplStatus::FromStatus(os.status());
  if ((*os)->objset().type != static_cast<uint64_t>(ObjsetType::kZfs))
    return Err(EINVAL, "dataset '" + dataset + "' is not a file system");
  {
    MutexLock g(&g_mounted_mu);
    const MountedCaches c{ZplFsImpl::SyncedCacheBytes(opts.tunables), ZplFsImpl::DirCacheBytes(opts.tunables)};
    if (!g_mounted.emplace(*os, c).second) return Err(EBUSY, "dataset '" + dataset + "' is already mounted");
  }
  auto fs = std::make_unique<ZplFsImpl>(pool, dataset, *os, opts.tunables);
  {
    MutexLock g(&g_mounted_mu);
    g_mounted.at(*os).dirs = fs->dirs();
    ShareCaches();
  }
  ZPL_TRY(fs->Init(opts));
  ZPL_TRY(fs->ReplayLog());
  return std::unique_ptr<ZplFs>(std::move(fs));
}

}  // namespace uzfs
