#define FUSE_USE_VERSION 312
#include "fuse/fuse_mount.h"

#include "fuse/fuse_killpriv.h"
#include "fuse/fuse_loop.h"
#include "fuse/fuse_probe.h"
#include "fuse/fuse_snapdir.h"
#include "fuse/fuse_uring.h"
#include "zfs/util/mutex.h"
#include "zfs/zpl/zpl_path.h"

#include <fuse3/fuse_lowlevel.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <exception>
#include <new>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace uzfs {

struct FuseMount::Context {
  ZplFs* fs = nullptr;
  std::atomic<uint64_t> open{0};  // handles open through the mount
  double timeout = 1.0;
  uint64_t root = 0;  // the ZPL's root object; the kernel calls it FUSE_ROOT_ID (1)
  // .zfs and its snapshots (fuse_snapdir.h); null: the mount has no .zfs.
  ZplSnapshotTrees* snaps = nullptr;
  std::atomic<bool> snapdir_visible{false};  // .zfs listed in the root
  std::string mountpoint;  // written back before a mkdir in .zfs/snapshot snapshots
  unsigned max_threads = 1;  // the session's workers
  bool writeback = true;
  fuse_session* se = nullptr;
  KillPrivState killpriv;  // suid/sgid clearing done here (fuse_killpriv.h)
  // Requests over io_uring (fuse_uring.h); null: /dev/fuse only.
  std::unique_ptr<FuseUring> uring;
  std::string read_ahead_path;  // the mount's bdi read_ahead_kb; empty: leave it
  unsigned read_ahead_kb = 0;
  std::atomic<bool> read_ahead_set{false};
  // Below this much room (ZplFs::WriteRoom) new opens for writing bypass the
  // page cache, so write(2) itself gets ENOSPC/EDQUOT (see fuse_mount.h).
  uint64_t write_reserve = 0;
  // Files (by kernel inode) whose page-cache writeback was refused for
  // space: the errno and the lowest offset refused. The kernel writes a
  // file's pages back through any of its writable handles, so this is per
  // file: every later writeback of it is refused too, closes report it,
  // and at the last writable handle's release the file is cut back to that
  // offset (writebacks run in parallel: one after the refused range may
  // have landed), so it holds a prefix of what was written with no hole
  // inside, unless a direct write landed past it meanwhile.
  struct RefusedWrites {
    int err = 0;
    uint64_t from = 0;
    bool written_past = false;  // a direct write past `from` succeeded since
  };
  Mutex wb_mu;
  std::map<uint64_t, RefusedWrites> wb_errors UZFS_GUARDED_BY(wb_mu);
  // wb_errors.size(), read without wb_mu: writes skip the lock while no
  // file has a refused writeback (every write passes here).
  std::atomic<size_t> refused_files{0};
  std::map<uint64_t, unsigned> writers UZFS_GUARDED_BY(wb_mu);  // writable handles per inode
  std::set<uint64_t> writable_handles UZFS_GUARDED_BY(wb_mu);   // their fh
  // Kernel notifications that may wait for kernel locks (a directory's, a
  // page's) go out from their own thread, never a worker's: a request
  // holding such a lock may be waiting for a worker. Started on first use.
  Mutex notify_mu;
  CondVar notify_cv;
  std::deque<std::function<void()>> notify_queue UZFS_GUARDED_BY(notify_mu);
  bool notify_stop UZFS_GUARDED_BY(notify_mu) = false;
  std::thread notifier;  // started and joined under notify_mu

  void Notify(std::function<void()> fn) {
    MutexLock l(&notify_mu);
    if (notify_stop) return;
    notify_queue.push_back(std::move(fn));
    if (!notifier.joinable()) notifier = std::thread([this] { NotifyLoop(); });
    notify_cv.Signal();
  }
  void NotifyLoop() {
    for (;;) {
      std::function<void()> fn;
      {
        MutexLock l(&notify_mu);
        while (notify_queue.empty() && !notify_stop) notify_cv.Wait(&notify_mu);
        if (notify_queue.empty()) return;
        fn = std::move(notify_queue.front());
        notify_queue.pop_front();
      }
      fn();
    }
  }
  // Runs what was queued, then stops the thread (before the session goes).
  void StopNotifier() {
    std::thread t;
    {
      MutexLock l(&notify_mu);
      notify_stop = true;
      notify_cv.SignalAll();
      t = std::move(notifier);
    }
    if (t.joinable()) t.join();
  }
};

namespace {

FuseMount::Context* Ctx(fuse_req_t req) {
  return static_cast<FuseMount::Context*>(fuse_req_userdata(req));
}

// Inode numbers of the mounted file system are object numbers, except
// that the kernel names the root FUSE_ROOT_ID (1); object 1 is the master
// node, never a file, so the two swap without clashing. Snapshots' files
// and the control directories have numbers above 2^48 (fuse_snapdir.h).
uint64_t Out(const FuseMount::Context* ctx, uint64_t ino) { return fuse_ctl::NodeId(0, ino, ctx->root); }

// What an inode number names: an object of the mounted file system (slot
// 0) or of a snapshot's tree, or a control directory.
struct Node {
  uint64_t ctl = 0;              // fuse_ctl::kRootIno or kSnapdirIno; 0: an object
  uint32_t slot = 0;
  ZplFs* fs = nullptr;           // the tree (the file system's for a control directory)
  std::shared_ptr<ZplFs> hold;   // a snapshot's tree, kept while the request runs
  uint64_t obj = 0;
  uint64_t root = 0;             // the tree's root object
  uint64_t Out(uint64_t o) const { return fuse_ctl::NodeId(slot, o, root); }
  bool head() const { return ctl == 0 && slot == 0; }
};

ZplResult<Node> Resolve(FuseMount::Context* ctx, fuse_ino_t ino) {
  Node n;
  n.fs = ctx->fs;
  n.root = ctx->root;
  const uint32_t slot = fuse_ctl::SlotOf(ino);
  const uint64_t low = ino & fuse_ctl::kObjMask;
  if (slot == 0) {
    if (ctx->snaps != nullptr && fuse_ctl::IsCtl(ino)) {
      n.ctl = ino;
      return n;
    }
    n.obj = low == fuse_ctl::kTreeRootLow ? ctx->root : low;
    return n;
  }
  if (ctx->snaps == nullptr) return ZplStatus(ESTALE, "no snapshots here");
  auto t = ctx->snaps->Tree(slot);
  if (!t.ok()) return t.status();
  n.hold = std::move(t.value());
  n.fs = n.hold.get();
  n.slot = slot;
  n.root = n.fs->root_ino();
  n.obj = low == fuse_ctl::kTreeRootLow ? n.root : low;
  return n;
}

// The node of `ino`, or the request answered with the error (false).
bool Get(fuse_req_t req, fuse_ino_t ino, Node* n) {
  auto r = Resolve(Ctx(req), ino);
  if (!r.ok()) {
    fuse_reply_err(req, r.err());
    return false;
  }
  *n = std::move(r.value());
  return true;
}

// The object of the mounted file system `ino` names, for a request that
// changes something; false (answered EROFS) for a snapshot's file or a
// control directory.
bool GetHead(fuse_req_t req, fuse_ino_t ino, uint64_t* obj) {
  auto* ctx = Ctx(req);
  if (fuse_ctl::SlotOf(ino) != 0 || (ctx->snaps != nullptr && fuse_ctl::IsCtl(ino))) {
    fuse_reply_err(req, EROFS);
    return false;
  }
  *obj = ino == FUSE_ROOT_ID ? ctx->root : ino;
  return true;
}

// The caller's credentials. Supplementary groups cost a read of /proc, so
// they are fetched only for non-root callers (root passes every check).
ZplCred Cred(fuse_req_t req) {
  const fuse_ctx* fc = fuse_req_ctx(req);
  ZplCred c;
  c.uid = fc->uid;
  c.gid = fc->gid;
  c.umask = fc->umask;
  if (c.uid != 0) {
    gid_t groups[64];
    int n = fuse_req_getgroups(req, 64, groups);
    if (n > 64) {
      std::vector<gid_t> more(static_cast<size_t>(n));
      n = fuse_req_getgroups(req, n, more.data());
      for (int i = 0; i < n; ++i) c.groups.push_back(more[static_cast<size_t>(i)]);
    } else {
      for (int i = 0; i < n; ++i) c.groups.push_back(groups[i]);
    }
  }
  return c;
}

void ReplyErr(fuse_req_t req, int err) { fuse_reply_err(req, err); }

// Attributes as the kernel sees them: `a` of node n's tree (or of a
// control directory, whose number is its own).
struct stat Stat(const Node& n, const ZplAttr& a) {
  struct stat st = a.ToStat();
  st.st_ino = n.ctl != 0 ? a.ino : n.Out(a.ino);
  return st;
}

fuse_entry_param Entry(const FuseMount::Context* ctx, const Node& n, const ZplAttr& a) {
  fuse_entry_param e;
  std::memset(&e, 0, sizeof(e));
  e.generation = a.gen;
  e.attr = Stat(n, a);
  e.ino = e.attr.st_ino;
  e.attr_timeout = ctx->timeout;
  e.entry_timeout = ctx->timeout;
  return e;
}

// The file system's own: the head tree, slot 0.
Node HeadNode(const FuseMount::Context* ctx) {
  Node n;
  n.fs = ctx->fs;
  n.root = ctx->root;
  return n;
}

void ReplyEntry(fuse_req_t req, const Node& n, const ZplResult<ZplAttr>& r) {
  if (!r.ok()) return ReplyErr(req, r.err());
  fuse_entry_param e = Entry(Ctx(req), n, r.value());
  fuse_reply_entry(req, &e);
}
void ReplyEntry(fuse_req_t req, const ZplResult<ZplAttr>& r) { ReplyEntry(req, HeadNode(Ctx(req)), r); }

void ReplyStatus(fuse_req_t req, const ZplStatus& s) { fuse_reply_err(req, s.err()); }

// FUSE_HANDLE_KILLPRIV_V2 (fuse_killpriv.h): the kernel asked to clear
// set-user-ID (and set-group-ID when group-executable) of `ino` for the
// request at hand. Done as root (the kernel decided); the kernel's cached
// attributes are dropped so the next stat sees the new mode.
void KillSuidSgid(fuse_req_t req, uint64_t ino) {
  auto* ctx = Ctx(req);
  auto before = ctx->fs->GetAttr(ino);
  if (!before.ok() || KilledMode(before.value().mode & 07777) == (before.value().mode & 07777)) return;
  ZplSetAttr set;
  set.kill_suidgid = true;  // read-modify-write inside the ZPL: a racing chmod is not undone
  if (ctx->fs->SetAttr(ZplCred{}, ino, set).ok() && ctx->se != nullptr) {
    (void)fuse_lowlevel_notify_inval_inode(ctx->se, Out(ctx, ino), -1, 0);
  }
}

ssize_t IoRead(int fd, void* buf, size_t len, void* userdata) {
  auto* ctx = static_cast<FuseMount::Context*>(userdata);
  const ssize_t n = KillPrivRead(&ctx->killpriv, fd, buf, len);
  if (ctx->uring) ctx->uring->NoteRequest(buf, n);
  FuseProbeNoteRequest(buf, n);
  return n;
}
ssize_t IoWritev(int fd, struct iovec* iov, int count, void* userdata) {
  auto* ctx = static_cast<FuseMount::Context*>(userdata);
  FuseProbeNoteReply(iov, count);
  ssize_t n = 0;
  // A reply to a request that came over io_uring goes back the same way.
  if (ctx->uring && ctx->uring->TakeReply(iov, count, &n)) return n;
  const bool init = ctx->uring && ctx->uring->PatchInitReply(iov, count);
  n = KillPrivWritev(&ctx->killpriv, fd, iov, count);
  if (init && n >= 0) ctx->uring->InitAnswered();
  return n;
}

std::string_view Name(const char* s) { return std::string_view(s); }

// --- request handlers ---

void OpInit(void* userdata, fuse_conn_info* conn) {
  auto* ctx = static_cast<FuseMount::Context*>(userdata);
  if (ctx->writeback && (conn->capable & FUSE_CAP_WRITEBACK_CACHE)) {
    conn->want |= FUSE_CAP_WRITEBACK_CACHE;
  } else {
    ctx->writeback = false;
  }
  if (conn->capable & FUSE_CAP_READDIRPLUS) conn->want |= FUSE_CAP_READDIRPLUS;
  if (conn->capable & FUSE_CAP_READDIRPLUS_AUTO) conn->want |= FUSE_CAP_READDIRPLUS_AUTO;
  if (conn->capable & FUSE_CAP_PARALLEL_DIROPS) conn->want |= FUSE_CAP_PARALLEL_DIROPS;
  if (conn->capable & FUSE_CAP_ASYNC_DIO) conn->want |= FUSE_CAP_ASYNC_DIO;
  if (conn->capable & FUSE_CAP_ASYNC_READ) conn->want |= FUSE_CAP_ASYNC_READ;
  // Replies come from memory: splicing them would only add a copy.
  conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
  conn->max_write = 1u << 20;
  conn->max_readahead = 1u << 20;
  conn->max_background = 64;
  conn->congestion_threshold = 48;
  conn->time_gran = 1;  // nanosecond timestamps
}

// A control directory's attributes (owner and times of the root's).
ZplResult<ZplAttr> CtlAttr(FuseMount::Context* ctx, uint64_t node) {
  auto root = ctx->fs->GetAttr(ctx->root);
  if (!root.ok()) return root.status();
  return fuse_ctl::CtlAttr(node, root.value());
}

// A name in .zfs/snapshot: the root of that snapshot's tree. Names come
// and go with zfs snapshot/destroy/rename behind the kernel's back, so
// neither a hit nor a miss is cached (the tree's attributes are: a
// snapshot never changes).
void LookupSnapshot(fuse_req_t req, const char* name) {
  auto* ctx = Ctx(req);
  fuse_entry_param e;
  std::memset(&e, 0, sizeof(e));
  auto found = ctx->snaps->Find(Name(name));
  if (!found.ok() && found.err() == ENOENT) return (void)fuse_reply_entry(req, &e);
  if (!found.ok()) return ReplyErr(req, found.err());
  Node n;
  if (!Get(req, (static_cast<uint64_t>(found.value().slot) << fuse_ctl::kSlotShift) | fuse_ctl::kTreeRootLow, &n)) {
    return;
  }
  auto a = n.fs->GetAttr(n.root);
  if (!a.ok()) return ReplyErr(req, a.err());
  e = Entry(ctx, n, a.value());
  e.entry_timeout = 0;
  fuse_reply_entry(req, &e);
}

void OpLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  auto* ctx = Ctx(req);
  Node n;
  if (!Get(req, parent, &n)) return;
  if (n.ctl == fuse_ctl::kSnapdirIno) return LookupSnapshot(req, name);
  if (n.ctl == fuse_ctl::kRootIno) {
    if (std::strcmp(name, fuse_ctl::kSnapdirName) == 0) {
      return ReplyEntry(req, n, CtlAttr(ctx, fuse_ctl::kSnapdirIno));
    }
    if (std::strcmp(name, "..") == 0) return ReplyEntry(req, HeadNode(ctx), ctx->fs->GetAttr(ctx->root));
    return ReplyErr(req, ENOENT);
  }
  if (ctx->snaps != nullptr && n.slot == 0 && n.obj == ctx->root && std::strcmp(name, fuse_ctl::kCtlName) == 0) {
    n.ctl = fuse_ctl::kRootIno;
    return ReplyEntry(req, n, CtlAttr(ctx, fuse_ctl::kRootIno));
  }
  if (n.slot != 0 && n.obj == n.root && std::strcmp(name, "..") == 0) {
    n.ctl = fuse_ctl::kSnapdirIno;  // a snapshot's root: up is .zfs/snapshot
    return ReplyEntry(req, n, CtlAttr(ctx, fuse_ctl::kSnapdirIno));
  }
  auto r = n.fs->Lookup(Cred(req), n.obj, Name(name));
  if (!r.ok() && r.err() == ENOENT) {
    // Negative entry: the kernel may cache the miss (uzfs is the only
    // writer), except where another spelling's create would not clear it.
    fuse_entry_param e;
    std::memset(&e, 0, sizeof(e));
    e.entry_timeout = n.fs->loose_names() ? 0.0 : ctx->timeout;
    fuse_reply_entry(req, &e);
    return;
  }
  ReplyEntry(req, n, r);
}

void OpForget(fuse_req_t req, fuse_ino_t, uint64_t) { fuse_reply_none(req); }
void OpForgetMulti(fuse_req_t req, size_t, fuse_forget_data*) { fuse_reply_none(req); }

void OpGetattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  Node n;
  if (!Get(req, ino, &n)) return;
  auto r = n.ctl != 0 ? CtlAttr(Ctx(req), n.ctl) : n.fs->GetAttr(n.obj);
  if (!r.ok()) return ReplyErr(req, r.err());
  struct stat st = Stat(n, r.value());
  fuse_reply_attr(req, &st, Ctx(req)->timeout);
}

void OpSetattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info* fi) {
  uint64_t obj = 0;
  if (!GetHead(req, ino, &obj)) return;
  ZplSetAttr set;
  if (to_set & FUSE_SET_ATTR_MODE) set.mode = attr->st_mode & 07777;
  // A truncate by a caller without CAP_FSETID: the ZPL clears the bits in
  // the same transaction, with no owner check (a non-owner may truncate a
  // file it can write).
  set.kill_suidgid = TakeKillSuidgid();
  if (to_set & FUSE_SET_ATTR_UID) set.uid = attr->st_uid;
  if (to_set & FUSE_SET_ATTR_GID) set.gid = attr->st_gid;
  if (to_set & FUSE_SET_ATTR_SIZE) set.size = static_cast<uint64_t>(attr->st_size);
  // The kernel names the handle for ftruncate and for writing back the
  // times of writes made through it: those are checked against the handle.
  if (fi != nullptr) set.handle = fi->fh;
  if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
    set.atime = timespec{0, UTIME_NOW};
  } else if (to_set & FUSE_SET_ATTR_ATIME) {
    set.atime = attr->st_atim;
  }
  if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
    set.mtime = timespec{0, UTIME_NOW};
  } else if (to_set & FUSE_SET_ATTR_MTIME) {
    set.mtime = attr->st_mtim;
    // With the writeback cache the kernel keeps mtime and sends its clock's
    // time with a truncate or a touch (atime "now"), never "now" itself;
    // default_permissions already let the caller do it.
    set.mtime_is_now_for_non_owner = (to_set & (FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME_NOW)) != 0;
  }
  auto r = Ctx(req)->fs->SetAttr(Cred(req), obj, set);
  if (!r.ok()) return ReplyErr(req, r.err());
  struct stat st = Stat(HeadNode(Ctx(req)), r.value());
  fuse_reply_attr(req, &st, Ctx(req)->timeout);
}

void OpReadlink(fuse_req_t req, fuse_ino_t ino) {
  Node n;
  if (!Get(req, ino, &n)) return;
  if (n.ctl != 0) return ReplyErr(req, EINVAL);
  auto r = n.fs->ReadLink(n.obj);
  if (!r.ok()) return ReplyErr(req, r.err());
  fuse_reply_readlink(req, r.value().c_str());
}

void OpMknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev) {
  uint64_t dir = 0;
  if (!GetHead(req, parent, &dir)) return;
  ReplyEntry(req, Ctx(req)->fs->Mknod(Cred(req), dir, Name(name), mode, rdev));
}

// Who may take, destroy and rename snapshots through .zfs/snapshot: root,
// as `zfs snapshot` (uzfs has no `zfs allow` yet).
bool MaySnapshot(fuse_req_t req) { return fuse_req_ctx(req)->uid == 0; }

// mkdir .zfs/snapshot/NAME: takes snapshot fs@NAME of what the mount holds
// now, the kernel's dirty pages included (written back first, as `zfs
// snapshot` does).
void MkdirSnapshot(fuse_req_t req, const char* name) {
  auto* ctx = Ctx(req);
  if (!MaySnapshot(req)) return ReplyErr(req, EPERM);
  // Written back by the session's other workers (none when it has one).
  if (!ctx->mountpoint.empty() && ctx->max_threads > 1) {
    const int fd = ::open(ctx->mountpoint.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
      (void)::syncfs(fd);
      ::close(fd);
    }
  }
  ZplStatus s = ctx->snaps->Create(Name(name));
  if (!s.ok()) return ReplyErr(req, s.err());
  LookupSnapshot(req, name);
}

void OpMkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  if (Ctx(req)->snaps != nullptr && parent == fuse_ctl::kSnapdirIno) return MkdirSnapshot(req, name);
  uint64_t dir = 0;
  if (!GetHead(req, parent, &dir)) return;
  ReplyEntry(req, Ctx(req)->fs->Mkdir(Cred(req), dir, Name(name), mode));
}

void OpUnlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  uint64_t dir = 0;
  if (!GetHead(req, parent, &dir)) return;
  ReplyStatus(req, Ctx(req)->fs->Unlink(Cred(req), dir, Name(name)));
}

void OpRmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  auto* ctx = Ctx(req);
  if (ctx->snaps != nullptr && parent == fuse_ctl::kSnapdirIno) {
    // rmdir .zfs/snapshot/NAME: destroys the snapshot.
    if (!MaySnapshot(req)) return ReplyErr(req, EPERM);
    return ReplyStatus(req, ctx->snaps->Destroy(Name(name)));
  }
  uint64_t dir = 0;
  if (!GetHead(req, parent, &dir)) return;
  ReplyStatus(req, ctx->fs->Rmdir(Cred(req), dir, Name(name)));
}

void OpSymlink(fuse_req_t req, const char* link, fuse_ino_t parent, const char* name) {
  uint64_t dir = 0;
  if (!GetHead(req, parent, &dir)) return;
  ReplyEntry(req, Ctx(req)->fs->Symlink(Cred(req), dir, Name(name), Name(link)));
}

void OpRename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent,
              const char* newname, unsigned int flags) {
  auto* ctx = Ctx(req);
  if (ctx->snaps != nullptr && parent == fuse_ctl::kSnapdirIno) {
    // mv .zfs/snapshot/A .zfs/snapshot/B: renames the snapshot (no
    // RENAME_EXCHANGE/NOREPLACE tricks: B must not exist).
    if (newparent != fuse_ctl::kSnapdirIno) return ReplyErr(req, EXDEV);
    if (flags & ~static_cast<unsigned>(RENAME_NOREPLACE)) return ReplyErr(req, EINVAL);
    if (!MaySnapshot(req)) return ReplyErr(req, EPERM);
    return ReplyStatus(req, ctx->snaps->Rename(Name(name), Name(newname)));
  }
  uint64_t from = 0, to = 0;
  if (!GetHead(req, parent, &from)) return;
  if (fuse_ctl::SlotOf(newparent) != 0 || (ctx->snaps != nullptr && fuse_ctl::IsCtl(newparent))) {
    return ReplyErr(req, EXDEV);
  }
  to = newparent == FUSE_ROOT_ID ? ctx->root : newparent;
  ReplyStatus(req, ctx->fs->Rename(Cred(req), from, Name(name), to, Name(newname), flags));
}

void OpLink(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char* newname) {
  auto* ctx = Ctx(req);
  // A snapshot's file cannot be linked into the file system, nor anything
  // into a snapshot.
  if (fuse_ctl::SlotOf(ino) != fuse_ctl::SlotOf(newparent)) return ReplyErr(req, EXDEV);
  uint64_t obj = 0, dir = 0;
  if (!GetHead(req, ino, &obj) || !GetHead(req, newparent, &dir)) return;
  ReplyEntry(req, ctx->fs->Link(Cred(req), obj, dir, Name(newname)));
}

// With the writeback cache the kernel reads through write-only handles and
// computes O_APPEND offsets itself (the ZPL widens the handle, not the
// caller's permission check).
ZplHandleUse HandleUse(const FuseMount::Context* ctx) {
  return ctx->writeback ? ZplHandleUse::kPageCache : ZplHandleUse::kAsOpened;
}

// The room below which writes bypass the page cache when not told: four
// times what the kernel may hold dirty for this mount (its bdi's
// max_bytes: FUSE mounts have a strict per-device limit, about 1% of the
// dirty threshold), at least 256 MiB.
uint64_t DefaultWriteReserve(const std::string& device) {
  uint64_t dirty_max = 64ull << 20;
  std::ifstream f("/sys/class/bdi/" + device + "/max_bytes");
  if (!device.empty()) f >> dirty_max;
  return std::max<uint64_t>(256ull << 20, 4 * dirty_max);
}

// Near the dataset's quota or the pool's end, a handle for writing skips
// the page cache: write(2) waits for uzfsd and gets its ENOSPC/EDQUOT, and
// nothing the application was told is written can be refused later.
void ChooseWriteThrough(FuseMount::Context* ctx, fuse_file_info* fi) {
  // Write-only handles only: a direct handle cannot be mapped shared
  // (libfuse here cannot ask for FUSE_DIRECT_IO_ALLOW_MMAP), and a writable
  // shared mapping needs a read-write descriptor anyway.
  if (!ctx->writeback || (fi->flags & O_ACCMODE) != O_WRONLY) return;
  if (ctx->fs->WriteRoom() >= ctx->write_reserve) return;
  fi->direct_io = 1;
  fi->keep_cache = 0;
}

// The error a space-refused writeback left on the file (0: none).
int WritebackError(FuseMount::Context* ctx, uint64_t ino) {
  if (ctx->refused_files.load(std::memory_order_acquire) == 0) return 0;
  MutexLock l(&ctx->wb_mu);
  auto it = ctx->wb_errors.find(ino);
  return it == ctx->wb_errors.end() ? 0 : it->second.err;
}

bool Writable(int flags) { return (flags & O_ACCMODE) != O_RDONLY; }

// One more writable handle of the file.
void AddWriter(FuseMount::Context* ctx, uint64_t ino, uint64_t fh, int flags) {
  if (!Writable(flags)) return;
  MutexLock l(&ctx->wb_mu);
  ctx->writers[ino]++;
  ctx->writable_handles.insert(fh);
}

// One writable handle fewer; when it was the last and writebacks of the
// file were refused, the record (taken out).
std::optional<FuseMount::Context::RefusedWrites> ReleaseWriter(FuseMount::Context* ctx, uint64_t ino,
                                                               uint64_t fh, int flags) {
  if (!Writable(flags)) return std::nullopt;
  MutexLock l(&ctx->wb_mu);
  ctx->writable_handles.erase(fh);
  auto w = ctx->writers.find(ino);
  if (w != ctx->writers.end() && --w->second > 0) return std::nullopt;
  if (w != ctx->writers.end()) ctx->writers.erase(w);
  auto it = ctx->wb_errors.find(ino);
  if (it == ctx->wb_errors.end()) return std::nullopt;
  FuseMount::Context::RefusedWrites r = it->second;
  ctx->wb_errors.erase(it);
  ctx->refused_files.store(ctx->wb_errors.size(), std::memory_order_release);
  return r;
}

// The read-ahead window (fuse_mount.h), once: on the first open, which the
// kernel sends only after it processed the INIT reply (where it lowered the
// window to its default).
void ApplyReadAhead(FuseMount::Context* ctx) {
  if (ctx->read_ahead_path.empty() || ctx->read_ahead_set.exchange(true)) return;
  std::ofstream f(ctx->read_ahead_path);
  f << ctx->read_ahead_kb;
}

// A file open in a snapshot: the tree it was opened in (kept open by it,
// whatever the slot's tree is later) and that tree's handle. The FUSE
// handle of such a file points to one.
struct SnapshotHandle {
  std::shared_ptr<ZplFs> tree;
  ZplHandle h = 0;
};
SnapshotHandle* SnapHandleOf(const fuse_file_info* fi) { return reinterpret_cast<SnapshotHandle*>(fi->fh); }

// The tree and the tree's handle of an open file `ino`.
std::pair<ZplFs*, ZplHandle> OpenFile(fuse_req_t req, fuse_ino_t ino, const fuse_file_info* fi) {
  if (fuse_ctl::SlotOf(ino) == 0) return {Ctx(req)->fs, fi->fh};
  return {SnapHandleOf(fi)->tree.get(), SnapHandleOf(fi)->h};
}

// open(2) of a file in a snapshot: read-only (the tree refuses anything
// else with EROFS); its handle keeps the tree open until release.
void OpenInSnapshot(fuse_req_t req, const Node& n, fuse_file_info* fi) {
  auto* ctx = Ctx(req);
  auto r = n.fs->Open(Cred(req), n.obj, fi->flags, ZplHandleUse::kAsOpened);
  if (!r.ok()) return ReplyErr(req, r.err());
  auto* sh = new SnapshotHandle{n.hold, r.value()};
  fi->fh = reinterpret_cast<uint64_t>(sh);
  fi->keep_cache = 1;  // a snapshot never changes
  ctx->snaps->Opened(n.slot);
  ctx->open++;
  if (fuse_reply_open(req, fi) == -ENOENT) {
    ctx->open--;
    (void)n.fs->Release(sh->h);
    delete sh;
    ctx->snaps->Closed(n.slot);
  }
}

void OpOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto* ctx = Ctx(req);
  ApplyReadAhead(ctx);
  if (fuse_ctl::SlotOf(ino) != 0) {
    Node n;
    if (Get(req, ino, &n)) OpenInSnapshot(req, n, fi);
    return;
  }
  if (ctx->snaps != nullptr && fuse_ctl::IsCtl(ino)) return ReplyErr(req, EISDIR);
  const bool kill = TakeKillSuidgid();  // O_TRUNC by a caller without CAP_FSETID
  const uint64_t obj = ino == FUSE_ROOT_ID ? ctx->root : ino;
  auto r = ctx->fs->Open(Cred(req), obj, fi->flags, HandleUse(ctx));
  if (!r.ok()) return ReplyErr(req, r.err());
  if (kill) KillSuidSgid(req, obj);
  fi->fh = r.value();
  fi->keep_cache = 1;  // only uzfs changes the file, through this mount
  ChooseWriteThrough(ctx, fi);
  ctx->open++;
  AddWriter(ctx, ino, fi->fh, fi->flags);
  if (fuse_reply_open(req, fi) == -ENOENT) {  // the open was interrupted
    ctx->open--;
    ReleaseWriter(ctx, ino, fi->fh, fi->flags);
    (void)ctx->fs->Release(fi->fh);
  }
}

void OpCreate(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi) {
  ApplyReadAhead(Ctx(req));
  auto* ctx = Ctx(req);
  uint64_t dir = 0;
  if (!GetHead(req, parent, &dir)) return;
  // The kernel asks on every O_CREAT|O_TRUNC without CAP_FSETID; only a
  // file that existed loses its bits (a new one keeps the mode asked for).
  const bool kill = TakeKillSuidgid() && ctx->fs->Lookup(Cred(req), dir, Name(name)).ok();
  auto r = ctx->fs->Create(Cred(req), dir, Name(name), mode, fi->flags, HandleUse(ctx));
  if (!r.ok()) return ReplyErr(req, r.err());
  if (kill) KillSuidSgid(req, r.value().first.ino);
  fi->fh = r.value().second;
  fi->keep_cache = 1;
  ChooseWriteThrough(ctx, fi);
  ctx->open++;
  fuse_entry_param e = Entry(ctx, HeadNode(ctx), r.value().first);
  AddWriter(ctx, e.ino, fi->fh, fi->flags);
  if (fuse_reply_create(req, &e, fi) == -ENOENT) {
    ctx->open--;
    ReleaseWriter(ctx, e.ino, fi->fh, fi->flags);
    (void)ctx->fs->Release(fi->fh);
  }
}

void OpRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  const auto [fs, h] = OpenFile(req, ino, fi);
  // Not zero-filled (up to 1 MiB a read): only the bytes Read returns are sent.
  std::unique_ptr<uint8_t[]> buf(new uint8_t[size]);
  auto r = fs->Read(h, static_cast<uint64_t>(off), std::span<uint8_t>(buf.get(), size));
  if (!r.ok()) return ReplyErr(req, r.err());
  fuse_reply_buf(req, reinterpret_cast<const char*>(buf.get()), r.value());
}

void OpWrite(fuse_req_t req, fuse_ino_t ino, const char* data, size_t size, off_t off,
             fuse_file_info* fi) {
  auto* ctx = Ctx(req);
  if (fuse_ctl::SlotOf(ino) != 0) return ReplyErr(req, EBADF);  // never opened for writing
  if (TakeKillSuidgid()) {
    // A writer without CAP_FSETID. Through the page cache the kernel
    // removes file capabilities itself; for a direct write (a file opened
    // near the dataset's limit) that is the server's part of
    // FUSE_HANDLE_KILLPRIV_V2 too.
    const uint64_t obj = ino == FUSE_ROOT_ID ? ctx->root : ino;
    KillSuidSgid(req, obj);
    (void)ctx->fs->RemoveXattr(ZplCred{}, obj, "security.capability");
  }
  const uint64_t at = static_cast<uint64_t>(off);
  const bool any_refused = ctx->refused_files.load(std::memory_order_acquire) != 0;
  if (fi->writepage && any_refused) {
    MutexLock l(&ctx->wb_mu);
    if (auto it = ctx->wb_errors.find(ino); it != ctx->wb_errors.end()) {
      it->second.from = std::min(it->second.from, at);  // refused too: no hole below the cut
      return ReplyErr(req, it->second.err);
    }
  }
  auto r = ctx->fs->Write(fi->fh, at, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data), size));
  if (!r.ok()) {
    if (fi->writepage && (r.err() == ENOSPC || r.err() == EDQUOT)) {
      MutexLock l(&ctx->wb_mu);
      auto [it, added] = ctx->wb_errors.emplace(ino, FuseMount::Context::RefusedWrites{r.err(), at});
      if (!added) it->second.from = std::min(it->second.from, at);
      ctx->refused_files.store(ctx->wb_errors.size(), std::memory_order_release);
    }
    return ReplyErr(req, r.err());
  }
  if (!fi->writepage && any_refused) {
    MutexLock l(&ctx->wb_mu);
    if (auto it = ctx->wb_errors.find(ino); it != ctx->wb_errors.end() && at + r.value() > it->second.from) {
      it->second.written_past = true;
    }
  }
  fuse_reply_write(req, r.value());
}

void OpRelease(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto* ctx = Ctx(req);
  if (const uint32_t slot = fuse_ctl::SlotOf(ino); slot != 0) {
    SnapshotHandle* sh = SnapHandleOf(fi);
    ZplStatus s = sh->tree->Release(sh->h);
    delete sh;
    ctx->snaps->Closed(slot);
    ctx->open--;
    return ReplyStatus(req, s);
  }
  const uint64_t obj = ino == FUSE_ROOT_ID ? ctx->root : ino;
  const std::optional<FuseMount::Context::RefusedWrites> refused = ReleaseWriter(ctx, ino, fi->fh, fi->flags);
  if (refused && !refused->written_past) {
    // The last writable handle is gone, so is every writeback: cut the file
    // at the first refused byte.
    auto a = ctx->fs->GetAttr(obj);
    if (a.ok() && a.value().size > refused->from) {
      ZplSetAttr cut;
      cut.size = refused->from;
      (void)ctx->fs->SetAttr(ZplCred{}, obj, cut);
    }
  }
  if (refused && ctx->se != nullptr) {
    // Drop the kernel's pages of the file so reads show what the dataset
    // holds, and its name: under the writeback cache the kernel trusts its
    // own size, so only a fresh lookup brings the real one.
    uint64_t parent = 0;
    std::string name;
    if (auto a = ctx->fs->GetAttr(obj); a.ok()) {
      parent = a.value().parent;
      if (auto n = ZplNameIn(*ctx->fs, parent, obj); n.ok()) name = n.value();
    }
    fuse_session* se = ctx->se;
    const uint64_t kparent = parent != 0 ? Out(ctx, parent) : 0;
    ctx->Notify([se, ino, kparent, name] {
      (void)fuse_lowlevel_notify_inval_inode(se, ino, 0, 0);
      if (!name.empty()) (void)fuse_lowlevel_notify_inval_entry(se, kparent, name.c_str(), name.size());
    });
  }
  ZplStatus s = ctx->fs->Release(fi->fh);
  ctx->open--;
  ReplyStatus(req, s);
}

void OpFsync(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi) {
  if (fuse_ctl::SlotOf(ino) != 0) return ReplyErr(req, 0);  // a snapshot is on disk
  ReplyStatus(req, Ctx(req)->fs->Fsync(fi->fh, datasync != 0));
}

void OpOpendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto* ctx = Ctx(req);
  Node n;
  if (!Get(req, ino, &n)) return;
  if (n.ctl == 0) {
    auto r = n.fs->GetAttr(n.obj);
    if (!r.ok()) return ReplyErr(req, r.err());
    if (!S_ISDIR(r.value().mode)) return ReplyErr(req, ENOTDIR);
  }
  fi->fh = 0;
  // A directory open in a snapshot keeps its tree open, as a file does.
  if (n.slot != 0) ctx->snaps->Opened(n.slot);
  ctx->open++;
  if (fuse_reply_open(req, fi) == -ENOENT) {
    ctx->open--;
    if (n.slot != 0) ctx->snaps->Closed(n.slot);
  }
}

// Adds one entry to a readdir reply; false when it does not fit.
bool AddDirent(fuse_req_t req, std::vector<char>& buf, size_t* used, const char* name, const fuse_entry_param& e,
               uint64_t next, bool plus) {
  const size_t room = buf.size() - *used;
  const size_t n = plus ? fuse_add_direntry_plus(req, buf.data() + *used, room, name, &e, static_cast<off_t>(next))
                        : fuse_add_direntry(req, buf.data() + *used, room, name, &e.attr, static_cast<off_t>(next));
  if (n > room) return false;
  *used += n;
  return true;
}

// A bare entry: its number and type only (readdirplus then gives the
// kernel nothing to cache for it).
fuse_entry_param BareEntry(uint64_t ino, uint32_t mode) {
  fuse_entry_param e;
  std::memset(&e, 0, sizeof(e));
  e.attr.st_ino = ino;
  e.attr.st_mode = mode;
  return e;
}

// readdir of .zfs and .zfs/snapshot (fuse_snapdir.h).
void ReadCtlDir(fuse_req_t req, const Node& n, size_t size, off_t off, bool plus) {
  auto* ctx = Ctx(req);
  std::vector<fuse_ctl::CtlEntry> entries;
  if (n.ctl == fuse_ctl::kRootIno) {
    entries = fuse_ctl::CtlRootEntries(static_cast<uint64_t>(off));
  } else {
    auto r = fuse_ctl::SnapdirEntries(*ctx->snaps, static_cast<uint64_t>(off));
    if (!r.ok()) return ReplyErr(req, r.err());
    entries = std::move(r.value());
  }
  std::vector<char> buf(size);
  size_t used = 0;
  for (const fuse_ctl::CtlEntry& d : entries) {
    fuse_entry_param e = BareEntry(d.ino, S_IFDIR);
    if (plus && d.ino == fuse_ctl::kSnapdirIno && d.name != ".") {
      if (auto a = CtlAttr(ctx, d.ino); a.ok()) e = Entry(ctx, n, a.value());
    }
    if (!AddDirent(req, buf, &used, d.name.c_str(), e, d.next, plus)) break;
  }
  fuse_reply_buf(req, buf.data(), used);
}

void ReadDirCommon(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus) {
  auto* ctx = Ctx(req);
  Node n;
  if (!Get(req, ino, &n)) return;
  if (n.ctl != 0) return ReadCtlDir(req, n, size, off, plus);
  // A dirent needs at least 24 bytes (+ name); ask for about what fits.
  size_t want = std::max<size_t>(1, size / (plus ? 160 : 32));
  auto r = n.fs->ReadDir(Cred(req), n.obj, static_cast<uint64_t>(off), want);
  if (!r.ok()) return ReplyErr(req, r.err());
  // snapdir=visible: .zfs follows ".." in the root, with ".."'s cookie (the
  // next call resumes after both); the two go in one reply or neither.
  const bool show_ctl = n.slot == 0 && n.obj == ctx->root && ctx->snaps != nullptr &&
                        ctx->snapdir_visible.load(std::memory_order_relaxed);
  std::vector<char> buf(size);
  size_t used = 0;
  for (const ZplDirEntry& d : r.value()) {
    fuse_entry_param e = BareEntry(n.Out(d.ino), d.type << 12);
    if (d.name == "..") {
      // The parent of a snapshot's root is .zfs/snapshot; the root's own
      // parent is outside the mount (the kernel supplies it).
      if (n.slot != 0 && n.obj == n.root) e.attr.st_ino = fuse_ctl::kSnapdirIno;
    } else if (plus && d.name != ".") {
      if (auto a = n.fs->GetAttr(d.ino); a.ok()) e = Entry(ctx, n, a.value());
    }
    const size_t before = used;
    if (!AddDirent(req, buf, &used, d.name.c_str(), e, d.next_cookie, plus)) break;
    if (d.name == ".." && show_ctl) {
      fuse_entry_param c = BareEntry(fuse_ctl::kRootIno, S_IFDIR);
      if (plus) {
        if (auto a = CtlAttr(ctx, fuse_ctl::kRootIno); a.ok()) {
          Node ctl = n;
          ctl.ctl = fuse_ctl::kRootIno;
          c = Entry(ctx, ctl, a.value());
        }
      }
      if (!AddDirent(req, buf, &used, fuse_ctl::kCtlName, c, d.next_cookie, plus)) {
        used = before;
        break;
      }
    }
  }
  fuse_reply_buf(req, buf.data(), used);
}

void OpReaddir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  ReadDirCommon(req, ino, size, off, false);
}

void OpReaddirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  ReadDirCommon(req, ino, size, off, true);
}

void OpReleasedir(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  auto* ctx = Ctx(req);
  if (const uint32_t slot = fuse_ctl::SlotOf(ino); slot != 0 && ctx->snaps != nullptr) ctx->snaps->Closed(slot);
  ctx->open--;
  fuse_reply_err(req, 0);
}

void OpFsyncdir(fuse_req_t req, fuse_ino_t ino, int, fuse_file_info*) {
  if (fuse_ctl::SlotOf(ino) != 0) return ReplyErr(req, 0);
  ReplyStatus(req, Ctx(req)->fs->SyncFs());
}

void OpStatfs(fuse_req_t req, fuse_ino_t) {
  auto r = Ctx(req)->fs->StatFs();
  if (!r.ok()) return ReplyErr(req, r.err());
  fuse_reply_statfs(req, &r.value());
}

// POSIX ACLs (system.posix_acl_*) and the rest of the system namespace
// are not supported yet (ACLs are a later issue): the mount answers as ZFS
// with acltype=off does, so cp -a and tar fall back to chmod.
bool Unsupported(const char* name) { return std::strncmp(name, "system.", 7) == 0; }

void OpSetxattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size,
                int flags) {
  if (Unsupported(name)) return ReplyErr(req, EOPNOTSUPP);
  uint64_t obj = 0;
  if (!GetHead(req, ino, &obj)) return;
  ReplyStatus(req, Ctx(req)->fs->SetXattr(
                       Cred(req), obj, Name(name),
                       std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(value), size), flags));
}

void OpGetxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  if (Unsupported(name)) return ReplyErr(req, EOPNOTSUPP);
  Node n;
  if (!Get(req, ino, &n)) return;
  if (n.ctl != 0) return ReplyErr(req, ENODATA);
  auto r = n.fs->GetXattr(Cred(req), n.obj, Name(name));
  if (!r.ok()) return ReplyErr(req, r.err());
  if (size == 0) return (void)fuse_reply_xattr(req, r.value().size());
  if (r.value().size() > size) return ReplyErr(req, ERANGE);
  fuse_reply_buf(req, reinterpret_cast<const char*>(r.value().data()), r.value().size());
}

void OpListxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  Node node;
  if (!Get(req, ino, &node)) return;
  auto r = node.ctl != 0 ? ZplResult<std::vector<std::string>>(std::vector<std::string>{})
                         : node.fs->ListXattr(Cred(req), node.obj);
  if (!r.ok()) return ReplyErr(req, r.err());
  std::string all;
  for (const std::string& n : r.value()) {
    if (Unsupported(n.c_str())) continue;
    all += n;
    all.push_back('\0');
  }
  if (size == 0) return (void)fuse_reply_xattr(req, all.size());
  if (all.size() > size) return ReplyErr(req, ERANGE);
  fuse_reply_buf(req, all.data(), all.size());
}

void OpRemovexattr(fuse_req_t req, fuse_ino_t ino, const char* name) {
  if (Unsupported(name)) return ReplyErr(req, EOPNOTSUPP);
  uint64_t obj = 0;
  if (!GetHead(req, ino, &obj)) return;
  ReplyStatus(req, Ctx(req)->fs->RemoveXattr(Cred(req), obj, Name(name)));
}

void OpAccess(fuse_req_t req, fuse_ino_t ino, int mask) {
  Node n;
  if (!Get(req, ino, &n)) return;
  if (n.ctl != 0) return ReplyErr(req, (mask & W_OK) && fuse_req_ctx(req)->uid != 0 ? EACCES : 0);
  if ((mask & W_OK) && n.slot != 0) return ReplyErr(req, EROFS);
  ReplyStatus(req, n.fs->Access(Cred(req), n.obj, mask));
}

void OpFallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
                 fuse_file_info* fi) {
  if (fuse_ctl::SlotOf(ino) != 0) return ReplyErr(req, EBADF);
  ReplyStatus(req, Ctx(req)->fs->Fallocate(fi->fh, mode, static_cast<uint64_t>(offset),
                                           static_cast<uint64_t>(length)));
}

void OpLseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, fuse_file_info* fi) {
  const auto [fs, h] = OpenFile(req, ino, fi);
  auto r = fs->Lseek(h, static_cast<uint64_t>(off), whence);
  if (!r.ok()) return ReplyErr(req, r.err());
  fuse_reply_lseek(req, static_cast<off_t>(r.value()));
}

// Linux before 5.9 wrote a file's dirty pages back at close(2) only when it
// still sent FLUSH (commit "fuse: always flush dirty data on close(2)"
// moved the write-back ahead of that check): there uzfsd keeps a FLUSH
// handler that answers 0, so close still writes back and reports errors.
bool KernelWritesBackWithoutFlush() {
  utsname u;
  if (::uname(&u) != 0) return false;
  int major = 0, minor = 0;
  if (std::sscanf(u.release, "%d.%d", &major, &minor) != 2) return false;
  return major > 5 || (major == 5 && minor >= 9);
}

// close(2), after the kernel wrote the handle's dirty pages back. The
// kernel reports a refused writeback itself when it still has the error
// (ENOSPC as is, anything else as EIO); when an fsync already took it,
// close still says so, with uzfsd's own errno.
void OpFlush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto* ctx = Ctx(req);
  bool writable = false;
  if (ctx->refused_files.load(std::memory_order_acquire) != 0) {
    MutexLock l(&ctx->wb_mu);
    writable = ctx->writable_handles.count(fi->fh) != 0;
  }
  fuse_reply_err(req, writable ? WritebackError(ctx, ino) : 0);
}

// Every request handler runs through Guarded<Op>::Run: what the engine
// throws (std::bad_alloc from a block buffer or a read's buffer, anything
// else) becomes an error answer for that request, ENOMEM or EIO, instead
// of unwinding into libfuse's worker and taking the daemon down. A handler
// answers as its last step, so a throw means the request is unanswered.
template <auto Op>
struct Guarded;
template <typename... Args, void (*Op)(fuse_req_t, Args...)>
struct Guarded<Op> {
  static void Run(fuse_req_t req, Args... args) {
    try {
      Op(req, args...);
    } catch (const std::bad_alloc&) {
      fuse_reply_err(req, ENOMEM);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "uzfs: FUSE request failed: %s\n", e.what());
      fuse_reply_err(req, EIO);
    }
  }
};

fuse_lowlevel_ops MakeOps() {
  fuse_lowlevel_ops ops;
  std::memset(&ops, 0, sizeof(ops));
  ops.init = OpInit;
  ops.lookup = Guarded<OpLookup>::Run;
  ops.forget = OpForget;
  ops.forget_multi = OpForgetMulti;
  ops.getattr = Guarded<OpGetattr>::Run;
  ops.setattr = Guarded<OpSetattr>::Run;
  ops.readlink = Guarded<OpReadlink>::Run;
  ops.mknod = Guarded<OpMknod>::Run;
  ops.mkdir = Guarded<OpMkdir>::Run;
  ops.unlink = Guarded<OpUnlink>::Run;
  ops.rmdir = Guarded<OpRmdir>::Run;
  ops.symlink = Guarded<OpSymlink>::Run;
  ops.rename = Guarded<OpRename>::Run;
  ops.link = Guarded<OpLink>::Run;
  ops.open = Guarded<OpOpen>::Run;
  ops.create = Guarded<OpCreate>::Run;
  ops.read = Guarded<OpRead>::Run;
  ops.write = Guarded<OpWrite>::Run;
  // No flush handler: close(2) has nothing to hand uzfsd (writes arrive as
  // WRITE requests, no POSIX locks are served), and libfuse's ENOSYS makes
  // the kernel stop sending FLUSH, which saves a round trip on every close.
  // The kernel still writes the file's dirty pages back before close
  // returns — from Linux 5.9 on; older kernels get a handler.
  if (!KernelWritesBackWithoutFlush()) ops.flush = Guarded<OpFlush>::Run;
  ops.release = Guarded<OpRelease>::Run;
  ops.fsync = Guarded<OpFsync>::Run;
  ops.opendir = Guarded<OpOpendir>::Run;
  ops.readdir = Guarded<OpReaddir>::Run;
  ops.readdirplus = Guarded<OpReaddirplus>::Run;
  ops.releasedir = Guarded<OpReleasedir>::Run;
  ops.fsyncdir = Guarded<OpFsyncdir>::Run;
  ops.statfs = Guarded<OpStatfs>::Run;
  ops.setxattr = Guarded<OpSetxattr>::Run;
  ops.getxattr = Guarded<OpGetxattr>::Run;
  ops.listxattr = Guarded<OpListxattr>::Run;
  ops.removexattr = Guarded<OpRemovexattr>::Run;
  ops.access = Guarded<OpAccess>::Run;
  ops.fallocate = Guarded<OpFallocate>::Run;
  ops.lseek = Guarded<OpLseek>::Run;
  return ops;
}

// The "major:minor" of what is mounted at `path` (the last such mount in
// /proc/self/mountinfo), or "" when nothing is.
std::string MountDevice(const std::string& path) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line, dev;
  while (std::getline(in, line)) {
    // id parent major:minor root mountpoint ...
    size_t p = 0;
    for (int field = 0; field < 4 && p != std::string::npos; ++field) p = line.find(' ', p + 1);
    if (p == std::string::npos) continue;
    size_t e = line.find(' ', p + 1);
    if (line.substr(p + 1, e - p - 1) != path) continue;
    size_t a = line.find(' ');
    size_t b = a == std::string::npos ? a : line.find(' ', a + 1);
    size_t c = b == std::string::npos ? b : line.find(' ', b + 1);
    if (c != std::string::npos) dev = line.substr(b + 1, c - b - 1);
  }
  return dev;
}

}  // namespace

FuseMount::FuseMount(std::string mountpoint, FuseMountOptions opts)
    : mountpoint_(std::move(mountpoint)), opts_(std::move(opts)) {}

Result<std::unique_ptr<FuseMount>> FuseMount::Start(ZplFs& fs, const std::string& mountpoint,
                                                    const FuseMountOptions& opts) {
  struct stat st;
  if (stat(mountpoint.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument("mountpoint '" + mountpoint + "' is not a directory");
  }
  char real[PATH_MAX];
  if (realpath(mountpoint.c_str(), real) == nullptr) {
    return Status::InvalidArgument("mountpoint '" + mountpoint + "': " + std::strerror(errno));
  }
  // A mount point already in use is mounted over, as Linux file systems
  // and OpenZFS on Linux (overlay=on, its default there) do; unmounting
  // ours uncovers what was there. (A dead FUSE mount of a crashed daemon
  // was detached before: see PoolMounts.)
  std::unique_ptr<FuseMount> m(new FuseMount(real, opts));
  m->ctx_ = std::make_unique<Context>();
  m->ctx_->fs = &fs;
  m->ctx_->timeout = opts.attr_timeout;
  m->ctx_->root = fs.root_ino();
  m->ctx_->writeback = opts.writeback_cache && !(opts.readonly || fs.readonly());
  m->ctx_->snaps = opts.snapshots;
  m->ctx_->snapdir_visible = opts.snapdir_visible;
  m->ctx_->mountpoint = m->mountpoint_;
  m->ctx_->max_threads = std::max(1u, opts.max_threads);

  std::string o = "fsname=" + (opts.fsname.empty() ? std::string("uzfs") : opts.fsname) +
                  ",subtype=" + opts.subtype;
  if (opts.allow_other) o += ",allow_other";
  if (opts.default_permissions) o += ",default_permissions";
  if (opts.readonly || fs.readonly()) o += ",ro";
  // libfuse's mount applies these as MS_NOSUID/MS_NODEV/MS_NOEXEC (its
  // default without them is nosuid,nodev).
  o += opts.flags.nosuid ? ",nosuid" : ",suid";
  o += opts.flags.nodev ? ",nodev" : ",dev";
  o += opts.flags.noexec ? ",noexec" : ",exec";
  m->mounted_ro_ = opts.readonly || fs.readonly();
  m->flags_ = opts.flags;
  std::vector<std::string> argv_s = {"uzfs", "-o", o};
  if (opts.debug) argv_s.push_back("-d");
  std::vector<char*> argv;
  for (std::string& s : argv_s) argv.push_back(s.data());
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
  static const fuse_lowlevel_ops ops = MakeOps();
  fuse_session* se = fuse_session_new(&args, &ops, sizeof(ops), m->ctx_.get());
  if (se == nullptr) return Status::IoError("cannot start a FUSE session (libfuse refused the options)");
  if (fuse_session_mount(se, m->mountpoint_.c_str()) != 0) {
    fuse_session_destroy(se);
    return Status::IoError("cannot mount '" + m->mountpoint_ +
                           "': the kernel refused the FUSE mount (is /dev/fuse available?)");
  }
  m->session_ = se;
  m->ctx_->se = se;
  if (opts.read_ahead_kb > 0) {
    if (std::string dev = MountDevice(m->mountpoint_); !dev.empty()) {
      m->ctx_->read_ahead_path = "/sys/class/bdi/" + dev + "/read_ahead_kb";
      m->ctx_->read_ahead_kb = opts.read_ahead_kb;
    }
  }
  m->device_ = MountDevice(m->mountpoint_);
  m->ctx_->write_reserve = opts.write_reserve != 0 ? opts.write_reserve : DefaultWriteReserve(m->device_);
  // Our own read/writev on the mounted descriptor (fuse_killpriv.h); on
  // failure libfuse keeps its own and the kernel keeps clearing the bits.
  static const fuse_custom_io io = {.writev = IoWritev, .read = IoRead, .splice_receive = nullptr,
                                    .splice_send = nullptr};
  if (fuse_session_custom_io(se, &io, fuse_session_fd(se)) != 0) {
    m->ctx_->killpriv.want = false;
  } else if (opts.fuse_uring) {
    FuseUringOptions uo;
    // As many entries in all as the /dev/fuse loop has workers, at least
    // two per queue (one may block in an fsync) while the queues are
    // fewer than the workers, one each beyond (a thread and a ring each:
    // machines may list many more possible CPUs than they have).
    const unsigned queues = FuseUring::PossibleCpus();
    const unsigned workers = std::max(1u, opts.max_threads);
    uo.per_queue = queues >= workers ? 1u : std::max(2u, (workers + queues - 1) / queues);
    uo.poll_us = opts.poll_us;
    uo.note_request = [ctx = m->ctx_.get()](const void* buf, size_t len) {
      KillPrivNote(&ctx->killpriv, buf, static_cast<ssize_t>(len));
      FuseProbeNoteRequest(buf, static_cast<ssize_t>(len));
    };
    m->ctx_->uring = std::make_unique<FuseUring>(se, fuse_session_fd(se), std::move(uo));
  }
  FuseLoopOptions lo;
  lo.max_threads = std::max(1u, opts.max_threads);
  lo.poll_us = opts.poll_us;
  m->workers_ = std::make_unique<FuseLoop>(se, lo);
  m->loop_ = std::thread([w = m->workers_.get()] { (void)w->Run(); });
  return m;
}

Result<unsigned> FuseMount::ReadAheadKb() const {
  std::ifstream f("/sys/class/bdi/" + device_ + "/read_ahead_kb");
  unsigned kb = 0;
  if (device_.empty() || !(f >> kb)) return Status::NotFound("no read_ahead_kb for the mount at " + mountpoint_);
  return kb;
}

Status FuseMount::Stop(bool force) {
  if (session_ == nullptr) return Status::Ok();
  uint64_t open = ctx_->open.load();
  if (open > 0 && !force) {
    return Status::Busy("cannot unmount '" + mountpoint_ + "': " + std::to_string(open) +
                        " file(s) or directories open; close them (see fuser -m) or force");
  }
  struct stat st;
  bool have_dev = stat(mountpoint_.c_str(), &st) == 0;
  fuse_session_exit(session_);
  fuse_session_unmount(session_);  // lazy unmount: the connection ends when unused
  // The workers leave once the kernel ends the connection. When files are
  // still held open (forced), abort it so nothing waits on their close.
  auto done = std::async(std::launch::async, [this] {
    loop_.join();
    if (ctx_->uring) ctx_->uring->Join();
  });
  if (done.wait_for(std::chrono::seconds(5)) != std::future_status::ready && have_dev) {
    const std::string conn = "/sys/fs/fuse/connections/" + std::to_string(minor(st.st_dev));
    // The fusectl file system is not mounted everywhere (containers, some
    // VMs): mount it, or the abort below has nowhere to go and Stop would
    // wait for ever.
    if (::access((conn + "/abort").c_str(), W_OK) != 0) {
      (void)::mount("fusectl", "/sys/fs/fuse/connections", "fusectl", 0, nullptr);
    }
    std::ofstream abort(conn + "/abort");
    abort << "1";
  }
  done.wait();
  ctx_->StopNotifier();
  fuse_session_destroy(session_);
  session_ = nullptr;
  return Status::Ok();
}

Status FuseMount::SetFlags(const FuseMountFlags& flags) {
  if (session_ == nullptr) return Status::InvalidArgument("'" + mountpoint_ + "' is not mounted");
  if (flags == flags_) return Status::Ok();
  // MS_REMOUNT | MS_BIND sets the flags of this mount alone, all of them at
  // once, without asking the file system (the FUSE session never sees it).
  unsigned long mf = MS_REMOUNT | MS_BIND;
  if (mounted_ro_) mf |= MS_RDONLY;
  if (flags.nosuid) mf |= MS_NOSUID;
  if (flags.nodev) mf |= MS_NODEV;
  if (flags.noexec) mf |= MS_NOEXEC;
  if (::mount(nullptr, mountpoint_.c_str(), nullptr, mf, nullptr) != 0) {
    return Status::IoError("cannot remount '" + mountpoint_ + "': " + std::strerror(errno));
  }
  flags_ = flags;
  return Status::Ok();
}

void FuseMount::SetSnapdirVisible(bool visible) {
  if (ctx_->snapdir_visible.exchange(visible) != visible && session_ != nullptr) {
    // The kernel may hold the root's listing: drop it.
    (void)fuse_lowlevel_notify_inval_inode(session_, FUSE_ROOT_ID, 0, 0);
  }
}

FuseMount::~FuseMount() {
  if (session_ != nullptr) (void)Stop(true);
}

uint64_t FuseMount::open_handles() const { return ctx_->open.load(); }

FuseLoopStats FuseMount::loop_stats() const { return workers_ ? workers_->stats() : FuseLoopStats{}; }

FuseUringStats FuseMount::uring_stats() const { return ctx_->uring ? ctx_->uring->stats() : FuseUringStats{}; }

bool FuseMount::handles_killpriv() const { return ctx_->killpriv.granted.load(); }

void FuseMount::InvalidateInode(uint64_t ino) {
  if (session_ != nullptr) {
    (void)fuse_lowlevel_notify_inval_inode(session_, Out(ctx_.get(), ino), 0, 0);
  }
}

void FuseMount::InvalidateEntry(uint64_t dir, const std::string& name) {
  if (session_ != nullptr) {
    (void)fuse_lowlevel_notify_inval_entry(session_, Out(ctx_.get(), dir), name.c_str(), name.size());
  }
}

}  // namespace uzfs
