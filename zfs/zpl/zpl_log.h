// The ZPL's intent-log records: builders for the record each
// change appends (ZplFs calls them, in the txg of the change), and the
// replay of a dataset's log through the ZplFs API at mount.
//
// What is logged (OpenZFS record layouts, zil_format.h): create/mknod
// (TX_CREATE), mkdir, symlink, unlink (TX_REMOVE), rmdir, link, rename
// (and RENAME_EXCHANGE), write (TX_WRITE: the data copied into the log,
// or, for writes of 32 KiB or more on a pool without a log device and for
// every write with logbias=throughput, one record per block naming the
// block written in place: "WR_INDIRECT", see pool_zil.cc), O_TRUNC and hole punching
// (TX_TRUNCATE), setattr (TX_SETATTR: mode, uid, gid, size, atime,
// mtime), and changes of xattr directories as OpenZFS logs them
// (TX_MKXATTR for the hidden directory, TX_CREATE/TX_WRITE/TX_TRUNCATE/
// TX_REMOVE for the files in it; untagged, see ZilWriter), and xattrs
// kept as system attributes (TX_SETSAXATTR: the name and the new value,
// or no value for a removal) when the dataset's org.openzfs:zilsaxattr
// feature is active — the pool activates it as the log is created
// (Pool::ZilStart) when the pool has it enabled, as OpenZFS does. Not
// logged: atime updates (as ZFS), freeing unlinked files at their last
// close (replay of the remove frees them), SA xattr changes on pools
// without the feature (version 24-28 pools, feature pools made without
// it) and SA xattrs set to an empty value (a record without value means
// "remove"), and writes past 32 MiB of copied data in one txg (streaming
// writes would otherwise hold a second copy of the txg's data): a change
// that is not logged makes the next fsync wait for a txg sync instead
// (ZplFs tracks the txg of the last such change).
//
// Replay applies each record through the public ZplFs calls as root (a
// created object gets the number the log names: ObjsetWriter::
// PreferObjectNumber, so later records that name it find it) and owned
// by the logged uid/gid from the start (one transaction: a crash during
// replay never leaves a root-owned file behind). Every transaction a replayed record
// makes also stores the log header with replay_seq = the record's seq in
// that txg (ZplReplayHooks::SetReplayHeader), so a replay cut short by a
// crash resumes after the last record that reached the disk. A record
// whose target is gone (a change of a file a non-logged change created)
// is skipped with a message: nothing an fsync acknowledged depends on it.
// TX_SETSAXATTR changes only the file's SA xattrs (a directory xattr of
// the same name that the change removed has its own TX_REMOVE), and is
// idempotent: setting the value it already has, or removing a name that
// is gone, changes nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "zfs/zil/zil_format.h"
#include "zfs/zil/zil_reader.h"
#include "zfs/zpl/zpl_fs.h"

namespace uzfs {

// Record builders (txg and seq are filled in by the caller / the writer).
LogRecord LogCreate(TxType type, uint64_t doid, uint64_t foid, uint64_t mode, uint64_t uid, uint64_t gid,
                    uint64_t gen, uint64_t crtime_sec, uint64_t crtime_nsec, uint64_t rdev, std::string_view name,
                    std::string_view target = {});
LogRecord LogRemove(TxType type, uint64_t doid, std::string_view name);
LogRecord LogLink(uint64_t doid, uint64_t obj, std::string_view name);
LogRecord LogRename(bool exchange, uint64_t sdoid, std::string_view src, uint64_t tdoid, std::string_view tgt);
LogRecord LogWrite(uint64_t foid, uint64_t offset, std::span<const uint8_t> data);
// A TX_WRITE of `length` bytes at `offset`, within one block of the file,
// without its data: for ZilWriter::AppendByReference, which asks the pool
// for the block (or the bytes).
LogRecord LogWriteByReference(uint64_t foid, uint64_t offset, uint64_t length);
LogRecord LogTruncate(uint64_t foid, uint64_t offset, uint64_t length);
// mask: kAtMode | kAtUid | kAtGid | kAtSize | kAtAtime | kAtMtime; the
// values are the file's after the change.
LogRecord LogSetattr(uint64_t foid, uint64_t mask, uint64_t mode, uint64_t uid, uint64_t gid, uint64_t size,
                     const ZplTimespec& atime, const ZplTimespec& mtime);
// TX_SETSAXATTR: SA xattr `name` of foid set to value (empty: removed).
LogRecord LogSetSaxattr(uint64_t foid, std::string_view name, std::span<const uint8_t> value);

// What replay needs of the file system besides its public API.
class ZplReplayHooks {
 public:
  virtual ~ZplReplayHooks() = default;
  virtual ZplFs& fs() = 0;
  // From now on every transaction of the file system also stores `zh` as
  // the log header in its txg (nullopt: stop).
  virtual void SetReplayHeader(const std::optional<ZilHeader>& zh) = 0;
  // The next object created gets this number if it is free.
  virtual void PreferObject(uint64_t obj) = 0;
  // Objects created from now on get this uid/gid, whatever the caller's
  // credentials and the directory's setgid bit (nullopt: stop).
  virtual void SetReplayOwner(const std::optional<std::pair<uint64_t, uint64_t>>& owner) = 0;
  // TX_MKXATTR: gives `file` its (empty) xattr directory, object `obj`
  // if free. EEXIST when it has one.
  virtual ZplStatus ReplayMakeXattrDir(uint64_t file, uint64_t obj) = 0;
  // TX_SETSAXATTR: sets (value) or removes (nullopt) the SA xattr `name`
  // of `file`, leaving its directory xattrs alone. OK when it already is
  // so; EOPNOTSUPP for a file without system attributes, EFBIG when the
  // value does not fit.
  virtual ZplStatus ReplaySaXattr(uint64_t file, std::string_view name,
                                  std::optional<std::span<const uint8_t>> value) = 0;
};

struct ZplReplayStats {
  uint64_t applied = 0, skipped = 0;
  ZilWalkResult walk;
};

// Replays the log `zh` names into the file system (see the top).
Result<ZplReplayStats> ReplayZplLog(ZplReplayHooks& hooks, ZilReader& reader, const ZilHeader& zh);

}  // namespace uzfs
