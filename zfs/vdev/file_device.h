// FileDevice: a BlockDevice backed by a plain file or a block device.
//
// What it does: pread/pwrite with retry of short transfers and EINTR, and
// fdatasync as the flush (for a block device the kernel turns that into a
// cache-flush command to the disk). Size: the file's size at open, or
// BLKGETSIZE64. Ashift hint: log2 of BLKPBSZGET (physical sector) for block
// devices, 12 (4 KiB) for files.
//
// Exclusive open (DESIGN.md section 2: a pool is open in one process at a
// time): files are locked with flock(LOCK_EX|LOCK_NB) and block devices are
// opened with O_EXCL, so a second open, by this or any other process, fails
// with Status Busy "<path> is in use by another process". The lock lives as
// long as the object (closing the fd drops it), so a crashed process never
// leaves a stale lock behind.
//
// O_DIRECT (DirectIo): direct transfers go between the disk and the
// caller's buffer without the kernel's page cache (no copy in the kernel,
// no page-cache churn; the ARC is the cache). Three modes:
//  - kOn: reads and writes direct (one O_DIRECT descriptor for everything);
//  - kReads: reads direct, writes buffered (two descriptors on the file);
//  - kOff: everything buffered.
// kAuto = kOn for block devices, and for files when the file system
// supports O_DIRECT and reports its alignment (statx STATX_DIOALIGN) with an
// offset alignment of at most 512 bytes (ZFS's smallest sector, so every
// vdev I/O is whole units and no write ever needs a read-modify-write) and
// the file is a whole number of units; else kOff (tmpfs, old kernels, odd
// sizes). Measured in docs/PERFORMANCE.md ("Leaf devices and the I/O engine"):
// direct reads and writes beat direct reads with buffered writes on the
// sequential write. UZFS_DIRECT_IO=off|reads|on|auto in the environment
// overrides kAuto.
//
// Requests need no alignment (RequiredAlignment() is 1). An aligned request
// (offset, length and buffer address multiples of direct_alignment() /
// direct_memory_alignment()) transfers directly. An unaligned read goes
// through the buffered descriptor in kReads mode; in kOn mode unaligned
// requests are bounced through an aligned buffer:
// reads are widened to whole units, writes that do not cover whole units
// read the partial units first (read-modify-write, not atomic against a
// concurrent write to another part of the same unit; the vdev layer never
// issues one). Either way it is counted in unaligned_requests().
//
// Coherence: mixing is safe because of what the kernel guarantees for one
// file: a direct read first writes back dirty cached pages of its range,
// and a direct write invalidates the cached pages of its range after it.
// So in kReads mode (buffered writes, direct or buffered reads) every read
// sees every completed write, labels and uberblocks included, and another
// process reading the file buffered (zdb -l, zfs-fuse after an export) sees
// what we wrote. The one unsafe mix, a direct write racing a buffered
// write to the same file-system block, cannot happen: a FileDevice writes
// through one descriptor only.
//
// Hole prefill (PrefillHoles, log devices only): in a sparse file every
// write to a new place allocates, and the fdatasync after it must then
// write the file's extent metadata too: about twice the cost of a write
// + fdatasync over written blocks (docs/PERFORMANCE.md, "Intent log, log
// devices and sync writes"). With
// prefill on, the first write into a chunk (1 MiB) that is wholly a hole
// (lseek SEEK_DATA finds nothing in it) writes the whole chunk: its data
// in place, zeros around it; later writes there overwrite. What a
// database does when it zero-fills its write-ahead log files. Safe because
// a hole holds nothing (zeros read back the same) and every write to a
// chunk not yet known written goes through DoWrite under prefill_mu_
// (NativeFdFor answers -1 for it), so no write to a chunk can run while
// that chunk is being filled. A chunk with data in it, or a write that
// spans two chunks, marks its chunks written and is written as asked.
//
// Threading contract: thread-safe; every method may be called concurrently
// (the fd is only used with positional calls).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <sys/uio.h>

#include "zfs/util/mutex.h"
#include "zfs/vdev/block_device.h"

namespace uzfs {

enum class DirectIo : uint8_t {
  kAuto,   // kOn where supported (files: see the comment above), else kOff
  kOn,     // reads and writes; NotSupported if the file system refuses
  kReads,  // reads only; NotSupported if the file system refuses
  kOff,
};

struct FileDeviceOptions {
  bool read_only = false;
  // Refuse to share the device (flock / O_EXCL). Only read-only inspectors
  // (zdb -l on a live pool) should turn this off.
  bool exclusive = true;
  DirectIo direct_io = DirectIo::kAuto;
  // > 0: create the file if it is missing and extend it to this size if it
  // is shorter (sparse). Ignored for block devices.
  uint64_t create_size = 0;
};

class FileDevice final : public BlockDevice {
 public:
  // Errors: NotFound (no such path), Busy (in use by another process),
  // InvalidArgument (not a regular file or block device, or empty),
  // NotSupported (O_DIRECT refused with kOn/kReads or UZFS_DIRECT_IO=on/reads),
  // InvalidArgument for a bad UZFS_DIRECT_IO value, IoError otherwise.
  static Result<std::unique_ptr<FileDevice>> Open(const std::string& path,
                                                  const FileDeviceOptions& opts = {});
  ~FileDevice() override;

  uint64_t Size() const override { return size_; }
  // A file shorter than at open (truncated) or without links (deleted), a
  // block device smaller than at open: IoError naming the change.
  Status CheckIdentity() const override;
  uint32_t AshiftHint() const override { return ashift_; }
  const std::string& path() const override { return path_; }
  int NativeFd() const override { return fd_; }
  int NativeFdFor(IoOp op, uint64_t offset, uint64_t len, const void* buf) const override;
  void ReleaseExclusive() override;

  bool is_block_device() const { return is_block_; }
  // Reads (and with kOn writes) are direct.
  bool direct_io() const { return direct_reads_; }
  bool direct_writes() const { return direct_writes_; }
  // With direct_io(): the alignment (bytes) of offsets and lengths, and of
  // buffer addresses, with which a request goes direct. 1 when buffered.
  uint32_t direct_alignment() const { return off_align_; }
  uint32_t direct_memory_alignment() const { return mem_align_; }
  // Reads and writes that could not go direct because they were unaligned
  // (bounced with kOn, buffered with kReads; writes with kReads are not
  // counted). 0 on buffered devices.
  uint64_t unaligned_requests() const { return unaligned_.load(std::memory_order_relaxed); }
  // See the top. Regular files only; the first call wins, later ones are
  // ignored. REQUIRES: chunk a power of two, >= 64 KiB; called before any
  // write that could reach a hole of the file is in flight.
  void PrefillHoles(uint64_t chunk) override;
  uint64_t prefilled_chunks() const { return prefilled_.load(std::memory_order_relaxed); }

 protected:
  Status DoRead(uint64_t offset, std::span<uint8_t> buf) override;
  Status DoWrite(uint64_t offset, std::span<const uint8_t> buf) override;
  Status DoFlush() override;
  // A file: a hole punched (fallocate, the size kept); a block device:
  // BLKDISCARD. NotSupported where the file system or the device has no
  // such operation.
  Status DoTrim(uint64_t offset, uint64_t len) override;
  // pwritev2 with RWF_DSYNC (aligned requests on a direct descriptor, any
  // on a buffered one); where the kernel refuses the flag, or a direct
  // request needs a bounce, DoWrite then DoFlush.
  Status DoWriteDurable(uint64_t offset, std::span<const uint8_t> buf) override;
  // pwritev when every piece may go as it is (buffered, or each piece
  // aligned for O_DIRECT), else the default (one aligned copy).
  Status DoWriteGather(uint64_t offset, std::span<const std::span<const uint8_t>> pieces) override;
  Status DoReadScatter(uint64_t offset, std::span<const std::span<uint8_t>> pieces) override;

 private:
  struct Geometry {
    uint64_t size = 0;
    uint32_t ashift = kDefaultAshift;
    uint32_t off_align = 1, mem_align = 1;  // 1 when buffered
    bool is_block = false;
    bool direct_reads = false, direct_writes = false;
  };
  FileDevice(std::string path, int fd, int rfd, const Geometry& g)
      : path_(std::move(path)), fd_(fd), rfd_(rfd), size_(g.size), ashift_(g.ashift),
        off_align_(g.off_align), mem_align_(g.mem_align), is_block_(g.is_block),
        direct_reads_(g.direct_reads), direct_writes_(g.direct_writes) {}

  bool Aligned(uint64_t offset, uint64_t len, const void* buf) const {
    return ((offset | len) & (off_align_ - 1)) == 0 &&
           (reinterpret_cast<uintptr_t>(buf) & (mem_align_ - 1)) == 0;
  }
  Status PreadAll(int fd, uint64_t offset, std::span<uint8_t> buf);
  // flags: pwritev2's (RWF_DSYNC), 0 for a plain pwrite. NotSupported
  // when the kernel refuses the flags (nothing written).
  Status PwriteAll(uint64_t offset, std::span<const uint8_t> buf, int flags = 0);
  // All len bytes of the pieces read (preadv) or written (pwritev) on fd.
  Status VectorIo(IoOp op, int fd, uint64_t offset, uint64_t len, std::vector<iovec> iov);

  // Some chunk of [offset, offset+len) is not known written (prefill on).
  bool PrefillPending(uint64_t offset, uint64_t len) const;
  // With prefill on: fills the chunk of a write wholly inside one hole
  // chunk (true: the write is done), else marks the write's chunks written
  // (false: the caller writes it).
  Result<bool> PrefillFor(uint64_t offset, std::span<const uint8_t> buf) UZFS_EXCLUDES(prefill_mu_);

  const std::string path_;
  const int fd_;   // writes and flushes (O_DIRECT with kOn); buffered reads
  const int rfd_;  // direct reads: fd_ with kOn, a second O_DIRECT fd with kReads, else fd_
  const uint64_t size_;
  const uint32_t ashift_;
  const uint32_t off_align_;
  const uint32_t mem_align_;
  const bool is_block_;
  const bool direct_reads_;
  const bool direct_writes_;
  mutable std::atomic<uint64_t> unaligned_{0};
  std::atomic<bool> no_dsync_{false};  // the kernel refused RWF_DSYNC once
  Mutex rmw_mu_;  // serialises read-modify-write bounces with each other
  // Prefill: chunk size (0: off) and one flag per chunk (1: written or not
  // to be filled), published by PrefillHoles before prefill_chunk_.
  std::atomic<uint64_t> prefill_chunk_{0};
  std::unique_ptr<std::atomic<uint8_t>[]> chunk_written_;
  Mutex prefill_mu_;  // held while a chunk is checked and filled, and while chunks are marked
  std::atomic<uint64_t> prefilled_{0};
};

// Whether another process holds `path` the way FileDevice's exclusive open
// does (a file's flock, a block device's O_EXCL claim), changing nothing:
// what `zpool import` asks of each device before it lists a pool as
// importable. False also when the path cannot be opened at all.
bool DeviceHeldElsewhere(const std::string& path);

}  // namespace uzfs
