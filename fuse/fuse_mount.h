// FuseMount: one mounted dataset — a FUSE low-level session that answers
// the kernel's requests with a ZplFs (zfs/zpl/zpl_fs.h), served by its own
// multi-threaded loop (fuse_loop.h: workers that watch briefly for the next
// request of a synchronous chain before they sleep).
//
// What the kernel is told (DESIGN.md section 8):
//   - inode numbers are object numbers, st_gen / entry generation is the
//     znode gen, so NFS re-export through the kernel stays safe;
//   - writeback cache (the kernel merges small writes and keeps size and
//     mtime while it caches), 1 MiB writes and reads (max_write/max_read),
//     splice for reads and writes where the kernel offers it, readdirplus
//     (adaptive), and entry/attribute timeouts of `attr_timeout` seconds
//     (60 by default): uzfsd is the only writer of the dataset, so the
//     kernel's cache can only be made stale by uzfs itself, which
//     invalidates what it changes behind the kernel's back (Invalidate*);
//   - `default_permissions` (the kernel checks modes) and `allow_other`
//     (every user sees the mount, as with a kernel file system);
//   - nosuid, nodev, noexec as FuseMountFlags says (changed on a live
//     mount by SetFlags: `zfs set exec/setuid/devices`);
//   - a read-ahead window of `read_ahead_kb` (4 MiB; the mount's
//     /sys/class/bdi/<dev>/read_ahead_kb, set when the first file is
//     opened: the kernel lowers it to its own 128 KiB default when INIT is
//     answered). With 128 KiB the kernel reads a file in 256 KiB requests,
//     two at a time; with 4 MiB in 1 MiB requests (max_pages), several
//     ahead, which the file prefetch then reads in batches of eight
//     records: a quarter of the round trips and far fewer hand-offs per
//     byte (docs/PERFORMANCE.md, "Sequential reads"). Needs
//     root (the sysfs file); left at the kernel's otherwise;
//   - fsync/fdatasync reach ZplFs::Fsync; statfs is ZplFs::StatFs;
//   - full datasets and pools fail write(2), not a later close: a file
//     opened write-only while the dataset has less than `write_reserve`
//     bytes of room (ZplFs::WriteRoom: quota, refquota, pool space) is
//     opened direct (FOPEN_DIRECT_IO): its writes reach uzfsd at once and
//     get its ENOSPC/EDQUOT. (Read-write opens keep the cache: a direct
//     handle cannot be mapped shared.) A file written through the page
//     cache whose writeback uzfsd refuses for space has every later
//     writeback refused too, its writable handles' close (FLUSH) and fsync
//     report the error, and at the last writable handle's release it is
//     cut back to the first refused byte (no hole inside) and the kernel's
//     pages and name of it are dropped;
//   - set-user-ID/set-group-ID are cleared by uzfsd on the kernel's word
//     (FUSE_HANDLE_KILLPRIV_V2, fuse_killpriv.h), so page-cache writes do
//     not ask for security.capability each time.
//   - `.zfs/snapshot/<name>/` in the root when FuseMountOptions::snapshots
//     is given: every snapshot's tree, read-only, with inode numbers of
//     its own (fuse_snapdir.h); mkdir/rmdir/mv there take, destroy and
//     rename snapshots (root only).
// Credentials of each request (uid, gid, supplementary groups, umask) are
// passed to ZplFs as a ZplCred.
//
// Stop(): refuses with Busy ("N files open") while files or directories are
// open through the mount unless `force`; otherwise unmounts (the kernel
// connection ends, the worker threads drain and exit) and joins. The
// ZplFs must outlive the FuseMount; Stop does not unmount the ZplFs.
//
// Threading: Start/Stop from one controlling thread; the request handlers
// run on the session's workers and only touch the ZplFs (thread-safe) and
// the handle counters (atomic).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "fuse/fuse_loop.h"
#include "fuse/fuse_uring.h"
#include "zfs/util/status.h"
#include "zfs/zpl/zpl_fs.h"
#include "zfs/zpl/zpl_snapshot_trees.h"

struct fuse_session;

namespace uzfs {

// The mount's per-mount flags beyond read-only: what mount(8) calls
// nosuid (set-user-ID and set-group-ID bits and file capabilities are
// ignored by exec), nodev (device files cannot be opened) and noexec
// (nothing on the mount can be executed: execve and executable mmap fail
// with EACCES). The defaults are libfuse's, nosuid and nodev; uzfsd sets
// them from the dataset's setuid, devices and exec properties.
struct FuseMountFlags {
  bool nosuid = true;
  bool nodev = true;
  bool noexec = false;
  bool operator==(const FuseMountFlags&) const = default;
};

struct FuseMountOptions {
  std::string fsname;           // shown by mount(8)/df as the source, e.g. tank/home
  std::string subtype = "uzfs"; // type fuse.uzfs
  // Seconds the kernel may trust entries and attributes (negative entries
  // too). Every change to the dataset arrives through this mount (uzfsd is
  // its only writer), and the kernel updates or drops what it cached for
  // the operations it sends, so a long timeout stays correct; changes made
  // behind the kernel's back (none yet; rollback later) call Invalidate*.
  double attr_timeout = 60.0;
  bool allow_other = true;
  bool default_permissions = true;
  bool writeback_cache = true;
  bool readonly = false;
  FuseMountFlags flags;
  unsigned max_threads = 8;     // workers of the session loop
  // How long a worker that has just answered a request watches /dev/fuse
  // for the next one before it sleeps, microseconds (fuse_loop.h); 0: never.
  // Skipped while more tasks are runnable than there are CPUs.
  unsigned poll_us = 50;
  // The kernel's read-ahead window for the mount, KiB (see above); 0 leaves
  // the kernel's default.
  unsigned read_ahead_kb = 4096;
  // Writes bypass the page cache for files opened write-only while less than this many
  // bytes can still be written to the dataset (quota, refquota, pool
  // space): see above. 0: four times what the kernel may keep dirty for the
  // mount (its bdi's max_bytes), at least 256 MiB.
  uint64_t write_reserve = 0;
  bool debug = false;           // libfuse's request trace on stderr
  // Take requests over io_uring when the kernel offers it (fuse_uring.h);
  // /dev/fuse otherwise.
  bool fuse_uring = false;
  // The file system's snapshots, served under .zfs/snapshot
  // (fuse_snapdir.h); null: no .zfs. Must outlive the mount.
  ZplSnapshotTrees* snapshots = nullptr;
  // snapdir=visible: .zfs is listed in the root (it can be entered either way).
  bool snapdir_visible = false;
};

class FuseMount {
 public:
  // Mounts `fs` at `mountpoint` (an existing directory) and starts serving.
  // InvalidArgument for a mountpoint that is not a directory; Busy when
  // something is mounted there already; IoError when the kernel refuses.
  static Result<std::unique_ptr<FuseMount>> Start(ZplFs& fs, const std::string& mountpoint,
                                                  const FuseMountOptions& opts);
  ~FuseMount();  // Stop(force=true) if still mounted
  FuseMount(const FuseMount&) = delete;
  FuseMount& operator=(const FuseMount&) = delete;

  // The mount's read-ahead window as the kernel has it now (KiB; read from
  // sysfs), or NotFound when that cannot be read.
  Result<unsigned> ReadAheadKb() const;
  // Unmounts; Busy (nothing changed) while handles are open, unless force.
  Status Stop(bool force = false);
  // Changes nosuid/nodev/noexec of the mounted file system in place (a
  // bind remount: the FUSE session, open files and the kernel's caches
  // stay); read-only stays as it was mounted. IoError when the kernel
  // refuses (needs CAP_SYS_ADMIN), InvalidArgument when not mounted.
  Status SetFlags(const FuseMountFlags& flags);
  FuseMountFlags flags() const { return flags_; }
  // snapdir changed (zfs set): whether the root lists .zfs from now on.
  void SetSnapdirVisible(bool visible);
  // Files and directories currently open through the mount.
  uint64_t open_handles() const;
  // Whether the kernel leaves clearing set-user-ID/set-group-ID on write,
  // truncate and O_TRUNC to uzfsd (FUSE_HANDLE_KILLPRIV_V2; fuse_killpriv.h),
  // which spares writes a security.capability lookup each. Known once the
  // kernel's INIT request was answered.
  bool handles_killpriv() const;
  const std::string& mountpoint() const { return mountpoint_; }
  bool mounted() const { return session_ != nullptr; }
  // What the worker loop has done so far (requests, polls that caught one).
  FuseLoopStats loop_stats() const;
  // What the io_uring transport has done (all zero when not asked for).
  FuseUringStats uring_stats() const;

  // Drops the kernel's cached attributes/data of ino, or the entry `name`
  // of directory `dir` (after a change made outside the mount).
  void InvalidateInode(uint64_t ino);
  void InvalidateEntry(uint64_t dir, const std::string& name);

  // For the request handlers (fuse_mount.cc).
  struct Context;

 private:
  FuseMount(std::string mountpoint, FuseMountOptions opts);

  const std::string mountpoint_;
  std::string device_;  // "major:minor" of the mount (its bdi in sysfs)
  bool mounted_ro_ = false;  // mounted read-only (kept by SetFlags)
  FuseMountFlags flags_;     // as the kernel has them now
  const FuseMountOptions opts_;
  std::unique_ptr<Context> ctx_;
  struct fuse_session* session_ = nullptr;
  std::unique_ptr<FuseLoop> workers_;
  std::thread loop_;
};

}  // namespace uzfs
