// ZplFs names and directories: Lookup, Create, Mknod, Mkdir, Symlink,
// ReadLink, Link, Unlink, Rmdir, Rename and ReadDir, the checks of names
// they share, and the directory ZAP calls under them (ZplStatus wrappers
// over ZplDirs, zpl_dir.h). Part of ZplFsImpl (zpl_fs_impl.h).
//
// What it promises: a name is checked (CheckName's rules; UTF-8 on
// utf8only file systems) and every permission and type test is made
// before anything changes, so a refused call changes nothing. Each change
// is one transaction that changes the entries, the directories' sizes
// (entries + 2) and link counts, the times and the objects together, and
// queues the change's intent-log record (zpl_fs_log.cc) in the same txg.
// Names match as the file system says (match_: case and/or normalization,
// zfs/zap/zap_normalize.h); a rename onto another spelling of the same
// entry respells it. A file whose last link goes while it is open waits
// in the unlinked set (DropLink, zpl_znode.cc). ReadDir's cookies are ZAP
// cursor positions, so they stay valid across changes.
#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <unistd.h>

#include "zfs/zap/zap_normalize.h"
#include "zfs/zpl/zpl_fs_impl.h"

namespace uzfs::zpl_impl {

namespace {

constexpr size_t kSymlinkMax = 4095;
constexpr uint64_t kMaxLinks = UINT32_MAX;
constexpr uint64_t kCookieEnd = INT64_MAX;
constexpr uint64_t kCookieBase = 3;             // 0 ".", 1 "..", 2 first ZAP entry

ZplStatus CheckName(std::string_view name) {
  if (name.empty()) return Err(ENOENT, "empty name");
  if (name.size() > kNameMax) return Err(ENAMETOOLONG, "name longer than 255 bytes");
  if (name.find('/') != std::string_view::npos || name.find('\0') != std::string_view::npos)
    return Err(EINVAL, "name contains '/' or NUL");
  return ZplStatus::Ok();
}

}  // namespace

// ------------------------------------------------------------------ names

ZplResult<ZplAttr> ZplFsImpl::Lookup(const ZplCred& c, uint64_t dir, std::string_view name) {
  WriterLock l(&mu_);
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

ZplResult<ZplAttr> ZplFsImpl::Mknod(const ZplCred& c, uint64_t dir, std::string_view name, uint32_t mode,
                                    uint64_t rdev) {
  SyncAlways sync_always(this);
  const uint32_t fmt = mode & S_IFMT;
  if (fmt != S_IFREG && fmt != S_IFCHR && fmt != S_IFBLK && fmt != S_IFIFO && fmt != S_IFSOCK)
    return Err(EINVAL, "mknod: bad file type");
  WriterLock l(&mu_);
  ZPL_ASSIGN(Znode z, CreateNode(c, dir, name, mode, rdev, {}));
  return ToAttr(z);
}

ZplResult<ZplAttr> ZplFsImpl::Mkdir(const ZplCred& c, uint64_t dir, std::string_view name, uint32_t mode) {
  SyncAlways sync_always(this);
  WriterLock l(&mu_);
  ZPL_ASSIGN(Znode z, CreateNode(c, dir, name, S_IFDIR | (mode & 07777), 0, {}));
  return ToAttr(z);
}

ZplResult<ZplAttr> ZplFsImpl::Symlink(const ZplCred& c, uint64_t dir, std::string_view name, std::string_view target) {
  SyncAlways sync_always(this);
  if (target.empty()) return Err(ENOENT, "empty symlink target");
  if (target.size() > kSymlinkMax) return Err(ENAMETOOLONG, "symlink target too long");
  WriterLock l(&mu_);
  ZPL_ASSIGN(Znode z, CreateNode(c, dir, name, S_IFLNK | 0777, 0, std::string(target)));
  return ToAttr(z);
}

ZplResult<std::string> ZplFsImpl::ReadLink(uint64_t ino) {
  WriterLock l(&mu_);
  ZPL_ASSIGN(Znode z, Load(ino));
  if (!IsLnk(z.a.mode)) return Err(EINVAL, "not a symlink");
  ZPL_TRY(TouchAtime(z));
  if (z.a.symlink) return *z.a.symlink;
  std::string s(z.a.size, '\0');
  ZPL_TRY_S(os_->Read(ino, 0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(s.data()), s.size())));
  return s;
}

ZplResult<ZplAttr> ZplFsImpl::Link(const ZplCred& c, uint64_t ino, uint64_t newdir, std::string_view newname) {
  SyncAlways sync_always(this);
  WriterLock l(&mu_);
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
  const Txg txg = tx.txg();
  const ZplTimespec now = Now();
  ZPL_TRY(DirAdd(newdir, newname, DirentOf(z.a.mode, ino), txg));
  z.a.links++;
  z.a.parent = newdir;  // as ZFS: the directory of its newest name
  z.a.ctime = now;
  ZPL_TRY(Store(z, txg));
  d.a.size++;
  d.a.mtime = d.a.ctime = now;
  ZPL_TRY(Store(d, txg));
  Log(LogLink(newdir, ino, newname), txg);
  tx.Commit(kMetaDirtyBytes);
  return ToAttr(z);
}

ZplResult<ZplFsImpl::RemovalTarget> ZplFsImpl::FindForRemoval(const ZplCred& c, uint64_t dir,
                                                               std::string_view name) {
  ZPL_TRY(ValidName(name));
  ZPL_ASSIGN(Znode d, Load(dir));
  if (!IsDir(d.a.mode)) return Err(ENOTDIR, "not a directory");
  ZPL_TRY(Perm(c, d.a, W_OK | X_OK));
  ZPL_ASSIGN(std::optional<uint64_t> v, DirLookup(dir, name));
  if (!v) return Err(ENOENT, std::string(name) + ": no such entry");
  ZPL_ASSIGN(Znode z, Load(*v & kDirentObjMask));
  return RemovalTarget{std::move(d), std::move(z)};
}

ZplStatus ZplFsImpl::Unlink(const ZplCred& c, uint64_t dir, std::string_view name) {
  SyncAlways sync_always(this);
  WriterLock l(&mu_);
  ZPL_TRY(Writable());
  if (name == "." || name == "..") return Err(EISDIR, "unlink of . or ..");
  ZPL_ASSIGN(RemovalTarget t, FindForRemoval(c, dir, name));
  Znode& d = t.dir;
  Znode& z = t.entry;
  if (IsDir(z.a.mode)) return Err(EISDIR, "unlink of a directory");
  ZPL_TRY(Sticky(c, d.a, z.a));
  ZPL_ASSIGN_S(Tx tx, BeginTx(kMetaTxBytes));
  const Txg txg = tx.txg();
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

ZplStatus ZplFsImpl::Rmdir(const ZplCred& c, uint64_t dir, std::string_view name) {
  SyncAlways sync_always(this);
  WriterLock l(&mu_);
  ZPL_TRY(Writable());
  if (name == ".") return Err(EINVAL, "rmdir of .");
  if (name == "..") return Err(ENOTEMPTY, "rmdir of ..");
  ZPL_ASSIGN(RemovalTarget t, FindForRemoval(c, dir, name));
  Znode& d = t.dir;
  Znode& z = t.entry;
  if (!IsDir(z.a.mode)) return Err(ENOTDIR, "rmdir of a non-directory");
  if (z.a.size > 2) return Err(ENOTEMPTY, "directory not empty");
  ZPL_TRY(Sticky(c, d.a, z.a));
  ZPL_ASSIGN_S(Tx tx, BeginTx(kMetaTxBytes));
  const Txg txg = tx.txg();
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

ZplStatus ZplFsImpl::Rename(const ZplCred& c, uint64_t sdir, std::string_view sname, uint64_t tdir,
                            std::string_view tname, unsigned flags) {
  SyncAlways sync_always(this);
  WriterLock l(&mu_);
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
  const Txg txg = tx.txg();
  const ZplTimespec now = Now();
  const bool same_dir = sdir == tdir;
  // sd and td are the same object when same_dir: change one copy.
  Znode& tdr = same_dir ? sd : td;
  if (flags & RENAME_EXCHANGE) {
    ZPL_TRY(DirUpdate(sdir, sname, DirentOf(t->a.mode, t->obj), txg));
    ZPL_TRY(DirUpdate(tdir, tname, DirentOf(s.a.mode, sobj), txg));
    if (!same_dir) {
      const bool sdirp = IsDir(s.a.mode), tdirp = IsDir(t->a.mode);
      s.a.parent = tdir;  // every kind of file, as ZFS: where its name now is
      t->a.parent = sdir;
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
    }
    s.a.parent = tdir;  // every kind of file, same directory or not, as ZFS
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

// Rename's case above: the same entry of one directory, named now in
// another spelling.
bool ZplFsImpl::RespelledSameEntry(uint64_t sdir, std::string_view sname, uint64_t tdir, std::string_view tname,
                                   unsigned flags) {
  if (sdir != tdir || match_ == 0 || (flags & RENAME_EXCHANGE)) return false;
  auto ss = DirStoredName(sdir, sname);
  auto ts = DirStoredName(tdir, tname);
  return ss.ok() && ts.ok() && *ss && *ts && **ss == **ts && **ts != tname;
}

ZplStatus ZplFsImpl::NotAncestor(uint64_t anc, uint64_t dir) {
  for (uint64_t d = dir, hops = 0; hops < 100000; hops++) {
    if (d == anc) return Err(EINVAL, "rename of a directory into its own subtree");
    if (d == root_) return ZplStatus::Ok();
    ZPL_ASSIGN(Znode z, Load(d));
    if (z.a.parent == d) return ZplStatus::Ok();
    d = z.a.parent;
  }
  return Err(ELOOP, "directory parent chain too long");
}

// A name given by a caller: CheckName's rules, and UTF-8 on utf8only
// file systems (EILSEQ, as ZFS answers for lookups and new names alike).
ZplStatus ZplFsImpl::ValidName(std::string_view name) const {
  ZPL_TRY(CheckName(name));
  if (utf8only_ && !IsValidUtf8(name)) return Err(EILSEQ, "name is not valid UTF-8 (utf8only=on)");
  return ZplStatus::Ok();
}

// ------------------------------------------------------------ directories

ZplResult<std::vector<ZplDirEntry>> ZplFsImpl::ReadDir(const ZplCred& c, uint64_t dir, uint64_t cookie, size_t max) {
  WriterLock l(&mu_);
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

// ---------------------------------------------------------------- creating

ZplResult<std::pair<ZplAttr, ZplHandle>> ZplFsImpl::Create(const ZplCred& c, uint64_t dir, std::string_view name,
                                                           uint32_t mode, int open_flags, ZplHandleUse use) {
  SyncAlways sync_always(this);
  WriterLock l(&mu_);
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
  handles_[h] = Handle{z.obj, HandleFlags(open_flags, use), z.a.mode & kSIfMt};
  open_count_[z.obj]++;
  return std::make_pair(ToAttr(z), h);
}

// mknod/mkdir/symlink/create: checks, then the new znode linked into dir.
ZplResult<Znode> ZplFsImpl::CreateNode(const ZplCred& c, uint64_t dir, std::string_view name, uint64_t mode,
                                       uint64_t rdev, const std::optional<std::string>& target) {
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
ZplResult<Znode> ZplFsImpl::CreateNodeIn(const ZplCred& c, Znode& d, bool exists, std::string_view name, uint64_t mode,
                                         uint64_t rdev, const std::optional<std::string>& target) {
  const uint64_t dir = d.obj;
  ZPL_TRY(Writable());
  if (d.a.links == 0) return Err(ENOENT, "directory was removed");
  ZPL_TRY(Perm(c, d.a, W_OK | X_OK));
  if (exists) return Err(EEXIST, std::string(name) + ": exists");
  if (IsDir(mode) && d.a.links >= kMaxLinks) return Err(EMLINK, "too many subdirectories");
  const uint64_t est = kMetaTxBytes + (target ? RoundUp(target->size(), 512) * 4 : 0);
  ZPL_TRY(CheckSpace(est));
  ZPL_ASSIGN_S(Tx tx, BeginTx(est));
  const Txg txg = tx.txg();
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
  tx.Commit(kMetaDirtyBytes + (target ? WriteChangedBytes(target->size()) : 0));
  // The attributes are the ones just stored; the dnode is read again for
  // what storing them (and a symlink's target) changed in it.
  ZPL_ASSIGN_S(z.dn, os_->GetDnode(z.obj));
  return z;
}

// ---------------------------------------------------------- directory ZAPs

ZplResult<std::optional<uint64_t>> ZplFsImpl::DirLookup(uint64_t dir, std::string_view name) {
  auto r = dirs_.Lookup(dir, name, pool_.open_txg(), match_);
  if (!r.ok()) return ZplStatus::FromStatus(r.status());
  return *r;
}

// The name `name` matches as stored in `dir` (nullopt when absent).
ZplResult<std::optional<std::string>> ZplFsImpl::DirStoredName(uint64_t dir, std::string_view name) {
  std::string stored;
  auto r = dirs_.Lookup(dir, name, pool_.open_txg(), match_, &stored);
  if (!r.ok()) return ZplStatus::FromStatus(r.status());
  if (!*r) return std::optional<std::string>();
  return std::optional<std::string>(std::move(stored));
}

ZplStatus ZplFsImpl::DirAdd(uint64_t dir, std::string_view name, uint64_t value, Txg txg) {
  return ZplStatus::FromStatus(dirs_.Add(dir, name, value, txg));
}

ZplStatus ZplFsImpl::DirUpdate(uint64_t dir, std::string_view name, uint64_t value, Txg txg) {
  return ZplStatus::FromStatus(dirs_.Update(dir, name, value, txg, match_));
}

ZplStatus ZplFsImpl::DirRemove(uint64_t dir, std::string_view name, Txg txg) {
  return ZplStatus::FromStatus(dirs_.Remove(dir, name, txg, match_));
}

ZplResult<std::vector<ZapEntry>> ZplFsImpl::DirList(uint64_t dir, Txg txg) {
  auto r = dirs_.List(dir, txg);
  if (!r.ok()) return ZplStatus::FromStatus(r.status());
  return std::move(*r);
}

}  // namespace uzfs::zpl_impl
