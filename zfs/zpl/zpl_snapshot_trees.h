// ZplSnapshotTrees: the snapshots of one mounted file system, as its
// .zfs/snapshot directory serves them (the FUSE mount's control
// directory, fuse/fuse_snapdir.h).
//
// Slots. Each snapshot the directory has shown gets a slot: a number from
// 1 that stays with the snapshot (its dataset object and creation txg,
// which survive renames) while this object lives and is never given to
// another. The
// mount builds inode numbers from it, so the files of every snapshot have
// numbers of their own (find, cp -a, tar and du see hard links right
// across snapshots), and a number the kernel still caches never names
// another snapshot's file. At most kMaxSlots snapshots per mount: a mount
// that has shown more answers ENFILE for new ones until it is remounted.
//
// Trees. A snapshot's tree (a read-only ZplFs: ZplFs::MountSnapshot)
// opens on first use and is released when idle: no handle open in it
// (Opened/Closed) and unused for `idle` (a reaper thread shared by every
// ZplSnapshotTrees looks twice per `idle`, and each use of the directory
// looks too); and, whatever its age, when the pool is about to destroy
// the snapshot (Pool::AddSnapshotReleaser), so only a snapshot with a
// file open in it refuses destroy ("dataset is busy"). A later use opens
// it again: a slot's inode numbers stay valid as long as the snapshot
// exists, and get ESTALE after it is destroyed. The trees of one object
// share a cache budget of their own (a ZplMountSet), so browsing
// snapshots never shrinks the mounted file systems' caches.
//
// Create, Destroy and Rename change the pool's snapshots by name (mkdir,
// rmdir and rename in .zfs/snapshot) and record it in the pool's history
// as the zfs command that does the same; the caller checks who may.
//
// Threading: thread-safe. The pool must outlive this object; a tree
// handed out by Tree() lives until its last pointer goes.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "zfs/dsl/pool.h"
#include "zfs/util/mutex.h"
#include "zfs/zpl/zpl_fs.h"
#include "zfs/zpl/zpl_mount_set.h"

namespace uzfs {

class ZplSnapshotTrees {
 public:
  static constexpr uint32_t kMaxSlots = 0xFFFF;

  // The snapshots of file system `fs` of `pool`; trees mount with `opts`
  // (read-only always).
  ZplSnapshotTrees(Pool& pool, std::string fs, ZplMountOptions opts,
                   std::chrono::steady_clock::duration idle = std::chrono::minutes(5));
  ~ZplSnapshotTrees();
  ZplSnapshotTrees(const ZplSnapshotTrees&) = delete;
  ZplSnapshotTrees& operator=(const ZplSnapshotTrees&) = delete;

  struct Entry {
    std::string name;  // after the '@'
    uint32_t slot = 0;
    uint64_t creation_time = 0;  // seconds
  };
  // The snapshots now, oldest first, each with its slot.
  ZplResult<std::vector<Entry>> List() UZFS_EXCLUDES(mu_);
  // Snapshot `name`'s entry; ENOENT when there is none.
  ZplResult<Entry> Find(std::string_view name) UZFS_EXCLUDES(mu_);
  // The tree of `slot`, opened if it is not; ESTALE when the snapshot is
  // gone (or the slot was never given).
  ZplResult<std::shared_ptr<ZplFs>> Tree(uint32_t slot) UZFS_EXCLUDES(mu_);
  // A handle (file or directory) opened in / closed from slot's tree.
  void Opened(uint32_t slot) UZFS_EXCLUDES(mu_);
  void Closed(uint32_t slot) UZFS_EXCLUDES(mu_);
  // Releases every tree without an open handle; the trees still open.
  size_t ReleaseUnused() UZFS_EXCLUDES(mu_);
  // Releases the trees idle for `idle` (what the reaper does).
  void ReleaseIdle() UZFS_EXCLUDES(mu_);
  // Trees open now (for tests and the daemon's log).
  size_t open_trees() const UZFS_EXCLUDES(mu_);

  // Takes snapshot fs@name (Pool::Snapshot), destroys it
  // (Pool::DestroySnapshots; EBUSY while a file is open in it), or
  // renames it (Pool::RenameSnapshot). Errors carry the pool's message.
  ZplStatus Create(std::string_view name);
  ZplStatus Destroy(std::string_view name);
  ZplStatus Rename(std::string_view from, std::string_view to);

  const std::string& fs() const { return fs_; }

 private:
  using Key = std::pair<uint64_t, uint64_t>;  // dataset object, creation txg
  struct Slot {
    Key key;
    std::string name;  // as last seen (it follows renames when looked up)
    std::shared_ptr<ZplFs> tree;
    uint32_t handles = 0;
    std::chrono::steady_clock::time_point used;
  };
  // The slot of snapshot `e`, given now if it has none (0 when every
  // slot is taken); its name is updated.
  uint32_t SlotOf(const Pool::SnapshotEntry& e) UZFS_REQUIRES(mu_);
  // Slots for every snapshot of the file system, oldest first; `snaps`
  // from Pool::Snapshots.
  void GiveSlots(const std::vector<Pool::SnapshotEntry>& snaps) UZFS_REQUIRES(mu_);
  // Releases idle trees, at most once a second unless `now`; the trees
  // released go into *dropped, to be destroyed after mu_ is let go.
  void SweepLocked(std::vector<std::shared_ptr<ZplFs>>* dropped, bool now = false) UZFS_REQUIRES(mu_);
  // The Pool's releaser: lets go of the unused trees of those snapshots.
  void ReleaseObjs(const std::set<uint64_t>& ds_objs) UZFS_EXCLUDES(mu_);

  Pool& pool_;
  const std::string fs_;
  ZplMountSet set_;  // the trees' own cache budget (declared before the trees)
  ZplMountOptions opts_;
  const std::chrono::steady_clock::duration idle_;
  uint64_t releaser_ = 0;
  mutable Mutex mu_;
  std::vector<Slot> slots_ UZFS_GUARDED_BY(mu_);  // slot n at n - 1
  std::map<Key, uint32_t> by_key_ UZFS_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point last_sweep_ UZFS_GUARDED_BY(mu_);
};

}  // namespace uzfs
