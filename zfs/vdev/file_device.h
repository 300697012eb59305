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
// O_DIRECT: off by default for files (the page cache helps small test
// pools), on by default for block devices (the ARC is the cache). With it
// on, RequiredAlignment() reports what buffers, offsets and lengths must be
// aligned to (see aligned_buffer.h).
//
// Threading contract: thread-safe; every method may be called concurrently
// (the fd is only used with positional calls).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "zfs/vdev/block_device.h"

namespace uzfs {

enum class DirectIo : uint8_t {
  kAuto,  // on for block devices, off for files
  kOn,    // NotSupported if the file system refuses O_DIRECT
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
  // NotSupported (O_DIRECT refused with DirectIo::kOn), IoError otherwise.
  static Result<std::unique_ptr<FileDevice>> Open(const std::string& path,
                                                  const FileDeviceOptions& opts = {});
  ~FileDevice() override;

  uint64_t Size() const override { return size_; }
  uint32_t AshiftHint() const override { return ashift_; }
  const std::string& path() const override { return path_; }
  int NativeFd() const override { return fd_; }
  uint32_t RequiredAlignment() const override { return alignment_; }

  bool is_block_device() const { return is_block_; }
  bool direct_io() const { return direct_; }

 protected:
  Status DoRead(uint64_t offset, std::span<uint8_t> buf) override;
  Status DoWrite(uint64_t offset, std::span<const uint8_t> buf) override;
  Status DoFlush() override;

 private:
  FileDevice(std::string path, int fd, uint64_t size, uint32_t ashift, uint32_t alignment,
             bool is_block, bool direct)
      : path_(std::move(path)), fd_(fd), size_(size), ashift_(ashift), alignment_(alignment),
        is_block_(is_block), direct_(direct) {}

  const std::string path_;
  const int fd_;
  const uint64_t size_;
  const uint32_t ashift_;
  const uint32_t alignment_;
  const bool is_block_;
  const bool direct_;
};

}  // namespace uzfs
