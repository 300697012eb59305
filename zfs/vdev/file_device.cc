// FileDevice (see file_device.h): opening, locking, geometry, and the
// pread/pwrite loops.
#include "zfs/vdev/file_device.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>

namespace uzfs {
namespace {

Status OpenError(const std::string& path, int err) {
  if (err == ENOENT) return Status::NotFound(path + ": no such file or device");
  if (err == EBUSY) return Status::Busy(path + " is in use by another process");
  return Status::IoError("open " + path + ": " + std::strerror(err));
}

// Closes fd on every early return of Open.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

}  // namespace

Result<std::unique_ptr<FileDevice>> FileDevice::Open(const std::string& path,
                                                     const FileDeviceOptions& opts) {
  struct stat st;
  bool exists = stat(path.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) return OpenError(path, errno);
  if (exists && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
    return Status::InvalidArgument(path + " is neither a regular file nor a block device");
  }
  const bool is_block = exists && S_ISBLK(st.st_mode);
  int flags = (opts.read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC;
  if (is_block && opts.exclusive) flags |= O_EXCL;  // the kernel's exclusive claim
  if (!is_block && opts.create_size > 0 && !opts.read_only) flags |= O_CREAT;
  bool direct = opts.direct_io == DirectIo::kOn || (opts.direct_io == DirectIo::kAuto && is_block);

  int fd = open(path.c_str(), flags | (direct ? O_DIRECT : 0), 0644);
  if (fd < 0 && errno == EINVAL && direct) {
    if (opts.direct_io == DirectIo::kOn) {
      return Status::NotSupported(path + ": the file system does not support O_DIRECT");
    }
    direct = false;
    fd = open(path.c_str(), flags, 0644);
  }
  if (fd < 0) return OpenError(path, errno);
  FdCloser closer{fd};

  if (fstat(fd, &st) != 0) return OpenError(path, errno);
  if (!is_block && opts.exclusive && flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return Status::Busy(path + " is in use by another process");
    return OpenError(path, errno);
  }

  uint64_t size = 0;
  uint32_t ashift = kDefaultAshift;
  uint32_t alignment = 1;
  if (is_block) {
    if (ioctl(fd, BLKGETSIZE64, &size) != 0) return OpenError(path, errno);
    unsigned int pbsz = 0;
    if (ioctl(fd, BLKPBSZGET, &pbsz) == 0 && pbsz >= 512 && std::has_single_bit(pbsz)) {
      ashift = static_cast<uint32_t>(std::countr_zero(pbsz));
    }
    int lbsz = 0;
    if (direct) {
      alignment = (ioctl(fd, BLKSSZGET, &lbsz) == 0 && lbsz >= 512) ? static_cast<uint32_t>(lbsz)
                                                                     : 4096;
    }
  } else {
    size = static_cast<uint64_t>(st.st_size);
    if (opts.create_size > size && !opts.read_only) {
      if (ftruncate(fd, static_cast<off_t>(opts.create_size)) != 0) return OpenError(path, errno);
      size = opts.create_size;
    }
    if (direct) alignment = 4096;
  }
  if (size == 0) return Status::InvalidArgument(path + " is empty (0 bytes)");
  return std::unique_ptr<FileDevice>(
      new FileDevice(path, closer.release(), size, ashift, alignment, is_block, direct));
}

FileDevice::~FileDevice() { close(fd_); }

Status FileDevice::DoRead(uint64_t offset, std::span<uint8_t> buf) {
  size_t done = 0;
  while (done < buf.size()) {
    ssize_t n = pread(fd_, buf.data() + done, buf.size() - done,
                      static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return DeviceIoError(IoOp::kRead, path_, offset + done, buf.size() - done, errno);
    }
    if (n == 0) {
      return DeviceIoError(IoOp::kRead, path_, offset + done, buf.size() - done, 0,
                           "unexpected end of device");
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status FileDevice::DoWrite(uint64_t offset, std::span<const uint8_t> buf) {
  size_t done = 0;
  while (done < buf.size()) {
    ssize_t n = pwrite(fd_, buf.data() + done, buf.size() - done,
                       static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return DeviceIoError(IoOp::kWrite, path_, offset + done, buf.size() - done, errno);
    }
    if (n == 0) {
      return DeviceIoError(IoOp::kWrite, path_, offset + done, buf.size() - done, 0,
                           "device accepted no bytes");
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status FileDevice::DoFlush() {
  while (fdatasync(fd_) != 0) {
    if (errno == EINTR) continue;
    return DeviceIoError(IoOp::kFlush, path_, 0, 0, errno);
  }
  return Status::Ok();
}

}  // namespace uzfs
