// ZplFs attributes, permissions, properties and space: GetAttr, SetAttr,
// Access and WriteRoom; the POSIX permission rules every call uses (Perm,
// Sticky, InGroup) and the trivial ACL kept with the mode; the dataset
// properties read at mount and by RefreshProps; the space check made
// before every change that can allocate. Part of ZplFsImpl
// (zpl_fs_impl.h).
//
// Permissions: root passes every check but execute of a file no one may
// execute; others get the owner's, the group's (primary or supplementary)
// or the other bits. chmod needs the owner, chown root, chgrp the owner as
// a member of the new group; explicit times need the owner or a handle
// open for writing, "now" write permission. SetAttr checks all it is asked
// before it changes anything, and makes every change in one transaction
// (with one TX_SETATTR record).
//
// Space. Before a change that can allocate, CheckSpace compares the
// transaction's worst-case estimate with the dataset's AVAIL (pool_space's
// `zfs list` rule, refreshed once per synced txg) minus the pool's dirty
// bytes not yet synced (after syncing them once when they are what does
// not fit) and minus the live log blocks in the pool's main class;
// quota/refquota give EDQUOT, else ENOSPC. Unlink, rmdir and truncation
// never check.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

#include "zfs/dsl/prop_table.h"
#include "zfs/zpl/znode_phys.h"
#include "zfs/zpl/zpl_fs_impl.h"

namespace uzfs::zpl_impl {

namespace {

constexpr uint64_t kSpaceMargin = 1 << 20;      // kept free for the MOS, space maps
constexpr int kSpaceSyncs = 4;                   // txgs CheckSpace waits for before ENOSPC

}  // namespace

// ------------------------------------------------------------- attributes

ZplResult<ZplAttr> ZplFsImpl::GetAttr(uint64_t ino) {
  ReaderLock l(&mu_);
  ZPL_ASSIGN(Znode z, Load(ino));
  return ToAttr(z);
}

ZplResult<uint64_t> ZplFsImpl::NextObject(uint64_t after) {
  const Objset o = os_->objset();
  // Dnode slots in the meta-dnode's blocks (512 bytes each).
  const uint64_t limit = (o.meta_dnode.maxblkid + 1) * (o.meta_dnode.DataBlockSize() / 512);
  uint64_t i = after + 1;
  if (after != 0) {
    // A large dnode's other slots are part of it, never objects of their own.
    if (auto dn = os_->GetDnode(after); dn.ok() && !dn->IsFree()) i = after + 1 + dn->extra_slots;
  }
  for (; i < limit; i++) {
    auto dn = os_->GetDnode(i);
    if (!dn.ok()) {
      if (dn.status().code() == Code::kNotFound) continue;
      return ZplStatus::FromStatus(dn.status());
    }
    if (!dn->IsFree()) return i;
  }
  return uint64_t{0};
}

ZplResult<ZplAttr> ZplFsImpl::TreeAttr(uint64_t ino) {
  ReaderLock l(&mu_);
  ZPL_ASSIGN(Znode z, Load(ino));
  if (z.a.flags & kZnodeFlagXattr) return Err(ENOENT, "object " + std::to_string(ino) + " is an xattr");
  if (ino == dq_) return Err(ENOENT, "the delete queue");
  return ToAttr(z);
}

ZplResult<ZplAttr> ZplFsImpl::SetAttr(const ZplCred& c, uint64_t ino, const ZplSetAttr& set) {
  SyncAlways sync_always(this);
  WriterLock l(&mu_);
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
  const Txg txg = tx.txg();
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

ZplStatus ZplFsImpl::Access(const ZplCred& c, uint64_t ino, int mask) {
  WriterLock l(&mu_);
  ZPL_ASSIGN(Znode z, Load(ino));
  if ((mask & W_OK) && readonly_locked()) return Err(EROFS, "read-only file system");
  if (mask == F_OK) return ZplStatus::Ok();
  return Perm(c, z.a, mask & (R_OK | W_OK | X_OK));
}

// ------------------------------------------------------------ permissions

bool ZplFsImpl::InGroup(const ZplCred& c, uint64_t gid) {
  if (c.gid == gid) return true;
  return std::find(c.groups.begin(), c.groups.end(), gid) != c.groups.end();
}

ZplStatus ZplFsImpl::Perm(const ZplCred& c, const ZnodeAttrs& a, int want) {
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

ZplStatus ZplFsImpl::Sticky(const ZplCred& c, const ZnodeAttrs& dir, const ZnodeAttrs& f) {
  if (!(dir.mode & S_ISVTX) || c.uid == 0 || c.uid == dir.uid || c.uid == f.uid) return ZplStatus::Ok();
  return Err(EPERM, "sticky directory: not the owner");
}

void ZplFsImpl::SetTrivialAcl(ZnodeAttrs& a) {
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

// ------------------------------------------------------------- properties

ZplFsImpl::PropChain ZplFsImpl::LoadPropChain() {
  PropChain chain;
  for (std::string ds = props_ds_;;) {
    auto props = pool_.LocalProps(ds);
    chain.push_back(props.ok() ? std::move(*props) : std::map<std::string, std::string>{});
    const size_t slash = ds.rfind('/');
    if (slash == std::string::npos) break;
    ds.resize(slash);
  }
  return chain;
}

// The effective value of a numeric/index property (nearest dataset that
// sets it, else the table default); `inherit` false: this dataset only.
uint64_t ZplFsImpl::PropNumber(const PropChain& chain, const std::string& name, bool inherit) {
  if (auto v = PropSetValue(chain, name, inherit)) return *v;
  const PropDef* def = FindDatasetProp(name);
  return def ? def->default_number : 0;
}

// The value of the nearest dataset that sets the property, or nullopt.
std::optional<uint64_t> ZplFsImpl::PropSetValue(const PropChain& chain, const std::string& name, bool inherit) {
  for (const auto& props : chain) {
    auto it = props.find(name);
    if (it != props.end()) return std::strtoull(it->second.c_str(), nullptr, 10);
    if (!inherit) break;
  }
  return std::nullopt;
}

ZplStatus ZplFsImpl::RefreshPropsLocked() {
  const PropChain chain = LoadPropChain();
  recordsize_ = PropNumber(chain, "recordsize", true);
  // Over 128K only where the pool has large_blocks (a value stored by
  // another implementation is clamped, never written past the limit).
  if (recordsize_ < 512 || (recordsize_ & (recordsize_ - 1))) recordsize_ = 131072;
  recordsize_ = std::min(recordsize_, pool_.max_record_size());
  atime_ = PropNumber(chain, "atime", true) != 0;
  relatime_ = FindDatasetProp("relatime") != nullptr && PropNumber(chain, "relatime", true) != 0;
  sync_mode_.store(PropSetValue(chain, "sync", true).value_or(0), std::memory_order_relaxed);
  logbias_throughput_ = PropSetValue(chain, "logbias", true).value_or(0) == 1;
  readonly_prop_ = PropNumber(chain, "readonly", true) != 0;
  // xattr: 0 off, 1 dir (and "on" as zfs-fuse and OpenZFS <= 2.2 store
  // it), 2 sa; unset means "on", which (as in OpenZFS 2.3) is sa where
  // the file system has system attributes (ZPL 5). See man/zfs.8.
  const std::optional<uint64_t> xattr = PropSetValue(chain, "xattr", true);
  xattr_ = !xattr || *xattr != 0;
  xattr_sa_ = version_ >= kZplVersionSa && (!xattr || *xattr == 2);
  quota_ = PropNumber(chain, "quota", false);
  refquota_ = PropNumber(chain, "refquota", false);
  {
    MutexLock sl(&space_mu_);
    space_txg_ = UINT64_MAX;  // re-read space at the next check
  }
  return ZplStatus::Ok();
}

// ------------------------------------------------------------------ space

uint64_t ZplFsImpl::DirtyNow(const TxgStats& ts) const {
  return os_->DirtyBytesIn(Txg{ts.synced_txg + 1}, Txg{ts.open_txg});
}

// ENOSPC/EDQUOT when `bytes` more might not fit (see the file comment).
// When only the unsynced bytes (or other writers' held room) make it not
// fit, their txgs are synced first and the check made again, a few times
// (ZFS's ERESTART: wait for the txg, not fail): the dirty count is a worst
// case, and without the wait a burst of writes (or a replay, all in one
// open txg; or the kernel's writeback, many writers at once, dirtying the
// next txg while one syncs) on a small pool failed with space to spare.
ZplStatus ZplFsImpl::CheckSpace(uint64_t bytes, SpaceReservation* reserve) {
  for (int syncs = 0;; syncs++) {
    uint64_t pending = 0;
    bool transient = false;  // it would fit without what a sync releases
    ZplStatus s = ZplStatus::Ok();
    {
      MutexLock sl(&space_mu_);
      ZPL_ASSIGN(Room room, RoomLocked(&pending));
      const uint64_t need = bytes + pending + space_reserved_;
      transient = bytes + kSpaceMargin <= std::min(room.quota, room.pool);
      if (need > room.quota) {
        s = Err(EDQUOT, quota_ != 0 && space_.used + need > quota_ ? "quota exceeded" : "refquota exceeded");
      } else if (need > room.pool) {
        s = Err(ENOSPC, "no space left in dataset '" + ds_ + "'");
      }
      if (s.ok() && reserve) {
        space_reserved_ += bytes;
        reserve->bytes_ += bytes;
      }
    }
    if (s.ok() || !transient || syncs == kSpaceSyncs) return s;
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
ZplResult<ZplFsImpl::Room> ZplFsImpl::RoomLocked(uint64_t* pending) {
  const TxgStats ts = pool_.txg_stats();
  if (space_txg_ != ts.synced_txg) {
    ZPL_ASSIGN_S(DatasetSpace sp, DatasetListSpace(pool_, props_ds_));
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

uint64_t ZplFsImpl::WriteRoom() {
  ReaderLock l(&mu_);
  if (readonly_locked()) return 0;
  MutexLock sl(&space_mu_);
  uint64_t pending = 0;
  auto room = RoomLocked(&pending);
  if (!room.ok()) return 0;
  // Room writes under the shared lock checked and hold is not free.
  pending += space_reserved_;
  const uint64_t limit = std::min(room->quota, room->pool);
  return limit > pending ? limit - pending : 0;
}

}  // namespace uzfs::zpl_impl
