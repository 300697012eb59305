// ZplFs extended attributes: SetXattr, GetXattr, ListXattr, RemoveXattr,
// the hidden xattr directory of a file and the ZPL 5 system-attribute
// xattrs (SaXattrs, zpl_xattr_sa.h). Part of ZplFsImpl (zpl_fs_impl.h).
//
// Where each xattr lives: the SA (ZPL_DXATTR) of a ZPL 5 file on an
// xattr=sa file system when it fits there, else a file in the hidden xattr
// directory (znode xattr field) named with the full Linux name ("user.k",
// as zfs-fuse and OpenZFS on Linux name them). What it promises: both
// kinds are read and listed whatever the property says, a name is never
// left in both, a user.* attribute stored under its bare name
// (illumos/FreeBSD) is read, listed as "user.k" and replaced by the full
// name when set; Linux's namespace rules (XattrPerm) are checked before
// anything changes; each change is one transaction, logged as OpenZFS logs
// it (TX_SETSAXATTR where the dataset's log may hold it, else the change
// makes the next fsync wait for its txg; records of xattr directories
// untagged, see SetXattr). xattr=off refuses every call (EOPNOTSUPP).
#include <fcntl.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "zfs/zpl/zpl_fs_impl.h"

namespace uzfs::zpl_impl {

namespace {

constexpr size_t kXattrValueMax = 65536;

}  // namespace

ZplStatus ZplFsImpl::SetXattr(const ZplCred& c, uint64_t ino, std::string_view name, std::span<const uint8_t> value,
                              int flags) {
  SyncAlways sync_always(this);
  WriterLock l(&mu_);
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
  const Txg txg = tx.txg();
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
  tx.Commit(kMetaDirtyBytes + WriteChangedBytes(value.size()));
  return ZplStatus::Ok();
}

ZplResult<std::vector<uint8_t>> ZplFsImpl::GetXattr(const ZplCred& c, uint64_t ino, std::string_view name) {
  WriterLock l(&mu_);
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

ZplResult<std::vector<std::string>> ZplFsImpl::ListXattr(const ZplCred& c, uint64_t ino) {
  WriterLock l(&mu_);
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

ZplStatus ZplFsImpl::RemoveXattr(const ZplCred& c, uint64_t ino, std::string_view name) {
  SyncAlways sync_always(this);
  WriterLock l(&mu_);
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
  const Txg txg = tx.txg();
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

ZplStatus ZplFsImpl::XattrOn() const {
  if (!xattr_) return Err(EOPNOTSUPP, "xattr=off");
  return ZplStatus::Ok();
}

// Linux's rules (xattr_permission): trusted.* needs root; user.* exists
// only on regular files and directories (EPERM to change, ENODATA to
// read elsewhere) and needs the file's read/write permission; other
// namespaces (security., system.) the file's permission.
ZplStatus ZplFsImpl::XattrPerm(const ZplCred& c, const ZnodeAttrs& a, std::string_view name, int want) {
  if (name.starts_with("trusted.") && c.uid != 0) return Err(want == R_OK ? ENODATA : EPERM, "trusted.* needs root");
  if (name.starts_with("user.") && !IsReg(a.mode) && !IsDir(a.mode))
    return Err(want == R_OK ? ENODATA : EPERM, "user.* xattrs only on files and directories");
  if (c.uid == 0) return ZplStatus::Ok();
  return Perm(c, a, want);
}

ZplResult<ZplFsImpl::ExistingXattr> ZplFsImpl::FindExistingXattr(const ZplCred& c, uint64_t ino, std::string_view name,
                                                                 int mask) {
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

ZplResult<std::optional<ZplFsImpl::StoredXattr>> ZplFsImpl::FindXattr(uint64_t xdir, std::string_view name) {
  ZPL_ASSIGN(std::optional<uint64_t> v, DirLookup(xdir, name));
  if (v) return std::optional<StoredXattr>(StoredXattr{std::string(name), *v});
  if (name.starts_with("user.") && name.size() > 5) {
    ZPL_ASSIGN(std::optional<uint64_t> b, DirLookup(xdir, name.substr(5)));
    if (b) return std::optional<StoredXattr>(StoredXattr{std::string(name.substr(5)), *b});
  }
  return std::optional<StoredXattr>();
}

// Removes the directory xattr `x` of `z` (its entry and its file) in txg.
ZplStatus ZplFsImpl::RemoveDirXattr(const Znode& z, const StoredXattr& x, const ZplTimespec& now, Txg txg) {
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
bool ZplFsImpl::SaXattrsUsable(const Znode& z) const {
  return codec_->zpl_version() >= kZplVersionSa && z.dn.bonustype == kBonusTypeSa;
}

ZplResult<SaXattrs> ZplFsImpl::LoadSaXattrs(const Znode& z) const {
  auto x = SaXattrs::Decode(z.a.sa_xattrs);
  if (!x.ok()) return Err(EIO, "object " + std::to_string(z.obj) + ": " + x.status().ToString());
  return std::move(*x);
}

// A stored name as listxattr shows it: names without a Linux namespace
// are user attributes.
std::string ZplFsImpl::ListedXattrName(std::string stored) {
  for (std::string_view ns : {"user.", "trusted.", "security.", "system."}) {
    if (stored.starts_with(ns)) return stored;
  }
  return "user." + stored;
}

ZplStatus ZplFsImpl::CheckXattrName(std::string_view name) {
  if (name.empty()) return Err(ERANGE, "empty xattr name");
  if (name.size() > kNameMax) return Err(ERANGE, "xattr name too long");
  if (name.find('/') != std::string_view::npos) return Err(EINVAL, "xattr name contains '/'");
  if (name == "." || name == "..") return Err(EINVAL, "bad xattr name");
  return ZplStatus::Ok();
}

ZplResult<uint64_t> ZplFsImpl::MakeXattrDir(const Znode& file, const ZplTimespec& now, Txg txg) {
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

}  // namespace uzfs::zpl_impl
