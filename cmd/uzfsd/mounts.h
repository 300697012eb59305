// PoolMounts: the datasets of one imported pool that uzfsd has mounted —
// per dataset its ZplFs and the FUSE session serving it (fuse/fuse_mount.h).
//
// Where a dataset mounts (ZFS's rules): its `mountpoint` property — set
// locally, inherited (the ancestor's path + the rest of the name), or the
// default "/<dataset name>" — below the pool's altroot when it has one.
// "none" and "legacy" never mount here (legacy is mount(8)'s job);
// `canmount=off` never mounts, `canmount=noauto` only on an explicit
// `zfs mount`. The mountpoint directory is created when missing; at
// unmount (zfs unmount, export, destroy) an empty one is removed again
// unless the dataset's own mountpoint property names it. A dead
// FUSE mount left there by a crashed daemon ("Transport endpoint is not
// connected") is detached first, so the user never runs fusermount.
//
// Mount options follow the dataset's properties, as ZFS's do: exec=off
// mounts noexec, setuid=off nosuid, devices=off nodev (all three default
// to on: exec, suid, dev); snapdir=visible lists .zfs in the root (every
// mount serves .zfs/snapshot: fuse/fuse_snapdir.h). A change (zfs set/inherit) is applied to the
// mounted file system at once (RefreshProps: a bind remount, files stay
// open). A legacy mount's own options (mount -o noexec, ...) override the
// properties while it stays mounted, as temporary mount options do in ZFS.
//
// Unmount refuses while files are open ("pool or dataset is busy", after
// up to a second for handles just closed: FUSE releases them in the
// background) unless forced; UnmountAll goes children first. The pool must
// outlive every mount: callers unmount before export/destroy. With a log set, each
// unmount logs the FUSE loop's counters (requests, spins and their hits,
// watches skipped as crowded, workers): what tuning UZFS_FUSE_POLL_US needs.
//
// Threading: not thread-safe; the owning PoolEntry's mutex serializes use.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fuse/fuse_mount.h"
#include "zfs/dsl/pool.h"
#include "zfs/util/status.h"
#include "zfs/zpl/zpl_fs.h"
#include "zfs/zpl/zpl_snapshot_trees.h"

namespace uzfs::cmd {

// Mount options given for one mount (mount(8)'s -o of a legacy mount)
// that win over the dataset's properties; unset: the property decides.
struct MountOverrides {
  std::optional<bool> exec, setuid, devices;
};

struct DatasetMount {
  std::string dataset;
  std::string path;
  MountOverrides overrides;
  bool readonly = false;  // mounted read-only (an option or the pool)
  // The mountpoint came from the default or a parent, not from the
  // dataset's own property: its directory, made for the mount, is removed
  // (when empty) at unmount, as OpenZFS does.
  bool remove_dir = false;
  std::unique_ptr<ZplFs> zpl;
  std::unique_ptr<ZplSnapshotTrees> snapshots;  // .zfs/snapshot (outlives the FUSE session)
  std::unique_ptr<FuseMount> fuse;
};

// The nosuid/nodev/noexec flags ds mounts with: its exec, setuid and
// devices properties (set, inherited, or on by default), then `overrides`.
FuseMountFlags MountFlagsFor(Pool& pool, const std::string& ds, const MountOverrides& overrides = {});

// Hands the kernel's dirty pages of the mounts at `paths` to the daemon
// (syncfs on each; one unmounted meanwhile is skipped). Call it without
// the pool's lock: the write-back is served by the mounts' own workers.
void WriteBackMounts(const std::vector<std::string>& paths);

// Where `ds` would mount: nullopt for none/legacy. `altroot` prefixes it.
Result<std::optional<std::string>> EffectiveMountpoint(Pool& pool, const std::string& ds,
                                                       const std::string& altroot);
// Whether datasets mount automatically (pool create/import, zfs create,
// a changed mountpoint): on unless the daemon runs with UZFS_AUTOMOUNT=0
// (test suites that create many pools named "tank" side by side; explicit
// `zfs mount` still works).
bool AutomountEnabled();
// canmount as set on ds itself (it is not inherited): "on", "off", "noauto".
std::string CanMount(Pool& pool, const std::string& ds);

class PoolMounts {
 public:
  PoolMounts() = default;
  ~PoolMounts();  // force-unmounts what is left
  PoolMounts(const PoolMounts&) = delete;
  PoolMounts& operator=(const PoolMounts&) = delete;

  // Where unmounts report the FUSE loop's counters (uzfsd.log).
  void SetLog(std::function<void(const std::string&)> log) { log_ = std::move(log); }

  // Mounts ds at its effective mountpoint. Errors name the dataset:
  // InvalidArgument when it has no mountpoint (none/legacy), Exists when
  // it is mounted already, Busy when something else is mounted there.
  // `readonly` and `overrides`: zfs mount -o's temporary options (ro, and
  // exec/suid/dev over the properties) for this mount only.
  Status Mount(Pool& pool, const std::string& ds, const std::string& altroot, bool readonly = false,
               const MountOverrides& overrides = {});
  // zfs mount -o remount,...: new temporary options for a mounted ds.
  // exec/suid/dev change in place (files stay open); a change between ro
  // and rw mounts it again at the same place (Busy while files are open).
  // NotFound when ds is not mounted.
  Status ChangeOptions(Pool& pool, const std::string& ds, std::optional<bool> readonly,
                       const MountOverrides& overrides);
  // Mounts ds at `path` as given (mount(8) with mountpoint=legacy, through
  // mount.fuse.uzfs): the directory must exist; `readonly` mounts it
  // read-only even on a writable pool. Exists / Busy as Mount.
  // `remove_dir`: as DatasetMount's (a mount put back in place after a
  // rollback or receive keeps what the first mount had).
  Status MountAt(Pool& pool, const std::string& ds, const std::string& path, bool readonly,
                 const MountOverrides& overrides = {}, bool remove_dir = false);
  // Every dataset that should be mounted automatically (canmount=on, a
  // mountpoint), parents first. Failures are collected, not fatal.
  // `automatic`: nothing when AutomountEnabled() is false (`zfs mount -a`
  // passes false: an explicit request). `below`: only that dataset and its
  // descendants (a new dataset, a moved mountpoint), "" for all.
  void MountAll(Pool& pool, const std::string& altroot, std::vector<std::string>* errors,
                bool automatic = true, const std::string& below = "");
  // NotFound when ds is not mounted; Busy while files are open (unless force).
  // `keep_dir`: the directory stays even when made for the mount (it is
  // mounted again in place at once).
  Status Unmount(const std::string& ds, bool force, bool keep_dir = false);
  // Children first; stops at the first busy dataset unless force.
  Status UnmountAll(bool force);
  // ds and every descendant, children first.
  Status UnmountTree(const std::string& ds, bool force);
  // The properties changed (zfs set/inherit): every mounted ZplFs re-reads
  // them, and every mount whose exec/setuid/devices changed is remounted
  // with its new flags. Mounts that cannot be changed are named in *errors.
  void RefreshProps(Pool& pool, std::vector<std::string>* errors);

  const DatasetMount* Find(const std::string& ds) const;
  std::vector<const DatasetMount*> List() const;  // by dataset name

 private:
  // The ZplFs and FUSE session of ds at path (which exists).
  Status Start(Pool& pool, const std::string& ds, const std::string& path, bool readonly,
               const MountOverrides& overrides);
  std::map<std::string, DatasetMount> mounts_;  // by dataset name
  std::function<void(const std::string&)> log_;
};

}  // namespace uzfs::cmd
