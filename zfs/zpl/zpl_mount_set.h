// ZplMountSet: the file systems mounted together — every mount of one
// daemon, or of one process when nobody says otherwise — and the cache
// budget they share.
//
// Each mount brings its dbuf_cache_max (what its object set keeps of
// blocks after their txg synced) and its zpl_dir_cache_max (directory
// blocks kept between operations). The mounts of a set share those
// limits: each object set's synced-block cache and each directory cache
// gets its mount's limit divided by the number of mounts in the set (as
// OpenZFS's one dbuf cache for the system: a limit per mount let many
// mounted file systems keep all of RAM). The shares are set again at every
// mount and unmount.
//
// A dataset mounts at most once in a set: a second ZplFs on the same
// object set would keep its own directory cache and mutex and corrupt it,
// so ZplFs::Mount answers EBUSY. The check is per set, so every ZplFs of
// one pool must be mounted through the same set.
//
// Owner: uzfsd makes one set and passes it to every mount
// (ZplMountOptions::mount_set); tests and library users that pass none
// share Default(). A set must outlive every ZplFs mounted in it.
//
// Threading: thread-safe.
#pragma once

#include <cstdint>
#include <map>

#include "zfs/util/mutex.h"

namespace uzfs {

class ObjsetWriter;
class ZplDirs;

namespace zpl_impl {
class ZplFsImpl;
}

class ZplMountSet {
 public:
  ZplMountSet() = default;
  ZplMountSet(const ZplMountSet&) = delete;
  ZplMountSet& operator=(const ZplMountSet&) = delete;

  // The set of mounts that name none: one for the process, never
  // destroyed (a ZplFs may be unmounted by a static destructor).
  static ZplMountSet& Default();

 private:
  // Mounting and unmounting are ZplFs's (zpl_fs.cc).
  friend class zpl_impl::ZplFsImpl;

  struct Caches {
    uint64_t synced_limit = 0;
    uint64_t dir_limit = 0;
    ZplDirs* dirs = nullptr;  // null until the mount is built
  };

  // Enters os with its mount's limits; false when it is in the set already.
  // The shares are not changed until Attach.
  bool Claim(ObjsetWriter* os, uint64_t synced_limit, uint64_t dir_limit) UZFS_EXCLUDES(mu_);
  // The directory cache of os's mount, once it is built; then every mount's
  // share is set again.
  void Attach(ObjsetWriter* os, ZplDirs* dirs) UZFS_EXCLUDES(mu_);
  // Takes os out of the set (nothing when it is not in it) and gives the
  // others its share.
  void Release(ObjsetWriter* os) UZFS_EXCLUDES(mu_);
  void ShareLocked() UZFS_REQUIRES(mu_);

  Mutex mu_;
  std::map<ObjsetWriter*, Caches> mounted_ UZFS_GUARDED_BY(mu_);
};

}  // namespace uzfs
