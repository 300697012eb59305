// ZplFs construction, mount and unmount, and the calls on the whole file
// system (StatFs, SyncFs, RefreshProps); the status types of zpl_fs.h.
// Part of ZplFsImpl: the class and its other files are listed in
// zpl_fs_impl.h.
//
// What it promises: Mount enters the dataset's object set in the mount set
// it is given (ZplMountOptions::mount_set, else ZplMountSet::Default(), see
// zpl_mount_set.h), which shares the cache budget among the set's mounts
// and answers EBUSY for a dataset mounted there already; it then reads the
// master node and the properties, frees what a crash left in the unlinked
// set and replays the intent log (writable mounts) before it returns.
// Unmount releases every handle (files unlinked while open are freed),
// closes the intent log and syncs; the mount leaves its set at unmount or
// destruction, whichever comes first. Abandon (tests' crash) forgets
// everything and writes nothing.
#include <sys/statvfs.h>

#include <cstring>
#include <functional>

#include "zfs/dmu/dmu_tunables.h"
#include "zfs/zap/zap_normalize.h"
#include "zfs/zpl/zpl_create.h"
#include "zfs/zpl/zpl_fs_impl.h"
#include "zfs/zpl/zpl_probed_fs.h"
#include "zfs/zpl/zpl_tunables.h"

namespace uzfs {

// ------------------------------------------------------------ status helpers

ZplStatus ZplStatus::FromStatus(const Status& s) {
  if (s.ok()) return ZplStatus();
  return ZplStatus(ErrnoOf(s), s.ToString());
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

namespace zpl_impl {

namespace {

constexpr size_t kZapCacheMax = 4096;         // directory ZAP writers kept open
constexpr uint64_t kImmediateWriteSize = 32 << 10;  // OpenZFS zfs_immediate_write_sz: larger writes by reference

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

}  // namespace

// ------------------------------------------------------------------ mount

ZplFsImpl::ZplFsImpl(Pool& pool, std::string ds, ObjsetWriter* os, const Tunables* tunables, ZplMountSet& mounts)
    : pool_(pool),
      ds_(std::move(ds)),
      props_ds_(ds_.substr(0, ds_.find('@'))),
      os_(os),
      mounts_(mounts),
      prefetch_(*os, tunables),
      dirs_(*os, kZapCacheMax, DirCacheBytes(tunables)),
      immediate_write_sz_(ImmediateWriteSize(tunables)),
      parallel_writes_(ParallelWrites(tunables)) {}

// dbuf_cache_max: what the object sets of the mounted file systems keep
// of blocks after their txg synced (shared, see ZplMountSet), so 4 KiB
// writes into 128 KiB records in later txgs read nothing.
uint64_t ZplFsImpl::SyncedCacheBytes(const Tunables* t) {
  auto v = t ? t->Get("dbuf_cache_max") : Result<uint64_t>(Status::NotFound("no tunables"));
  return v.ok() ? *v : DefaultSyncedCacheBytes();
}

// zfs_immediate_write_sz (zpl_tunables.h), or OpenZFS's 32 KiB.
uint64_t ZplFsImpl::ImmediateWriteSize(const Tunables* t) {
  auto v = t ? t->Get("zfs_immediate_write_sz") : Result<uint64_t>(Status::NotFound("no tunables"));
  return v.ok() ? *v : kImmediateWriteSize;
}

// zpl_dir_cache_max (zpl_tunables.h), or ZplDirs' default.
uint64_t ZplFsImpl::DirCacheBytes(const Tunables* t) {
  if (t == nullptr) return ZplDirs::kDefaultCacheBytes;
  auto v = t->Get("zpl_dir_cache_max");
  return v.ok() ? *v : ZplDirs::kDefaultCacheBytes;
}

// zpl_parallel_writes (zpl_tunables.h), or its default.
bool ZplFsImpl::ParallelWrites(const Tunables* t) {
  auto v = t ? t->Get("zpl_parallel_writes") : Result<uint64_t>(Status::NotFound("no tunables"));
  return v.ok() ? *v != 0 : ParallelWritesDefault() != 0;
}

ZplFsImpl::~ZplFsImpl() {
  if (!unmounted_) (void)Unmount();
  mounts_.Release(os_);
}

ZplResult<std::unique_ptr<ZplFs>> ZplFsImpl::MountDataset(Pool& pool, const std::string& dataset,
                                                          const ZplMountOptions& opts) {
  auto os = pool.readonly() ? pool.ObjsetForRead(dataset) : pool.Objset(dataset);
  if (!os.ok()) return ZplStatus::FromStatus(os.status());
  if ((*os)->objset().type != static_cast<uint64_t>(ObjsetType::kZfs))
    return Err(EINVAL, "dataset '" + dataset + "' is not a file system");
  ZplMountSet& mounts = opts.mount_set != nullptr ? *opts.mount_set : ZplMountSet::Default();
  if (!mounts.Claim(*os, SyncedCacheBytes(opts.tunables), DirCacheBytes(opts.tunables)))
    return Err(EBUSY, "dataset '" + dataset + "' is already mounted");
  auto fs = std::make_unique<ZplFsImpl>(pool, dataset, *os, opts.tunables, mounts);
  mounts.Attach(*os, fs->dirs());
  ZPL_TRY(fs->Init(opts));
  ZPL_TRY(fs->ReplayLog());
  return std::unique_ptr<ZplFs>(std::move(fs));
}

ZplResult<std::unique_ptr<ZplFs>> ZplFsImpl::MountSnapshotObjset(Pool& pool, const std::string& snapshot,
                                                                 std::shared_ptr<ObjsetWriter> os,
                                                                 const ZplMountOptions& opts) {
  if (os->objset().type != static_cast<uint64_t>(ObjsetType::kZfs))
    return Err(EINVAL, "dataset '" + snapshot + "' is not a file system");
  ZplMountSet& mounts = opts.mount_set != nullptr ? *opts.mount_set : ZplMountSet::Default();
  if (!mounts.Claim(os.get(), SyncedCacheBytes(opts.tunables), DirCacheBytes(opts.tunables)))
    return Err(EBUSY, "snapshot '" + snapshot + "' is already mounted");
  auto fs = std::make_unique<ZplFsImpl>(pool, snapshot, os.get(), opts.tunables, mounts);
  fs->snapshot_os_ = std::move(os);
  mounts.Attach(fs->os_, fs->dirs());
  ZplMountOptions ro = opts;
  ro.readonly = true;
  ZPL_TRY(fs->Init(ro));
  return std::unique_ptr<ZplFs>(std::move(fs));
}

ZplStatus ZplFsImpl::Init(const ZplMountOptions& opts) {
  WriterLock l(&mu_);
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

// ---------------------------------------------------------------- unmount

ZplStatus ZplFsImpl::Unmount() {
  {
    WriterLock l(&mu_);
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
  mounts_.Release(os_);
  if (pool_.readonly() || snapshot_os_ != nullptr) return ZplStatus::Ok();
  Status zs = Status::Ok();
  {
    WriterLock l(&mu_);
    if (log_) zs = pool_.ZilClose(ds_);
    SetLog(nullptr);
  }
  Status s = pool_.Sync();
  return ZplStatus::FromStatus(zs.ok() ? s : zs);
}

void ZplFsImpl::Abandon() {
  WriterLock l(&mu_);
  handles_.clear();
  open_count_.clear();
  unlinked_open_.clear();
  dirs_.Clear();
  unmounted_ = true;
  mount_readonly_ = true;
  SetLog(nullptr);  // a crash: the log stays as the disk has it
}

// ------------------------------------------------------------ file system

bool ZplFsImpl::readonly() const {
  WriterLock l(&mu_);
  return readonly_locked();
}

ZplStatus ZplFsImpl::RefreshProps() {
  WriterLock l(&mu_);
  return RefreshPropsLocked();
}

ZplResult<struct statvfs> ZplFsImpl::StatFs() {
  WriterLock l(&mu_);
  ZPL_ASSIGN_S(DatasetSpace sp, DatasetListSpace(pool_, props_ds_));
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

ZplStatus ZplFsImpl::SyncFs() {
  if (pool_.readonly() || snapshot_os_ != nullptr) return ZplStatus::Ok();
  return ZplStatus::FromStatus(pool_.Sync());
}

}  // namespace zpl_impl

ZplResult<std::unique_ptr<ZplFs>> ZplFs::Mount(Pool& pool, const std::string& dataset,
                                               const ZplMountOptions& opts) {
  auto fs = zpl_impl::ZplFsImpl::MountDataset(pool, dataset, opts);
  if (!fs.ok()) return fs;
  return WithZplProbes(std::move(*fs));
}

ZplResult<std::unique_ptr<ZplFs>> ZplFs::MountSnapshot(Pool& pool, const std::string& snapshot,
                                                       const ZplMountOptions& opts) {
  auto os = pool.OpenSnapshot(snapshot);
  if (!os.ok()) return ZplStatus::FromStatus(os.status());
  auto fs = zpl_impl::ZplFsImpl::MountSnapshotObjset(pool, snapshot, std::move(*os), opts);
  if (!fs.ok()) return fs;
  return WithZplProbes(std::move(*fs));
}

}  // namespace uzfs
