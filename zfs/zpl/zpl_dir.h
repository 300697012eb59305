// ZplDirs: the directory ZAPs of one mounted file system (and its other
// ZAPs: master node, unlinked set, xattr directories), kept open across
// operations, plus the ZPL's directory-entry encoding.
//
// Entries: name -> one u64, (DT type << 60) | object (ZFS_DIRENT_MAKE; the
// object is the low 48 bits). New directories are micro ZAPs; ZapWriter
// turns them fat as they grow.
//
// Why a cache: a micro ZAP's next-fit slot position lives in its writer
// (as in ZFS), so keeping writers open makes insert sequences lay out like
// zfs-fuse's, and saves re-indexing a micro ZAP on every operation. The
// cache is bounded (`max_open`); an evicted writer is simply reopened
// (only the next-fit position restarts). Objects passed to Pin are never
// evicted. After a failed change the writer is dropped (DmuZapObject's
// Flush contract: its state may no longer match the object).
//
// Block cache. Each open writer keeps the ZAP blocks it last read or wrote
// (DmuZapObject::SetCacheLimit; it is the object's only writer while the
// file system is mounted), so a lookup in a big directory does not copy
// its blocks out of the object set every time. All writers together keep
// at most `cache_bytes`: when an operation goes over, the other writers'
// blocks are dropped (the writers stay open). set_cache_bytes changes that
// bound (the mounts of a process share zpl_dir_cache_max); it holds from
// the next operation on.
//
// Threading: none but set_cache_bytes (any thread); the file system's
// mutex serializes every other call.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "zfs/dmu/objset_writer.h"
#include "zfs/util/status.h"
#include "zfs/util/txg_number.h"
#include "zfs/zap/dmu_zap_object.h"
#include "zfs/zap/zap_writer.h"

namespace uzfs {

inline constexpr uint64_t kDirentObjMask = (uint64_t{1} << 48) - 1;
inline constexpr uint64_t DirentMake(uint32_t dt, uint64_t obj) { return (uint64_t{dt} << 60) | obj; }
inline constexpr uint64_t DirentObj(uint64_t v) { return v & kDirentObjMask; }
inline constexpr uint32_t DirentType(uint64_t v) { return static_cast<uint32_t>(v >> 60); }
// IFTODT: the dirent type of a mode.
inline constexpr uint32_t DirentTypeOfMode(uint64_t mode) { return static_cast<uint32_t>((mode & 0170000) >> 12); }

class ZplDirs {
 public:
  ZplDirs(ObjsetWriter& os, size_t max_open, uint64_t cache_bytes = kDefaultCacheBytes)
      : os_(os), max_open_(max_open), cache_bytes_(cache_bytes) {}
  static constexpr uint64_t kDefaultCacheBytes = uint64_t{32} << 20;
  void set_cache_bytes(uint64_t bytes) { cache_bytes_.store(bytes, std::memory_order_relaxed); }

  // The writer of `obj`'s ZAP, its changes going to `txg`. Valid until the
  // next call that may evict (Get of another object, Drop, Clear).
  Result<ZapWriter*> Get(uint64_t obj, Txg txg);
  void Pin(uint64_t obj) { pinned_.insert(obj); }
  void Drop(uint64_t obj);
  void Clear() {
    open_.clear();
    cached_ = 0;
  }
  // Bytes of ZAP blocks the open writers keep (between operations).
  uint64_t cached_bytes() const { return cached_; }
  // After an operation on obj: counts its kept blocks, and drops the other
  // writers' blocks when all of them keep more than cache_bytes_. The
  // methods here call it; a caller that reads through Get()'s writer
  // itself (readdir) calls it when done.
  void Account(uint64_t obj);

  // The value of `name`, nullopt when absent. `match`: ZapWriter's
  // LookupMatch flags for directories with normflags (case-insensitive or
  // normalized names; only the flags the ZAP itself has count, so ZAPs
  // without normflags match exactly); *stored gets the name as stored.
  Result<std::optional<uint64_t>> Lookup(uint64_t obj, std::string_view name, Txg txg, uint64_t match = 0,
                                         std::string* stored = nullptr);
  // Add is exact (the ZPL looks up first); Update and Remove act on the
  // entry `name` matches under `match`.
  Status Add(uint64_t obj, std::string_view name, uint64_t value, Txg txg);
  Status Update(uint64_t obj, std::string_view name, uint64_t value, Txg txg, uint64_t match = 0);
  Status Remove(uint64_t obj, std::string_view name, Txg txg, uint64_t match = 0);
  Result<std::vector<ZapEntry>> List(uint64_t obj, Txg txg);

 private:
  struct Open {
    std::unique_ptr<DmuZapObject> obj;
    std::optional<ZapWriter> zap;
    uint64_t counted = 0;  // obj->cached_bytes() as last added to cached_
  };
  static Result<std::string> StoredName(ZapWriter& zap, std::string_view name, uint64_t match);
  // Flushes obj's writer after change `op`; drops it when either failed.
  Status Finish(uint64_t obj, const Status& op);

  ObjsetWriter& os_;
  const size_t max_open_;
  std::atomic<uint64_t> cache_bytes_;
  uint64_t cached_ = 0;
  std::map<uint64_t, std::unique_ptr<Open>> open_;
  std::set<uint64_t> pinned_;
};

}  // namespace uzfs
