// BlockDevice: the leaf of the vdev tree, one disk or file that holds bytes.
//
// What it does: positional read and write of byte ranges, a flush that makes
// every write completed before it durable (fdatasync for files, a cache flush
// for block devices), the device's size, the sector size it prefers (as an
// ashift hint), its path, and error counters that `zpool status` shows.
//
// What it promises:
//  - Read/Write transfer the whole range or fail; short transfers and EINTR
//    are retried below this interface. Failures are Status::IoError with the
//    path, the operation and the offset in the message. A range outside
//    [0, Size()) is InvalidArgument and touches nothing.
//  - Flush: a write that completed before Flush() was *called* is durable
//    when Flush() returns OK. Writes racing with the flush may or may not be
//    covered (as with a disk's cache flush). Order with it by waiting.
//  - Errors are counted: a Read/Write/Flush that returns IoError adds one to
//    errors().read / .write (flush counts as a write) on the device that
//    returned it. Checksum errors are only known above this layer, which adds
//    them with errors().checksum. Argument errors are not counted.
//
// Threading contract: every implementation is safe for concurrent use from
// many threads without external locking. Concurrent writes to overlapping
// ranges leave either one's data per sector (as a disk does); which one is
// unspecified.
//
// Implementations: FileDevice (file_device.h: files and block devices),
// MemDevice (mem_device.h: RAM, with a volatile write cache model),
// FaultDevice (fault_device.h: wraps another device and injects faults).
// The IoEngine (io_engine.h) runs these asynchronously.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zfs/util/status.h"

namespace uzfs {

// kWriteDurable: a write that is durable when it completes
// (BlockDevice::WriteDurable); counted and reported as a write.
// kTrim: a discard (BlockDevice::Trim); it names errors and never goes
// through the IoEngine.
enum class IoOp : uint8_t { kRead, kWrite, kFlush, kWriteDurable, kTrim };
std::string_view IoOpName(IoOp op);

// A plain copy of the counters, for reporting.
struct DeviceErrorCounts {
  uint64_t read = 0;
  uint64_t write = 0;
  uint64_t checksum = 0;
  bool operator==(const DeviceErrorCounts&) const = default;
};

// Per-device error counters (the READ / WRITE / CKSUM columns of
// `zpool status`). Lock-free; any thread may add, `zpool clear` resets.
struct DeviceErrorCounters {
  std::atomic<uint64_t> read{0};
  std::atomic<uint64_t> write{0};
  std::atomic<uint64_t> checksum{0};

  // Adds one to the counter an I/O error of this kind belongs to.
  void CountIoError(IoOp op) {
    (op == IoOp::kRead ? read : write).fetch_add(1, std::memory_order_relaxed);
  }
  void CountChecksumError() { checksum.fetch_add(1, std::memory_order_relaxed); }
  DeviceErrorCounts Snapshot() const {
    return {read.load(std::memory_order_relaxed), write.load(std::memory_order_relaxed),
            checksum.load(std::memory_order_relaxed)};
  }
  void Reset() {
    read.store(0, std::memory_order_relaxed);
    write.store(0, std::memory_order_relaxed);
    checksum.store(0, std::memory_order_relaxed);
  }
};

// One request for BlockDevice::StartAsync: `pieces` lie back to back from
// `offset` (one piece for a plain read or write, several for a gathered
// write or scattered read, none for a flush); a write does not modify them.
// They stay valid until `done` has run.
struct AsyncIo {
  IoOp op = IoOp::kRead;
  uint64_t offset = 0;
  std::vector<std::span<uint8_t>> pieces;
  std::function<void(Status)> done;
};

class BlockDevice {
 public:
  // Ashift used for files and whenever the hardware does not say: 4 KiB
  // sectors, the safe choice for any modern disk.
  static constexpr uint32_t kDefaultAshift = 12;

  virtual ~BlockDevice() = default;
  BlockDevice(const BlockDevice&) = delete;
  BlockDevice& operator=(const BlockDevice&) = delete;

  // Reads buf.size() bytes at offset into buf.
  Status Read(uint64_t offset, std::span<uint8_t> buf);
  // Writes buf at offset. Not durable until a later Flush() returns OK.
  Status Write(uint64_t offset, std::span<const uint8_t> buf);
  // Makes every previously completed write durable.
  Status Flush();
  // Writes buf at offset and makes those bytes durable before returning,
  // in one step where the device has one (a file or disk: one write with
  // O_DSYNC semantics, RWF_DSYNC; the kernel syncs that range and, where
  // the disk has a write cache, flushes or FUAs it), else Write then Flush.
  // Only this write is promised durable: other completed writes need a
  // Flush as before. For the intent log's lone log-block writes (one trip
  // to the device instead of a write, a wait, a flush and a wait). A
  // failure counts one write error.
  Status WriteDurable(uint64_t offset, std::span<const uint8_t> buf);
  // Writes the pieces back to back from `offset` as one write (a merged
  // run of adjacent writes, zfs/vdev/vdev_impl.h): the range is checked and
  // an error counted once, as for one Write of their total length. Either
  // every byte is written or the call fails (then any of them may be).
  Status WriteGather(uint64_t offset, std::span<const std::span<const uint8_t>> pieces);
  // Reads back to back from `offset` into the pieces (a merged run of
  // nearby reads, zfs/vdev/vdev.cc): the range is checked and an error
  // counted once, as for one Read of their total length.
  Status ReadScatter(uint64_t offset, std::span<const std::span<uint8_t>> pieces);

  // Discards [offset, offset+len) (`zpool trim`): the device may forget
  // those bytes and give their space back (a hole punched in a file,
  // BLKDISCARD on a block device, NBD TRIM); a later read returns zeros or
  // whatever the device keeps, so only space no block uses is trimmed.
  // NotSupported when the device cannot discard (then nothing changed);
  // IoError when it failed. Failures are not counted in errors(): a
  // discard is advice, and losing one costs no data.
  Status Trim(uint64_t offset, uint64_t len);

  // Size in bytes, fixed for the life of the object.
  virtual uint64_t Size() const = 0;
  // log2 of the preferred (physical) sector size: 9 for 512-byte, 12 for 4K.
  virtual uint32_t AshiftHint() const = 0;
  // The name given at open (a path, or a label for in-memory devices).
  virtual const std::string& path() const = 0;

  // For the IoEngine: a descriptor that may be used with pread/pwrite/
  // fdatasync (or io_uring) in place of Read/Write/Flush, or -1 when I/O has
  // to go through the virtual methods (in-memory and wrapping devices).
  virtual int NativeFd() const { return -1; }
  // For the IoEngine: the descriptor for one read or write of [offset,
  // offset+len) from/to buf, or -1 when that request has to go through
  // Read/Write (an O_DIRECT FileDevice answers -1 for requests it must
  // bounce, and may name a different descriptor for reads).
  virtual int NativeFdFor(IoOp op, uint64_t offset, uint64_t len, const void* buf) const {
    (void)op, (void)offset, (void)len, (void)buf;
    return NativeFd();
  }
  // For log devices (the pool calls it before the first log block is
  // written there): a regular file may fill holes ahead of the writes, in
  // `chunk`-byte pieces, so that later writes overwrite written blocks and
  // their flush writes no allocation metadata (FileDevice). A no-op here
  // and on block devices.
  virtual void PrefillHoles(uint64_t chunk) { (void)chunk; }
  // Lets other openers take the device while this one stays open (a leaf
  // taken out of its pool's tree, which a read in flight may still use):
  // a file's lock is dropped; a block device's descriptor moves to an open
  // without O_EXCL. A no-op here.
  virtual void ReleaseExclusive() {}
  // Whether the device is still the one that was opened, as far as one
  // cheap look can tell (a file: not shrunk, not deleted; a block device:
  // not shrunk). IoError saying what changed otherwise. What a pool
  // checks before each txg, so a device changed under it is taken out of
  // use instead of being written to.
  virtual Status CheckIdentity() const { return Status::Ok(); }
  // Someone says the device is back (`zpool online`, `zpool clear`): a
  // device that spaces out its reconnection attempts (NbdDevice) lets one
  // already under way finish and makes the next at the next request
  // instead of after its backoff.
  virtual void RetryNow() {}
  // Alignment (bytes) that buffers, offsets and lengths must have, 1 if none.
  // No device in the tree requires any today (FileDevice bounces); the check
  // stays for devices that would.
  virtual uint32_t RequiredAlignment() const { return 1; }

  // Asynchronous I/O, for devices that keep requests in flight on their own
  // (an NBD connection): the IoEngine hands them the request instead of
  // blocking one of its threads on the synchronous method. Returns false,
  // leaving `io` as it was, when the device does not take this request that
  // way now (then the caller runs the synchronous method). Returns true
  // when it started: `io.done` has been taken and is called exactly once,
  // from the device's own thread, with OK or the error the synchronous
  // method would have returned (counted the same way). The range is checked
  // first; a bad range returns false, so the synchronous method reports it.
  bool StartAsync(AsyncIo& io);
  // Whether StartAsync may ever take a request (a cheap test the engine
  // makes before building an AsyncIo).
  virtual bool HasAsync() const { return false; }

  DeviceErrorCounters& errors() { return errors_; }
  const DeviceErrorCounters& errors() const { return errors_; }

  // InvalidArgument when [offset, offset+len) is not inside the device or is
  // misaligned for RequiredAlignment(). Used by Read/Write and the IoEngine.
  Status CheckRange(IoOp op, uint64_t offset, uint64_t len, const void* buf) const;

 protected:
  BlockDevice() = default;
  // The implementation's I/O. The range has been checked. Return IoError on
  // failure; the public methods do the error counting.
  virtual Status DoRead(uint64_t offset, std::span<uint8_t> buf) = 0;
  virtual Status DoWrite(uint64_t offset, std::span<const uint8_t> buf) = 0;
  virtual Status DoFlush() = 0;
  // Default: DoWrite, then DoFlush.
  virtual Status DoWriteDurable(uint64_t offset, std::span<const uint8_t> buf);
  // Default: the pieces copied into one aligned buffer, then DoWrite.
  virtual Status DoWriteGather(uint64_t offset, std::span<const std::span<const uint8_t>> pieces);
  // Default: one DoRead into an aligned buffer, copied out to the pieces.
  virtual Status DoReadScatter(uint64_t offset, std::span<const std::span<uint8_t>> pieces);
  // Trim's implementation, after the range check. Default: NotSupported.
  virtual Status DoTrim(uint64_t offset, uint64_t len);
  // StartAsync's implementation, after the range check; `io.done` already
  // counts errors. Default: false (not taken).
  virtual bool DoStartAsync(AsyncIo& io) {
    (void)io;
    return false;
  }

 private:
  // s, after counting it when it is an I/O error of this kind.
  Status Counted(IoOp op, Status s);
  DeviceErrorCounters errors_;
};

// "read /dev/sdb at offset 4096 (8192 bytes): Input/output error": the
// message every device uses for an I/O failure. err is an errno value, or 0
// when `what` already says what went wrong.
Status DeviceIoError(IoOp op, std::string_view path, uint64_t offset, uint64_t len, int err,
                     std::string_view what = {});

}  // namespace uzfs
