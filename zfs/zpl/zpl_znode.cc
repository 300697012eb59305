// ZplFs znodes and handles: loading and storing a file's attributes
// through the file system's codec (Load, Store, ToAttr), creating and
// freeing objects (NewZnode, DropLink, FreeZnode), atime updates, and open
// handles (Open, Release, the unlinked set of files removed while open,
// and its reclaim at mount). Part of ZplFsImpl (zpl_fs_impl.h).
//
// What it promises: znodes are not cached, each call decodes the objects
// it touches and stores what it changed in its own txg; Store keeps a
// ZPL <= 4 ACL it could not model byte for byte and moves attributes
// between the bonus and the spill block as they need. An object whose
// last link goes while a handle holds it stays, listed in the unlinked set
// (master node DELETE_QUEUE), until its last Release frees it; Mount frees
// what a crash left there. Freeing an object frees its xattr directory and
// drops its queued log records, so a later object of the same number does
// not inherit them. atime is written at most once per second per file
// (relatime: only when stale), never on read-only mounts.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "zfs/zap/dmu_zap_object.h"
#include "zfs/zpl/znode_phys.h"
#include "zfs/zpl/zpl_fs_impl.h"

namespace uzfs::zpl_impl {

namespace {

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
std::string Hex(uint64_t v) {
  char b[20];
  snprintf(b, sizeof(b), "%llx", static_cast<unsigned long long>(v));
  return b;
}

}  // namespace

// ----------------------------------------------------------------- znodes

ZplResult<Znode> ZplFsImpl::Load(uint64_t obj) {
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

ZplStatus ZplFsImpl::Store(Znode& z, Txg txg) {
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

ZplAttr ZplFsImpl::ToAttr(const Znode& z) const {
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

// A new object for a znode of `mode` whose parent is `dir` (not linked
// into it: the caller adds the entry). Symlink targets go to the bonus
// or data block 0.
ZplResult<Znode> ZplFsImpl::NewZnode(const ZplCred& c, const Znode& dir, uint64_t mode, uint64_t rdev,
                                     const ZplTimespec& now, Txg txg, const std::optional<std::string>& target) {
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
  a.gen = txg.number();
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

// One link less; the last one frees the file, or puts it in the
// unlinked set while a handle holds it.
ZplStatus ZplFsImpl::DropLink(Znode& z, const ZplTimespec& now, Txg txg) {
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
ZplStatus ZplFsImpl::FreeZnode(const Znode& z, Txg txg) {
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

ZplStatus ZplFsImpl::TouchAtime(Znode& z) {
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
  // A file with a spill block: its stores must come in txg order (a spill
  // is set per txg like a data block, ObjsetWriter), so the whole file is
  // held from before the transaction, as writes of such files hold it.
  // (Under the exclusive lock nobody else holds a range: no wait.)
  ZplRangeLocks::Held range;
  if (z.dn.flags & kDnodeFlagSpillBlkptr) range = ranges_.Lock(z.obj, 0, ZplRangeLocks::kToEnd, true);
  ZPL_ASSIGN_S(Tx tx, BeginTx(kMetaTxBytes));
  {
    // Readers hold mu_ shared: the store starts from the newest znode.
    MutexLock zl(&znode_mu_);
    ZPL_ASSIGN(Znode cur, Load(z.obj));
    cur.a.atime = now;
    ZPL_TRY(Store(cur, tx.txg()));
    z = std::move(cur);
  }
  tx.Commit(kMetaDirtyBytes);
  return ZplStatus::Ok();
}

// ---------------------------------------------------------------- handles

// The flags a handle keeps: what the caller asked for, widened for the
// kernel's page cache (it reads around writes through write-only handles
// and computes O_APPEND offsets itself).
int ZplFsImpl::HandleFlags(int flags, ZplHandleUse use) {
  if (use != ZplHandleUse::kPageCache) return flags;
  if ((flags & O_ACCMODE) == O_WRONLY) flags = (flags & ~O_ACCMODE) | O_RDWR;
  return flags & ~O_APPEND;
}

ZplResult<ZplHandle> ZplFsImpl::Open(const ZplCred& c, uint64_t ino, int open_flags, ZplHandleUse use) {
  WriterLock l(&mu_);
  return OpenLocked(c, ino, open_flags, use);
}

ZplStatus ZplFsImpl::Release(ZplHandle h) {
  WriterLock l(&mu_);
  return ReleaseLocked(h);
}

uint64_t ZplFsImpl::ObjectOfHandle(ZplHandle h) {
  ReaderLock l(&mu_);
  auto it = handles_.find(h);
  return it == handles_.end() ? 0 : it->second.ino;
}

ZplResult<ZplHandle> ZplFsImpl::OpenLocked(const ZplCred& c, uint64_t ino, int flags, ZplHandleUse use) {
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
  handles_[h] = Handle{ino, HandleFlags(flags, use), z.a.mode & kSIfMt};
  open_count_[ino]++;
  return h;
}

ZplStatus ZplFsImpl::ReleaseLocked(ZplHandle h) {
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
ZplStatus ZplFsImpl::ReclaimDeleteQueue() {
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

}  // namespace uzfs::zpl_impl
