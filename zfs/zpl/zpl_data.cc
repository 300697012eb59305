// ZplFs file data: Read, Write, Fsync, Fallocate and Lseek through open
// handles, and the size changes under them (Truncate; GrowBlock, ZFS's
// block size rule). Part of ZplFsImpl (zpl_fs_impl.h).
//
// What it promises: reads, fsync and lseek hold the file system's lock
// shared (zpl_fs_impl.h), so they run beside each other; a write holds the
// blocks of its file it changes (or the whole file when it appends, may
// change the block size or has a spill block) and, with
// zpl_parallel_writes, the lock shared too, so writes of different files
// and of disjoint blocks of one file run at the same time (without it, the
// lock alone). File data is read outside any
// lock but ObjsetWriter's own. A write is done in
// pieces of at most kWriteChunk bytes, each one transaction with its
// space check, its size and time update and its log record; a failure
// after some pieces is a short write. A file keeps growing one block up
// to recordsize, then has recordsize blocks. Fsync returns once the file's
// records are in the intent log, or the txg that holds them has synced
// (CommitLog, zpl_fs_log.cc); sync=disabled makes it return at once.
// Punching a hole and truncating down never check for space.
#include <fcntl.h>
#include <linux/falloc.h>
#include <unistd.h>

#include "zfs/zpl/zpl_fs_impl.h"

namespace uzfs::zpl_impl {

namespace {

constexpr uint64_t kSeekScanBlocks = 8192;     // blocks one SEEK_DATA/SEEK_HOLE reads at most
constexpr size_t kWriteChunk = 8 << 20;        // bytes written per transaction at most

uint64_t NextPow2(uint64_t v) {
  uint64_t p = 512;
  while (p < v) p <<= 1;
  return p;
}

}  // namespace

ZplResult<size_t> ZplFsImpl::Read(ZplHandle h, uint64_t offset, std::span<uint8_t> out) {
  uint64_t ino = 0, size = 0, block_size = 0;
  {
    ReaderLock l(&mu_);
    auto it = handles_.find(h);
    if (it == handles_.end()) return Err(EBADF, "bad handle");
    if ((it->second.flags & O_ACCMODE) == O_WRONLY) return Err(EBADF, "handle not open for reading");
    ino = it->second.ino;
    ZPL_ASSIGN(Znode z, Load(ino));
    if (IsDir(z.a.mode)) return Err(EISDIR, "read of a directory");
    size = z.a.size;
    block_size = z.dn.DataBlockSize();
    ZPL_TRY(TouchAtime(z));
  }
  if (offset >= size) return size_t{0};
  const size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), size - offset));
  prefetch_.OnRead(ino, block_size, offset, n, size);  // read-ahead first, so it overlaps
  ZPL_TRY_S(os_->Read(ino, offset, out.subspan(0, n)));
  return n;
}

// O_SYNC/O_DSYNC handles: each write is committed to the intent log
// before it returns.
ZplResult<size_t> ZplFsImpl::Write(ZplHandle h, uint64_t offset, std::span<const uint8_t> data) {
  bool sync = false;
  uint64_t ino = 0;
  ZplResult<size_t> r = WriteLocked(h, offset, data, &sync, &ino);
  const uint64_t mode = sync_mode_.load(std::memory_order_relaxed);
  if (r.ok() && mode != kSyncDisabled && (sync || mode == kSyncAlways)) ZPL_TRY(CommitLog(ino));
  return r;
}

ZplResult<Handle*> ZplFsImpl::WritableHandle(ZplHandle h) {
  ZPL_TRY(Writable());
  auto it = handles_.find(h);
  if (it == handles_.end()) return Err(EBADF, "bad handle");
  if ((it->second.flags & O_ACCMODE) == O_RDONLY) return Err(EBADF, "handle not open for writing");
  return &it->second;
}

ZplResult<size_t> ZplFsImpl::WriteLocked(ZplHandle h, uint64_t offset, std::span<const uint8_t> data, bool* sync,
                                         uint64_t* ino) {
  if (parallel_writes_) {
    ReaderLock l(&mu_);
    return WriteHeld(h, offset, data, sync, ino);
  }
  WriterLock l(&mu_);
  return WriteHeld(h, offset, data, sync, ino);
}

ZplResult<size_t> ZplFsImpl::WriteHeld(ZplHandle h, uint64_t offset, std::span<const uint8_t> data, bool* sync,
                                       uint64_t* ino) {
  ZPL_ASSIGN(Handle* hd, WritableHandle(h));
  *sync = (hd->flags & (O_SYNC | O_DSYNC)) != 0;
  *ino = hd->ino;
  const bool append = (hd->flags & O_APPEND) != 0;
  if (hd->type != S_IFREG) return Err(EINVAL, "write to a non-regular file");
  if (data.empty()) return size_t{0};
  if (!append && (offset > kMaxFileSize || data.size() > kMaxFileSize - offset)) return Err(EFBIG, "file too large");
  ZplRangeLocks::Held range;
  bool whole = false;
  ZPL_TRY(LockForWrite(hd->ino, append, &offset, data.size(), &range, &whole));
  if (offset > kMaxFileSize || data.size() > kMaxFileSize - offset) return Err(EFBIG, "file too large");
  // Pieces of at most kWriteChunk, one transaction each, so one huge
  // call cannot make one huge txg; a failure after some pieces is a
  // short write.
  size_t done = 0;
  while (done < data.size()) {
    const size_t n = std::min(data.size() - done, kWriteChunk);
    ZplStatus s = WritePiece(hd->ino, offset + done, data.subspan(done, n), whole);
    if (!s.ok()) {
      if (done > 0) return done;
      return s;
    }
    done += n;
  }
  return done;
}

// Whether a write ending at `end` makes GrowBlock change the file's block
// size (a file of one block growing).
bool ZplFsImpl::GrowsBlock(const Znode& z, uint64_t end) {
  const uint64_t bs = z.dn.DataBlockSize();
  return end > bs && z.a.size <= bs && z.dn.maxblkid == 0;
}

// The blocks the write touches, by the block size seen before locking.
// A write past the first block of a file of one block may grow the block
// (GrowsBlock; judged here from the dnode alone, without the size) and
// takes the whole file; so do an append and a write of a file with a
// spill block. Held, the dnode is looked at
// again: if its block size changed meanwhile, or the write may now grow
// it, the whole file is taken instead.
ZplStatus ZplFsImpl::LockForWrite(uint64_t obj, bool append, uint64_t* offset, uint64_t len,
                                  ZplRangeLocks::Held* held, bool* whole) {
  // Also the files with a spill block, whose znode stores must come in
  // txg order (a spill is set per txg like a data block; a bonus change
  // in an older txg carries over to the newer ones, a spill does not).
  const auto may_grow = [](const ObjsetWriter::Shape& dn, uint64_t end) {
    return (end > dn.block_size && dn.maxblkid == 0) || (dn.flags & kDnodeFlagSpillBlkptr) != 0;
  };
  ZPL_ASSIGN_S(ObjsetWriter::Shape dn, os_->GetShape(obj));
  const uint64_t end = *offset + len;
  *whole = append || may_grow(dn, end);
  if (!*whole) {
    const uint64_t bs = dn.block_size;
    const uint64_t first = *offset / bs * bs;
    *held = ranges_.Lock(obj, first, RoundUp(end, bs) - first, true);
    ZPL_ASSIGN_S(dn, os_->GetShape(obj));
    if (dn.block_size == bs && !may_grow(dn, end)) return ZplStatus::Ok();
    held->Release();
    *whole = true;
  }
  *held = ranges_.Lock(obj, 0, ZplRangeLocks::kToEnd, true);
  if (append) {
    ZPL_ASSIGN(Znode z, Load(obj));
    *offset = z.a.size;
  }
  return ZplStatus::Ok();
}

// One transaction: the data copied into the dirty records with no lock of
// the file system but the shared one and the range, then the size and
// times stored from the newest znode (znode_mu_), then the log record.
ZplStatus ZplFsImpl::WritePiece(uint64_t obj, uint64_t offset, std::span<const uint8_t> data, bool whole) {
  const uint64_t end = offset + data.size();
  ZPL_ASSIGN_S(uint64_t est, os_->EstimateWrite(obj, offset, data.size()));
  est += kMetaTxBytes;
  // Reserved until the data is dirty (counted by the next check), so
  // writers checking at the same time do not all count the same room.
  SpaceReservation reserved(this);
  ZPL_TRY(CheckSpace(est, &reserved));
  ZPL_ASSIGN_S(Tx tx, BeginTx(est));
  const Txg txg = tx.txg();
  Znode z;
  if (whole) {
    // Only a write holding the whole file grows its block.
    MutexLock zl(&znode_mu_);
    ZPL_ASSIGN(z, Load(obj));
    ZPL_TRY(GrowBlock(z, end, txg));
  }
  uint64_t held = 0;
  ZPL_TRY_S(os_->Write(obj, offset, data, txg, &held));
  reserved.Release();
  {
    MutexLock zl(&znode_mu_);
    // The size and times change in place in the bonus where the codec
    // can (an SA bonus whose layout holds them, no spill): decoding and
    // encoding every attribute for each WRITE was a sixth of the daemon's
    // time in 4 KiB random writes.
    bool patched = false;
    if (!whole) {
      auto dn = os_->GetDnode(obj);
      if (dn.ok() && !dn->byteswapped && dn->type == dmu_ot::kPlainFileContents &&
          (dn->flags & kDnodeFlagSpillBlkptr) == 0 && codec_->UpdateForWrite(dn->bonustype, dn->bonus, end, Now())) {
        ZPL_TRY_S(os_->SetBonus(obj, dn->bonustype, dn->bonus, txg));
        z.obj = obj;
        z.dn = std::move(*dn);
        patched = true;
      }
    }
    if (!patched) {
      ZPL_ASSIGN(z, Load(obj));
      z.a.size = std::max(z.a.size, end);
      z.a.mtime = z.a.ctime = Now();
      ZPL_TRY(Store(z, txg));
    }
  }
  LogWriteData(z, offset, data, txg);
  tx.Commit(WriteDirtyBytes(data.size(), held), WriteChangedBytes(data.size()));
  return ZplStatus::Ok();
}

// Through the intent log: one log write (group commit) instead of a
// txg sync, once the log runs; the first fsync starts it (a txg sync).
// A change that was not logged (xattrs) and has not synced yet, or a
// failed log write, makes it wait for a txg sync instead (nothing is
// acknowledged that a crash would lose).
// Only this file's records and the namespace records queued before
// (ZilWriter::Commit with its object).
ZplStatus ZplFsImpl::Fsync(ZplHandle h, bool /*datasync*/) {
  uint64_t ino = 0;
  {
    ReaderLock l(&mu_);
    auto it = handles_.find(h);
    if (it == handles_.end()) return Err(EBADF, "bad handle");
    if (readonly_locked()) return ZplStatus::Ok();
    ino = it->second.ino;
  }
  if (sync_mode_.load(std::memory_order_relaxed) == kSyncDisabled) return ZplStatus::Ok();  // unsafe, as asked
  return CommitLog(ino);
}

ZplStatus ZplFsImpl::Fallocate(ZplHandle h, int mode, uint64_t offset, uint64_t length) {
  SyncAlways sync_always(this);
  WriterLock l(&mu_);
  ZPL_ASSIGN(Handle* hd, WritableHandle(h));
  ZPL_ASSIGN(Znode z, Load(hd->ino));
  if (!IsReg(z.a.mode)) return Err(ENODEV, "fallocate on a non-regular file");
  if (length == 0) return Err(EINVAL, "fallocate: zero length");
  if (offset > kMaxFileSize || length > kMaxFileSize - offset) return Err(EFBIG, "file too large");
  const uint64_t end = offset + length;
  if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)) {
    if (offset >= z.a.size) return ZplStatus::Ok();
    ZPL_ASSIGN_S(Tx tx, BeginTx(kMetaTxBytes));
    const uint64_t n = std::min(end, z.a.size) - offset;
    ZPL_TRY_S(os_->FreeRange(z.obj, offset, n, tx.txg()));
    z.a.mtime = z.a.ctime = Now();
    ZPL_TRY(Store(z, tx.txg()));
    Log(LogTruncate(z.obj, offset, n), tx.txg());
    tx.Commit(kMetaDirtyBytes);
    return ZplStatus::Ok();
  }
  if (mode == FALLOC_FL_KEEP_SIZE) return ZplStatus::Ok();  // ZFS preallocates nothing
  if (mode != 0) return Err(EOPNOTSUPP, "fallocate mode not supported");
  if (end <= z.a.size) return ZplStatus::Ok();
  ZPL_TRY(CheckSpace(kMetaTxBytes));
  ZPL_ASSIGN_S(Tx tx, BeginTx(kMetaTxBytes));
  ZPL_TRY(Truncate(z, end, tx.txg()));
  z.a.ctime = Now();
  ZPL_TRY(Store(z, tx.txg()));
  Log(LogSetattr(z.obj, kAtSize, z.a.mode, z.a.uid, z.a.gid, z.a.size, z.a.atime, z.a.mtime), tx.txg());
  tx.Commit(kMetaDirtyBytes);
  return ZplStatus::Ok();
}

ZplResult<uint64_t> ZplFsImpl::Lseek(ZplHandle h, uint64_t offset, int whence) {
  ReaderLock l(&mu_);
  auto it = handles_.find(h);
  if (it == handles_.end()) return Err(EBADF, "bad handle");
  if (whence != SEEK_DATA && whence != SEEK_HOLE) return Err(EINVAL, "lseek: only SEEK_DATA/SEEK_HOLE");
  ZPL_ASSIGN(Znode z, Load(it->second.ino));
  const uint64_t size = z.a.size;
  if (offset >= size) return Err(ENXIO, "lseek past end of file");
  const uint64_t bs = std::max<uint64_t>(z.dn.DataBlockSize(), 512);
  std::vector<uint8_t> buf(bs);
  // Holes are found by reading (all-zero blocks are holes on disk too).
  // The scan is bounded: past kSeekScanBlocks blocks the rest counts as
  // data (allowed: a hole may always be reported as data), so a huge
  // sparse file cannot make one lseek read for minutes.
  const uint64_t first = offset / bs;
  for (uint64_t blk = first; blk * bs < size; blk++) {
    const uint64_t start = blk * bs;
    if (blk - first >= kSeekScanBlocks) {
      if (whence == SEEK_DATA) return std::max(offset, start);
      return size;
    }
    const size_t n = static_cast<size_t>(std::min<uint64_t>(bs, size - start));
    ZPL_TRY_S(os_->Read(z.obj, start, std::span<uint8_t>(buf.data(), n)));
    const bool zero = std::all_of(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(n),
                                  [](uint8_t b) { return b == 0; });
    if (whence == SEEK_DATA && !zero) return std::max(offset, start);
    if (whence == SEEK_HOLE && zero) return std::max(offset, start);
  }
  if (whence == SEEK_DATA) return Err(ENXIO, "no data after offset");
  return size;
}

// Sets the size; truncation down frees blocks, up leaves a hole.
ZplStatus ZplFsImpl::Truncate(Znode& z, uint64_t size, Txg txg) {
  if (size < z.a.size) {
    ZPL_TRY_S(os_->FreeRange(z.obj, size, UINT64_MAX, txg));
    ZPL_ASSIGN_S(z.dn, os_->GetDnode(z.obj));
  } else if (size > z.a.size) {
    ZPL_TRY(GrowBlock(z, size, txg));
  }
  z.a.size = size;
  return ZplStatus::Ok();
}

// ZFS's block size rule: while a file is one block, its block grows to
// cover `end` (a multiple of 512, up to recordsize; past recordsize the
// block becomes recordsize); a file of more than one block keeps its size.
ZplStatus ZplFsImpl::GrowBlock(Znode& z, uint64_t end, Txg txg) {
  if (!GrowsBlock(z, end)) return ZplStatus::Ok();
  const uint64_t bs = z.dn.DataBlockSize();
  uint64_t nb;
  if (bs >= recordsize_) nb = NextPow2(bs);
  else nb = end >= recordsize_ ? recordsize_ : RoundUp(end, 512);
  if (nb == bs) return ZplStatus::Ok();
  ZPL_TRY_S(os_->SetBlockSize(z.obj, nb, z.dn.indblkshift, txg));
  ZPL_ASSIGN_S(z.dn, os_->GetDnode(z.obj));
  return ZplStatus::Ok();
}

}  // namespace uzfs::zpl_impl
